// SPDX-License-Identifier: GPL-2.0-only
/*
 * accuracy.c - section 3, accuracy: achieved/target at 10/s, 1000/s and the
 * highest rates; burst 1 at 200, 1000, 2000/s with 1 and 1000 clients queued.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <math.h>

#include "bench.h"

/*
 * The achieved rate is measured from the first grant after a warm-up (a
 * tenth of the run, at most ACC_WARMUP_NS) to the last grant: tokens granted after that first one
 * over that time, so that neither what the drain left in the bucket nor
 * the phase of the first token counts.
 */
#define ACC_WARMUP_NS	(2 * NSEC_PER_SEC)

/*
 * Take @count at a time from @fd (rate @rate/s) for @dur after emptying
 * the bucket. The bound is checked at every grant against the time
 * before the limiter was configured (@t_cfg), which only loosens it.
 */
static void acc_rl(int fd, uint64_t rate, uint64_t count, uint64_t dur,
		   uint64_t t_cfg, struct acc *a)
{
	uint64_t burst = get_burst(fd), total, t0, t, cpu0, first = 0;
	uint64_t warm = dur / 10 < ACC_WARMUP_NS ? dur / 10 : ACC_WARMUP_NS;
	struct rl_acquire req;
	double bound;
	int ret;

	total = drain(fd);
	memset(a, 0, sizeof(*a));
	a->excess = -INFINITY;
	cpu0 = cpu_ns();
	t0 = rl_now_ns();
	t = t0;
	while (t - t0 < dur) {
		memset(&req, 0, sizeof(req));
		req.count = count;
		req.deadline_ns = RL_DEADLINE_NONE;
		ret = rl_acquire_ex(fd, &req);
		if (ret)
			die("acquire", ret);
		t = rl_now_ns();
		total += count;
		a->calls++;
		/*
		 * Start at a grant that slept: the bucket was empty then, even
		 * if the host stalled the caller during the warm-up.
		 */
		if (first)
			a->tokens += count;
		else if (t - t0 >= warm && req.wait_ns)
			first = t;
		bound = (double)burst + (double)rate * (double)(t - t_cfg) / 1e9;
		if ((double)total - bound > a->excess)
			a->excess = (double)total - bound;
	}
	a->elapsed = t - first;
	a->cpu = cpu_ns() - cpu0;
}

double acc_rate(const struct acc *a)
{
	return a->elapsed ? (double)a->tokens * NSEC_PER_SEC / (double)a->elapsed : NAN;
}

void acc_rows(const char *sec, const char *what, uint64_t rate,
	      const struct acc *a, bool goal)
{
	double r = acc_rate(a);
	char name[80];

	snprintf(name, sizeof(name), "%s at %llu/s (%llu tokens)", what,
		 (unsigned long long)rate, (unsigned long long)a->tokens);
	row(sec, name, r, "/s", "target", (double)rate,
	    goal ? "within 1%" : NULL,
	    goal ? (fabs(r / rate - 1) <= 0.01 ? V_MET : V_MISSED) : V_INFO);
	snprintf(name, sizeof(name), "%s at %llu/s: max over burst+rate*t", what,
		 (unsigned long long)rate);
	row(sec, name, a->excess, "tok", NULL, 0, goal ? "<= 0" : NULL,
	    goal ? at_most(a->excess, 0) : V_INFO);
}

/*
 * Burst 1 with clients always queued (ratelimit(4), "Bounds"): @n threads,
 * each with its own fd on one named limiter, acquire(1) in a loop; the
 * rate is the limiter's granted counter over @dur after a warm-up, each
 * count taken at the middle of the call that read it.
 */
struct bl_ctx {
	const char *name;
	int stop;
};

static void *bl_thread(void *arg)
{
	struct bl_ctx *c = arg;
	int fd = attach(c->name);

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
		if (rl_acquire_timeout(fd, 1, 5 * NSEC_PER_SEC, NULL))
			break;
	rl_close(fd);
	return NULL;
}

static uint64_t bl_granted(int fd, uint64_t *t)
{
	struct rl_stats st;
	uint64_t t0 = rl_now_ns();

	if (rl_get_stats(fd, &st))
		die("rl_get_stats", -EIO);
	*t = (t0 + rl_now_ns()) / 2;
	return st.granted;
}

static double acc_backlog(uint64_t rate, int n, uint64_t dur)
{
	struct rl_config cfg = { .rate = rate, .period_ns = NSEC_PER_SEC,
				 .burst = 1 };
	struct bl_ctx c = { "bench-bl", 0 };
	uint64_t g0, g1, t0, t1;
	pthread_attr_t attr;
	pthread_t *th = xcalloc(n, sizeof(*th));
	int fd, i;

	create_named(c.name, &cfg);
	fd = attach(c.name);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], &attr, bl_thread, &c))
			die("pthread_create", -EAGAIN);
	sleep_ns(NSEC_PER_SEC / 2);
	g0 = bl_granted(fd, &t0);
	sleep_ns(dur);
	g1 = bl_granted(fd, &t1);
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
	cfg.flags = RL_CONFIG_UNLIMITED;
	rl_set_config(fd, &cfg);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	pthread_attr_destroy(&attr);
	rl_close(fd);
	rl_unlink(-1, c.name);
	free(th);
	return (double)(g1 - g0) * NSEC_PER_SEC / (double)(t1 - t0);
}

static void bench_backlog(void)
{
	static const uint64_t rates[] = { 200, 1000, 2000 };
	static const int clients[] = { 1, 1000 };
	unsigned int i, j;
	char name[80];
	double r;

	printf("accuracy: burst 1, clients always queued, for %.0f s each\n",
	       scaled(2 * NSEC_PER_SEC, 2 * NSEC_PER_SEC) / 1e9);
	for (i = 0; i < ARRAY_SIZE(clients); i++)
		for (j = 0; j < ARRAY_SIZE(rates); j++) {
			r = acc_backlog(rates[j], clients[i],
					scaled(2 * NSEC_PER_SEC, 2 * NSEC_PER_SEC));
			snprintf(name, sizeof(name),
				 "burst 1, %d client%s: ACQUIRE(1) at %llu/s",
				 clients[i], clients[i] > 1 ? "s" : "",
				 (unsigned long long)rates[j]);
			row("accuracy", name, r, "/s", "target",
			    (double)rates[j], ">= 99.5%",
			    at_least(r / rates[j], 0.995));
		}
}

/* Long enough for 10^4 tokens at 10/s after the warm-up. */
#define ACC_10_NS	((10000 / 10 + 5) * NSEC_PER_SEC + ACC_WARMUP_NS)

void bench_accuracy(void)
{
	static const uint64_t sweep[] = { 10000, 30000, 100000, 300000,
					  1000000, 3000000 };
	uint64_t t_cfg, best = 0;
	struct acc a, best_a = { 0 };
	unsigned int i;
	FILE *f;
	int fd;

	f = open_out("accuracy.dat");
	if (f)
		fprintf(f, "# target_per_s achieved_per_s ratio tokens\n");
	printf("accuracy: one caller, acquire(1) in a loop after emptying the bucket; "
	       "default burst (100 ms of tokens)\n");

	/* 10/s: 10^4 tokens take 1000 s (at scale 1), the longest part of the run. */
	printf("accuracy: 10/s for %.0f s\n",
	       scaled(ACC_10_NS, 2 * NSEC_PER_SEC) / 1e9);
	t_cfg = rl_now_ns();
	fd = open_private(10, 0, 0);
	acc_rl(fd, 10, 1, scaled(ACC_10_NS, 2 * NSEC_PER_SEC), t_cfg, &a);
	rl_close(fd);
	acc_rows("accuracy", "ACQUIRE(1)", 10, &a, true);
	if (f)
		fprintf(f, "10 %.4f %.6f %llu\n", acc_rate(&a), acc_rate(&a) / 10,
			(unsigned long long)a.tokens);

	t_cfg = rl_now_ns();
	fd = open_private(1000, 0, 0);
	acc_rl(fd, 1000, 1, scaled(12 * NSEC_PER_SEC, 2 * NSEC_PER_SEC), t_cfg, &a);
	rl_close(fd);
	acc_rows("accuracy", "ACQUIRE(1)", 1000, &a, true);
	if (f)
		fprintf(f, "1000 %.4f %.6f %llu\n", acc_rate(&a), acc_rate(&a) / 1000,
			(unsigned long long)a.tokens);

	/* The highest rate one caller keeps up with: the last within 1%. */
	for (i = 0; i < ARRAY_SIZE(sweep); i++) {
		t_cfg = rl_now_ns();
		fd = open_private(sweep[i], 0, 0);
		acc_rl(fd, sweep[i], 1, scaled(2 * NSEC_PER_SEC, NSEC_PER_SEC / 2),
		       t_cfg, &a);
		rl_close(fd);
		acc_rows("accuracy", "sweep ACQUIRE(1)", sweep[i], &a, false);
		if (f)
			fprintf(f, "%llu %.4f %.6f %llu\n",
				(unsigned long long)sweep[i], acc_rate(&a),
				acc_rate(&a) / sweep[i], (unsigned long long)a.tokens);
		if (fabs(acc_rate(&a) / sweep[i] - 1) > 0.01 || a.excess > 0)
			break;
		best = sweep[i];
		best_a = a;
	}
	if (f)
		fclose(f);
	if (best)
		acc_rows("accuracy", "highest sustained: ACQUIRE(1)", best,
			 &best_a, true);
	else
		note("accuracy", "no sweep rate was sustained within 1%%");
	bench_backlog();
}
