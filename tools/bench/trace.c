// SPDX-License-Identifier: GPL-2.0-only
/*
 * trace.c - the tracepoints that sections idle, many and timer count and
 * time timer expirations with: timer:hrtimer_expire_entry and _exit, and
 * ratelimit:ratelimit_timer.
 *
 * They are enabled once, before the first section runs, and never
 * disabled: a section opens and closes its window with tracing_on, which
 * starts and stops the ring buffer and changes no code. Enabling or
 * disabling an event patches the kernel's text live (text_poke_bp: an
 * int3 on every call site, then an IPI to every CPU), and under TCG a
 * disable once hung the guest for good: the writer waited in the kernel's
 * smp_call_function_many_cond for a CPU that spun in exc_int3 at
 * __schedule. __schedule was patched because the first enabled event
 * registers a probe on sched_switch to record task names and the last
 * disabled one removes it: record-cmd is turned off before any event is
 * enabled, so that only the timers' own call sites are ever patched, once.
 * With tracing_on at 0 an enabled event costs a call that finds the ring
 * buffer off.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mount.h>

#include "bench.h"

#define TRACE_DIR	"/sys/kernel/tracing"
#define TRACE_DIR_OLD	"/sys/kernel/debug/tracing"

static const char *const trace_events[NTRACE] = {
	[TRACE_EXPIRE_ENTRY] = "timer/hrtimer_expire_entry",
	[TRACE_EXPIRE_EXIT] = "timer/hrtimer_expire_exit",
	[TRACE_RL_TIMER] = "ratelimit/ratelimit_timer",
};

static const char *trace_dir;
static bool trace_enabled[NTRACE];

/* Write @val to @file of tracefs: 0 or -errno. */
static int trace_write(const char *file, const char *val)
{
	char path[160];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", trace_dir, file);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -EIO;
}

/**
 * trace_setup() - enable the events, once, with the ring buffer off
 *
 * Called by main() before the first section when one that traces is to
 * run. An event that cannot be enabled is noted; trace_has() says which
 * are on.
 */
void trace_setup(void)
{
	char path[160];
	int i;

	mount("nodev", TRACE_DIR, "tracefs", 0, NULL);	/* if not yet */
	trace_dir = TRACE_DIR;
	if (access(TRACE_DIR "/tracing_on", W_OK))
		trace_dir = TRACE_DIR_OLD;
	if (trace_write("tracing_on", "0")) {
		note("trace", "no tracefs: timer expirations are not traced");
		trace_dir = NULL;
		return;
	}
	trace_write("options/record-cmd", "0");
	trace_write("buffer_size_kb", "8192");
	trace_write("trace", "");
	for (i = 0; i < NTRACE; i++) {
		snprintf(path, sizeof(path), "events/%s/enable", trace_events[i]);
		trace_enabled[i] = !trace_write(path, "1");
		if (!trace_enabled[i])
			note("trace", "cannot enable %s", trace_events[i]);
	}
}

/* Is event @ev enabled (trace_setup())? */
bool trace_has(enum trace_event ev)
{
	return trace_dir && trace_enabled[ev];
}

/* Start a window: the buffer emptied, then recording. */
void trace_begin(void)
{
	if (!trace_dir)
		return;
	trace_write("trace", "");
	trace_write("tracing_on", "1");
}

/* End a window: recording stops; the events stay enabled. */
void trace_end(void)
{
	if (trace_dir)
		trace_write("tracing_on", "0");
}

/* The trace file, to read a window's events from, or NULL. */
FILE *trace_open(void)
{
	char path[160];

	if (!trace_dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/trace", trace_dir);
	return fopen(path, "r");
}

/* Empty the buffer after a window was read. */
void trace_clear(void)
{
	if (trace_dir)
		trace_write("trace", "");
}
