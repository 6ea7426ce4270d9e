// SPDX-License-Identifier: GPL-2.0-only
/*
 * client.c - rlgclient, a client process of the in-guest tests of global
 * limits (selftests/ratelimit_rlsyncd_test.sh): takes tokens from a named
 * limiter that rlsyncd links, until killed.
 *
 *   rlgclient NAME block SIZE         acquire SIZE, again and again
 *   rlgclient NAME paced SIZE RATE    acquire SIZE (blocking) RATE/SIZE
 *                                     times a second, on a fixed schedule
 *   rlgclient NAME try SIZE RATE      the same with a non-blocking try
 *                                     (refused tries are demand too)
 *
 * The test reads what was granted from the limiter's sysfs counters.
 * While SIZE exceeds the limiter's burst (paused, or a small share) the
 * client waits 10 ms and asks again.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libratelimit.h"

static void sleep_until(uint64_t t)
{
	struct timespec ts = {
		.tv_sec = (time_t)(t / 1000000000ULL),
		.tv_nsec = (long)(t % 1000000000ULL),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/*
 * One acquire; -EINVAL while SIZE exceeds the burst (a paused limiter
 * has a burst of 1) is waited out.
 */
static int take(int fd, uint64_t size, int try)
{
	int ret;

	for (;;) {
		ret = try ? rl_try_acquire(fd, size, NULL) : rl_acquire(fd, size);
		if (ret != -EINVAL)
			return ret;
		sleep_until(rl_now_ns() + 10000000ULL);
	}
}

static int paced(int fd, uint64_t size, double rate, int try)
{
	uint64_t step = (uint64_t)(1e9 * (double)size / rate);
	uint64_t next = rl_now_ns();
	int ret;

	for (;;) {
		ret = take(fd, size, try);
		if (ret && ret != -EAGAIN)
			return ret;
		next += step;
		/* no catching up after a stall of 10 steps or 20 ms */
		if (next + (step < 2000000 ? 10 * step : 20000000) < rl_now_ns())
			next = rl_now_ns();
		sleep_until(next);
	}
}

int main(int argc, char **argv)
{
	uint64_t size;
	double rate = 0;
	int fd, ret;

	if (argc < 4 || (strcmp(argv[2], "block") && argc < 5)) {
		fprintf(stderr, "usage: rlgclient NAME block|paced|try SIZE [RATE]\n");
		return 2;
	}
	size = strtoull(argv[3], NULL, 10);
	if (argc > 4)
		rate = strtod(argv[4], NULL);
	if (!size || (argc > 4 && rate <= 0)) {
		fprintf(stderr, "rlgclient: bad SIZE or RATE\n");
		return 2;
	}
	fd = rl_open_named(argv[1], 0, 0, NULL);
	if (fd < 0) {
		fprintf(stderr, "rlgclient: %s: %s\n", argv[1], strerror(-fd));
		return 1;
	}
	if (!strcmp(argv[2], "block")) {
		do
			ret = take(fd, size, 0);
		while (!ret);
	} else {
		ret = paced(fd, size, rate, !strcmp(argv[2], "try"));
	}
	fprintf(stderr, "rlgclient: %s: %s\n", argv[1], strerror(-ret));
	return 1;
}
