// SPDX-License-Identifier: GPL-2.0-only
/*
 * Trees of limiters: a named limiter may have a parent, whose tokens and
 * permits bound the sum of its children's (Documentation/hierarchy.md).
 * Serving a tree is here; its shape (moves, the ioctls, sysfs) is in
 * hier_tree.c.
 *
 * One lock per tree. Every limiter of a tree locks its root's lock
 * (rl_limiter.tlock, taken with rl_lock_irq()), so a grant that takes
 * tokens and permits at every level, an undo that gives them back at every
 * level, and a dispatch that looks at siblings all run under one lock,
 * with no order between the levels to get wrong. Moving a limiter between
 * trees happens under the registry lock (which serialises all moves) and
 * both trees' locks, the second nested; it repoints the tlock of the whole
 * subtree, and a task spinning on the old lock sees the change and locks
 * the new one (rl_lock_irq()).
 *
 * All or nothing. A grant of a chunk checks the tokens and permits of its
 * limiter and of every ancestor, then takes them at all levels at once;
 * a request that fails gives back at every level (rl_hier_undo()), as do
 * releases and refunds. An ancestor's `granted` counts its subtree's.
 *
 * Sharing. Requests sleep at their own limiter (sched.c, unchanged); a
 * child with sleeping requests in its subtree is active at its parent,
 * ordered by a virtual time tag that grows by chunk / weight. A dispatch
 * walks from the root: a limiter's own requests, then the child with the
 * smallest tag. A child without the tokens or permits of its own rate is
 * parked at its parent until it has them, and its siblings go on
 * (max-min); if the root lacks them, the tree waits for the root's timer.
 * Each limiter keeps its one hrtimer, started only while its subtree
 * waits; a dispatch is bounded by RL_DISPATCH_MAX and the depth.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/rbtree.h>
#include <linux/sched.h>
#include <linux/spinlock.h>

#include "limiter.h"
#include "ratelimit_trace.h"

/* Chunks count for at most this many tokens in a virtual time step. */
#define RL_HIER_CHUNK_MAX	BIT_ULL(50)

static struct rl_limiter *rl_hier_root(struct rl_limiter *lim)
{
	while (lim->h.parent)
		lim = lim->h.parent;
	return lim;
}

/* Tags wrap around: compare them as CFS compares vruntime. */
static bool rl_hier_before(u64 a, u64 b)
{
	return (s64)(a - b) < 0;
}

static bool rl_hier_tag_less(struct rb_node *a, const struct rb_node *b)
{
	return rl_hier_before(rb_entry(a, struct rl_limiter, h.knode)->h.vtag,
			      rb_entry(b, struct rl_limiter, h.knode)->h.vtag);
}

static bool rl_hier_ready_less(struct rb_node *a, const struct rb_node *b)
{
	return rb_entry(a, struct rl_limiter, h.knode)->h.ready <
	       rb_entry(b, struct rl_limiter, h.knode)->h.ready;
}

/* Put @x, becoming active, among its parent's kids: no earlier than the last. */
void rl_hier_enqueue(struct rl_limiter *x)
{
	struct rl_hnode *p = &x->h.parent->h;

	if (rl_hier_before(x->h.vtag, p->kvtime))
		x->h.vtag = p->kvtime;
	x->h.parked = false;
	rb_add_cached(&x->h.knode, &p->kids, rl_hier_tag_less);
}

void rl_hier_dequeue(struct rl_limiter *x)
{
	struct rl_hnode *p = &x->h.parent->h;

	rb_erase_cached(&x->h.knode, x->h.parked ? &p->parked_kids : &p->kids);
	x->h.parked = false;
}

/* Add @n sleeping requests to the subtrees from @x up, or take them. */
void rl_hier_count(struct rl_limiter *x, u64 n, bool add)
{
	bool was, is;

	for (; x; x = x->h.parent) {
		was = x->h.queued;
		x->h.queued = add ? x->h.queued + n : x->h.queued - n;
		is = x->h.queued;
		if (!x->h.parent || was == is)
			continue;
		x->h.active = is;
		if (is)
			rl_hier_enqueue(x);
		else
			rl_hier_dequeue(x);
	}
}

/**
 * rl_hier_queued() - a request starts or stops sleeping at a limiter
 * @lim: the limiter
 * @add: true when it starts
 */
void rl_hier_queued(struct rl_limiter *lim, bool add)
{
	lockdep_assert_held(lim->tlock);
	rl_hier_count(lim, 1, add);
}

/* @x is out of tokens or permits until @ready: off its parent's kids. */
static void rl_hier_park(struct rl_limiter *x, u64 ready)
{
	struct rl_hnode *p = &x->h.parent->h;

	rb_erase_cached(&x->h.knode, &p->kids);
	x->h.ready = ready;
	x->h.parked = true;
	rb_add_cached(&x->h.knode, &p->parked_kids, rl_hier_ready_less);
}

/*
 * Put a parked @x back among its parent's kids, keeping its tag: a child
 * held back by its own limits gets its turns when it can take them again
 * (within those limits), as a flow held back by its fd's cap.
 */
static void rl_hier_unpark(struct rl_limiter *x)
{
	struct rl_hnode *p = &x->h.parent->h;

	rb_erase_cached(&x->h.knode, &p->parked_kids);
	x->h.parked = false;
	rb_add_cached(&x->h.knode, &p->kids, rl_hier_tag_less);
}

/* Put back the kids of @x parked until @now at the latest. */
static void rl_hier_unpark_due(struct rl_limiter *x, u64 now,
			       unsigned int *budget)
{
	struct rb_node *node;
	struct rl_limiter *kid;

	while (*budget && (node = rb_first_cached(&x->h.parked_kids))) {
		kid = rb_entry(node, struct rl_limiter, h.knode);
		if (kid->h.ready > now)
			break;
		--*budget;
		rl_hier_unpark(kid);
	}
}

/* When the subtree of @x may go on by itself: its fds' caps, its kids. */
static u64 rl_hier_next(struct rl_limiter *x)
{
	struct rb_node *node = rb_first_cached(&x->h.parked_kids);
	u64 kid = node ? rb_entry(node, struct rl_limiter, h.knode)->h.ready :
			 U64_MAX;

	return min(kid, rl_sched_cap_ready(x));
}

/**
 * struct rl_hier_walk - one dispatch of a tree
 * @lim:    the limiter whose dispatch this is: its timer's time is
 *          returned rather than started
 * @now:    current time, ns
 * @when:   time to start @lim's timer for
 * @budget: grants, parks and unparks left
 * @leaf:   limiter of the request picked
 * @chunk:  tokens to grant it now
 */
struct rl_hier_walk {
	struct rl_limiter *lim;
	u64 now;
	u64 when;
	unsigned int budget;
	struct rl_limiter *leaf;
	u64 chunk;
};

/* Start the timer of @x for @t, unless started for earlier. */
static void rl_hier_arm(struct rl_hier_walk *hw, struct rl_limiter *x, u64 t)
{
	if (t == U64_MAX)
		return;
	if (x == hw->lim)
		hw->when = min(hw->when, t);
	else
		rl_arm_timer_before(x, t);
}

/* The request to serve next in the subtree of @x, or NULL. */
static struct rl_waiter *rl_hier_pick(struct rl_hier_walk *hw,
				      struct rl_limiter *x)
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
		rl_hier_arm(hw, x, rl_sched_cap_ready(x));
	}
	rl_hier_unpark_due(x, hw->now, &hw->budget);
	while (hw->budget && (node = rb_first_cached(&x->h.kids))) {
		kid = rb_entry(node, struct rl_limiter, h.knode);
		w = rl_hier_pick(hw, kid);
		if (w || !hw->budget)
			return w;
		hw->budget--;
		rl_hier_park(kid, rl_hier_next(kid));
		rl_hier_arm(hw, x, kid->h.ready);
	}
	return NULL;
}

/* Does a level of the path from @x up limit concurrency? */
static bool rl_hier_concurrent(const struct rl_limiter *x)
{
	for (; x; x = x->h.parent)
		if (x->params.concurrency)
			return true;
	return false;
}

/* Most tokens a level above @x holds. */
static u64 rl_hier_burst(const struct rl_limiter *x)
{
	u64 max = U64_MAX;

	for (x = x->h.parent; x; x = x->h.parent)
		if (!x->params.unlimited)
			max = min(max, x->params.burst);
	return max;
}

/*
 * The first level from @x up that lacks @chunk tokens or @permits permits
 * now, with *@ready set to when it has them (U64_MAX: a release), or NULL.
 */
static struct rl_limiter *rl_hier_blocker(struct rl_limiter *x, u64 chunk,
					  u64 permits, u64 now, u64 *ready)
{
	for (; x; x = x->h.parent) {
		if (!rl_permits_free(x, permits)) {
			*ready = U64_MAX;
			return x;
		}
		if (x->params.unlimited)
			continue;
		rl_refill(x, now);
		x->late = 0;
		if (x->bucket.tokens < chunk) {
			*ready = min(rl_ready_time(x, chunk),
				     rl_catchup_time(x));
			return x;
		}
	}
	return NULL;
}

/* Take @chunk tokens and @permits permits at every level above @x. */
static void rl_hier_take(struct rl_limiter *x, u64 chunk, u64 permits)
{
	for (x = x->h.parent; x; x = x->h.parent) {
		x->held += permits;
		if (!x->params.unlimited)
			rl_bucket_take(&x->bucket, chunk);
	}
}

/* Move the tags of the levels from @x up for a chunk served below. */
static void rl_hier_charge(struct rl_limiter *x, u64 chunk)
{
	struct rl_hnode *p;
	u64 step;

	for (; x->h.parent; x = x->h.parent) {
		p = &x->h.parent->h;
		step = mul_u64_u64_div_u64(min(chunk, RL_HIER_CHUNK_MAX),
					   RL_WEIGHT_MAX, x->h.weight);
		p->kvtime = x->h.vtag;
		rb_erase_cached(&x->h.knode, &p->kids);
		x->h.vtag += step;
		rb_add_cached(&x->h.knode, &p->kids, rl_hier_tag_less);
	}
}

/* Grant @hw's chunk to @w at every level; wake it if complete. */
static void rl_hier_grant(struct rl_hier_walk *hw, struct rl_waiter *w,
			  u64 permits)
{
	struct rl_limiter *leaf = hw->leaf;

	w->held += permits;
	w->taken += rl_take(leaf, w->client, hw->chunk, permits);
	rl_hier_take(leaf, hw->chunk, permits);
	w->got += hw->chunk;
	w->at = leaf->params.unlimited ? hw->now : leaf->bucket.stamp;
	rl_hier_charge(leaf, hw->chunk);
	rl_sched_served(leaf, w, hw->chunk);
	if (!w->want) {
		/* Pairs with set_current_state() in rl_sleep(). */
		WRITE_ONCE(w->done, true);
		rl_waiter_wake(w);
	}
}

/* Serve the requests of @root's tree that every level allows. */
static void rl_hier_serve(struct rl_hier_walk *hw, struct rl_limiter *root)
{
	struct rl_limiter *x;
	struct rl_waiter *w;
	u64 permits, ready;

	while ((w = rl_hier_pick(hw, root))) {
		hw->chunk = min(hw->chunk, rl_hier_burst(hw->leaf));
		permits = rl_hier_concurrent(hw->leaf) && !w->held ?
			  w->want : 0;
		x = rl_hier_blocker(hw->leaf, hw->chunk, permits, hw->now,
				    &ready);
		if (x == root) {
			rl_hier_arm(hw, root, ready);
			return;
		}
		if (!hw->budget)
			break;
		hw->budget--;
		if (x) {
			rl_hier_park(x, ready);
			rl_hier_arm(hw, x->h.parent, ready);
			continue;
		}
		rl_hier_grant(hw, w, permits);
	}
	if (!hw->budget)
		hw->when = hw->now;
}

/**
 * rl_hier_dispatch() - serve the tree of a limiter
 * @lim: a limiter with a parent or children, whose state changed
 * @now: current time, ns
 *
 * @lim and its ancestors are put back among their parents' kids (what
 * changed may let them go on), so are @lim's flows and kids parked until
 * @now at the latest, and the tree is served from its root.
 * Timers of other levels are started as needed.
 *
 * Return: the time to start @lim's own timer for, U64_MAX for none.
 */
u64 rl_hier_dispatch(struct rl_limiter *lim, u64 now)
{
	struct rl_hier_walk hw = {
		.lim = lim, .now = now, .when = U64_MAX,
		.budget = RL_DISPATCH_MAX,
	};
	struct rl_limiter *x;

	lockdep_assert_held(lim->tlock);
	for (x = lim; x->h.parent; x = x->h.parent)
		if (x->h.parked)
			rl_hier_unpark(x);
	/*
	 * What is due at @lim goes back in line here: the walk from the root
	 * may stop above @lim, and a flow or kid left parked for a time now
	 * past would start @lim's timer for that time again, and again.
	 */
	if (lim->nwaiters)
		rl_sched_unpark_due(lim, now, &hw.budget);
	rl_hier_unpark_due(lim, now, &hw.budget);
	rl_hier_serve(&hw, rl_hier_root(lim));
	return min(hw.when, rl_hier_next(lim));
}

/**
 * rl_hier_invalid() - can a request never be granted in a tree?
 * @lim:      a limiter with a parent or children
 * @client:   the client asking
 * @count:    tokens
 * @nonblock: it may not be served in chunks
 *
 * Return: true when @count exceeds a level's concurrency limit, or, for
 * @nonblock, what one chunk may hold at some level.
 */
bool rl_hier_invalid(struct rl_limiter *lim, struct rl_client *client,
		     u64 count, bool nonblock)
{
	struct rl_limiter *x;

	for (x = lim; x; x = x->h.parent)
		if (x->params.concurrency && count > x->params.concurrency)
			return true;
	return nonblock && count > min(rl_chunk_max(lim, client),
				       rl_hier_burst(lim));
}

/**
 * rl_hier_grant_now() - the immediate grant, in a tree
 * @lim:    a limiter with a parent or children
 * @client: the client asking
 * @req:    the request
 * @now:    current time, ns
 *
 * Granted when nobody sleeps in the tree, and every level has the tokens
 * and permits, and the client's cap allows it.
 *
 * Return: whether it was granted.
 */
bool rl_hier_grant_now(struct rl_limiter *lim, struct rl_client *client,
		       struct rl_acquire *req, u64 now)
{
	u64 permits = rl_hier_concurrent(lim) ? req->count : 0;
	struct rl_limiter *x;
	u64 ready;

	if (rl_hier_root(lim)->h.queued ||
	    (client->cap && (req->count > rl_chunk_max(lim, client) ||
			     !rl_cap_allows(lim, client, req->count, now))))
		return false;
	for (x = lim; x; x = x->h.parent)
		if (!x->params.unlimited)
			rl_sync(x, now);
	if (rl_hier_blocker(lim, req->count, permits, now, &ready))
		return false;
	req->lag_ns = rl_lag(lim, req->count);
	req->ready_ns = lim->params.unlimited ? 0 : lim->bucket.stamp;
	client->refundable += rl_take(lim, client, req->count, permits);
	rl_hier_take(lim, req->count, permits);
	client->granted += req->count;
	lim->counters.immediate++;
	lim->counters.granted += req->count;
	rl_hier_granted(lim, req->count);
	trace_ratelimit_grant(lim, req->count, 0, req->lag_ns);
	return true;
}

/**
 * rl_hier_undo() - give back at the ancestors what a failed request took
 * @lim: its limiter
 * @w:   the request
 * @now: current time, ns
 *
 * The limiter's own bucket and counts are rl_undo()'s.
 */
void rl_hier_undo(struct rl_limiter *lim, struct rl_waiter *w, u64 now)
{
	struct rl_limiter *x;

	lockdep_assert_held(lim->tlock);
	for (x = lim->h.parent; x; x = x->h.parent) {
		x->held -= w->held;
		if (x->params.unlimited || !w->got)
			continue;
		rl_sync(x, now);
		rl_bucket_give(&x->bucket, &x->params, w->got);
	}
}

/**
 * rl_hier_granted() - count a grant at the ancestors
 * @lim:   the limiter it was granted at
 * @count: tokens
 */
void rl_hier_granted(struct rl_limiter *lim, u64 count)
{
	struct rl_limiter *x;

	for (x = lim->h.parent; x; x = x->h.parent)
		x->counters.granted += count;
}
