// SPDX-License-Identifier: GPL-2.0-only
/*
 * Order of service of a limiter's sleeping requests.
 *
 * USER requests go first. HIGH, MID and LOW follow in that order, except
 * that one grant in `fairness` takes the levels lowest first, so that low
 * priority never starves (as RocksDB's GenericRateLimiter does).
 *
 * Within a level, clients (fds) are served by start-time fair queuing.
 * The requests of one client at one level form a flow, in arrival order.
 * A flow's virtual time tag grows by chunk / weight with every chunk it is
 * granted, and the flow with the smallest tag goes next: backlogged clients
 * share the tokens in proportion to their weights, however many threads
 * each has, and a client that asks for little gets all it asks (max-min).
 * A flow that wakes up starts at the level's current virtual time, so being
 * idle earns no credit. A client's cap, when set, bounds its tokens per
 * period with a token bucket of its own; a capped-out flow lets the next
 * one go.
 *
 * Everything here runs under the limiter's lock.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/bits.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/overflow.h>
#include <linux/random.h>
#include <linux/rbtree.h>

#include "limiter.h"

/* Chunks count for at most this many tokens in a virtual time step. */
#define RL_TAG_CHUNK_MAX	BIT_ULL(50)

/**
 * rl_sched_init() - empty the levels of a new limiter
 * @lim: the limiter
 */
void rl_sched_init(struct rl_limiter *lim)
{
	int i;

	for (i = 0; i < RL_NLEVELS; i++)
		lim->levels[i].flows = RB_ROOT_CACHED;
}

/**
 * rl_client_init() - set a new client's flows and defaults
 * @client: the client: priority MID, weight 1, no cap
 */
void rl_client_init(struct rl_client *client)
{
	int i;

	for (i = 0; i < RL_NLEVELS; i++) {
		INIT_LIST_HEAD(&client->flows[i].waiters);
		client->flows[i].level = i;
	}
	client->level = RL_PRIO_MID - 1;
	client->weight = 1;
}

/* Tags wrap around: compare them as CFS compares vruntime. */
static bool rl_tag_before(u64 a, u64 b)
{
	return (s64)(a - b) < 0;
}

static bool rl_flow_less(struct rb_node *a, const struct rb_node *b)
{
	return rl_tag_before(rb_entry(a, struct rl_flow, node)->vtag,
			     rb_entry(b, struct rl_flow, node)->vtag);
}

static u64 rl_tag_step(u64 chunk, u32 weight)
{
	return mul_u64_u64_div_u64(min(chunk, RL_TAG_CHUNK_MAX), RL_WEIGHT_MAX,
				   weight);
}

/*
 * The waiters want @n tokens more, or less: lim->queued is the sum modulo
 * 2^64, lim->queued_hi counts its wraps, so the sum stays exact without
 * walking the queue.
 */
static void rl_queued_add(struct rl_limiter *lim, u64 n)
{
	if (check_add_overflow(lim->queued, n, &lim->queued))
		lim->queued_hi++;
}

static void rl_queued_sub(struct rl_limiter *lim, u64 n)
{
	if (check_sub_overflow(lim->queued, n, &lim->queued))
		lim->queued_hi--;
}

/**
 * rl_sched_add() - queue a sleeping request
 * @lim: the limiter
 * @w:   the request, with its flow, client and want set
 */
void rl_sched_add(struct rl_limiter *lim, struct rl_waiter *w)
{
	struct rl_flow *flow = w->flow;
	struct rl_level *lvl = &lim->levels[flow->level];

	lockdep_assert_held(&lim->lock);
	if (list_empty(&flow->waiters)) {
		if (rl_tag_before(flow->vtag, lvl->vtime))
			flow->vtag = lvl->vtime;
		rb_add_cached(&flow->node, &lvl->flows, rl_flow_less);
	}
	list_add_tail(&w->node, &flow->waiters);
	lim->nwaiters++;
	rl_queued_add(lim, w->want);
}

/**
 * rl_sched_del() - take a request that failed off the queue
 * @lim: the limiter
 * @w:   a queued request
 */
void rl_sched_del(struct rl_limiter *lim, struct rl_waiter *w)
{
	struct rl_flow *flow = w->flow;

	lockdep_assert_held(&lim->lock);
	list_del(&w->node);
	if (list_empty(&flow->waiters))
		rb_erase_cached(&flow->node, &lim->levels[flow->level].flows);
	lim->nwaiters--;
	rl_queued_sub(lim, w->want);
}

static struct rl_waiter *rl_pick_level(struct rl_limiter *lim,
				       struct rl_level *lvl, u64 now,
				       u64 *chunk)
{
	struct rl_waiter *w;
	struct rb_node *node;

	for (node = rb_first_cached(&lvl->flows); node; node = rb_next(node)) {
		w = list_first_entry(&rb_entry(node, struct rl_flow,
					       node)->waiters,
				     struct rl_waiter, node);
		*chunk = min(w->want, rl_chunk_max(lim, w->client));
		if (rl_cap_allows(lim, w->client, *chunk, now))
			return w;
	}
	return NULL;
}

/**
 * rl_sched_pick() - the request to serve next
 * @lim:   the limiter
 * @now:   current time, ns, for the clients' caps
 * @chunk: set to the tokens to grant it now
 *
 * Return: the request, or NULL when none is queued or every queued client
 * is at its cap.
 */
struct rl_waiter *rl_sched_pick(struct rl_limiter *lim, u64 now, u64 *chunk)
{
	struct rl_waiter *w;
	int i, level;

	lockdep_assert_held(&lim->lock);
	if (!lim->nwaiters)
		return NULL;
	w = rl_pick_level(lim, &lim->levels[RL_LEVEL_USER], now, chunk);
	for (i = 0; !w && i < RL_LEVEL_USER; i++) {
		level = lim->low_first ? i : RL_LEVEL_USER - 1 - i;
		w = rl_pick_level(lim, &lim->levels[level], now, chunk);
	}
	return w;
}

/**
 * rl_sched_served() - account for a chunk granted to a request
 * @lim:   the limiter
 * @w:     the request rl_sched_pick() returned
 * @chunk: the tokens it was granted
 *
 * The client's flow moves on in virtual time, and the request leaves the
 * queue once it has all its tokens.
 */
void rl_sched_served(struct rl_limiter *lim, struct rl_waiter *w, u64 chunk)
{
	struct rl_flow *flow = w->flow;
	struct rl_level *lvl = &lim->levels[flow->level];
	u32 fairness = lim->params.fairness;

	lockdep_assert_held(&lim->lock);
	lvl->vtime = flow->vtag;
	flow->vtag += rl_tag_step(chunk, w->client->weight);
	rb_erase_cached(&flow->node, &lvl->flows);
	w->want -= chunk;
	rl_queued_sub(lim, chunk);
	if (!w->want) {
		list_del(&w->node);
		lim->nwaiters--;
	} else {
		/* Between chunks, the client's other requests go first. */
		list_move_tail(&w->node, &flow->waiters);
	}
	if (!list_empty(&flow->waiters))
		rb_add_cached(&flow->node, &lvl->flows, rl_flow_less);
	lim->low_first = fairness && get_random_u32() % fairness == 0;
}

/**
 * rl_sched_cap_ready() - when a client at its cap can go on
 * @lim: the limiter
 *
 * Return: the earliest time the head request of a capped-out flow fits
 * under its client's cap again, or U64_MAX.
 */
u64 rl_sched_cap_ready(struct rl_limiter *lim)
{
	struct rl_waiter *w;
	struct rb_node *node;
	u64 when = U64_MAX;
	int i;

	lockdep_assert_held(&lim->lock);
	for (i = 0; i < RL_NLEVELS; i++) {
		for (node = rb_first_cached(&lim->levels[i].flows); node;
		     node = rb_next(node)) {
			w = list_first_entry(&rb_entry(node, struct rl_flow,
						       node)->waiters,
					     struct rl_waiter, node);
			if (!w->client->cap)
				continue;
			when = min(when, rl_cap_ready(lim, w->client,
						      min(w->want,
							  rl_chunk_max(lim, w->client))));
		}
	}
	return when;
}
