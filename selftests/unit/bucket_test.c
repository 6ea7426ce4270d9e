// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host unit test of driver/bucket.c, the token bucket arithmetic of the
 * ratelimit module, with a fake clock.
 *
 * Every result is compared with an independent exact model kept in 128-bit
 * integers: a bucket holds M = tokens * period + units "units", refill adds
 * dt * rate units and caps M at burst * period, take removes n * period.
 * Random simulations drive the API the way the module does (refill then
 * take, or ready then jump the clock there and take) and check after every
 * step that
 *  - the bucket equals the model (tokens and units);
 *  - tokens are conserved: (granted - given back) * period + M + dropped ==
 *    burst * period + (stamp - start) * rate, all in units, where "dropped"
 *    counts the units the burst cap threw away;
 *  - the token bucket bound holds for windows [t1, t2] ending at the step:
 *    granted - given back <= burst + floor((t2 - t1) * rate / period).
 *    No "+1" for a carried fraction: the bucket content at t1, fraction
 *    included, is at most burst * period units, so with E the units earned
 *    in the window, (granted - given) * period <= burst * period + E and the
 *    floor follows as the left side is a whole number of tokens. The bound
 *    is attained (see the greedy case), so it is exact.
 *
 * Output is TAP. The PRNG seed is printed; pass it as argv[1] to replay.
 *
 * Build from the top directory, with this file and driver/bucket.c:
 * gcc -O2 -Wall -Wextra -I selftests/unit/shim -I driver <files>
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/limits.h>

#include "bucket.h"

#define NS_PER_SEC	1000000000ULL
#define PERIOD_MAX	RL_TOKENS_PERIOD_MAX
#define BP_MAX		RL_TOKENS_BURST_PERIOD_MAX
#define DEF_NS		RL_TOKENS_DEFAULT_BURST_NS
#define ULL(x)		((unsigned long long)(x))
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Diagnostics printed per failing case before the rest is cut. */
#define DIAG_MAX	12

static int case_failed;
static int diag_left;
static unsigned long long sim_steps;
static unsigned long long api_calls;

/* ---- PRNG: xoshiro256** seeded with splitmix64 ---- */

static u64 rng_s[4];

static u64 splitmix64(u64 *x)
{
	u64 z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void rng_seed(u64 seed)
{
	int i;

	for (i = 0; i < 4; i++)
		rng_s[i] = splitmix64(&seed);
}

static u64 rotl(u64 x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static u64 rnd(void)
{
	u64 r = rotl(rng_s[1] * 5, 7) * 9;
	u64 t = rng_s[1] << 17;

	rng_s[2] ^= rng_s[0];
	rng_s[3] ^= rng_s[1];
	rng_s[1] ^= rng_s[2];
	rng_s[0] ^= rng_s[3];
	rng_s[2] ^= t;
	rng_s[3] = rotl(rng_s[3], 45);
	return r;
}

/* Uniform in [0, max], any max. */
static u64 rnd_to(u64 max)
{
	if (max == U64_MAX)
		return rnd();
	return (u64)(((__uint128_t)rnd() * (max + 1)) >> 64);
}

/* Uniform in [lo, hi]. */
static u64 rnd_in(u64 lo, u64 hi)
{
	return lo + rnd_to(hi - lo);
}

/* Log-uniform-ish in [lo, hi]: a random bit length, then a random value. */
static u64 rnd_log(u64 lo, u64 hi)
{
	u64 span = hi - lo, lim;
	int bits = 64 - (span ? __builtin_clzll(span) : 64);

	bits = rnd_to(bits);
	lim = bits >= 64 ? U64_MAX : (1ULL << bits) - 1;
	if (lim > span)
		lim = span;
	return lo + rnd_to(lim);
}

/* ---- reporting ---- */

static const char *s128(__uint128_t v, char *buf)
{
	char tmp[48];
	int i = 0, j = 0;

	do {
		tmp[i++] = '0' + (int)(v % 10);
		v /= 10;
	} while (v);
	while (i)
		buf[j++] = tmp[--i];
	buf[j] = 0;
	return buf;
}

static bool fail(int line, const char *what, const char *fmt, ...)
{
	va_list ap;

	case_failed = 1;
	if (diag_left <= 0)
		return false;
	printf("# line %d: %s failed: ", line, what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!--diag_left)
		printf("# (further failures of this case not shown)\n");
	return false;
}

/* The message arguments are evaluated only on failure. */
#define CHECK(cond, ...) ((cond) ? true : fail(__LINE__, #cond, __VA_ARGS__))

static const char *fmt_bp(const struct rl_bucket *b, const struct rl_params *p)
{
	static char buf[4][256];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]),
		 "bucket {tokens %llu units %llu stamp %llu} params {rate %llu period %llu burst %llu}",
		 ULL(b->tokens), ULL(b->units), ULL(b->stamp),
		 ULL(p->rate), ULL(p->period), ULL(p->burst));
	return buf[k];
}

/* ---- the exact model ---- */

static __uint128_t mul128(u64 a, u64 b)
{
	return (__uint128_t)a * b;
}

static __uint128_t units_of(const struct rl_bucket *b,
			    const struct rl_params *p)
{
	return mul128(b->tokens, p->period) + b->units;
}

/* Units held by a full bucket. */
static __uint128_t cap_of(const struct rl_params *p)
{
	return mul128(p->burst, p->period);
}

static int model_check_params(const struct rl_params *p)
{
	if (p->period < 1 || p->period > PERIOD_MAX || p->burst < 1)
		return -1;
	return cap_of(p) <= BP_MAX ? 0 : -1;
}

/* Refill of model content m stamped *stamp; returns the units dropped. */
static __uint128_t model_refill(__uint128_t *m, u64 *stamp,
				const struct rl_params *p, u64 now)
{
	__uint128_t add, cap = cap_of(p), drop = 0;

	if (now <= *stamp)
		return 0;
	add = mul128(now - *stamp, p->rate);
	*stamp = now;
	if (*m + add > cap) {
		drop = *m + add - cap;
		*m = cap;
	} else {
		*m += add;
	}
	return drop;
}

/* Earliest time at which content m stamped stamp holds n tokens. */
static u64 model_ready(__uint128_t m, u64 stamp,
		       const struct rl_params *p, u64 n)
{
	__uint128_t need, when;

	if (mul128(n, p->period) <= m)
		return stamp;
	if (!p->rate)
		return U64_MAX;
	need = mul128(n, p->period) - m;
	when = stamp + (need + p->rate - 1) / p->rate;
	return when >= U64_MAX ? U64_MAX : (u64)when;
}

static u64 model_default_burst(u64 rate, u64 period)
{
	__uint128_t b = (mul128(rate, DEF_NS) + period - 1) / period;
	u64 max = BP_MAX / period;

	if (b < 1)
		return 1;
	return b > max ? max : (u64)b;
}

/* Does bucket b equal the model content m stamped stamp? */
static bool bucket_is(const struct rl_bucket *b, const struct rl_params *p,
		      __uint128_t m, u64 stamp)
{
	return b->units < p->period && b->tokens <= p->burst &&
	       units_of(b, p) == m && b->stamp == stamp &&
	       (b->tokens < p->burst || !b->units);
}

static bool same(const struct rl_bucket *a, const struct rl_bucket *b)
{
	return a->tokens == b->tokens && a->units == b->units &&
	       a->stamp == b->stamp;
}

/* Random valid parameters, state and inputs. */
static void rnd_params(struct rl_params *p)
{
	switch (rnd_to(7)) {
	case 0:
		p->period = 1;
		break;
	case 1:
		p->period = PERIOD_MAX;
		break;
	case 2:
		p->period = NS_PER_SEC;
		break;
	default:
		p->period = rnd_log(1, PERIOD_MAX);
	}
	switch (rnd_to(7)) {
	case 0:
		p->burst = 1;
		break;
	case 1:
		p->burst = BP_MAX / p->period;
		break;
	default:
		p->burst = rnd_log(1, BP_MAX / p->period);
	}
	switch (rnd_to(9)) {
	case 0:
		p->rate = 0;
		break;
	case 1:
		p->rate = U64_MAX;
		break;
	case 2:
		p->rate = rnd_log(1, p->period);
		break;
	default:
		p->rate = rnd_log(1, U64_MAX);
	}
	p->unlimited = false;
	p->fed = false;
}

static void rnd_bucket(struct rl_bucket *b, const struct rl_params *p)
{
	switch (rnd_to(5)) {
	case 0:
		b->tokens = p->burst;
		break;
	case 1:
		b->tokens = 0;
		break;
	default:
		b->tokens = rnd_log(0, p->burst);
	}
	b->units = b->tokens == p->burst ? 0 : rnd_to(p->period - 1);
	if (b->units && !rnd_to(7))
		b->units = p->period - 1;
	switch (rnd_to(5)) {
	case 0:
		b->stamp = 0;
		break;
	case 1:
		b->stamp = U64_MAX - rnd_log(0, 1ULL << 40);
		break;
	default:
		b->stamp = rnd_log(0, U64_MAX);
	}
}

/* ---- rl_params_check ---- */

static void pc(u64 rate, u64 period, u64 burst, int want)
{
	struct rl_params p = { .rate = rate, .period = period, .burst = burst };
	int got = rl_params_check(&p);

	CHECK(got == want, "rate %llu period %llu burst %llu: got %d want %d",
	      ULL(rate), ULL(period), ULL(burst), got, want);
}

static void test_params_period(void)
{
	pc(1, 0, 1, -EINVAL);
	pc(0, 0, 0, -EINVAL);
	pc(1, 1, 1, 0);
	pc(1, PERIOD_MAX, 1, 0);
	pc(U64_MAX, PERIOD_MAX, BP_MAX / PERIOD_MAX, 0);
	pc(1, PERIOD_MAX + 1, 1, -EINVAL);
	pc(1, U64_MAX, 1, -EINVAL);
	pc(1, 1ULL << 63, 1, -EINVAL);
}

static void test_params_burst(void)
{
	pc(1, 1, 0, -EINVAL);
	pc(1, PERIOD_MAX, 0, -EINVAL);
	pc(0, NS_PER_SEC, 1, 0);
	pc(U64_MAX, 1, 1, 0);
}

static void test_params_product(void)
{
	/* 2^63 + 1 = 119537721 * 77158673929 */
	CHECK(mul128(119537721ULL, 77158673929ULL) == BP_MAX + 1, "factors");
	pc(1, 1, BP_MAX, 0);
	pc(1, 1, BP_MAX + 1, -EINVAL);
	pc(1, 2, BP_MAX / 2, 0);
	pc(1, 2, BP_MAX / 2 + 1, -EINVAL);
	pc(1, 1ULL << 46, 1ULL << 17, 0);
	pc(1, 1ULL << 46, (1ULL << 17) + 1, -EINVAL);
	pc(1, 77158673929ULL, 119537721ULL, -EINVAL);
	pc(1, 77158673929ULL, 119537720ULL, 0);
	pc(1, NS_PER_SEC, BP_MAX / NS_PER_SEC, 0);
	pc(1, NS_PER_SEC, BP_MAX / NS_PER_SEC + 1, -EINVAL);
	pc(1, PERIOD_MAX, BP_MAX / PERIOD_MAX, 0);
	pc(1, PERIOD_MAX, BP_MAX / PERIOD_MAX + 1, -EINVAL);
}

static void test_params_overflow(void)
{
	/* products that wrap u64 to something small must not pass */
	pc(1, 1ULL << 32, 1ULL << 32, -EINVAL);		/* 2^64 -> 0 */
	pc(1, 1ULL << 31, (1ULL << 33) + 1, -EINVAL);	/* -> 2^31 */
	pc(1, 2, (1ULL << 63) + 1, -EINVAL);		/* -> 2 */
	pc(1, 3, 0x5555555555555556ULL, -EINVAL);	/* -> 2 */
	pc(1, PERIOD_MAX, U64_MAX, -EINVAL);
	pc(1, 1, U64_MAX, -EINVAL);
	pc(1, 2, U64_MAX, -EINVAL);
}

static void test_params_random(void)
{
	struct rl_params p = { 0 };
	int i, got, want;

	for (i = 0; i < 200000; i++) {
		p.rate = rnd();
		p.period = rnd_to(3) ? rnd_log(0, PERIOD_MAX + 2) : rnd();
		switch (rnd_to(3)) {
		case 0:
			p.burst = p.period ? BP_MAX / p.period + rnd_in(0, 2) - 1 : 1;
			break;
		case 1:
			p.burst = rnd();
			break;
		default:
			p.burst = rnd_log(0, U64_MAX);
		}
		got = rl_params_check(&p);
		want = model_check_params(&p) ? -EINVAL : 0;
		if (!CHECK(got == want, "period %llu burst %llu: got %d want %d",
			   ULL(p.period), ULL(p.burst), got, want))
			return;
	}
}

/* ---- rl_default_burst ---- */

static void db(u64 rate, u64 period, u64 want)
{
	u64 got = rl_default_burst(rate, period);
	struct rl_params p = { .rate = rate, .period = period, .burst = got };

	CHECK(got == want, "rate %llu period %llu: got %llu want %llu",
	      ULL(rate), ULL(period), ULL(got), ULL(want));
	CHECK(!rl_params_check(&p), "rate %llu period %llu: burst %llu rejected",
	      ULL(rate), ULL(period), ULL(got));
}

static void test_default_burst_examples(void)
{
	db(12000, NS_PER_SEC, 1200);
	db(1, 10 * NS_PER_SEC, 1);
	db(10 << 20, NS_PER_SEC, 1048576);
	db((10 << 20) + 1, NS_PER_SEC, 1048577);	/* ceil of .1 */
	db(10000001, NS_PER_SEC, 1000001);		/* ceil of .1 */
	db(1000000000, NS_PER_SEC, 100000000);
	db(0, NS_PER_SEC, 1);
	db(0, 1, 1);
	db(0, PERIOD_MAX, 1);
	db(1, PERIOD_MAX, 1);
	db(1, 1, 100000000);
	db(7, 3, 233333334);
	db(U64_MAX, 1, BP_MAX);
	db(U64_MAX, 2, BP_MAX / 2);
	db(U64_MAX, 7, BP_MAX / 7);
	db(1ULL << 60, 3, BP_MAX / 3);
	db(U64_MAX, NS_PER_SEC, BP_MAX / NS_PER_SEC);
	db(U64_MAX, PERIOD_MAX, BP_MAX / PERIOD_MAX);
	db(U64_MAX - 1, PERIOD_MAX, BP_MAX / PERIOD_MAX);
	/* just below and at the clamp for a one second period */
	db(BP_MAX / NS_PER_SEC * 10, NS_PER_SEC, BP_MAX / NS_PER_SEC);
	db(92233720360ULL, NS_PER_SEC, 9223372036ULL);
	db(92233720350ULL, NS_PER_SEC, 9223372035ULL);
}

/*
 * rate / period * D fits in u64 but adding the rounded-up fraction of the
 * remainder wraps: 184467440737 * 10^8 = U64_MAX - 9551615 and 1/10 of
 * 10^8 is 10^7. Exact: clamped to 2^63 / 10.
 */
static void test_default_burst_wrap(void)
{
	u64 q = U64_MAX / DEF_NS;

	db(q * 10 + 1, 10, BP_MAX / 10);
	db(q * 10 + 9, 10, BP_MAX / 10);
	db(q * 2 + 1, 2, BP_MAX / 2);
	db(q * 3 + 1, 3, BP_MAX / 3);
	db(q * 1000 + 999, 1000, BP_MAX / 1000);
	db(q * 1000 + 95, 1000, BP_MAX / 1000);	/* 9500000: no wrap */
	db(q * 1000 + 96, 1000, BP_MAX / 1000);	/* 9600000: wraps */
}

static void test_default_burst_random(void)
{
	u64 rate, period, got, want;
	struct rl_params p = { 0 };
	int i;

	for (i = 0; i < 300000; i++) {
		period = rnd_to(3) ? rnd_log(1, PERIOD_MAX) : rnd_in(1, 1000);
		switch (rnd_to(3)) {
		case 0:	/* around where rate / period * D leaves u64 */
			rate = (U64_MAX / DEF_NS) * (__uint128_t)period >= U64_MAX ?
			       rnd() : (U64_MAX / DEF_NS) * period + rnd_to(period);
			break;
		case 1:	/* around the clamp */
			rate = mul128(BP_MAX / period, period) / DEF_NS *
			       period + rnd_to(2 * period) - period / 2;
			break;
		default:
			rate = rnd_log(0, U64_MAX);
		}
		got = rl_default_burst(rate, period);
		want = model_default_burst(rate, period);
		p.rate = rate;
		p.period = period;
		p.burst = got;
		if (!CHECK(got == want && !rl_params_check(&p),
			   "rate %llu period %llu: got %llu want %llu",
			   ULL(rate), ULL(period), ULL(got), ULL(want)))
			return;
	}
}

/* ---- init, refill, take, give ---- */

static void test_init(void)
{
	struct rl_params p = { .rate = 5, .period = 7, .burst = 11 };
	struct rl_bucket b;

	memset(&b, 0x5a, sizeof(b));
	rl_bucket_init(&b, &p, 12345);
	CHECK(b.tokens == 11 && b.units == 0 && b.stamp == 12345, "%s",
	      fmt_bp(&b, &p));
	rl_bucket_init(&b, &p, U64_MAX);
	CHECK(b.tokens == 11 && b.units == 0 && b.stamp == U64_MAX, "%s",
	      fmt_bp(&b, &p));
}

static void test_refill_past(void)
{
	struct rl_params p;
	struct rl_bucket b, c;
	u64 now;
	int i;

	for (i = 0; i < 100000; i++) {
		rnd_params(&p);
		rnd_bucket(&b, &p);
		c = b;
		now = rnd_to(2) ? b.stamp : rnd_to(b.stamp);
		if (!rnd_to(7))
			now = 0;
		rl_bucket_refill(&b, &p, now);
		if (!CHECK(same(&b, &c), "now %llu: %s -> %s", ULL(now),
			   fmt_bp(&c, &p), fmt_bp(&b, &p)))
			return;
	}
}

static void test_refill_long_idle(void)
{
	static const u64 cfg[][3] = {		/* rate, period, burst */
		{ 1, 1, BP_MAX },
		{ 1, PERIOD_MAX, BP_MAX / PERIOD_MAX },
		{ 1, 10 * NS_PER_SEC, 1 },
		{ U64_MAX, 1, BP_MAX },
		{ U64_MAX, PERIOD_MAX, BP_MAX / PERIOD_MAX },
		{ 7, 3, BP_MAX / 3 },
		{ 10 << 20, NS_PER_SEC, BP_MAX / NS_PER_SEC },
		{ 2, 1ULL << 46, 1ULL << 17 },
	};
	struct rl_params p = { 0 };
	struct rl_bucket b;
	__uint128_t m;
	u64 st;
	size_t i;
	int k;

	for (i = 0; i < ARRAY_SIZE(cfg); i++) {
		p.rate = cfg[i][0];
		p.period = cfg[i][1];
		p.burst = cfg[i][2];
		for (k = 0; k < 4; k++) {
			/* full whenever the model earns enough, exactly */
			b.tokens = k & 1 ? p.burst - 1 : 0;
			b.units = k & 2 ? p.period - 1 : 0;
			b.stamp = 0;
			m = units_of(&b, &p);
			st = 0;
			model_refill(&m, &st, &p, U64_MAX);
			rl_bucket_refill(&b, &p, U64_MAX);
			CHECK(bucket_is(&b, &p, m, st) && st == U64_MAX, "%s",
			      fmt_bp(&b, &p));
			if (mul128(U64_MAX, p.rate) >= cap_of(&p))
				CHECK(b.tokens == p.burst && !b.units, "%s",
				      fmt_bp(&b, &p));
		}
	}
	/* rate 0 earns nothing, however long */
	p.rate = 0;
	p.period = 3;
	p.burst = 5;
	b.tokens = 2;
	b.units = 2;
	b.stamp = 1;
	rl_bucket_refill(&b, &p, U64_MAX);
	CHECK(b.tokens == 2 && b.units == 2 && b.stamp == U64_MAX, "%s",
	      fmt_bp(&b, &p));
	/* a full bucket stays full and moves its stamp */
	b.tokens = 5;
	b.units = 0;
	b.stamp = 9;
	p.rate = 1;
	rl_bucket_refill(&b, &p, 10);
	CHECK(b.tokens == 5 && !b.units && b.stamp == 10, "%s", fmt_bp(&b, &p));
}

static void test_refill_random(void)
{
	struct rl_params p;
	struct rl_bucket b, c;
	__uint128_t m;
	u64 now, st;
	int i;

	for (i = 0; i < 300000; i++) {
		rnd_params(&p);
		rnd_bucket(&b, &p);
		c = b;
		switch (rnd_to(3)) {
		case 0:
			now = b.stamp + rnd_to(U64_MAX - b.stamp);
			break;
		case 1:	/* right around the fill time */
			now = model_ready(units_of(&b, &p), b.stamp, &p,
					  p.burst);
			if (now != U64_MAX)
				now += rnd_to(2) - 1;
			break;
		default:
			now = b.stamp + rnd_log(0, U64_MAX - b.stamp);
		}
		m = units_of(&b, &p);
		st = b.stamp;
		model_refill(&m, &st, &p, now);
		rl_bucket_refill(&b, &p, now);
		if (!CHECK(bucket_is(&b, &p, m, st), "now %llu: %s -> %s",
			   ULL(now), fmt_bp(&c, &p), fmt_bp(&b, &p)))
			return;
	}
}

static void test_take(void)
{
	struct rl_params p = { .rate = 1, .period = 10, .burst = 100 };
	struct rl_bucket b = { .tokens = 40, .units = 7, .stamp = 3 };

	CHECK(rl_bucket_take(&b, 0) && b.tokens == 40, "take 0");
	CHECK(!rl_bucket_take(&b, 41) && b.tokens == 40 && b.units == 7,
	      "take 41 of 40: %s", fmt_bp(&b, &p));
	CHECK(!rl_bucket_take(&b, U64_MAX) && b.tokens == 40, "take U64_MAX");
	CHECK(rl_bucket_take(&b, 15) && b.tokens == 25 && b.units == 7,
	      "take 15: %s", fmt_bp(&b, &p));
	CHECK(rl_bucket_take(&b, 25) && b.tokens == 0 && b.units == 7,
	      "take 25: %s", fmt_bp(&b, &p));
	CHECK(!rl_bucket_take(&b, 1) && b.tokens == 0, "take from empty");
	b.tokens = BP_MAX;
	CHECK(rl_bucket_take(&b, BP_MAX) && !b.tokens, "take 2^63");
}

static void give_one(struct rl_bucket *b, const struct rl_params *p, u64 n)
{
	struct rl_bucket c = *b;
	__uint128_t m = units_of(b, p) + mul128(n, p->period);

	if (m > cap_of(p))
		m = cap_of(p);
	rl_bucket_give(b, p, n);
	CHECK(bucket_is(b, p, m, c.stamp), "give %llu: %s -> %s", ULL(n),
	      fmt_bp(&c, p), fmt_bp(b, p));
}

static void test_give(void)
{
	struct rl_params p = { .rate = 3, .period = 10, .burst = 100 };
	struct rl_bucket b = { .tokens = 40, .units = 7, .stamp = 3 };
	struct rl_params q;
	int i;

	give_one(&b, &p, 0);
	give_one(&b, &p, 59);			/* 99.7: keeps the fraction */
	CHECK(b.tokens == 99 && b.units == 7, "%s", fmt_bp(&b, &p));
	give_one(&b, &p, 1);			/* exactly burst: drops it */
	CHECK(b.tokens == 100 && !b.units, "%s", fmt_bp(&b, &p));
	give_one(&b, &p, 1);
	b.tokens = 5;
	b.units = 9;
	give_one(&b, &p, U64_MAX);		/* tokens + n wraps u64 */
	CHECK(b.tokens == 100 && !b.units, "%s", fmt_bp(&b, &p));
	b.tokens = 5;
	give_one(&b, &p, U64_MAX - 4);		/* wraps to exactly 0 */
	b.tokens = 5;
	give_one(&b, &p, U64_MAX - 5);		/* U64_MAX, no wrap */
	CHECK(b.tokens == 100, "%s", fmt_bp(&b, &p));
	q.period = 1;
	q.burst = BP_MAX;
	q.rate = 1;
	b.tokens = BP_MAX - 1;
	b.units = 0;
	give_one(&b, &q, 1ULL << 63);
	give_one(&b, &q, U64_MAX);
	for (i = 0; i < 300000; i++) {
		rnd_params(&q);
		rnd_bucket(&b, &q);
		switch (rnd_to(4)) {
		case 0:
			give_one(&b, &q, U64_MAX - b.tokens + rnd_to(2) - 1);
			break;
		case 1:
			give_one(&b, &q, q.burst - b.tokens + rnd_to(2) - 1);
			break;
		case 2:
			give_one(&b, &q, rnd());
			break;
		default:
			give_one(&b, &q, rnd_log(0, q.burst));
		}
		if (case_failed)
			return;
	}
}

/* ---- rl_bucket_ready ---- */

/*
 * ready(n) against the model and, for n <= burst, against refills of
 * copies: fewer than n tokens at ready - 1, at least n at ready.
 */
static bool ready_one(const struct rl_bucket *b, const struct rl_params *p,
		      u64 n)
{
	u64 got = rl_bucket_ready(b, p, n);
	u64 want = model_ready(units_of(b, p), b->stamp, p, n);
	struct rl_bucket c;

	if (!CHECK(got == want, "n %llu: %s: got %llu want %llu", ULL(n),
		   fmt_bp(b, p), ULL(got), ULL(want)))
		return false;
	if (n > p->burst)
		return true;
	if (got > b->stamp) {
		c = *b;
		rl_bucket_refill(&c, p, got - 1);
		api_calls++;
		if (!CHECK(c.tokens < n, "n %llu: %s: %llu tokens at ready-1",
			   ULL(n), fmt_bp(b, p), ULL(c.tokens)))
			return false;
	}
	if (got != U64_MAX || (p->rate && mul128(U64_MAX - b->stamp, p->rate) >=
			       mul128(n, p->period) - units_of(b, p))) {
		c = *b;
		rl_bucket_refill(&c, p, got);
		api_calls++;
		if (!CHECK(c.tokens >= n, "n %llu: %s: %llu tokens at ready %llu",
			   ULL(n), fmt_bp(b, p), ULL(c.tokens), ULL(got)))
			return false;
	}
	return true;
}

/* A fed bucket: time adds nothing, whatever the rate; gives still count. */
static void test_fed(void)
{
	struct rl_params p = { .rate = 3, .period = 10, .burst = 100,
			       .fed = true };
	struct rl_bucket b = { .tokens = 40, .units = 7, .stamp = 1000 };

	rl_bucket_refill(&b, &p, 1000000);
	CHECK(b.tokens == 40 && b.units == 7 && b.stamp == 1000000,
	      "refill: %s", fmt_bp(&b, &p));
	CHECK(rl_bucket_ready(&b, &p, 41) == U64_MAX, "ready 41");
	CHECK(rl_bucket_ready(&b, &p, 40) == 1000000, "ready 40");
	CHECK(rl_bucket_overflow(&b, &p, 2000000) == 0, "overflow");
	rl_bucket_give(&b, &p, 70);
	CHECK(b.tokens == 100 && !b.units, "give: %s", fmt_bp(&b, &p));
}

static void test_ready_edges(void)
{
	struct rl_params p = { .rate = 0, .period = 10, .burst = 100 };
	struct rl_bucket b = { .tokens = 40, .units = 7, .stamp = 1000 };

	CHECK(rl_bucket_ready(&b, &p, 41) == U64_MAX, "rate 0");
	CHECK(rl_bucket_ready(&b, &p, 40) == 1000, "rate 0, available");
	CHECK(rl_bucket_ready(&b, &p, 0) == 1000, "n 0");
	p.rate = 3;
	/* 41 tokens: 10 - 7 = 3 units missing, one ns */
	CHECK(rl_bucket_ready(&b, &p, 41) == 1001, "%llu",
	      ULL(rl_bucket_ready(&b, &p, 41)));
	/* 42: 13 units, 5 ns */
	CHECK(rl_bucket_ready(&b, &p, 42) == 1005, "%llu",
	      ULL(rl_bucket_ready(&b, &p, 42)));
	ready_one(&b, &p, 41);
	ready_one(&b, &p, 100);
	/* the wait does not fit the clock: U64_MAX, no wrap */
	b.stamp = U64_MAX - 4;
	CHECK(rl_bucket_ready(&b, &p, 42) == U64_MAX, "%llu",
	      ULL(rl_bucket_ready(&b, &p, 42)));
	b.stamp = U64_MAX - 5;
	CHECK(rl_bucket_ready(&b, &p, 42) == U64_MAX, "lands on U64_MAX");
	b.stamp = U64_MAX - 6;
	CHECK(rl_bucket_ready(&b, &p, 42) == U64_MAX - 1, "%llu",
	      ULL(rl_bucket_ready(&b, &p, 42)));
	/* 1 token per day, a full day bucket, from empty: 106751 days */
	p.rate = 1;
	p.period = PERIOD_MAX;
	p.burst = BP_MAX / PERIOD_MAX;
	b.tokens = 0;
	b.units = 0;
	b.stamp = 0;
	CHECK(rl_bucket_ready(&b, &p, p.burst) == p.burst * PERIOD_MAX, "day");
	b.stamp = U64_MAX - p.burst * PERIOD_MAX;
	CHECK(rl_bucket_ready(&b, &p, p.burst) == U64_MAX, "day, late");
	b.stamp--;
	CHECK(rl_bucket_ready(&b, &p, p.burst) == U64_MAX - 1, "day, late-1");
	/* n * period beyond u64 while the wait is also beyond the clock */
	p.rate = 1;
	p.period = 1ULL << 40;
	p.burst = 1;
	b.stamp = 5;
	CHECK(rl_bucket_ready(&b, &p, 1ULL << 30) == U64_MAX, "n*period wraps");
	CHECK(rl_bucket_ready(&b, &p, U64_MAX) == U64_MAX, "n U64_MAX");
	p.period = 1;
	p.rate = 1;
	CHECK(rl_bucket_ready(&b, &p, U64_MAX) == U64_MAX, "n U64_MAX, 1/ns");
	p.rate = 2;
	CHECK(rl_bucket_ready(&b, &p, U64_MAX) == 5 + (1ULL << 63), "2/ns");
	p.rate = U64_MAX;
	CHECK(rl_bucket_ready(&b, &p, U64_MAX) == 6, "U64_MAX/ns");
}

static void test_ready_random(void)
{
	struct rl_params p;
	struct rl_bucket b;
	u64 n;
	int i;

	for (i = 0; i < 300000; i++) {
		rnd_params(&p);
		rnd_bucket(&b, &p);
		switch (rnd_to(5)) {
		case 0:
			n = b.tokens + rnd_to(2);
			break;
		case 1:
			n = p.burst;
			break;
		default:
			n = rnd_log(0, p.burst);
		}
		if (n > p.burst)
			n = p.burst;
		if (!ready_one(&b, &p, n))
			return;
	}
}

/*
 * n above the burst ("taken as they come"): the time n tokens will have
 * been earned. Here n * period may leave u64 while the time does not.
 */
static void test_ready_above_burst(void)
{
	struct rl_params p = { .rate = 10 * NS_PER_SEC, .period = NS_PER_SEC,
			       .burst = NS_PER_SEC };
	struct rl_bucket b = { .tokens = 0, .units = 0, .stamp = 0 };
	u64 n, got;
	int i;

	/* 2 * 10^10 tokens at 10^10 per second: 2 s */
	got = rl_bucket_ready(&b, &p, 20 * NS_PER_SEC);
	CHECK(got == 2 * NS_PER_SEC, "n %llu: %s: got %llu want %llu",
	      ULL(20 * NS_PER_SEC), fmt_bp(&b, &p), ULL(got),
	      ULL(2 * NS_PER_SEC));
	for (i = 0; i < 200000 && !case_failed; i++) {
		rnd_params(&p);
		rnd_bucket(&b, &p);
		n = rnd_to(1) ? rnd_log(p.burst, U64_MAX) : rnd();
		ready_one(&b, &p, n);
	}
}

/* ---- rl_bucket_reconfig ---- */

static bool reconfig_one(struct rl_bucket *b, const struct rl_params *old,
			 const struct rl_params *p, u64 now)
{
	struct rl_bucket c = *b;
	__uint128_t m = units_of(b, old);
	u64 st = b->stamp, tokens, units;

	model_refill(&m, &st, old, now);
	tokens = m / old->period;
	units = mul128(m % old->period, p->period) / old->period;
	if (tokens >= p->burst) {
		tokens = p->burst;
		units = 0;
	}
	rl_bucket_reconfig(b, old, p, now);
	return CHECK(b->tokens == tokens && b->units == units &&
		     b->stamp == st && b->units < p->period,
		     "now %llu: %s -> new {rate %llu period %llu burst %llu}: %s, want tokens %llu units %llu",
		     ULL(now), fmt_bp(&c, old), ULL(p->rate), ULL(p->period),
		     ULL(p->burst), fmt_bp(b, p), ULL(tokens), ULL(units));
}

static void test_reconfig(void)
{
	struct rl_params old = { .rate = 1, .period = 10, .burst = 100 };
	struct rl_params p = { .rate = 1, .period = 1000, .burst = 50 };
	struct rl_bucket b = { .tokens = 40, .units = 7, .stamp = 100 };
	u64 now;
	int i;

	/* 40.7 tokens: kept, fraction rescaled to 700/1000 */
	reconfig_one(&b, &old, &p, 100);
	CHECK(b.tokens == 40 && b.units == 700 && b.stamp == 100, "%s",
	      fmt_bp(&b, &p));
	/* back to period 10, burst 30: clamped, fraction dropped */
	reconfig_one(&b, &p, &old, 100);
	old.burst = 30;
	b = (struct rl_bucket){ .tokens = 40, .units = 7, .stamp = 100 };
	p = old;
	p.burst = 100;
	reconfig_one(&b, &p, &old, 100);
	CHECK(b.tokens == 30 && !b.units, "%s", fmt_bp(&b, &old));
	/* earned time counts at the old rate: 29.3 + 3 ns * 1/10 -> 29.6 */
	b = (struct rl_bucket){ .tokens = 29, .units = 3, .stamp = 100 };
	p.rate = 1000;
	reconfig_one(&b, &old, &p, 103);
	CHECK(b.tokens == 29 && b.units == 6 && b.stamp == 103, "%s",
	      fmt_bp(&b, &p));
	/* fraction rounds down: 6/10 of 7 is 4.2 */
	old = p;
	p.period = 7;
	reconfig_one(&b, &old, &p, 103);
	CHECK(b.tokens == 29 && b.units == 4, "%s", fmt_bp(&b, &p));
	/* an earlier now keeps the stamp */
	reconfig_one(&b, &p, &old, 50);
	CHECK(b.stamp == 103, "%s", fmt_bp(&b, &old));
	for (i = 0; i < 300000; i++) {
		rnd_params(&old);
		rnd_params(&p);
		rnd_bucket(&b, &old);
		switch (rnd_to(3)) {
		case 0:
			now = rnd_to(b.stamp);
			break;
		case 1:
			now = b.stamp + rnd_log(0, U64_MAX - b.stamp);
			break;
		default:
			now = b.stamp + rnd_to(U64_MAX - b.stamp);
		}
		if (!reconfig_one(&b, &old, &p, now))
			return;
	}
}

/* ---- simulations ---- */

struct sim_cfg {
	const char *name;
	u64 rate;
	u64 period;
	u64 burst;	/* 0: rl_default_burst() */
	long steps;
};

#define NEAR	48	/* window starts: every one of the last steps */
#define FAR	16	/* and one every FAR_EVERY steps before */
#define FAR_EVERY 1009

struct win {
	u64 t;
	__int128_t net;
	bool used;
};

struct sim {
	struct rl_params p;
	struct rl_bucket b;
	__uint128_t m;	/* model content, units */
	u64 mstamp;		/* model stamp */
	u64 t0;			/* start of the epoch */
	u64 now;		/* fake clock */
	__uint128_t granted, given, dropped;
	u64 tpt;		/* ns to earn a token, rounded up */
	u64 fill;		/* ns to fill from empty, capped */
	struct win near[NEAR], far[FAR];
	unsigned int nnear, nfar;
	unsigned long long at_bound;
};

static void sim_epoch(struct sim *s)
{
	s->now = rnd_to(3) ? rnd_log(0, 1ULL << 60) : 0;
	rl_bucket_init(&s->b, &s->p, s->now);
	api_calls++;
	s->m = cap_of(&s->p);
	s->mstamp = s->now;
	s->t0 = s->now;
	s->granted = 0;
	s->given = 0;
	s->dropped = 0;
	memset(s->near, 0, sizeof(s->near));
	memset(s->far, 0, sizeof(s->far));
}

static u64 sim_dt(struct sim *s, u64 n)
{
	u64 r = rnd_to(999);
	__uint128_t lim;

	if (r < 100)
		return 0;
	if (r < 250)
		return rnd_in(1, 16);
	if (r < 600) {	/* up to the time of a few requests */
		lim = (__uint128_t)s->tpt * (1 + rnd_log(0, n));
		return rnd_to(lim > 1ULL << 56 ? 1ULL << 56 : (u64)lim);
	}
	if (r < 800)
		return rnd_to(s->fill);
	if (r < 998)
		return rnd_log(0, 1ULL << 44);
	return (1ULL << rnd_in(40, 60)) + rnd();
}

static u64 sim_n(struct sim *s)
{
	u64 r = rnd_to(15);

	if (r == 0)
		return 1;
	if (r == 1)
		return s->p.burst;
	if (r == 2 && s->b.tokens)
		return s->b.tokens;
	if (r == 3 && s->b.tokens < s->p.burst)
		return s->b.tokens + 1;
	if (r < 10)
		return rnd_log(1, s->p.burst < 64 ? s->p.burst : 64);
	return rnd_log(1, s->p.burst);
}

static void sim_refill(struct sim *s)
{
	rl_bucket_refill(&s->b, &s->p, s->now);
	api_calls++;
	s->dropped += model_refill(&s->m, &s->mstamp, &s->p, s->now);
}

static void sim_push(struct win *w, unsigned int *k, unsigned int len,
		     u64 t, __int128_t net)
{
	w[*k].t = t;
	w[*k].net = net;
	w[*k].used = true;
	*k = (*k + 1) % len;
}

/* Net grants since each window start against the token bucket bound. */
static bool sim_windows(struct sim *s, const struct win *w, unsigned int len)
{
	__int128_t net = (__int128_t)(s->granted - s->given), over;
	__uint128_t lhs, rhs;
	unsigned int i;
	char b1[48], b2[48];

	for (i = 0; i < len; i++) {
		if (!w[i].used)
			continue;
		over = net - w[i].net - (__int128_t)s->p.burst;
		if (over <= 0)
			continue;
		lhs = (__uint128_t)over * s->p.period;
		rhs = mul128(s->now - w[i].t, s->p.rate);
		if (lhs == rhs)
			s->at_bound++;
		if (!CHECK(lhs <= rhs,
			   "window [%llu, %llu]: %s tokens over burst, %s units earned, %s",
			   ULL(w[i].t), ULL(s->now), s128(over, b1),
			   s128(rhs, b2), fmt_bp(&s->b, &s->p)))
			return false;
	}
	return true;
}

/* State, conservation and windows after a step. */
static bool sim_check(struct sim *s, const char *op, u64 n)
{
	__uint128_t lhs, rhs;
	char b1[48], b2[48];

	if (!CHECK(bucket_is(&s->b, &s->p, s->m, s->mstamp),
		   "after %s %llu: %s, model %s units stamp %llu", op, ULL(n),
		   fmt_bp(&s->b, &s->p), s128(s->m, b1), ULL(s->mstamp)))
		return false;
	lhs = (s->granted - s->given) * s->p.period + units_of(&s->b, &s->p) +
	      s->dropped;
	rhs = cap_of(&s->p) + mul128(s->b.stamp - s->t0, s->p.rate);
	if (!CHECK(lhs == rhs, "after %s %llu: conservation %s != %s: %s", op,
		   ULL(n), s128(lhs, b1), s128(rhs, b2), fmt_bp(&s->b, &s->p)))
		return false;
	return sim_windows(s, s->near, NEAR) && sim_windows(s, s->far, FAR);
}

static bool sim_step(struct sim *s, long step)
{
	__uint128_t held;
	u64 n = sim_n(s), dt = sim_dt(s, n), r;
	struct rl_bucket c;
	const char *op;
	bool ok;

	if (s->now > (1ULL << 63) + (1ULL << 62)) {
		/* end of an epoch: idle until the end of time, exactly */
		s->now = U64_MAX;
		sim_refill(s);
		if (!sim_check(s, "idle", U64_MAX))
			return false;
		sim_epoch(s);
	}
	s->now += dt > U64_MAX - s->now ? U64_MAX - s->now : dt;
	sim_push(s->near, &s->nnear, NEAR, s->now,
		 (__int128_t)(s->granted - s->given));
	if (step % FAR_EVERY == 0)
		sim_push(s->far, &s->nfar, FAR, s->now,
			 (__int128_t)(s->granted - s->given));
	r = rnd_to(99);
	if (r < 40) {
		op = "take";
		sim_refill(s);
		ok = rl_bucket_take(&s->b, n);
		api_calls++;
		if (!CHECK(ok == (mul128(n, s->p.period) <= s->m),
			   "take %llu: %d: %s", ULL(n), ok, fmt_bp(&s->b, &s->p)))
			return false;
		if (ok) {
			s->m -= mul128(n, s->p.period);
			s->granted += n;
		}
	} else if (r < 70) {
		op = "ready";
		sim_refill(s);
		if (!ready_one(&s->b, &s->p, n))
			return false;
		r = rl_bucket_ready(&s->b, &s->p, n);
		api_calls++;
		if (r != U64_MAX) {
			if (!CHECK(r >= s->now, "ready %llu in the past", ULL(r)))
				return false;
			s->now = r;
			sim_refill(s);
			ok = rl_bucket_take(&s->b, n);
			api_calls++;
			if (!CHECK(ok, "take %llu at ready %llu: %s", ULL(n),
				   ULL(r), fmt_bp(&s->b, &s->p)))
				return false;
			s->m -= mul128(n, s->p.period);
			s->granted += n;
		}
	} else if (r < 85) {
		op = "give";
		held = s->granted - s->given;
		if (held > U64_MAX)
			held = U64_MAX;
		n = rnd_log(0, rnd_to(15) && held > s->p.burst ? s->p.burst :
			    (u64)held);
		rl_bucket_give(&s->b, &s->p, n);
		api_calls++;
		s->m += mul128(n, s->p.period);
		if (s->m > cap_of(&s->p)) {
			s->dropped += s->m - cap_of(&s->p);
			s->m = cap_of(&s->p);
		}
		s->given += n;
	} else if (r < 90) {
		op = "refill(past)";
		c = s->b;
		n = rnd_to(s->b.stamp);
		rl_bucket_refill(&s->b, &s->p, n);
		api_calls++;
		if (!CHECK(same(&c, &s->b), "refill(%llu) changed %s", ULL(n),
			   fmt_bp(&c, &s->p)))
			return false;
	} else {
		op = "refill";
		sim_refill(s);
	}
	sim_steps++;
	return sim_check(s, op, n);
}

static void sim_run(const struct sim_cfg *cfg)
{
	static struct sim s;
	__uint128_t t;
	long i;

	memset(&s, 0, sizeof(s));
	s.p.rate = cfg->rate;
	s.p.period = cfg->period;
	s.p.burst = cfg->burst ? cfg->burst :
		    rl_default_burst(cfg->rate, cfg->period);
	if (!CHECK(!rl_params_check(&s.p), "%s: params rejected: %s",
		   cfg->name, fmt_bp(&s.b, &s.p)))
		return;
	t = s.p.rate ? (s.p.period + s.p.rate - 1) / s.p.rate : s.p.period;
	s.tpt = t;
	t = s.p.rate ? (cap_of(&s.p) + s.p.rate - 1) / s.p.rate : cap_of(&s.p);
	s.fill = t > 1ULL << 56 ? 1ULL << 56 : (u64)t;
	sim_epoch(&s);
	for (i = 0; i < cfg->steps; i++)
		if (!sim_step(&s, i))
			return;
	printf("# %s: burst %llu, %llu windows ended at the bound\n", cfg->name,
	       ULL(s.p.burst), s.at_bound);
}

static const struct sim_cfg sims[] = {
	{ "1 per 10 s, burst 1", 1, 10 * NS_PER_SEC, 1, 200000 },
	{ "1 per 10 s, burst 5", 1, 10 * NS_PER_SEC, 5, 200000 },
	{ "12000/s, default burst", 12000, NS_PER_SEC, 0, 250000 },
	{ "12000/s, burst 1", 12000, NS_PER_SEC, 1, 200000 },
	{ "10^9/s, default burst", NS_PER_SEC, NS_PER_SEC, 0, 250000 },
	{ "10^9/s, burst 1", NS_PER_SEC, NS_PER_SEC, 1, 200000 },
	{ "10^9/s, huge burst", NS_PER_SEC, NS_PER_SEC, BP_MAX / NS_PER_SEC,
	  200000 },
	{ "1 per ns, burst 1", 1, 1, 1, 200000 },
	{ "7 per 3 ns, default burst", 7, 3, 0, 250000 },
	{ "7 per 3 ns, burst 1", 7, 3, 1, 200000 },
	{ "7 per 3 ns, huge burst", 7, 3, BP_MAX / 3, 200000 },
	{ "10 MiB/s, default burst", 10 << 20, NS_PER_SEC, 0, 250000 },
	{ "10 MiB/s, huge burst", 10 << 20, NS_PER_SEC, BP_MAX / NS_PER_SEC,
	  200000 },
	{ "1 per day, burst 1", 1, PERIOD_MAX, 1, 200000 },
	{ "1 per day, huge burst", 1, PERIOD_MAX, BP_MAX / PERIOD_MAX, 200000 },
	{ "3 per day, burst 2", 3, PERIOD_MAX, 2, 200000 },
	{ "1 per ns, burst 2^63", 1, 1, BP_MAX, 200000 },
	{ "3 per ns, burst 2^63", 3, 1, BP_MAX, 200000 },
	{ "2^40 per 2^23 ns, burst 2^40", 1ULL << 40, 1ULL << 23, 1ULL << 40,
	  200000 },
	{ "1000003 per 77158673929 ns, burst*period = 2^63+1-period",
	  1000003, 77158673929ULL, 119537720ULL, 200000 },
	{ "999999937 per 10^9+7 ns, burst 12345", 999999937ULL,
	  NS_PER_SEC + 7, 12345, 200000 },
	{ "paused (rate 0), burst 100", 0, NS_PER_SEC, 100, 150000 },
	{ "U64_MAX per day, default burst", U64_MAX, PERIOD_MAX, 0, 150000 },
	{ "U64_MAX per ns, burst 2^63", U64_MAX, 1, BP_MAX, 150000 },
	{ "10^9 per ns, burst 2^63", NS_PER_SEC, 1, BP_MAX, 150000 },
};

#define NSIMS		ARRAY_SIZE(sims)
#define NRANDOM		6	/* random configurations */

static void sim_random(int k)
{
	struct sim_cfg cfg;
	struct rl_params p;
	char name[160];

	rnd_params(&p);
	if (!rnd_to(2))
		p.burst = rl_default_burst(p.rate, p.period);
	snprintf(name, sizeof(name), "random %d: %llu per %llu ns, burst %llu",
		 k, ULL(p.rate), ULL(p.period), ULL(p.burst));
	cfg.name = name;
	cfg.rate = p.rate;
	cfg.period = p.period;
	cfg.burst = p.burst;
	cfg.steps = 150000;
	sim_run(&cfg);
}

/*
 * Greedy consumer from a full bucket: take everything at every ready(1).
 * Grants reach burst + floor(elapsed * rate / period) exactly whenever the
 * cap dropped nothing, so the window bound is tight.
 */
static void test_greedy(void)
{
	struct sim s;
	size_t i;
	long k;
	u64 r, got;
	__uint128_t bound;
	char b1[48], b2[48];
	int tight = 0;

	for (i = 0; i < NSIMS && !case_failed; i++) {
		memset(&s, 0, sizeof(s));
		s.p.rate = sims[i].rate;
		s.p.period = sims[i].period;
		s.p.burst = sims[i].burst ? sims[i].burst :
			    rl_default_burst(s.p.rate, s.p.period);
		if (!s.p.rate)
			continue;
		sim_epoch(&s);
		for (k = 0; k < 20000; k++) {
			r = rl_bucket_ready(&s.b, &s.p, 1);
			if (r == U64_MAX)
				break;
			s.now = r;
			sim_refill(&s);
			got = s.b.tokens;
			CHECK(got >= 1 && rl_bucket_take(&s.b, got), "greedy");
			s.m -= mul128(got, s.p.period);
			s.granted += got;
			sim_steps++;
			bound = s.p.burst + mul128(s.now - s.t0, s.p.rate) /
					    s.p.period;
			if (!CHECK(s.granted <= bound && (s.dropped ||
							  s.granted == bound),
				   "%s: granted %s bound %s", sims[i].name,
				   s128(s.granted, b1), s128(bound, b2)))
				break;
		}
		tight += !s.dropped;
	}
	CHECK(tight >= 10, "only %d configurations without drops", tight);
}

/* ---- main ---- */

struct tcase {
	const char *name;
	void (*fn)(void);
};

static const struct tcase cases[] = {
	{ "rl_params_check: period 0, max, max+1", test_params_period },
	{ "rl_params_check: burst 0", test_params_burst },
	{ "rl_params_check: burst*period 2^63 and 2^63+1", test_params_product },
	{ "rl_params_check: products that overflow u64", test_params_overflow },
	{ "rl_params_check: random against the model", test_params_random },
	{ "rl_default_burst: examples and clamps", test_default_burst_examples },
	{ "rl_default_burst: no wrap when adding the fraction",
	  test_default_burst_wrap },
	{ "rl_default_burst: random against the model",
	  test_default_burst_random },
	{ "rl_bucket_init: full", test_init },
	{ "rl_bucket_refill: now <= stamp adds nothing", test_refill_past },
	{ "rl_bucket_refill: long idle fills exactly", test_refill_long_idle },
	{ "rl_bucket_refill: random against the model", test_refill_random },
	{ "rl_bucket_take: exact, all or nothing", test_take },
	{ "rl_bucket_give: caps at burst, u64 overflow", test_give },
	{ "rl_bucket_ready: edges, rate 0, overflow", test_ready_edges },
	{ "fed: no refill, ready only from the tokens held", test_fed },
	{ "rl_bucket_ready: exact at ready-1 and ready", test_ready_random },
	{ "rl_bucket_ready: n above burst is exact", test_ready_above_burst },
	{ "rl_bucket_reconfig: keeps, clamps, rescales", test_reconfig },
	{ "token bucket bound is attained (greedy)", test_greedy },
};

#define NCASES		ARRAY_SIZE(cases)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int tap(int *num, const char *name)
{
	if (case_failed)
		printf("not ok %d - %s\n", ++*num, name);
	else
		printf("ok %d - %s\n", ++*num, name);
	fflush(stdout);
	return case_failed;
}

static void start_case(void)
{
	case_failed = 0;
	diag_left = DIAG_MAX;
}

int main(int argc, char **argv)
{
	u64 seed = (u64)time(NULL) * 1000003 ^ (u64)getpid();
	double t0 = now_s();
	int num = 0, failed = 0;
	char name[200];
	size_t i;

	if (argc > 1) {
		char *end;

		seed = strtoull(argv[1], &end, 0);
		if (*end) {
			fprintf(stderr, "usage: %s [seed]\n", argv[0]);
			return 2;
		}
	}
	rng_seed(seed);
	printf("1..%zu\n", NCASES + NSIMS + NRANDOM);
	printf("# seed %llu (replay: %s %llu)\n", ULL(seed), argv[0], ULL(seed));
	for (i = 0; i < NCASES; i++) {
		start_case();
		cases[i].fn();
		failed += tap(&num, cases[i].name);
	}
	for (i = 0; i < NSIMS; i++) {
		start_case();
		sim_run(&sims[i]);
		snprintf(name, sizeof(name), "simulation: %s", sims[i].name);
		failed += tap(&num, name);
	}
	for (i = 0; i < NRANDOM; i++) {
		start_case();
		sim_random(i);
		snprintf(name, sizeof(name), "simulation: random config %zu", i);
		failed += tap(&num, name);
	}
	printf("# %llu simulated steps, %llu API calls in simulations, %.2f s\n",
	       sim_steps, api_calls, now_s() - t0);
	printf("# seed %llu, %d failed\n", ULL(seed), failed);
	return failed ? 1 : 0;
}
