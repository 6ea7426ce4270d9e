// SPDX-License-Identifier: GPL-2.0-only
/*
 * The order of service of a tree of limiters (Documentation/hierarchy.md).
 * Every limiter is a tree: a root without children is a tree of one node,
 * served by the same code (dispatch.c) as one of five levels. Its shape
 * (moves, the ioctls, sysfs) is in hier_tree.c.
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
 * a request that fails gives them back at every level, as do releases and
 * refunds (acquire.c, release.c). An ancestor's `granted` counts its
 * subtree's.
 *
 * Sharing. Requests sleep at their own limiter (sched.c); a child with
 * sleeping requests in its subtree is active at its parent, ordered by a
 * virtual time tag that grows by tokens / weight with every grant in its
 * subtree, immediate or not. A dispatch walks from the root: a limiter's
 * own requests, then the child with the smallest tag (rl_hier_pick()). A
 * child without the tokens or permits of its own rate is parked at its
 * parent until it has them, keeping its tag, and its siblings go on
 * (max-min); if the root lacks them, the tree waits for the root's timer.
 * A request that does not sleep is granted when every level has the
 * tokens and no request the order serves first waits for them
 * (rl_hier_turn()). Each limiter keeps its one hrtimer, started only while
 * its subtree waits; a dispatch is bounded by RL_DISPATCH_MAX and the
 * depth.
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
void rl_hier_park(struct rl_limiter *x, u64 ready)
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
void rl_hier_unpark(struct rl_limiter *x)
{
	struct rl_hnode *p = &x->h.parent->h;

	rb_erase_cached(&x->h.knode, &p->parked_kids);
	x->h.parked = false;
	rb_add_cached(&x->h.knode, &p->kids, rl_hier_tag_less);
}

/* Put back the kids of @x parked until @now at the latest. */
void rl_hier_unpark_due(struct rl_limiter *x, u64 now, unsigned int *budget)
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
u64 rl_hier_next(struct rl_limiter *x)
{
	struct rb_node *node = rb_first_cached(&x->h.parked_kids);
	u64 kid = node ? rb_entry(node, struct rl_limiter, h.knode)->h.ready :
			 U64_MAX;

	return min(kid, rl_sched_cap_ready(x));
}

/**
 * rl_walk_arm() - start a timer of a tree in a dispatch
 * @hw: the dispatch
 * @x:  a limiter of its tree
 * @t:  when, U64_MAX for never
 *
 * The timer of @x is started for @t unless started for earlier; that of
 * the limiter dispatched is started at the end of the dispatch.
 */
void rl_walk_arm(struct rl_walk *hw, struct rl_limiter *x, u64 t)
{
	if (t == U64_MAX)
		return;
	if (x == hw->lim)
		hw->when = min(hw->when, t);
	else
		rl_arm_timer_before(x, t);
}

/**
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
struct rl_waiter *rl_hier_pick(struct rl_walk *hw, struct rl_limiter *x)
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

/**
 * rl_hier_block() - a level of the walk lacks what the next request needs
 * @hw:    the dispatch
 * @x:     that level, below the root
 * @ready: when it has it, U64_MAX for a release
 *
 * @x is parked at its parent until then, and the parent's timer started.
 */
void rl_hier_block(struct rl_walk *hw, struct rl_limiter *x, u64 ready)
{
	rl_hier_park(x, ready);
	rl_walk_arm(hw, x->h.parent, ready);
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

/**
 * rl_hier_charge() - move the tags of a path for tokens granted below
 * @x:     the limiter they were granted at
 * @count: tokens
 *
 * At each level the child on the path is charged @count / weight, as if
 * it had been served in the order: an immediate grant too, so that no
 * child takes more than its share while a sibling waits. A child with
 * nothing queued starts from its parent's virtual time, as when it
 * becomes active (rl_hier_enqueue()).
 */
void rl_hier_charge(struct rl_limiter *x, u64 count)
{
	struct rl_hnode *p;
	u64 step;
	bool sorted;

	for (; x->h.parent; x = x->h.parent) {
		p = &x->h.parent->h;
		step = mul_u64_u64_div_u64(min(count, RL_HIER_CHUNK_MAX),
					   RL_WEIGHT_MAX, x->h.weight);
		if (!x->h.active && rl_hier_before(x->h.vtag, p->kvtime))
			x->h.vtag = p->kvtime;
		p->kvtime = x->h.vtag;
		/* The parked are sorted by their ready time, not their tag. */
		sorted = x->h.active && !x->h.parked;
		if (sorted)
			rb_erase_cached(&x->h.knode, &p->kids);
		x->h.vtag += step;
		if (sorted)
			rb_add_cached(&x->h.knode, &p->kids, rl_hier_tag_less);
	}
}
