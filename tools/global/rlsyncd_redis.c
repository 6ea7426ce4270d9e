// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_redis.c - rlsyncd's calls into the Redis Function library
 * tools/global/ratelimit.lua, with libhiredis: one blocking call per
 * refresh, bounded by a timeout.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#define PROG "rlsyncd"
#include "tool.h"
#include "rlsyncd.h"

#define RLS_LIB_MAX	(1 << 20)

struct rls_redis {
	redisContext *c;
	char addr[RLS_ADDR_MAX];
};

static struct timeval tv_of(double ms)
{
	struct timeval tv = {
		.tv_sec = (time_t)(ms / 1000),
		.tv_usec = (suseconds_t)((ms - (time_t)(ms / 1000) * 1000.0) * 1000),
	};

	return tv;
}

static redisContext *connect_addr(const char *addr, struct timeval tv)
{
	char host[RLS_ADDR_MAX], *colon;
	int port;

	if (!strncmp(addr, "unix:", 5))
		return redisConnectUnixWithTimeout(addr + 5, tv);
	snprintf(host, sizeof(host), "%s", addr);
	colon = strrchr(host, ':');
	port = colon ? atoi(colon + 1) : 6379;
	if (colon)
		*colon = '\0';
	if (port <= 0 || port > 65535 || !*host)
		return NULL;
	return redisConnectWithTimeout(host, port, tv);
}

struct rls_redis *rls_redis_connect(const char *addr, double timeout_ms,
				    bool say)
{
	struct timeval tv = tv_of(timeout_ms);
	struct rls_redis *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	snprintf(r->addr, sizeof(r->addr), "%s", addr);
	r->c = connect_addr(addr, tv);
	if (!r->c || r->c->err) {
		if (say)
			fprintf(stderr, PROG ": redis %s: %s\n", addr,
				r->c ? r->c->errstr
				     : "bad address (HOST:PORT or unix:PATH)");
		rls_redis_free(r);
		return NULL;
	}
	redisSetTimeout(r->c, tv);
	return r;
}

void rls_redis_timeout(struct rls_redis *r, double timeout_ms)
{
	if (r && r->c)
		redisSetTimeout(r->c, tv_of(timeout_ms));
}

void rls_redis_free(struct rls_redis *r)
{
	if (!r)
		return;
	if (r->c)
		redisFree(r->c);
	free(r);
}

bool rls_redis_broken(const struct rls_redis *r)
{
	return !r || !r->c || r->c->err;
}

/* FCALL @fn on resource @res with @argc string arguments. */
static redisReply *fcall(struct rls_redis *r, const char *fn, const char *res,
			 int argc, const char *const *args)
{
	char keys[4][RL_NAME_MAX + 16];
	const char *argv[24];
	int i, n = 0;

	snprintf(keys[0], sizeof(keys[0]), "rl:{%s}:cfg", res);
	snprintf(keys[1], sizeof(keys[1]), "rl:{%s}:epoch", res);
	snprintf(keys[2], sizeof(keys[2]), "rl:{%s}:members", res);
	snprintf(keys[3], sizeof(keys[3]), "rl:{%s}:bucket", res);
	argv[n++] = "FCALL";
	argv[n++] = fn;
	argv[n++] = "4";
	for (i = 0; i < 4; i++)
		argv[n++] = keys[i];
	for (i = 0; i < argc && n < 24; i++)
		argv[n++] = args[i];
	return redisCommandArgv(r->c, n, argv, NULL);
}

/* The message of an error reply, without Redis's " script: ..." tail. */
static const char *reply_err(redisReply *rep, char *buf, size_t len)
{
	char *tail;

	snprintf(buf, len, "%s", rep->str ? rep->str : "error");
	tail = strstr(buf, " script:");
	if (tail)
		*tail = '\0';
	return buf;
}

static bool is_err(redisReply *rep, const char *code)
{
	return rep && rep->type == REDIS_REPLY_ERROR && rep->str &&
	       !strncmp(rep->str, code, strlen(code));
}

/*
 * Has Redis the function library? 1 or 0 (a read: FUNCTION LIST), or
 * -EIO after a message.
 */
static int has_library(struct rls_redis *r)
{
	redisReply *rep;
	int ret;

	rep = redisCommand(r->c, "FUNCTION LIST LIBRARYNAME ratelimit");
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, PROG ": redis %s: %s\n", r->addr,
			rep ? "FUNCTION LIST failed: Redis 7.0 or later needed"
			    : r->c->errstr);
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
		fprintf(stderr, PROG ": redis %s lacks the library; %s: cannot read it\n",
			r->addr, lua);
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
	       r->addr, lua);
	return 0;
}

int rls_redis_library(struct rls_redis *r, const char *lua)
{
	static char text[RLS_LIB_MAX];
	redisReply *rep;
	size_t len;
	int ret;

	ret = has_library(r);
	if (ret)
		return ret < 0 ? ret : 0;
	len = read_library(r, lua, text, sizeof(text));
	if (!len)
		return -ENOENT;
	rep = redisCommand(r->c, "FUNCTION LOAD REPLACE %b", text, len);
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, PROG ": redis %s: FUNCTION LOAD %s: %s\n",
			r->addr, lua, rep ? rep->str : r->c->errstr);
		freeReplyObject(rep);
		return -EIO;
	}
	freeReplyObject(rep);
	return 0;
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
			r->addr, s->resource,
			rep ? reply_err(rep, err, sizeof(err)) : r->c->errstr);
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
		fprintf(stderr, PROG ": redis %s: resource %s: %s\n", r->addr,
			res, rep ? reply_err(rep, err, sizeof(err)) : r->c->errstr);
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

int rls_redis_lease(struct rls_redis *r, const char *res, const char *host,
		    const double in[4], struct rls_lease *out, char *err,
		    unsigned int errlen)
{
	char a[4][32];
	const char *args[5] = { host, a[0], a[1], a[2], a[3] };
	redisReply *rep;
	int i, ret = 0;

	for (i = 0; i < 4; i++)
		fmt(a[i], sizeof(a[i]), in[i]);
	rep = fcall(r, "rl_lease", res, 5, args);
	if (is_err(rep, "RLNOCONF"))
		ret = -ENOENT;
	else if (rep && rep->type == REDIS_REPLY_ERROR &&
		 strstr(rep->str, "not found"))
		ret = -ENOEXEC;
	else if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements < 9)
		ret = -EIO;
	if (ret) {
		if (rep)
			reply_err(rep, err, errlen);
		else
			snprintf(err, errlen, "%s", r->c->errstr);
		freeReplyObject(rep);
		return ret;
	}
	out->has = num_of(rep->element[0]);
	out->floor = num_of(rep->element[1]);
	out->lease_ms = num_of(rep->element[2]);
	out->refresh_ms = num_of(rep->element[3]);
	out->hold_ms = num_of(rep->element[4]);
	out->learning = num_of(rep->element[5]) != 0;
	freeReplyObject(rep);
	return 0;
}

void rls_redis_leave(struct rls_redis *r, const char *res, const char *host)
{
	const char *args[1] = { host };

	if (!rls_redis_broken(r))
		freeReplyObject(fcall(r, "rl_leave", res, 1, args));
}

int rls_redis_take(struct rls_redis *r, const char *res, uint64_t n,
		   uint64_t *got, char *err, unsigned int errlen)
{
	char a[32];
	const char *args[2] = { a, "0" };
	redisReply *rep;
	int ret;

	snprintf(a, sizeof(a), "%llu", (unsigned long long)n);
	rep = fcall(r, "rl_take", res, 2, args);
	if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements < 2) {
		ret = is_err(rep, "RLNOCONF") ? -ENOENT : -EIO;
		if (rep)
			reply_err(rep, err, errlen);
		else
			snprintf(err, errlen, "%s", r->c->errstr);
		freeReplyObject(rep);
		return ret;
	}
	*got = (uint64_t)num_of(rep->element[0]);
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
