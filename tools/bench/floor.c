// SPDX-License-Identifier: GPL-2.0-only
/*
 * floor.c - section 1, floor: uncontended ACQUIRE(1) vs a no-op ioctl vs
 * getppid().
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE

#include "bench.h"

void bench_floor(void)
{
	static const enum kind ks[] = { K_CLOCK, K_GETPPID, K_NOOP, K_FEATURES,
					K_GETCFG, K_STATS, K_ACQ_UNL,
					K_ACQ_RATE };
	size_t n[NKINDS] = { 0 }, per = scaled(200000, ROUND * 10);
	uint64_t *s[NKINDS] = { 0 };
	struct ctx c = { 0 };
	double p50[NKINDS], p99[NKINDS];
	unsigned int i;
	char name[80];

	per -= per % ROUND;
	c.fdu = open_private(0, 1, RL_CONFIG_UNLIMITED);
	c.fdr = open_private(HUGE_RATE, HUGE_RATE, 0);
	for (i = 0; i < ARRAY_SIZE(ks); i++) {
		n[ks[i]] = per;
		s[ks[i]] = xcalloc(per, sizeof(uint64_t));
	}
	printf("floor: %zu timed calls of each kind, interleaved in rounds of %d\n",
	       per, ROUND);
	sample_kinds(&c, n, s);
	for (i = 0; i < ARRAY_SIZE(ks); i++) {
		p50[ks[i]] = pct(s[ks[i]], per, 50);
		p99[ks[i]] = pct(s[ks[i]], per, 99);
		snprintf(name, sizeof(name), "%s p50", kind_name[ks[i]]);
		row("floor", name, p50[ks[i]], "ns", NULL, 0, NULL, V_INFO);
		snprintf(name, sizeof(name), "%s p99", kind_name[ks[i]]);
		row("floor", name, p99[ks[i]], "ns", NULL, 0, NULL, V_INFO);
	}
	for (i = K_ACQ_UNL; i <= K_ACQ_RATE; i++) {
		snprintf(name, sizeof(name), "%s p50", kind_name[i]);
		row("floor", name, p50[i], "ns", "no-op ioctl p50", p50[K_NOOP],
		    "<= 1.3x", at_most(p50[i] / p50[K_NOOP], 1.3));
		snprintf(name, sizeof(name), "%s p99", kind_name[i]);
		row("floor", name, p99[i], "ns", "no-op ioctl p99", p99[K_NOOP],
		    "<= 2x", at_most(p99[i] / p99[K_NOOP], 2.0));
		snprintf(name, sizeof(name), "%s p50", kind_name[i]);
		row("floor", name, p50[i], "ns", "GET_FEATURES p50",
		    p50[K_FEATURES], NULL, V_INFO);
		row("floor", name, p50[i], "ns", "getppid() p50",
		    p50[K_GETPPID], NULL, V_INFO);
		/* Without the clock reads that every sample includes. */
		snprintf(name, sizeof(name), "%s p50 - timer", kind_name[i]);
		row("floor", name, p50[i] - p50[K_CLOCK], "ns",
		    "no-op ioctl p50 - timer", p50[K_NOOP] - p50[K_CLOCK],
		    NULL, V_INFO);
	}
	write_cdf("floor.dat", ks, ARRAY_SIZE(ks), n, s);
	for (i = 0; i < NKINDS; i++)
		free(s[i]);
	rl_close(c.fdu);
	rl_close(c.fdr);
}
