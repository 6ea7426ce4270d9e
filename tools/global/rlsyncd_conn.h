/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlsyncd_conn.h - a connection to a Redis server (rlsyncd_conn.c),
 * struct rls_redis: a socket, TLS, AUTH and SELECT as its struct
 * rls_conn (rlsyncd_conf.h) asks, shared by all that ask for the same
 * one while it works: each rls_redis_connect_conn() (or
 * rls_redis_connect(), rlsyncd_redis.h) is matched by one
 * rls_redis_free(). Commands queued with rls_redis_send() go out at the
 * next rls_redis_recv(), which reads one reply (a pipeline). Errors are
 * one line, kept as rls_redis_error() and printed too if the connection
 * was opened with @say; after an error of the connection itself (not an
 * error reply) it is broken for good.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLSYNCD_CONN_H
#define RLSYNCD_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include "rlsyncd_conf.h"

/* One line of error, as kept and printed. */
#define RLS_ERR_MAX	400

struct rls_redis;
struct redisReply;

/* Connect to the server @c (@addr for messages), each step in @timeout_ms. */
struct rls_redis *rls_redis_connect_conn(const struct rls_conn *c,
					 const char *addr, double timeout_ms,
					 bool say);
void rls_redis_free(struct rls_redis *r);
/*
 * Queue one command (argv/argvlen as redisCommandArgv; @argvlen NULL:
 * strings); 0, or -EIO with the connection stale (the replies of a
 * pipeline would lose their order).
 */
int rls_redis_send(struct rls_redis *r, int argc, const char **argv,
		   const size_t *argvlen);
/*
 * Send what is queued, read the next reply (NULL on error; the caller
 * frees it). READONLY or NOREPLICAS makes the connection stale.
 */
struct redisReply *rls_redis_recv(struct rls_redis *r);
/* One command and its reply. */
struct redisReply *rls_redis_call(struct rls_redis *r, int argc,
				  const char **argv, const size_t *argvlen);
/*
 * A grant's command (one that takes or leases tokens): with WAIT set
 * (rls_redis_set_wait()), ROLE before the first of a round trip and WAIT
 * behind each; and its reply, with theirs. Grants that WAIT found short
 * are counted (rls_redis_short_acks()).
 */
int rls_redis_grant_send(struct rls_redis *r, int argc, const char **argv);
struct redisReply *rls_redis_grant_recv(struct rls_redis *r);
/* WAIT for @replicas within @ms after each grant (0: no WAIT). */
void rls_redis_set_wait(struct rls_redis *r, unsigned int replicas, double ms);
/*
 * Grants that WAIT found short of wait-replicas acknowledgements (or
 * whose WAIT reply was lost) since the last call; the count restarts.
 */
unsigned int rls_redis_short_acks(struct rls_redis *r);
/* ROLE: 0 if @r's server is a primary, else -EIO after a message. */
int rls_redis_is_primary(struct rls_redis *r);

/* Keep a message as @r's last error; print it if @r says. */
void __attribute__((format(printf, 2, 3)))
rls_redis_fail(struct rls_redis *r, const char *fmt, ...);
/* The same for the error reply @rep of @cmd, explained. */
void rls_redis_explain(struct rls_redis *r, const char *cmd,
		       const struct redisReply *rep);
/*
 * The message of an error reply @rep of FCALL into @buf, without Redis's
 * " script: ..." tail; errors of authentication and ACLs explained.
 */
const char *rls_redis_reply_error(const struct rls_redis *r,
				  const struct redisReply *rep, char *buf,
				  size_t len);
/*
 * The last error of @r, one line without "redis ADDR: "; with @r NULL,
 * that of the last connection that failed.
 */
const char *rls_redis_error(const struct rls_redis *r);
/* Set that of the last connection that failed, for a refusal above. */
void __attribute__((format(printf, 1, 2)))
rls_redis_set_error(const char *fmt, ...);

/* The address of @r's server, as its messages name it. */
const char *rls_redis_addr(const struct rls_redis *r);
/* The node @r is connected to (NULL for NULL). */
const struct rls_conn *rls_redis_conn(const struct rls_redis *r);
/* The wait for each later reply; and what it is. */
void rls_redis_timeout(struct rls_redis *r, double timeout_ms);
double rls_redis_timeout_ms(const struct rls_redis *r);
/* Whether the connection broke (then free it and connect again). */
bool rls_redis_broken(const struct rls_redis *r);
/* Make @r stale: the next refresh connects again (and asks the sentinels). */
void rls_redis_stale(struct rls_redis *r);
/* Whether the function library is known to be on @r's server; set it. */
bool rls_redis_lib(const struct rls_redis *r);
void rls_redis_set_lib(struct rls_redis *r, bool lib);
/*
 * Whether the library on @r's server lacks rl_lease_many (an older one):
 * renewals go one resource a call there, for a minute after it was found
 * so (then a call of several tries again: the operator may have loaded
 * the new one); set it (cleared when rlsyncd loads the library itself).
 */
bool rls_redis_single(const struct rls_redis *r);
void rls_redis_set_single(struct rls_redis *r, bool single);
/*
 * SUBSCRIBE @channel on @r, which must be its caller's alone (it is
 * shared with nobody from then on); 0, or -EIO (-EBUSY: shared).
 */
int rls_redis_subscribe(struct rls_redis *r, const char *channel);
/*
 * The next message published to @r's subscription, if one came, into
 * @buf, without waiting: 1, 0 (none), or -EIO (the connection broke).
 */
int rls_redis_message(struct rls_redis *r, char *buf, size_t len);

/* HOST:PORT, [IPV6]:PORT or unix:PATH of @c into @buf. */
const char *rls_conn_label(const struct rls_conn *c, char *buf, size_t len);

#endif /* RLSYNCD_CONN_H */
