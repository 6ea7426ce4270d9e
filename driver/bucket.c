// SPDX-License-Identifier: GPL-2.0-only
/*
 * Token bucket arithmetic of the ratelimit module: see bucket.h.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/errno.h>
#include <linux/limits.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/overflow.h>

#include "bucket.h"

/* A keyed limiter's keys: a rate that refills (in 32 bits), none of the limiter-wide modes. */
static int rl_keyed_check(const struct rl_params *p)
{
	if (!p->keyed)
		return p->keys ? -EINVAL : 0;
	if (!p->rate || p->rate > RL_TOKENS_KEY_RATE_MAX || p->unlimited || p->fed ||
	    p->fair_per_user ||
	    p->concurrency || p->backlog || p->keys > RL_TOKENS_KEYS_MAX ||
	    (p->catchup && p->catchup != RL_TOKENS_CATCHUP_STRICT))
		return -EINVAL;
	return 0;
}

/**
 * rl_params_check() - validate the limits of a bucket
 * @p: limits, with the burst already resolved (no 0 for "default")
 * Return: 0 when @p keeps the bucket arithmetic exact, else -EINVAL.
 */
int rl_params_check(const struct rl_params *p)
{
	u64 units;

	if (!p->period || p->period > RL_TOKENS_PERIOD_MAX || !p->burst)
		return -EINVAL;
	if (check_mul_overflow(p->burst, p->period, &units) || units > RL_TOKENS_BURST_PERIOD_MAX)
		return -EINVAL;
	if (p->catchup &&
	    (p->catchup < RL_TOKENS_CATCHUP_STRICT || p->catchup > RL_TOKENS_CATCHUP_MAX))
		return -EINVAL;
	if (p->backlog / 1000 > p->burst || (p->backlog / 1000 == p->burst && p->backlog % 1000))
		return -EINVAL;
	if (p->fairness > RL_TOKENS_FAIRNESS_MAX)
		return -EINVAL;
	/* The catch-up pace, rate * (catchup - 1000), must fit. */
	if (p->catchup > RL_TOKENS_CATCHUP_STRICT &&
	    check_mul_overflow(p->rate, (u64)p->catchup - RL_TOKENS_CATCHUP_STRICT, &units))
		return -EINVAL;
	return rl_keyed_check(p);
}

/* a * b / d rounded up; the quotient must fit in 64 bits. */
static u64 rl_mul_div_up(u64 a, u64 b, u64 d)
{
	u64 q = mul_u64_u64_div_u64(a, b, d);

	/* a * b - q * d is the remainder: below d, so exact modulo 2^64. */
	return q + (a * b - q * d != 0);
}

/**
 * rl_default_burst() - bucket depth used when a config leaves it 0
 * @rate:   tokens per period
 * @period: period in ns, already validated
 * Return: what @rate gives in RL_TOKENS_DEFAULT_BURST_NS rounded up, within
 * 1 .. what rl_params_check() accepts.
 */
u64 rl_default_burst(u64 rate, u64 period)
{
	u64 max = RL_TOKENS_BURST_PERIOD_MAX / period;
	u64 whole, frac, burst;

	/* rate * D / period = (rate / period) * D + (rate % period) * D / period */
	frac = rl_mul_div_up(rate % period, RL_TOKENS_DEFAULT_BURST_NS, period);
	if (check_mul_overflow(rate / period, RL_TOKENS_DEFAULT_BURST_NS, &whole) ||
	    check_add_overflow(whole, frac, &burst))
		return max;
	return clamp_t(u64, burst, 1, max);
}

/**
 * rl_bucket_init() - start a bucket full
 * @b:   bucket
 * @p:   its limits
 * @now: current time, ns
 */
void rl_bucket_init(struct rl_bucket *b, const struct rl_params *p, u64 now)
{
	b->tokens = p->burst;
	b->units = 0;
	b->stamp = now;
}

/**
 * rl_bucket_give() - put back tokens taken but not used, up to the burst
 * @b: bucket
 * @p: its limits
 * @n: tokens to return
 */
void rl_bucket_give(struct rl_bucket *b, const struct rl_params *p, u64 n)
{
	u64 tokens;

	if (check_add_overflow(b->tokens, n, &tokens) || tokens >= p->burst) {
		b->tokens = p->burst;
		b->units = 0;
		return;
	}
	b->tokens = tokens;
}

/**
 * rl_bucket_ready() - when @n tokens will have been earned
 * @b: bucket, refilled by the caller
 * @p: its limits
 * @n: tokens wanted, possibly more than the burst (taken as they come)
 * Return: the earliest time, ns, @n tokens are there if nobody else takes
 * any; @b->stamp if now; U64_MAX if never or beyond the clock's range.
 */
u64 rl_bucket_ready(const struct rl_bucket *b, const struct rl_params *p, u64 n)
{
	u64 a, k, s, q, rem, wait, when;

	if (b->tokens >= n)
		return b->stamp;
	if (!p->rate || p->fed)
		return U64_MAX;
	/*
	 * wait = ceil((a * period - units) / rate), a = n - tokens >= 1, where
	 * a * period may not fit. With a = k * rate + s: wait = k * period +
	 * ceil((s * period - units) / rate), s * period / rate = q < period.
	 */
	a = n - b->tokens;
	k = div64_u64_rem(a, p->rate, &s);
	q = mul_u64_u64_div_u64(s, p->period, p->rate);
	rem = s * p->period - q * p->rate;	/* exact modulo 2^64 */
	if (rem >= b->units) {
		/* ceil((q * rate + rem - units) / rate) */
		q += rem != b->units;
		if (check_mul_overflow(k, p->period, &wait) || check_add_overflow(wait, q, &wait))
			return U64_MAX;
	} else {
		/* ceil is q - floor((units - rem) / rate), >= 1 if k == 0. */
		u64 sub = div64_u64(b->units - rem, p->rate);

		if (!k) {
			wait = q - sub;
		} else if (check_mul_overflow(k - 1, p->period, &wait) ||
			   check_add_overflow(wait, p->period - sub + q, &wait)) {
			return U64_MAX;
		}
	}
	if (check_add_overflow(b->stamp, wait, &when))
		return U64_MAX;
	return when;
}

/**
 * rl_bucket_reconfig() - carry a bucket over to new limits, refilled at the old
 * @b:   bucket
 * @old: the limits in force so far
 * @p:   the new limits
 * @now: current time, ns
 */
void rl_bucket_reconfig(struct rl_bucket *b, const struct rl_params *old,
			const struct rl_params *p, u64 now)
{
	rl_bucket_refill(b, old, now);
	/* units < old->period, so the result is below p->period. */
	b->units = mul_u64_u64_div_u64(b->units, p->period, old->period);
	if (b->tokens >= p->burst) {
		b->tokens = p->burst;
		b->units = 0;
	}
}

/**
 * rl_bucket_overflow() - whole tokens a refill would drop for want of room
 * @b:   bucket, before the refill
 * @p:   its limits
 * @now: time of the refill, ns
 * Return: the tokens earned after it fills, saturating at U64_MAX.
 */
u64 rl_bucket_overflow(const struct rl_bucket *b, const struct rl_params *p, u64 now)
{
	u64 need = 0, extra, hi;

	if (now <= b->stamp || !p->rate || p->fed)
		return 0;
	if (b->tokens < p->burst)
		need = rl_mul_div_up((p->burst - b->tokens) * p->period - b->units, 1, p->rate);
	if (now - b->stamp <= need)
		return 0;
	extra = now - b->stamp - need;
	/* extra * rate / period < (extra / period + 1) * rate: does it fit? */
	if (check_mul_overflow(extra / p->period + 1, p->rate, &hi))
		return U64_MAX;
	return mul_u64_u64_div_u64(extra, p->rate, p->period);
}

/**
 * rl_catchup_params() - limits of the catch-up pace
 * @p:  limits with a catchup above RL_TOKENS_CATCHUP_STRICT
 * @rp: set to the extra pace, rate * (catchup - 1000) / 1000 per period,
 *      as a bucket that holds at most a burst (as the arithmetic allows)
 */
void rl_catchup_params(const struct rl_params *p, struct rl_params *rp)
{
	u64 period = p->period * 1000;

	*rp = (struct rl_params) {
		.rate = p->rate * (p->catchup - RL_TOKENS_CATCHUP_STRICT),
		.period = period,
		.burst = min_t(u64, p->burst, RL_TOKENS_BURST_PERIOD_MAX / period),
	};
}
