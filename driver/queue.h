/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The queue of a limiter (queue.c): its sleeping requests by priority and
 * client, the limiters under it with sleeping requests, and the clients'
 * caps. Everything here runs under the limiter's lock (rl_lock_irq()).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_QUEUE_H
#define _RL_QUEUE_H

#include <linux/ktime.h>
#include <linux/rbtree.h>

#include "ratelimit.h"

/* The order of a limiter's own requests */
int rl_client_init(struct rl_client *client);
void rl_client_fini(struct rl_client *client);
void rl_queue_init(struct rl_limiter *lim);
void rl_queue_join(struct rl_limiter *lim, struct rl_client *client);
struct rl_group *rl_queue_leave(struct rl_limiter *lim, struct rl_client *client);
struct rl_flow *rl_queue_flow(const struct rl_limiter *lim, struct rl_client *client,
			      u8 level);
void rl_queue_add(struct rl_limiter *lim, struct rl_waiter *w);
void rl_queue_del(struct rl_limiter *lim, struct rl_waiter *w);
struct rl_waiter *rl_queue_pick(struct rl_limiter *lim, u64 now, u64 *chunk,
				unsigned int *budget);
void rl_queue_served(struct rl_limiter *lim, struct rl_waiter *w, u64 chunk);
u64 rl_queue_cap_ready(struct rl_limiter *lim);
void rl_queue_unpark_client(struct rl_limiter *lim, struct rl_client *client);
void rl_queue_unpark_all(struct rl_limiter *lim);
void rl_queue_unpark_due(struct rl_limiter *lim, u64 now,
			 unsigned int *budget);

/* Clients' caps */
void rl_cap_params(const struct rl_limiter *lim,
		   const struct rl_client *client, struct rl_params *cp);
bool rl_cap_allows(const struct rl_limiter *lim, struct rl_client *client,
		   u64 chunk, u64 now);
u64 rl_cap_ready(const struct rl_limiter *lim, const struct rl_client *client,
		 u64 n);
u64 rl_chunk_max(const struct rl_limiter *lim, const struct rl_client *client);

/* The order of a tree's limiters */
void rl_share_enqueue(struct rl_limiter *x);
void rl_share_dequeue(struct rl_limiter *x);
void rl_share_count(struct rl_limiter *x, u64 n, bool add);
void rl_share_park(struct rl_limiter *x, u64 ready);
void rl_share_unpark(struct rl_limiter *x);
void rl_share_unpark_due(struct rl_limiter *x, u64 now, unsigned int *budget);
u64 rl_share_next(struct rl_limiter *x);
void rl_share_charge(struct rl_limiter *x, u64 count);

/* The root of the tree of @lim: @lim itself when it has no parent. */
static inline struct rl_limiter *rl_root_of(struct rl_limiter *lim)
{
	while (lim->h.parent)
		lim = lim->h.parent;
	return lim;
}

/* Tags wrap around: compare them as CFS compares vruntime. */
static inline bool rl_share_before(u64 a, u64 b)
{
	return (s64)(a - b) < 0;
}

/*
 * May @x, which has a parent, take the parent's tokens: does no active,
 * unparked sibling have a smaller tag than the one @x has (or would have
 * if it queued now)?
 */
static inline bool rl_share_turn(const struct rl_limiter *x)
{
	const struct rl_hnode *p = &x->h.parent->h;
	struct rb_node *node = rb_first_cached(&p->kids);
	const struct rl_limiter *first;
	u64 tag = x->h.vtag;

	if (!node)
		return true;
	first = rb_entry(node, struct rl_limiter, h.knode);
	if (first == x)
		return true;
	if (!x->h.active && rl_share_before(tag, p->kvtime))
		tag = p->kvtime;
	return rl_share_before(tag, first->h.vtag);
}

/* A request goes to sleep: the limiter is busy from the first one on. */
static inline void rl_busy_add(struct rl_limiter *lim)
{
	if (!lim->nwaiters++)
		lim->global.busy_since = ktime_get_ns();
}

/* A request leaves the queue: the last one ends the busy time. */
static inline void rl_busy_sub(struct rl_limiter *lim)
{
	if (!--lim->nwaiters)
		lim->global.busy_ns += ktime_get_ns() - lim->global.busy_since;
}

#endif /* _RL_QUEUE_H */
