// SPDX-License-Identifier: GPL-2.0-only
/*
 * util.c - helpers of every section: time, scale, allocation, limiters.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <math.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "bench.h"

void sleep_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = ns / NSEC_PER_SEC, .tv_nsec = ns % NSEC_PER_SEC,
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

uint64_t scaled(double x, uint64_t min)
{
	double v = x * opt_scale;

	return v < (double)min ? min : (uint64_t)v;
}

void die(const char *what, int err)
{
	exit(tool_fail(1, "%s: %s", what, strerror(err < 0 ? -err : err)));
}

/* @p-th percentile of sorted @s. */
double pct(const uint64_t *s, size_t n, double p)
{
	size_t i;

	if (!n)
		return NAN;
	i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return (double)s[i < n ? i : n - 1];
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		die("calloc", ENOMEM);
	return p;
}

/* Memory shared with forked children. */
void *shared_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap", errno);
	return p;
}

int open_private(uint64_t rate, uint64_t burst, uint32_t flags)
{
	struct rl_config cfg = {
		.rate = rate, .period_ns = NSEC_PER_SEC, .burst = burst,
		.flags = flags,
	};
	int fd, ret;

	fd = rl_open(0);
	if (fd < 0)
		die("rl_open", fd);
	ret = rl_set_config(fd, &cfg);
	if (ret)
		die("rl_set_config", ret);
	return fd;
}

uint64_t get_burst(int fd)
{
	struct rl_config cfg;

	if (rl_get_config(fd, &cfg))
		return 1;
	return cfg.burst;
}

/*
 * Empty the bucket, in halving chunks, one try each: at high rates new
 * tokens come faster than a loop of tries could take them one by one.
 * Returns the tokens taken.
 */
uint64_t drain(int fd)
{
	uint64_t burst = get_burst(fd), got = 0, c;

	for (c = burst; c; c /= 2)
		if (!rl_try_acquire(fd, c, NULL))
			got += c;
	return got;
}

void create_named(const char *name, const struct rl_config *cfg)
{
	int fd;

	rl_unlink(-1, name);
	fd = rl_open_named(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL |
			   RL_ATTACH_PERSIST, 0600, cfg);
	if (fd < 0)
		die(name, fd);
	rl_close(fd);
}

int attach(const char *name)
{
	int fd = rl_open_named(name, 0, 0, NULL);

	if (fd < 0)
		die(name, fd);
	return fd;
}

/*
 * CPU time of this process, ns (user + system, which the kernel scales to
 * the scheduler's exact runtime), plus that of redis-server when it runs:
 * the peer's work is done in both. Interrupt work (the timer that wakes a
 * sleeper) is charged to whoever it interrupts, for every peer alike.
 */
uint64_t cpu_ns(void)
{
	unsigned long long ut, st;
	char path[64], buf[512], *p;
	struct rusage ru;
	uint64_t total, tck = NSEC_PER_SEC / (uint64_t)sysconf(_SC_CLK_TCK);
	FILE *f;
	int pid;

	getrusage(RUSAGE_SELF, &ru);
	total = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) *
		NSEC_PER_SEC + ((uint64_t)ru.ru_utime.tv_usec +
				(uint64_t)ru.ru_stime.tv_usec) * 1000;
	for (pid = 2; pid < 1024; pid++) {
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		f = fopen(path, "r");
		if (!f)
			continue;
		p = fgets(buf, sizeof(buf), f) ? strstr(buf, "(redis-server) ") : NULL;
		/* Fields after the name: state ... utime (12th), stime. */
		if (p && sscanf(p + 15, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
				&ut, &st) == 2)
			total += (uint64_t)(ut + st) * tck;
		fclose(f);
	}
	return total;
}

double jain(const uint64_t *x, int n)
{
	double s = 0, s2 = 0;
	int i;

	for (i = 0; i < n; i++) {
		s += (double)x[i];
		s2 += (double)x[i] * (double)x[i];
	}
	return s2 > 0 ? s * s / (n * s2) : NAN;
}

/* Busy time of all CPUs, ns, from /proc/stat (user .. softirq, steal). */
uint64_t sys_busy_ns(void)
{
	unsigned long long v[8] = { 0 };
	uint64_t tck = NSEC_PER_SEC / (uint64_t)sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 8)
		return 0;
	/* All but idle (3) and iowait (4). */
	return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * tck;
}

/* A field of /proc/meminfo, bytes. */
uint64_t mem_field(const char *field)
{
	char line[256];
	unsigned long long kb = 0;
	size_t len = strlen(field);
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':') {
			if (sscanf(line + len + 1, "%llu", &kb) != 1)
				kb = 0;
			break;
		}
	fclose(f);
	return kb * 1024;
}
