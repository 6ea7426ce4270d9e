// SPDX-License-Identifier: GPL-2.0-only
/*
 * wake.c - section 4, wake: blocked acquire wake latency vs a timerfd wake.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <sys/timerfd.h>

#include "bench.h"

/*
 * One sample of each: the lateness of a blocked ACQUIRE(1) on @fd after
 * its predicted ready time into *@rl, of a 10 ms timerfd wait on @tfd
 * after its expiry into *@tm.
 */
static void wake_sample(int fd, int tfd, uint64_t *rl, uint64_t *tm)
{
	struct itimerspec its = { 0 };
	uint64_t ready, t, exp;
	int ret;

	/* Empty the bucket; the last try tells when the next token is due. */
	while (!(ret = rl_try_acquire(fd, 1, &ready)))
		;
	if (ret != -EAGAIN)
		die("try_acquire", ret);
	ret = rl_acquire(fd, 1);
	t = rl_now_ns();
	if (ret)
		die("acquire", ret);
	*rl = t > ready ? t - ready : 0;

	t = rl_now_ns() + 10 * NSEC_PER_MSEC;
	its.it_value.tv_sec = t / NSEC_PER_SEC;
	its.it_value.tv_nsec = t % NSEC_PER_SEC;
	if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) ||
	    read(tfd, &exp, sizeof(exp)) != sizeof(exp))
		die("timerfd", errno);
	*tm = rl_now_ns() - t;
}

/* wake.dat: percentiles of the @n sorted samples @rl and @tm. */
static void write_wake_dat(const uint64_t *rl, const uint64_t *tm, size_t n)
{
	static const double ps[] = { 1, 5, 10, 25, 50, 75, 90, 95, 99, 100 };
	FILE *f = open_out("wake.dat");
	size_t i;

	if (!f)
		return;
	fprintf(f, "# percentile acquire_ns timerfd_ns\n");
	for (i = 0; i < ARRAY_SIZE(ps); i++)
		fprintf(f, "%g %.0f %.0f\n", ps[i], pct(rl, n, ps[i]),
			pct(tm, n, ps[i]));
	fclose(f);
}

void bench_wake(void)
{
	size_t n = scaled(400, 40), i;
	uint64_t *rl, *tm;
	double r50, r99, t50, t99;
	int fd, tfd;

	fd = open_private(100, 1, 0);	/* a token every 10 ms */
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (tfd < 0)
		die("timerfd_create", errno);
	rl = xcalloc(n, sizeof(uint64_t));
	tm = xcalloc(n, sizeof(uint64_t));
	printf("wake: %zu blocked ACQUIRE(1) at 100/s, burst 1\n", n);
	printf("  latency = return - predicted ready_ns; interleaved with %zu\n", n);
	printf("  timerfd waits of 10 ms: latency = read() return - expiry\n");
	for (i = 0; i < n; i++)
		wake_sample(fd, tfd, &rl[i], &tm[i]);
	close(tfd);
	rl_close(fd);
	qsort(rl, n, sizeof(uint64_t), tool_cmp_u64);
	qsort(tm, n, sizeof(uint64_t), tool_cmp_u64);
	r50 = pct(rl, n, 50);
	r99 = pct(rl, n, 99);
	t50 = pct(tm, n, 50);
	t99 = pct(tm, n, 99);
	row("wake", "blocked ACQUIRE wake latency p50", r50, "ns",
	    "timerfd wake p50", t50, "<= 1.2x", at_most(r50 / t50, 1.2));
	row("wake", "blocked ACQUIRE wake latency p99", r99, "ns",
	    "timerfd wake p99", t99, "<= 2x", at_most(r99 / t99, 2.0));
	row("wake", "blocked ACQUIRE wake latency max", (double)rl[n - 1],
	    "ns", "timerfd wake max", (double)tm[n - 1], NULL, V_INFO);
	write_wake_dat(rl, tm, n);
	free(rl);
	free(tm);
}
