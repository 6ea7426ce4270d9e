/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlsyncd_redis.h - the calls into tools/global/ratelimit.lua
 * (rlsyncd_redis.c), and a link's primary connected to.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLSYNCD_REDIS_H
#define RLSYNCD_REDIS_H

#include <stdbool.h>
#include <stdint.h>

#include "rlsyncd_conf.h"
#include "rlsyncd_conn.h"

/* The wait at start-up and reload, when nothing runs yet: generous. */
#define RLS_START_TIMEOUT_MS	3000.0

/*
 * Connect to @s's Redis with @timeout_ms (the primary of its sentinels,
 * or of its resource's slot in a cluster), shared. NULL after a message
 * if @say. Later errors of the library calls below are printed too if
 * @say.
 */
struct rls_redis *rls_redis_connect(const struct rls_spec *s,
				    double timeout_ms, bool say);

/* Load the function library from @lua if Redis lacks it; 0 or -errno. */
int rls_redis_library(struct rls_redis *r, const char *lua);
/*
 * --check: what rls_redis_library() would do, with reads only (FUNCTION
 * LIST, and @lua if Redis lacks the library); 0 or -errno.
 */
int rls_redis_library_check(struct rls_redis *r, const char *lua);
/*
 * The same on every primary of @s's cluster (each checked only, with
 * @check); 0 or -errno after a message.
 */
int rls_redis_cluster_library(const struct rls_spec *s, const char *lua,
			      bool check);

/* rl_config with @s; 0, or -EINVAL/-EIO after a message. */
int rls_redis_config(struct rls_redis *r, const struct rls_spec *s,
		     const char *host);

/* Whether @res is configured: 1, 0 (unknown), or -EIO after a message. */
int rls_redis_exists(struct rls_redis *r, const char *res);

/**
 * struct rls_lease - a reply of rl_lease
 * @has:     the share, tokens per second
 * @floor:   the reserved floor
 * @lease_ms, @refresh_ms, @hold_ms: durations from the call
 * @learning: Redis is in its learning period
 */
struct rls_lease {
	double has;
	double floor;
	double lease_ms;
	double refresh_ms;
	double hold_ms;
	bool learning;
};

/* Resources renewed in one call at most (rl_lease_many). */
#define RLS_GROUP_MAX	128

/**
 * struct rls_renewal - one resource's lease renewal, in a call of its own
 * (rl_lease) or in one of several resources of one hash slot
 * (rl_lease_many)
 * @res: the resource
 * @in:  what it reports: wants, has (the rate run at now), weight, floor
 * @ret: 0, -ENOENT when Redis does not know @res (state lost or never
 *       configured), -ENOEXEC when it lacks the library, -EAGAIN when it
 *       cannot serve it for a while (a failover or migration under way:
 *       CLUSTERDOWN, TRYAGAIN, LOADING, MASTERDOWN), -EIO (connection or
 *       other error), or, in a call of several, -EXDEV when Redis could
 *       not serve them as one call (MOVED, ASK, TRYAGAIN, a library
 *       without rl_lease_many): renew it alone (rls_redis_lease())
 * @out: the lease, when @ret is 0
 * @err: what went wrong, when @ret is not 0
 */
struct rls_renewal {
	const char *res;
	double in[4];
	int ret;
	struct rls_lease out;
	char err[256];
};

/*
 * The renewals @rn (@k, 1 to RLS_GROUP_MAX, of one hash slot when more
 * than one) for @host, in one call (rl_lease for one, rl_lease_many for
 * more): queued by rls_redis_lease_send() (0 or -EIO), their replies read
 * by rls_redis_lease_recv() (into each @rn's @ret, @out and @err), in the
 * order the calls were queued, so that the calls of many slots go in
 * one round trip on one connection.
 */
int rls_redis_lease_send(struct rls_redis *r, const char *host,
			 struct rls_renewal *const *rn, unsigned int k);
void rls_redis_lease_recv(struct rls_redis *r, const char *host,
			  struct rls_renewal *const *rn, unsigned int k);
/* One renewal alone, sent and read; a MOVED or ASK followed once. */
void rls_redis_lease(struct rls_redis *r, const char *host,
		     struct rls_renewal *rn);

/* rl_leave for @host; errors ignored. */
void rls_redis_leave(struct rls_redis *r, const char *res, const char *host);

/*
 * rl_take: up to @n tokens of the batch bucket into *@got, and in
 * *@wait_ms when @n more would be there; 0 or -errno (@err).
 */
int rls_redis_take(struct rls_redis *r, const char *res, uint64_t n,
		   uint64_t *got, double *wait_ms, char *err,
		   unsigned int errlen);

/* rl_give: @n unused tokens back; those taken back, or -EIO. */
int64_t rls_redis_give(struct rls_redis *r, const char *res, uint64_t n);

#endif /* RLSYNCD_REDIS_H */
