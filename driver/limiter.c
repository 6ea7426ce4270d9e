// SPDX-License-Identifier: GPL-2.0-only
/*
 * The limiter: a token bucket, the queue of requests sleeping for its tokens
 * and the hrtimer that serves them. See Documentation/driver.md.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/overflow.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "fast.h"
#include "keys.h"
#include "limiter.h"
#include "queue.h"
#include "ratelimit_trace.h"
#include "request.h"

/* Caches of their own: kmalloc() would round each up to 1 KiB, 512 bytes and 1 KiB. */
#define RL_HIST_SIZE	(RL_HIST_BUCKETS * sizeof(u64))
static struct kmem_cache *rl_limiter_cache;
static struct kmem_cache *rl_client_cache;
static struct kmem_cache *rl_hist_cache;

/* One dispatch of a tree (rl_dispatch()). */
struct rl_walk {
	struct rl_limiter *lim;		/* dispatched: its timer's time goes to @when */
	u64 now;
	u64 when;
	unsigned int budget;		/* grants, parks and unparks left */
	struct rl_limiter *leaf;	/* limiter of the request picked */
	u64 chunk;			/* tokens to grant it now */
	unsigned int own;		/* chunks granted to the root's own requests */
};

static inline void rl_path_release(struct rl_limiter *lim, u64 count)
{
	struct rl_limiter *x;

	for (x = lim; x; x = x->h.parent)
		x->held -= count;
}

/* Refill; tokens that do not fit go to the backlog, paid back at the catch-up pace. */
static void rl_refill_catchup(struct rl_limiter *lim, u64 now)
{
	const struct rl_params *p = &lim->params;
	struct rl_params rp;
	u64 over, move;

	over = rl_bucket_overflow(&lim->bucket, p, now);
	lim->backlog = over >= p->backlog - lim->backlog ? p->backlog : lim->backlog + over;
	rl_bucket_refill(&lim->bucket, p, now);
	if (!lim->backlog || lim->bucket.tokens >= p->burst) {
		/* Nothing to catch up on, or no room: the pace restarts. */
		lim->release = (struct rl_bucket) { .stamp = now };
		return;
	}
	rl_catchup_params(p, &rp);
	rl_bucket_refill(&lim->release, &rp, now);
	move = min3(lim->release.tokens, lim->backlog, p->burst - lim->bucket.tokens);
	lim->release.tokens -= move;
	lim->backlog -= move;
	lim->bucket.tokens += move;
	if (lim->bucket.tokens == p->burst)
		lim->bucket.units = 0;
}

/*
 * Refill the bucket; a fed limiter's backlog waits: its clock releases
 * nothing. With tokens reserved (fast.c), the burst is less what they may be.
 */
static inline void rl_refill(struct rl_limiter *lim, u64 now)
{
	const struct rl_params *p = &lim->params;

	if (unlikely(lim->fast_out))
		rl_fast_refill(lim, now);
	else if (p->catchup <= RL_TOKENS_CATCHUP_STRICT || !p->backlog || p->fed)
		rl_bucket_refill(&lim->bucket, p, now);
	else
		rl_refill_catchup(lim, now);
}

/* Bring @lim up to @now; with requests queued, the tokens are rl_dispatch()'s. */
static inline void rl_sync(struct rl_limiter *lim, u64 now)
{
	if (!lim->nwaiters)
		rl_refill(lim, now - lim->late);
}

/* Grants that emptied the queue, delivered late until @now: not idle time for the next arrival. */
static inline void rl_credit_late(struct rl_limiter *lim, u64 now)
{
	if (!lim->nwaiters && !lim->params.unlimited && now > lim->bucket.stamp)
		lim->late = min(now - lim->bucket.stamp, RL_LATE_MAX_NS);
}

static inline bool rl_permits_free(const struct rl_limiter *lim, u64 permits)
{
	const struct rl_params *p = &lim->params;

	return !p->concurrency ||
	       (permits <= p->concurrency && lim->held <= p->concurrency - permits);
}

/* Count a wait in the histogram the request allocated when queued. */
static inline void rl_hist_record(struct rl_limiter *lim, u64 wait_ns)
{
	u64 *hist = READ_ONCE(lim->hist);

	lockdep_assert_held(lim->tlock);
	if (likely(hist))
		hist[fls64(wait_ns)]++;
}

/* Give @lim its wait histogram: by a request just queued, unlocked, before its grant counts. */
static void rl_limiter_hist_alloc(struct rl_limiter *lim)
{
	u64 *hist;

	might_sleep();
	if (READ_ONCE(lim->hist))
		return;
	hist = kmem_cache_zalloc(rl_hist_cache, GFP_KERNEL_ACCOUNT);
	/* Another request may have been first; full barrier on success. */
	if (hist && cmpxchg(&lim->hist, NULL, hist))
		kmem_cache_free(rl_hist_cache, hist);
}

/* Take @n tokens and @permits for @client; returns the tokens taken. */
static inline u64 rl_take(struct rl_limiter *lim, struct rl_client *client, u64 n, u64 permits)
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

	if (p->unlimited || !p->rate || p->fed || b->tokens < n || (b->tokens == n && !b->units))
		return 0;
	/* At most burst * period + period - 1: no overflow. */
	return div64_u64((b->tokens - n) * p->period + b->units, p->rate);
}

/* When catching up brings the next token, ns; U64_MAX if it brings none. */
static u64 rl_catchup_time(const struct rl_limiter *lim)
{
	const struct rl_params *p = &lim->params;
	struct rl_params rp;
	u64 when;

	if (p->catchup <= RL_TOKENS_CATCHUP_STRICT || !lim->backlog ||
	    lim->bucket.tokens >= p->burst || p->fed)
		return U64_MAX;
	rl_catchup_params(p, &rp);
	when = rl_bucket_ready(&lim->release, &rp, 1);
	return when > KTIME_MAX ? U64_MAX : when;
}

/* When the bucket holds @n tokens, ns; U64_MAX if never or too far. */
static u64 rl_ready_time(const struct rl_limiter *lim, u64 n)
{
	u64 when = rl_bucket_ready(&lim->bucket, &lim->params, n);

	return when > KTIME_MAX ? U64_MAX : when;
}

/* Refill to @then, counting the tokens dropped (a fraction at the instant it fills as one). */
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

static void rl_arm_timer(struct rl_limiter *lim, u64 when)
{
	lockdep_assert_held(lim->tlock);
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
	hrtimer_start_range_ns(&lim->timer, ns_to_ktime(when), RL_TIMER_SLACK_NS, HRTIMER_MODE_ABS);
}

static void rl_arm_timer_before(struct rl_limiter *lim, u64 when)
{
	if (!lim->timer_expiry || when < lim->timer_expiry)
		rl_arm_timer(lim, when);
}

/* When a token is there for pollers, as rl_sync() shows it: @late after the bucket's. */
static u64 rl_poll_time(const struct rl_limiter *lim)
{
	u64 when;

	if (lim->params.unlimited || lim->bucket.tokens)
		return U64_MAX;
	when = min(rl_ready_time(lim, 1), rl_catchup_time(lim));
	return when > KTIME_MAX - lim->late ? U64_MAX : when + lim->late;
}

/* Pollers to wake: as many as could take a token now, 1 .. RL_WAKE_MAX. */
static unsigned int rl_poll_quota(const struct rl_limiter *lim)
{
	const struct rl_params *p = &lim->params;
	u64 n = p->unlimited ? RL_WAKE_MAX : lim->bucket.tokens;

	if (p->concurrency)
		n = min(n, p->concurrency - lim->held);
	return clamp_t(u64, n, 1, RL_WAKE_MAX);
}

/* Wake the first @quota listed pollers; false if some are left listed. */
static bool rl_wake_pollers(struct rl_limiter *lim, unsigned int quota)
{
	struct rl_client *client, *next;
	unsigned int n = 0;

	lockdep_assert_held(lim->tlock);
	list_for_each_entry_safe(client, next, &lim->pollers, poll_node) {
		if (n++ == quota)
			return false;
		list_del_init(&client->poll_node);
		wake_up_poll(&client->pollq, EPOLLIN | EPOLLRDNORM);
	}
	return true;
}

/*
 * Would one token at @lim be granted at once (rl_grant_now(), caps aside)? If not, *@when is
 * when to look again (U64_MAX: whatever changes @lim's own queue or permits dispatches it).
 */
static bool rl_path_ready(struct rl_limiter *lim, u64 now, u64 *when)
{
	const struct rl_params *p;
	struct rl_limiter *x;

	lockdep_assert_held(lim->tlock);
	for (x = lim; ; x = x->h.parent) {
		p = &x->params;
		rl_sync(x, now);
		if (x->nwaiters || (p->concurrency && x->held >= p->concurrency)) {
			*when = x == lim ? U64_MAX : now + RL_POLL_GRACE_NS;
			return false;
		}
		if (!p->unlimited && !x->bucket.tokens) {
			*when = rl_poll_time(x);
			return false;
		}
		if (!x->h.parent)
			return true;
		if (!rl_share_turn(x)) {
			*when = now + RL_POLL_GRACE_NS;
			return false;
		}
	}
}

/* Wake a poller per token if ready, the rest RL_POLL_GRACE_NS later; else bring @when to then. */
static u64 rl_serve_pollers(struct rl_limiter *lim, u64 now, u64 when)
{
	u64 next;

	if (list_empty(&lim->pollers))
		return when;
	if (rl_path_ready(lim, now, &next))
		return rl_wake_pollers(lim, rl_poll_quota(lim)) ?
		       when : min(when, now + RL_POLL_GRACE_NS);
	return min(when, next);
}

/* List @client among the pollers; returns whether it is the first. */
static bool rl_list_poller(struct rl_limiter *lim, struct rl_client *client)
{
	bool first = list_empty(&lim->pollers);

	if (list_empty(&client->poll_node))
		list_add_tail(&client->poll_node, &lim->pollers);
	return first;
}

/* Are @chunk tokens there by @now? Refill to the instant they exist: they are owed from then. */
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

/* Owe queued requests RL_LATE_MAX_NS of tokens at most: an overloaded host drops older ones. */
static void rl_owed_max(struct rl_limiter *x, u64 now)
{
	if (now > x->bucket.stamp && now - x->bucket.stamp > RL_LATE_MAX_NS)
		rl_drop_late(x, now - RL_LATE_MAX_NS);
}

/* The first level from @x up short of @chunk tokens or @permits, *@ready when it is not. */
static struct rl_limiter *rl_blocker(struct rl_limiter *x, u64 chunk, u64 permits, u64 now,
				     u64 *ready)
{
	for (; x; x = x->h.parent) {
		if (!rl_permits_free(x, permits)) {
			*ready = U64_MAX;
			return x;
		}
		if (x->params.unlimited)
			continue;
		rl_owed_max(x, now);
		if (!rl_tokens_by(x, chunk, now)) {
			*ready = min(rl_ready_time(x, chunk), rl_catchup_time(x));
			return x;
		}
	}
	return NULL;
}

/* Take @chunk tokens and @permits at every level above @x, counting @granted granted there. */
static void rl_take_above(struct rl_limiter *x, u64 chunk, u64 permits, u64 granted)
{
	for (x = x->h.parent; x; x = x->h.parent) {
		x->held += permits;
		if (!x->params.unlimited)
			rl_bucket_take(&x->bucket, chunk);
		x->counters.granted += granted;
	}
}

/* Does a level from @x (or NULL) up limit concurrency? Then grants take permits. */
static bool rl_path_concurrent(const struct rl_limiter *x)
{
	for (; x; x = x->h.parent)
		if (x->params.concurrency)
			return true;
	return false;
}

/* Most tokens a chunk at @x may take: each burst above, and half @x's under one (issue #29). */
static u64 rl_path_chunk(const struct rl_limiter *x)
{
	const struct rl_limiter *y;
	u64 max = U64_MAX;

	for (y = x->h.parent; y; y = y->h.parent)
		if (!y->params.unlimited)
			max = min(max, y->params.burst);
	if (max != U64_MAX && !x->params.unlimited)
		max = min(max, max_t(u64, x->params.burst / 2, 1));
	return max;
}

/* Start @x's timer for @t unless earlier; @hw's own limiter's is started at the end. */
static void rl_walk_arm(struct rl_walk *hw, struct rl_limiter *x, u64 t)
{
	if (t == U64_MAX)
		return;
	if (x == hw->lim)
		hw->when = min(hw->when, t);
	else
		rl_arm_timer_before(x, t);
}

/* The next request under @x: its own first, then by kid's tag, parking kids with none now. */
static struct rl_waiter *rl_walk_pick(struct rl_walk *hw, struct rl_limiter *x)
{
	struct rl_limiter *kid;
	struct rb_node *node;
	struct rl_waiter *w;

	if (x->nwaiters) {
		rl_queue_unpark_due(x, hw->now, &hw->budget);
		w = rl_queue_pick(x, hw->now, &hw->chunk, &hw->budget);
		if (w) {
			hw->leaf = x;
			return w;
		}
		rl_walk_arm(hw, x, rl_queue_cap_ready(x));
	}
	rl_share_unpark_due(x, hw->now, &hw->budget);
	while (hw->budget && (node = rb_first_cached(&x->h.kids))) {
		kid = rb_entry(node, struct rl_limiter, h.knode);
		w = rl_walk_pick(hw, kid);
		if (w || !hw->budget)
			return w;
		hw->budget--;
		rl_share_park(kid, rl_share_next(kid));
		rl_walk_arm(hw, x, kid->h.ready);
	}
	return NULL;
}

/* Grant @hw's chunk to @w at every level; wake it if complete. */
static void rl_grant_chunk(struct rl_walk *hw, struct rl_waiter *w, u64 permits)
{
	struct rl_limiter *leaf = hw->leaf;

	w->held += permits;
	w->taken += rl_take(leaf, w->client, hw->chunk, permits);
	rl_take_above(leaf, hw->chunk, permits, 0);
	w->got += hw->chunk;
	w->at = leaf->params.unlimited ? hw->now : leaf->bucket.stamp;
	rl_share_charge(leaf, hw->chunk);
	rl_queue_served(leaf, w, hw->chunk);
	if (!leaf->h.parent)
		hw->own++;
	if (!w->want) {
		/* Pairs with set_current_state() in rl_sleep(). */
		WRITE_ONCE(w->done, true);
		if (likely(w->task))
			wake_up_process(w->task);
		else
			w->served(w);
	}
}

/* Serve what every level allows; false if out of budget, tokens left owed. */
static bool rl_serve(struct rl_walk *hw, struct rl_limiter *root)
{
	struct rl_limiter *x;
	struct rl_waiter *w;
	u64 permits, ready;

	while ((w = rl_walk_pick(hw, root))) {
		hw->chunk = min(hw->chunk, rl_path_chunk(hw->leaf));
		permits = !w->held && rl_path_concurrent(hw->leaf) ? w->want : 0;
		x = rl_blocker(hw->leaf, hw->chunk, permits, hw->now, &ready);
		if (x == root) {
			/* The tree waits for the root's timer, or a release. */
			rl_walk_arm(hw, root, ready);
			return true;
		}
		if (!hw->budget)
			return false;
		hw->budget--;
		if (!x) {
			rl_grant_chunk(hw, w, permits);
		} else {
			/* @x, below the root, waits until @ready (U64_MAX: a release). */
			rl_share_park(x, ready);
			rl_walk_arm(hw, x->h.parent, ready);
		}
	}
	return hw->budget;
}

/* Bring the root up to @now after a dispatch that granted @n of its own chunks. */
static void rl_settle(struct rl_limiter *root, unsigned int n, u64 now)
{
	if (n)
		rl_credit_late(root, now);
	rl_refill(root, now - root->late);
}

/**
 * rl_dispatch() - serve the queue of a limiter's tree, from its root, in order
 * @lim: the limiter, whose state changed; its timer is started for what comes next
 * @now: current time, ns
 *
 * Context: bounded, as the timer calls it with interrupts off: out of RL_DISPATCH_MAX, it
 * starts the timer for @now, the tokens still owed.
 */
void rl_dispatch(struct rl_limiter *lim, u64 now)
{
	struct rl_walk hw = { .lim = lim, .now = now, .when = U64_MAX, .budget = RL_DISPATCH_MAX };
	struct rl_limiter *root = lim;

	lockdep_assert_held(lim->tlock);
	for (; root->h.parent; root = root->h.parent)
		if (root->h.parked)
			rl_share_unpark(root);
	/* Tokens owed to the root's queue, for RL_LATE_MAX_NS at most. */
	if (!root->nwaiters)
		rl_refill(root, now);
	else
		rl_owed_max(root, now);
	root->late = 0;
	/* What is due at @lim goes back in line, lest its timer restart for the past. */
	if (lim->nwaiters)
		rl_queue_unpark_due(lim, now, &hw.budget);
	rl_share_unpark_due(lim, now, &hw.budget);
	if (rl_serve(&hw, root)) {
		rl_settle(root, hw.own, now);
		hw.when = min(hw.when, rl_share_next(lim));
	} else {
		hw.when = now;
	}
	rl_arm_timer(lim, rl_serve_pollers(lim, now, hw.when));
}

/* A timer started again and again for the past never leaves the irq: warn once, slow down. */
static void rl_timer_guard(struct rl_limiter *lim, u64 now)
{
	if (!lim->timer_expiry || lim->timer_expiry > now) {
		lim->timer_spins = 0;
		return;
	}
	if (lim->timer_spins < RL_TIMER_SPINS_MAX) {
		lim->timer_spins++;
		return;
	}
	WARN_ONCE(1, "ratelimit: timer of limiter '%s' started for the past %u times in a row\n",
		  lim->name, RL_TIMER_SPINS_MAX);
	rl_arm_timer(lim, now + RL_TIMER_BACKOFF_NS);
}

static enum hrtimer_restart rl_timer_fn(struct hrtimer *timer)
{
	struct rl_limiter *lim = container_of(timer, struct rl_limiter, timer);
	u64 now = ktime_get_ns(), expiry;
	unsigned long flags;

	flags = rl_lock_irqsave(lim);
	/* Not lim->timer_expiry: a cancel that found us running zeroed it. */
	expiry = ktime_to_ns(hrtimer_get_softexpires(timer));
	trace_ratelimit_timer(lim, now - min(now, expiry), lim->nwaiters);
	lim->timer_expiry = 0;
	rl_dispatch(lim, now);
	rl_timer_guard(lim, now);
	rl_unlock_irqrestore(lim, flags);
	return HRTIMER_NORESTART;
}

/**
 * rl_limiter_poll() - readiness of a limiter for poll()
 * @lim:    the limiter
 * @client: the polling client, already on its poll queue
 *
 * Not ready, @client is listed among the pollers under the lock that whatever makes it ready
 * takes to run rl_dispatch(), which wakes them: no wake-up is missed.
 *
 * Return: EPOLLIN | EPOLLRDNORM if one token would be granted at once, else 0.
 */
__poll_t rl_limiter_poll(struct rl_limiter *lim, struct rl_client *client)
{
	u64 now = ktime_get_ns(), when;
	struct rl_params cp;
	__poll_t mask = 0;

	rl_lock_irq(lim);
	if (!rl_path_ready(lim, now, &when)) {
		/* The first poller starts the timer for when a token is there. */
		if (rl_list_poller(lim, client))
			rl_dispatch(lim, now);
	} else if (!rl_cap_allows(lim, client, 1, now)) {
		/* Only this client's cap is in the way: wake it then. */
		rl_list_poller(lim, client);
		rl_cap_params(lim, client, &cp);
		rl_arm_timer_before(lim, min_t(u64, KTIME_MAX,
					       rl_bucket_ready(&client->cap_bucket, &cp, 1)));
	} else {
		mask = EPOLLIN | EPOLLRDNORM;
	}
	rl_unlock_irq(lim);
	return mask;
}

/* rl_acquire_now() could not grant the request: rl_acquire_slow() fails it or queues it. */
#define RL_MUST_WAIT	1

/* Read the clock once per request, and only if something needs it. */
static u64 rl_clock(u64 *now)
{
	if (!*now)
		*now = ktime_get_ns();
	return *now;
}

static bool rl_can_take(const struct rl_limiter *lim, u64 n, u64 permits)
{
	const struct rl_params *p = &lim->params;

	if (!p->unlimited && lim->bucket.tokens < n)
		return false;
	return rl_permits_free(lim, permits);
}

/* May a request at a child of @x take @n at @x now: none queued, tokens and permits there? */
static bool rl_ancestor_allows(struct rl_limiter *x, u64 n, u64 *now)
{
	if (x->nwaiters)
		return false;
	if (!x->params.unlimited)
		rl_sync(x, rl_clock(now));
	return rl_can_take(x, n, n);
}

/* Grant at once, all or nothing, if it fits at every level and nobody served first waits. */
static __always_inline bool rl_grant_now(struct rl_limiter *lim, struct rl_client *client,
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
		if (!rl_share_turn(x) || !rl_ancestor_allows(x->h.parent, n, now))
			return false;
		conc |= x->h.parent->params.concurrency;
	}
	req->lag_ns = rl_lag(lim, n);
	req->ready_ns = lim->params.unlimited ? 0 : lim->bucket.stamp;
	client->refundable += rl_take(lim, client, n, conc ? n : 0);
	client->granted += n;
	lim->counters.immediate++;
	lim->counters.granted += n;
	if (lim->h.parent) {
		rl_take_above(lim, n, conc ? n : 0, n);
		rl_share_charge(lim, n);
	}
	trace_ratelimit_grant(lim, n, 0, req->lag_ns);
	if (unlikely(READ_ONCE(client->fast)))
		rl_fast_topup(lim, client);
	return true;
}

/* Take back the tokens reserved in pages, then grant at once if they make it fit. */
static noinline bool rl_grant_reclaimed(struct rl_limiter *lim, struct rl_client *client,
					struct rl_acquire *req, u64 *now)
{
	rl_fast_reclaim(lim);
	return rl_grant_now(lim, client, req, now);
}

/* More permits than a level has, or nonblocking, more tokens than a chunk may hold? */
static __always_inline bool rl_never_grantable(struct rl_limiter *lim, struct rl_client *client,
					       const struct rl_acquire *req, bool nonblock)
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

/* Grant at once: 0, -EINVAL if never, else RL_MUST_WAIT. Inline: see performance.md. */
static __always_inline int rl_acquire_now(struct rl_limiter *lim, struct rl_client *client,
					  struct rl_acquire *req, bool nonblock, u64 *now)
{
	const struct rl_params *p = &lim->params;

	lockdep_assert_held(lim->tlock);
	if (rl_never_grantable(lim, client, req, nonblock))
		return -EINVAL;
	lim->counters.requests++;
	lim->counters.asked += req->count;
	/* Unlimited, the bucket is not used: refilled when limits return. */
	if (!p->unlimited) {
		rl_sync(lim, rl_clock(now));
		lim->late = 0;	/* an arrival takes the credit of a late grant */
	}
	if (rl_grant_now(lim, client, req, now))
		return 0;
	/* No request waits or fails while tokens are reserved. */
	if (unlikely(lim->fast_out) && rl_grant_reclaimed(lim, client, req, now))
		return 0;
	return RL_MUST_WAIT;
}

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
		} else if (!schedule_hrtimeout_range(&expires, current->timer_slack_ns,
						     HRTIMER_MODE_ABS)) {
			ret = -ETIMEDOUT;
			break;
		}
	}
	__set_current_state(TASK_RUNNING);
	return ret;
}

/* Give back what a failed request got: its cap, its permits and tokens at every level. */
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
		rl_queue_unpark_client(lim, client);
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

/* When @n tokens of @client would be granted, behind every level's queue; or U64_MAX. */
static u64 rl_path_predict(struct rl_limiter *lim, const struct rl_client *client, u64 n, u64 now)
{
	u64 sum, when = now, cap = rl_cap_ready(lim, client, n), need;
	struct rl_limiter *x;

	if (!lim->params.unlimited) {
		if (lim->queued_hi || check_add_overflow(lim->queued, n, &sum))
			return U64_MAX;
		when = rl_ready_time(lim, sum);
	}
	when = cap > KTIME_MAX ? U64_MAX : max3(when, cap, now);
	for (x = lim; x->h.parent && when != U64_MAX; x = x->h.parent) {
		if (x->h.parent->params.unlimited)
			continue;
		need = x->h.parent->queued + n;
		if (!rl_share_turn(x))
			need += x->h.parent->bucket.tokens;
		if (x->h.parent->queued_hi || need < n)
			return U64_MAX;
		when = max(when, rl_ready_time(x->h.parent, need));
	}
	return when;
}

/* Account for a request that slept; one whose signal is not @seen restarts, not interrupted. */
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
	rl_queue_del(lim, w);
	rl_undo(lim, w, now);
	if (ret == -ETIMEDOUT) {
		c->timeouts++;
		c->refused += req->count;
		trace_ratelimit_timeout(lim, req->count, now - start);
		req->ready_ns = rl_path_predict(lim, w->client, req->count, now);
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

/* Fail a request that may not wait: -EAGAIN, -ETIMEDOUT (ready_ns predicted); else 0. */
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

/* Queue @w for @req on behalf of @task, or of io_uring (@task NULL, @served called). */
static void rl_acquire_queue(struct rl_limiter *lim, struct rl_client *client,
			     struct rl_acquire *req, struct rl_waiter *w, struct task_struct *task,
			     void (*served)(struct rl_waiter *w), u64 start)
{
	u8 level = req->priority ? req->priority - 1 : client->level;

	*w = (struct rl_waiter) { .flow = rl_queue_flow(lim, client, level), .client = client,
				  .task = task, .served = served, .want = req->count };
	rl_queue_add(lim, w);
	rl_dispatch(lim, start);
}

/* Fail it, or queue it and sleep: entered and left locked, unlocks to sleep. */
static noinline int rl_acquire_slow(struct rl_limiter *lim, struct rl_client *client,
				    struct rl_acquire *req, bool nonblock, u64 start)
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

/* Trace an arrival; the time if the limits need it, or 0 (a hint: see rl_clock()). */
static __always_inline u64 rl_acquire_start(struct rl_limiter *lim, struct rl_client *client,
					    const struct rl_acquire *req)
{
	trace_ratelimit_acquire(lim, req->count,
				req->priority ? req->priority - 1 : READ_ONCE(client->level),
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
 * Return: 0 when granted; -EAGAIN, -ETIMEDOUT, -ERESTARTSYS or -EINVAL, nothing consumed.
 */
int rl_limiter_acquire(struct rl_limiter *lim, struct rl_client *client,
		       struct rl_acquire *req, bool nonblock)
{
	u64 now = rl_acquire_start(lim, client, req);
	int ret;

	rl_lock_irq(lim);
	ret = rl_acquire_now(lim, client, req, nonblock, &now);
	if (ret == RL_MUST_WAIT)
		ret = rl_acquire_slow(lim, client, req, nonblock, rl_clock(&now));
	rl_unlock_irq(lim);
	return ret;
}

/**
 * rl_limiter_acquire_async() - take tokens, or queue @w for rl_limiter_acquire_end()
 * @lim:      the limiter
 * @client:   the client asking, attached to @lim
 * @req:      validated request; ready_ns and lag_ns are filled in
 * @nonblock: fail with -EAGAIN instead of queueing
 * @w:        the request's entry in the queue, owned by the caller
 * @served:   called with @w under the limiter lock when it is served
 * @start:    set to the time the request arrived
 * Return: 0 when granted; RL_QUEUED; -EAGAIN, -ETIMEDOUT or -EINVAL, nothing consumed.
 */
int rl_limiter_acquire_async(struct rl_limiter *lim, struct rl_client *client,
			     struct rl_acquire *req, bool nonblock, struct rl_waiter *w,
			     void (*served)(struct rl_waiter *w), u64 *start)
{
	u64 now = rl_acquire_start(lim, client, req);
	int ret;

	rl_lock_irq(lim);
	ret = rl_acquire_now(lim, client, req, nonblock, &now);
	if (ret == RL_MUST_WAIT) {
		*start = rl_clock(&now);
		ret = rl_acquire_refuse(lim, client, req, nonblock, *start);
		if (!ret) {
			rl_acquire_queue(lim, client, req, w, NULL, served, *start);
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
 * rl_limiter_acquire_end() - end a request rl_limiter_acquire_async() queued
 * @lim:   the limiter
 * @req:   the request; wait_ns and ready_ns are filled in
 * @w:     its entry, served or still queued
 * @why:   if not served: -ETIMEDOUT, or -ECANCELED (counted as interrupted)
 * @start: the time it arrived
 * Return: 0 if served (it keeps its tokens), else @why (it gives them back).
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
 * rl_limiter_acquire_expire() - time out a request rl_limiter_acquire_async() queued
 * @lim:   the limiter, locked (rl_lock_irqsave()); @w is still in its queue
 * @req:   the request; ready_ns is filled in
 * @w:     its entry, leaving the queue with what it got so far
 * @start: the time it arrived
 *
 * For a deadline timer, which cannot wait for its caller to end the request: it leaves
 * the queue now, so that it holds up no one behind it.
 */
void rl_limiter_acquire_expire(struct rl_limiter *lim, struct rl_acquire *req,
			       struct rl_waiter *w, u64 start)
{
	rl_acquire_end(lim, req, w, -ETIMEDOUT, true, start);
}

/**
 * rl_limiter_acquire_drop() - cancel a request rl_limiter_acquire_async() queued
 * @lim:   the limiter
 * @req:   the request
 * @w:     its entry: still queued, or served and not yet ended
 * @start: the time it arrived
 *
 * Whether it was served or not, everything it got goes back (tokens at every level,
 * permits, its cap), and it counts as interrupted.
 */
void rl_limiter_acquire_drop(struct rl_limiter *lim, struct rl_acquire *req,
			     struct rl_waiter *w, u64 start)
{
	u64 now;

	rl_lock_irq(lim);
	if (!w->done) {
		rl_acquire_end(lim, req, w, -ECANCELED, true, start);
		goto out_unlock;
	}
	now = ktime_get_ns();
	/* Its permits are the client's since the grant: it may have released some. */
	w->held = min(w->held, w->client->held);
	rl_undo(lim, w, now);
	lim->counters.interrupted++;
	trace_ratelimit_interrupt(lim, req->count, now - start);
	rl_dispatch(lim, now);
out_unlock:
	rl_unlock_irq(lim);
}

/**
 * rl_limiter_cycle() - give back permits and take tokens, atomically
 * @lim:      the limiter
 * @client:   the client, attached to @lim
 * @release:  permits @client holds to give back first, or 0
 * @req:      validated request, as for rl_limiter_acquire()
 * @nonblock: fail with -EAGAIN instead of sleeping
 * @released: set once the permits are given back
 * Return: as rl_limiter_acquire(); -EINVAL with nothing done when @client holds fewer than
 * @release permits or @req can never be granted.
 */
int rl_limiter_cycle(struct rl_limiter *lim, struct rl_client *client, u64 release,
		     struct rl_acquire *req, bool nonblock, bool *released)
{
	u64 now = rl_acquire_start(lim, client, req) ?: ktime_get_ns();
	int ret = -EINVAL;

	rl_lock_irq(lim);
	if (release > client->held || rl_never_grantable(lim, client, req, nonblock))
		goto out_unlock;
	if (release) {
		client->held -= release;
		rl_path_release(lim, release);
		*released = true;
		trace_ratelimit_release(lim, release, lim->held);
		/* Anyone queued in the tree may wait for these permits. */
		if (rl_root_of(lim)->h.queued || !list_empty(&lim->pollers))
			rl_dispatch(lim, now);
	}
	ret = rl_acquire_now(lim, client, req, nonblock, &now);
	if (ret == RL_MUST_WAIT)
		ret = rl_acquire_slow(lim, client, req, nonblock, now);
out_unlock:
	rl_unlock_irq(lim);
	return ret;
}

/**
 * rl_limiter_release() - give back permits (RL_IOC_RELEASE)
 * @lim:    the limiter
 * @client: the client holding them
 * @count:  permits, at most what @client holds
 * Return: 0, or -EINVAL if @client holds fewer.
 */
int rl_limiter_release(struct rl_limiter *lim, struct rl_client *client, u64 count)
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
 * rl_limiter_refund() - give back unused tokens (RL_IOC_REFUND), at every level
 * @lim:    the limiter
 * @client: the client that acquired them
 * @count:  tokens, at most what @client took and did not refund yet
 * Return: 0, or -EINVAL if @client took fewer.
 */
int rl_limiter_refund(struct rl_limiter *lim, struct rl_client *client, u64 count)
{
	u64 now = ktime_get_ns();
	struct rl_limiter *x;
	int ret = -EINVAL;

	rl_lock_irq(lim);
	/* Room in the bucket for what comes back: none is reserved. */
	rl_fast_reclaim(lim);
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

/**
 * rl_limiter_init() - set up the caches of limiters, clients and histograms
 *
 * Return: 0, or -ENOMEM.
 */
int rl_limiter_init(void)
{
	rl_limiter_cache = KMEM_CACHE(rl_limiter, SLAB_ACCOUNT);
	if (!rl_limiter_cache)
		return -ENOMEM;
	rl_client_cache = KMEM_CACHE(rl_client, SLAB_ACCOUNT);
	if (!rl_client_cache)
		goto out_limiters;
	rl_hist_cache = kmem_cache_create("rl_hist", RL_HIST_SIZE, __alignof__(u64), SLAB_ACCOUNT,
					  NULL);
	if (!rl_hist_cache)
		goto out_clients;
	return 0;

out_clients:
	kmem_cache_destroy(rl_client_cache);
out_limiters:
	kmem_cache_destroy(rl_limiter_cache);
	return -ENOMEM;
}

/**
 * rl_limiter_exit() - undo rl_limiter_init(), every limiter and client freed
 */
void rl_limiter_exit(void)
{
	/* Limiters freed after a grace period (rl_limiter_free()) first. */
	rcu_barrier();
	kmem_cache_destroy(rl_hist_cache);
	kmem_cache_destroy(rl_client_cache);
	kmem_cache_destroy(rl_limiter_cache);
}

/**
 * rl_client_free() - free a client of rl_client_alloc()
 * @client: the client, detached
 */
void rl_client_free(struct rl_client *client)
{
	rl_client_fini(client);
	rl_fast_free(client);
	kmem_cache_free(rl_client_cache, client);
}

/**
 * rl_client_alloc() - allocate a client, for open()
 *
 * Return: the client, zeroed but for rl_client_init()'s, or NULL.
 */
struct rl_client *rl_client_alloc(void)
{
	struct rl_client *client = kmem_cache_zalloc(rl_client_cache, GFP_KERNEL_ACCOUNT);

	if (client && rl_client_init(client)) {
		rl_client_free(client);
		return NULL;
	}
	return client;
}

static u64 rl_subtree_clients(const struct rl_limiter *x, unsigned int depth)
{
	const struct rl_limiter *kid;
	u64 n = x->nclients;

	/* A tree has at most RL_HIER_DEPTH_MAX levels under its root. */
	if (depth > RL_HIER_DEPTH_MAX)
		return n;
	list_for_each_entry(kid, &x->h.children, h.sibling)
		n += rl_subtree_clients(kid, depth + 1);
	return n;
}

/*
 * Would new limits @p strand clients? While its concurrency is not 0 a limiter's grants are
 * permits, held until given back, so it may only go between 0 and non-zero while no client
 * but the caller's @self (1: an ioctl's fd, 0: sysfs) uses @lim or its subtree.
 */
static bool rl_conc_switch_busy(const struct rl_limiter *lim, const struct rl_params *p, u64 self)
{
	lockdep_assert_held(lim->tlock);
	if (!lim->params.concurrency == !p->concurrency)
		return false;
	return rl_subtree_clients(lim, 0) > self;
}

/* @lim's own bucket under @p, in O(1) for the lease's hrtimer: no dispatch, no walk. */
static void rl_apply_limits(struct rl_limiter *lim, const struct rl_params *p, u64 now)
{
	lockdep_assert_held(lim->tlock);
	rl_sync(lim, now);
	rl_fast_reclaim(lim);
	rl_bucket_reconfig(&lim->bucket, &lim->params, p, now);
	lim->backlog = min(lim->backlog, p->backlog);
	lim->release = (struct rl_bucket) { .stamp = now };
	lim->params = *p;
	if (lim->keys)
		rl_keys_set_params(lim->keys, p);
	/* limits of their own: no lease's fallback is to follow */
	if (lim->lease)
		lim->lease->ending = false;
	trace_ratelimit_reconfigure(lim);
}

/* Carry @lim's buckets over to @p, serve the queue. Walks the caps: never the grant path. */
static void rl_apply_params(struct rl_limiter *lim, const struct rl_params *p, u64 now)
{
	struct rl_params old, new;
	struct rl_client *client;

	lockdep_assert_held(lim->tlock);
	/* The caps' period and the chunks may change: look again. */
	rl_queue_unpark_all(lim);
	list_for_each_entry(client, &lim->clients, node) {
		if (!client->cap)
			continue;
		rl_cap_params(lim, client, &old);
		new = old;
		new.period = p->period;
		new.burst = min(client->cap, RL_TOKENS_BURST_PERIOD_MAX / p->period);
		rl_bucket_reconfig(&client->cap_bucket, &old, &new, now);
	}
	/* The tokens owed to the queue are served under the old limits. */
	if (lim->nwaiters)
		rl_dispatch(lim, now);
	rl_apply_limits(lim, p, now);
	rl_dispatch(lim, now);
}

/* End the lease (driver.md); fallback *@fb keeps the concurrency if a switch strands clients. */
static void rl_lease_stop(struct rl_limiter *lim, u64 self, struct rl_params *fb)
{
	struct rl_lease_state *g = lim->lease;

	lockdep_assert_held(lim->tlock);
	g->lease_end = 0;
	g->holder = NULL;
	g->holder_pid = 0;
	/* A callback already running finds no lease and does nothing. */
	hrtimer_try_to_cancel(&g->lease_timer);
	*fb = g->fallback;
	if (rl_conc_switch_busy(lim, fb, self))
		fb->concurrency = lim->params.concurrency;
}

static void rl_lease_end(struct rl_limiter *lim, u64 now, u64 self)
{
	struct rl_params fb;

	rl_lease_stop(lim, self, &fb);
	rl_apply_params(lim, &fb, now);
}

/* @fb in the period in force, rounded down, for the own bucket alone; no catch-up. */
static void rl_lease_interim(const struct rl_limiter *lim, const struct rl_params *fb,
			     struct rl_params *ip)
{
	u64 period = lim->params.period;

	*ip = *fb;
	if (fb->period == period)
		return;
	ip->period = period;
	/* The quotient must fit: rates beyond it are no limit in practice. */
	if (period > fb->period && fb->rate > div64_u64(U64_MAX, div64_u64(period, fb->period) + 1))
		ip->rate = U64_MAX;
	else
		ip->rate = mul_u64_u64_div_u64(fb->rate, period, fb->period);
	ip->burst = min(fb->burst, RL_TOKENS_BURST_PERIOD_MAX / period);
	ip->backlog = min(fb->backlog, ip->burst * 1000);
	ip->catchup = 0;
}

/* The fallback in full, unless other limits came first (rl_apply_limits()). */
static void rl_lease_work_fn(struct work_struct *work)
{
	struct rl_lease_state *g = container_of(work, struct rl_lease_state, fallback_work);
	struct rl_limiter *lim = g->lim;

	rl_lock_irq(lim);
	if (g->ending)
		rl_apply_params(lim, &g->fallback, ktime_get_ns());
	rl_unlock_irq(lim);
}

static enum hrtimer_restart rl_lease_timer_fn(struct hrtimer *timer)
{
	struct rl_lease_state *g = container_of(timer, struct rl_lease_state, lease_timer);
	struct rl_limiter *lim = g->lim;
	u64 now = ktime_get_ns();
	struct rl_params fb, ip;
	unsigned long flags;

	flags = rl_lock_irqsave(lim);
	/* A renewal that raced with this callback started the timer again. */
	if (g->lease_end && now >= g->lease_end) {
		rl_lease_stop(lim, 0, &fb);
		g->fallback = fb;
		rl_lease_interim(lim, &fb, &ip);
		rl_apply_limits(lim, &ip, now);
		g->ending = true;
		queue_work(system_highpri_wq, &g->fallback_work);
	}
	rl_unlock_irqrestore(lim, flags);
	return HRTIMER_NORESTART;
}

/**
 * rl_limiter_create() - allocate a limiter with a full bucket
 * @p: its limits, validated by rl_params_check()
 * Return: the limiter, with one reference for the caller, or NULL.
 */
struct rl_limiter *rl_limiter_create(const struct rl_params *p)
{
	struct rl_limiter *lim = kmem_cache_zalloc(rl_limiter_cache, GFP_KERNEL_ACCOUNT);

	if (!lim)
		return NULL;
	spin_lock_init(&lim->lock);
	lim->tlock = &lim->lock;
	lim->name = "";
	rl_queue_init(lim);
	INIT_LIST_HEAD(&lim->clients);
	INIT_LIST_HEAD(&lim->pollers);
	INIT_LIST_HEAD(&lim->fast_clients);
	INIT_LIST_HEAD(&lim->node);
	kref_init(&lim->ref);
	if (p->keyed) {
		lim->keys = rl_keys_create(p);
		if (!lim->keys) {
			kmem_cache_free(rl_limiter_cache, lim);
			return NULL;
		}
	}
	lim->params = *p;
	rl_bucket_init(&lim->bucket, p, ktime_get_ns());
	lim->release.stamp = lim->bucket.stamp;
	/* Hard irq, as timerfd's (Documentation/performance.md); RL_DISPATCH_MAX bounds it. */
	hrtimer_setup(&lim->timer, rl_timer_fn, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
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

static void rl_limiter_free_rcu(struct rcu_head *rcu)
{
	struct rl_limiter *lim = container_of(rcu, struct rl_limiter, rcu);

	if (lim->hist)
		kmem_cache_free(rl_hist_cache, lim->hist);
	kfree(lim->lease);
	if (lim->name[0])
		kfree(lim->name);
	kmem_cache_free(rl_limiter_cache, lim);
}

/* The last reference is gone: no client, no sysfs directory. */
static void rl_limiter_free(struct kref *ref)
{
	struct rl_limiter *lim = container_of(ref, struct rl_limiter, ref);

	WARN_ON_ONCE(lim->nwaiters || !list_empty(&lim->clients) || !RB_EMPTY_ROOT(&lim->groups) ||
		     lim->h.parent || !list_empty(&lim->h.children));
	/* The lease's timer first: it queues the work, which can start the other. */
	if (lim->lease) {
		hrtimer_cancel(&lim->lease->lease_timer);
		cancel_work_sync(&lim->lease->fallback_work);
	}
	hrtimer_cancel(&lim->timer);
	rl_keys_free(lim->keys);
	/* A former child may be in rl_lock_irq() on our lock. */
	call_rcu(&lim->rcu, rl_limiter_free_rcu);
}

/**
 * rl_limiter_put() - drop a reference to a limiter
 * @lim: the limiter; freed with the last reference: may sleep, takes no lock
 */
void rl_limiter_put(struct rl_limiter *lim)
{
	kref_put(&lim->ref, rl_limiter_free);
}

/**
 * rl_limiter_attach() - attach a client; its pollers are woken to look
 * @lim:    the limiter
 * @client: the client, not attached to any limiter
 */
void rl_limiter_attach(struct rl_limiter *lim, struct rl_client *client)
{
	rl_lock_irq(lim);
	/* Named: it may have clients of several users. A private one has one client. */
	if (lim->name[0])
		rl_queue_join(lim, client);
	list_add_tail(&client->node, &lim->clients);
	/* Read without the lock by sysfs. */
	WRITE_ONCE(lim->nclients, lim->nclients + 1);
	rl_unlock_irq(lim);
	/* Its group's, if its user had none here; else no longer needed. */
	rl_client_fini(client);
	wake_up_poll(&client->pollq, EPOLLIN | EPOLLRDNORM);
}

/**
 * rl_limiter_detach() - undo rl_limiter_attach(); @client's permits and lease end
 * @lim:    the limiter
 * @client: the client, attached to @lim, not polled and with no request
 * Return: the number of clients still attached.
 */
u64 rl_limiter_detach(struct rl_limiter *lim, struct rl_client *client)
{
	struct rl_group *gone;
	u64 left;

	rl_lock_irq(lim);
	gone = rl_queue_leave(lim, client);
	list_del_init(&client->node);
	list_del_init(&client->poll_node);
	left = lim->nclients - 1;
	WRITE_ONCE(lim->nclients, left);
	rl_fast_leave(lim, client);
	/* @client no longer counts among the clients. */
	if (lim->lease && lim->lease->lease_end && lim->lease->holder == client)
		rl_lease_end(lim, ktime_get_ns(), 0);
	if (client->held) {
		rl_path_release(lim, client->held);
		trace_ratelimit_release(lim, client->held, lim->held);
		client->held = 0;
		rl_dispatch(lim, ktime_get_ns());
	}
	rl_unlock_irq(lim);
	kfree(gone);
	return left;
}

/**
 * rl_move_busy() - would moving a subtree switch its grants to or from permits under clients?
 * @lim:    the root of the subtree moved; its tree is locked
 * @old:    its parent now, or NULL
 * @parent: its new parent, or NULL; that tree is locked too
 * @self:   clients of @lim the caller speaks for (rl_conc_switch_busy())
 * Return: true if the move must be refused with -EBUSY.
 */
bool rl_move_busy(const struct rl_limiter *lim, const struct rl_limiter *old,
		  const struct rl_limiter *parent, u64 self)
{
	/* Its own concurrency makes the subtree's grants permits anywhere. */
	if (lim->params.concurrency)
		return false;
	if (rl_path_concurrent(old) == rl_path_concurrent(parent))
		return false;
	return rl_subtree_clients(lim, 0) > self;
}

/**
 * rl_limiter_set_params() - change the limits, keeping the state
 * @lim:  the limiter
 * @p:    new limits, validated by rl_params_check()
 * @self: clients of @lim the caller speaks for (rl_conc_switch_busy())
 * Return: 0, or -EBUSY with nothing changed (rl_conc_switch_busy()).
 */
int rl_limiter_set_params(struct rl_limiter *lim, const struct rl_params *p, u64 self)
{
	int ret = 0;

	rl_lock_irq(lim);
	if (p->keyed != lim->params.keyed)
		ret = -EINVAL;
	else if (rl_conc_switch_busy(lim, p, self))
		ret = -EBUSY;
	else
		rl_apply_params(lim, p, ktime_get_ns());
	rl_unlock_irq(lim);
	return ret;
}

/**
 * rl_limiter_get_params() - read the limits in force
 * @lim: the limiter
 * @p:   filled with its limits
 */
void rl_limiter_get_params(struct rl_limiter *lim, struct rl_params *p)
{
	rl_lock_irq(lim);
	*p = lim->params;
	rl_unlock_irq(lim);
}

/**
 * rl_limiter_set_tunables() - change some limits at once, for sysfs
 * @lim:   the limiter
 * @vals:  their new values by row of rl_tunables, 0 meaning the default
 * @given: bit i set for each row i to change (rl_tunables_set())
 * Return: 0, -EINVAL if the result is invalid, or -EBUSY (rl_conc_switch_busy()).
 */
int rl_limiter_set_tunables(struct rl_limiter *lim, const u64 *vals, unsigned long given)
{
	struct rl_params p;
	int ret;

	rl_lock_irq(lim);
	p = lim->params;
	ret = rl_tunables_set(&p, vals, given);
	if (!ret && p.keyed != lim->params.keyed)
		ret = -EINVAL;
	if (!ret && rl_conc_switch_busy(lim, &p, 0))
		ret = -EBUSY;
	if (!ret)
		rl_apply_params(lim, &p, ktime_get_ns());
	rl_unlock_irq(lim);
	return ret;
}

/**
 * rl_limiter_snapshot() - read the limits, state and statistics at once
 * @lim: the limiter
 * @s:   filled in, as of now
 */
void rl_limiter_snapshot(struct rl_limiter *lim, struct rl_snapshot *s)
{
	u64 now;

	rl_lock_irq(lim);
	now = ktime_get_ns();
	rl_sync(lim, now);
	/* Counted as of now, not as of a late timer: what it would drop is dropped. */
	if (lim->nwaiters && !lim->params.unlimited)
		rl_owed_max(lim, now);
	rl_fast_sweep(lim);
	s->params = lim->params;
	s->counters = lim->counters;
	s->waiters = lim->nwaiters;
	/* What a request can get now: a page's tokens come back for it. */
	s->available = lim->bucket.tokens + lim->fast_out;
	s->held = lim->held;
	s->clients = lim->nclients;
	s->backlog = lim->backlog;
	rl_unlock_irq(lim);
	/* A keyed limiter's own bucket serves nothing: its keys do. */
	if (lim->keys) {
		rl_keys_counters(lim->keys, &s->counters, &s->waiters);
		s->available = 0;
	}
}

/**
 * rl_limiter_get_hist() - read the wait histogram
 * @lim:  the limiter
 * @hist: filled with its RL_HIST_BUCKETS counts, zeros if it has none
 */
void rl_limiter_get_hist(struct rl_limiter *lim, u64 *hist)
{
	const u64 *h;

	rl_lock_irq(lim);
	h = READ_ONCE(lim->hist);
	if (h)
		memcpy(hist, h, RL_HIST_SIZE);
	else
		memset(hist, 0, RL_HIST_SIZE);
	rl_unlock_irq(lim);
}

/**
 * rl_limiter_get_stats() - read the statistics
 * @lim: the limiter
 * @st:  its counter fields are filled in; the rest is left alone
 */
void rl_limiter_get_stats(struct rl_limiter *lim, struct rl_stats *st)
{
	struct rl_snapshot s;

	rl_limiter_snapshot(lim, &s);
	st->waiters = s.waiters;
	st->available = s.available;
	st->held = s.held;
	st->clients = s.clients;
	st->backlog = s.backlog;
	st->granted = s.counters.granted;
	st->requests = s.counters.requests;
	st->immediate = s.counters.immediate;
	st->waited = s.counters.waited;
	st->wait_ns_total = s.counters.wait_ns_total;
	st->wait_ns_max = s.counters.wait_ns_max;
	st->timeouts = s.counters.timeouts;
	st->interrupted = s.counters.interrupted;
	st->rejected = s.counters.rejected;
	st->refunded = s.counters.refunded;
}

/**
 * rl_limiter_walk_clients() - call @fn for each client in the order they attached, for sysfs
 * @lim:  the limiter
 * @fn:   called under the limiter's lock (it must not sleep) until it returns false
 * @arg:  passed to @fn
 */
void rl_limiter_walk_clients(struct rl_limiter *lim, rl_client_fn fn, void *arg)
{
	struct rl_client *client;

	rl_lock_irq(lim);
	list_for_each_entry(client, &lim->clients, node)
		if (!fn(client, arg))
			break;
	rl_unlock_irq(lim);
}

/**
 * rl_limiter_set_client() - set a client's priority, weight and cap
 * @lim:    the limiter
 * @client: a client of @lim
 * @cc:     validated settings, 0 for the defaults; a new cap starts full
 */
void rl_limiter_set_client(struct rl_limiter *lim, struct rl_client *client,
			   const struct rl_client_config *cc)
{
	u64 now = ktime_get_ns();
	struct rl_params cp;

	rl_lock_irq(lim);
	/* A cap or a higher priority takes the client's reservation away. */
	rl_fast_reclaim(lim);
	client->level = (cc->priority ?: RL_PRIO_MID) - 1;
	client->weight = cc->weight ?: 1;
	if (cc->cap != client->cap) {
		client->cap = cc->cap;
		rl_cap_params(lim, client, &cp);
		rl_bucket_init(&client->cap_bucket, &cp, now);
		rl_queue_unpark_client(lim, client);
	}
	rl_dispatch(lim, now);
	rl_unlock_irq(lim);
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
	rl_lock_irq(lim);
	/* Refilled first: what the sweep finds taken is room from now on. */
	rl_sync(lim, ktime_get_ns());
	rl_fast_sweep(lim);
	cc->priority = client->level + 1;
	cc->weight = client->weight;
	cc->cap = client->cap;
	cc->held = client->held;
	cc->granted = client->granted;
	rl_unlock_irq(lim);
}

/**
 * rl_limiter_deposit() - RL_IOC_DEPOSIT: feed tokens to a fed limiter
 * @lim: the limiter
 * @dep: dep->count tokens are added, up to the burst; dep->count becomes the
 *       excess, dep->available the tokens then
 * Return: 0, or -EINVAL if @lim is not fed.
 */
int rl_limiter_deposit(struct rl_limiter *lim, struct rl_deposit *dep)
{
	const struct rl_params *p = &lim->params;
	u64 now = ktime_get_ns(), room;
	int ret = 0;

	rl_lock_irq(lim);
	if (!p->fed) {
		ret = -EINVAL;
		goto out_unlock;
	}
	rl_sync(lim, now);
	room = min(p->burst - min(lim->bucket.tokens, p->burst), dep->count);
	rl_bucket_give(&lim->bucket, p, room);
	dep->count -= room;
	rl_dispatch(lim, now);
	dep->available = lim->bucket.tokens;
out_unlock:
	rl_unlock_irq(lim);
	return ret;
}

/**
 * rl_limiter_lease() - RL_IOC_SET_LEASE: limits until a deadline
 * @lim:     the limiter
 * @client:  the client that holds the lease from now on
 * @p:       the limits until @expires
 * @fb:      the fallback applied at @expires (at once if 0 or past)
 * @expires: CLOCK_MONOTONIC, ns
 *
 * The first allocates the limiter's struct rl_lease_state: most limiters never
 * have one.
 *
 * Return: 0, -ENOMEM, or -EBUSY with nothing changed (rl_conc_switch_busy()).
 */
int rl_limiter_lease(struct rl_limiter *lim, struct rl_client *client,
		     const struct rl_params *p, const struct rl_params *fb, u64 expires)
{
	struct rl_lease_state *g, *new = NULL;
	u64 now;

	if (!READ_ONCE(lim->lease)) {
		new = kzalloc(sizeof(*new), GFP_KERNEL_ACCOUNT);
		if (!new)
			return -ENOMEM;
		new->lim = lim;
		hrtimer_setup(&new->lease_timer, rl_lease_timer_fn, CLOCK_MONOTONIC,
			      HRTIMER_MODE_ABS);
		INIT_WORK(&new->fallback_work, rl_lease_work_fn);
	}
	now = ktime_get_ns();
	rl_lock_irq(lim);
	if (!lim->lease) {
		WRITE_ONCE(lim->lease, new);
		new = NULL;
	}
	g = lim->lease;
	if (rl_conc_switch_busy(lim, fb, 1) || (expires > now && rl_conc_switch_busy(lim, p, 1))) {
		rl_unlock_irq(lim);
		kfree(new);
		return -EBUSY;
	}
	g->fallback = *fb;
	if (expires <= now) {
		rl_lease_end(lim, now, 1);
	} else {
		g->lease_end = expires;
		g->holder = client;
		g->holder_pid = client->tgid;
		hrtimer_start(&g->lease_timer, ns_to_ktime(expires), HRTIMER_MODE_ABS);
		rl_apply_params(lim, p, now);
	}
	rl_unlock_irq(lim);
	kfree(new);
	return 0;
}

/**
 * rl_limiter_get_demand() - what the clients ask for, now (RL_IOC_GET_DEMAND)
 * @lim: the limiter
 * @d:   a zeroed struct rl_demand, filled in
 */
void rl_limiter_get_demand(struct rl_limiter *lim, struct rl_demand *d)
{
	const struct rl_global *g = &lim->global;

	rl_lock_irq(lim);
	d->now_ns = ktime_get_ns();
	/* Refilled first: what the sweep finds taken is room from now on. */
	rl_sync(lim, d->now_ns);
	rl_fast_sweep(lim);
	d->asked = lim->counters.asked;
	d->refused = lim->counters.refused;
	d->queued = lim->queued_hi ? U64_MAX : lim->queued;
	d->busy_ns = g->busy_ns;
	if (lim->nwaiters)
		d->busy_ns += d->now_ns - g->busy_since;
	rl_unlock_irq(lim);
}

/**
 * rl_limiter_get_lease() - the lease in force, for sysfs
 * @lim:  the limiter
 * @left: set to the time until it ends, ns
 * @pid:  set to the process of the client that holds it
 * Return: true if there is a lease, else false (and @left, @pid unset).
 */
bool rl_limiter_get_lease(struct rl_limiter *lim, u64 *left, pid_t *pid)
{
	const struct rl_lease_state *g;
	u64 now = ktime_get_ns();
	bool ret;

	rl_lock_irq(lim);
	g = lim->lease;
	ret = g && g->lease_end;
	if (ret) {
		*left = g->lease_end - min(now, g->lease_end);
		*pid = g->holder_pid;
	}
	rl_unlock_irq(lim);
	return ret;
}
