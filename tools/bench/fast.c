// SPDX-License-Identifier: GPL-2.0-only
/*
 * fast.c - section fast: acquires from an fd's reservation page
 * (RL_FEATURE_FAST, no system call) against the same acquires through the
 * ioctl, the shm pthread bucket and a no-op ioctl, uncontended; then 1, 2
 * and 4 threads and processes, each with its own mapped fd, on one named
 * limiter. The limiters run at HUGE_RATE, so the page is what is timed.
 *
 * The other sections make the ioctl: main() sets RATELIMIT_FAST=0, which
 * keeps rl_set_config() and rl_attach() from mapping their fds; this one
 * maps its own with rl_fast_map().
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "bench.h"

#define FAST_SHM	"/tmp/rlbench-fast.shm"
#define FAST_NAME	"rlbench-fast"
#define FAST_REPS	7

enum fast_op { F_TRY, F_ACQ, F_IOCTL, F_SHM, F_NOOP, F_NOPS };

static const char *const fast_op_name[F_NOPS] = {
	"rl_try_acquire(1), mapped", "rl_acquire(1), mapped",
	"ACQUIRE(1) rate 1e9/s, ioctl", "shm pthread bucket acquire(1)",
	"no-op ioctl (ENOTTY)",
};

struct fast_ctx {
	int fdf;		/* mapped */
	int fdr;		/* not mapped */
	struct shmb *shm;
};

static int fast_op(enum fast_op op, struct fast_ctx *c)
{
	switch (op) {
	case F_TRY:
		return rl_try_acquire(c->fdf, 1, NULL);
	case F_ACQ:
		return rl_acquire(c->fdf, 1);
	case F_IOCTL:
		return rl_acquire(c->fdr, 1);
	case F_SHM:
		shmb_acquire(c->shm, 1);
		return 0;
	case F_NOOP:
		return ioctl(c->fdr, RL_IOC_NOOP) != -1 || errno != ENOTTY;
	default:
		return 1;
	}
}

/* Mean ns per call of @n calls in a row: the clock read once per batch. */
static double fast_time(enum fast_op op, struct fast_ctx *c, uint64_t n)
{
	uint64_t t0 = rl_now_ns(), i;

	for (i = 0; i < n; i++)
		if (fast_op(op, c))
			die(fast_op_name[op], errno);
	return (double)(rl_now_ns() - t0) / (double)n;
}

static int fast_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* A private limiter at HUGE_RATE; mapped if @map. */
static int fast_private(bool map)
{
	int fd = open_private(HUGE_RATE, HUGE_RATE, 0), ret;

	if (map) {
		ret = rl_fast_map(fd);
		if (ret)
			die("rl_fast_map", -ret);
	}
	return fd;
}

static void fast_uncontended(void)
{
	uint64_t per = scaled(200000, 20000);
	double v[F_NOPS][FAST_REPS], med[F_NOPS];
	struct fast_ctx c;
	char name[96];
	int op, r;

	c.fdf = fast_private(true);
	c.fdr = fast_private(false);
	c.shm = shmb_create(FAST_SHM, HUGE_RATE, HUGE_RATE);
	for (op = 0; op < F_NOPS; op++)		/* warm up; the page fills */
		fast_time(op, &c, per / 10);
	for (r = 0; r < FAST_REPS; r++)
		for (op = 0; op < F_NOPS; op++)
			v[op][r] = fast_time(op, &c, per);
	for (op = 0; op < F_NOPS; op++) {
		qsort(v[op], FAST_REPS, sizeof(double), fast_cmp);
		med[op] = v[op][FAST_REPS / 2];
	}
	printf("fast: %llu calls in a row per kind, %d rounds in turn, median ns per call\n",
	       (unsigned long long)per, FAST_REPS);
	for (op = 0; op < F_NOPS; op++) {
		snprintf(name, sizeof(name), "%s, ns per call", fast_op_name[op]);
		row("fast", name, med[op], "ns", NULL, 0, NULL, V_INFO);
	}
	for (op = F_TRY; op <= F_ACQ; op++) {
		snprintf(name, sizeof(name), "%s, ns per call", fast_op_name[op]);
		row("fast", name, med[op], "ns", "shm pthread bucket", med[F_SHM],
		    "<= 1.5x", at_most(med[op] / med[F_SHM], 1.5));
		row("fast", name, med[op], "ns", "ACQUIRE(1) through the ioctl",
		    med[F_IOCTL], "<= 0.1x", at_most(med[op] / med[F_IOCTL], 0.1));
	}
	row("fast", "ACQUIRE(1) rate 1e9/s, ioctl, ns per call", med[F_IOCTL], "ns",
	    "no-op ioctl", med[F_NOOP], NULL, V_INFO);
	shmb_destroy(c.shm, FAST_SHM);
	rl_close(c.fdf);
	rl_close(c.fdr);
}

static struct race *fast_race;

/* One caller: its own fd of FAST_NAME, mapped; rl_acquire(1) until stopped. */
static void fast_worker(int idx)
{
	int fd = attach(FAST_NAME), ret;
	uint64_t n = 0;

	ret = rl_fast_map(fd);
	if (ret)
		die("rl_fast_map", -ret);
	atomic_fetch_add(&fast_race->ready, 1);
	while (!atomic_load(&fast_race->go))
		sched_yield();
	while (!atomic_load_explicit(&fast_race->stop, memory_order_relaxed)) {
		if (rl_acquire(fd, 1))
			die("rl_acquire", errno);
		n++;
	}
	fast_race->count[idx] = n;
	rl_close(fd);
}

static void fast_contended(void)
{
	struct rl_config cfg = {
		.rate = HUGE_RATE, .period_ns = NSEC_PER_SEC, .burst = HUGE_RATE,
	};
	static const int ns[] = { 1, 2, 4 };
	uint64_t dur = scaled(0.3 * NSEC_PER_SEC, NSEC_PER_SEC / 10);
	double rep[2][3][FAST_REPS], tp[2][3];
	char name[80], base[64];
	int p, i, r;

	fast_race = shared_alloc(sizeof(*fast_race));
	create_named(FAST_NAME, &cfg);
	printf("fast: named limiter at %llu/s, one mapped fd per caller, %d times %.1f s, median\n",
	       HUGE_RATE, FAST_REPS, dur / 1e9);
	for (r = 0; r < FAST_REPS; r++)
		for (p = 0; p < 2; p++)
			for (i = 0; i < 3; i++)
				rep[p][i][r] = race_start(fast_race, ns[i], p,
							  fast_worker, dur);
	for (p = 0; p < 2; p++)
		for (i = 0; i < 3; i++) {
			qsort(rep[p][i], FAST_REPS, sizeof(double), fast_cmp);
			tp[p][i] = rep[p][i][FAST_REPS / 2];
		}
	for (p = 0; p < 2; p++)
		for (i = 0; i < 3; i++) {
			const char *what = p ? "processes" : "threads";

			snprintf(name, sizeof(name), "rl_acquire(1) mapped, %d %s, calls/s",
				 ns[i], what);
			snprintf(base, sizeof(base), "1 of %s", what);
			row("fast", name, tp[p][i], "/s", base, tp[p][0],
			    i ? ">= 1x" : NULL, i ? at_least(tp[p][i] / tp[p][0], 1.0) : V_INFO);
		}
	rl_unlink(-1, FAST_NAME);
	munmap(fast_race, sizeof(*fast_race));
}

void bench_fast(void)
{
	fast_uncontended();
	fast_contended();
}
