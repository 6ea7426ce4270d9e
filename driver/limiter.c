// SPDX-License-Identifier: GPL-2.0-only
/*
 * Limiter core of the ratelimit module: a token bucket, the queue of
 * requests sleeping for tokens, and the hrtimer that serves them.
 *
 * A request sleeps on its own stack entry (struct rl_waiter) and is woken
 * by name when its tokens are granted, so a grant wakes exactly one task;
 * sched.c decides whose turn it is. The timer is started only while
 * someone sleeps or polls, for the instant the next request can be served.
 * A limiter with a concurrency limit also counts the tokens held (permits):
 * a request takes all its permits with its first chunk, so that partial
 * holders cannot block each other.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/minmax.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/string.h>
#include <linux/bitops.h>
#include <linux/math64.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>

#include "compat.h"
#include "ratelimit.h"

/* rl_acquire_begin() queued the request: sleep for it. */
#define RL_QUEUED	1

/* Refill the bucket, keeping what overflows it for catching up. */
static void rl_refill_catchup(struct rl_limiter *lim, u64 now)
{
	const struct rl_params *p = &lim->params;
	struct rl_params rp;
	u64 over, move;

	over = rl_bucket_overflow(&lim->bucket, p, now);
	lim->backlog = over >= p->backlog - lim->backlog ? p->backlog :
		       lim->backlog + over;
	rl_bucket_refill(&lim->bucket, p, now);
	if (!lim->backlog || lim->bucket.tokens >= p->burst) {
		/* Nothing to catch up on, or no room: the pace restarts. */
		lim->release = (struct rl_bucket) { .stamp = now };
		return;
	}
	rl_catchup_params(p, &rp);
	rl_bucket_refill(&lim->release, &rp, now);
	move = min3(lim->release.tokens, lim->backlog,
		    p->burst - lim->bucket.tokens);
	lim->release.tokens -= move;
	lim->backlog -= move;
	lim->bucket.tokens += move;
	if (lim->bucket.tokens == p->burst)
		lim->bucket.units = 0;
}

/* Refill the bucket; inline for the common case, no catching up. */
static inline void rl_refill(struct rl_limiter *lim, u64 now)
{
	const struct rl_params *p = &lim->params;

	if (p->catchup <= RL_TOKENS_CATCHUP_STRICT || !p->backlog)
		rl_bucket_refill(&lim->bucket, p, now);
	else
		rl_refill_catchup(lim, now);
}

/* When catching up brings the next token, or U64_MAX. */
static u64 rl_catchup_time(const struct rl_limiter *lim)
{
	const struct rl_params *p = &lim->params;
	struct rl_params rp;
	u64 when;

	if (p->catchup <= RL_TOKENS_CATCHUP_STRICT || !lim->backlog ||
	    lim->bucket.tokens >= p->burst)
		return U64_MAX;
	rl_catchup_params(p, &rp);
	when = rl_bucket_ready(&lim->release, &rp, 1);
	return when > KTIME_MAX ? U64_MAX : when;
}

/* Would an acquire of one token be granted at once (caps aside)? */
static bool rl_ready(const struct rl_limiter *lim)
{
	const struct rl_params *p = &lim->params;

	return !lim->nwaiters && (p->unlimited || lim->bucket.tokens) &&
	       (!p->concurrency || lim->held < p->concurrency);
}

/* Absolute time @n tokens will be there, U64_MAX if never or too far. */
static u64 rl_ready_time(const struct rl_limiter *lim, u64 n)
{
	u64 when = rl_bucket_ready(&lim->bucket, &lim->params, n);

	return when > KTIME_MAX ? U64_MAX : when;
}

/*
 * Predicted grant time of a request of @n tokens from @client queued
 * behind the others: when the limiter and the client's cap allow it.
 */
static u64 rl_predict(const struct rl_limiter *lim,
		      const struct rl_client *client, u64 n, u64 now)
{
	u64 sum, when = now, cap = rl_cap_ready(lim, client, n);

	if (!lim->params.unlimited) {
		if (check_add_overflow(lim->queued, n, &sum))
			return U64_MAX;
		when = rl_ready_time(lim, sum);
	}
	return cap > KTIME_MAX ? U64_MAX : max3(when, cap, now);
}

/* Start, move or stop the timer for @when, U64_MAX for never. */
static void rl_arm_timer(struct rl_limiter *lim, u64 when)
{
	lockdep_assert_held(&lim->lock);
	if (when == U64_MAX) {
		/* A callback already running finds nothing to do. */
		if (lim->timer_expiry)
			hrtimer_try_to_cancel(&lim->timer);
		lim->timer_expiry = 0;
		return;
	}
	if (when == lim->timer_expiry)
		return;
	lim->timer_expiry = when;
	hrtimer_start_range_ns(&lim->timer, ns_to_ktime(when),
			       RL_TIMER_SLACK_NS, HRTIMER_MODE_ABS);
}

/* Could @permits permits be taken now? */
static bool rl_permits_free(const struct rl_limiter *lim, u64 permits)
{
	const struct rl_params *p = &lim->params;

	return !p->concurrency ||
	       (permits <= p->concurrency &&
		lim->held <= p->concurrency - permits);
}

/* Could @n tokens and @permits permits be taken now? */
static bool rl_can_take(const struct rl_limiter *lim, u64 n, u64 permits)
{
	const struct rl_params *p = &lim->params;

	if (!p->unlimited && lim->bucket.tokens < n)
		return false;
	return rl_permits_free(lim, permits);
}

/* Take them for @client; returns the tokens taken from the bucket. */
static u64 rl_take(struct rl_limiter *lim, struct rl_client *client, u64 n,
		   u64 permits)
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

/* Permits a request takes with its next chunk: all of them, at first. */
static u64 rl_permits(const struct rl_limiter *lim, const struct rl_waiter *w)
{
	return lim->params.concurrency && !w->held ? w->want : 0;
}

/* When a token is there for pollers, if time is what they wait for. */
static u64 rl_poll_time(const struct rl_limiter *lim)
{
	if (lim->params.unlimited || lim->bucket.tokens)
		return U64_MAX;
	return min(rl_ready_time(lim, 1), rl_catchup_time(lim));
}

static void rl_wake_pollers(struct rl_limiter *lim)
{
	struct rl_client *client;

	lockdep_assert_held(&lim->lock);
	lim->poll_armed = false;
	list_for_each_entry(client, &lim->clients, node)
		wake_up_poll(&client->pollq, EPOLLIN | EPOLLRDNORM);
}

/*
 * Bring the bucket to the instant @chunk tokens exist, if that is no later
 * than @now, rather than to @now: a queued request is owed its tokens from
 * the moment they exist, however late the timer or the lock let us run, and
 * a bucket filled to the burst at @now would drop the ones earned since.
 * Returns whether @chunk tokens are there; if not, the bucket is at @now.
 */
static bool rl_tokens_by(struct rl_limiter *lim, u64 chunk, u64 now)
{
	u64 when;

	while (lim->bucket.tokens < chunk) {
		when = min(rl_ready_time(lim, chunk), rl_catchup_time(lim));
		if (when > now || when <= lim->bucket.stamp) {
			/* Fewer than @chunk tokens by @now: none to drop. */
			rl_refill(lim, now);
			return lim->bucket.tokens >= chunk;
		}
		rl_refill(lim, when);
	}
	return true;
}

/* Grant a chunk to @w at the bucket's instant; wake it if complete. */
static void rl_grant_chunk(struct rl_limiter *lim, struct rl_waiter *w,
			   u64 chunk, u64 now)
{
	u64 permits = rl_permits(lim, w);

	w->held += permits;
	w->taken += rl_take(lim, w->client, chunk, permits);
	w->got += chunk;
	w->at = lim->params.unlimited ? now : lim->bucket.stamp;
	rl_sched_served(lim, w, chunk);
	if (!w->want) {
		/* Pairs with set_current_state() in rl_sleep(). */
		WRITE_ONCE(w->done, true);
		wake_up_process(w->task);
	}
}

/*
 * Grants that emptied the queue are being delivered, late, until @now: that
 * time, up to RL_LATE_MAX_NS, is not idle time. The bucket stays at the
 * last grant's instant, and the next request to arrive gets the tokens of
 * that time (rl_sync_arrival()). Called by the dispatch that granted them,
 * and again by a request woken by its grant, when it is back.
 */
static void rl_credit_late(struct rl_limiter *lim, u64 now)
{
	if (!lim->nwaiters && !lim->params.unlimited &&
	    now > lim->bucket.stamp)
		lim->late = min(now - lim->bucket.stamp, RL_LATE_MAX_NS);
}

/* Bring the bucket up to @now after a dispatch that granted @n chunks. */
static void rl_settle(struct rl_limiter *lim, unsigned int n, u64 now)
{
	if (n)
		rl_credit_late(lim, now);
	rl_refill(lim, now - lim->late);
}

/*
 * Bring the bucket to @then, counting what it drops for want of room:
 * whole tokens, and the fraction of one at the instant it fills as one.
 */
static void rl_drop_late(struct rl_limiter *lim, u64 then)
{
	const struct rl_params *p = &lim->params;
	u64 *dropped = &lim->counters.dropped_late;
	u64 over;

	if (rl_bucket_ready(&lim->bucket, p, p->burst) < then) {
		over = rl_bucket_overflow(&lim->bucket, p, then);
		over = over == U64_MAX ? over : over + 1;
		*dropped = over > U64_MAX - *dropped ? U64_MAX : *dropped + over;
	}
	rl_refill(lim, then);
}

/*
 * Grant what the limits allow, in order; wake whoever is complete. Queued
 * requests are served on the schedule their tokens exist (rl_tokens_by()),
 * at most RL_DISPATCH_MAX chunks per call: the timer, started for @now,
 * goes on with the rest.
 */
static void rl_dispatch(struct rl_limiter *lim, u64 now)
{
	bool limited = !lim->params.unlimited, owed = false;
	u64 chunk, when = U64_MAX;
	unsigned int n = 0;
	struct rl_waiter *w;

	lockdep_assert_held(&lim->lock);
	/*
	 * Tokens are owed to queued requests for RL_LATE_MAX_NS at most: an
	 * overloaded host that cannot keep up drops the older ones, as an
	 * idle bucket would, rather than owe ever more.
	 */
	if (!lim->nwaiters)
		rl_refill(lim, now);
	else if (now > lim->bucket.stamp &&
		 now - lim->bucket.stamp > RL_LATE_MAX_NS)
		rl_drop_late(lim, now - RL_LATE_MAX_NS);
	lim->late = 0;
	while ((w = rl_sched_pick(lim, now, &chunk))) {
		/* Else a release will call us again. */
		if (!rl_permits_free(lim, rl_permits(lim, w)))
			break;
		if (limited && !rl_tokens_by(lim, chunk, now)) {
			when = min(rl_ready_time(lim, chunk),
				   rl_catchup_time(lim));
			break;
		}
		if (++n > RL_DISPATCH_MAX) {
			owed = true;
			when = now;
			break;
		}
		rl_grant_chunk(lim, w, chunk, now);
	}
	/* Unless tokens are left owed to the queue, it is at @now. */
	if (!owed)
		rl_settle(lim, n, now);
	if (!w && lim->nwaiters)
		when = rl_sched_cap_ready(lim);
	if (lim->poll_armed && rl_ready(lim))
		rl_wake_pollers(lim);
	else if (lim->poll_armed && !lim->nwaiters)
		when = min(when, rl_poll_time(lim));
	rl_arm_timer(lim, when);
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

/* rl_sync() for a request arriving: it takes the credit of a late grant. */
static inline void rl_sync_arrival(struct rl_limiter *lim, u64 now)
{
	rl_sync(lim, now);
	lim->late = 0;
}

static enum hrtimer_restart rl_timer_fn(struct hrtimer *timer)
{
	struct rl_limiter *lim = container_of(timer, struct rl_limiter, timer);
	unsigned long flags;

	spin_lock_irqsave(&lim->lock, flags);
	lim->timer_expiry = 0;
	rl_dispatch(lim, ktime_get_ns());
	spin_unlock_irqrestore(&lim->lock, flags);
	return HRTIMER_NORESTART;
}

/**
 * rl_limiter_create() - allocate a limiter with a full bucket
 * @p: its limits, validated by rl_params_check()
 *
 * Return: the limiter, with one reference for the caller, or NULL when out
 * of memory.
 */
struct rl_limiter *rl_limiter_create(const struct rl_params *p)
{
	struct rl_limiter *lim;

	lim = kzalloc(sizeof(*lim), GFP_KERNEL_ACCOUNT);
	if (!lim)
		return NULL;
	spin_lock_init(&lim->lock);
	rl_sched_init(lim);
	INIT_LIST_HEAD(&lim->clients);
	INIT_LIST_HEAD(&lim->node);
	kref_init(&lim->ref);
	lim->params = *p;
	rl_bucket_init(&lim->bucket, p, ktime_get_ns());
	lim->release.stamp = lim->bucket.stamp;
	hrtimer_setup(&lim->timer, rl_timer_fn, CLOCK_MONOTONIC,
		      HRTIMER_MODE_ABS);
	return lim;
}

/**
 * rl_limiter_get() - take a reference to a limiter
 * @lim: the limiter, of which the caller holds a reference or knows one held
 */
void rl_limiter_get(struct rl_limiter *lim)
{
	kref_get(&lim->ref);
}

/* The last reference is gone: no client, no sysfs directory. */
static void rl_limiter_free(struct kref *ref)
{
	struct rl_limiter *lim = container_of(ref, struct rl_limiter, ref);

	WARN_ON_ONCE(lim->nwaiters || !list_empty(&lim->clients));
	hrtimer_cancel(&lim->timer);
	kfree(lim);
}

/**
 * rl_limiter_put() - drop a reference to a limiter
 * @lim: the limiter; freed with the last reference
 *
 * Takes no lock; may sleep (it cancels the timer of the limiter it frees).
 */
void rl_limiter_put(struct rl_limiter *lim)
{
	kref_put(&lim->ref, rl_limiter_free);
}

/**
 * rl_limiter_attach() - make a client's pollers hear about the limiter
 * @lim:    the limiter
 * @client: the client, not attached to any limiter
 *
 * Pollers that slept before the client had a limiter are woken to look.
 */
void rl_limiter_attach(struct rl_limiter *lim, struct rl_client *client)
{
	spin_lock_irq(&lim->lock);
	list_add_tail(&client->node, &lim->clients);
	/* Read without the lock by sysfs. */
	WRITE_ONCE(lim->nclients, lim->nclients + 1);
	spin_unlock_irq(&lim->lock);
	wake_up_poll(&client->pollq, EPOLLIN | EPOLLRDNORM);
}

/**
 * rl_limiter_detach() - undo rl_limiter_attach()
 * @lim:    the limiter
 * @client: the client, attached to @lim, not polled and with no request
 *
 * The permits the client holds go back (the holder may have been killed).
 *
 * Return: the number of clients still attached.
 */
u64 rl_limiter_detach(struct rl_limiter *lim, struct rl_client *client)
{
	u64 left;

	spin_lock_irq(&lim->lock);
	list_del_init(&client->node);
	left = lim->nclients - 1;
	WRITE_ONCE(lim->nclients, left);
	if (client->held) {
		lim->held -= client->held;
		client->held = 0;
		rl_dispatch(lim, ktime_get_ns());
	}
	spin_unlock_irq(&lim->lock);
	return left;
}

/* Carry the buckets over to limits @p and serve the queue under them. */
static void rl_apply_params(struct rl_limiter *lim,
			    const struct rl_params *p, u64 now)
{
	struct rl_params old, new;
	struct rl_client *client;

	lockdep_assert_held(&lim->lock);
	list_for_each_entry(client, &lim->clients, node) {
		if (!client->cap)
			continue;
		rl_cap_params(lim, client, &old);
		new = old;
		new.period = p->period;
		new.burst = min(client->cap,
				RL_TOKENS_BURST_PERIOD_MAX / p->period);
		rl_bucket_reconfig(&client->cap_bucket, &old, &new, now);
	}
	/* The tokens owed to the queue are served under the old limits. */
	if (lim->nwaiters)
		rl_dispatch(lim, now);
	rl_sync(lim, now);
	rl_bucket_reconfig(&lim->bucket, &lim->params, p, now);
	lim->backlog = min(lim->backlog, p->backlog);
	lim->release = (struct rl_bucket) { .stamp = now };
	lim->params = *p;
	rl_dispatch(lim, now);
}

/**
 * rl_limiter_set_params() - change the limits, keeping the state
 * @lim: the limiter
 * @p:   new limits, validated by rl_params_check()
 *
 * Tokens, permits and queued requests are kept; the queue is served at
 * once under the new limits.
 */
void rl_limiter_set_params(struct rl_limiter *lim, const struct rl_params *p)
{
	spin_lock_irq(&lim->lock);
	rl_apply_params(lim, p, ktime_get_ns());
	spin_unlock_irq(&lim->lock);
}

/**
 * rl_limiter_get_params() - read the limits in force
 * @lim: the limiter
 * @p:   filled with its limits
 */
void rl_limiter_get_params(struct rl_limiter *lim, struct rl_params *p)
{
	spin_lock_irq(&lim->lock);
	*p = lim->params;
	spin_unlock_irq(&lim->lock);
}

/**
 * rl_limiter_set_param() - change one limit, keeping the state
 * @lim: the limiter
 * @t:   the limit, a row of rl_tunables
 * @val: its new value, with 0 meaning the default where @t has one
 *
 * Like rl_limiter_set_params(), for one field, atomically.
 *
 * Return: 0, or -EINVAL with nothing changed if the result is invalid.
 */
int rl_limiter_set_param(struct rl_limiter *lim, const struct rl_tunable *t,
			 u64 val)
{
	struct rl_params p;
	int ret;

	spin_lock_irq(&lim->lock);
	p = lim->params;
	ret = rl_tunable_set(t, &p, val) ?: rl_params_check(&p);
	if (!ret)
		rl_apply_params(lim, &p, ktime_get_ns());
	spin_unlock_irq(&lim->lock);
	return ret;
}

/* How long the tokens of an immediate grant of @n had been waiting. */
static u64 rl_lag(const struct rl_limiter *lim, u64 n)
{
	const struct rl_params *p = &lim->params;
	const struct rl_bucket *b = &lim->bucket;

	if (p->unlimited || !p->rate || b->tokens < n ||
	    (b->tokens == n && !b->units))
		return 0;
	/* At most burst * period + period - 1: no overflow. */
	return div64_u64((b->tokens - n) * p->period + b->units, p->rate);
}

/* Read the clock once per request, and only if something needs it. */
static u64 rl_clock(u64 *now)
{
	if (!*now)
		*now = ktime_get_ns();
	return *now;
}

/* Grant an acquire of @req at once if nobody waits and everything fits. */
static bool rl_grant_now(struct rl_limiter *lim, struct rl_client *client,
			 struct rl_acquire *req, u64 *now)
{
	u64 permits = lim->params.concurrency ? req->count : 0;

	/* The checks for caps only call out when the client has one. */
	if (lim->nwaiters || !rl_can_take(lim, req->count, permits) ||
	    (client->cap && (req->count > rl_chunk_max(lim, client) ||
			     !rl_cap_allows(lim, client, req->count,
					    rl_clock(now)))))
		return false;
	req->lag_ns = rl_lag(lim, req->count);
	req->ready_ns = lim->params.unlimited ? 0 : lim->bucket.stamp;
	client->refundable += rl_take(lim, client, req->count, permits);
	client->granted += req->count;
	lim->counters.immediate++;
	lim->counters.granted += req->count;
	return true;
}

/*
 * Grant @req at once, fail it, or queue @w for it (RL_QUEUED); without @w,
 * only say that it would be queued. Fills req->ready_ns on -EAGAIN and
 * -ETIMEDOUT. *@now is the time of the request, or 0 if the clock was not
 * read yet.
 */
static int rl_acquire_begin(struct rl_limiter *lim, struct rl_client *client,
			    struct rl_acquire *req, struct rl_waiter *w,
			    bool nonblock, u64 *now)
{
	const struct rl_params *p = &lim->params;
	u8 level = req->priority ? req->priority - 1 : client->level;

	lockdep_assert_held(&lim->lock);
	/* Never grantable: more permits than exist, or chunks when not sleeping. */
	if ((p->concurrency && req->count > p->concurrency) ||
	    (nonblock && req->count > rl_chunk_max(lim, client)))
		return -EINVAL;
	/* Unlimited, the bucket is not used: refilled when limits return. */
	if (!p->unlimited)
		rl_sync_arrival(lim, rl_clock(now));
	if (rl_grant_now(lim, client, req, now))
		return 0;
	req->ready_ns = rl_predict(lim, client, req->count, rl_clock(now));
	if (nonblock) {
		lim->counters.rejected++;
		return -EAGAIN;
	}
	if (req->deadline_ns <= *now ||
	    (req->flags & RL_ACQUIRE_PREDICT && req->ready_ns > req->deadline_ns)) {
		lim->counters.timeouts++;
		return -ETIMEDOUT;
	}
	if (!w)
		return RL_QUEUED;
	*w = (struct rl_waiter) {
		.flow = &client->flows[level], .client = client,
		.task = current, .want = req->count,
	};
	rl_sched_add(lim, w);
	return RL_QUEUED;
}

/* Sleep until @w is served, a signal comes or @deadline passes. */
static int rl_sleep(struct rl_waiter *w, u64 deadline)
{
	ktime_t expires = ns_to_ktime(deadline);
	int ret = 0;

	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (READ_ONCE(w->done))
			break;
		if (signal_pending(current)) {
			ret = -ERESTARTSYS;
			break;
		}
		if (deadline == RL_DEADLINE_NONE) {
			schedule();
		} else if (!schedule_hrtimeout_range(&expires,
						     current->timer_slack_ns,
						     HRTIMER_MODE_ABS)) {
			ret = -ETIMEDOUT;
			break;
		}
	}
	__set_current_state(TASK_RUNNING);
	return ret;
}

/* Give back what a failed request got: tokens, its cap, permits. */
static void rl_undo(struct rl_limiter *lim, struct rl_waiter *w, u64 now)
{
	struct rl_client *client = w->client;
	struct rl_params cp;

	rl_sync(lim, now);
	rl_bucket_give(&lim->bucket, &lim->params, w->taken);
	if (client->cap) {
		rl_cap_params(lim, client, &cp);
		rl_bucket_refill(&client->cap_bucket, &cp, now);
		rl_bucket_give(&client->cap_bucket, &cp, w->got);
	}
	lim->held -= w->held;
	client->held -= w->held;
}

/*
 * Will the signal that ended a sleep reach the caller? A fatal one, or one
 * with a handler, does. One that only stops the task (SIGSTOP and co.), is
 * ignored, or a freezer's fake signal does not: the call restarts and the
 * caller never knows. Called without the limiter lock.
 */
static bool rl_signal_seen(void)
{
	struct task_struct *t = current;
	struct sighand_struct *sh;
	__sighandler_t handler;
	bool seen = false;
	sigset_t pending;
	int sig;

	if (fatal_signal_pending(t))
		return true;
	/* A task's own sighand changes only in its own exec. */
	sh = rcu_dereference_protected(t->sighand, true);
	spin_lock_irq(&sh->siglock);
	sigorsets(&pending, &t->pending.signal,
		  &t->signal->shared_pending.signal);
	for (sig = 1; sig <= _NSIG && !seen; sig++) {
		if (!sigismember(&pending, sig) || sigismember(&t->blocked, sig))
			continue;
		handler = sh->action[sig - 1].sa.sa_handler;
		seen = handler != SIG_DFL && handler != SIG_IGN;
	}
	spin_unlock_irq(&sh->siglock);
	return seen;
}

/*
 * Account for a request that slept. A request served while a signal or
 * the deadline arrived keeps its tokens; any other gives back the chunks
 * it got and leaves the queue. A signal the caller will not see (@seen
 * false) restarts the call, which counts as a request again, not as an
 * interruption.
 */
static int rl_acquire_end(struct rl_limiter *lim, struct rl_acquire *req,
			  struct rl_waiter *w, int ret, bool seen, u64 start)
{
	struct rl_counters *c = &lim->counters;
	u64 now = ktime_get_ns();

	lockdep_assert_held(&lim->lock);
	if (w->done) {
		rl_credit_late(lim, now);
		req->wait_ns = now - start;
		req->ready_ns = w->at;
		c->waited++;
		c->granted += req->count;
		c->wait_ns_total += req->wait_ns;
		c->wait_ns_max = max(c->wait_ns_max, req->wait_ns);
		c->hist[fls64(req->wait_ns)]++;
		w->client->granted += req->count;
		w->client->refundable += w->taken;
		return 0;
	}
	rl_sched_del(lim, w);
	rl_undo(lim, w, now);
	if (ret == -ETIMEDOUT) {
		c->timeouts++;
		req->ready_ns = rl_predict(lim, w->client, req->count, now);
	} else if (seen) {
		c->interrupted++;
	} else {
		c->requests--;
	}
	/* Leaving the queue, or what came back, may let others go. */
	rl_dispatch(lim, now);
	return ret;
}

/* A request that has to sleep: queue it, sleep, account for it. */
static noinline int rl_acquire_slow(struct rl_limiter *lim,
				    struct rl_client *client,
				    struct rl_acquire *req, u64 start)
{
	struct rl_waiter w;
	bool seen;
	int ret;

	/* What changed since the lock was dropped decides again. */
	spin_lock_irq(&lim->lock);
	ret = rl_acquire_begin(lim, client, req, &w, false, &start);
	if (ret == RL_QUEUED)
		rl_dispatch(lim, start);
	spin_unlock_irq(&lim->lock);
	if (ret != RL_QUEUED)
		return ret;

	ret = rl_sleep(&w, req->deadline_ns);
	seen = ret == -ERESTARTSYS && rl_signal_seen();

	/* Taking the lock also waits for a waker still using @w. */
	spin_lock_irq(&lim->lock);
	ret = rl_acquire_end(lim, req, &w, ret, seen, start);
	spin_unlock_irq(&lim->lock);
	return ret;
}

/**
 * rl_limiter_acquire() - take tokens, sleeping for them if needed
 * @lim:      the limiter
 * @client:   the client asking, attached to @lim
 * @req:      validated request; wait_ns and ready_ns are filled in
 * @nonblock: fail with -EAGAIN instead of sleeping
 *
 * The immediate grant is the hot path: it keeps no sleeping state on the
 * stack and takes the lock once.
 *
 * Return: 0 when granted; -EAGAIN, -ETIMEDOUT, -ERESTARTSYS or -EINVAL
 * with nothing consumed.
 */
int rl_limiter_acquire(struct rl_limiter *lim, struct rl_client *client,
		       struct rl_acquire *req, bool nonblock)
{
	u64 now = 0;
	int ret;

	/*
	 * An unlimited limiter grants without looking at the clock. Read it
	 * here, outside the lock, when the limits will need it; this peek is
	 * only a hint: rl_clock() reads it under the lock if they changed.
	 */
	if (!READ_ONCE(lim->params.unlimited) || READ_ONCE(client->cap))
		now = ktime_get_ns();
	spin_lock_irq(&lim->lock);
	ret = rl_acquire_begin(lim, client, req, NULL, nonblock, &now);
	if (ret != -EINVAL)
		lim->counters.requests++;
	spin_unlock_irq(&lim->lock);
	if (ret != RL_QUEUED)
		return ret;
	return rl_acquire_slow(lim, client, req, now);
}

/**
 * rl_limiter_get_stats() - read the statistics
 * @lim: the limiter
 * @st:  its counter fields are filled in; the rest is left alone
 */
void rl_limiter_get_stats(struct rl_limiter *lim, struct rl_stats *st)
{
	struct rl_counters c;

	spin_lock_irq(&lim->lock);
	rl_sync(lim, ktime_get_ns());
	c = lim->counters;
	st->waiters = lim->nwaiters;
	st->available = lim->bucket.tokens;
	st->held = lim->held;
	st->clients = lim->nclients;
	st->backlog = lim->backlog;
	spin_unlock_irq(&lim->lock);

	st->granted = c.granted;
	st->requests = c.requests;
	st->immediate = c.immediate;
	st->waited = c.waited;
	st->wait_ns_total = c.wait_ns_total;
	st->wait_ns_max = c.wait_ns_max;
	st->timeouts = c.timeouts;
	st->interrupted = c.interrupted;
	st->rejected = c.rejected;
	st->refunded = c.refunded;
}

/* Start the timer for @when unless it is started for earlier. */
static void rl_arm_timer_before(struct rl_limiter *lim, u64 when)
{
	if (!lim->timer_expiry || when < lim->timer_expiry)
		rl_arm_timer(lim, when);
}

/**
 * rl_limiter_poll() - readiness of a limiter for poll()
 * @lim:    the limiter
 * @client: the polling client
 *
 * The caller is already on its client's poll queue, and whatever makes
 * the limiter ready wakes that queue after changing the state under the
 * lock we look under: a wake-up cannot fall between the check and the
 * sleep.
 *
 * Return: EPOLLIN | EPOLLRDNORM when an acquire of one token by @client
 * would be granted at once; otherwise the timer is started to wake
 * pollers then.
 */
__poll_t rl_limiter_poll(struct rl_limiter *lim, struct rl_client *client)
{
	u64 now = ktime_get_ns();
	struct rl_params cp;
	__poll_t mask = 0;

	spin_lock_irq(&lim->lock);
	rl_sync(lim, now);
	if (!rl_ready(lim)) {
		if (!lim->poll_armed) {
			lim->poll_armed = true;
			/* Starts the timer for when a token is there. */
			rl_dispatch(lim, now);
		}
	} else if (!rl_cap_allows(lim, client, 1, now)) {
		/* Only this client's cap is in the way: wake it then. */
		lim->poll_armed = true;
		rl_cap_params(lim, client, &cp);
		rl_arm_timer_before(lim, min_t(u64, KTIME_MAX,
					       rl_bucket_ready(&client->cap_bucket,
							       &cp, 1)));
	} else {
		mask = EPOLLIN | EPOLLRDNORM;
	}
	spin_unlock_irq(&lim->lock);
	return mask;
}

/**
 * rl_limiter_show() - describe a limiter in /proc/<pid>/fdinfo
 * @lim: the limiter
 * @m:   the fdinfo file
 */
void rl_limiter_show(struct rl_limiter *lim, struct seq_file *m)
{
	struct rl_params p;
	u64 tokens, waiters, granted, held, dropped;
	u32 flags;

	spin_lock_irq(&lim->lock);
	rl_sync(lim, ktime_get_ns());
	p = lim->params;
	flags = p.unlimited ? RL_CONFIG_UNLIMITED : 0;
	tokens = lim->bucket.tokens;
	waiters = lim->nwaiters;
	granted = lim->counters.granted;
	held = lim->held;
	dropped = lim->counters.dropped_late;
	spin_unlock_irq(&lim->lock);

	seq_printf(m, "rl-rate:\t%llu\n", p.rate);
	seq_printf(m, "rl-period-ns:\t%llu\n", p.period);
	seq_printf(m, "rl-burst:\t%llu\n", p.burst);
	seq_printf(m, "rl-flags:\t0x%x\n", flags);
	seq_printf(m, "rl-available:\t%llu\n", tokens);
	seq_printf(m, "rl-waiters:\t%llu\n", waiters);
	seq_printf(m, "rl-granted:\t%llu\n", granted);
	seq_printf(m, "rl-concurrency:\t%llu\n", p.concurrency);
	seq_printf(m, "rl-held:\t%llu\n", held);
	seq_printf(m, "rl-dropped-late:\t%llu\n", dropped);
}

/**
 * rl_limiter_show_clients() - list the clients for sysfs
 * @lim: the limiter
 * @buf: a sysfs page
 *
 * One line per client: "PID COMM GRANTED HELD PRIORITY WEIGHT CAP"; the
 * list stops at a full page.
 *
 * Return: the length written.
 */
int rl_limiter_show_clients(struct rl_limiter *lim, char *buf)
{
	struct rl_client *client;
	int len = 0;

	spin_lock_irq(&lim->lock);
	list_for_each_entry(client, &lim->clients, node)
		len += sysfs_emit_at(buf, len, "%d %s %llu %llu %u %u %llu\n",
				     client->tgid, client->comm,
				     client->granted, client->held,
				     client->level + 1, client->weight,
				     client->cap);
	spin_unlock_irq(&lim->lock);
	return len;
}

/**
 * rl_limiter_show_histogram() - the wait histogram for sysfs
 * @lim: the limiter
 * @buf: a sysfs page
 *
 * One line per non-empty bucket: "FLOOR_NS COUNT", where the bucket of a
 * wait w holds the waits of fls64(w): 0, then 2^(k-1) .. 2^k - 1 ns.
 *
 * Return: the length written.
 */
int rl_limiter_show_histogram(struct rl_limiter *lim, char *buf)
{
	u64 hist[RL_HIST_BUCKETS];
	int i, len = 0;

	spin_lock_irq(&lim->lock);
	memcpy(hist, lim->counters.hist, sizeof(hist));
	spin_unlock_irq(&lim->lock);
	for (i = 0; i < RL_HIST_BUCKETS; i++)
		if (hist[i])
			len += sysfs_emit_at(buf, len, "%llu %llu\n",
					     i ? 1ULL << (i - 1) : 0, hist[i]);
	return len;
}

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

	spin_lock_irq(&lim->lock);
	if (count <= client->held) {
		client->held -= count;
		lim->held -= count;
		rl_dispatch(lim, ktime_get_ns());
		ret = 0;
	}
	spin_unlock_irq(&lim->lock);
	return ret;
}

/**
 * rl_limiter_refund() - give back unused tokens
 * @lim:    the limiter
 * @client: the client that acquired them
 * @count:  tokens, at most what @client took and did not refund yet
 *
 * The bucket still never holds more than the burst.
 *
 * Return: 0, or -EINVAL if @client took fewer.
 */
int rl_limiter_refund(struct rl_limiter *lim, struct rl_client *client,
		      u64 count)
{
	u64 now = ktime_get_ns();
	int ret = -EINVAL;

	spin_lock_irq(&lim->lock);
	if (count <= client->refundable) {
		client->refundable -= count;
		lim->counters.refunded += count;
		rl_sync(lim, now);
		rl_bucket_give(&lim->bucket, &lim->params, count);
		rl_dispatch(lim, now);
		ret = 0;
	}
	spin_unlock_irq(&lim->lock);
	return ret;
}

/**
 * rl_limiter_set_client() - set a client's priority, weight and cap
 * @lim:    the limiter
 * @client: a client of @lim
 * @cc:     validated settings, 0 for the defaults
 *
 * A new cap starts with a full bucket of its own. Queued requests keep
 * their place.
 */
void rl_limiter_set_client(struct rl_limiter *lim, struct rl_client *client,
			   const struct rl_client_config *cc)
{
	u64 now = ktime_get_ns();
	struct rl_params cp;

	spin_lock_irq(&lim->lock);
	client->level = (cc->priority ?: RL_PRIO_MID) - 1;
	client->weight = cc->weight ?: 1;
	if (cc->cap != client->cap) {
		client->cap = cc->cap;
		rl_cap_params(lim, client, &cp);
		rl_bucket_init(&client->cap_bucket, &cp, now);
	}
	rl_dispatch(lim, now);
	spin_unlock_irq(&lim->lock);
}

/**
 * rl_limiter_get_client() - read a client's settings and counts
 * @lim:    the limiter
 * @client: a client of @lim
 * @cc:     its priority, weight, cap, held and granted are filled in
 */
void rl_limiter_get_client(struct rl_limiter *lim, struct rl_client *client,
			   struct rl_client_config *cc)
{
	spin_lock_irq(&lim->lock);
	cc->priority = client->level + 1;
	cc->weight = client->weight;
	cc->cap = client->cap;
	cc->held = client->held;
	cc->granted = client->granted;
	spin_unlock_irq(&lim->lock);
}
