/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Internals shared by the files of the limiter core: limiter.c (lifetime
 * and configuration), acquire.c (acquire, the immediate grant, undo),
 * release.c (release, refund), dispatch.c (serving the queue, the timer,
 * poll), bucket.c (the limiter's bucket with its catch-up pace, and the
 * clients' caps), sched.c (the order of a limiter's own requests) and
 * hier.c (the order of a tree's limiters; a limiter alone is a tree of
 * one). Everything here runs under the limiter's lock (lock.h).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_LIMITER_H
#define _RL_LIMITER_H

#include <linux/bitops.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>

#include "compat.h"
#include "lock.h"
#include "queue.h"
#include "ratelimit.h"

/* bucket.c */
void rl_refill_catchup(struct rl_limiter *lim, u64 now);
u64 rl_catchup_time(const struct rl_limiter *lim);
u64 rl_ready_time(const struct rl_limiter *lim, u64 n);
u64 rl_predict(const struct rl_limiter *lim, const struct rl_client *client,
	       u64 n, u64 now);
void rl_drop_late(struct rl_limiter *lim, u64 then);

/* limiter.c */
void rl_apply_params(struct rl_limiter *lim, const struct rl_params *p,
		     u64 now);
bool rl_conc_switch_busy(const struct rl_limiter *lim,
			 const struct rl_params *p, u64 self);
bool rl_move_busy(const struct rl_limiter *lim, const struct rl_limiter *old,
		  const struct rl_limiter *parent, u64 self);

/* dispatch.c */
bool rl_hier_concurrent(const struct rl_limiter *x);
u64 rl_hier_chunk(const struct rl_limiter *x);
void rl_dispatch(struct rl_limiter *lim, u64 now);
void rl_arm_timer_before(struct rl_limiter *lim, u64 when);
enum hrtimer_restart rl_timer_fn(struct hrtimer *timer);
bool rl_path_ready(struct rl_limiter *lim, u64 now, u64 *when);

/**
 * struct rl_walk - one dispatch of a tree (dispatch.c, hier.c)
 * @lim:    the limiter whose dispatch this is: its timer's time is
 *          returned rather than started
 * @now:    current time, ns
 * @when:   time to start @lim's timer for
 * @budget: grants, parks and unparks left
 * @leaf:   limiter of the request picked
 * @chunk:  tokens to grant it now
 * @own:    chunks granted to the root's own requests
 */
struct rl_walk {
	struct rl_limiter *lim;
	u64 now;
	u64 when;
	unsigned int budget;
	struct rl_limiter *leaf;
	u64 chunk;
	unsigned int own;
};

/* Permits come back at @lim and every level above. */
static inline void rl_path_release(struct rl_limiter *lim, u64 count)
{
	struct rl_limiter *x;

	for (x = lim; x; x = x->h.parent)
		x->held -= count;
}

/*
 * Refill the bucket; inline for the common case, no catching up. A fed
 * limiter's backlog waits: its clock releases nothing.
 */
static inline void rl_refill(struct rl_limiter *lim, u64 now)
{
	const struct rl_params *p = &lim->params;

	if (p->catchup <= RL_TOKENS_CATCHUP_STRICT || !p->backlog || p->fed)
		rl_bucket_refill(&lim->bucket, p, now);
	else
		rl_refill_catchup(lim, now);
}

/*
 * Bring the limiter up to @now without dropping tokens owed to queued
 * requests: with requests queued, the bucket stays where rl_dispatch()
 * left it.
 */
static inline void rl_sync(struct rl_limiter *lim, u64 now)
{
	/* With requests queued, the tokens are theirs: rl_dispatch()'s. */
	if (!lim->nwaiters)
		rl_refill(lim, now - lim->late);
}

/*
 * Grants that emptied the queue are being delivered, late, until @now: that
 * time, up to RL_LATE_MAX_NS, is not idle time. The bucket stays at the
 * last grant's instant, and the next request to arrive gets the tokens of
 * that time (rl_sync_arrival()). Called by the dispatch that granted them,
 * and again by a request woken by its grant, when it is back.
 */
static inline void rl_credit_late(struct rl_limiter *lim, u64 now)
{
	if (!lim->nwaiters && !lim->params.unlimited &&
	    now > lim->bucket.stamp)
		lim->late = min(now - lim->bucket.stamp, RL_LATE_MAX_NS);
}

/* Could @permits permits be taken now? */
static inline bool rl_permits_free(const struct rl_limiter *lim, u64 permits)
{
	const struct rl_params *p = &lim->params;

	return !p->concurrency ||
	       (permits <= p->concurrency &&
		lim->held <= p->concurrency - permits);
}

/*
 * Count a grant that waited @wait_ns in the wait histogram, which the
 * request allocated when it was queued (rl_limiter_hist_alloc()).
 */
static inline void rl_hist_record(struct rl_limiter *lim, u64 wait_ns)
{
	u64 *hist = READ_ONCE(lim->hist);

	lockdep_assert_held(lim->tlock);
	if (likely(hist))
		hist[fls64(wait_ns)]++;
}

/* Take @n tokens and @permits for @client; returns the tokens taken. */
static inline u64 rl_take(struct rl_limiter *lim, struct rl_client *client,
			  u64 n, u64 permits)
{
	lim->held += permits;
	client->held += permits;
	if (client->cap)
		rl_bucket_take(&client->cap_bucket, n);
	if (lim->params.unlimited)
		return 0;
	rl_bucket_take(&lim->bucket, n);
	return n;
}

/* How long the tokens of an immediate grant of @n had been waiting. */
static inline u64 rl_lag(const struct rl_limiter *lim, u64 n)
{
	const struct rl_params *p = &lim->params;
	const struct rl_bucket *b = &lim->bucket;

	if (p->unlimited || !p->rate || p->fed || b->tokens < n ||
	    (b->tokens == n && !b->units))
		return 0;
	/* At most burst * period + period - 1: no overflow. */
	return div64_u64((b->tokens - n) * p->period + b->units, p->rate);
}

/* Tell a request that it is served: wake its task, or its io_uring. */
static inline void rl_waiter_wake(struct rl_waiter *w)
{
	if (likely(w->task))
		wake_up_process(w->task);
	else
		w->served(w);
}

#endif /* _RL_LIMITER_H */
