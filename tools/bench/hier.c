// SPDX-License-Identifier: GPL-2.0-only
/*
 * hier.c - section 9, hier: uncontended ACQUIRE(1) at a named limiter with
 * 0 (flat), 1, 2 and 4 ancestors (RL_IOC_SET_PARENT), every level at a
 * rate that is never the limit. A grant in a tree checks and takes tokens
 * at every level under the tree's one lock; the goal is depth 2 at most
 * 1.2x depth 1.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE

#include "bench.h"

#define HIER_DEPTHS	4

static const int hier_depth[HIER_DEPTHS] = { 0, 1, 2, 4 };

/* A chain of @depth + 1 named limiters; the fd of the bottom one. */
static int hier_chain(int depth, int *fds)
{
	struct rl_config cfg = { .rate = HUGE_RATE, .period_ns = 1000000000ULL,
				 .burst = HUGE_RATE };
	char name[RL_NAME_MAX], parent[RL_NAME_MAX] = "";
	int i, ret;

	for (i = 0; i <= depth; i++) {
		snprintf(name, sizeof(name), "rlbench-hier-%d-%d-%d",
			 (int)getpid(), depth, i);
		fds[i] = rl_open_named(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL,
				       0600, &cfg);
		if (fds[i] < 0)
			die(name, fds[i]);
		if (i) {
			ret = rl_set_parent(fds[i], parent, 1);
			if (ret)
				die("rl_set_parent", -ret);
		}
		snprintf(parent, sizeof(parent), "%s", name);
	}
	return fds[depth];
}

/* Time @per ACQUIRE(1) at each leaf, interleaved in rounds of ROUND. */
static void hier_sample(const int *leaf, size_t per, uint64_t **s)
{
	size_t done, i;
	uint64_t t0;
	int d;

	for (d = 0; d < HIER_DEPTHS; d++)	/* warm up */
		for (i = 0; i < 1000; i++)
			rl_acquire(leaf[d], 1);
	for (done = 0; done < per; done += ROUND) {
		for (d = 0; d < HIER_DEPTHS; d++) {
			for (i = 0; i < ROUND; i++) {
				t0 = rl_now_ns();
				if (rl_acquire(leaf[d], 1))
					die("ACQUIRE in a tree", errno);
				s[d][done + i] = rl_now_ns() - t0;
			}
		}
	}
	for (d = 0; d < HIER_DEPTHS; d++)
		qsort(s[d], per, sizeof(uint64_t), tool_cmp_u64);
}

void bench_hier(void)
{
	int fds[HIER_DEPTHS][RL_DEPTH_MAX + 1], leaf[HIER_DEPTHS], d, i;
	size_t per = scaled(100000, ROUND * 10);
	uint64_t *s[HIER_DEPTHS];
	double p50[HIER_DEPTHS];
	char name[80];

	per -= per % ROUND;
	for (d = 0; d < HIER_DEPTHS; d++) {
		leaf[d] = hier_chain(hier_depth[d], fds[d]);
		s[d] = xcalloc(per, sizeof(uint64_t));
	}
	printf("hier: %zu timed ACQUIRE(1) at each depth, interleaved in rounds of %d\n",
	       per, ROUND);
	hier_sample(leaf, per, s);
	for (d = 0; d < HIER_DEPTHS; d++) {
		p50[d] = pct(s[d], per, 50);
		snprintf(name, sizeof(name), "ACQUIRE(1), %d ancestors p50",
			 hier_depth[d]);
		row("hier", name, p50[d], "ns", d ? "flat p50" : NULL,
		    d ? p50[0] : 0, NULL, V_INFO);
		snprintf(name, sizeof(name), "ACQUIRE(1), %d ancestors p99",
			 hier_depth[d]);
		row("hier", name, pct(s[d], per, 99), "ns", NULL, 0, NULL,
		    V_INFO);
	}
	row("hier", "ACQUIRE(1), 2 ancestors p50", p50[2], "ns",
	    "1 ancestor p50", p50[1], "<= 1.2x", at_most(p50[2] / p50[1], 1.2));
	for (d = 0; d < HIER_DEPTHS; d++) {
		for (i = hier_depth[d]; i >= 0; i--)
			rl_close(fds[d][i]);
		free(s[d]);
	}
}
