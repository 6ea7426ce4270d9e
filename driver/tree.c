// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shape of trees of limiters (Documentation/hierarchy.md). A tree has
 * one lock, its root's (rl_limiter.tlock). A move checks depth and cycles
 * under the registry lock (which serialises moves) and both trees' locks,
 * the second nested, and repoints the subtree's tlock: a task spinning on
 * the old lock then locks the new one (rl_lock_irq()).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/lockdep.h>
#include <linux/rbtree.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "fast.h"
#include "limiter.h"
#include "queue.h"
#include "tree.h"

/* Levels below @x: 0 for a leaf. */
static unsigned int rl_tree_height(const struct rl_limiter *x)
{
	const struct rl_limiter *kid;
	unsigned int h = 0;

	list_for_each_entry(kid, &x->h.children, h.sibling)
		h = max(h, rl_tree_height(kid) + 1);
	return h;
}

/* Point the locks of the subtree of @x at @l. */
static void rl_tree_set_lock(struct rl_limiter *x, spinlock_t *l)
{
	struct rl_limiter *kid;

	WRITE_ONCE(x->tlock, l);
	list_for_each_entry(kid, &x->h.children, h.sibling)
		rl_tree_set_lock(kid, l);
}

/* Take the subtree of @x out of its parent's counts. */
static void rl_tree_cut(struct rl_limiter *x)
{
	struct rl_limiter *p = x->h.parent, *y;

	if (x->h.active) {
		rl_share_dequeue(x);
		x->h.active = false;
	}
	rl_share_count(p, x->h.queued, false);
	for (y = p; y; y = y->h.parent)
		y->held -= x->held;
	list_del_init(&x->h.sibling);
	x->h.parent = NULL;
}

/* Put the subtree of @x, parentless, under @p. */
static void rl_tree_join(struct rl_limiter *x, struct rl_limiter *p)
{
	struct rl_limiter *y;

	x->h.parent = p;
	list_add_tail(&x->h.sibling, &p->h.children);
	for (y = p; y; y = y->h.parent)
		y->held += x->held;
	if (x->h.queued) {
		x->h.active = true;
		rl_share_enqueue(x);
		rl_share_count(p, x->h.queued, true);
	}
}

/* Can @x go under @parent? */
static int rl_tree_check(struct rl_limiter *x, struct rl_limiter *parent)
{
	struct rl_limiter *y;
	unsigned int depth = 1;

	/* A keyed limiter's bucket serves no request: no child would get tokens. */
	if (x->keys || (parent && parent->keys))
		return -EINVAL;
	for (y = parent; y; y = y->h.parent, depth++)
		if (y == x)
			return -ELOOP;
	/* depth counts the ancestors @x would have, plus one. */
	if (depth - 1 + rl_tree_height(x) > RL_HIER_DEPTH_MAX)
		return -EMLINK;
	return 0;
}

/* Move @x under @parent (NULL: a root), with both trees locked. */
static void rl_tree_move(struct rl_limiter *x, struct rl_limiter *parent, spinlock_t *l, u64 now)
{
	struct rl_limiter *old = x->h.parent;

	/* Neither keeps reservations: grants in a tree go through every level. */
	rl_fast_reclaim(x);
	if (parent)
		rl_fast_reclaim(parent);
	if (old)
		rl_tree_cut(x);
	rl_tree_set_lock(x, l);
	if (parent)
		rl_tree_join(x, parent);
	if (old)
		rl_dispatch(old, now);
	rl_dispatch(x, now);
}

/**
 * rl_tree_set_parent() - move a limiter under another one
 * @lim:    a named limiter in the registry
 * @parent: another one, or NULL to make @lim a root
 * @weight: @lim's share among its parent's children, 1..RL_WEIGHT_MAX
 * @self:   clients of @lim the caller speaks for (rl_move_busy()), or
 *          RL_TREE_FORCE for a move that must not fail
 *
 * Called under the registry lock. Sleeping requests, permits held and
 * tokens stay where they are; the ancestors' counts follow the subtree. The
 * reference on the old parent moves to the new one.
 *
 * Return: 0, -ELOOP if @parent is in the subtree of @lim, -EMLINK if a
 * limiter would get more than RL_HIER_DEPTH_MAX ancestors, -EBUSY if the
 * move would switch the subtree between a path that limits concurrency and
 * one that does not while other clients use it; nothing changed on error.
 */
int rl_tree_set_parent(struct rl_limiter *lim, struct rl_limiter *parent, u32 weight, u64 self)
{
	struct rl_limiter *old = lim->h.parent;
	spinlock_t *ol, *nl;
	int ret;

	if (parent == old) {
		rl_lock_irq(lim);
		lim->h.weight = weight;
		rl_unlock_irq(lim);
		return 0;
	}
	ret = parent ? rl_tree_check(lim, parent) : 0;
	if (ret)
		return ret;
	if (parent)
		rl_limiter_get(parent);
	/* Both stable: only moves change them, under the registry lock. */
	ol = lim->tlock;
	nl = parent ? parent->tlock : &lim->lock;
	spin_lock_irq(ol);
	if (nl != ol)
		spin_lock_nested(nl, SINGLE_DEPTH_NESTING);
	else
		__acquire(nl);
	if (self != RL_TREE_FORCE && rl_move_busy(lim, old, parent, self)) {
		ret = -EBUSY;
		goto out_unlock;
	}
	lim->h.weight = weight;
	rl_tree_move(lim, parent, nl, ktime_get_ns());
out_unlock:
	if (nl != ol)
		spin_unlock(nl);
	else
		__release(nl);
	spin_unlock_irq(ol);
	if (ret)
		old = parent;	/* its reference, taken above, goes instead */
	if (old)
		rl_limiter_put(old);
	return ret;
}

/**
 * rl_tree_get() - a limiter's place in its tree, for RL_IOC_GET_PARENT and sysfs config
 * @lim:  the limiter
 * @rp:   its weight, depth and number of children are filled in
 * @name: set to its parent's name, "" for a root
 */
void rl_tree_get(struct rl_limiter *lim, struct rl_parent *rp, char *name)
{
	struct rl_limiter *x;
	struct list_head *pos;

	rl_lock_irq(lim);
	name[0] = '\0';
	if (lim->h.parent)
		strscpy(name, lim->h.parent->name, RL_NAME_MAX);
	rp->weight = lim->h.weight;
	for (x = lim->h.parent; x; x = x->h.parent)
		rp->depth++;
	list_for_each(pos, &lim->h.children)
		rp->children++;
	rl_unlock_irq(lim);
}

/**
 * rl_tree_show_children() - sysfs children: their names, one a line, up to a page
 * @lim:  the limiter
 * @buf:  the page
 *
 * Takes only the tree's lock (links change under both it and the registry
 * lock, which a sysfs callback may not take).
 *
 * Return: the length written.
 */
ssize_t rl_tree_show_children(struct rl_limiter *lim, char *buf)
{
	struct rl_limiter *kid;
	int len = 0;

	rl_lock_irq(lim);
	list_for_each_entry(kid, &lim->h.children, h.sibling) {
		if (len + strlen(kid->name) + 2 > PAGE_SIZE)
			break;
		len += sysfs_emit_at(buf, len, "%s\n", kid->name);
	}
	rl_unlock_irq(lim);
	return len;
}
