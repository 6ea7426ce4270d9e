// SPDX-License-Identifier: GPL-2.0-only
/*
 * fairness.c - section 6, fairness: Jain's index of 2, 8, 32 clients vs a
 * pthread bucket.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE

#include "bench.h"

static void *fair_thread(void *arg)
{
	struct fair *f = arg;
	struct rl_acquire req;

	atomic_fetch_add(f->ready, 1);
	while (!atomic_load(f->go))
		sched_yield();
	for (;;) {
		if (f->fd >= 0) {
			memset(&req, 0, sizeof(req));
			req.count = 1;
			req.deadline_ns = f->end;
			if (rl_acquire_ex(f->fd, &req))
				break;
		} else {
			shmb_acquire(f->shm, 1);
			if (rl_now_ns() >= f->end)
				break;
		}
		f->got++;
	}
	return NULL;
}

/* Jain's index of @n clients taking one token at a time for @dur. */
static double fair_run(int n, bool rl, uint64_t rate, uint64_t dur,
		       uint64_t *share)
{
	struct rl_config cfg = { .rate = rate, .period_ns = NSEC_PER_SEC,
				 .burst = 1 };
	const char *path = "/tmp/rlbench-fair.shm";
	struct fair f[MAX_WORKERS];
	pthread_t th[MAX_WORKERS];
	pthread_attr_t attr;
	atomic_int ready = 0, go = 0;
	struct shmb *shm = NULL;
	uint64_t got[MAX_WORKERS];
	int i;

	if (rl)
		create_named("rlbench-fair", &cfg);
	else
		shm = shmb_create(path, rate, 1);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (i = 0; i < n; i++) {
		f[i] = (struct fair) { .fd = rl ? attach("rlbench-fair") : -1,
				       .shm = shm, .ready = &ready, .go = &go };
		pthread_create(&th[i], &attr, fair_thread, &f[i]);
	}
	while (atomic_load(&ready) < n)
		sleep_ns(NSEC_PER_MSEC);
	for (i = 0; i < n; i++)
		f[i].end = rl_now_ns() + dur;
	atomic_store(&go, 1);
	for (i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		got[i] = f[i].got;
		if (share)
			share[i] = got[i];
		if (rl)
			rl_close(f[i].fd);
	}
	if (rl)
		rl_unlink(-1, "rlbench-fair");
	else
		shmb_destroy(shm, path);
	return jain(got, n);
}

void bench_fairness(void)
{
	static const int ns[] = { 2, 8, 32 };
	uint64_t dur = scaled(3 * NSEC_PER_SEC, NSEC_PER_SEC), rate = 1000;
	uint64_t share[MAX_WORKERS];
	double jr, js;
	char name[80];
	FILE *f = open_out("fairness.dat");
	unsigned int i;

	printf("fairness: N threads, one fd each, acquire(1) in a loop on one\n");
	printf("  named limiter at %llu/s, burst 1, for %.1f s; baseline: the\n",
	       (unsigned long long)rate, dur / 1e9);
	printf("  same threads on the shm pthread bucket\n");
	if (f)
		fprintf(f, "# clients jain_ratelimit jain_shm_bucket\n");
	for (i = 0; i < ARRAY_SIZE(ns); i++) {
		jr = fair_run(ns[i], true, rate, dur, share);
		js = fair_run(ns[i], false, rate, dur, NULL);
		snprintf(name, sizeof(name), "Jain's index, %d clients", ns[i]);
		row("fairness", name, jr, "", "shm pthread bucket", js,
		    ">= 0.99", at_least(jr, 0.99));
		if (f)
			fprintf(f, "%d %.5f %.5f\n", ns[i], jr, js);
	}
	if (f)
		fclose(f);
}
