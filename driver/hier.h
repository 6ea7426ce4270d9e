/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Trees of limiters (hier.c, hier_tree.c): a named limiter may have a
 * parent, whose tokens and permits bound the sum of its children's. A
 * limiter without one is the root of a tree, of one node or more.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_HIER_H
#define _RL_HIER_H

#include <linux/list.h>
#include <linux/rbtree.h>
#include <linux/types.h>

struct rl_limiter;
struct rl_client;
struct rl_waiter;
struct rl_acquire;

/* Most ancestors a limiter may have: a tree has at most 5 levels. */
#define RL_HIER_DEPTH_MAX	4

/**
 * struct rl_hnode - a limiter's place in its tree
 * @parent:   the parent, NULL for a root; written under the registry lock
 *            and the tree's lock, read under either. A child holds a
 *            reference to its parent.
 * @children: its children (their @sibling)
 * @sibling:  entry in the parent's @children
 * @weight:   share among the parent's backlogged children, 1..RL_WEIGHT_MAX
 * @queued:   sleeping requests in its subtree (its own and its children's)
 * @vtag:     virtual time at which it is due at its parent
 * @ready:    while @parked, when it may be served again (U64_MAX: when a
 *            permit comes back in its subtree)
 * @kvtime:   tag of the child served last; activated children start no
 *            earlier
 * @knode:    entry in the parent's @kids while active and not @parked, in
 *            its @parked_kids while @parked
 * @kids:     children with sleeping requests, by @vtag
 * @parked_kids: children out of tokens or permits, by @ready
 * @active:   in one of the parent's trees
 * @parked:   in the parent's @parked_kids
 *
 * All but @parent, @children and @sibling are guarded by the tree's lock
 * alone; those three by both the registry lock and the tree's lock.
 */
struct rl_hnode {
	struct rl_limiter *parent;
	struct list_head children;
	struct list_head sibling;
	u32 weight;
	bool active;
	bool parked;
	u64 queued;
	u64 vtag;
	u64 ready;
	u64 kvtime;
	struct rb_node knode;
	struct rb_root_cached kids;
	struct rb_root_cached parked_kids;
};

/* registry side, under the registry lock (named.c) */
/* rl_hier_set_parent()'s @self when the move must not fail: a name's end. */
#define RL_HIER_FORCE	U64_MAX
int rl_hier_set_parent(struct rl_limiter *lim, struct rl_limiter *parent,
		       u32 weight, u64 self);
bool rl_hier_has_children(const struct rl_limiter *lim);
/* What rl_hier_show() shows. */
enum { RL_HIER_SHOW_PARENT, RL_HIER_SHOW_WEIGHT, RL_HIER_SHOW_CHILDREN };
ssize_t rl_hier_show(struct rl_limiter *lim, int what, char *buf);
struct rl_parent;
void rl_hier_get(struct rl_limiter *lim, struct rl_parent *rp, char *name);

#endif /* _RL_HIER_H */
