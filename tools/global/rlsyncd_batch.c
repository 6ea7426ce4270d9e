// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_batch.c - one local named limiter linked to a global resource
 * in batch mode (Rockset's): Redis holds one exact token bucket; the
 * local limiter is fed (RL_CONFIG_FED: its clock adds nothing) with
 * batches of tokens taken from it, sized to the local demand, so that
 * only a few local grants cost a Redis round trip. A batch is asked for
 * whole, when Redis will hold it (rl_take says when): one round trip per
 * batch, also when the hosts want more than the capacity. Tokens that do
 * not fit locally, and those left on exit, go back to Redis.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define PROG "rlsyncd"
#include "tool.h"
#include "rlsyncd.h"

#define NS_PER_MS	1000000ULL
/* The local bucket holds this many refresh intervals at the capacity. */
#define LOCAL_REFRESHES	2
/* The local bucket is looked at this many times a refresh interval. */
#define LOOKS		4
/* Without a known capacity: the local bucket's size. */
#define LOCAL_MAX	1000000000ULL

/* The largest batch: one refresh interval at the capacity. */
static double batch_max(const struct rls_link *l)
{
	if (!l->spec.configure)
		return (double)LOCAL_MAX / LOCAL_REFRESHES;
	return fmax(1, l->spec.capacity * l->spec.refresh_ms / 1000);
}

/* The smallest: a thousandth of the capacity a second (Rockset's). */
static double batch_min(const struct rls_link *l)
{
	return fmax(1, l->spec.configure ? l->spec.capacity / 1000 : 1);
}

int rls_batch_open(struct rls_link *l)
{
	struct rl_config cfg = {
		.rate = 0, .period_ns = 1000000000ULL, .burst = 1,
		.catchup = RL_CATCHUP_STRICT,
	};
	int fd, ret;

	fd = rl_open_named(l->spec.name, RL_ATTACH_CREATE, 0644, &cfg);
	if (fd < 0) {
		fprintf(stderr, PROG ": %s: cannot open the local limiter: %s\n",
			l->spec.name, strerror(-fd));
		return fd;
	}
	l->kernel = rls_k_features(fd);
	if (!(l->kernel & RLS_K_DEPOSIT)) {
		fprintf(stderr, PROG ": %s: mode batch needs %s\n", l->spec.name,
			"the module's RL_IOC_DEPOSIT and RL_CONFIG_FED, which it lacks (older module)");
		rl_close(fd);
		return -ENOTTY;
	}
	/* fed: nothing but deposits; the rate is not used */
	cfg.flags = rls_k_fed_flag();
	cfg.rate = 1;
	cfg.burst = (uint64_t)(batch_max(l) * LOCAL_REFRESHES);
	ret = rl_set_config(fd, &cfg);
	if (ret) {
		fprintf(stderr, PROG ": %s: a fed limiter: %s\n", l->spec.name,
			strerror(-ret));
		rl_close(fd);
		return ret;
	}
	l->fd = fd;
	l->base = cfg;
	l->last_ns = rl_now_ns();
	if (l->kernel & RLS_K_DEMAND)
		rls_k_demand(fd, &l->dlast);
	rl_get_stats(fd, &l->last);
	l->b.batch = batch_min(l);
	rls_state_write(l);
	return 0;
}

/* Tokens that did not fit locally, or were left: back to Redis. */
static void give_back(struct rls_link *l, uint64_t n)
{
	int64_t back;

	if (!n)
		return;
	back = rls_redis_give(l->redis, l->spec.resource, n);
	if (back > 0)
		l->b.given += (uint64_t)back;
}

/*
 * Take up to @n from Redis and feed them to the limiter; the next take
 * not before Redis holds @n again (at most one refresh interval away).
 */
static void take(struct rls_link *l, uint64_t n, uint64_t now)
{
	uint64_t got = 0, excess = 0, sent = rl_now_ns();
	unsigned int short_acks;
	double wait_ms = 0;
	char err[720];
	int ret;

	ret = rls_redis_take(l->redis, l->spec.resource, n, &got, &wait_ms,
			     err, sizeof(err));
	short_acks = rls_redis_short_acks(l->redis);
	l->wait_short += short_acks;
	rls_sentinel_follow(l, short_acks);
	l->b.calls++;
	if (ret) {
		rls_link_down(l, ret == -ENOENT ? "resource unknown (state lost?)" : err);
		return;
	}
	if (l->down)
		printf(PROG ": %s: redis reachable again\n", l->spec.name);
	l->down = false;
	l->rtt_ms = (double)(rl_now_ns() - sent) / NS_PER_MS;
	l->b.taken += got;
	l->b.ready_ns = now + (uint64_t)(fmin(wait_ms, l->spec.refresh_ms) *
					 NS_PER_MS);
	if (!got)
		return;
	ret = rls_k_deposit(l->fd, got, &excess);
	if (ret) {
		fprintf(stderr, PROG ": %s: deposit of %llu: %s\n", l->spec.name,
			(unsigned long long)got, strerror(-ret));
		excess = got;
	}
	give_back(l, excess);
}

/*
 * A few times a refresh interval, with no Redis call: size the batch to
 * the demand (one refresh interval of it). When the local bucket holds
 * less than half a batch, ask Redis for a whole batch, or wait until it
 * holds one: rl_take's reply says when, and the link wakes then.
 */
void rls_batch_refresh(struct rls_link *l, const char *lua)
{
	uint64_t now = rl_now_ns(), n;
	struct rl_stats st;
	char err[720];
	double wants;

	if (now < l->next_ns)
		return;
	l->next_ns = now + (uint64_t)(l->spec.refresh_ms / LOOKS * NS_PER_MS);
	wants = rls_link_demand(l, now, NULL);
	l->wants = wants;
	l->b.batch = fmin(batch_max(l),
			  fmax(batch_min(l), wants * l->spec.refresh_ms / 1000));
	if (rl_get_stats(l->fd, &st))
		return;
	if ((double)st.available >= l->b.batch / 2 || wants <= 0)
		goto out;
	if (now < l->b.ready_ns) {	/* Redis holds no batch yet */
		if (l->b.ready_ns < l->next_ns)
			l->next_ns = l->b.ready_ns;
		goto out;
	}
	if (!rls_link_reconnect(l, lua, err, sizeof(err))) {
		rls_link_down(l, err);
		l->next_ns = now + rls_link_retry_ns(l);
		l->fails++;
		goto out;
	}
	l->fails = 0;
	/* a whole batch, as far as the local bucket has room */
	n = (uint64_t)ceil(l->b.batch);
	if (l->base.burst > st.available && n > l->base.burst - st.available)
		n = l->base.burst - st.available;
	take(l, n, now);
	if (l->b.ready_ns < l->next_ns)
		l->next_ns = l->b.ready_ns;
out:
	rls_state_write(l);
}

/* Take what is left in the local bucket and give it back to Redis. */
void rls_batch_close(struct rls_link *l)
{
	struct rl_stats st;

	if (rl_get_stats(l->fd, &st) || !st.available)
		return;
	if (!rl_try_acquire(l->fd, st.available, NULL))
		give_back(l, st.available);
}
