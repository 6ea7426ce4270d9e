// SPDX-License-Identifier: GPL-2.0-only
/*
 * Limiter core of the ratelimit module: a token bucket, the queue of
 * requests sleeping for tokens, and the hrtimer that serves them.
 *
 * Requests are served in order. A request sleeps on its own stack entry
 * (struct rl_waiter) and is woken by name when its tokens are granted, so
 * a grant wakes exactly one task. The timer is started only while someone
 * sleeps or polls, for the instant the head of the queue can be served.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/minmax.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>

#include "compat.h"
#include "ratelimit.h"

/* rl_acquire_begin() queued the request: sleep for it. */
#define RL_QUEUED	1

/**
 * struct rl_waiter - a request sleeping in a limiter's queue
 * @node: entry in rl_limiter.queue
 * @task: the sleeping task
 * @want: tokens still to be granted
 * @got:  tokens granted so far, by chunks of at most the burst
 * @done: all granted and off the queue; written under the limiter lock,
 *        read locklessly by the sleeper
 *
 * Every field but @done is guarded by the limiter's lock.
 */
struct rl_waiter {
	struct list_head node;
	struct task_struct *task;
	u64 want;
	u64 got;
	bool done;
};

/* Tokens the waiter is served at once: at most a burst. */
static u64 rl_chunk(const struct rl_limiter *lim, const struct rl_waiter *w)
{
	if (lim->params.unlimited)
		return w->want;
	return min(w->want, lim->params.burst);
}

/* Would an acquire of one token be granted at once? */
static bool rl_ready(const struct rl_limiter *lim)
{
	return list_empty(&lim->queue) &&
	       (lim->params.unlimited || lim->bucket.tokens);
}

/* Absolute time @n tokens will be there, U64_MAX if never or too far. */
static u64 rl_ready_time(const struct rl_limiter *lim, u64 n)
{
	u64 when = rl_bucket_ready(&lim->bucket, &lim->params, n);

	return when > KTIME_MAX ? U64_MAX : when;
}

/* a + b, saturating at U64_MAX. */
static u64 rl_sat_add(u64 a, u64 b)
{
	u64 sum;

	return check_add_overflow(a, b, &sum) ? U64_MAX : sum;
}

/* Predicted grant time of a request of @n tokens queued behind the others. */
static u64 rl_predict(const struct rl_limiter *lim, u64 n)
{
	if (lim->params.unlimited)
		return lim->bucket.stamp;
	return rl_ready_time(lim, rl_sat_add(lim->queued, n));
}

/* The queue's waiters want @n tokens less; call after updating them. */
static void rl_queued_sub(struct rl_limiter *lim, u64 n)
{
	struct rl_waiter *pos;

	if (lim->queued != U64_MAX) {
		lim->queued -= n;
		return;
	}
	/* The sum saturated: count it again. */
	lim->queued = 0;
	list_for_each_entry(pos, &lim->queue, node)
		lim->queued = rl_sat_add(lim->queued, pos->want);
}

static void rl_queue_add(struct rl_limiter *lim, struct rl_waiter *w)
{
	list_add_tail(&w->node, &lim->queue);
	lim->nwaiters++;
	lim->queued = rl_sat_add(lim->queued, w->want);
}

static void rl_queue_del(struct rl_limiter *lim, struct rl_waiter *w)
{
	list_del(&w->node);
	lim->nwaiters--;
	rl_queued_sub(lim, w->want);
}

/* Start, move or stop the timer for the next instant work can be done. */
static void rl_arm_timer(struct rl_limiter *lim)
{
	struct rl_waiter *w;
	u64 when = U64_MAX;

	lockdep_assert_held(&lim->lock);
	w = list_first_entry_or_null(&lim->queue, struct rl_waiter, node);
	if (lim->params.unlimited)
		when = U64_MAX;
	else if (w)
		when = rl_ready_time(lim, rl_chunk(lim, w));
	else if (lim->poll_armed)
		when = rl_ready_time(lim, 1);

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

static void rl_wake_pollers(struct rl_limiter *lim)
{
	struct rl_client *client;

	lockdep_assert_held(&lim->lock);
	lim->poll_armed = false;
	list_for_each_entry(client, &lim->clients, node)
		wake_up_poll(&client->pollq, EPOLLIN | EPOLLRDNORM);
}

/* Grant what the bucket allows, in order; wake whoever is complete. */
static void rl_dispatch(struct rl_limiter *lim, u64 now)
{
	struct rl_waiter *w;
	u64 chunk;

	lockdep_assert_held(&lim->lock);
	rl_bucket_refill(&lim->bucket, &lim->params, now);
	while ((w = list_first_entry_or_null(&lim->queue, struct rl_waiter,
					     node))) {
		chunk = rl_chunk(lim, w);
		if (!lim->params.unlimited &&
		    !rl_bucket_take(&lim->bucket, chunk))
			break;
		w->got += chunk;
		if (w->want > chunk) {
			/* Yield the place between chunks of a large request. */
			w->want -= chunk;
			rl_queued_sub(lim, chunk);
			list_move_tail(&w->node, &lim->queue);
			continue;
		}
		rl_queue_del(lim, w);
		w->want = 0;
		/* Pairs with set_current_state() in rl_sleep(). */
		WRITE_ONCE(w->done, true);
		wake_up_process(w->task);
	}
	if (lim->poll_armed && rl_ready(lim))
		rl_wake_pollers(lim);
	rl_arm_timer(lim);
}

static enum hrtimer_restart rl_timer_fn(struct hrtimer *timer)
{
	struct rl_limiter *lim = container_of(timer, struct rl_limiter, timer);
	unsigned long flags;

	spin_lock_irqsave(&lim->lock, flags);
	lim->timer_expiry = 0;
	rl_dispatch(lim, ktime_get_ns());
	spin_unlock_irqrestore(&lim->lock, flags);
	return HRTIMER_NORESTART;
}

/**
 * rl_limiter_create() - allocate a limiter with a full bucket
 * @p: its limits, validated by rl_params_check()
 *
 * Return: the limiter, or NULL when out of memory.
 */
struct rl_limiter *rl_limiter_create(const struct rl_params *p)
{
	struct rl_limiter *lim;

	lim = kzalloc(sizeof(*lim), GFP_KERNEL_ACCOUNT);
	if (!lim)
		return NULL;
	spin_lock_init(&lim->lock);
	INIT_LIST_HEAD(&lim->queue);
	INIT_LIST_HEAD(&lim->clients);
	INIT_LIST_HEAD(&lim->node);
	kref_init(&lim->ref);
	lim->params = *p;
	rl_bucket_init(&lim->bucket, p, ktime_get_ns());
	hrtimer_setup(&lim->timer, rl_timer_fn, CLOCK_MONOTONIC,
		      HRTIMER_MODE_ABS);
	return lim;
}

/**
 * rl_limiter_destroy() - free a limiter nobody uses any more
 * @lim: the limiter, with no client attached and nobody sleeping in it
 */
void rl_limiter_destroy(struct rl_limiter *lim)
{
	WARN_ON_ONCE(!list_empty(&lim->queue) || !list_empty(&lim->clients));
	hrtimer_cancel(&lim->timer);
	kfree(lim);
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
	spin_lock_irq(&lim->lock);
	list_add_tail(&client->node, &lim->clients);
	lim->nclients++;
	spin_unlock_irq(&lim->lock);
	wake_up_poll(&client->pollq, EPOLLIN | EPOLLRDNORM);
}

/**
 * rl_limiter_detach() - undo rl_limiter_attach()
 * @lim:    the limiter
 * @client: the client, attached to @lim and not polled any more
 */
void rl_limiter_detach(struct rl_limiter *lim, struct rl_client *client)
{
	spin_lock_irq(&lim->lock);
	list_del_init(&client->node);
	lim->nclients--;
	spin_unlock_irq(&lim->lock);
}

/**
 * rl_limiter_set_params() - change the limits, keeping the state
 * @lim: the limiter
 * @p:   new limits, validated by rl_params_check()
 *
 * Tokens and queued requests are kept; the queue is served at once under
 * the new limits.
 */
void rl_limiter_set_params(struct rl_limiter *lim, const struct rl_params *p)
{
	u64 now = ktime_get_ns();

	spin_lock_irq(&lim->lock);
	rl_bucket_reconfig(&lim->bucket, &lim->params, p, now);
	lim->params = *p;
	rl_dispatch(lim, now);
	spin_unlock_irq(&lim->lock);
}

/**
 * rl_limiter_get_params() - read the limits in force
 * @lim: the limiter
 * @p:   filled with its limits
 */
void rl_limiter_get_params(struct rl_limiter *lim, struct rl_params *p)
{
	spin_lock_irq(&lim->lock);
	*p = lim->params;
	spin_unlock_irq(&lim->lock);
}

static void rl_param_apply(struct rl_params *p, enum rl_param which, u64 val)
{
	switch (which) {
	case RL_PARAM_RATE:
		p->rate = val;
		break;
	case RL_PARAM_PERIOD:
		p->period = val;
		break;
	case RL_PARAM_BURST:
		/* 0 asks for the default, as in struct rl_config. */
		p->burst = val ?: rl_default_burst(p->rate, p->period);
		break;
	case RL_PARAM_UNLIMITED:
		p->unlimited = val;
		break;
	}
}

/**
 * rl_limiter_set_param() - change one limit, keeping the state
 * @lim:   the limiter
 * @which: the limit
 * @val:   its new value (0 or 1 for RL_PARAM_UNLIMITED)
 *
 * Like rl_limiter_set_params(), for one field, atomically.
 *
 * Return: 0, or -EINVAL with nothing changed if the result is invalid.
 */
int rl_limiter_set_param(struct rl_limiter *lim, enum rl_param which,
			 u64 val)
{
	u64 now = ktime_get_ns();
	struct rl_params p;
	int ret;

	if (which == RL_PARAM_UNLIMITED && val > 1)
		return -EINVAL;
	if (which == RL_PARAM_PERIOD && (!val || val > RL_TOKENS_PERIOD_MAX))
		return -EINVAL;
	spin_lock_irq(&lim->lock);
	p = lim->params;
	rl_param_apply(&p, which, val);
	ret = rl_params_check(&p);
	if (!ret) {
		rl_bucket_reconfig(&lim->bucket, &lim->params, &p, now);
		lim->params = p;
		rl_dispatch(lim, now);
	}
	spin_unlock_irq(&lim->lock);
	return ret;
}

/*
 * Grant @req at once, fail it, or queue @w for it (RL_QUEUED). Fills
 * req->ready_ns on -EAGAIN and -ETIMEDOUT.
 */
static int rl_acquire_begin(struct rl_limiter *lim, struct rl_client *client,
			    struct rl_acquire *req, struct rl_waiter *w,
			    bool nonblock, u64 now)
{
	const struct rl_params *p = &lim->params;

	lockdep_assert_held(&lim->lock);
	/* Chunks need sleeping: a non-blocking call could never succeed. */
	if (nonblock && !p->unlimited && req->count > p->burst)
		return -EINVAL;
	lim->counters.requests++;
	rl_bucket_refill(&lim->bucket, p, now);
	if (list_empty(&lim->queue) &&
	    (p->unlimited || rl_bucket_take(&lim->bucket, req->count))) {
		lim->counters.immediate++;
		lim->counters.granted += req->count;
		client->granted += req->count;
		return 0;
	}
	req->ready_ns = rl_predict(lim, req->count);
	if (nonblock) {
		lim->counters.rejected++;
		return -EAGAIN;
	}
	if (req->deadline_ns <= now ||
	    (req->flags & RL_ACQUIRE_PREDICT && req->ready_ns > req->deadline_ns)) {
		lim->counters.timeouts++;
		return -ETIMEDOUT;
	}
	rl_queue_add(lim, w);
	return RL_QUEUED;
}

/* Sleep until @w is served, a signal comes or @deadline passes. */
static int rl_sleep(struct rl_waiter *w, u64 deadline)
{
	ktime_t expires = ns_to_ktime(deadline);
	int ret = 0;

	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (READ_ONCE(w->done))
			break;
		if (signal_pending(current)) {
			ret = -ERESTARTSYS;
			break;
		}
		if (deadline == RL_DEADLINE_NONE) {
			schedule();
		} else if (!schedule_hrtimeout_range(&expires,
						     current->timer_slack_ns,
						     HRTIMER_MODE_ABS)) {
			ret = -ETIMEDOUT;
			break;
		}
	}
	__set_current_state(TASK_RUNNING);
	return ret;
}

/*
 * Account for a request that slept. A request served while a signal or
 * the deadline arrived keeps its tokens; any other gives back the chunks
 * it got and leaves the queue.
 */
static int rl_acquire_end(struct rl_limiter *lim, struct rl_client *client,
			  struct rl_acquire *req, struct rl_waiter *w, int ret,
			  u64 start)
{
	struct rl_counters *c = &lim->counters;
	u64 now = ktime_get_ns();

	lockdep_assert_held(&lim->lock);
	if (w->done) {
		req->wait_ns = now - start;
		c->waited++;
		c->granted += req->count;
		client->granted += req->count;
		c->wait_ns_total += req->wait_ns;
		c->wait_ns_max = max(c->wait_ns_max, req->wait_ns);
		return 0;
	}
	rl_queue_del(lim, w);
	rl_bucket_refill(&lim->bucket, &lim->params, now);
	rl_bucket_give(&lim->bucket, &lim->params, w->got);
	if (ret == -ETIMEDOUT) {
		c->timeouts++;
		req->ready_ns = rl_predict(lim, req->count);
	} else {
		c->interrupted++;
	}
	/* Leaving the head of the queue may let the next request go. */
	rl_dispatch(lim, now);
	return ret;
}

/**
 * rl_limiter_acquire() - take tokens, sleeping for them if needed
 * @lim:      the limiter
 * @client:   the client asking, attached to @lim
 * @req:      validated request; wait_ns and ready_ns are filled in
 * @nonblock: fail with -EAGAIN instead of sleeping
 *
 * Return: 0 when granted; -EAGAIN, -ETIMEDOUT, -ERESTARTSYS or -EINVAL
 * with nothing consumed.
 */
int rl_limiter_acquire(struct rl_limiter *lim, struct rl_client *client,
		       struct rl_acquire *req, bool nonblock)
{
	struct rl_waiter w = { .task = current, .want = req->count };
	u64 start = ktime_get_ns();
	int ret;

	spin_lock_irq(&lim->lock);
	ret = rl_acquire_begin(lim, client, req, &w, nonblock, start);
	if (ret == RL_QUEUED)
		rl_dispatch(lim, start);
	spin_unlock_irq(&lim->lock);
	if (ret != RL_QUEUED)
		return ret;

	ret = rl_sleep(&w, req->deadline_ns);

	/* Taking the lock also waits for a waker still using @w. */
	spin_lock_irq(&lim->lock);
	ret = rl_acquire_end(lim, client, req, &w, ret, start);
	spin_unlock_irq(&lim->lock);
	return ret;
}

/**
 * rl_limiter_get_stats() - read the statistics
 * @lim: the limiter
 * @st:  its counter fields are filled in; the rest is left alone
 */
void rl_limiter_get_stats(struct rl_limiter *lim, struct rl_stats *st)
{
	struct rl_counters c;

	spin_lock_irq(&lim->lock);
	rl_bucket_refill(&lim->bucket, &lim->params, ktime_get_ns());
	c = lim->counters;
	st->waiters = lim->nwaiters;
	st->available = lim->bucket.tokens;
	spin_unlock_irq(&lim->lock);

	st->granted = c.granted;
	st->requests = c.requests;
	st->immediate = c.immediate;
	st->waited = c.waited;
	st->wait_ns_total = c.wait_ns_total;
	st->wait_ns_max = c.wait_ns_max;
	st->timeouts = c.timeouts;
	st->interrupted = c.interrupted;
	st->rejected = c.rejected;
}

/**
 * rl_limiter_poll() - readiness of a limiter for poll()
 * @lim: the limiter
 *
 * The caller is already on its client's poll queue, and whatever makes
 * the limiter ready wakes that queue after changing the state under the
 * lock we look under: a wake-up cannot fall between the check and the
 * sleep.
 *
 * Return: EPOLLIN | EPOLLRDNORM when an acquire of one token would be
 * granted at once; otherwise the timer is started to wake pollers then.
 */
__poll_t rl_limiter_poll(struct rl_limiter *lim)
{
	__poll_t mask = 0;

	spin_lock_irq(&lim->lock);
	rl_bucket_refill(&lim->bucket, &lim->params, ktime_get_ns());
	if (rl_ready(lim)) {
		mask = EPOLLIN | EPOLLRDNORM;
	} else if (!lim->poll_armed) {
		lim->poll_armed = true;
		rl_arm_timer(lim);
	}
	spin_unlock_irq(&lim->lock);
	return mask;
}

/**
 * rl_limiter_show() - describe a limiter in /proc/<pid>/fdinfo
 * @lim: the limiter
 * @m:   the fdinfo file
 */
void rl_limiter_show(struct rl_limiter *lim, struct seq_file *m)
{
	struct rl_params p;
	u64 tokens, waiters, granted;
	u32 flags;

	spin_lock_irq(&lim->lock);
	rl_bucket_refill(&lim->bucket, &lim->params, ktime_get_ns());
	p = lim->params;
	flags = p.unlimited ? RL_CONFIG_UNLIMITED : 0;
	tokens = lim->bucket.tokens;
	waiters = lim->nwaiters;
	granted = lim->counters.granted;
	spin_unlock_irq(&lim->lock);

	seq_printf(m, "rl-rate:\t%llu\n", p.rate);
	seq_printf(m, "rl-period-ns:\t%llu\n", p.period);
	seq_printf(m, "rl-burst:\t%llu\n", p.burst);
	seq_printf(m, "rl-flags:\t0x%x\n", flags);
	seq_printf(m, "rl-available:\t%llu\n", tokens);
	seq_printf(m, "rl-waiters:\t%llu\n", waiters);
	seq_printf(m, "rl-granted:\t%llu\n", granted);
}

/**
 * rl_limiter_show_clients() - list the clients for sysfs
 * @lim: the limiter
 * @buf: a sysfs page
 *
 * One line per client: "PID COMM GRANTED"; the list stops at a full page.
 *
 * Return: the length written.
 */
int rl_limiter_show_clients(struct rl_limiter *lim, char *buf)
{
	struct rl_client *client;
	int len = 0;

	spin_lock_irq(&lim->lock);
	list_for_each_entry(client, &lim->clients, node)
		len += sysfs_emit_at(buf, len, "%d %s %llu\n", client->tgid,
				     client->comm, client->granted);
	spin_unlock_irq(&lim->lock);
	return len;
}
