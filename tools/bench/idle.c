// SPDX-License-Identifier: GPL-2.0-only
/*
 * idle.c - section 5, idle: timer expirations caused by 1000 idle named
 * limiters.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>

#include "bench.h"
#include "sysfile.h"

/* The stop flag of the control waiters (struct race of contention.c). */
static struct race *race;

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -EIO;
}

/* Sum of the local timer interrupts of all CPUs (/proc/interrupts LOC). */
static uint64_t loc_irqs(void)
{
	char line[1024], *p, *end;
	uint64_t sum = 0;
	FILE *f = fopen("/proc/interrupts", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		p = line + strspn(line, " ");
		if (strncmp(p, "LOC:", 4))
			continue;
		p += 4;
		for (;;) {
			unsigned long long v = strtoull(p, &end, 10);

			if (end == p)
				break;
			sum += v;
			p = end;
		}
	}
	fclose(f);
	return sum;
}

struct timer_count {
	uint64_t all;		/* hrtimer expirations */
	uint64_t rl;		/* of them, rl_timer_fn */
	uint64_t lost;		/* events the buffer dropped */
	uint64_t loc;		/* local timer interrupts */
};

/* Without tracefs: the local timer interrupts only. */
static void count_loc(uint64_t dur, struct timer_count *tc)
{
	uint64_t loc0 = loc_irqs();

	memset(tc, 0, sizeof(*tc));
	sleep_ns(dur);
	tc->loc = loc_irqs() - loc0;
}

/*
 * Count hrtimer expirations over @dur with the timer tracepoint (enabled
 * once by trace.c; the window is tracing_on's).
 */
static void count_timers(uint64_t dur, struct timer_count *tc)
{
	unsigned long long in, written;
	char line[512];
	uint64_t loc0;
	FILE *f;

	memset(tc, 0, sizeof(*tc));
	loc0 = loc_irqs();
	trace_begin();
	sleep_ns(dur);
	trace_end();
	tc->loc = loc_irqs() - loc0;
	f = trace_open();
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "# entries-in-buffer/entries-written: %llu/%llu",
			   &in, &written) == 2)
			tc->lost = written - in;
		if (line[0] == '#' || !strstr(line, "hrtimer_expire_entry"))
			continue;
		tc->all++;
		tc->rl += !!strstr(line, "rl_timer_fn");
	}
	fclose(f);
	trace_clear();
}

/* A waiter taking a token at a time from @arg, a struct fair. */
static void *control_waiter(void *arg)
{
	struct fair *f = arg;

	while (!atomic_load(&race->stop)) {
		if (f->fd < 0)
			shmb_acquire(f->shm, 1);
		else if (rl_acquire(f->fd, 1))
			break;
	}
	return NULL;
}

/* Timer counts over @dur while one waiter takes 100 tokens/s. */
static void control_run(bool tr, bool rl, uint64_t dur,
			struct timer_count *tc)
{
	const char *path = "/tmp/rlbench-ctl.shm";
	struct fair f = { .fd = -1 };
	pthread_t th;

	if (rl)
		f.fd = open_private(100, 1, 0);
	else
		f.shm = shmb_create(path, 100, 1);
	atomic_store(&race->stop, 0);
	pthread_create(&th, NULL, control_waiter, &f);
	if (tr)
		count_timers(dur, tc);
	else
		count_loc(dur, tc);
	atomic_store(&race->stop, 1);
	pthread_join(th, NULL);
	if (rl)
		rl_close(f.fd);
	else
		shmb_destroy(f.shm, path);
}

/* The timers over @dur: with the tracepoint if @tr, else LOC only. */
static void count(bool tr, uint64_t dur, struct timer_count *tc)
{
	if (tr)
		count_timers(dur, tc);
	else
		count_loc(dur, tc);
}

/* @nlim persistent named limiters at 100/s, each used once: how many. */
static int make_idle(int nlim)
{
	struct rl_config cfg = { .rate = 100, .period_ns = NSEC_PER_SEC };
	char name[RL_NAME_MAX];
	int i, fd, made = 0;

	for (i = 0; i < nlim; i++) {
		snprintf(name, sizeof(name), "rlbench-idle-%04d", i);
		rl_unlink(-1, name);
		fd = rl_open_named(name, RL_ATTACH_CREATE | RL_ATTACH_PERSIST,
				   0600, &cfg);
		if (fd < 0) {
			fprintf(stderr, "rlbench: %s: %s\n", name, strerror(-fd));
			break;
		}
		rl_acquire(fd, 1);
		rl_close(fd);
		made++;
	}
	return made;
}

static void unmake_idle(int made)
{
	char name[RL_NAME_MAX];
	int i;

	for (i = 0; i < made; i++) {
		snprintf(name, sizeof(name), "rlbench-idle-%04d", i);
		rl_unlink(-1, name);
	}
}

/* The rows of the tracepoint's counts (@base, @idle, @ctl, @shm). */
static void idle_trace_rows(const struct timer_count *base,
			    const struct timer_count *idle,
			    const struct timer_count *ctl,
			    const struct timer_count *shm, double secs, bool all)
{
	row("idle", "rl_timer_fn expirations, 1000 idle limiters",
	    (double)idle->rl, "", "same, no limiter", (double)base->rl,
	    "== 0", idle->rl == 0 && all ? V_MET : V_MISSED);
	row("idle", "all hrtimer expirations/s, 1000 idle limiters",
	    idle->all / secs, "/s", "same, no limiter", base->all / secs,
	    NULL, V_INFO);
	row("idle", "rl_timer_fn expirations/s, 1 waiter at 100/s",
	    ctl->rl / secs, "/s", "tokens/s", 100, NULL, V_INFO);
	row("idle", "all hrtimer expirations/s, 1 waiter at 100/s",
	    ctl->all / secs, "/s", "same, shm bucket waiter",
	    shm->all / secs, NULL, V_INFO);
	if (base->lost + idle->lost + ctl->lost)
		note("idle", "trace buffer dropped %llu events",
		     (unsigned long long)(base->lost + idle->lost + ctl->lost));
}

void bench_idle(void)
{
	const char *par = "/sys/module/ratelimit/parameters/max_named_per_user";
	uint64_t dur = scaled(5 * NSEC_PER_SEC, NSEC_PER_SEC);
	struct timer_count base, idle, ctl, shm;
	const int nlim = 1000;
	char old[32] = "", name[RL_NAME_MAX];
	bool tr = trace_has(TRACE_EXPIRE_ENTRY);
	double secs = dur / 1e9;
	int made;

	printf("idle: timer:hrtimer_expire_entry events (rl_timer_fn) and\n");
	printf("  /proc/interrupts LOC over %.1f s: nothing; %d idle named\n",
	       secs, nlim);
	printf("  limiters (each used once); one sleeper at 100/s as a positive\n");
	printf("  control; one sleeper on the shm bucket\n");
	if (!tr)
		note("idle", "no tracefs with timer events: LOC interrupts only");
	race = shared_alloc(sizeof(*race));
	sysfile_read(par, old, sizeof(old));
	write_file(par, "4096");

	count(tr, dur, &base);
	made = make_idle(nlim);
	sleep_ns(NSEC_PER_SEC / 2);	/* let any timer they armed fire */
	count(tr, dur, &idle);
	unmake_idle(made);
	if (old[0])
		write_file(par, old);

	control_run(tr, true, dur, &ctl);
	control_run(tr, false, dur, &shm);

	snprintf(name, sizeof(name), "named limiters created (of %d)", nlim);
	row("idle", name, made, "", NULL, 0, NULL, V_INFO);
	if (tr)
		idle_trace_rows(&base, &idle, &ctl, &shm, secs, made == nlim);
	row("idle", "LOC timer interrupts/s, 1000 idle limiters",
	    idle.loc / secs, "/s", "same, no limiter", base.loc / secs, NULL,
	    V_INFO);
	row("idle", "LOC timer interrupts/s, 1 waiter at 100/s",
	    ctl.loc / secs, "/s", "same, shm bucket waiter", shm.loc / secs,
	    NULL, V_INFO);
	munmap(race, sizeof(*race));
}
