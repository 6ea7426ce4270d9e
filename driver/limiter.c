// SPDX-License-Identifier: GPL-2.0-only
/*
 * Limiter core of the ratelimit module: a token bucket with a queue of
 * requests sleeping for tokens, and the hrtimer that serves them. This
 * file holds a limiter's lifetime, its limits and clients, and the reading
 * of its state; acquire.c takes tokens (and gives back those of a request
 * that fails), release.c gives back permits and tokens, dispatch.c serves
 * the queue of the limiter's tree, bucket.c keeps the buckets, sched.c
 * and hier.c decide whose turn it is (limiter.h).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/atomic.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/minmax.h>
#include <linux/slab.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/string.h>

#include "compat.h"
#include "limiter.h"
#include "ratelimit_trace.h"

/*
 * Limiters, clients and wait histograms, in caches of their own: struct
 * rl_limiter is a little under 1 KiB, struct rl_client a little under 512
 * bytes and a histogram 520 bytes, and kmalloc() would round them up to
 * 1 KiB, 512 bytes and 1 KiB. A limiter gets its histogram when a request
 * first waits: an idle one, or one that always grants at once, has none.
 */
#define RL_HIST_SIZE	(RL_HIST_BUCKETS * sizeof(u64))
static struct kmem_cache *rl_limiter_cache;
static struct kmem_cache *rl_client_cache;
static struct kmem_cache *rl_hist_cache;

/**
 * rl_limiter_init() - set up the allocation of limiters, clients and wait
 * histograms, at module load
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
	rl_hist_cache = kmem_cache_create("rl_hist", RL_HIST_SIZE,
					  __alignof__(u64), SLAB_ACCOUNT, NULL);
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
 * rl_limiter_exit() - undo rl_limiter_init(), every limiter and client
 * freed
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
 * rl_client_alloc() - allocate a client, for open()
 *
 * Return: the client, zeroed but for its flows and defaults
 * (rl_client_init()), or NULL when out of memory.
 */
struct rl_client *rl_client_alloc(void)
{
	struct rl_client *client;

	client = kmem_cache_zalloc(rl_client_cache, GFP_KERNEL_ACCOUNT);
	if (client)
		rl_client_init(client);
	return client;
}

/**
 * rl_client_free() - free a client of rl_client_alloc()
 * @client: the client, detached
 */
void rl_client_free(struct rl_client *client)
{
	kmem_cache_free(rl_client_cache, client);
}

/*
 * Global limits: what an agent sharing one capacity among hosts (such as
 * rlsyncd) needs of a local limiter. The kernel still does all the
 * enforcement; the agent only feeds and sizes the limiter.
 *
 * - RL_CONFIG_FED: time adds no tokens (rl_refill() skips the refill), so
 *   the limiter serves what RL_IOC_DEPOSIT adds, up to the burst; the
 *   excess goes back to the agent.
 * - RL_IOC_SET_LEASE: limits that hold until a deadline, then a fallback
 *   that the kernel applies itself, at once if the fd that set the lease
 *   is closed (the agent died). The lease is limiter state (struct
 *   rl_global): its timer takes the limiter's lock and applies the
 *   fallback as the limiter's own timer serves the queue.
 * - RL_IOC_GET_DEMAND: tokens asked and refused, kept under the limiter's
 *   lock; tokens queued (the queue keeps the sum); time with a sleeper,
 *   started and stopped when the sleepers go from 0 to 1 and back
 *   (rl_busy_add()). No walk, no allocation.
 */

/*
 * End the lease: the fallback limits apply. SET_LEASE refused a fallback
 * whose concurrency goes between 0 and non-zero while other clients are
 * attached; if the concurrency in force changed since (while nobody else
 * was attached) and clients came, the fallback keeps it rather than
 * strand them (rl_conc_switch_busy()).
 */
static void rl_lease_end(struct rl_limiter *lim, u64 now, u64 self)
{
	struct rl_global *g = &lim->global;
	struct rl_params fb = g->fallback;

	lockdep_assert_held(lim->tlock);
	g->lease_end = 0;
	g->holder = NULL;
	g->holder_pid = 0;
	/* A callback already running finds no lease and does nothing. */
	hrtimer_try_to_cancel(&g->lease_timer);
	if (rl_conc_switch_busy(lim, &fb, self))
		fb.concurrency = lim->params.concurrency;
	rl_apply_params(lim, &fb, now);
}

static enum hrtimer_restart rl_lease_timer_fn(struct hrtimer *timer)
{
	struct rl_limiter *lim = container_of(timer, struct rl_limiter,
					      global.lease_timer);
	u64 now = ktime_get_ns();
	unsigned long flags;

	flags = rl_lock_irqsave(lim);
	/* A renewal that raced with this callback started the timer again. */
	if (lim->global.lease_end && now >= lim->global.lease_end)
		rl_lease_end(lim, now, 0);
	rl_unlock_irqrestore(lim, flags);
	return HRTIMER_NORESTART;
}

/* A new limiter, not shared yet, has no lease. */
static void rl_lease_init(struct rl_limiter *lim)
{
	hrtimer_setup(&lim->global.lease_timer, rl_lease_timer_fn,
		      CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
}

/* @client leaves @lim, locked: a lease it holds ends now. */
static void rl_lease_detach(struct rl_limiter *lim, struct rl_client *client,
		      u64 now)
{
	lockdep_assert_held(lim->tlock);
	/* @client no longer counts among the clients. */
	if (lim->global.lease_end && lim->global.holder == client)
		rl_lease_end(lim, now, 0);
}

/**
 * rl_limiter_create() - allocate a limiter with a full bucket
 * @p: its limits, validated by rl_params_check()
 *
 * Return: the limiter, with one reference for the caller, or NULL when out
 * of memory.
 */
struct rl_limiter *rl_limiter_create(const struct rl_params *p)
{
	struct rl_limiter *lim;

	lim = kmem_cache_zalloc(rl_limiter_cache, GFP_KERNEL_ACCOUNT);
	if (!lim)
		return NULL;
	spin_lock_init(&lim->lock);
	lim->tlock = &lim->lock;
	rl_hier_init(lim);
	rl_sched_init(lim);
	INIT_LIST_HEAD(&lim->clients);
	INIT_LIST_HEAD(&lim->pollers);
	INIT_LIST_HEAD(&lim->node);
	kref_init(&lim->ref);
	lim->params = *p;
	rl_bucket_init(&lim->bucket, p, ktime_get_ns());
	lim->release.stamp = lim->bucket.stamp;
	hrtimer_setup(&lim->timer, rl_timer_fn, CLOCK_MONOTONIC,
		      HRTIMER_MODE_ABS);
	rl_lease_init(lim);
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

/* The grace period after rl_limiter_free() is over: nobody sees @lim. */
static void rl_limiter_free_rcu(struct rcu_head *rcu)
{
	struct rl_limiter *lim = container_of(rcu, struct rl_limiter, rcu);

	if (lim->hist)
		kmem_cache_free(rl_hist_cache, lim->hist);
	kmem_cache_free(rl_limiter_cache, lim);
}

/* The last reference is gone: no client, no sysfs directory. */
static void rl_limiter_free(struct kref *ref)
{
	struct rl_limiter *lim = container_of(ref, struct rl_limiter, ref);

	WARN_ON_ONCE(lim->nwaiters || !list_empty(&lim->clients) ||
		     lim->h.parent || !list_empty(&lim->h.children));
	/* First the lease's timer: its fallback could start the other. */
	hrtimer_cancel(&lim->global.lease_timer);
	hrtimer_cancel(&lim->timer);
	/* A former child may be in rl_lock_irq() on our lock. */
	call_rcu(&lim->rcu, rl_limiter_free_rcu);
}

/**
 * rl_limiter_put() - drop a reference to a limiter
 * @lim: the limiter; freed with the last reference
 *
 * Takes no lock; may sleep (it cancels the timer of the limiter it frees).
 */
void rl_limiter_put(struct rl_limiter *lim)
{
	kref_put(&lim->ref, rl_limiter_free);
}

/**
 * rl_limiter_attach() - make a client's pollers hear about the limiter
 * @lim:    the limiter
 * @client: the client, not attached to any limiter
 *
 * Pollers that slept before the client had a limiter are woken to look.
 */
void rl_limiter_attach(struct rl_limiter *lim, struct rl_client *client)
{
	rl_lock_irq(lim);
	list_add_tail(&client->node, &lim->clients);
	/* Read without the lock by sysfs. */
	WRITE_ONCE(lim->nclients, lim->nclients + 1);
	rl_unlock_irq(lim);
	wake_up_poll(&client->pollq, EPOLLIN | EPOLLRDNORM);
}

/**
 * rl_limiter_detach() - undo rl_limiter_attach()
 * @lim:    the limiter
 * @client: the client, attached to @lim, not polled and with no request
 *
 * The permits the client holds go back (the holder may have been killed).
 *
 * Return: the number of clients still attached.
 */
u64 rl_limiter_detach(struct rl_limiter *lim, struct rl_client *client)
{
	u64 left;

	rl_lock_irq(lim);
	list_del_init(&client->node);
	list_del_init(&client->poll_node);
	left = lim->nclients - 1;
	WRITE_ONCE(lim->nclients, left);
	rl_lease_detach(lim, client, ktime_get_ns());
	if (client->held) {
		rl_path_release(lim, client->held);
		trace_ratelimit_release(lim, client->held, lim->held);
		client->held = 0;
		rl_dispatch(lim, ktime_get_ns());
	}
	rl_unlock_irq(lim);
	return left;
}

/**
 * rl_apply_params() - carry the buckets over to new limits
 * @lim: the limiter, locked
 * @p:   new limits, validated by rl_params_check()
 * @now: current time, ns
 *
 * Tokens, permits and queued requests are kept; the queue is served at
 * once under the new limits. Walks the clients with caps (O(clients)
 * under the lock): a reconfiguration is process context and rare, never
 * the grant path.
 */
void rl_apply_params(struct rl_limiter *lim, const struct rl_params *p,
		     u64 now)
{
	struct rl_params old, new;
	struct rl_client *client;

	lockdep_assert_held(lim->tlock);
	/* The caps' period and the chunks may change: look again. */
	rl_sched_unpark_all(lim);
	list_for_each_entry(client, &lim->clients, node) {
		if (!client->cap)
			continue;
		rl_cap_params(lim, client, &old);
		new = old;
		new.period = p->period;
		new.burst = min(client->cap,
				RL_TOKENS_BURST_PERIOD_MAX / p->period);
		rl_bucket_reconfig(&client->cap_bucket, &old, &new, now);
	}
	/* The tokens owed to the queue are served under the old limits. */
	if (lim->nwaiters)
		rl_dispatch(lim, now);
	rl_sync(lim, now);
	rl_bucket_reconfig(&lim->bucket, &lim->params, p, now);
	lim->backlog = min(lim->backlog, p->backlog);
	lim->release = (struct rl_bucket) { .stamp = now };
	lim->params = *p;
	trace_ratelimit_reconfigure(lim);
	rl_dispatch(lim, now);
}

/* Clients of @x and of the limiters under it; under the tree's lock. */
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

/**
 * rl_conc_switch_busy() - would new limits strand clients?
 * @lim:  the limiter, locked
 * @p:    new limits
 * @self: clients of @lim the caller speaks for: 1 for an ioctl on an
 *        attached fd, 0 for sysfs
 *
 * While its concurrency is not 0 a limiter's grants are permits, held
 * until given back; a client that began while it was 0 never gives them
 * back, and one that began while it was not 0 gives back permits it does
 * not hold. So concurrency may only go between 0 and non-zero while no
 * other client uses @lim or a limiter under it (whose permits are taken
 * at @lim too, hier.c). N to M, both non-zero, is always allowed.
 *
 * Return: true if @p must be refused with -EBUSY.
 */
bool rl_conc_switch_busy(const struct rl_limiter *lim,
			 const struct rl_params *p, u64 self)
{
	lockdep_assert_held(lim->tlock);
	if (!lim->params.concurrency == !p->concurrency)
		return false;
	return rl_subtree_clients(lim, 0) > self;
}

/* Does a level of the path from @x up limit concurrency? */
static bool rl_path_concurrent(const struct rl_limiter *x)
{
	for (; x; x = x->h.parent)
		if (x->params.concurrency)
			return true;
	return false;
}

/**
 * rl_move_busy() - would moving a subtree strand its clients?
 * @lim:    the root of the subtree moved; its tree is locked
 * @old:    its parent now, or NULL
 * @parent: its new parent, or NULL; that tree is locked too
 * @self:   clients of @lim the caller speaks for (rl_conc_switch_busy())
 *
 * The grants of a limiter are permits when a level of its path limits
 * concurrency (hier.c): moving @lim between a path with such a level and
 * one without switches that for its subtree, as rl_conc_switch_busy()
 * says of its own concurrency.
 *
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
 *
 * Tokens, permits and queued requests are kept; the queue is served at
 * once under the new limits.
 *
 * Return: 0, or -EBUSY with nothing changed when the concurrency would go
 * between 0 and non-zero while other clients use the limiter.
 */
int rl_limiter_set_params(struct rl_limiter *lim, const struct rl_params *p,
			  u64 self)
{
	int ret = 0;

	rl_lock_irq(lim);
	if (rl_conc_switch_busy(lim, p, self))
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
 * rl_limiter_set_param() - change one limit, keeping the state
 * @lim: the limiter
 * @t:   the limit, a row of rl_tunables
 * @val: its new value, with 0 meaning the default where @t has one
 *
 * Like rl_limiter_set_params(), for one field, atomically, for sysfs:
 * no client of the limiter is the caller's.
 *
 * Return: 0, or -EINVAL with nothing changed if the result is invalid,
 * or -EBUSY as rl_limiter_set_params().
 */
int rl_limiter_set_param(struct rl_limiter *lim, const struct rl_tunable *t,
			 u64 val)
{
	struct rl_params p;
	int ret;

	rl_lock_irq(lim);
	p = lim->params;
	ret = rl_tunable_set(t, &p, val) ?: rl_params_check(&p);
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
	rl_lock_irq(lim);
	rl_sync(lim, ktime_get_ns());
	s->params = lim->params;
	s->counters = lim->counters;
	s->waiters = lim->nwaiters;
	s->available = lim->bucket.tokens;
	s->held = lim->held;
	s->clients = lim->nclients;
	s->backlog = lim->backlog;
	rl_unlock_irq(lim);
}

/**
 * rl_limiter_hist_alloc() - give a limiter its wait histogram
 * @lim: the limiter, of which the caller holds a reference
 *
 * Called without the limiter's lock by a request that has just been
 * queued, before its grant can be accounted for (rl_hist_record()): may
 * sleep. Does nothing if the limiter has its histogram. Out of memory,
 * the limiter goes on without one, and the next request to wait tries
 * again: the waits in between are in its counters but not in the
 * histogram.
 */
void rl_limiter_hist_alloc(struct rl_limiter *lim)
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
 * rl_limiter_walk_clients() - look at the clients, for sysfs
 * @lim:  the limiter
 * @fn:   called under the limiter's lock (it must not sleep) for each
 *        client, in the order they attached, until it returns false
 * @arg:  passed to @fn
 */
void rl_limiter_walk_clients(struct rl_limiter *lim, rl_client_fn fn,
			     void *arg)
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
 * @cc:     validated settings, 0 for the defaults
 *
 * A new cap starts with a full bucket of its own. Queued requests keep
 * their place.
 */
void rl_limiter_set_client(struct rl_limiter *lim, struct rl_client *client,
			   const struct rl_client_config *cc)
{
	u64 now = ktime_get_ns();
	struct rl_params cp;

	rl_lock_irq(lim);
	client->level = (cc->priority ?: RL_PRIO_MID) - 1;
	client->weight = cc->weight ?: 1;
	if (cc->cap != client->cap) {
		client->cap = cc->cap;
		rl_cap_params(lim, client, &cp);
		rl_bucket_init(&client->cap_bucket, &cp, now);
		rl_sched_unpark_client(lim, client);
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
 * @dep: dep->count tokens are added, up to the burst; dep->count becomes
 *       the excess, dep->available the tokens then
 *
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
	room = p->burst - min(lim->bucket.tokens, p->burst);
	room = min(room, dep->count);
	rl_bucket_give(&lim->bucket, p, room);
	dep->count -= room;
	/* The waiters are served from the deposit, in their order. */
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
 * Return: 0, or -EBUSY with nothing changed if either would switch the
 * concurrency between 0 and non-zero under other clients
 * (rl_conc_switch_busy()).
 */
int rl_limiter_lease(struct rl_limiter *lim, struct rl_client *client,
			    const struct rl_params *p,
			    const struct rl_params *fb, u64 expires)
{
	struct rl_global *g = &lim->global;
	u64 now = ktime_get_ns();

	rl_lock_irq(lim);
	if (rl_conc_switch_busy(lim, fb, 1) ||
	    (expires > now && rl_conc_switch_busy(lim, p, 1))) {
		rl_unlock_irq(lim);
		return -EBUSY;
	}
	g->fallback = *fb;
	if (expires <= now) {
		rl_lease_end(lim, now, 1);
	} else {
		g->lease_end = expires;
		g->holder = client;
		g->holder_pid = client->tgid;
		hrtimer_start(&g->lease_timer, ns_to_ktime(expires),
			      HRTIMER_MODE_ABS);
		rl_apply_params(lim, p, now);
	}
	rl_unlock_irq(lim);
	return 0;
}

/**
 * rl_limiter_get_demand() - what the clients ask for, now
 * @lim: the limiter
 * @d:   a zeroed struct rl_demand, filled in
 */
void rl_limiter_get_demand(struct rl_limiter *lim, struct rl_demand *d)
{
	const struct rl_global *g = &lim->global;

	rl_lock_irq(lim);
	d->now_ns = ktime_get_ns();
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
 *
 * Return: true if there is a lease, else false (and @left, @pid unset).
 */
bool rl_limiter_get_lease(struct rl_limiter *lim, u64 *left, pid_t *pid)
{
	const struct rl_global *g = &lim->global;
	u64 now = ktime_get_ns();
	bool ret;

	rl_lock_irq(lim);
	ret = g->lease_end;
	if (ret) {
		*left = g->lease_end - min(now, g->lease_end);
		*pid = g->holder_pid;
	}
	rl_unlock_irq(lim);
	return ret;
}
