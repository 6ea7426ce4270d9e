// SPDX-License-Identifier: GPL-2.0-only
/*
 * Serving a limiter's queue: rl_dispatch() grants sleeping requests their
 * tokens in the order sched.c and hier.c decide, from the root of the
 * limiter's tree (a limiter alone is a tree of one: the same code serves
 * both), wakes whoever is complete, and starts the hrtimer for the instant
 * the next request (or a poller) can be served. The timer is started only
 * while someone sleeps or polls.
 *
 * A request sleeps on its own stack entry (struct rl_waiter) and is woken
 * by name when its tokens are granted, so a grant wakes exactly one task.
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
#include <linux/sched.h>
#include <linux/spinlock.h>

#include "limiter.h"
#include "ratelimit_trace.h"

/* Start, move or stop the timer for @when, U64_MAX for never. */
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
	hrtimer_start_range_ns(&lim->timer, ns_to_ktime(when),
			       RL_TIMER_SLACK_NS, HRTIMER_MODE_ABS);
}

/*
 * When a token is there for pollers, if time is what they wait for: when
 * rl_sync() shows it, @late after the bucket's own time for it.
 */
static u64 rl_poll_time(const struct rl_limiter *lim)
{
	u64 when;

	if (lim->params.unlimited || lim->bucket.tokens)
		return U64_MAX;
	when = min(rl_ready_time(lim, 1), rl_catchup_time(lim));
	return when > KTIME_MAX - lim->late ? U64_MAX : when + lim->late;
}

/*
 * Listed pollers to wake when the limiter is ready: as many as could take
 * a token now (tokens, free permits), from 1 to RL_WAKE_MAX.
 */
static unsigned int rl_poll_quota(const struct rl_limiter *lim)
{
	const struct rl_params *p = &lim->params;
	u64 n = p->unlimited ? RL_WAKE_MAX : lim->bucket.tokens;

	if (p->concurrency)
		n = min(n, p->concurrency - lim->held);
	return clamp_t(u64, n, 1, RL_WAKE_MAX);
}

/*
 * Wake the pollers of the first @quota clients listed in lim->pollers, in
 * the order they were listed. Returns false if some are left: they stay
 * listed.
 */
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

/**
 * rl_path_ready() - would an acquire of one token be granted at once?
 * @lim:  the limiter
 * @now:  current time, ns
 * @when: if not, set to when to look again: when a token is there, if
 *        time is what it waits for; U64_MAX if it waits for its own
 *        limiter's queue or a permit there (whatever changes them
 *        dispatches @lim); RL_POLL_GRACE_NS from @now at the earliest if
 *        it waits for an ancestor's queue, which changes in the
 *        dispatches of other limiters
 *
 * The rule of rl_grant_now(), caps aside, for every level of the path:
 * the tokens and a permit are there, nobody queued at the level, and no
 * sibling the order serves first waits for them (rl_hier_turn()).
 * The buckets of the path are brought up to @now (rl_sync()).
 *
 * Return: the answer.
 */
bool rl_path_ready(struct rl_limiter *lim, u64 now, u64 *when)
{
	const struct rl_params *p;
	struct rl_limiter *x;

	lockdep_assert_held(lim->tlock);
	for (x = lim; ; x = x->h.parent) {
		p = &x->params;
		rl_sync(x, now);
		if (x->nwaiters ||
		    (p->concurrency && x->held >= p->concurrency)) {
			*when = x == lim ? U64_MAX : now + RL_POLL_GRACE_NS;
			return false;
		}
		if (!p->unlimited && !x->bucket.tokens) {
			*when = rl_poll_time(x);
			return false;
		}
		if (!x->h.parent)
			return true;
		if (!rl_hier_turn(x)) {
			*when = now + RL_POLL_GRACE_NS;
			return false;
		}
	}
}

/*
 * Wake listed pollers if the limiter is ready; else, if time is what they
 * wait for, bring the timer's time @when forward to when it is. Returns
 * the time to start the timer for.
 *
 * A token wakes one poller, not all of them: a woken poller that finds
 * the token taken by another sleeps again inside poll() and costs a
 * wake-up for nothing, and 1000 pollers would cost 1000 per token. Those
 * left listed are woken RL_POLL_GRACE_NS later if the limiter is still
 * ready then (nobody took what was there), so every poller of a limiter
 * that stays ready hears of it in the end.
 */
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

/*
 * Tokens are owed to queued requests for RL_LATE_MAX_NS at most: an
 * overloaded host that cannot keep up drops the older ones, as an idle
 * bucket would, rather than owe ever more.
 */
static void rl_owed_max(struct rl_limiter *x, u64 now)
{
	if (now > x->bucket.stamp && now - x->bucket.stamp > RL_LATE_MAX_NS)
		rl_drop_late(x, now - RL_LATE_MAX_NS);
}

/*
 * The first level from @x up that lacks @chunk tokens or @permits permits
 * now, with *@ready set to when it has them (U64_MAX: a release), or NULL.
 */
static struct rl_limiter *rl_blocker(struct rl_limiter *x, u64 chunk,
				     u64 permits, u64 now, u64 *ready)
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
			*ready = min(rl_ready_time(x, chunk),
				     rl_catchup_time(x));
			return x;
		}
	}
	return NULL;
}

/* Take @chunk tokens and @permits permits at every level above @x. */
static void rl_take_above(struct rl_limiter *x, u64 chunk, u64 permits)
{
	for (x = x->h.parent; x; x = x->h.parent) {
		x->held += permits;
		if (!x->params.unlimited)
			rl_bucket_take(&x->bucket, chunk);
	}
}

/*
 * rl_walk_arm() - start a timer of a tree in a dispatch
 * @hw: the dispatch
 * @x:  a limiter of its tree
 * @t:  when, U64_MAX for never
 *
 * The timer of @x is started for @t unless started for earlier; that of
 * the limiter dispatched is started at the end of the dispatch.
 */
static void rl_walk_arm(struct rl_walk *hw, struct rl_limiter *x, u64 t)
{
	if (t == U64_MAX)
		return;
	if (x == hw->lim)
		hw->when = min(hw->when, t);
	else
		rl_arm_timer_before(x, t);
}

/*
 * rl_hier_pick() - the request to serve next in the subtree of a limiter
 * @hw: the dispatch: sets its leaf and chunk, spends its budget
 * @x:  the limiter
 *
 * The limiter's own requests first (sched.c), then its child with the
 * smallest tag; a child whose subtree has nothing to serve now is parked
 * until it may have.
 *
 * Return: the request, or NULL.
 */
static struct rl_waiter *rl_hier_pick(struct rl_walk *hw, struct rl_limiter *x)
{
	struct rl_limiter *kid;
	struct rb_node *node;
	struct rl_waiter *w;

	if (x->nwaiters) {
		rl_sched_unpark_due(x, hw->now, &hw->budget);
		w = rl_sched_pick(x, hw->now, &hw->chunk, &hw->budget);
		if (w) {
			hw->leaf = x;
			return w;
		}
		rl_walk_arm(hw, x, rl_sched_cap_ready(x));
	}
	rl_hier_unpark_due(x, hw->now, &hw->budget);
	while (hw->budget && (node = rb_first_cached(&x->h.kids))) {
		kid = rb_entry(node, struct rl_limiter, h.knode);
		w = rl_hier_pick(hw, kid);
		if (w || !hw->budget)
			return w;
		hw->budget--;
		rl_hier_park(kid, rl_hier_next(kid));
		rl_walk_arm(hw, x, kid->h.ready);
	}
	return NULL;
}

/*
 * rl_hier_block() - a level of the walk lacks what the next request needs
 * @hw:    the dispatch
 * @x:     that level, below the root
 * @ready: when it has it, U64_MAX for a release
 *
 * @x is parked at its parent until then, and the parent's timer started.
 */
static void rl_hier_block(struct rl_walk *hw, struct rl_limiter *x, u64 ready)
{
	rl_hier_park(x, ready);
	rl_walk_arm(hw, x->h.parent, ready);
}

/* Grant @hw's chunk to @w at every level; wake it if complete. */
static void rl_grant_chunk(struct rl_walk *hw, struct rl_waiter *w,
			   u64 permits)
{
	struct rl_limiter *leaf = hw->leaf;

	w->held += permits;
	w->taken += rl_take(leaf, w->client, hw->chunk, permits);
	rl_take_above(leaf, hw->chunk, permits);
	w->got += hw->chunk;
	w->at = leaf->params.unlimited ? hw->now : leaf->bucket.stamp;
	rl_hier_charge(leaf, hw->chunk);
	rl_sched_served(leaf, w, hw->chunk);
	if (!leaf->h.parent)
		hw->own++;
	if (!w->want) {
		/* Pairs with set_current_state() in rl_sleep(). */
		WRITE_ONCE(w->done, true);
		rl_waiter_wake(w);
	}
}

/*
 * Serve the requests of @root's tree that every level allows. Returns
 * false if it ran out of budget: tokens are left owed to the queue.
 */
static bool rl_serve(struct rl_walk *hw, struct rl_limiter *root)
{
	struct rl_limiter *x;
	struct rl_waiter *w;
	u64 permits, ready;

	while ((w = rl_hier_pick(hw, root))) {
		hw->chunk = min(hw->chunk, rl_hier_chunk(hw->leaf));
		permits = !w->held && rl_hier_concurrent(hw->leaf) ?
			  w->want : 0;
		x = rl_blocker(hw->leaf, hw->chunk, permits, hw->now, &ready);
		if (x == root) {
			/* The tree waits for the root's timer, or a release. */
			rl_walk_arm(hw, root, ready);
			return true;
		}
		if (!hw->budget)
			return false;
		hw->budget--;
		if (x)
			rl_hier_block(hw, x, ready);
		else
			rl_grant_chunk(hw, w, permits);
	}
	return hw->budget;
}

/*
 * Bring the root up to @now after a dispatch that granted @n chunks of
 * its own requests.
 */
static void rl_settle(struct rl_limiter *root, unsigned int n, u64 now)
{
	if (n)
		rl_credit_late(root, now);
	rl_refill(root, now - root->late);
}

/**
 * rl_dispatch() - serve the queue of a limiter's tree
 * @lim: the limiter, whose state changed
 * @now: current time, ns
 *
 * @lim and its ancestors are put back among their parents' kids (what
 * changed may let them go on), so are @lim's flows and kids parked until
 * @now at the latest, and the tree is served from its root: what the
 * limits of every level allow, in order, waking whoever is complete.
 * Queued requests are served on the schedule their tokens exist
 * (rl_tokens_by()). Then @lim's timer is started for its next grant, or
 * for its pollers; those of other levels as needed.
 *
 * The work is bounded, as the timer calls this with interrupts off: at
 * most RL_DISPATCH_MAX chunks granted and flows or limiters parked or put
 * back, and RL_WAKE_MAX clients' pollers woken. Out of budget, it starts
 * the timer for @now, which goes on with the rest at once and with the
 * tokens still owed to the queue: nothing is lost, and a wake-up waits
 * for no more than the timer's next expiry.
 */
void rl_dispatch(struct rl_limiter *lim, u64 now)
{
	struct rl_walk hw = {
		.lim = lim, .now = now, .when = U64_MAX,
		.budget = RL_DISPATCH_MAX,
	};
	struct rl_limiter *root = lim;

	lockdep_assert_held(lim->tlock);
	for (; root->h.parent; root = root->h.parent)
		if (root->h.parked)
			rl_hier_unpark(root);
	/* Tokens owed to the root's queue, for RL_LATE_MAX_NS at most. */
	if (!root->nwaiters)
		rl_refill(root, now);
	else
		rl_owed_max(root, now);
	root->late = 0;
	/*
	 * What is due at @lim goes back in line here: the walk from the root
	 * may stop above @lim, and a flow or kid left parked for a time now
	 * past would start @lim's timer for that time again, and again.
	 */
	if (lim->nwaiters)
		rl_sched_unpark_due(lim, now, &hw.budget);
	rl_hier_unpark_due(lim, now, &hw.budget);
	if (rl_serve(&hw, root)) {
		rl_settle(root, hw.own, now);
		hw.when = min(hw.when, rl_hier_next(lim));
	} else {
		hw.when = now;
	}
	rl_arm_timer(lim, rl_serve_pollers(lim, now, hw.when));
}

/*
 * A timer that starts itself again for a time already past, and again,
 * never lets its CPU leave the interrupt: a bug, warned about once, and
 * slowed down so that the machine lives on. It stays slowed until the
 * timer is started for the future again.
 */
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

/**
 * rl_timer_fn() - the limiter's hrtimer: serve the queue
 * @timer: the limiter's timer
 *
 * Return: HRTIMER_NORESTART; rl_dispatch() starts it again if needed.
 */
enum hrtimer_restart rl_timer_fn(struct hrtimer *timer)
{
	struct rl_limiter *lim = container_of(timer, struct rl_limiter, timer);
	u64 now = ktime_get_ns(), expiry;
	unsigned long flags;

	flags = rl_lock_irqsave(lim);
	/*
	 * Not lim->timer_expiry: a cancel that found this callback already
	 * running zeroed it.
	 */
	expiry = ktime_to_ns(hrtimer_get_softexpires(timer));
	trace_ratelimit_timer(lim, now - min(now, expiry), lim->nwaiters);
	lim->timer_expiry = 0;
	rl_dispatch(lim, now);
	rl_timer_guard(lim, now);
	rl_unlock_irqrestore(lim, flags);
	return HRTIMER_NORESTART;
}

/* Start the timer for @when unless it is started for earlier. */
void rl_arm_timer_before(struct rl_limiter *lim, u64 when)
{
	if (!lim->timer_expiry || when < lim->timer_expiry)
		rl_arm_timer(lim, when);
}

/**
 * rl_limiter_poll() - readiness of a limiter for poll()
 * @lim:    the limiter
 * @client: the polling client
 *
 * The caller is already on its client's poll queue. Finding the limiter
 * not ready, we list the client among its pollers under the lock we look
 * under, and whatever makes the limiter ready changes the state under that
 * lock and runs rl_dispatch(), which wakes listed clients: a wake-up
 * cannot fall between the check and the sleep. A client leaves the list
 * only when it is woken or closed. rl_dispatch() wakes as many of them as
 * could take a token then, in the order they were listed, and starts the
 * timer RL_POLL_GRACE_NS later for the rest, so they are not forgotten;
 * should the limiter be taken first, they stay listed and are woken when
 * it is ready again, as their poll would find.
 *
 * Return: EPOLLIN | EPOLLRDNORM when an acquire of one token by @client
 * would be granted at once: at every level of its tree's path, as
 * rl_path_ready() says; otherwise the timer is started to wake pollers
 * then, or to look again.
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
					       rl_bucket_ready(&client->cap_bucket,
							       &cp, 1)));
	} else {
		mask = EPOLLIN | EPOLLRDNORM;
	}
	rl_unlock_irq(lim);
	return mask;
}

/**
 * rl_hier_concurrent() - does a level of a path limit concurrency?
 * @x: the lowest level of the path
 *
 * Return: true if @x or an ancestor has a concurrency limit: then every
 * grant at @x takes permits at every level.
 */
bool rl_hier_concurrent(const struct rl_limiter *x)
{
	for (; x; x = x->h.parent)
		if (x->params.concurrency)
			return true;
	return false;
}

/**
 * rl_hier_chunk() - most tokens one chunk of a queued request may take
 * @x: the request's limiter
 *
 * A chunk is taken at every level at once: at most what every level
 * above holds. Below a level that limits the rate, at most half of its
 * own limiter's burst too (at least 1): a request that needed its whole
 * bucket would wait for the levels above with that bucket full, the
 * tokens it earns meanwhile lost, and its limiter would get less than
 * its share of its parent (issue #29).
 *
 * Return: the bound, U64_MAX if no level above limits the rate.
 */
u64 rl_hier_chunk(const struct rl_limiter *x)
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
