// SPDX-License-Identifier: GPL-2.0-only
/*
 * many.c - section many: 1000, 10000, 100000 named limiters. Cost per
 * limiter of creating, finding (attach by name) and unlinking one, the
 * memory of an idle named limiter with its sysfs directory and of an idle
 * client (MemFree and Slab deltas of /proc/meminfo), and the limiter
 * timer's expirations while they idle (the ratelimit:ratelimit_timer
 * tracepoint). max_named and max_named_per_user are raised for the run.
 * Then where the memory of an idle named limiter goes, slab cache by slab
 * cache (/proc/slabinfo; boot with slab_nomerge to see each cache under
 * its own name), 1000 and 100 000 of them owned by root and by another
 * user (uid 1000).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "bench.h"
#include "sysfile.h"

#define MANY_PARAMS	"/sys/module/ratelimit/parameters/"
#define MANY_CLIENTS	10000

static void many_name(char *buf, size_t len, uint64_t i)
{
	snprintf(buf, len, "rlbench-many-%llu", (unsigned long long)i);
}

static void put_param(const char *name, uint64_t v)
{
	char path[128], buf[32];
	int fd;

	snprintf(path, sizeof(path), MANY_PARAMS "%s", name);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	fd = open(path, O_WRONLY);
	if (fd < 0 || write(fd, buf, strlen(buf)) < 0)
		note("many", "%s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/*
 * Expirations of the limiters' timers over @dur, or -1 without the
 * tracepoint (enabled once by trace.c; the window is tracing_on's).
 */
static long timer_events(uint64_t dur)
{
	char line[512];
	long n = 0;
	FILE *f;

	if (!trace_has(TRACE_RL_TIMER))
		return -1;
	trace_begin();
	sleep_ns(dur);
	trace_end();
	f = trace_open();
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += line[0] != '#' && strstr(line, "ratelimit_timer:");
	fclose(f);
	trace_clear();
	return n;
}

struct many_cost {
	double create, lookup, unlink;	/* ns per limiter, median chunk */
	double mem, slab;		/* bytes per limiter */
};

#define MANY_CHUNKS	10

enum many_op { M_CREATE, M_LOOKUP, M_UNLINK };

/* Operation @op on limiter @i of @made: 0, or -errno when it failed. */
static int many_op(enum many_op op, uint64_t i, uint64_t made)
{
	struct rl_config cfg = { .rate = 100, .period_ns = NSEC_PER_SEC };
	char name[RL_NAME_MAX];
	int fd;

	many_name(name, sizeof(name), op == M_LOOKUP ? (i * 7919) % made : i);
	switch (op) {
	case M_CREATE:
		fd = rl_open_named(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL |
				   RL_ATTACH_PERSIST, 0600, &cfg);
		break;
	case M_LOOKUP:
		fd = rl_open_named(name, 0, 0, NULL);
		break;
	default:
		return rl_unlink(-1, name);
	}
	if (fd < 0)
		return fd;
	rl_close(fd);
	return 0;
}

/*
 * @n operations @op in MANY_CHUNKS chunks: the median chunk's ns per
 * operation (a host that preempts the guest spoils a chunk, not the
 * figure). *@done counts the operations that succeeded; creation stops at
 * the first failure.
 */
static double many_timed(enum many_op op, uint64_t n, uint64_t made,
			 uint64_t *done)
{
	uint64_t per = n / MANY_CHUNKS, t0, i, k;
	double ns[MANY_CHUNKS];
	int ret;

	*done = 0;
	for (k = 0; k < MANY_CHUNKS; k++) {
		t0 = rl_now_ns();
		for (i = k * per; i < (k + 1) * per; i++) {
			ret = many_op(op, i, made);
			if (ret && op == M_CREATE) {
				note("many", "limiter %llu: %s",
				     (unsigned long long)i, strerror(-ret));
				return NAN;
			}
			*done += !ret;
		}
		ns[k] = (double)(rl_now_ns() - t0) / per;
	}
	for (i = 1; i < MANY_CHUNKS; i++)	/* insertion sort */
		for (k = i; k && ns[k - 1] > ns[k]; k--) {
			double x = ns[k];

			ns[k] = ns[k - 1];
			ns[k - 1] = x;
		}
	return ns[MANY_CHUNKS / 2];
}

#define MANY_SLABS	512

/* /proc/slabinfo: the bytes of the objects in use, by cache. */
struct many_slabinfo {
	int n;
	char name[MANY_SLABS][32];
	uint64_t objsize[MANY_SLABS];
	uint64_t active[MANY_SLABS];
};

static void slabinfo_read(struct many_slabinfo *si)
{
	unsigned long long act, num, size;
	char line[512];
	FILE *f = fopen("/proc/slabinfo", "r");

	si->n = 0;
	if (!f)
		return;
	while (si->n < MANY_SLABS && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%31s %llu %llu %llu", si->name[si->n], &act,
			   &num, &size) != 4)
			continue;
		si->active[si->n] = act;
		si->objsize[si->n] = size;
		si->n++;
	}
	fclose(f);
}

/* Make @n persistent limiters as @uid in a child: how many it made. */
static uint64_t many_make_as(uint64_t n, uid_t uid)
{
	struct rl_config cfg = { .rate = 100, .period_ns = NSEC_PER_SEC };
	uint64_t *made = shared_alloc(sizeof(*made)), ret;
	char name[RL_NAME_MAX];
	pid_t pid = fork();
	int fd;

	if (!pid) {
		if (uid && setuid(uid))
			_exit(1);
		for (*made = 0; *made < n; ++*made) {
			many_name(name, sizeof(name), *made);
			fd = rl_open_named(name, RL_ATTACH_CREATE |
					   RL_ATTACH_EXCL | RL_ATTACH_PERSIST,
					   0600, &cfg);
			if (fd < 0)
				_exit(1);
			rl_close(fd);
		}
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	ret = pid > 0 ? *made : 0;
	munmap(made, sizeof(*made));
	return ret;
}

/*
 * The slab caches that @n idle named limiters owned by @uid grow, bytes
 * of objects in use per limiter, as a row each, and their sum.
 */
static void many_slabs(uint64_t n, uid_t uid)
{
	struct many_slabinfo *a = xcalloc(2, sizeof(*a));
	double per, sum = 0;
	uint64_t made, i;
	char name[128];
	int k;

	sleep_ns(NSEC_PER_SEC);		/* RCU frees of the runs before */
	slabinfo_read(&a[0]);
	made = many_make_as(n, uid);
	sleep_ns(NSEC_PER_SEC);		/* the name table's deferred resize */
	slabinfo_read(&a[1]);
	for (k = 0; made && k < a[0].n && k < a[1].n; k++) {
		if (strcmp(a[0].name[k], a[1].name[k]) ||
		    a[1].active[k] <= a[0].active[k])
			continue;
		per = (double)(a[1].active[k] - a[0].active[k]) *
		      a[1].objsize[k] / made;
		if (per < 4)
			continue;
		sum += per;
		snprintf(name, sizeof(name), "%s (%llu B each) per limiter, uid %u",
			 a[1].name[k], (unsigned long long)a[1].objsize[k],
			 (unsigned int)uid);
		row("many", name, per, "B", NULL, 0, NULL, V_INFO);
	}
	snprintf(name, sizeof(name),
		 "slab objects per idle named limiter, uid %u, %llu of them",
		 (unsigned int)uid, (unsigned long long)made);
	row("many", name, made ? sum : NAN, "B", NULL, 0, "<= 2048",
	    made ? at_most(sum, 2048) : V_INFO);
	for (i = 0; i < made; i++)
		many_op(M_UNLINK, i, made);
	free(a);
}

/* Make @n limiters, find some, measure, unlink them all. */
static uint64_t many_size(uint64_t n, struct many_cost *c)
{
	uint64_t made, found, gone, free0, slab0;
	char name[96];
	long ev;

	n -= n % MANY_CHUNKS;
	free0 = mem_field("MemFree");
	slab0 = mem_field("Slab");
	c->create = many_timed(M_CREATE, n, n, &made);
	c->mem = made ? ((double)free0 - mem_field("MemFree")) / made : NAN;
	c->slab = made ? ((double)mem_field("Slab") - slab0) / made : NAN;
	c->lookup = made == n ? many_timed(M_LOOKUP, n < 10000 ? n : 10000,
					   made, &found) : NAN;
	ev = timer_events(2 * NSEC_PER_SEC);
	snprintf(name, sizeof(name), "timer expirations in 2 s, %llu idle",
		 (unsigned long long)made);
	if (ev >= 0)
		row("many", name, ev, "", NULL, 0, "== 0",
		    ev == 0 ? V_MET : V_MISSED);
	c->unlink = many_timed(M_UNLINK, n, made, &gone);
	return made;
}

/* Memory of @n idle clients of one named limiter, bytes each. */
static void many_clients(int n)
{
	struct rl_config cfg = { .rate = 100, .period_ns = NSEC_PER_SEC };
	uint64_t free0, slab0;
	double mem, slab;
	int *fd, i, got = 0;

	fd = xcalloc(n, sizeof(int));
	rl_unlink(-1, "rlbench-many-clients");
	free0 = mem_field("MemFree");
	slab0 = mem_field("Slab");
	for (i = 0; i < n; i++) {
		fd[i] = rl_open_named("rlbench-many-clients", RL_ATTACH_CREATE,
				      0600, &cfg);
		got += fd[i] >= 0;
	}
	mem = ((double)free0 - mem_field("MemFree")) / got;
	slab = ((double)mem_field("Slab") - slab0) / got;
	for (i = 0; i < n; i++)
		if (fd[i] >= 0)
			rl_close(fd[i]);
	free(fd);
	row("many", "memory per idle client (MemFree delta)", mem, "B", NULL,
	    0, "<= 512", at_most(mem, 512));
	row("many", "slab per idle client (Slab delta)", slab, "B", NULL, 0,
	    NULL, V_INFO);
}

void bench_many(void)
{
	static const uint64_t sizes[] = { 1000, 10000, 100000 };
	struct many_cost c, base = { 0 };
	char old[2][32] = { "", "" }, name[96];
	uint64_t made;
	unsigned int i;

	printf("many: N persistent named limiters made, %d of them found by\n",
	       10000);
	printf("  name (attach + close), idle 2 s (timer tracepoint), unlinked\n");
	sysfile_read(MANY_PARAMS "max_named", old[0], sizeof(old[0]));
	sysfile_read(MANY_PARAMS "max_named_per_user", old[1], sizeof(old[1]));
	put_param("max_named", 200000);
	put_param("max_named_per_user", 200000);
	raise_nofile(MANY_CLIENTS);
	/* Warm up (the emulator translates the paths' code once). */
	many_size(100, &c);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		/* -s 0.1: 100 to 10 000, for a driver with list walks. */
		made = many_size(scaled((double)sizes[i], 100), &c);
		if (!i)
			base = c;
		printf("many: %llu made: create %.0f ns, lookup %.0f ns, unlink %.0f ns each\n",
		       (unsigned long long)made, c.create, c.lookup, c.unlink);
		snprintf(name, sizeof(name), "create, per limiter, %llu limiters",
			 (unsigned long long)made);
		row("many", name, c.create, "ns", "same, first size", base.create,
		    "<= 2x", at_most(c.create / base.create, 2));
		snprintf(name, sizeof(name), "lookup (attach), %llu limiters",
			 (unsigned long long)made);
		row("many", name, c.lookup, "ns", "same, first size", base.lookup,
		    "<= 2x", at_most(c.lookup / base.lookup, 2));
		snprintf(name, sizeof(name), "unlink, per limiter, %llu limiters",
			 (unsigned long long)made);
		row("many", name, c.unlink, "ns", "same, first size", base.unlink,
		    NULL, V_INFO);
		snprintf(name, sizeof(name), "memory per idle named limiter, %llu",
			 (unsigned long long)made);
		row("many", name, c.mem, "B", NULL, 0, "<= 2048",
		    at_most(c.mem, 2048));
		snprintf(name, sizeof(name), "slab per idle named limiter, %llu",
			 (unsigned long long)made);
		row("many", name, c.slab, "B", NULL, 0, NULL, V_INFO);
	}
	many_clients(MANY_CLIENTS);
	for (i = 0; i < 2; i++) {
		many_slabs(scaled(i ? 100000 : 1000, 100), 0);
		many_slabs(scaled(i ? 100000 : 1000, 100), 1000);
	}
	old[0][strcspn(old[0], "\n")] = '\0';
	old[1][strcspn(old[1], "\n")] = '\0';
	if (old[0][0])
		put_param("max_named", strtoull(old[0], NULL, 10));
	if (old[1][0])
		put_param("max_named_per_user", strtoull(old[1], NULL, 10));
}
