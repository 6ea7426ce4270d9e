/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Trees of limiters (tree.c): a named limiter may have a parent, whose
 * tokens and permits bound the sum of its children's.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_TREE_H
#define _RL_TREE_H

#include "ratelimit.h"

struct rl_parent;

/* rl_tree_set_parent()'s @self when the move must not fail: a name's end. */
#define RL_TREE_FORCE	U64_MAX
int rl_tree_set_parent(struct rl_limiter *lim, struct rl_limiter *parent, u32 weight, u64 self);

/* Does @lim have children? Stable under the registry lock. */
static inline bool rl_tree_has_children(const struct rl_limiter *lim)
{
	return !list_empty(&lim->h.children);
}

ssize_t rl_tree_show_children(struct rl_limiter *lim, char *buf);
void rl_tree_get(struct rl_limiter *lim, struct rl_parent *rp, char *name);

#endif /* _RL_TREE_H */
