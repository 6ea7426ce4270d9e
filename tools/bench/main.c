// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlbench - measure /dev/ratelimit against its physical floor and against
 * what users would run instead, each figure next to its baseline measured
 * in the same run. Run as root in the QEMU guest of `make bench`.
 *
 * Sections (all by default, in this order):
 *   floor       uncontended ACQUIRE(1) vs a no-op ioctl vs getppid()
 *   contention  1, 2, 4 threads and processes on one named limiter
 *   accuracy    achieved/target at 10/s, 1000/s and the highest rates;
 *               burst 1 at 200, 1000, 2000/s with 1 and 1000 clients queued
 *   wake        blocked acquire wake latency vs a timerfd wake
 *   idle        timer expirations caused by 1000 idle named limiters
 *   fairness    Jain's index of 2, 8, 32 clients vs a pthread bucket
 *   peers       shm pthread bucket, POSIX semaphore, Redis + Lua
 *   batch       rl_batch_*() vs plain acquires at several rates
 *   scale       CPU per grant, wake latency, Jain's index with 10 to
 *               10000 backlogged clients of one limiter
 *   many        1000 to 100000 named limiters: create, lookup, memory,
 *               idle timers; memory per idle client
 *   pollers     pollers woken per token with 10 to 1000 pollers
 *   cycle       RL_IOC_CYCLE vs ACQUIRE+RELEASE vs sem_wait+sem_post
 *   timer       the longest limiter timer callback with 1000 waiters
 *
 * One file per section under tools/bench/, bench.h between them.
 * Prints a table; with -o DIR also writes DIR/results.csv,
 * DIR/results.json and gnuplot data files DIR/NAME.dat.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <sys/stat.h>

#include "bench.h"
#include "sysfile.h"

TOOL_NAME("rlbench");

double opt_scale = 1.0;
char clocksource[64];
const char *opt_dir;
int opt_redis_port = 6379;

static const struct {
	const char *name;
	void (*fn)(void);
	bool trace;	/* counts timer expirations with tracepoints */
} sections[] = {
	{ "floor", bench_floor, false },
	{ "contention", bench_contention, false },
	{ "fast", bench_fast, false },
	{ "accuracy", bench_accuracy, false },
	{ "wake", bench_wake, false },
	{ "idle", bench_idle, true },
	{ "fairness", bench_fairness, false },
	{ "peers", bench_peers, false },
	{ "batch", bench_batch, false },
	{ "hier", bench_hier, false },
	{ "async", bench_async, false },
	{ "scale", bench_scale, false },
	{ "many", bench_many, true },
	{ "pollers", bench_pollers, false },
	{ "cycle", bench_cycle, false },
	{ "timer", bench_timer, true },
	{ "keyed", bench_keyed, false },
};

#define NSECTIONS	(ARRAY_SIZE(sections))

static void print_usage(FILE *f)
{
	unsigned int i;

	fprintf(f, "usage: rlbench [-o DIR] [-s SCALE] [-p REDIS_PORT] [SECTION...]\n"
		"  -o DIR    write results.csv, results.json and *.dat there\n"
		"  -s SCALE  multiply durations and sample counts (default 1)\n"
		"  -p PORT   redis-server port on 127.0.0.1 (default 6379)\n"
		"sections:");
	for (i = 0; i < NSECTIONS; i++)
		fprintf(f, " %s", sections[i].name);
	fputc('\n', f);
}

int main(int argc, char **argv)
{
	bool want[NSECTIONS] = { 0 }, any = false, trace = false;
	unsigned int i;
	int opt, fd;

	while ((opt = getopt(argc, argv, "o:s:p:h")) != -1) {
		switch (opt) {
		case 'o':
			opt_dir = optarg;
			break;
		case 's':
			opt_scale = atof(optarg);
			break;
		case 'p':
			opt_redis_port = atoi(optarg);
			break;
		case 'h':
			print_usage(stdout);
			return 0;
		default:
			print_usage(stderr);
			return 2;
		}
	}
	for (; optind < argc; optind++) {
		for (i = 0; i < NSECTIONS; i++)
			if (!strcmp(argv[optind], sections[i].name))
				break;
		if (i == NSECTIONS || opt_scale <= 0) {
			print_usage(stderr);
			return 2;
		}
		want[i] = true;
		any = true;
	}
	/* The ioctl in every section: fast maps its own fds (fast.c). */
	setenv("RATELIMIT_FAST", "0", 1);
	fd = rl_open(0);
	if (fd < 0)
		die(RL_DEVICE_PATH, fd);
	rl_close(fd);
	if (opt_dir)
		mkdir(opt_dir, 0755);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Every clock read of the driver (and of the samples) goes there. */
	if (sysfile_read("/sys/devices/system/clocksource/clocksource0/current_clocksource",
			 clocksource, sizeof(clocksource)) < 0)
		snprintf(clocksource, sizeof(clocksource), "unknown");
	clocksource[strcspn(clocksource, "\n")] = '\0';
	printf("rlbench: clocksource %s, %ld CPUs, scale %g\n", clocksource,
	       sysconf(_SC_NPROCESSORS_ONLN), opt_scale);
	/* The tracepoints on once, before any section: trace.c says why. */
	for (i = 0; i < NSECTIONS; i++)
		trace |= sections[i].trace && (!any || want[i]);
	if (trace)
		trace_setup();
	for (i = 0; i < NSECTIONS; i++) {
		if (any && !want[i])
			continue;
		printf("\n== %s ==\n", sections[i].name);
		sections[i].fn();
	}
	print_summary();
	write_results();
	return 0;
}
