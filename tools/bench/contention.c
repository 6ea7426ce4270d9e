// SPDX-License-Identifier: GPL-2.0-only
/*
 * contention.c - section 2, contention: 1, 2, 4 threads and processes on one
 * named limiter.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/wait.h>

#include "bench.h"

static struct race *race;
static const char *race_name;
static enum kind race_kind;

static void race_worker(int idx)
{
	struct ctx c = { 0 };
	uint64_t n = 0;

	c.fdr = attach(race_name);
	c.fdu = c.fdr;
	atomic_fetch_add(&race->ready, 1);
	while (!atomic_load(&race->go))
		sched_yield();
	while (!atomic_load_explicit(&race->stop, memory_order_relaxed)) {
		if (do_op(race_kind, &c))
			die("contention op", errno);
		n++;
	}
	race->count[idx] = n;
	rl_close(c.fdr);
}

static void (*race_fn)(int idx);

static void *race_thread(void *arg)
{
	race_fn((int)(intptr_t)arg);
	return NULL;
}

/*
 * Aggregate calls per second of @n threads or processes running @worker:
 * each counts @r->ready, waits for @r->go, runs until @r->stop and leaves
 * its calls in @r->count[its index]. @r is shared_alloc()'s.
 */
double race_start(struct race *r, int n, bool procs, void (*worker)(int idx),
		  uint64_t dur)
{
	pthread_t th[MAX_WORKERS];
	pid_t pid[MAX_WORKERS];
	uint64_t t0, t1, sum = 0;
	int i;

	memset(r, 0, sizeof(*r));
	race_fn = worker;
	for (i = 0; i < n; i++) {
		if (!procs) {
			pthread_create(&th[i], NULL, race_thread,
				       (void *)(intptr_t)i);
			continue;
		}
		pid[i] = fork();
		if (pid[i] < 0)
			die("fork", errno);
		if (!pid[i]) {
			worker(i);
			_exit(0);
		}
	}
	while (atomic_load(&r->ready) < n)
		sleep_ns(NSEC_PER_MSEC);
	t0 = rl_now_ns();
	atomic_store(&r->go, 1);
	sleep_ns(dur);
	atomic_store(&r->stop, 1);
	t1 = rl_now_ns();
	for (i = 0; i < n; i++) {
		if (procs)
			waitpid(pid[i], NULL, 0);
		else
			pthread_join(th[i], NULL);
	}
	for (i = 0; i < n; i++)
		sum += r->count[i];
	return (double)sum * NSEC_PER_SEC / (double)(t1 - t0);
}

/* Aggregate calls per second of @n threads or processes doing @k. */
static double race_run(int n, bool procs, enum kind k, uint64_t dur)
{
	race_kind = k;
	return race_start(race, n, procs, race_worker, dur);
}

#define CONT_REPS	5

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void bench_contention(void)
{
	struct rl_config cfg = {
		.rate = HUGE_RATE, .period_ns = NSEC_PER_SEC, .burst = HUGE_RATE,
	};
	static const int ns[] = { 1, 2, 4 };
	uint64_t dur = scaled(0.3 * NSEC_PER_SEC, NSEC_PER_SEC / 10);
	double tp[2][2][3];	/* [procs][kind][n] */
	double rep[2][2][3][CONT_REPS];
	char name[80], base[64];
	FILE *f;
	int p, k, i, r;

	race = shared_alloc(sizeof(*race));
	race_name = "rlbench-contention";
	create_named(race_name, &cfg);
	printf("contention: named limiter at %llu/s, burst %llu, one fd per caller\n",
	       HUGE_RATE, HUGE_RATE);
	printf("  every point %d times %.1f s, all points in turn, median\n",
	       CONT_REPS, dur / 1e9);
	for (r = 0; r < CONT_REPS; r++)
		for (p = 0; p < 2; p++)
			for (i = 0; i < 3; i++)
				for (k = 0; k < 2; k++)
					rep[p][k][i][r] = race_run(ns[i], p, k ?
						K_NOOP : K_ACQ_RATE, dur);
	for (p = 0; p < 2; p++)
		for (i = 0; i < 3; i++)
			for (k = 0; k < 2; k++)
				tp[p][k][i] = median(rep[p][k][i], CONT_REPS);
	for (p = 0; p < 2; p++) {
		for (i = 0; i < 3; i++) {
			const char *what = p ? "processes" : "threads";

			snprintf(name, sizeof(name), "ACQUIRE(1), %d %s, calls/s",
				 ns[i], what);
			snprintf(base, sizeof(base), "1 of %s", what);
			row("contention", name, tp[p][0][i], "/s", base,
			    tp[p][0][0], i ? ">= 0.8x" : NULL,
			    i ? at_least(tp[p][0][i] / tp[p][0][0], 0.8) : V_INFO);
			snprintf(name, sizeof(name), "no-op ioctl, %d %s, calls/s",
				 ns[i], what);
			row("contention", name, tp[p][1][i], "/s", base,
			    tp[p][1][0], NULL, V_INFO);
		}
	}
	f = open_out("contention.dat");
	if (f) {
		fprintf(f, "# callers, calls/s: acquire_threads noop_threads\n");
		fprintf(f, "#   acquire_procs noop_procs\n");
		for (i = 0; i < 3; i++)
			fprintf(f, "%d %.0f %.0f %.0f %.0f\n", ns[i], tp[0][0][i],
				tp[0][1][i], tp[1][0][i], tp[1][1][i]);
		fclose(f);
	}
	rl_unlink(-1, race_name);
	munmap(race, sizeof(*race));
}
