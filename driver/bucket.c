// SPDX-License-Identifier: GPL-2.0-only
/*
 * The buckets of a limiter: its own token bucket, the backlog it spends at
 * the catch-up pace, and the buckets of its clients' caps. tokens.c does
 * the arithmetic; this file knows which limits apply to which bucket.
 *
 * Everything here runs under the limiter's lock.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/ktime.h>
#include <linux/minmax.h>
#include <linux/overflow.h>

#include "limiter.h"

/**
 * rl_refill_catchup() - refill the bucket, keeping what overflows it
 * @lim: the limiter, with a catch-up pace and a backlog
 * @now: time of the refill, ns
 *
 * Tokens that do not fit go to the backlog, which pays them back into
 * the bucket at the catch-up pace.
 */
void rl_refill_catchup(struct rl_limiter *lim, u64 now)
{
	const struct rl_params *p = &lim->params;
	struct rl_params rp;
	u64 over, move;

	over = rl_bucket_overflow(&lim->bucket, p, now);
	lim->backlog = over >= p->backlog - lim->backlog ? p->backlog :
		       lim->backlog + over;
	rl_bucket_refill(&lim->bucket, p, now);
	if (!lim->backlog || lim->bucket.tokens >= p->burst) {
		/* Nothing to catch up on, or no room: the pace restarts. */
		lim->release = (struct rl_bucket) { .stamp = now };
		return;
	}
	rl_catchup_params(p, &rp);
	rl_bucket_refill(&lim->release, &rp, now);
	move = min3(lim->release.tokens, lim->backlog,
		    p->burst - lim->bucket.tokens);
	lim->release.tokens -= move;
	lim->backlog -= move;
	lim->bucket.tokens += move;
	if (lim->bucket.tokens == p->burst)
		lim->bucket.units = 0;
}

/**
 * rl_catchup_time() - when catching up brings the next token
 * @lim: the limiter
 *
 * Return: the time, ns, or U64_MAX if it brings none.
 */
u64 rl_catchup_time(const struct rl_limiter *lim)
{
	const struct rl_params *p = &lim->params;
	struct rl_params rp;
	u64 when;

	if (p->catchup <= RL_TOKENS_CATCHUP_STRICT || !lim->backlog ||
	    lim->bucket.tokens >= p->burst || p->fed)
		return U64_MAX;
	rl_catchup_params(p, &rp);
	when = rl_bucket_ready(&lim->release, &rp, 1);
	return when > KTIME_MAX ? U64_MAX : when;
}

/**
 * rl_ready_time() - when the bucket holds some tokens
 * @lim: the limiter
 * @n:   tokens
 *
 * Return: the time, ns, U64_MAX if never or too far.
 */
u64 rl_ready_time(const struct rl_limiter *lim, u64 n)
{
	u64 when = rl_bucket_ready(&lim->bucket, &lim->params, n);

	return when > KTIME_MAX ? U64_MAX : when;
}

/**
 * rl_predict() - when a request queued behind the others would be granted
 * @lim:    the limiter
 * @client: the client asking
 * @n:      tokens
 * @now:    current time, ns
 *
 * Return: the time the limiter and the client's cap allow it, ns, or
 * U64_MAX.
 */
u64 rl_predict(const struct rl_limiter *lim, const struct rl_client *client,
	       u64 n, u64 now)
{
	u64 sum, when = now, cap = rl_cap_ready(lim, client, n);

	if (!lim->params.unlimited) {
		if (lim->queued_hi || check_add_overflow(lim->queued, n, &sum))
			return U64_MAX;
		when = rl_ready_time(lim, sum);
	}
	return cap > KTIME_MAX ? U64_MAX : max3(when, cap, now);
}

/**
 * rl_drop_late() - bring the bucket to a time, counting what it drops
 * @lim:  the limiter
 * @then: the time, ns
 *
 * Counts whole tokens dropped for want of room, and the fraction of one
 * at the instant the bucket fills as one.
 */
void rl_drop_late(struct rl_limiter *lim, u64 then)
{
	const struct rl_params *p = &lim->params;
	u64 *dropped = &lim->counters.dropped_late;
	u64 over;

	if (rl_bucket_ready(&lim->bucket, p, p->burst) < then) {
		over = rl_bucket_overflow(&lim->bucket, p, then);
		over = over == U64_MAX ? over : over + 1;
		*dropped = over > U64_MAX - *dropped ? U64_MAX : *dropped + over;
	}
	rl_refill(lim, then);
}

