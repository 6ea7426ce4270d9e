// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_redis.c - rlsyncd's calls into the Redis Function library
 * tools/global/ratelimit.lua, over connections of rlsyncd_conn.c (socket
 * or TLS, with hiredis's protocol code): blocking calls bounded by a
 * timeout. Links with the same address share one connection, on which
 * the lease renewals of all of them are pipelined: N calls queued with
 * rls_redis_lease_send(), then N replies read with
 * rls_redis_lease_recv(), one round trip; a call renews one resource
 * (rl_lease) or several of one hash slot (rl_lease_many), which costs
 * Redis less than one call each. A link's connection is to the
 * primary that the sentinels name (rlsyncd_sentinel.c) or that owns its
 * resource's slot (rlsyncd_cluster.c), whose MOVED and ASK are followed
 * here.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#define PROG "rlsyncd"
#include "tool.h"
#include "rlsyncd_redis.h"
#include "rlsyncd_cluster.h"
#include "rlsyncd_sentinel.h"
#include "rlsyncd_conn.h"
#include "rlsyncd_conf.h"

#define RLS_LIB_MAX	(1 << 20)

/* The library's path, for the nodes a redirection reaches (cluster = yes). */
static const char *cluster_lua;

struct rls_redis *rls_redis_connect(const struct rls_spec *s,
				    double timeout_ms, bool say)
{
	struct rls_redis *r;

	if (s->conn.cluster)
		return rls_cluster_connect(s, timeout_ms, say);
	if (s->ha.n)
		r = rls_sentinel_connect(s, timeout_ms, say);
	else
		r = rls_redis_connect_conn(&s->conn, s->redis, timeout_ms, say);
	if (r)
		rls_redis_set_wait(r, s->ha.wait_replicas, s->ha.wait_ms);
	return r;
}

/* The size of a resource's Redis key (rl:{RES}:cfg, ...). */
#define KEY_MAX		(RL_NAME_MAX + 16)

/* The arguments of an FCALL. */
struct fcall_args {
	char keys[4][KEY_MAX];
	const char *argv[24];
	int n;
};

/*
 * The first @n keys of resource @res into @keys, in the order the library
 * takes them: cfg, epoch, members, bucket.
 */
static void res_keys(char (*keys)[KEY_MAX], const char *res, int n)
{
	static const char *const what[4] = { "cfg", "epoch", "members", "bucket" };
	int i;

	for (i = 0; i < n; i++)
		snprintf(keys[i], sizeof(keys[i]), "rl:{%s}:%s", res, what[i]);
}

/*
 * FCALL @fn on resource @res with @argc string arguments, into @a; rl_lease
 * with the three keys it uses (not the bucket of batch mode, which does
 * not exist in lease mode: with it, a node importing the resource's slot
 * would answer TRYAGAIN instead of serving the call after ASKING).
 */
static void fcall_build(struct fcall_args *a, const char *fn, const char *res,
			int argc, const char *const *args)
{
	int i, nkeys = strcmp(fn, "rl_lease") ? 4 : 3;

	res_keys(a->keys, res, 4);
	a->n = 0;
	a->argv[a->n++] = "FCALL";
	a->argv[a->n++] = fn;
	a->argv[a->n++] = nkeys == 3 ? "3" : "4";
	for (i = 0; i < nkeys; i++)
		a->argv[a->n++] = a->keys[i];
	for (i = 0; i < argc && a->n < 24; i++)
		a->argv[a->n++] = args[i];
}

static bool is_err(const redisReply *rep, const char *code)
{
	return rep && rep->type == REDIS_REPLY_ERROR && rep->str &&
	       !strncmp(rep->str, code, strlen(code));
}

/*
 * Redis Cluster: @rep (freed) is "MOVED SLOT HOST:PORT" or "ASK SLOT
 * HOST:PORT": the slot map is read again before the next routing, and the
 * FCALL @argv_fcall is sent once to the node named (after ASKING for ASK). The
 * reply there, or @rep itself if not a redirection.
 */
static redisReply *redirect(struct rls_redis *r, redisReply *rep, int argc,
			    const char **argv_fcall)
{
	const char *argv[1] = { "ASKING" };
	bool ask = is_err(rep, "ASK ");
	struct rls_conn node = *rls_redis_conn(r);
	struct rls_redis *to;
	char addr[RLS_ADDR_MAX];
	redisReply *again;

	if (!node.cluster || (!ask && !is_err(rep, "MOVED ")))
		return rep;
	rls_cluster_stale();
	if (rls_cluster_parse_node(strrchr(rep->str, ' '), &node, addr,
				   sizeof(addr)))
		return rep;
	to = rls_redis_connect_conn(&node, addr, rls_redis_timeout_ms(r), false);
	if (!to)
		return rep;
	if (rls_redis_lib(to) || !cluster_lua ||
	    !rls_redis_library(to, cluster_lua)) {
		if ((!ask || !rls_redis_send(to, 1, argv, NULL)) &&
		    !rls_redis_send(to, argc, argv_fcall, NULL)) {
			if (ask)
				freeReplyObject(rls_redis_recv(to));
			again = rls_redis_recv(to);
			if (again) {
				freeReplyObject(rep);
				rep = again;
			}
		}
	}
	rls_redis_free(to);
	return rep;
}

/*
 * FCALL @fn on resource @res with @argc string arguments, its reply (NULL
 * with rls_redis_error() set); with @grant (a call that takes or leases
 * tokens) and wait-replicas, WAIT pipelined behind it.
 */
static redisReply *fcall_wait(struct rls_redis *r, const char *fn,
			      const char *res, int argc,
			      const char *const *args, bool grant)
{
	struct fcall_args a;
	redisReply *rep;

	fcall_build(&a, fn, res, argc, args);
	if (!grant)
		rep = rls_redis_send(r, a.n, a.argv, NULL) ? NULL : rls_redis_recv(r);
	else
		rep = rls_redis_grant_send(r, a.n, a.argv) ? NULL : rls_redis_grant_recv(r);
	return redirect(r, rep, a.n, a.argv);
}

static redisReply *fcall(struct rls_redis *r, const char *fn, const char *res,
			 int argc, const char *const *args)
{
	return fcall_wait(r, fn, res, argc, args, false);
}

/*
 * Has Redis the function library? 1 or 0 (a read: FUNCTION LIST), or
 * -EIO after a message.
 */
static int has_library(struct rls_redis *r)
{
	const char *argv[4] = { "FUNCTION", "LIST", "LIBRARYNAME", "ratelimit" };
	redisReply *rep;
	int ret;

	rep = rls_redis_call(r, 4, argv, NULL);
	if (!rep)
		rls_redis_fail(r, "FUNCTION LIST: %s", rls_redis_error(r));
	else if (is_err(rep, "ERR unknown command") ||
		 is_err(rep, "ERR Unknown subcommand"))
		rls_redis_fail(r, "FUNCTION LIST: Redis 7.0 or later needed (%s)",
			       rep->str);
	else if (rep->type == REDIS_REPLY_ERROR)
		rls_redis_explain(r, "FUNCTION LIST", rep);
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		freeReplyObject(rep);
		return -EIO;
	}
	ret = rep->type == REDIS_REPLY_ARRAY && rep->elements > 0;
	freeReplyObject(rep);
	return ret;
}

/* The library's text from @lua into @text: its length, 0 after a message. */
static size_t read_library(struct rls_redis *r, const char *lua, char *text,
			   size_t size)
{
	size_t len;
	FILE *in;

	in = fopen(lua, "re");
	len = in ? fread(text, 1, size - 1, in) : 0;
	if (in)
		fclose(in);
	if (!len)
		rls_redis_fail(r, "lacks the library; %s: cannot read it", lua);
	return len;
}

int rls_redis_library_check(struct rls_redis *r, const char *lua)
{
	static char text[RLS_LIB_MAX];
	int ret = has_library(r);

	if (ret)
		return ret < 0 ? ret : 0;
	if (!read_library(r, lua, text, sizeof(text)))
		return -ENOENT;
	printf(PROG ": redis %s lacks the library; the agent would load %s\n",
	       rls_redis_addr(r), lua);
	return 0;
}

int rls_redis_library(struct rls_redis *r, const char *lua)
{
	static char text[RLS_LIB_MAX];
	const char *argv[4] = { "FUNCTION", "LOAD", "REPLACE", text };
	size_t argvlen[4] = { 8, 4, 7 };
	redisReply *rep;
	int ret;

	if (rls_redis_lib(r))
		return 0;
	ret = has_library(r);
	if (ret) {
		rls_redis_set_lib(r, ret > 0);
		return ret < 0 ? ret : 0;
	}
	argvlen[3] = read_library(r, lua, text, sizeof(text));
	if (!argvlen[3])
		return -ENOENT;
	rep = rls_redis_call(r, 4, argv, argvlen);
	if (!rep)
		rls_redis_fail(r, "FUNCTION LOAD %s: %s", lua, rls_redis_error(r));
	else if (rep->type == REDIS_REPLY_ERROR)
		rls_redis_explain(r, "FUNCTION LOAD", rep);
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		freeReplyObject(rep);
		return -EIO;
	}
	freeReplyObject(rep);
	rls_redis_set_lib(r, true);
	rls_redis_set_single(r, false);	/* this library has rl_lease_many */
	return 0;
}

int rls_redis_cluster_library(const struct rls_spec *s, const char *lua,
			      bool check)
{
	char addr[RLS_ADDR_MAX];
	struct rls_redis *r;
	struct rls_conn c;
	int i, n, ret = 0;
	bool libs;

	cluster_lua = lua;
	n = rls_cluster_nodes(s, RLS_START_TIMEOUT_MS, true, &libs);
	if (n < 0)
		return -EIO;
	if (libs)
		return 0;
	if (!n) {
		fprintf(stderr, PROG ": redis %s: %s\n", s->redis,
			"the cluster serves no slot (CLUSTER SLOTS is empty)");
		return -EIO;
	}
	for (i = 0; !ret && i < n; i++) {
		rls_cluster_node(s, (unsigned int)i, &c, addr, sizeof(addr));
		r = rls_redis_connect_conn(&c, addr, RLS_START_TIMEOUT_MS, true);
		if (!r)
			return -EIO;
		ret = check ? rls_redis_library_check(r, lua) :
			      rls_redis_library(r, lua);
		rls_redis_free(r);
	}
	rls_cluster_set_libs(s, !ret && !check);
	return ret;
}

static void fmt(char *buf, size_t len, double v)
{
	snprintf(buf, len, "%.6f", v);
}

int rls_redis_config(struct rls_redis *r, const struct rls_spec *s,
		     const char *host)
{
	char a[6][32], err[256];
	const char *args[9] = {
		host, s->batch ? "batch" : "lease", a[0], s->algorithm,
		a[1], a[2], a[3], a[4], a[5],
	};
	redisReply *rep;
	int ret = 0;

	fmt(a[0], sizeof(a[0]), s->capacity);
	fmt(a[1], sizeof(a[1]), s->lease_ms);
	fmt(a[2], sizeof(a[2]), s->refresh_ms);
	fmt(a[3], sizeof(a[3]), s->hold_ms);
	fmt(a[4], sizeof(a[4]), s->static_rate);
	fmt(a[5], sizeof(a[5]), s->capacity);
	rep = fcall(r, "rl_config", s->resource, 9, args);
	if (!rep || rep->type != REDIS_REPLY_ARRAY) {
		fprintf(stderr, PROG ": redis %s: configuring resource %s: %s\n",
			rls_redis_addr(r), s->resource, rep ?
			rls_redis_reply_error(r, rep, err, sizeof(err)) :
			rls_redis_error(r));
		ret = rep ? -EINVAL : -EIO;
	} else if (rep->elements == 2 && rep->element[1]->integer && rls_verbose) {
		printf("rlsyncd: resource %s configured (version %lld)\n",
		       s->resource, rep->element[0]->integer);
	}
	freeReplyObject(rep);
	return ret;
}

int rls_redis_exists(struct rls_redis *r, const char *res)
{
	redisReply *rep = fcall(r, "rl_info", res, 0, NULL);
	char err[256];
	int ret = 1;

	if (is_err(rep, "RLNOCONF")) {
		ret = 0;
	} else if (!rep || rep->type != REDIS_REPLY_ARRAY) {
		fprintf(stderr, PROG ": redis %s: resource %s: %s\n",
			rls_redis_addr(r), res, rep ?
			rls_redis_reply_error(r, rep, err, sizeof(err)) :
			rls_redis_error(r));
		ret = -EIO;
	}
	freeReplyObject(rep);
	return ret;
}

static double num_of(const redisReply *e)
{
	if (e->type == REDIS_REPLY_INTEGER)
		return (double)e->integer;
	return e->str ? strtod(e->str, NULL) : 0;
}

/*
 * The FCALL of renewals: rl_lease with the three keys of one resource and
 * its five arguments, or rl_lease_many with those of each resource in
 * turn. Built at each send (its text is copied into the connection's
 * output at once), so one for all.
 */
static struct lease_call {
	const char *argv[3 + 8 * RLS_GROUP_MAX];
	char keys[3 * RLS_GROUP_MAX][KEY_MAX];
	char num[4 * RLS_GROUP_MAX][32];
	char nkeys[16];
	int n;
} call;

/* The call of the renewals @rn (@k) for @host, into call. */
static void lease_build(const char *host, struct rls_renewal *const *rn,
			unsigned int k)
{
	unsigned int i, j;

	call.n = 0;
	call.argv[call.n++] = "FCALL";
	call.argv[call.n++] = k == 1 ? "rl_lease" : "rl_lease_many";
	snprintf(call.nkeys, sizeof(call.nkeys), "%u", 3 * k);
	call.argv[call.n++] = call.nkeys;
	for (i = 0; i < k; i++) {
		res_keys(&call.keys[3 * i], rn[i]->res, 3);
		for (j = 0; j < 3; j++)
			call.argv[call.n++] = call.keys[3 * i + j];
	}
	for (i = 0; i < k; i++) {
		call.argv[call.n++] = host;
		for (j = 0; j < 4; j++) {
			fmt(call.num[4 * i + j], sizeof(call.num[0]), rn[i]->in[j]);
			call.argv[call.n++] = call.num[4 * i + j];
		}
	}
}

int rls_redis_lease_send(struct rls_redis *r, const char *host,
			 struct rls_renewal *const *rn, unsigned int k)
{
	if (!k || k > RLS_GROUP_MAX)
		return -EINVAL;
	lease_build(host, rn, k);
	return rls_redis_grant_send(r, call.n, call.argv);
}

/*
 * The error reply @e of a renewal as its ret (struct rls_renewal). Redis
 * puts "ERR " before an error inside an array (rl_lease_many's reply of
 * one resource): skipped.
 */
static int lease_error(const char *e)
{
	static const char *const later[] = {
		"CLUSTERDOWN", "TRYAGAIN", "LOADING", "MASTERDOWN",
	};
	unsigned int i;

	if (!strncmp(e, "ERR ", 4))
		e += 4;
	if (!strncmp(e, "RLNOCONF", 8))
		return -ENOENT;
	for (i = 0; i < ARRAY_SIZE(later); i++) {
		if (!strncmp(e, later[i], strlen(later[i])))
			return -EAGAIN;
	}
	return strstr(e, "not found") ? -ENOEXEC : -EIO;
}

/* @rep, one resource's reply (rl_lease's, or one of rl_lease_many's), into @rn. */
static void lease_reply(struct rls_redis *r, const redisReply *rep,
			struct rls_renewal *rn)
{
	rn->ret = 0;
	if (rep && rep->type == REDIS_REPLY_ERROR && rep->str)
		rn->ret = lease_error(rep->str);
	else if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements < 9)
		rn->ret = -EIO;
	if (rn->ret) {
		if (rep)
			rls_redis_reply_error(r, rep, rn->err, sizeof(rn->err));
		else
			snprintf(rn->err, sizeof(rn->err), "%s", rls_redis_error(r));
		return;
	}
	rn->out.has = num_of(rep->element[0]);
	rn->out.floor = num_of(rep->element[1]);
	rn->out.lease_ms = num_of(rep->element[2]);
	rn->out.refresh_ms = num_of(rep->element[3]);
	rn->out.hold_ms = num_of(rep->element[4]);
	rn->out.learning = num_of(rep->element[5]) != 0;
}

/*
 * The reply @rep of an rl_lease_many call that is not one per resource
 * (an error of the call as a whole) into the renewals @rn (@k): renewed
 * alone later (-EXDEV) if a redirection or TRYAGAIN (a slot being
 * migrated may hold some of the keys), CROSSSLOT (keys this agent took for
 * one slot's that Redis does not) or a library without rl_lease_many
 * (then no call of several on @r for a while: said once) refused the
 * call, else its error for each.
 */
static void many_failed(struct rls_redis *r, const redisReply *rep,
			struct rls_renewal *const *rn, unsigned int k)
{
	static bool said;
	unsigned int i;
	bool alone;

	lease_reply(r, rep, rn[0]);
	alone = rn[0]->ret == -ENOEXEC || is_err(rep, "TRYAGAIN") ||
		is_err(rep, "MOVED ") || is_err(rep, "ASK ") ||
		is_err(rep, "CROSSSLOT");
	if (rn[0]->ret == -ENOEXEC) {
		rls_redis_set_single(r, true);
		if (!said)
			fprintf(stderr, PROG ": redis %s: rl_lease_many: %s: %s\n",
				rls_redis_addr(r), rn[0]->err,
				"renewing one resource a call (an older library? load this one with FUNCTION LOAD REPLACE)");
		said = true;
	}
	for (i = 0; i < k; i++) {
		rn[i]->ret = alone ? -EXDEV : rn[0]->ret;
		snprintf(rn[i]->err, sizeof(rn[i]->err), "%s", rn[0]->err);
	}
}

void rls_redis_lease_recv(struct rls_redis *r, const char *host,
			  struct rls_renewal *const *rn, unsigned int k)
{
	redisReply *rep = rls_redis_grant_recv(r);
	unsigned int i;

	if (k == 1) {
		if (is_err(rep, "MOVED ") || is_err(rep, "ASK ")) {
			lease_build(host, rn, 1);
			rep = redirect(r, rep, call.n, call.argv);
		}
		lease_reply(r, rep, rn[0]);
		if (rn[0]->ret == -ENOEXEC)	/* looked for again */
			rls_redis_set_lib(r, false);
	} else if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == k) {
		for (i = 0; i < k; i++)
			lease_reply(r, rep->element[i], rn[i]);
	} else {
		many_failed(r, rep, rn, k);
	}
	freeReplyObject(rep);
}

void rls_redis_lease(struct rls_redis *r, const char *host,
		     struct rls_renewal *rn)
{
	if (rls_redis_lease_send(r, host, &rn, 1)) {
		rn->ret = -EIO;
		snprintf(rn->err, sizeof(rn->err), "%s", rls_redis_error(r));
		return;
	}
	rls_redis_lease_recv(r, host, &rn, 1);
}

void rls_redis_leave(struct rls_redis *r, const char *res, const char *host)
{
	const char *args[1] = { host };

	if (!rls_redis_broken(r))
		freeReplyObject(fcall(r, "rl_leave", res, 1, args));
}

int rls_redis_take(struct rls_redis *r, const char *res, uint64_t n,
		   uint64_t *got, double *wait_ms, char *err, unsigned int errlen)
{
	char a[32];
	const char *args[2] = { a, "0" };
	redisReply *rep;
	int ret;

	snprintf(a, sizeof(a), "%llu", (unsigned long long)n);
	rep = fcall_wait(r, "rl_take", res, 2, args, true);
	if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements < 2) {
		ret = is_err(rep, "RLNOCONF") ? -ENOENT : -EIO;
		if (rep)
			rls_redis_reply_error(r, rep, err, errlen);
		else
			snprintf(err, errlen, "%s", rls_redis_error(r));
		freeReplyObject(rep);
		return ret;
	}
	*got = (uint64_t)num_of(rep->element[0]);
	*wait_ms = num_of(rep->element[1]);
	freeReplyObject(rep);
	return 0;
}

int64_t rls_redis_give(struct rls_redis *r, const char *res, uint64_t n)
{
	char a[32];
	const char *args[1] = { a };
	redisReply *rep;
	int64_t back = -EIO;

	if (rls_redis_broken(r))
		return -EIO;
	snprintf(a, sizeof(a), "%llu", (unsigned long long)n);
	rep = fcall(r, "rl_give", res, 1, args);
	if (rep && rep->type == REDIS_REPLY_INTEGER)
		back = rep->integer;
	freeReplyObject(rep);
	return back;
}

