// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_watch.c - rlctl watch: target and achieved rate every interval.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ratelimit.h"
#include "rlctl.h"
#include "sysfile.h"

static void sleep_until(uint64_t t)
{
	struct timespec ts = {
		.tv_sec = t / NSEC_PER_SEC,
		.tv_nsec = t % NSEC_PER_SEC,
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

static void watch_line(const struct info *prev, const struct info *cur,
		       uint64_t dt, double since)
{
	uint64_t granted = cur->granted > prev->granted ?
			   cur->granted - prev->granted : 0;
	uint64_t waited = cur->waited > prev->waited ?
			  cur->waited - prev->waited : 0;
	uint64_t wait_ns = cur->wait_ns_total > prev->wait_ns_total ?
			   cur->wait_ns_total - prev->wait_ns_total : 0;
	double achieved = dt ? granted * 1e9 / dt : 0;
	double mean = waited ? (double)wait_ns / waited : 0;
	double target = target_rate(cur);
	char b1[32], b2[32], b3[32];

	if (json) {
		printf("{\"time_s\":%.3f,\"target_per_s\":", since);
		if (target < 0)
			printf("null");
		else
			json_rate(target);
		printf(",\"achieved_per_s\":");
		json_rate(achieved);
		printf(",\"granted\":%llu", (unsigned long long)granted);
		printf(",\"waiters\":%llu,\"waited\":%llu,\"mean_wait_ns\":%.0f}\n",
		       (unsigned long long)cur->waiters,
		       (unsigned long long)waited, mean);
	} else {
		printf("%9.3f %14s %14s %8llu %12s\n", since,
		       fmt_target(b1, sizeof(b1), target),
		       fmt_num(b3, sizeof(b3), achieved),
		       (unsigned long long)cur->waiters,
		       waited ? tool_fmt_ns(b2, sizeof(b2), mean) : "-");
	}
	fflush(stdout);
}

/* watch's options: -i into @secs, -n into @count; 0 or an exit code. */
static int watch_options(int argc, char **argv, double *secs, uint64_t *count)
{
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int opt;

	while ((opt = getopt_long(argc, argv, "i:n:", opts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			errno = 0;
			*secs = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(*secs) ||
			    *secs < 0.001 || *secs > 86400)
				return usage("invalid interval '%s' (0.001 .. 86400 s)",
					     optarg);
			break;
		case 'n':
			if (sysfile_parse_u64(optarg, 10, count) || !*count)
				return usage("invalid count '%s'", optarg);
			break;
		case 'j':
			json = true;
			break;
		default:	/* getopt said what */
			return tool_try_help(EXIT_USAGE);
		}
	}
	return 0;
}

int cmd_watch(int argc, char **argv)
{
	uint64_t count = 0, interval, start, t, tprev, i;
	struct info prev, cur;
	double secs = 1;
	const char *name;
	int ret;

	ret = watch_options(argc, argv, &secs, &count);
	if (ret)
		return ret;
	ret = check_operands("watch", argc - optind, argv + optind, 1,
			     (const char *const[]){ "NAME" });
	if (ret)
		return ret;
	name = argv[optind];
	ret = check_name(name);
	if (!ret)
		ret = limiter_info(name, &prev);
	if (ret)
		return ret;
	interval = (uint64_t)(secs * 1e9);
	start = rl_now_ns();
	tprev = start;
	if (!json)
		printf("%9s %14s %14s %8s %12s\n", "TIME", "TARGET/s",
		       "ACHIEVED/s", "WAITERS", "MEAN_WAIT");
	for (i = 1; !count || i <= count; i++) {
		sleep_until(start + i * interval);
		ret = load_info(name, &cur);
		t = rl_now_ns();
		if (ret)
			return info_error(name, ret);
		watch_line(&prev, &cur, t - tprev, (t - start) / 1e9);
		prev = cur;
		tprev = t;
	}
	return 0;
}
