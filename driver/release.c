// SPDX-License-Identifier: GPL-2.0-only
/*
 * Giving back: concurrency permits a client holds (RL_IOC_RELEASE), and
 * rate tokens it took and did not use (RL_IOC_REFUND). Either may let the
 * queue go on, at the limiter and, in a tree, at its ancestors.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/spinlock.h>

#include "limiter.h"
#include "ratelimit_trace.h"

/**
 * rl_limiter_release() - give back permits
 * @lim:    the limiter
 * @client: the client holding them
 * @count:  permits, at most what @client holds
 *
 * Return: 0, or -EINVAL if @client holds fewer.
 */
int rl_limiter_release(struct rl_limiter *lim, struct rl_client *client,
		       u64 count)
{
	int ret = -EINVAL;

	rl_lock_irq(lim);
	if (count <= client->held) {
		client->held -= count;
		rl_path_release(lim, count);
		trace_ratelimit_release(lim, count, lim->held);
		rl_dispatch(lim, ktime_get_ns());
		ret = 0;
	}
	rl_unlock_irq(lim);
	return ret;
}

/**
 * rl_limiter_refund() - give back unused tokens
 * @lim:    the limiter
 * @client: the client that acquired them
 * @count:  tokens, at most what @client took and did not refund yet
 *
 * They go back at every level of the path that limits the rate; each
 * bucket still never holds more than its burst.
 *
 * Return: 0, or -EINVAL if @client took fewer.
 */
int rl_limiter_refund(struct rl_limiter *lim, struct rl_client *client,
		      u64 count)
{
	u64 now = ktime_get_ns();
	struct rl_limiter *x;
	int ret = -EINVAL;

	rl_lock_irq(lim);
	if (count <= client->refundable) {
		client->refundable -= count;
		lim->counters.refunded += count;
		for (x = lim; x; x = x->h.parent) {
			if (x != lim && x->params.unlimited)
				continue;
			rl_sync(x, now);
			rl_bucket_give(&x->bucket, &x->params, count);
		}
		rl_dispatch(lim, now);
		ret = 0;
	}
	rl_unlock_irq(lim);
	return ret;
}
