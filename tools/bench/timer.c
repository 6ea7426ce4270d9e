// SPDX-License-Identifier: GPL-2.0-only
/*
 * timer.c - section timer: the longest time the limiter's hrtimer callback
 * (rl_timer_fn) runs, with 1000 waiters.
 *
 * 1000 threads, each with its own fd on one fed named limiter, block in
 * ACQUIRE(1); deposits of 1000 tokens every 20 ms make each dispatch run
 * out of its budget (RL_DISPATCH_MAX grants), so the timer goes on with
 * the rest: the worst case the budget allows. The callbacks are timed
 * from the kernel's own tracepoints timer:hrtimer_expire_entry and
 * hrtimer_expire_exit (tracefs, µs timestamps), which exist on every
 * kernel and in hard and soft hrtimer modes alike; trace.c enabled them
 * before the first section, and the window is tracing_on's.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <math.h>
#include <sys/mman.h>

#include "bench.h"

#define TM_WAITERS	1000
#define TM_STACK	(64 * 1024)
#define TM_NAME		"rlbench-timer"
#define TM_CPUS		64

struct tm_run {
	atomic_int stop;
	atomic_int started;
};

struct tm_slot {
	struct tm_run *r;
	int fd;
};

static void *tm_thread(void *arg)
{
	struct tm_slot *s = arg;

	atomic_fetch_add(&s->r->started, 1);
	while (!atomic_load(&s->r->stop))
		if (rl_acquire(s->fd, 1))
			break;
	return NULL;
}

/*
 * Durations, ns, of the rl_timer_fn callbacks in the trace into @d (at
 * most @max); returns how many. An entry of rl_timer_fn on a CPU is ended
 * by the next exit of the same hrtimer on that CPU.
 */
static size_t tm_parse(uint64_t *d, size_t max)
{
	static char open_timer[TM_CPUS][32];
	static double open_ts[TM_CPUS];
	char line[512], hr[32], *ev, *b;
	size_t n = 0;
	FILE *f;
	int cpu;

	f = trace_open();
	if (!f)
		return 0;
	memset(open_timer, 0, sizeof(open_timer));
	while (n < max && fgets(line, sizeof(line), f)) {
		ev = strstr(line, ": hrtimer_expire_");
		b = strchr(line, '[');
		if (!ev || !b || b > ev || line[0] == '#')
			continue;
		cpu = atoi(b + 1);
		if (cpu < 0 || cpu >= TM_CPUS)
			continue;
		*ev = '\0';
		b = strrchr(line, ' ');
		if (!b || sscanf(ev + 2, "hrtimer_expire_%*s hrtimer=%31s", hr) != 1)
			continue;
		if (!strncmp(ev + 2, "hrtimer_expire_entry", 20)) {
			if (strstr(ev + 2, "function=rl_timer_fn ") ||
			    strstr(ev + 2, "function=rl_timer_fn\n")) {
				snprintf(open_timer[cpu], sizeof(open_timer[cpu]),
					 "%s", hr);
				open_ts[cpu] = atof(b + 1);
			}
		} else if (open_timer[cpu][0] && !strcmp(open_timer[cpu], hr)) {
			d[n++] = (uint64_t)((atof(b + 1) - open_ts[cpu]) * 1e9 + 0.5);
			open_timer[cpu][0] = '\0';
		}
	}
	fclose(f);
	return n;
}

/* The 1000 waiters and the deposits; returns the waiters started. */
static int tm_load(struct tm_run *r, struct tm_slot *slot, char *stacks,
		   int fd0, pthread_t *th)
{
	size_t rounds = scaled(50, 10), i;
	pthread_attr_t attr;
	int n;

	pthread_attr_init(&attr);
	for (n = 0; n < TM_WAITERS; n++) {
		slot[n] = (struct tm_slot){ .r = r, .fd = attach(TM_NAME) };
		pthread_attr_setstack(&attr, stacks + (size_t)n * TM_STACK,
				      TM_STACK);
		if (pthread_create(&th[n], &attr, tm_thread, &slot[n])) {
			rl_close(slot[n].fd);
			break;
		}
	}
	pthread_attr_destroy(&attr);
	sleep_ns(NSEC_PER_SEC);		/* all of them asleep in ACQUIRE */
	if (!trace_has(TRACE_EXPIRE_ENTRY) || !trace_has(TRACE_EXPIRE_EXIT))
		note("timer", "the hrtimer tracepoints are not enabled");
	trace_begin();
	for (i = 0; i < rounds; i++) {
		rl_deposit(fd0, TM_WAITERS, NULL);
		sleep_ns(20 * NSEC_PER_MSEC);
	}
	trace_end();
	return n;
}

void bench_timer(void)
{
	struct rl_config cfg = { .rate = 1, .period_ns = NSEC_PER_SEC,
				 .burst = TM_WAITERS, .flags = RL_CONFIG_FED };
	struct tm_run r = { 0 };
	struct tm_slot *slot;
	size_t len = (size_t)TM_WAITERS * TM_STACK, n;
	uint64_t *d;
	pthread_t *th;
	char *stacks;
	int fd0, i, started;

	printf("timer: %d threads blocked in ACQUIRE(1) on one fed limiter,\n",
	       TM_WAITERS);
	printf("  deposits of %d every 20 ms; rl_timer_fn callbacks timed by\n",
	       TM_WAITERS);
	printf("  timer:hrtimer_expire_entry/exit (tracefs, 1 us resolution)\n");
	raise_nofile(TM_WAITERS);
	rl_unlink(-1, TM_NAME);
	fd0 = rl_open_named(TM_NAME, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
			    &cfg);
	if (fd0 < 0)
		die(TM_NAME, fd0);
	drain(fd0);
	slot = xcalloc(TM_WAITERS, sizeof(*slot));
	th = xcalloc(TM_WAITERS, sizeof(*th));
	stacks = mmap(NULL, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stacks == MAP_FAILED)
		die("mmap", errno);
	started = tm_load(&r, slot, stacks, fd0, th);
	atomic_store(&r.stop, 1);
	cfg.flags = RL_CONFIG_UNLIMITED;
	rl_set_config(fd0, &cfg);
	for (i = 0; i < started; i++) {
		pthread_join(th[i], NULL);
		rl_close(slot[i].fd);
	}
	munmap(stacks, len);
	rl_close(fd0);
	rl_unlink(-1, TM_NAME);
	d = xcalloc(1 << 20, sizeof(uint64_t));
	n = tm_parse(d, 1 << 20);
	trace_clear();
	qsort(d, n, sizeof(uint64_t), tool_cmp_u64);
	printf("timer: %d waiters, %zu rl_timer_fn callbacks traced\n",
	       started, n);
	row("timer", "rl_timer_fn callbacks, 1000 waiters", (double)n, "",
	    NULL, 0, NULL, V_INFO);
	row("timer", "callback p50, 1000 waiters", n ? pct(d, n, 50) : NAN,
	    "ns", NULL, 0, NULL, V_INFO);
	row("timer", "callback p99, 1000 waiters", n ? pct(d, n, 99) : NAN,
	    "ns", NULL, 0, NULL, V_INFO);
	row("timer", "longest callback, 1000 waiters",
	    n ? (double)d[n - 1] : NAN, "ns", NULL, 0, NULL, V_INFO);
	free(d);
	free(th);
	free(slot);
}
