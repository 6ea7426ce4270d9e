/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Token bucket arithmetic: pure functions (no lock, clock or allocation), built into the
 * module and into a host unit test. A bucket holds whole tokens plus a fraction of one in
 * units of 1/period of a token: time dt adds dt * rate units. Every value stays exact in 64
 * bits because burst * period <= RL_BURST_PERIOD_MAX (2^63).
 */
#ifndef _RL_BUCKET_H
#define _RL_BUCKET_H

#include <linux/math64.h>
#include <linux/overflow.h>
#include <linux/types.h>

#include <linux/ratelimit_dev.h>

/* Bounds of struct rl_params: the uapi header's, defined there only. */
#define RL_TOKENS_PERIOD_MAX		RL_PERIOD_MAX_NS
#define RL_TOKENS_BURST_PERIOD_MAX	RL_BURST_PERIOD_MAX
/* The default burst is what the rate gives in this much time. */
#define RL_TOKENS_DEFAULT_BURST_NS	100000000ULL
#define RL_TOKENS_CATCHUP_STRICT	RL_CATCHUP_STRICT
#define RL_TOKENS_CATCHUP_MAX		RL_CATCHUP_MAX
#define RL_TOKENS_FAIRNESS_MAX		RL_FAIRNESS_MAX
#define RL_TOKENS_KEYS_MAX		RL_KEYS_MAX
#define RL_TOKENS_KEY_RATE_MAX		RL_KEY_RATE_MAX

/* The limits of a bucket, and of the limiter around it. */
struct rl_params {
	u64 rate;		/* tokens added per @period; 0 pauses refill */
	u64 period;		/* ns, 1 .. RL_TOKENS_PERIOD_MAX */
	u64 burst;		/* bucket depth in tokens, >= 1 */
	bool unlimited;		/* grant everything without taking tokens */
	bool fed;		/* time adds no tokens (RL_IOC_DEPOSIT does) */
	u64 concurrency;	/* most tokens held at once, 0 for no limit */
	u32 catchup;		/* per mille: 0, or RL_TOKENS_CATCHUP_STRICT .. RL_CATCHUP_MAX */
	u64 backlog;		/* most tokens kept for catching up, <= burst * 1000 */
	u32 fairness;		/* 1 in @fairness grants goes lowest first, 0: never */
	bool keyed;		/* a bucket per key of these limits, not one */
	bool fair_per_user;	/* a user's clients share one flow a level (queue.c) */
	u64 keys;		/* keyed: most keys with state, 0 for the default */
};

/* The state of a token bucket. */
struct rl_bucket {
	u64 tokens;		/* whole tokens available, 0 .. burst */
	u64 units;		/* fraction of the next token, 0 .. period - 1; 0 when full */
	u64 stamp;		/* time of the last refill, ns */
};

int rl_params_check(const struct rl_params *p);
u64 rl_default_burst(u64 rate, u64 period);
void rl_bucket_init(struct rl_bucket *b, const struct rl_params *p, u64 now);
void rl_bucket_give(struct rl_bucket *b, const struct rl_params *p, u64 n);
u64 rl_bucket_ready(const struct rl_bucket *b, const struct rl_params *p, u64 n);
void rl_bucket_reconfig(struct rl_bucket *b, const struct rl_params *old,
			const struct rl_params *p, u64 now);
u64 rl_bucket_overflow(const struct rl_bucket *b, const struct rl_params *p, u64 now);
void rl_catchup_params(const struct rl_params *p, struct rl_params *rp);

/**
 * rl_bucket_refill() - add the tokens earned since the last refill
 * @b:   bucket
 * @p:   its limits
 * @now: current time, ns; a time before the last refill adds nothing
 */
static inline void rl_bucket_refill(struct rl_bucket *b, const struct rl_params *p, u64 now)
{
	u64 dt, need, units;

	if (now <= b->stamp)
		return;
	dt = now - b->stamp;
	b->stamp = now;
	if (b->tokens >= p->burst) {
		b->units = 0;
		return;
	}
	if (!p->rate || p->fed)
		return;
	/* Units still missing to a full bucket: at most burst * period. */
	need = (p->burst - b->tokens) * p->period - b->units;
	if (check_mul_overflow(dt, p->rate, &units) || units >= need) {
		b->tokens = p->burst;
		b->units = 0;
		return;
	}
	/* Here dt * rate < need <= 2^63, so the sum does not wrap. */
	units += b->units;
	b->tokens += div64_u64_rem(units, p->period, &b->units);
}

/**
 * rl_bucket_take() - take @n tokens if the bucket, refilled, holds enough
 * @b: bucket
 * @n: tokens wanted
 * Return: true if @n tokens were taken, false if nothing was.
 */
static inline bool rl_bucket_take(struct rl_bucket *b, u64 n)
{
	if (b->tokens < n)
		return false;
	b->tokens -= n;
	return true;
}

#endif /* _RL_BUCKET_H */
