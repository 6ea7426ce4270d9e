// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_link.c - one local named limiter linked to a global resource in
 * lease mode: measure its demand, renew the lease in one Redis call, set
 * the limiter to the share (SET_CONFIG keeps tokens and waiters), and on
 * the local monotonic clock fall back when the lease ends.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "rlsyncd"
#include "tool.h"
#include "rlsyncd.h"

#define NS_PER_MS	1000000ULL
/* Burst of the local limiter: this much time of its share. */
#define BURST_MS	100.0
/* Before the first reply: ask for everything, the fair share caps it. */
#define WANTS_UNKNOWN	1e12
/* Saturated when sleepers were there this part of the time or more. */
#define BUSY_PART	0.05

bool rls_verbose;

/* The wait for a reply, and the drift margin taken off a lease. */
static double rpc_ms(const struct rls_spec *s)
{
	return fmin(s->refresh_ms / 2, 1000);
}

static double margin_ms(const struct rls_lease *l)
{
	return 10 + l->lease_ms / 50;
}

/* Run the local limiter at @rate tokens per second. */
static void apply(struct rls_link *l, double rate)
{
	struct rl_config cfg = l->base;
	int ret;

	cfg.flags &= ~RL_CONFIG_UNLIMITED;
	cfg.catchup = RL_CATCHUP_STRICT;
	/* rounded down: the shares of all hosts must still fit */
	if (rate >= 1000) {
		cfg.rate = (uint64_t)floor(rate);
		cfg.period_ns = 1000000000ULL;
	} else {
		cfg.rate = (uint64_t)floor(rate * 1000);
		cfg.period_ns = 1000000000000ULL;
	}
	cfg.burst = (uint64_t)fmax(1, llround(rate * BURST_MS / 1000));
	ret = rl_set_config(l->fd, &cfg);
	if (ret) {
		fprintf(stderr, PROG ": %s: setting %.3f/s: %s\n", l->spec.name,
			rate, strerror(-ret));
		return;
	}
	if (rls_verbose && fabs(rate - l->running) > 0.000001)
		printf(PROG ": %s: %.3f/s\n", l->spec.name, rate);
	l->running = rate;
}

int rls_link_open(struct rls_link *l)
{
	struct rl_config paused = {
		.rate = 0, .period_ns = 1000000000ULL, .burst = 1,
		.catchup = RL_CATCHUP_STRICT,
	};
	int fd, ret;

	fd = rl_open_named(l->spec.name, RL_ATTACH_CREATE, 0644, &paused);
	if (fd < 0) {
		fprintf(stderr, PROG ": %s: cannot open the local limiter: %s\n",
			l->spec.name, strerror(-fd));
		return fd;
	}
	ret = rl_get_config(fd, &l->base);
	if (!ret)
		ret = rl_get_stats(fd, &l->last);
	if (ret) {
		fprintf(stderr, PROG ": %s: %s\n", l->spec.name, strerror(-ret));
		rl_close(fd);
		return ret;
	}
	l->fd = fd;
	l->last_ns = rl_now_ns();
	l->running = -1;
	apply(l, 0);	/* nothing until Redis grants a share */
	return 0;
}

/*
 * Demand in tokens per second since the last call: the granted rate with
 * some headroom, plus what was refused; when callers slept or were
 * refused, the limiter is saturated and asks for the whole capacity
 * (the algorithm gives it its share).
 */
static double demand(struct rls_link *l, uint64_t now)
{
	struct rl_stats st;
	double dt = (double)(now - l->last_ns) / 1e9, g, refused, busy;

	if (rl_get_stats(l->fd, &st) || dt <= 0)
		return l->running;
	g = (double)(st.granted - l->last.granted) / dt;
	refused = (double)(st.rejected - l->last.rejected +
			   st.timeouts - l->last.timeouts) / dt;
	busy = (double)(st.wait_ns_total - l->last.wait_ns_total) / 1e9 / dt;
	l->last = st;
	l->last_ns = now;
	if (refused > 0 || st.waiters > 0 || busy >= BUSY_PART)
		return l->spec.configure ? l->spec.capacity : WANTS_UNKNOWN;
	return g * 1.1;
}

/* Lease renewed at @sent, replied at @got: apply what it allows. */
static void take_lease(struct rls_link *l, const struct rls_lease *ls,
		       uint64_t sent, uint64_t got)
{
	bool timely = got - sent < rpc_ms(&l->spec) * NS_PER_MS;
	double was = l->running;

	l->lease = *ls;
	l->exp_ns = sent + (uint64_t)((ls->lease_ms - margin_ms(ls)) * NS_PER_MS);
	l->mexp_ns = l->exp_ns + (uint64_t)(ls->hold_ms * NS_PER_MS);
	if (ls->has < l->running || (ls->has > l->running && timely))
		apply(l, ls->has);
	/* jittered by +-10 %; soon after a decrease, so Redis sees it done */
	l->next_ns = got + (uint64_t)(ls->refresh_ms * NS_PER_MS *
				      (0.9 + 0.2 * rand() / RAND_MAX));
	if (l->running < was)
		l->next_ns = got + (uint64_t)(rpc_ms(&l->spec) * NS_PER_MS);
	if (l->down)
		printf(PROG ": %s: redis reachable again\n", l->spec.name);
	l->down = false;
}

static void went_down(struct rls_link *l, const char *why)
{
	if (!l->down)
		fprintf(stderr, PROG ": %s: redis %s: %s; keeping the lease until it ends\n",
			l->spec.name, l->spec.redis, why);
	l->down = true;
}

/* Connect again if the connection broke; false while Redis is away. */
static bool reconnect(struct rls_link *l, const char *lua)
{
	if (!rls_redis_broken(l->redis))
		return true;
	rls_redis_free(l->redis);
	l->redis = rls_redis_connect(l->spec.redis, rpc_ms(&l->spec), false);
	if (l->redis && rls_redis_library(l->redis, lua)) {
		rls_redis_free(l->redis);
		l->redis = NULL;
	}
	return l->redis;
}

void rls_link_refresh(struct rls_link *l, const char *host, const char *lua)
{
	uint64_t now = rl_now_ns(), sent;
	struct rls_lease ls;
	char err[256];
	double in[4];
	int ret;

	if (now < l->next_ns)
		return;
	l->next_ns = now + (uint64_t)(l->spec.refresh_ms * NS_PER_MS);
	if (!reconnect(l, lua)) {
		went_down(l, "unreachable");
		return;
	}
	in[0] = demand(l, now);
	in[1] = fmax(l->running, 0);
	in[2] = l->spec.weight;
	in[3] = l->spec.safe == RLS_SAFE ? l->spec.safe_rate : 0;
	sent = rl_now_ns();
	ret = rls_redis_lease(l->redis, l->spec.resource, host, in, &ls, err,
			      sizeof(err));
	if (!ret) {
		take_lease(l, &ls, sent, rl_now_ns());
	} else if (ret == -ENOENT && l->spec.configure) {
		/* Redis lost the resource: configure it again, then renew */
		if (!rls_redis_config(l->redis, &l->spec, host))
			l->next_ns = now;
	} else if (ret == -ENOEXEC) {
		if (!rls_redis_library(l->redis, lua))
			l->next_ns = now;
	} else {
		went_down(l, ret == -ENOENT ? "resource unknown (state lost?)" : err);
	}
}

void rls_link_expire(struct rls_link *l, uint64_t now)
{
	double to = l->running;

	/*
	 * A call to Redis may block the agent for two timeouts (connect,
	 * reply): end what would end meanwhile now, not late.
	 */
	now += 2 * (uint64_t)(rpc_ms(&l->spec) * NS_PER_MS);
	if (!l->exp_ns || now < l->exp_ns)
		return;
	if (l->spec.safe == RLS_PESSIMISTIC)
		to = 0;
	else if (l->spec.safe == RLS_SAFE)
		to = now < l->mexp_ns ? fmin(l->running, l->lease.floor) : 0;
	if (to < l->running) {
		fprintf(stderr, PROG ": %s: lease ended, running at %.3f/s\n",
			l->spec.name, to);
		apply(l, to);
	}
}

void rls_link_close(struct rls_link *l, const char *host)
{
	if (l->fd < 0)
		return;
	apply(l, 0);
	rls_redis_leave(l->redis, l->spec.resource, host);
	rl_close(l->fd);
	l->fd = -1;
}
