// SPDX-License-Identifier: GPL-2.0-only
/*
 * kinds.c - the operations the floor, contention, wake and peers sections time
 * (enum kind), one at a time, and their samples.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include "bench.h"

const char *const kind_name[NKINDS] = {
	"clock_gettime pair (timer only)", "getppid()", "no-op ioctl (ENOTTY)",
	"RL_IOC_GET_FEATURES", "ACQUIRE(1) unlimited", "ACQUIRE(1) rate 1e9/s",
	"shm pthread bucket acquire(1)", "sem_wait+sem_post",
	"ACQUIRE(1)+RELEASE(1) concurrency", "Redis EVALSHA token bucket",
	"Redis PING (round trip only)", "RL_IOC_GET_CONFIG",
	"RL_IOC_GET_STATS", "CYCLE(1, 1) concurrency",
};

static const char *const kind_file[NKINDS] = {
	"clock", "getppid", "noop_ioctl", "get_features", "acquire_unlimited",
	"acquire_rate", "shm_bucket", "posix_sem", "rl_concurrency", "redis",
	"redis_ping", "get_config", "get_stats", "cycle",
};

int do_op(enum kind k, struct ctx *c)
{
	struct rl_features f;
	struct rl_config cfg;
	struct rl_stats st;

	switch (k) {
	case K_CLOCK:
		return 0;
	case K_GETPPID:
		return (int)syscall(SYS_getppid) < 0;
	case K_NOOP:
		return ioctl(c->fdu, RL_IOC_NOOP) != -1 || errno != ENOTTY;
	case K_FEATURES:
		return ioctl(c->fdu, RL_IOC_GET_FEATURES, &f);
	case K_ACQ_UNL:
		return rl_acquire(c->fdu, 1);
	case K_ACQ_RATE:
		return rl_acquire(c->fdr, 1);
	case K_SHM:
		shmb_acquire(c->shm, 1);
		return 0;
	case K_SEM:
		return sem_wait(c->sem) || sem_post(c->sem);
	case K_CONC:
		return rl_acquire(c->fdc, 1) || rl_release(c->fdc, 1);
	case K_REDIS:
		return redis_take(&c->redis, "rlbench:cost", HUGE_RATE,
				  HUGE_RATE, 1) != 0;
	case K_PING:
		return redis_ping(&c->redis);
	case K_GETCFG:
		return rl_get_config(c->fdr, &cfg);
	case K_STATS:
		return rl_get_stats(c->fdr, &st);
	case K_CYCLE:
		/* The first call holds nothing yet: it gives back none. */
		if (rl_cycle(c->fdc, c->cycling, 1, NULL))
			return 1;
		c->cycling = 1;
		return 0;
	default:
		return 1;
	}
}

/*
 * Time every call of the kinds in @use, ROUND calls of each kind in turn
 * so that drift hits all alike; @n[k] samples of kind k (a multiple of
 * ROUND). Fills @s[k], sorted.
 */
void sample_kinds(struct ctx *c, const size_t *n, uint64_t **s)
{
	size_t done[NKINDS] = { 0 }, i;
	uint64_t t0, t1;
	bool more = true;
	int k;

	for (k = 0; k < NKINDS; k++)	/* warm up */
		for (i = 0; n[k] && k != K_REDIS && k != K_PING && i < 1000;
		     i++)
			do_op(k, c);
	while (more) {
		more = false;
		for (k = 0; k < NKINDS; k++) {
			if (done[k] >= n[k])
				continue;
			for (i = 0; i < ROUND; i++) {
				t0 = rl_now_ns();
				if (do_op(k, c))
					die(kind_name[k], errno);
				t1 = rl_now_ns();
				s[k][done[k]++] = t1 - t0;
			}
			more |= done[k] < n[k];
		}
	}
	for (k = 0; k < NKINDS; k++)
		qsort(s[k], n[k], sizeof(uint64_t), tool_cmp_u64);
}

void write_cdf(const char *file, const enum kind *ks, int nk,
	       const size_t *n, uint64_t **s)
{
	static const double ps[] = { 1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90,
				     95, 97, 98, 99, 99.5, 99.9 };
	FILE *f = open_out(file);
	size_t i;
	int j;

	if (!f)
		return;
	/* A header line gnuplot's columnhead() reads: ns per call. */
	fprintf(f, "percentile");
	for (j = 0; j < nk; j++)
		fprintf(f, " %s", kind_file[ks[j]]);
	fputc('\n', f);
	for (i = 0; i < ARRAY_SIZE(ps); i++) {
		fprintf(f, "%g", ps[i]);
		for (j = 0; j < nk; j++)
			fprintf(f, " %.0f", pct(s[ks[j]], n[ks[j]], ps[i]));
		fputc('\n', f);
	}
	fclose(f);
}
