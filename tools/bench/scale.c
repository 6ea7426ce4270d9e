// SPDX-License-Identifier: GPL-2.0-only
/*
 * scale.c - sections scale and pollers: many clients of one limiter.
 *
 * scale: 10, 100, 1000, 10000 threads, then as many processes, each with
 * its own fd on one named limiter, all backlogged at a fixed rate: guest
 * CPU per grant (from /proc/stat, so that the timer's interrupt work
 * counts), wake latency (return - the grant's ready_ns), Jain's index of
 * the clients' grants and the guest memory each client took (MemFree).
 * pollers: 10, 100, 1000 threads polling their own fd of one limiter,
 * taking a token with a nonblocking acquire when woken: wake-ups per token.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <math.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "bench.h"
#include "sysfile.h"

#define SC_RATE		2000ULL		/* tokens/s of the scale runs */
#define SC_GRANTS_EACH	4		/* grants per client in the window */
#define SC_STACK	(64 * 1024)
/* MemFree below which no more clients start, bytes. */
#define SC_MEM_FLOOR	(128ULL << 20)
#define SC_LAT_MAX	200000

struct sc_client {
	int fd;
	uint64_t got;		/* grants in the window */
};

/* What the threads of one run share; go: 0 wait, 1 run, 2 count, 3 stop. */
struct sc_run {
	const char *name;
	int n;
	atomic_int ready;
	atomic_int go;
	atomic_uint_fast64_t nlat;
	uint64_t *lat;
	uint64_t end;
	bool poll;
	bool procs;		/* a process per client, else a thread */
	atomic_uint_fast64_t wakes;
	atomic_uint_fast64_t tokens;
	pthread_mutex_t lock;	/* where the clients wait for the start */
	pthread_cond_t cond;
};

struct sc_slot {
	struct sc_run *r;
	struct sc_client c;
	pthread_t th;
	pid_t tid;
	pid_t pid;		/* the client's process, in procs runs */
};

/* @r (in memory shared with the children when r->procs) ready to run. */
static void sc_init(struct sc_run *r)
{
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&r->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_cond_init(&r->cond, &ca);
	pthread_condattr_destroy(&ca);
}

/* Let @n more fds be open. */
void raise_nofile(uint64_t n)
{
	struct rlimit rl = { n + 256, n + 256 };

	if (setrlimit(RLIMIT_NOFILE, &rl))
		note("scale", "setrlimit(NOFILE, %llu): %s",
		     (unsigned long long)n + 256, strerror(errno));
}

static void sc_acquire_loop(struct sc_run *r, struct sc_client *c)
{
	struct rl_acquire req;
	uint64_t t, i;

	while (atomic_load(&r->go) < 3) {
		memset(&req, 0, sizeof(req));
		req.count = 1;
		req.deadline_ns = r->end;
		if (rl_acquire_ex(c->fd, &req))
			break;
		t = rl_now_ns();
		if (atomic_load(&r->go) != 2)
			continue;
		c->got++;
		i = atomic_fetch_add(&r->nlat, 1);
		if (i < SC_LAT_MAX)
			r->lat[i] = t > req.ready_ns ? t - req.ready_ns : 0;
	}
}

static void sc_poll_loop(struct sc_run *r, struct sc_client *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };

	/* No timeout: its wake-ups would count; the end wakes them all. */
	while (atomic_load(&r->go) < 3 && rl_now_ns() < r->end) {
		if (poll(&p, 1, -1) != 1)
			continue;
		if (atomic_load(&r->go) == 2)
			atomic_fetch_add(&r->wakes, 1);
		if (!rl_try_acquire(c->fd, 1, NULL) && atomic_load(&r->go) == 2)
			atomic_fetch_add(&r->tokens, 1);
	}
}

static void *sc_thread(void *arg)
{
	struct sc_slot *s = arg;

	s->tid = (pid_t)syscall(SYS_gettid);
	pthread_mutex_lock(&s->r->lock);
	atomic_fetch_add(&s->r->ready, 1);
	while (!atomic_load(&s->r->go))
		pthread_cond_wait(&s->r->cond, &s->r->lock);
	pthread_mutex_unlock(&s->r->lock);
	if (s->r->poll)
		sc_poll_loop(s->r, &s->c);
	else
		sc_acquire_loop(s->r, &s->c);
	return NULL;
}

/* Start client @s in a process of its own, with an fd of its own. */
static int sc_fork(struct sc_slot *s)
{
	s->pid = fork();
	if (s->pid < 0)
		note("scale", "fork: %s", strerror(errno));
	if (s->pid)
		return s->pid < 0 ? -1 : 0;
	s->c.fd = rl_open_named(s->r->name, 0, 0, NULL);
	if (s->c.fd < 0)
		_exit(1);
	sc_thread(s);
	_exit(0);
}

/*
 * Start up to r->n clients with an fd each on r->name: how many. Threads
 * run on stacks of @stacks (r->n of SC_STACK bytes, one mapping): glibc
 * would keep up to 40 MiB of stacks it made, in two mappings each, after
 * the threads end, and every process forked later would copy those
 * thousand mappings (about 400 KiB a process).
 */
static int sc_start(struct sc_run *r, struct sc_slot *slot, char *stacks)
{
	pthread_attr_t attr;
	int i;

	pthread_attr_init(&attr);
	for (i = 0; i < r->n; i++) {
		/*
		 * Stop short of the OOM killer: the note says how many
		 * started. A process takes about 600 KiB (6.12): look
		 * before each, a thread's stack is in @stacks already.
		 */
		if ((r->procs || i % 256 == 0) && mem_field("MemFree") < SC_MEM_FLOOR)
			break;
		slot[i].r = r;
		if (r->procs) {
			if (sc_fork(&slot[i]))
				break;
			continue;
		}
		slot[i].c.fd = rl_open_named(r->name, 0, 0, NULL);
		if (slot[i].c.fd < 0)
			break;
		pthread_attr_setstack(&attr, stacks + (size_t)i * SC_STACK,
				      SC_STACK);
		if (pthread_create(&slot[i].th, &attr, sc_thread, &slot[i])) {
			rl_close(slot[i].c.fd);
			break;
		}
	}
	pthread_attr_destroy(&attr);
	while (atomic_load(&r->ready) < i)
		usleep(10000);
	return i;
}

struct sc_window {
	uint64_t busy;		/* guest CPU ns */
	uint64_t wall;		/* ns */
	uint64_t granted;	/* tokens */
	uint64_t sleeps;	/* the threads' voluntary context switches */
	uint64_t mem;		/* MemFree taken by starting the clients */
	uint64_t start;		/* ns to start them */
};

/* Voluntary context switches of the @n threads of @slot, for pollers. */
static uint64_t sc_nvcsw(const struct sc_slot *slot, int n)
{
	char path[64], line[128];
	unsigned long long v;
	uint64_t sum = 0;
	FILE *f;
	int i;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/proc/self/task/%d/status",
			 slot[i].tid);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1)
				sum += v;
		fclose(f);
	}
	return sum;
}

/*
 * Run @r: the threads start, settle for @settle, then are measured for
 * @dur; the limiter of @fd0 is made unlimited to let them go.
 */
static int sc_run(struct sc_run *r, struct sc_slot *slot, int fd0,
		  uint64_t settle, uint64_t dur, struct sc_window *w)
{
	struct rl_config cfg = { .period_ns = NSEC_PER_SEC, .burst = 1,
				 .flags = RL_CONFIG_UNLIMITED };
	size_t stacks_len = r->procs ? 0 : (size_t)r->n * SC_STACK;
	char *stacks = NULL;
	struct rl_stats st0, st1;
	uint64_t b0, t0;
	int i, started;

	r->end = rl_now_ns() + settle + dur + 60 * NSEC_PER_SEC;
	sc_init(r);
	if (stacks_len)
		stacks = mmap(NULL, stacks_len, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stacks == MAP_FAILED)
		die("mmap", errno);
	w->mem = mem_field("MemFree");
	w->start = rl_now_ns();
	started = sc_start(r, slot, stacks);
	w->start = rl_now_ns() - w->start;
	w->mem -= mem_field("MemFree");
	pthread_mutex_lock(&r->lock);
	atomic_store(&r->go, 1);
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	sleep_ns(settle);
	w->sleeps = r->poll ? sc_nvcsw(slot, started) : 0;
	rl_get_stats(fd0, &st0);
	b0 = sys_busy_ns();
	t0 = rl_now_ns();
	atomic_store(&r->go, 2);
	sleep_ns(dur);
	atomic_store(&r->go, 3);
	w->busy = sys_busy_ns() - b0;
	w->wall = rl_now_ns() - t0;
	w->sleeps = r->poll ? sc_nvcsw(slot, started) - w->sleeps : 0;
	rl_get_stats(fd0, &st1);
	w->granted = st1.granted - st0.granted;
	rl_set_config(fd0, &cfg);
	for (i = 0; i < started; i++) {
		if (r->procs) {
			waitpid(slot[i].pid, NULL, 0);
			continue;
		}
		pthread_join(slot[i].th, NULL);
		rl_close(slot[i].c.fd);
	}
	if (stacks)
		munmap(stacks, stacks_len);
	return started;
}

static int sc_named(const char *name, uint64_t rate)
{
	struct rl_config cfg = { .rate = rate, .period_ns = NSEC_PER_SEC,
				 .burst = 1 };

	rl_unlink(-1, name);
	return rl_open_named(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
			     &cfg);
}

/* One size of the scale section: per-grant CPU, latency, Jain. */
static void scale_size(int n, bool procs, double *cost, double *base)
{
	const char *what = procs ? "processes" : "clients";
	struct sc_run *r = shared_alloc(sizeof(*r));
	uint64_t dur, settle, *got;
	struct sc_window w;
	struct sc_slot *slot;
	double lat50, lat99, j;
	char name[96], base_name[32];
	int fd0, started, i;

	dur = scaled((double)SC_GRANTS_EACH * n * NSEC_PER_SEC / SC_RATE,
		     0);
	dur = dur < 2 * NSEC_PER_SEC ? 2 * NSEC_PER_SEC : dur;
	settle = NSEC_PER_SEC + (uint64_t)n * NSEC_PER_SEC / SC_RATE;
	*r = (struct sc_run){ .name = "rlbench-scale", .n = n, .procs = procs };
	fd0 = sc_named(r->name, SC_RATE);
	if (fd0 < 0)
		die(r->name, fd0);
	slot = shared_alloc(n * sizeof(*slot));
	r->lat = shared_alloc(SC_LAT_MAX * sizeof(uint64_t));
	started = sc_run(r, slot, fd0, settle, dur, &w);
	rl_close(fd0);
	got = xcalloc(n, sizeof(uint64_t));
	for (i = 0; i < started; i++)
		got[i] = slot[i].c.got;
	j = jain(got, started);
	i = atomic_load(&r->nlat) < SC_LAT_MAX ? (int)atomic_load(&r->nlat) :
						SC_LAT_MAX;
	qsort(r->lat, i, sizeof(uint64_t), tool_cmp_u64);
	lat50 = pct(r->lat, i, 50);
	lat99 = pct(r->lat, i, 99);
	*cost = w.granted ? (double)w.busy / w.granted : NAN;
	if (!*base)
		*base = *cost;
	printf("scale: %d of %d %s (started in %.1f s, %.0f KiB each),",
	       started, n, procs ? "processes" : "threads", w.start / 1e9,
	       started ? w.mem / 1024.0 / started : 0);
	printf(" %llu grants in %.1f s (%.0f/s), busy %.2f s\n",
	       (unsigned long long)w.granted, w.wall / 1e9,
	       w.granted * 1e9 / w.wall, w.busy / 1e9);
	snprintf(name, sizeof(name), "CPU per grant, %d backlogged %s", n, what);
	snprintf(base_name, sizeof(base_name), "same, 10 %s", what);
	row("scale", name, *cost, "ns", base_name, *base, "<= 2x",
	    at_most(*cost / *base, 2.0));
	snprintf(name, sizeof(name), "wake latency p50, %d %s", n, what);
	row("scale", name, lat50, "ns", NULL, 0, NULL, V_INFO);
	snprintf(name, sizeof(name), "wake latency p99, %d %s", n, what);
	row("scale", name, lat99, "ns", NULL, 0, NULL, V_INFO);
	snprintf(name, sizeof(name), "Jain's index, %d %s (%d grants each)",
		 n, what, SC_GRANTS_EACH);
	row("scale", name, j, "", NULL, 0, ">= 0.99", at_least(j, 0.99));
	snprintf(name, sizeof(name), "memory per client (MemFree), %d %s",
		 n, what);
	row("scale", name, started ? (double)w.mem / started : NAN, "B",
	    NULL, 0, NULL, V_INFO);
	if (started < n)
		note("scale", "only %d of %d %s started", started, n, what);
	free(got);
	munmap(r->lat, SC_LAT_MAX * sizeof(uint64_t));
	munmap(slot, n * sizeof(*slot));
	munmap(r, sizeof(*r));
	rl_unlink(-1, "rlbench-scale");
}

/* The guest's limits on tasks, which 10 000 clients must stay under. */
static void sc_limits(void)
{
	static const char *const files[] = {
		"/proc/sys/kernel/threads-max", "/proc/sys/kernel/pid_max",
		"/proc/sys/fs/file-max",
	};
	struct rlimit rl;
	char buf[32];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(files); i++)
		if (sysfile_read(files[i], buf, sizeof(buf)) > 0)
			printf("scale: %s %s", files[i], buf);
	if (!getrlimit(RLIMIT_NPROC, &rl))
		printf("scale: RLIMIT_NPROC %llu (root is exempt)\n",
		       (unsigned long long)rl.rlim_cur);
}

void bench_scale(void)
{
	static const int sizes[] = { 10, 100, 1000, 10000 };
	double cost, base = 0;
	unsigned int i;

	printf("scale: N threads, one fd each on one named limiter at %llu/s,\n",
	       (unsigned long long)SC_RATE);
	printf("  burst 1, all backlogged; guest CPU (/proc/stat) per grant,\n");
	printf("  wake latency = return - ready_ns, Jain's index of grants;\n");
	printf("  then as many processes; MemFree %llu MiB\n",
	       (unsigned long long)(mem_field("MemFree") >> 20));
	sc_limits();
	raise_nofile(10000);
	for (i = 0; i < ARRAY_SIZE(sizes); i++)
		scale_size(sizes[i], false, &cost, &base);
	base = 0;
	for (i = 0; i < ARRAY_SIZE(sizes); i++)
		scale_size(sizes[i], true, &cost, &base);
}

/* One size of the pollers section: wake-ups per token. */
static void pollers_size(int n)
{
	struct sc_run r = { .name = "rlbench-pollers", .n = n, .poll = true };
	uint64_t dur = scaled(3 * NSEC_PER_SEC, NSEC_PER_SEC);
	struct sc_slot *slot;
	struct sc_window w;
	double wpt, cpt, kpt;
	char name[96];
	int fd0;

	fd0 = sc_named(r.name, 100);
	if (fd0 < 0)
		die(r.name, fd0);
	drain(fd0);
	slot = xcalloc(n, sizeof(*slot));
	sc_run(&r, slot, fd0, NSEC_PER_SEC, dur, &w);
	rl_close(fd0);
	wpt = atomic_load(&r.tokens) ?
	      (double)atomic_load(&r.wakes) / atomic_load(&r.tokens) : NAN;
	cpt = atomic_load(&r.tokens) ?
	      (double)w.busy / atomic_load(&r.tokens) : NAN;
	kpt = atomic_load(&r.tokens) ?
	      (double)w.sleeps / atomic_load(&r.tokens) : NAN;
	printf("pollers: %d, %llu tokens, %llu poll() returns, %llu sleeps\n",
	       n, (unsigned long long)atomic_load(&r.tokens),
	       (unsigned long long)atomic_load(&r.wakes),
	       (unsigned long long)w.sleeps);
	snprintf(name, sizeof(name), "poll() returns per token, %d pollers", n);
	row("pollers", name, wpt, "", NULL, 0, NULL, V_INFO);
	/* A woken poller sleeps again: its voluntary switches count wakes. */
	snprintf(name, sizeof(name), "pollers woken per token, %d pollers", n);
	row("pollers", name, kpt, "", NULL, 0, "<= 2 (O(1))", at_most(kpt, 2));
	snprintf(name, sizeof(name), "CPU per token, %d pollers", n);
	row("pollers", name, cpt, "ns", NULL, 0, NULL, V_INFO);
	free(slot);
	rl_unlink(-1, r.name);
}

void bench_pollers(void)
{
	static const int sizes[] = { 10, 100, 1000 };
	unsigned int i;

	printf("pollers: N threads poll() their own fd of one named limiter\n");
	printf("  at 100/s, burst 1; woken, each tries a nonblocking ACQUIRE(1)\n");
	raise_nofile(1000);
	for (i = 0; i < ARRAY_SIZE(sizes); i++)
		pollers_size(sizes[i]);
}
