// SPDX-License-Identifier: GPL-2.0-only
/*
 * The queue of a limiter, under its tree's lock: the order of service of
 * its sleeping requests, and of the limiters under it with sleepers.
 * USER goes first, then HIGH, MID and LOW, but one grant in `fairness`
 * takes the levels lowest first (RocksDB's GenericRateLimiter). In a
 * level, clients (fds) get start-time fair queuing: a client's requests of
 * one level form a flow, whose tag grows by chunk / weight per chunk; the
 * smallest tag goes next, and a waking flow starts at the level's virtual
 * time. A flow over its client's cap is parked, keeping its tag, until the
 * cap lets its head through. With fair_per_user, the flows are a user's
 * (struct rl_group) instead of a client's: all its clients' requests of a
 * level, in arrival order. Trees (Documentation/hierarchy.md) order the
 * children with sleepers the same way, by tokens / weight granted in their
 * subtrees (rl_share_charge()); a child out of its own tokens or permits
 * is parked until it has them.
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
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uidgid.h>

#include "queue.h"

/*
 * The clients of one user at a limiter, whose requests form one flow a
 * level under fair_per_user. It lives from the attach of the user's first
 * client to the detach of its last, in rl_limiter.groups. The limiter's
 * lock guards it; @uid is constant.
 */
struct rl_group {
	struct rb_node node;		/* in rl_limiter.groups, by @uid */
	kuid_t uid;			/* the user */
	u32 clients;			/* attached clients of @uid */
	struct rl_flow flows[RL_NLEVELS]; /* their sleeping requests, by level */
};

/* Chunks count for at most this many tokens in a virtual time step. */
#define RL_TAG_CHUNK_MAX	BIT_ULL(50)

/**
 * rl_queue_init() - empty queues for a new limiter, a root with no children
 * @lim: the limiter
 */
void rl_queue_init(struct rl_limiter *lim)
{
	int i;

	for (i = 0; i < RL_NLEVELS; i++)
		lim->levels[i].flows = RB_ROOT_CACHED;
	lim->capped = RB_ROOT_CACHED;
	INIT_LIST_HEAD(&lim->h.children);
	INIT_LIST_HEAD(&lim->h.sibling);
	lim->groups = RB_ROOT;
	lim->h.weight = 1;
	lim->h.kids = RB_ROOT_CACHED;
	lim->h.parked_kids = RB_ROOT_CACHED;
	RB_CLEAR_NODE(&lim->h.knode);
}

static void rl_flows_init(struct rl_flow *flows)
{
	int i;

	for (i = 0; i < RL_NLEVELS; i++) {
		INIT_LIST_HEAD(&flows[i].waiters);
		flows[i].level = i;
	}
}

/**
 * rl_client_init() - set a new client's flows and defaults
 * @client: the client: priority MID, weight 1, no cap
 * Return: 0, or -ENOMEM (then rl_client_fini() it all the same).
 */
int rl_client_init(struct rl_client *client)
{
	rl_flows_init(client->flows);
	client->level = RL_PRIO_MID - 1;
	client->weight = 1;
	/* Its user's group at the limiter it attaches to, if it is the first. */
	client->spare = kzalloc(sizeof(*client->spare), GFP_KERNEL_ACCOUNT);
	return client->spare ? 0 : -ENOMEM;
}

/**
 * rl_client_fini() - free the group rl_client_init() allocated, unless rl_queue_join() took it
 * @client: the client, attached or not
 */
void rl_client_fini(struct rl_client *client)
{
	kfree(client->spare);
	client->spare = NULL;
}

static int rl_group_cmp(struct rb_node *a, const struct rb_node *b)
{
	uid_t x = __kuid_val(rb_entry(a, struct rl_group, node)->uid);
	uid_t y = __kuid_val(rb_entry(b, struct rl_group, node)->uid);

	return x < y ? -1 : x > y;
}

/**
 * rl_queue_join() - put a client attaching to a named limiter in its user's group
 * @lim:    the limiter
 * @client: the client, in no group; its spare becomes the group if the user has none at @lim
 *
 * The one client of a private limiter needs no group: its flows are its user's.
 */
void rl_queue_join(struct rl_limiter *lim, struct rl_client *client)
{
	struct rl_group *g = client->spare;
	struct rb_node *old;

	lockdep_assert_held(lim->tlock);
	g->uid = client->uid;
	old = rb_find_add(&g->node, &lim->groups, rl_group_cmp);
	if (old) {
		g = rb_entry(old, struct rl_group, node);
	} else {
		client->spare = NULL;
		rl_flows_init(g->flows);
	}
	g->clients++;
	client->group = g;
}

/**
 * rl_queue_leave() - undo rl_queue_join() for a client with no request queued
 * @lim:    the limiter
 * @client: the client, in a group or (a private limiter's) not
 * Return: its group if it was the user's last client, to kfree() unlocked, else NULL.
 */
struct rl_group *rl_queue_leave(struct rl_limiter *lim, struct rl_client *client)
{
	struct rl_group *g = client->group;

	lockdep_assert_held(lim->tlock);
	if (!g)
		return NULL;
	client->group = NULL;
	if (--g->clients)
		return NULL;
	rb_erase(&g->node, &lim->groups);
	return g;
}

/**
 * rl_queue_flow() - the flow a new request of a client goes to
 * @lim:    the limiter
 * @client: an attached client of @lim
 * @level:  the request's level
 * Return: its user's flow under fair_per_user, else (or without a group) its own.
 */
struct rl_flow *rl_queue_flow(const struct rl_limiter *lim, struct rl_client *client,
			      u8 level)
{
	lockdep_assert_held(lim->tlock);
	if (lim->params.fair_per_user && client->group)
		return &client->group->flows[level];
	return &client->flows[level];
}

static bool rl_flow_less(struct rb_node *a, const struct rb_node *b)
{
	return rl_share_before(rb_entry(a, struct rl_flow, node)->vtag,
			       rb_entry(b, struct rl_flow, node)->vtag);
}

static u64 rl_tag_step(u64 chunk, u32 weight)
{
	return mul_u64_u64_div_u64(min(chunk, RL_TAG_CHUNK_MAX), RL_WEIGHT_MAX,
				   weight);
}

/* lim->queued is the waiters' want modulo 2^64, lim->queued_hi its wraps. */
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
 * rl_queue_add() - queue a sleeping request
 * @lim: the limiter
 * @w:   the request, with its flow, client and want set
 */
void rl_queue_add(struct rl_limiter *lim, struct rl_waiter *w)
{
	struct rl_flow *flow = w->flow;
	struct rl_level *lvl = &lim->levels[flow->level];

	lockdep_assert_held(lim->tlock);
	if (list_empty(&flow->waiters)) {
		if (rl_share_before(flow->vtag, lvl->vtime))
			flow->vtag = lvl->vtime;
		rb_add_cached(&flow->node, &lvl->flows, rl_flow_less);
	}
	list_add_tail(&w->node, &flow->waiters);
	rl_busy_add(lim);
	rl_share_count(lim, 1, true);
	rl_queued_add(lim, w->want);
}

static bool rl_flow_ready_less(struct rb_node *a, const struct rb_node *b)
{
	return rb_entry(a, struct rl_flow, node)->ready <
	       rb_entry(b, struct rl_flow, node)->ready;
}

/* Move a flow over its client's cap from its level to lim->capped. */
static void rl_park(struct rl_limiter *lim, struct rl_flow *flow, u64 ready)
{
	rb_erase_cached(&flow->node, &lim->levels[flow->level].flows);
	flow->ready = ready;
	flow->parked = true;
	rb_add_cached(&flow->node, &lim->capped, rl_flow_ready_less);
}

/* Put a parked flow back in its level, at its tag. */
static void rl_unpark(struct rl_limiter *lim, struct rl_flow *flow)
{
	rb_erase_cached(&flow->node, &lim->capped);
	flow->parked = false;
	rb_add_cached(&flow->node, &lim->levels[flow->level].flows,
		      rl_flow_less);
}

/**
 * rl_queue_unpark_client() - look again at a client's parked flows
 * @lim:    the limiter
 * @client: a client of @lim whose cap now lets more through than when its
 *          flows were parked: a new cap, or tokens given back to it
 */
void rl_queue_unpark_client(struct rl_limiter *lim, struct rl_client *client)
{
	int i;

	lockdep_assert_held(lim->tlock);
	for (i = 0; i < RL_NLEVELS; i++) {
		if (client->flows[i].parked)
			rl_unpark(lim, &client->flows[i]);
		/* Its user's: the head may be its own. */
		if (client->group && client->group->flows[i].parked)
			rl_unpark(lim, &client->group->flows[i]);
	}
}

/**
 * rl_queue_unpark_all() - look again at every parked flow (new limits)
 * @lim: the limiter
 */
void rl_queue_unpark_all(struct rl_limiter *lim)
{
	struct rb_node *node;

	lockdep_assert_held(lim->tlock);
	while ((node = rb_first_cached(&lim->capped)))
		rl_unpark(lim, rb_entry(node, struct rl_flow, node));
}

/**
 * rl_queue_unpark_due() - put back the flows their caps let through
 * @lim:    the limiter
 * @now:    current time, ns
 * @budget: flows it may move; decremented for each
 */
void rl_queue_unpark_due(struct rl_limiter *lim, u64 now,
			 unsigned int *budget)
{
	struct rb_node *node;
	struct rl_flow *flow;

	lockdep_assert_held(lim->tlock);
	while (*budget && (node = rb_first_cached(&lim->capped))) {
		flow = rb_entry(node, struct rl_flow, node);
		if (flow->ready > now)
			break;
		--*budget;
		rl_unpark(lim, flow);
	}
}

/**
 * rl_queue_del() - take a request that failed off the queue
 * @lim: the limiter
 * @w:   a queued request
 */
void rl_queue_del(struct rl_limiter *lim, struct rl_waiter *w)
{
	struct rl_flow *flow = w->flow;

	lockdep_assert_held(lim->tlock);
	/* Its head request may change: look at it again. */
	if (flow->parked)
		rl_unpark(lim, flow);
	list_del(&w->node);
	if (list_empty(&flow->waiters))
		rb_erase_cached(&flow->node, &lim->levels[flow->level].flows);
	rl_busy_sub(lim);
	rl_share_count(lim, 1, false);
	rl_queued_sub(lim, w->want);
}

/*
 * The first flow of @lvl whose head request fits under its client's cap;
 * the ones before it are parked, while @budget lasts.
 */
static struct rl_waiter *rl_pick_level(struct rl_limiter *lim,
				       struct rl_level *lvl, u64 now,
				       u64 *chunk, unsigned int *budget)
{
	struct rl_flow *flow;
	struct rl_waiter *w;
	struct rb_node *node;

	while ((node = rb_first_cached(&lvl->flows))) {
		flow = rb_entry(node, struct rl_flow, node);
		w = list_first_entry(&flow->waiters, struct rl_waiter, node);
		*chunk = min(w->want, rl_chunk_max(lim, w->client));
		if (rl_cap_allows(lim, w->client, *chunk, now))
			return w;
		if (!*budget)
			break;
		--*budget;
		rl_park(lim, flow, rl_cap_ready(lim, w->client, *chunk));
	}
	return NULL;
}

/**
 * rl_queue_pick() - the request to serve next
 * @lim:    the limiter
 * @now:    current time, ns, for the clients' caps
 * @chunk:  set to the tokens to grant it now
 * @budget: flows it may park on the way; decremented for each
 * Return: the request, or NULL when none is queued, every queued client
 * is at its cap, or @budget ran out (then it is 0).
 */
struct rl_waiter *rl_queue_pick(struct rl_limiter *lim, u64 now, u64 *chunk,
				unsigned int *budget)
{
	struct rl_waiter *w;
	int i, level;

	lockdep_assert_held(lim->tlock);
	if (!lim->nwaiters)
		return NULL;
	w = rl_pick_level(lim, &lim->levels[RL_LEVEL_USER], now, chunk, budget);
	for (i = 0; !w && *budget && i < RL_LEVEL_USER; i++) {
		level = lim->low_first ? i : RL_LEVEL_USER - 1 - i;
		w = rl_pick_level(lim, &lim->levels[level], now, chunk, budget);
	}
	return w;
}

/**
 * rl_queue_served() - a chunk was granted: the flow moves on in virtual time
 * @lim:   the limiter
 * @w:     the request rl_queue_pick() returned; leaves once it has all
 * @chunk: the tokens it was granted
 */
void rl_queue_served(struct rl_limiter *lim, struct rl_waiter *w, u64 chunk)
{
	struct rl_flow *flow = w->flow;
	struct rl_level *lvl = &lim->levels[flow->level];
	u32 fairness = lim->params.fairness;

	lockdep_assert_held(lim->tlock);
	lvl->vtime = flow->vtag;
	flow->vtag += rl_tag_step(chunk, w->client->weight);
	rb_erase_cached(&flow->node, &lvl->flows);
	w->want -= chunk;
	rl_queued_sub(lim, chunk);
	if (!w->want) {
		list_del(&w->node);
		rl_busy_sub(lim);
		rl_share_count(lim, 1, false);
	} else {
		/* Between chunks, the client's other requests go first. */
		list_move_tail(&w->node, &flow->waiters);
	}
	if (!list_empty(&flow->waiters))
		rb_add_cached(&flow->node, &lvl->flows, rl_flow_less);
	lim->low_first = fairness && get_random_u32() % fairness == 0;
}

/**
 * rl_queue_cap_ready() - when the first parked flow fits its cap, or U64_MAX
 * @lim: the limiter
 */
u64 rl_queue_cap_ready(struct rl_limiter *lim)
{
	struct rb_node *node = rb_first_cached(&lim->capped);

	lockdep_assert_held(lim->tlock);
	return node ? rb_entry(node, struct rl_flow, node)->ready : U64_MAX;
}

static bool rl_share_tag_less(struct rb_node *a, const struct rb_node *b)
{
	return rl_share_before(rb_entry(a, struct rl_limiter, h.knode)->h.vtag,
			       rb_entry(b, struct rl_limiter, h.knode)->h.vtag);
}

static bool rl_share_ready_less(struct rb_node *a, const struct rb_node *b)
{
	return rb_entry(a, struct rl_limiter, h.knode)->h.ready <
	       rb_entry(b, struct rl_limiter, h.knode)->h.ready;
}

/* Put @x, becoming active, among its parent's kids: no earlier than the last. */
void rl_share_enqueue(struct rl_limiter *x)
{
	struct rl_hnode *p = &x->h.parent->h;

	if (rl_share_before(x->h.vtag, p->kvtime))
		x->h.vtag = p->kvtime;
	x->h.parked = false;
	rb_add_cached(&x->h.knode, &p->kids, rl_share_tag_less);
}

void rl_share_dequeue(struct rl_limiter *x)
{
	struct rl_hnode *p = &x->h.parent->h;

	rb_erase_cached(&x->h.knode, x->h.parked ? &p->parked_kids : &p->kids);
	x->h.parked = false;
}

/* Add @n sleeping requests to the subtrees from @x up, or take them. */
void rl_share_count(struct rl_limiter *x, u64 n, bool add)
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
			rl_share_enqueue(x);
		else
			rl_share_dequeue(x);
	}
}

/* @x is out of tokens or permits until @ready: off its parent's kids. */
void rl_share_park(struct rl_limiter *x, u64 ready)
{
	struct rl_hnode *p = &x->h.parent->h;

	rb_erase_cached(&x->h.knode, &p->kids);
	x->h.ready = ready;
	x->h.parked = true;
	rb_add_cached(&x->h.knode, &p->parked_kids, rl_share_ready_less);
}

/* Put a parked @x back among its parent's kids, keeping its tag. */
void rl_share_unpark(struct rl_limiter *x)
{
	struct rl_hnode *p = &x->h.parent->h;

	rb_erase_cached(&x->h.knode, &p->parked_kids);
	x->h.parked = false;
	rb_add_cached(&x->h.knode, &p->kids, rl_share_tag_less);
}

/* Put back the kids of @x parked until @now at the latest. */
void rl_share_unpark_due(struct rl_limiter *x, u64 now, unsigned int *budget)
{
	struct rb_node *node;
	struct rl_limiter *kid;

	while (*budget && (node = rb_first_cached(&x->h.parked_kids))) {
		kid = rb_entry(node, struct rl_limiter, h.knode);
		if (kid->h.ready > now)
			break;
		--*budget;
		rl_share_unpark(kid);
	}
}

/* When the subtree of @x may go on by itself: its fds' caps, its kids. */
u64 rl_share_next(struct rl_limiter *x)
{
	struct rb_node *node = rb_first_cached(&x->h.parked_kids);
	u64 kid = node ? rb_entry(node, struct rl_limiter, h.knode)->h.ready :
			 U64_MAX;

	return min(kid, rl_queue_cap_ready(x));
}

/**
 * rl_share_charge() - move the tags of a path for tokens granted below
 * @x:     the limiter they were granted at
 * @count: tokens
 *
 * Each child on the path is charged @count / weight, an immediate grant
 * too, so that none takes more than its share while a sibling waits.
 */
void rl_share_charge(struct rl_limiter *x, u64 count)
{
	struct rl_hnode *p;
	u64 step;
	bool sorted;

	for (; x->h.parent; x = x->h.parent) {
		p = &x->h.parent->h;
		step = rl_tag_step(count, x->h.weight);
		if (!x->h.active && rl_share_before(x->h.vtag, p->kvtime))
			x->h.vtag = p->kvtime;
		p->kvtime = x->h.vtag;
		/* The parked are sorted by their ready time, not their tag. */
		sorted = x->h.active && !x->h.parked;
		if (sorted)
			rb_erase_cached(&x->h.knode, &p->kids);
		x->h.vtag += step;
		if (sorted)
			rb_add_cached(&x->h.knode, &p->kids, rl_share_tag_less);
	}
}

/**
 * rl_cap_params() - limits of a client's own bucket
 * @lim:    the limiter
 * @client: a client of @lim with a cap
 * @cp:     set to @client's cap per period of @lim, with a burst of the
 *          cap, as far as burst * period fits
 */
void rl_cap_params(const struct rl_limiter *lim,
		   const struct rl_client *client, struct rl_params *cp)
{
	u64 period = lim->params.period;

	/* A cap above what the arithmetic holds is no cap in practice. */
	*cp = (struct rl_params) {
		.rate = client->cap,
		.period = period,
		.burst = min(client->cap, RL_TOKENS_BURST_PERIOD_MAX / period),
	};
}

/**
 * rl_cap_allows() - does @client have no cap, or @chunk tokens under it?
 * @lim:    the limiter
 * @client: a client of @lim; its cap bucket is refilled
 * @chunk:  tokens
 * @now:    current time, ns
 */
bool rl_cap_allows(const struct rl_limiter *lim, struct rl_client *client,
		   u64 chunk, u64 now)
{
	struct rl_params cp;

	if (!client->cap)
		return true;
	rl_cap_params(lim, client, &cp);
	rl_bucket_refill(&client->cap_bucket, &cp, now);
	return client->cap_bucket.tokens >= chunk;
}

/**
 * rl_cap_ready() - when a client's cap bucket holds @n tokens, ns
 * @lim:    the limiter
 * @client: a client of @lim; 0 if it has no cap
 * @n:      tokens
 */
u64 rl_cap_ready(const struct rl_limiter *lim, const struct rl_client *client,
		 u64 n)
{
	struct rl_params cp;

	if (!client->cap)
		return 0;
	rl_cap_params(lim, client, &cp);
	return rl_bucket_ready(&client->cap_bucket, &cp, n);
}

/**
 * rl_chunk_max() - most tokens a client is granted at once: the burst
 * (unbounded when unlimited), or its cap's if less
 * @lim:    the limiter
 * @client: a client of @lim
 */
u64 rl_chunk_max(const struct rl_limiter *lim, const struct rl_client *client)
{
	u64 max = lim->params.unlimited ? U64_MAX : lim->params.burst;
	struct rl_params cp;

	if (!client->cap)
		return max;
	rl_cap_params(lim, client, &cp);
	return min(max, cp.burst);
}
