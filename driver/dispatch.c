// SPDX-License-Identifier: GPL-2.0-only
/*
 * Serving a limiter's queue: rl_dispatch() grants sleeping requests their
 * tokens in the order sched.c decides, wakes whoever is complete, and
 * starts the hrtimer for the instant the next request (or a poller) can be
 * served. The timer is started only while someone sleeps or polls.
 *
 * A request sleeps on its own stack entry (struct rl_waiter) and is woken
 * by name when its tokens are granted, so a grant wakes exactly one task.
 * A limiter with a concurrency limit also counts the tokens held (permits):
 * a request takes all its permits with its first chunk, so that partial
 * holders cannot block each other.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/minmax.h>
#include <linux/sched.h>
#include <linux/spinlock.h>

#include "limiter.h"
#include "ratelimit_trace.h"

/* Would an acquire of one token be granted at once (caps aside)? */
static bool rl_ready(const struct rl_limiter *lim)
{
	const struct rl_params *p = &lim->params;

	return !lim->nwaiters && (p->unlimited || lim->bucket.tokens) &&
	       (!p->concurrency || lim->held < p->concurrency);
}

/* Start, move or stop the timer for @when, U64_MAX for never. */
static void rl_arm_timer(struct rl_limiter *lim, u64 when)
{
	lockdep_assert_held(lim->tlock);
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

/* Permits a request takes with its next chunk: all of them, at first. */
static u64 rl_permits(const struct rl_limiter *lim, const struct rl_waiter *w)
{
	return lim->params.concurrency && !w->held ? w->want : 0;
}

/*
 * When a token is there for pollers, if time is what they wait for: when
 * rl_sync() shows it, @late after the bucket's own time for it.
 */
static u64 rl_poll_time(const struct rl_limiter *lim)
{
	u64 when;

	if (lim->params.unlimited || lim->bucket.tokens)
		return U64_MAX;
	when = min(rl_ready_time(lim, 1), rl_catchup_time(lim));
	return when > KTIME_MAX - lim->late ? U64_MAX : when + lim->late;
}

/*
 * Listed pollers to wake when the limiter is ready: as many as could take
 * a token now (tokens, free permits), from 1 to RL_WAKE_MAX.
 */
static unsigned int rl_poll_quota(const struct rl_limiter *lim)
{
	const struct rl_params *p = &lim->params;
	u64 n = p->unlimited ? RL_WAKE_MAX : lim->bucket.tokens;

	if (p->concurrency)
		n = min(n, p->concurrency - lim->held);
	return clamp_t(u64, n, 1, RL_WAKE_MAX);
}

/*
 * Wake the pollers of the first @quota clients listed in lim->pollers, in
 * the order they were listed. Returns false if some are left: they stay
 * listed.
 */
static bool rl_wake_pollers(struct rl_limiter *lim, unsigned int quota)
{
	struct rl_client *client, *next;
	unsigned int n = 0;

	lockdep_assert_held(lim->tlock);
	list_for_each_entry_safe(client, next, &lim->pollers, poll_node) {
		if (n++ == quota)
			return false;
		list_del_init(&client->poll_node);
		wake_up_poll(&client->pollq, EPOLLIN | EPOLLRDNORM);
	}
	return true;
}

/*
 * Wake listed pollers if the limiter is ready; else, if time is what they
 * wait for, bring the timer's time @when forward to when it is. Returns
 * the time to start the timer for.
 *
 * A token wakes one poller, not all of them: a woken poller that finds
 * the token taken by another sleeps again inside poll() and costs a
 * wake-up for nothing, and 1000 pollers would cost 1000 per token. Those
 * left listed are woken RL_POLL_GRACE_NS later if the limiter is still
 * ready then (nobody took what was there), so every poller of a limiter
 * that stays ready hears of it in the end.
 */
static u64 rl_serve_pollers(struct rl_limiter *lim, u64 now, u64 when)
{
	if (list_empty(&lim->pollers))
		return when;
	/*
	 * Up to time first: a tree's dispatch leaves the bucket where it was,
	 * and the timer started for the token would find it still missing,
	 * due in the past, and start itself again, and again.
	 */
	rl_sync(lim, now);
	if (rl_ready(lim))
		return rl_wake_pollers(lim, rl_poll_quota(lim)) ?
		       when : min(when, now + RL_POLL_GRACE_NS);
	if (!lim->nwaiters)
		return min(when, rl_poll_time(lim));
	return when;
}

/* List @client among the pollers; returns whether it is the first. */
static bool rl_list_poller(struct rl_limiter *lim, struct rl_client *client)
{
	bool first = list_empty(&lim->pollers);

	if (list_empty(&client->poll_node))
		list_add_tail(&client->poll_node, &lim->pollers);
	return first;
}

/*
 * Bring the bucket to the instant @chunk tokens exist, if that is no later
 * than @now, rather than to @now: a queued request is owed its tokens from
 * the moment they exist, however late the timer or the lock let us run, and
 * a bucket filled to the burst at @now would drop the ones earned since.
 * Returns whether @chunk tokens are there; if not, the bucket is at @now.
 */
static bool rl_tokens_by(struct rl_limiter *lim, u64 chunk, u64 now)
{
	u64 when;

	while (lim->bucket.tokens < chunk) {
		when = min(rl_ready_time(lim, chunk), rl_catchup_time(lim));
		if (when > now || when <= lim->bucket.stamp) {
			/* Fewer than @chunk tokens by @now: none to drop. */
			rl_refill(lim, now);
			return lim->bucket.tokens >= chunk;
		}
		rl_refill(lim, when);
	}
	return true;
}

/* Grant a chunk to @w at the bucket's instant; wake it if complete. */
static void rl_grant_chunk(struct rl_limiter *lim, struct rl_waiter *w,
			   u64 chunk, u64 now)
{
	u64 permits = rl_permits(lim, w);

	w->held += permits;
	w->taken += rl_take(lim, w->client, chunk, permits);
	w->got += chunk;
	w->at = lim->params.unlimited ? now : lim->bucket.stamp;
	rl_sched_served(lim, w, chunk);
	if (!w->want) {
		/* Pairs with set_current_state() in rl_sleep(). */
		WRITE_ONCE(w->done, true);
		rl_waiter_wake(w);
	}
}

/* Bring the bucket up to @now after a dispatch that granted @n chunks. */
static void rl_settle(struct rl_limiter *lim, unsigned int n, u64 now)
{
	if (n)
		rl_credit_late(lim, now);
	rl_refill(lim, now - lim->late);
}

/*
 * Tokens are owed to queued requests for RL_LATE_MAX_NS at most: an
 * overloaded host that cannot keep up drops the older ones, as an idle
 * bucket would, rather than owe ever more.
 */
static void rl_dispatch_start(struct rl_limiter *lim, u64 now)
{
	if (!lim->nwaiters)
		rl_refill(lim, now);
	else if (now > lim->bucket.stamp &&
		 now - lim->bucket.stamp > RL_LATE_MAX_NS)
		rl_drop_late(lim, now - RL_LATE_MAX_NS);
	lim->late = 0;
}

/**
 * rl_dispatch() - serve the queue
 * @lim: the limiter
 * @now: current time, ns
 *
 * Grant what the limits allow, in order; wake whoever is complete. Queued
 * requests are served on the schedule their tokens exist (rl_tokens_by()).
 * Then start the timer for the next grant, or for pollers.
 *
 * The work is bounded, as the timer calls this with interrupts off: at
 * most RL_DISPATCH_MAX chunks granted and flows moved to or from the
 * capped flows (sched.c), and RL_WAKE_MAX clients' pollers woken. Out of
 * budget, it starts the timer for @now, which goes on with the rest at
 * once and with the tokens still owed to the queue: nothing is lost, and
 * a wake-up waits for no more than the timer's next expiry.
 */
void rl_dispatch(struct rl_limiter *lim, u64 now)
{
	unsigned int budget = RL_DISPATCH_MAX, n = 0;
	bool limited = !lim->params.unlimited, out = false;
	u64 chunk, when = U64_MAX;
	struct rl_waiter *w;

	lockdep_assert_held(lim->tlock);
	if (rl_hier_linked(lim)) {
		/* A tree is served from its root: hier.c. */
		rl_arm_timer(lim, rl_serve_pollers(lim, now,
						   rl_hier_dispatch(lim, now)));
		return;
	}
	rl_dispatch_start(lim, now);
	rl_sched_unpark_due(lim, now, &budget);
	while ((w = rl_sched_pick(lim, now, &chunk, &budget))) {
		/* Else a release will call us again. */
		if (!rl_permits_free(lim, rl_permits(lim, w)))
			break;
		if (limited && !rl_tokens_by(lim, chunk, now)) {
			when = min(rl_ready_time(lim, chunk),
				   rl_catchup_time(lim));
			break;
		}
		if (!budget) {
			out = true;
			break;
		}
		budget--;
		n++;
		rl_grant_chunk(lim, w, chunk, now);
	}
	if (!w)
		out = !budget;
	if (out) {
		/* Tokens are left owed to the queue: it stays where it is. */
		when = now;
	} else {
		rl_settle(lim, n, now);
		if (!w && lim->nwaiters)
			when = rl_sched_cap_ready(lim);
	}
	rl_arm_timer(lim, rl_serve_pollers(lim, now, when));
}

/*
 * A timer that starts itself again for a time already past, and again,
 * never lets its CPU leave the interrupt: a bug, warned about once, and
 * slowed down so that the machine lives on. It stays slowed until the
 * timer is started for the future again.
 */
static void rl_timer_guard(struct rl_limiter *lim, u64 now)
{
	if (!lim->timer_expiry || lim->timer_expiry > now) {
		lim->timer_spins = 0;
		return;
	}
	if (lim->timer_spins < RL_TIMER_SPINS_MAX) {
		lim->timer_spins++;
		return;
	}
	WARN_ONCE(1, "ratelimit: timer of limiter '%s' started for the past %u times in a row\n",
		  lim->name, RL_TIMER_SPINS_MAX);
	rl_arm_timer(lim, now + RL_TIMER_BACKOFF_NS);
}

/**
 * rl_timer_fn() - the limiter's hrtimer: serve the queue
 * @timer: the limiter's timer
 *
 * Return: HRTIMER_NORESTART; rl_dispatch() starts it again if needed.
 */
enum hrtimer_restart rl_timer_fn(struct hrtimer *timer)
{
	struct rl_limiter *lim = container_of(timer, struct rl_limiter, timer);
	u64 now = ktime_get_ns(), expiry;
	unsigned long flags;

	flags = rl_lock_irqsave(lim);
	/*
	 * Not lim->timer_expiry: a cancel that found this callback already
	 * running zeroed it.
	 */
	expiry = ktime_to_ns(hrtimer_get_softexpires(timer));
	trace_ratelimit_timer(lim, now - min(now, expiry), lim->nwaiters);
	lim->timer_expiry = 0;
	rl_dispatch(lim, now);
	rl_timer_guard(lim, now);
	rl_unlock_irqrestore(lim, flags);
	return HRTIMER_NORESTART;
}

/* Start the timer for @when unless it is started for earlier. */
void rl_arm_timer_before(struct rl_limiter *lim, u64 when)
{
	if (!lim->timer_expiry || when < lim->timer_expiry)
		rl_arm_timer(lim, when);
}

/**
 * rl_limiter_poll() - readiness of a limiter for poll()
 * @lim:    the limiter
 * @client: the polling client
 *
 * The caller is already on its client's poll queue. Finding the limiter
 * not ready, we list the client among its pollers under the lock we look
 * under, and whatever makes the limiter ready changes the state under that
 * lock and runs rl_dispatch(), which wakes listed clients: a wake-up
 * cannot fall between the check and the sleep. A client leaves the list
 * only when it is woken or closed. rl_dispatch() wakes as many of them as
 * could take a token then, in the order they were listed, and starts the
 * timer RL_POLL_GRACE_NS later for the rest, so they are not forgotten;
 * should the limiter be taken first, they stay listed and are woken when
 * it is ready again, as their poll would find.
 *
 * Return: EPOLLIN | EPOLLRDNORM when an acquire of one token by @client
 * would be granted at once; otherwise the timer is started to wake
 * pollers then.
 */
__poll_t rl_limiter_poll(struct rl_limiter *lim, struct rl_client *client)
{
	u64 now = ktime_get_ns();
	struct rl_params cp;
	__poll_t mask = 0;

	rl_lock_irq(lim);
	rl_sync(lim, now);
	if (!rl_ready(lim)) {
		/* The first poller starts the timer for when a token is there. */
		if (rl_list_poller(lim, client))
			rl_dispatch(lim, now);
	} else if (!rl_cap_allows(lim, client, 1, now)) {
		/* Only this client's cap is in the way: wake it then. */
		rl_list_poller(lim, client);
		rl_cap_params(lim, client, &cp);
		rl_arm_timer_before(lim, min_t(u64, KTIME_MAX,
					       rl_bucket_ready(&client->cap_bucket,
							       &cp, 1)));
	} else {
		mask = EPOLLIN | EPOLLRDNORM;
	}
	rl_unlock_irq(lim);
	return mask;
}
