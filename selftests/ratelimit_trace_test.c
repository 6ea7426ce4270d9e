// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of the module's tracepoints (events/ratelimit/ in tracefs):
 * a known sequence of calls on a named limiter of its own produces the
 * events it should, in order, with the fields it should. The timer
 * events also count a limiter's timer expirations: a tree's capped child
 * must not start its timer again and again for a time already past.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"

#define TRACEFS		"/sys/kernel/tracing"
#define EVENTS_MAX	64
#define LINE_MAX_LEN	512

/* One event of our limiter: its name without "ratelimit_", its fields. */
struct event {
	char name[32];
	char fields[LINE_MAX_LEN];
};

/* The events of one limiter, in the order of the trace buffer. */
struct events {
	struct event ev[EVENTS_MAX];
	int nev;
};

FIXTURE(trace) {
	char name[RL_NAME_MAX];
	struct events log;
};

static int tracefs_write(const char *file, const char *s)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", TRACEFS, file);
	return file_write(path, s);
}

/* Empty the trace buffer, as "echo > trace" does: 0 or -1. */
static int trace_clear(void)
{
	int fd = open(TRACEFS "/trace", O_WRONLY | O_TRUNC | O_CLOEXEC);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

FIXTURE_SETUP(trace)
{
	if (access(TRACEFS "/events", F_OK))
		mount("tracefs", TRACEFS, "tracefs", 0, NULL);
	ASSERT_EQ(0, access(TRACEFS "/events/ratelimit", F_OK))
		TH_LOG("no ratelimit events in " TRACEFS);
	snprintf(self->name, sizeof(self->name), "trace-%d", getpid());
	ASSERT_EQ(0, tracefs_write("tracing_on", "0"));
	ASSERT_EQ(0, trace_clear());
	/*
	 * No task names recorded: with them, the first event enabled and the
	 * last disabled patch __schedule live (a probe on sched_switch), and
	 * under TCG such a patch once hung a guest (tools/bench/trace.c).
	 */
	tracefs_write("options/record-cmd", "0");
	ASSERT_EQ(0, tracefs_write("events/ratelimit/enable", "1"));
	ASSERT_EQ(0, tracefs_write("tracing_on", "1"));
}

FIXTURE_TEARDOWN(trace)
{
	tracefs_write("events/ratelimit/enable", "0");
	trace_clear();
	ks_unl_name(self->name);
}

/* Read the trace buffer: the events of limiter @name. How many, or -1. */
static int read_events(struct events *log, const char *name)
{
	char line[LINE_MAX_LEN], key[RL_NAME_MAX + 16];
	FILE *f;

	if (tracefs_write("tracing_on", "0"))
		return -1;
	f = fopen(TRACEFS "/trace", "r");
	if (!f)
		return -1;
	snprintf(key, sizeof(key), ": limiter=%s ", name);
	log->nev = 0;
	while (fgets(line, sizeof(line), f) && log->nev < EVENTS_MAX) {
		struct event *e = &log->ev[log->nev];
		char *at = strstr(line, key), *ev;

		if (!at)
			continue;
		*at = '\0';
		/* The task, "ratelimit_trace", is named like the events. */
		ev = strstr(line, ": ratelimit_");
		if (!ev)
			continue;
		snprintf(e->name, sizeof(e->name), "%s", ev + 12);
		snprintf(e->fields, sizeof(e->fields), "%s", at + 2);
		log->nev++;
	}
	fclose(f);
	return log->nev;
}

/* The value of @field in @e, or POISON64. */
static __u64 field(const struct event *e, const char *field)
{
	char key[40];
	const char *at;

	snprintf(key, sizeof(key), " %s=", field);
	at = strstr(e->fields, key);
	return at ? strtoull(at + strlen(key), NULL, 0) : POISON64;
}

/* The names of the events, timer events left out, joined by spaces. */
static void sequence(const struct events *log, char *buf, size_t len,
		     int *ntimer)
{
	size_t n = 0;
	int i;

	buf[0] = '\0';
	*ntimer = 0;
	for (i = 0; i < log->nev; i++) {
		if (!strcmp(log->ev[i].name, "timer")) {
			(*ntimer)++;
			continue;
		}
		n += snprintf(buf + n, len - n, "%s%s", n ? " " : "",
			      log->ev[i].name);
		if (n >= len)
			break;
	}
}

/* The @nth (from 0) event named @name, or NULL. */
static const struct event *nth(const struct events *log, const char *name,
			       int nth)
{
	int i;

	for (i = 0; i < log->nev; i++)
		if (!strcmp(log->ev[i].name, name) && !nth--)
			return &log->ev[i];
	return NULL;
}

/* A waiter asleep on @fd, then a signal that ends its acquire (EINTR). */
static int interrupt_one(int fd)
{
	struct waiter w;

	if (catch_signal(SIGUSR1, 0) ||
	    waiter_start(&w, fd, 1, RL_DEADLINE_NONE, 0) ||
	    ks_wait_waiters(fd, 1, 5000))
		return -1;
	pthread_kill(w.th, SIGUSR1);
	if (waiter_join(&w, 5000))
		return -1;
	return w.ret == -1 && w.err == EINTR ? 0 : -1;
}

/* The events of known_sequence, timers left out. */
#define WANT	"acquire grant "		/* at once */		\
		"acquire timeout "		/* 50 ms deadline */	\
		"acquire grant "		/* after 100 ms */	\
		"reconfigure acquire interrupt "			\
		"reconfigure acquire grant release"	/* a permit */

TEST_F(trace, known_sequence)
{
	const struct event *e;
	struct rl_acquire a;
	struct rl_config c;
	char seq[512];
	int fd, ntimer;

	/* 10 tokens a second, one at most: the second waits 100 ms. */
	fd = ks_open_att(self->name, RL_ATTACH_CREATE, 0600, 10, NS_PER_SEC, 1);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 1, RL_DEADLINE_NONE, 0, &a));
	EXPECT_ERRNO(ETIMEDOUT, ks_acq(fd, 1, now_ns() + 50 * NS_PER_MS, 0,
				       &a));
	ASSERT_EQ(0, ks_acq(fd, 1, RL_DEADLINE_NONE, 0, &a));
	EXPECT_LT(0, a.wait_ns);
	/* One token in 10 s: the next acquire sleeps until a signal. */
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 1, 0));
	ASSERT_EQ(0, interrupt_one(fd));
	/* A semaphore of 2 permits. */
	ASSERT_EQ(0, ks_get(fd, &c));
	c.flags = RL_CONFIG_UNLIMITED;
	c.concurrency = 2;
	ASSERT_EQ(0, ioctl(fd, RL_IOC_SET_CONFIG, &c));
	ASSERT_EQ(0, ks_acq(fd, 1, RL_DEADLINE_NONE, 0, &a));
	ASSERT_EQ(0, ks_release(fd, 1));
	close(fd);

	ASSERT_LT(0, read_events(&self->log, self->name));
	sequence(&self->log, seq, sizeof(seq), &ntimer);
	EXPECT_STREQ(WANT, seq);
	/* The timer served the request that waited. */
	EXPECT_LE(1, ntimer);

	e = nth(&self->log, "acquire", 0);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(1, field(e, "count"));
	e = nth(&self->log, "grant", 0);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(1, field(e, "count"));
	EXPECT_EQ(0, field(e, "waited_ns"));
	e = nth(&self->log, "timeout", 0);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(1, field(e, "count"));
	EXPECT_LT(0, field(e, "waited_ns"));
	e = nth(&self->log, "grant", 1);
	ASSERT_NE(NULL, e);
	EXPECT_LT(0, field(e, "waited_ns"));
	e = nth(&self->log, "reconfigure", 0);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(1, field(e, "rate"));
	EXPECT_EQ(10 * NS_PER_SEC, field(e, "period_ns"));
	e = nth(&self->log, "interrupt", 0);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(1, field(e, "count"));
	e = nth(&self->log, "reconfigure", 1);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(1, field(e, "unlimited"));
	EXPECT_EQ(2, field(e, "concurrency"));
	e = nth(&self->log, "release", 0);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(1, field(e, "count"));
	EXPECT_EQ(0, field(e, "held"));
}

TEST_F(trace, disabled_events_record_nothing)
{
	struct rl_acquire a;
	int fd;

	ASSERT_EQ(0, tracefs_write("events/ratelimit/enable", "0"));
	fd = ks_open_att(self->name, RL_ATTACH_CREATE, 0600, 10, NS_PER_SEC, 1);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 1, RL_DEADLINE_NONE, 0, &a));
	close(fd);
	EXPECT_EQ(0, read_events(&self->log, self->name));
}

/* Timer events of limiter @name in the buffer, up to EVENTS_MAX. */
static int timer_events(struct events *log, const char *name)
{
	int i, n = 0;

	if (read_events(log, name) < 0)
		return -1;
	for (i = 0; i < log->nev; i++)
		n += !strcmp(log->ev[i].name, "timer");
	return n;
}

/*
 * A child in a tree whose fd's request waits for its cap, while the
 * parent, paused and empty, serves a request of its own first. The
 * child's timer fires when the cap lets the request go on: it must put
 * the request back in line and stop. It used to look only from the
 * root, which stopped at the parent's own request, and to start itself
 * again for the cap's time, now past: a storm of timer interrupts for
 * as long as the parent's request waited.
 */
TEST_F(trace, tree_capped_child_timer_no_storm)
{
	struct waiter wc = { 0 }, wp = { 0 };
	char parent[RL_NAME_MAX + 4];
	struct rl_acquire a;
	struct rl_parent rp;
	int p, c, n;

	snprintf(parent, sizeof(parent), "%s-p", self->name);
	p = ks_open_att(parent, RL_ATTACH_CREATE, 0600, 1000, NS_PER_SEC, 10);
	c = ks_open_att(self->name, RL_ATTACH_CREATE, 0600, 1000, NS_PER_SEC,
			10);
	ASSERT_LE(0, p);
	ASSERT_LE(0, c);
	memset(&rp, 0, sizeof(rp));
	rp.name_ptr = (__u64)(uintptr_t)parent;
	rp.weight = 1;
	ASSERT_EQ(0, ioctl(c, RL_IOC_SET_PARENT, &rp));
	/* The child's fd may take 4 tokens a second: now none for 250 ms. */
	ASSERT_EQ(0, ks_client(c, RL_PRIO_MID, 1, 4));
	ASSERT_EQ(0, ks_acq(c, 4, 0, RL_ACQUIRE_NONBLOCK, &a));
	/*
	 * The parent: paused, then emptied of what it refilled before the
	 * pause (a slow kernel spends milliseconds between two calls).
	 */
	ASSERT_EQ(0, ks_set(p, 0, NS_PER_SEC, 10, 0));
	for (n = 0; n <= 10; n++)
		if (ks_acq(p, 1, 0, RL_ACQUIRE_NONBLOCK, &a))
			break;
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_LE(6, n);
	ASSERT_EQ(0, trace_clear());
	/* The child's request waits for the cap, then for the parent. */
	ASSERT_EQ(0, waiter_start(&wc, c, 1, now_ns() + 1500 * NS_PER_MS, 0));
	ASSERT_EQ(0, ks_wait_waiters(c, 1, 5000));
	ASSERT_EQ(0, waiter_start(&wp, p, 1, now_ns() + 1000 * NS_PER_MS, 0));
	ASSERT_EQ(0, waiter_join(&wp, 10000));
	ASSERT_EQ(0, waiter_join(&wc, 10000));
	EXPECT_EQ(-1, wp.ret);
	EXPECT_EQ(ETIMEDOUT, wp.err);
	EXPECT_EQ(-1, wc.ret);
	EXPECT_EQ(ETIMEDOUT, wc.err);
	n = timer_events(&self->log, self->name);
	TH_LOG("%d timer events of the child (%d at most counted)", n,
	       EVENTS_MAX);
	/* Once for the cap; a storm was thousands. */
	EXPECT_GE(4, n);
	close(c);
	close(p);
}

TEST_HARNESS_MAIN
