// SPDX-License-Identifier: GPL-2.0-only
/*
 * Taking tokens from a limiter and every level above it (giving them
 * back: release.c). A limiter without a parent is a tree of one: the
 * same code grants at it, with no level above.
 *
 * An ACQUIRE takes the limiter's lock once. Under it, rl_acquire_now()
 * validates the request, brings the bucket up to date and grants it if
 * nobody waits and everything fits: the hot path, which keeps no sleeping
 * state on the stack. Anything else goes to rl_acquire_slow(), entered with
 * the lock still held, so the request is refilled, predicted and checked
 * once: it fails the request, or queues it, sleeps and accounts for it.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/bitops.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/spinlock.h>

#include "limiter.h"
#include "ratelimit_trace.h"

/* rl_acquire_now() could not grant the request: it must wait or fail. */
#define RL_MUST_WAIT	1

/* Read the clock once per request, and only if something needs it. */
static u64 rl_clock(u64 *now)
{
	if (!*now)
		*now = ktime_get_ns();
	return *now;
}

/* Could @n tokens and @permits permits be taken now? */
static bool rl_can_take(const struct rl_limiter *lim, u64 n, u64 permits)
{
	const struct rl_params *p = &lim->params;

	if (!p->unlimited && lim->bucket.tokens < n)
		return false;
	return rl_permits_free(lim, permits);
}

/* rl_sync() for a request arriving: it takes the credit of a late grant. */
static inline void rl_sync_arrival(struct rl_limiter *lim, u64 now)
{
	rl_sync(lim, now);
	lim->late = 0;
}

/*
 * May a request at a child of @x take @n tokens from @x now: none queued
 * at @x (its own requests go before its children's), the tokens and the
 * permits there, brought up to *@now?
 */
static bool rl_ancestor_allows(struct rl_limiter *x, u64 n, u64 *now)
{
	if (x->nwaiters)
		return false;
	if (!x->params.unlimited)
		rl_sync(x, rl_clock(now));
	return rl_can_take(x, n, n);
}

/*
 * Take @n tokens, and @permits permits, at every level above @lim, count
 * them as granted there, and charge the tags of the path.
 */
static void rl_grant_above(struct rl_limiter *lim, u64 n, u64 permits)
{
	struct rl_limiter *x;

	for (x = lim->h.parent; x; x = x->h.parent) {
		x->held += permits;
		if (!x->params.unlimited)
			rl_bucket_take(&x->bucket, n);
		x->counters.granted += n;
	}
	rl_hier_charge(lim, n);
}

/*
 * Grant an acquire of @req at once if everything fits at every level of
 * its tree, and nobody that the order serves first waits: nobody queued
 * at a level, and at each ancestor no sibling of the path with a smaller
 * tag (rl_hier_turn()). A limiter alone checks only itself.
 */
static __always_inline bool rl_grant_now(struct rl_limiter *lim,
					 struct rl_client *client,
					 struct rl_acquire *req, u64 *now)
{
	u64 n = req->count, conc = lim->params.concurrency;
	struct rl_limiter *x;

	/* The checks for caps only call out when the client has one. */
	if (lim->nwaiters || !rl_can_take(lim, n, n) ||
	    (client->cap && (n > rl_chunk_max(lim, client) ||
			     !rl_cap_allows(lim, client, n, rl_clock(now)))))
		return false;
	for (x = lim; x->h.parent; x = x->h.parent) {
		if (!rl_hier_turn(x) || !rl_ancestor_allows(x->h.parent, n, now))
			return false;
		conc |= x->h.parent->params.concurrency;
	}
	req->lag_ns = rl_lag(lim, n);
	req->ready_ns = lim->params.unlimited ? 0 : lim->bucket.stamp;
	client->refundable += rl_take(lim, client, n, conc ? n : 0);
	client->granted += n;
	lim->counters.immediate++;
	lim->counters.granted += n;
	if (lim->h.parent)
		rl_grant_above(lim, n, conc ? n : 0);
	trace_ratelimit_grant(lim, n, 0, req->lag_ns);
	return true;
}

/*
 * More permits than a level of the path has, or, when not sleeping, more
 * tokens than one chunk may hold (the client's cap, every level's burst)?
 */
static __always_inline bool rl_never_grantable(struct rl_limiter *lim,
					       struct rl_client *client,
					       const struct rl_acquire *req,
					       bool nonblock)
{
	u64 max = nonblock ? rl_chunk_max(lim, client) : U64_MAX;
	const struct rl_limiter *x;

	for (x = lim; x; x = x->h.parent) {
		if (x->params.concurrency && req->count > x->params.concurrency)
			return true;
		if (nonblock && x != lim && !x->params.unlimited)
			max = min(max, x->params.burst);
	}
	return req->count > max;
}

/*
 * Validate @req, bring the bucket up to *@now (0 if the clock was not read
 * yet) and grant the request at once if it can be. Returns 0 when granted,
 * -EINVAL when it never can be, RL_MUST_WAIT otherwise. Inline, with what
 * it calls: under TCG every call and return of the immediate grant showed
 * in its cost (Documentation/performance.md, "The floor").
 */
static __always_inline int rl_acquire_now(struct rl_limiter *lim,
					  struct rl_client *client,
					  struct rl_acquire *req, bool nonblock,
					  u64 *now)
{
	const struct rl_params *p = &lim->params;

	lockdep_assert_held(lim->tlock);
	if (rl_never_grantable(lim, client, req, nonblock))
		return -EINVAL;
	lim->counters.requests++;
	lim->counters.asked += req->count;
	/* Unlimited, the bucket is not used: refilled when limits return. */
	if (!p->unlimited)
		rl_sync_arrival(lim, rl_clock(now));
	if (rl_grant_now(lim, client, req, now))
		return 0;
	return RL_MUST_WAIT;
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

/*
 * Give back what a failed request got: its cap, and at every level of
 * its path the permits and the tokens (those its own limiter's bucket
 * gave, and the chunks at each limited ancestor).
 */
static void rl_undo(struct rl_limiter *lim, struct rl_waiter *w, u64 now)
{
	struct rl_client *client = w->client;
	struct rl_limiter *x;
	struct rl_params cp;
	u64 n;

	if (client->cap) {
		rl_cap_params(lim, client, &cp);
		rl_bucket_refill(&client->cap_bucket, &cp, now);
		rl_bucket_give(&client->cap_bucket, &cp, w->got);
		/* Its other requests may fit under the cap now. */
		rl_sched_unpark_client(lim, client);
	}
	client->held -= w->held;
	rl_path_release(lim, w->held);
	for (x = lim; x; x = x->h.parent) {
		n = x == lim ? w->taken : w->got;
		if (x->params.unlimited || !n)
			continue;
		rl_sync(x, now);
		rl_bucket_give(&x->bucket, &x->params, n);
	}
}

/*
 * When a request of @n tokens at @lim, queued behind the others, would be
 * granted: when its own limiter (rl_predict()) and every ancestor allow
 * it, behind the requests queued there, and behind what a sibling that
 * the order serves first takes of what is there. U64_MAX if never or too
 * far.
 */
static u64 rl_path_predict(struct rl_limiter *lim,
			   const struct rl_client *client, u64 n, u64 now)
{
	u64 when = rl_predict(lim, client, n, now), need;
	struct rl_limiter *x;

	for (x = lim; x->h.parent && when != U64_MAX; x = x->h.parent) {
		if (x->h.parent->params.unlimited)
			continue;
		need = x->h.parent->queued + n;
		if (!rl_hier_turn(x))
			need += x->h.parent->bucket.tokens;
		if (x->h.parent->queued_hi || need < n)
			return U64_MAX;
		when = max(when, rl_ready_time(x->h.parent, need));
	}
	return when;
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
	struct rl_limiter *x;

	lockdep_assert_held(lim->tlock);
	if (w->done) {
		rl_credit_late(lim, now);
		req->wait_ns = now - start;
		req->ready_ns = w->at;
		c->waited++;
		for (x = lim; x; x = x->h.parent)
			x->counters.granted += req->count;
		c->wait_ns_total += req->wait_ns;
		c->wait_ns_max = max(c->wait_ns_max, req->wait_ns);
		rl_hist_record(lim, req->wait_ns);
		w->client->granted += req->count;
		w->client->refundable += w->taken;
		trace_ratelimit_grant(lim, req->count, req->wait_ns, 0);
		return 0;
	}
	rl_sched_del(lim, w);
	rl_undo(lim, w, now);
	if (ret == -ETIMEDOUT) {
		c->timeouts++;
		c->refused += req->count;
		trace_ratelimit_timeout(lim, req->count, now - start);
		req->ready_ns = rl_path_predict(lim, w->client, req->count,
						now);
	} else if (seen) {
		c->interrupted++;
		trace_ratelimit_interrupt(lim, req->count, now - start);
	} else {
		c->requests--;
		c->asked -= req->count;
	}
	/* Leaving the queue, or what came back, may let others go. */
	rl_dispatch(lim, now);
	return ret;
}

/*
 * Fail a request that cannot be granted now and may not wait: -EAGAIN,
 * -ETIMEDOUT, with req->ready_ns the predicted grant time. Returns 0 if
 * it may wait.
 */
static int rl_acquire_refuse(struct rl_limiter *lim, struct rl_client *client,
			     struct rl_acquire *req, bool nonblock, u64 start)
{
	req->ready_ns = rl_path_predict(lim, client, req->count, start);
	if (nonblock) {
		lim->counters.rejected++;
		lim->counters.refused += req->count;
		return -EAGAIN;
	}
	if (req->deadline_ns <= start ||
	    (req->flags & RL_ACQUIRE_PREDICT && req->ready_ns > req->deadline_ns)) {
		lim->counters.timeouts++;
		lim->counters.refused += req->count;
		trace_ratelimit_timeout(lim, req->count, 0);
		return -ETIMEDOUT;
	}
	return 0;
}

/*
 * Queue @w for @req of @client, on behalf of @task, or of io_uring (@task
 * NULL, @served called when it is served).
 */
static void rl_acquire_queue(struct rl_limiter *lim, struct rl_client *client,
			     struct rl_acquire *req, struct rl_waiter *w,
			     struct task_struct *task,
			     void (*served)(struct rl_waiter *w), u64 start)
{
	u8 level = req->priority ? req->priority - 1 : client->level;

	*w = (struct rl_waiter) {
		.flow = &client->flows[level], .client = client,
		.task = task, .served = served, .want = req->count,
	};
	rl_sched_add(lim, w);
	rl_dispatch(lim, start);
}

/*
 * A request rl_acquire_now() could not grant, at time @start: fail it
 * (-EAGAIN, -ETIMEDOUT, with req->ready_ns the predicted grant time), or
 * queue it, sleep and account for it. Entered and left with the lock held;
 * drops it to sleep.
 */
static noinline int rl_acquire_slow(struct rl_limiter *lim,
				    struct rl_client *client,
				    struct rl_acquire *req, bool nonblock,
				    u64 start)
	__must_hold(lim->tlock)
{
	struct rl_waiter w;
	bool seen;
	int ret;

	ret = rl_acquire_refuse(lim, client, req, nonblock, start);
	if (ret)
		return ret;
	rl_acquire_queue(lim, client, req, &w, current, NULL, start);
	rl_unlock_irq(lim);

	rl_limiter_hist_alloc(lim);
	ret = rl_sleep(&w, req->deadline_ns);
	seen = ret == -ERESTARTSYS && rl_signal_seen();

	/* Taking the lock also waits for a waker still using @w. */
	rl_lock_irq(lim);
	return rl_acquire_end(lim, req, &w, ret, seen, start);
}

/*
 * Trace a request arriving. An unlimited limiter grants without looking
 * at the clock: returns the time, read here outside the lock when the
 * limits will need it, or 0. This peek is only a hint: rl_clock() reads it
 * under the lock if they changed.
 */
static u64 rl_acquire_start(struct rl_limiter *lim, struct rl_client *client,
			    const struct rl_acquire *req)
{
	trace_ratelimit_acquire(lim, req->count,
				req->priority ? req->priority - 1 :
						READ_ONCE(client->level),
				req->flags);
	if (!READ_ONCE(lim->params.unlimited) || READ_ONCE(client->cap))
		return ktime_get_ns();
	return 0;
}

/**
 * rl_limiter_acquire() - take tokens, sleeping for them if needed
 * @lim:      the limiter
 * @client:   the client asking, attached to @lim
 * @req:      validated request; wait_ns and ready_ns are filled in
 * @nonblock: fail with -EAGAIN instead of sleeping
 *
 * The immediate grant is the hot path: it takes the lock once and calls
 * out of this file only for the clock, the lock (and for a client's cap).
 *
 * Return: 0 when granted; -EAGAIN, -ETIMEDOUT, -ERESTARTSYS or -EINVAL
 * with nothing consumed.
 */
int rl_limiter_acquire(struct rl_limiter *lim, struct rl_client *client,
		       struct rl_acquire *req, bool nonblock)
{
	u64 now = 0;
	int ret;

	now = rl_acquire_start(lim, client, req);
	rl_lock_irq(lim);
	ret = rl_acquire_now(lim, client, req, nonblock, &now);
	if (ret == RL_MUST_WAIT)
		ret = rl_acquire_slow(lim, client, req, nonblock,
				      rl_clock(&now));
	rl_unlock_irq(lim);
	return ret;
}

/**
 * rl_limiter_acquire_async() - take tokens, or queue a request for them
 * @lim:      the limiter
 * @client:   the client asking, attached to @lim
 * @req:      validated request; ready_ns and lag_ns are filled in
 * @nonblock: fail with -EAGAIN instead of queueing
 * @w:        the request's entry in the queue, owned by the caller
 * @served:   called with @w under the limiter lock when it is served
 * @start:    set to the time the request arrived, for
 *            rl_limiter_acquire_end()
 *
 * As rl_limiter_acquire(), but a request that must wait is queued on @w,
 * with no task: rl_dispatch() calls @served when it is served,
 * under the limiter lock. The caller ends it with rl_limiter_acquire_end()
 * once served, or to give up on it.
 *
 * Return: 0 when granted; RL_QUEUED when queued; -EAGAIN, -ETIMEDOUT or
 * -EINVAL with nothing consumed.
 */
int rl_limiter_acquire_async(struct rl_limiter *lim, struct rl_client *client,
			     struct rl_acquire *req, bool nonblock,
			     struct rl_waiter *w,
			     void (*served)(struct rl_waiter *w), u64 *start)
{
	u64 now;
	int ret;

	now = rl_acquire_start(lim, client, req);
	rl_lock_irq(lim);
	ret = rl_acquire_now(lim, client, req, nonblock, &now);
	if (ret == RL_MUST_WAIT) {
		*start = rl_clock(&now);
		ret = rl_acquire_refuse(lim, client, req, nonblock, *start);
		if (!ret) {
			rl_acquire_queue(lim, client, req, w, NULL, served,
					 *start);
			ret = RL_QUEUED;
		}
	}
	rl_unlock_irq(lim);
	/* Before the caller can end it: see rl_limiter_hist_alloc(). */
	if (ret == RL_QUEUED)
		rl_limiter_hist_alloc(lim);
	return ret;
}

/**
 * rl_limiter_acquire_end() - account for a request rl_limiter_acquire_async()
 *                            queued
 * @lim:   the limiter
 * @req:   the request; wait_ns and ready_ns are filled in
 * @w:     its entry, served or still queued
 * @why:   why it ends if it is not served yet: -ETIMEDOUT (its deadline
 *         passed) or -ECANCELED (counted as interrupted)
 * @start: the time it arrived
 *
 * A request served by now keeps its tokens, as a sleeping one woken at its
 * deadline does; any other leaves the queue and gives back what it got.
 *
 * Return: 0 when granted, else @why.
 */
int rl_limiter_acquire_end(struct rl_limiter *lim, struct rl_acquire *req,
			   struct rl_waiter *w, int why, u64 start)
{
	int ret;

	rl_lock_irq(lim);
	ret = rl_acquire_end(lim, req, w, why, true, start);
	rl_unlock_irq(lim);
	return ret;
}

/**
 * rl_limiter_cycle() - give back permits and take tokens, atomically
 * @lim:      the limiter
 * @client:   the client, attached to @lim
 * @release:  permits @client holds to give back first, or 0
 * @req:      validated request, as for rl_limiter_acquire()
 * @nonblock: fail with -EAGAIN instead of sleeping
 * @released: set once the permits are given back
 *
 * One hold of the lock does what an RL_IOC_RELEASE and an RL_IOC_ACQUIRE
 * would: the queue is served from what came back, then the request is
 * granted or queued behind it. Only when someone waits or polls does the
 * release dispatch, so that a cycle with nobody else around costs what an
 * acquire does.
 *
 * Return: as rl_limiter_acquire(); -EINVAL with nothing done when @client
 * holds fewer than @release permits or @req can never be granted.
 */
int rl_limiter_cycle(struct rl_limiter *lim, struct rl_client *client,
		     u64 release, struct rl_acquire *req, bool nonblock,
		     bool *released)
{
	u64 now = ktime_get_ns();
	int ret = -EINVAL;

	trace_ratelimit_acquire(lim, req->count,
				req->priority ? req->priority - 1 :
						READ_ONCE(client->level),
				req->flags);
	rl_lock_irq(lim);
	if (release > client->held ||
	    rl_never_grantable(lim, client, req, nonblock))
		goto out_unlock;
	if (release) {
		client->held -= release;
		rl_path_release(lim, release);
		*released = true;
		trace_ratelimit_release(lim, release, lim->held);
		/* Anyone queued in the tree may wait for these permits. */
		if (rl_hier_root(lim)->h.queued || !list_empty(&lim->pollers))
			rl_dispatch(lim, now);
	}
	ret = rl_acquire_now(lim, client, req, nonblock, &now);
	if (ret == RL_MUST_WAIT)
		ret = rl_acquire_slow(lim, client, req, nonblock, now);
out_unlock:
	rl_unlock_irq(lim);
	return ret;
}
