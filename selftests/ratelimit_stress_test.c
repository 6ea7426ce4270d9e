// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stress test of /dev/ratelimit with invariants: N threads in each of M
 * processes, plus children killed with SIGKILL, work K limiters (named
 * and private, rate limits, concurrency limits, catch-up) with blocking,
 * non-blocking and deadline acquires, signals (with and without
 * SA_RESTART), release and refund, while the limits are changed through
 * ioctl and sysfs and other names are created and unlinked. Then:
 *   - the tokens granted by a rate-limited limiter never exceeded
 *     burst + rate x elapsed (+1, + backlog with catch-up, + refunds,
 *     + chunks that a failed request above the burst held from before a
 *     window and gave back in it), over the whole run and over every
 *     sub-window of several lengths, by the grants counted in shared
 *     memory and by the kernel's stats;
 *   - permits in flight never exceeded the concurrency limit;
 *   - every permit came back and no waiter is left asleep once the
 *     processes are gone (stats through a surviving fd, and sysfs);
 *   - nothing hangs: every join and wait is bounded.
 * The run lasts RL_STRESS_SECS seconds (default 15).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <sys/mman.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"

#define ST_PROCS	3		/* M: worker processes */
#define ST_THREADS	3		/* N: threads per worker */
#define ST_VICTIMS	2		/* children alive to be killed */
#define ST_SECS		15
#define ST_EVENTS	65536		/* grants logged per limiter */
#define ST_REFUNDS	8192
#define ST_FAILS	16
#define ST_QUIET_NS	(8 * NS_PER_SEC)	/* to wake up after the run */
#define ST_GRACE_NS	(30 * NS_PER_SEC)

/* The K limiters. */
enum { L_RATE, L_CONC, L_CATCH, L_SEM, L_NR };

/*
 * Each limiter switches between the values of its sets, in any
 * combination; the bounds use the largest. The period stays 1 s.
 */
struct st_def {
	const char *tag;
	bool named;
	bool persist;
	bool victims;		/* children killed with -9 use it */
	bool unlimited;
	__u64 rate[2];		/* tokens per second */
	__u64 burst[2];
	__u64 conc[2];		/* 0: no concurrency limit */
	__u32 catchup;
	__u64 backlog;
	__u64 max_count;	/* most tokens one plain acquire asks */
};

static const struct st_def st_defs[L_NR] = {
	[L_RATE] = { "rate", true, true, true, false, { 400, 200 },
		     { 20, 10 }, { 0, 0 }, 0, 0, 3 },
	[L_CONC] = { "conc", true, false, true, false, { 1000, 500 },
		     { 8, 4 }, { 3, 2 }, 0, 0, 2 },
	[L_CATCH] = { "catch", false, false, true, false, { 300, 150 },
		      { 10, 10 }, { 0, 0 }, 3000, 30, 3 },
	[L_SEM] = { "sem", false, false, false, true, { 0, 0 }, { 1, 1 },
		    { 3, 2 }, 0, 0, 2 },
};

struct st_event {
	__u64 t0;		/* before the call */
	__u64 t1;		/* after it returned */
	__u64 count;
};

struct st_lim {
	__u64 t_create;
	__u64 nev;
	struct st_event ev[ST_EVENTS];
	__u64 nref;
	struct st_event ref[ST_REFUNDS];
	/* Requests above the burst: they may give back earlier chunks. */
	__u64 nchunked;
	struct st_event chunked[ST_REFUNDS];
	__s64 inflight;
	__s64 max_inflight;
	__u64 over;		/* grants that broke the concurrency limit */
};

struct st_shared {
	__u64 deadline;
	int owner;
	int stop;
	__u64 ops;
	__u64 granted_ops;
	__u64 eintr;
	__u64 timeouts;
	__u64 eagain;
	__u64 reconfigs;
	__u64 victims;
	__u64 signals;
	__u64 churn;
	__u64 reparents;
	__u64 refused;		/* moves of L_RATE under "top": EBUSY */
	int nfails;
	char fails[ST_FAILS][200];
	struct st_lim lim[L_NR];
};

static struct st_shared *sh;
/* Per process: the fds of the private limiters (shared by fork). */
static int st_master[L_NR];

static void st_fail(const char *fmt, ...)
{
	int i = __atomic_fetch_add(&sh->nfails, 1, __ATOMIC_RELAXED);
	va_list ap;

	if (i >= ST_FAILS)
		return;
	va_start(ap, fmt);
	vsnprintf(sh->fails[i], sizeof(sh->fails[i]), fmt, ap);
	va_end(ap);
}

static __u64 rnd(__u64 *s)
{
	__u64 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static __u64 below(__u64 *s, __u64 n)
{
	return n ? rnd(s) % n : 0;
}

static void st_name(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "st%d-%s", sh->owner, tag);
}

static void st_config(struct rl_config *c, int l, __u64 *rng)
{
	const struct st_def *d = &st_defs[l];

	memset(c, 0, sizeof(*c));
	c->period_ns = NS_PER_SEC;
	c->rate = d->rate[below(rng, 2)];
	c->burst = d->burst[below(rng, 2)];
	c->concurrency = d->conc[below(rng, 2)];
	c->flags = d->unlimited ? RL_CONFIG_UNLIMITED : 0;
	c->catchup = d->catchup;
	c->backlog = d->backlog;
}

static __u64 st_max(const __u64 *v)
{
	return v[0] > v[1] ? v[0] : v[1];
}

/* An fd of limiter @l for this thread: a new attach, or the shared one. */
static int st_open(int l)
{
	char name[RL_NAME_MAX];

	if (!st_defs[l].named)
		return dup(st_master[l]);
	st_name(name, sizeof(name), st_defs[l].tag);
	return ks_open_att(name, 0, 0, 1, NS_PER_SEC, 1);
}

static void st_log(struct st_event *log, __u64 *n, __u64 max, __u64 t0,
		   __u64 t1, __u64 count)
{
	__u64 i = __atomic_fetch_add(n, 1, __ATOMIC_RELAXED);

	if (i >= max)
		return;
	log[i].t0 = t0;
	log[i].t1 = t1;
	__atomic_store_n(&log[i].count, count, __ATOMIC_RELEASE);
}

struct st_thread {
	__u64 rng;
	int fds[L_NR];
	bool victim;
	pthread_t th;
	int done;
};

/* Hold @count permits of @l in the books; they are held in the kernel. */
static void st_hold(int l, __u64 count)
{
	struct st_lim *s = &sh->lim[l];
	__s64 v = __atomic_add_fetch(&s->inflight, count, __ATOMIC_SEQ_CST);
	__s64 m = __atomic_load_n(&s->max_inflight, __ATOMIC_RELAXED);
	__u64 cmax = st_max(st_defs[l].conc);

	while (v > m && !__atomic_compare_exchange_n(&s->max_inflight, &m, v,
						     false, __ATOMIC_RELAXED,
						     __ATOMIC_RELAXED))
		;
	if ((__u64)v > cmax && !__atomic_fetch_add(&s->over, 1, __ATOMIC_RELAXED))
		st_fail("%s: %lld permits in flight, concurrency at most %llu",
			st_defs[l].tag, (long long)v, (unsigned long long)cmax);
}

/* One acquire on limiter @l, and what follows a grant. */
static void st_acquire(struct st_thread *t, int l)
{
	const struct st_def *d = &st_defs[l];
	__u64 count = 1 + below(&t->rng, d->max_count), t0, t1;
	__u32 flags = 0, prio = below(&t->rng, 5);
	__u64 deadline = RL_DEADLINE_NONE;
	struct rl_acquire a;
	int ret, err, fd = t->fds[l];

	switch (below(&t->rng, 10)) {
	case 0:
	case 1:
	case 2:
		flags = RL_ACQUIRE_NONBLOCK;
		break;
	case 3:
	case 4:
		deadline = now_ns() + below(&t->rng, 30 * NS_PER_MS);
		break;
	case 5:
		deadline = now_ns() + below(&t->rng, 30 * NS_PER_MS);
		flags = RL_ACQUIRE_PREDICT;
		break;
	case 6:
		/*
		 * More than the burst: served in chunks. Not by victims: a
		 * chunk taken before a SIGKILL goes back to the bucket at a
		 * time they cannot log.
		 */
		if (!d->unlimited && !d->conc[0] && !t->victim) {
			count = st_max(d->burst) + 1 + below(&t->rng, 10);
			deadline = now_ns() + 150 * NS_PER_MS;
		}
		break;
	}
	t0 = now_ns();
	ret = ks_acq_prio(fd, count, deadline, flags, prio, &a);
	err = errno;
	t1 = now_ns();
	__atomic_fetch_add(&sh->ops, 1, __ATOMIC_RELAXED);
	/*
	 * A chunked request that fails (or fails and restarts after
	 * SA_RESTART) puts back the chunks it took, all or nothing: up to
	 * count - 1 tokens at any instant of the call.
	 */
	if (count > d->max_count)	/* more than the smallest burst */
		st_log(sh->lim[l].chunked, &sh->lim[l].nchunked, ST_REFUNDS,
		       t0, t1, count - 1);
	if (ret) {
		switch (err) {
		case EINTR:
			__atomic_fetch_add(&sh->eintr, 1, __ATOMIC_RELAXED);
			return;
		case ETIMEDOUT:
			__atomic_fetch_add(&sh->timeouts, 1, __ATOMIC_RELAXED);
			return;
		case EAGAIN:
			__atomic_fetch_add(&sh->eagain, 1, __ATOMIC_RELAXED);
			return;
		case EINVAL:
			/* More permits than a lowered concurrency allows. */
			if (d->conc[0] && count > d->conc[1])
				return;
		}
		st_fail("%s: acquire %llu flags %u: %s", d->tag,
			(unsigned long long)count, flags, strerror(err));
		return;
	}
	__atomic_fetch_add(&sh->granted_ops, 1, __ATOMIC_RELAXED);
	if (!d->unlimited)
		st_log(sh->lim[l].ev, &sh->lim[l].nev, ST_EVENTS, t0, t1, count);
	if (t->victim)
		return;	/* keeps what it got until killed */
	if (d->conc[0])
		st_hold(l, count);
	if (below(&t->rng, 3) == 0)
		sleep_ms(below(&t->rng, 3));
	if (!d->unlimited && count <= st_max(d->burst) &&
	    below(&t->rng, 10) == 0) {
		__u64 n = 1 + below(&t->rng, count);

		t0 = now_ns();
		if (ks_refund(fd, n))
			st_fail("%s: refund %llu of %llu just acquired: %s",
				d->tag, (unsigned long long)n,
				(unsigned long long)count, strerror(errno));
		else
			st_log(sh->lim[l].ref, &sh->lim[l].nref, ST_REFUNDS,
			       t0, now_ns(), n);
	}
	if (d->conc[0]) {
		__atomic_sub_fetch(&sh->lim[l].inflight, count, __ATOMIC_SEQ_CST);
		if (ks_release(fd, count))
			st_fail("%s: release %llu: %s", d->tag,
				(unsigned long long)count, strerror(errno));
	}
}

/* Stats of @l now: nothing above the limits. */
static void st_peek(struct st_thread *t, int l)
{
	const struct st_def *d = &st_defs[l];
	struct rl_stats s;

	if (ks_stats(t->fds[l], &s)) {
		st_fail("%s: stats: %s", d->tag, strerror(errno));
		return;
	}
	if (d->conc[0] && s.held > st_max(d->conc))
		st_fail("%s: stats.held %llu above the concurrency", d->tag,
			(unsigned long long)s.held);
	if (!d->unlimited && s.available > st_max(d->burst))
		st_fail("%s: stats.available %llu above the burst", d->tag,
			(unsigned long long)s.available);
	if (s.backlog > d->backlog)
		st_fail("%s: stats.backlog %llu above %llu", d->tag,
			(unsigned long long)s.backlog,
			(unsigned long long)d->backlog);
}

/* A tunable of a named limiter through sysfs, within the sets. */
static void st_sysfs_tune(__u64 *rng)
{
	int l = below(rng, 2) ? L_CONC : L_RATE;
	const struct st_def *d = &st_defs[l];
	char name[RL_NAME_MAX], val[32];
	const char *file;
	__u64 v;

	switch (below(rng, 3)) {
	case 0:
		file = "rate";
		v = d->rate[below(rng, 2)];
		break;
	case 1:
		file = "burst";
		v = d->burst[below(rng, 2)];
		break;
	default:
		file = d->conc[0] ? "concurrency" : "rate";
		v = d->conc[0] ? d->conc[below(rng, 2)] : d->rate[0];
	}
	st_name(name, sizeof(name), d->tag);
	snprintf(val, sizeof(val), "%llu", (unsigned long long)v);
	if (sysfs_write(name, file, val))
		st_fail("sysfs %s/%s <- %s: %s", name, file, val,
			strerror(errno));
	__atomic_fetch_add(&sh->reconfigs, 1, __ATOMIC_RELAXED);
}

/* Create, use and unlink a name nobody tracks. */
static void st_churn(struct st_thread *t)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	int fd;

	st_name(name, sizeof(name), "churn");
	fd = ks_open_att(name, RL_ATTACH_CREATE |
			 (below(&t->rng, 2) ? RL_ATTACH_PERSIST : 0), 0600,
			 100, NS_PER_SEC, 5);
	if (fd < 0) {
		st_fail("churn attach: %s", strerror(errno));
		return;
	}
	if (ks_acq(fd, 1, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK, &a) &&
	    errno != EAGAIN)
		st_fail("churn acquire: %s", strerror(errno));
	if (below(&t->rng, 2) && ks_unl(fd, name) && errno != ENOENT)
		st_fail("churn unlink: %s", strerror(errno));
	close(fd);
	__atomic_fetch_add(&sh->churn, 1, __ATOMIC_RELAXED);
}

static void *st_thread_fn(void *arg)
{
	struct st_thread *t = arg;
	int l, r;

	for (l = 0; l < L_NR; l++) {
		t->fds[l] = st_open(l);
		if (t->fds[l] < 0)
			st_fail("%s: open: %s", st_defs[l].tag, strerror(errno));
		else if (below(&t->rng, 3) == 0 &&
			 ks_client(t->fds[l], 1 + below(&t->rng, 4),
				   1 + below(&t->rng, 5), 0))
			st_fail("%s: set client: %s", st_defs[l].tag,
				strerror(errno));
	}
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED) &&
	       now_ns() < sh->deadline) {
		l = below(&t->rng, L_NR);
		if (t->fds[l] < 0)
			continue;
		r = below(&t->rng, 100);
		if (r < 80) {
			st_acquire(t, l);
		} else if (r < 88) {
			st_peek(t, l);
		} else if (r < 92 && st_defs[l].named) {
			/* A new client in place of the old one. */
			close(t->fds[l]);
			t->fds[l] = st_open(l);
			if (t->fds[l] < 0)
				st_fail("%s: reattach: %s", st_defs[l].tag,
					strerror(errno));
		} else if (r < 95) {
			st_sysfs_tune(&t->rng);
		} else if (r < 97) {
			st_churn(t);
		}
	}
	for (l = 0; l < L_NR; l++)
		if (t->fds[l] >= 0)
			close(t->fds[l]);
	__atomic_store_n(&t->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void st_handler(int sig)
{
	(void)sig;
}

/*
 * Join @th before @end; @intr: interrupt it meanwhile (SIGUSR2, no
 * SA_RESTART: EINTR).
 */
static int st_join(pthread_t th, __u64 end, bool intr)
{
	struct timespec ts;

	for (;;) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * NS_PER_MS;
		if (ts.tv_nsec >= (long)NS_PER_SEC) {
			ts.tv_sec++;
			ts.tv_nsec -= NS_PER_SEC;
		}
		if (!pthread_timedjoin_np(th, NULL, &ts))
			return 0;
		if (now_ns() >= end)
			return -1;
		if (intr)
			pthread_kill(th, SIGUSR2);
	}
}

/* Worker @idx: N threads; odd workers restart ioctls after SIGUSR1. */
static int st_worker(int idx, __u64 seed)
{
	struct st_thread th[ST_THREADS];
	struct sigaction sa;
	int i, rc = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = st_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = idx & 1 ? SA_RESTART : 0;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_flags = 0;
	sigaction(SIGUSR2, &sa, NULL);
	memset(th, 0, sizeof(th));
	for (i = 0; i < ST_THREADS; i++) {
		th[i].rng = seed + 7919 * (idx * ST_THREADS + i + 1);
		if (pthread_create(&th[i].th, NULL, st_thread_fn, &th[i])) {
			st_fail("pthread_create failed");
			th[i].done = 2;
		}
	}
	for (i = 0; i < ST_THREADS; i++) {
		if (th[i].done == 2)
			continue;
		/*
		 * Tokens keep coming and permits come back: a sleeper must
		 * wake up by itself. If not, a wake-up was lost.
		 */
		if (!st_join(th[i].th, sh->deadline + ST_QUIET_NS, false))
			continue;
		st_fail("worker %d thread %d still asleep %llu s after the run (lost wake-up?)",
			idx, i, ST_QUIET_NS / NS_PER_SEC);
		if (st_join(th[i].th, sh->deadline + ST_GRACE_NS / 2, true)) {
			st_fail("worker %d thread %d hangs", idx, i);
			rc = 3;
		}
	}
	if (rc)
		_exit(rc);
	return 0;
}

/* A child killed with SIGKILL: it keeps its permits and tokens. */
static void st_victim(__u64 seed)
{
	struct st_thread t;
	int l;

	memset(&t, 0, sizeof(t));
	t.rng = seed;
	t.victim = true;
	for (l = 0; l < L_NR; l++)
		t.fds[l] = st_defs[l].victims ? st_open(l) : -1;
	for (;;) {
		l = below(&t.rng, L_NR);
		if (t.fds[l] >= 0)
			st_acquire(&t, l);
	}
}

/* Parent threads: victims, signals, reconfiguration. */
struct st_ctl {
	pid_t workers[ST_PROCS];
	__u64 seed;
};

static void st_reap(pid_t pid, const char *what)
{
	__u64 end = now_ns() + 10 * NS_PER_SEC;
	int status;

	while (waitpid(pid, &status, WNOHANG) != pid) {
		if (now_ns() > end) {
			st_fail("%s %d does not die after SIGKILL", what, pid);
			return;
		}
		sleep_ms(2);
	}
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		st_fail("%s %d ended with status %#x", what, pid, status);
}

static void *st_victims(void *arg)
{
	struct st_ctl *c = arg;
	pid_t pids[ST_VICTIMS] = { 0 };
	__u64 death[ST_VICTIMS] = { 0 };
	__u64 rng = c->seed ^ 0x77;
	int i;

	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		for (i = 0; i < ST_VICTIMS; i++) {
			if (pids[i] && now_ns() >= death[i]) {
				kill(pids[i], SIGKILL);
				st_reap(pids[i], "victim");
				pids[i] = 0;
			}
			if (pids[i])
				continue;
			death[i] = now_ns() + (20 + below(&rng, 300)) * NS_PER_MS;
			pids[i] = fork();
			if (pids[i] == 0)
				st_victim(rnd(&rng));
			if (pids[i] < 0) {
				st_fail("fork: %s", strerror(errno));
				pids[i] = 0;
			}
			__atomic_fetch_add(&sh->victims, 1, __ATOMIC_RELAXED);
		}
		sleep_ms(5);
	}
	for (i = 0; i < ST_VICTIMS; i++) {
		if (!pids[i])
			continue;
		kill(pids[i], SIGKILL);
		st_reap(pids[i], "victim");
	}
	return NULL;
}

static void *st_signals(void *arg)
{
	struct st_ctl *c = arg;
	__u64 rng = c->seed ^ 0x55;

	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		sleep_ms(3 + below(&rng, 15));
		kill(c->workers[below(&rng, ST_PROCS)], SIGUSR1);
		__atomic_fetch_add(&sh->signals, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *st_reconfig(void *arg)
{
	struct st_ctl *c = arg;
	__u64 rng = c->seed ^ 0x33;
	struct rl_config cfg;
	int l;

	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		sleep_ms(10 + below(&rng, 50));
		l = below(&rng, L_NR);
		if (st_defs[l].named && below(&rng, 2)) {
			st_sysfs_tune(&rng);
			continue;
		}
		st_config(&cfg, l, &rng);
		if (ioctl(st_master[l], RL_IOC_SET_CONFIG, &cfg))
			st_fail("%s: reconfigure: %s", st_defs[l].tag,
				strerror(errno));
		__atomic_fetch_add(&sh->reconfigs, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * Trees of limiters (RL_IOC_SET_PARENT): move the named limiters under a
 * parent of their own and back, at random, while the workers acquire. The
 * parent's limits are far above theirs, so the invariants of each hold as
 * they are; its held and waiters must come back to 0 with them. The
 * parent limits concurrency and "rate" does not: while its workers are
 * attached, "rate" may not move under it (EBUSY, ratelimit(4)).
 */
static int st_top = -1;

static int st_set_parent(int fd, const char *parent)
{
	struct rl_parent p;

	memset(&p, 0, sizeof(p));
	p.name_ptr = (__u64)(uintptr_t)parent;
	p.weight = 1;
	return ioctl(fd, RL_IOC_SET_PARENT, &p);
}

static void *st_reparent(void *arg)
{
	struct st_ctl *c = arg;
	__u64 rng = c->seed ^ 0x55;
	char top[RL_NAME_MAX];
	int l;

	st_name(top, sizeof(top), "top");
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		sleep_ms(5 + below(&rng, 30));
		l = below(&rng, 2) ? L_RATE : L_CONC;
		if (!st_set_parent(st_master[l], below(&rng, 2) ? top : NULL))
			__atomic_fetch_add(&sh->reparents, 1, __ATOMIC_RELAXED);
		else if (l == L_RATE && errno == EBUSY)
			/* Its workers' grants would become permits. */
			__atomic_fetch_add(&sh->refused, 1, __ATOMIC_RELAXED);
		else
			st_fail("%s: set parent: %s", st_defs[l].tag,
				strerror(errno));
	}
	/* Back to roots before the checks. */
	if (st_set_parent(st_master[L_RATE], NULL) ||
	    st_set_parent(st_master[L_CONC], NULL))
		st_fail("set parent back: %s", strerror(errno));
	return NULL;
}

/* The parent of st_reparent(), with room for everything under it. */
static int st_top_create(void)
{
	struct rl_config cfg = {
		.rate = 1000000, .period_ns = NS_PER_SEC, .burst = 100000,
		.concurrency = 1000,
	};
	char top[RL_NAME_MAX];

	st_name(top, sizeof(top), "top");
	st_top = ks_open();
	return st_top < 0 ? -1 :
	       ks_att_cfg(st_top, top, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
			  &cfg);
}

/* ---- the invariants ---- */

static int st_cmp(const void *a, const void *b)
{
	const struct st_event *x = a, *y = b;

	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* Most tokens limiter @l may grant in @ns: burst + backlog + rate x ns. */
static double st_bound(int l, __u64 ns)
{
	const struct st_def *d = &st_defs[l];

	return st_max(d->burst) + d->backlog +
	       (double)st_max(d->rate) * ns / NS_PER_SEC + 1;
}

/*
 * Tokens that may have come back into the bucket within [a, b] from
 * outside it: refunds made then, and chunks that a request above the
 * burst took before @a and gave back after it (taken and given back
 * within the window they change nothing).
 */
static __u64 st_refunds(const struct st_lim *s, __u64 a, __u64 b)
{
	__u64 i, n = s->nref < ST_REFUNDS ? s->nref : ST_REFUNDS, sum = 0;

	for (i = 0; i < n; i++)
		if (s->ref[i].t0 <= b && s->ref[i].t1 >= a)
			sum += s->ref[i].count;
	n = s->nchunked < ST_REFUNDS ? s->nchunked : ST_REFUNDS;
	for (i = 0; i < n; i++)
		if (s->chunked[i].t0 < a && s->chunked[i].t1 >= a)
			sum += s->chunked[i].count;
	return sum;
}

/* Grants logged for @l against the bound, over the run and windows. */
static void st_check_rate(struct __test_metadata *_metadata, int l,
			  const struct rl_stats *ks, __u64 t_stats)
{
	static const __u64 windows[] = {
		20 * NS_PER_MS, 100 * NS_PER_MS, 500 * NS_PER_MS, 2 * NS_PER_SEC,
	};
	struct st_lim *s = &sh->lim[l];
	__u64 n = s->nev < ST_EVENTS ? s->nev : ST_EVENTS, i, j, w;
	__u64 total = 0, worst_sum = 0, worst_w = 0;
	double worst = -1e18, bound;

	qsort(s->ev, n, sizeof(s->ev[0]), st_cmp);
	for (i = 0; i < n; i++)
		total += s->ev[i].count;
	bound = st_bound(l, t_stats - s->t_create) + st_refunds(s, 0, ~0ULL);
	ksft_print_msg("%s: %llu grants, %llu tokens logged\n",
		       st_defs[l].tag, (unsigned long long)n,
		       (unsigned long long)total);
	ksft_print_msg("%s: kernel granted %llu refunded %llu, bound %.0f over %.1f s\n",
		       st_defs[l].tag, (unsigned long long)ks->granted,
		       (unsigned long long)ks->refunded, bound,
		       (t_stats - s->t_create) / 1e9);
	EXPECT_LE(total, ks->granted) TH_LOG("%s: more logged than granted",
					     st_defs[l].tag);
	EXPECT_LE(total, bound) TH_LOG("%s: whole run", st_defs[l].tag);
	EXPECT_LE(ks->granted - ks->refunded, bound)
		TH_LOG("%s: kernel's count over the whole run", st_defs[l].tag);
	if (s->nev > ST_EVENTS)
		TH_LOG("%s: log full, %llu grants unchecked", st_defs[l].tag,
		       (unsigned long long)(s->nev - ST_EVENTS));

	for (w = 0; w < ARRAY_SIZE(windows); w++) {
		for (i = 0; i < n; i++) {
			__u64 a = s->ev[i].t0, b = a + windows[w], sum = 0;
			double excess;

			for (j = i; j < n && s->ev[j].t0 <= b; j++)
				if (s->ev[j].t1 <= b)
					sum += s->ev[j].count;
			bound = st_bound(l, windows[w]) + st_refunds(s, a, b);
			excess = sum - bound;
			if (excess > worst) {
				worst = excess;
				worst_sum = sum;
				worst_w = windows[w];
			}
		}
	}
	if (n)
		ksft_print_msg("%s: tightest window: %llu tokens in %llu ms, %.1f below\n",
			       st_defs[l].tag, (unsigned long long)worst_sum,
			       (unsigned long long)(worst_w / NS_PER_MS), -worst);
	EXPECT_GE(0, worst) TH_LOG("%s: %llu tokens within %llu ms, above the bound by %.1f",
				   st_defs[l].tag, (unsigned long long)worst_sum,
				   (unsigned long long)(worst_w / NS_PER_MS), worst);
}

/* After everything else is gone: the limiter is idle and whole. */
static void st_check_end(struct __test_metadata *_metadata, int l)
{
	const struct st_def *d = &st_defs[l];
	char name[RL_NAME_MAX];
	struct rl_stats s;
	__u64 t;

	ASSERT_EQ(0, ks_stats(st_master[l], &s));
	t = now_ns();
	ksft_print_msg("%s: requests %llu granted %llu waited %llu timeouts %llu\n",
		       d->tag, (unsigned long long)s.requests,
		       (unsigned long long)s.granted,
		       (unsigned long long)s.waited,
		       (unsigned long long)s.timeouts);
	ksft_print_msg("%s: interrupted %llu rejected %llu; max in flight %lld\n",
		       d->tag,
		       (unsigned long long)s.interrupted,
		       (unsigned long long)s.rejected,
		       (long long)sh->lim[l].max_inflight);
	EXPECT_EQ(0, s.held) TH_LOG("%s: permits never came back", d->tag);
	EXPECT_EQ(0, s.waiters) TH_LOG("%s: waiters left asleep", d->tag);
	EXPECT_EQ(1, s.clients) TH_LOG("%s: clients left", d->tag);
	EXPECT_EQ(0, sh->lim[l].over);
	if (d->named) {
		st_name(name, sizeof(name), d->tag);
		EXPECT_EQ(0, sysfs_u64(name, "held"));
		EXPECT_EQ(0, sysfs_u64(name, "waiters"));
		EXPECT_EQ(1, sysfs_u64(name, "clients"));
	}
	if (!d->unlimited)
		st_check_rate(_metadata, l, &s, t);
}

FIXTURE(stress) {
	int unused;
};

FIXTURE_SETUP(stress)
{
}

FIXTURE_TEARDOWN(stress)
{
}

TEST_F_TIMEOUT(stress, invariants, 600)
{
	pthread_t victims, signals, reconfig, reparent;
	const char *env = getenv("RL_STRESS_SECS");
	__u64 secs = env && *env ? strtoull(env, NULL, 10) : ST_SECS;
	char name[RL_NAME_MAX];
	struct rl_config cfg;
	struct st_ctl ctl;
	__u64 start, end, count0;
	int i, l, status, alive;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	sh->owner = getpid();
	/* Before any fork: a signal must never find the default action. */
	ASSERT_EQ(0, catch_signal(SIGUSR1, 0));
	ASSERT_EQ(0, catch_signal(SIGUSR2, 0));
	ctl.seed = now_ns();
	count0 = ks_named_count();
	ksft_print_msg("%d processes x %d threads, %d victims, %d limiters, %llu s, seed %llu\n",
		       ST_PROCS, ST_THREADS, ST_VICTIMS, L_NR,
		       (unsigned long long)secs, (unsigned long long)ctl.seed);

	/* The limiters, with the largest limits of their sets. */
	for (l = 0; l < L_NR; l++) {
		const struct st_def *d = &st_defs[l];

		memset(&cfg, 0, sizeof(cfg));
		cfg.period_ns = NS_PER_SEC;
		cfg.rate = st_max(d->rate);
		cfg.burst = st_max(d->burst);
		cfg.concurrency = st_max(d->conc);
		cfg.flags = d->unlimited ? RL_CONFIG_UNLIMITED : 0;
		cfg.catchup = d->catchup;
		cfg.backlog = d->backlog;
		st_master[l] = ks_open();
		ASSERT_LE(0, st_master[l]);
		sh->lim[l].t_create = now_ns();
		if (d->named) {
			st_name(name, sizeof(name), d->tag);
			ASSERT_EQ(0, ks_att_cfg(st_master[l], name,
						RL_ATTACH_CREATE | RL_ATTACH_EXCL |
						(d->persist ? RL_ATTACH_PERSIST : 0),
						0600, &cfg))
				TH_LOG("%s: %s", name, strerror(errno));
		} else {
			ASSERT_EQ(0, ioctl(st_master[l], RL_IOC_SET_CONFIG, &cfg));
		}
	}

	start = now_ns();
	sh->deadline = start + secs * NS_PER_SEC;
	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < ST_PROCS; i++) {
		ctl.workers[i] = fork();
		ASSERT_LE(0, ctl.workers[i]);
		if (ctl.workers[i] == 0)
			_exit(st_worker(i, ctl.seed));
	}
	ASSERT_EQ(0, pthread_create(&victims, NULL, st_victims, &ctl));
	ASSERT_EQ(0, pthread_create(&signals, NULL, st_signals, &ctl));
	ASSERT_EQ(0, pthread_create(&reconfig, NULL, st_reconfig, &ctl));
	ASSERT_EQ(0, st_top_create());
	ASSERT_EQ(0, pthread_create(&reparent, NULL, st_reparent, &ctl));

	while (now_ns() < sh->deadline)
		sleep_ms(50);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(signals, NULL);
	pthread_join(reconfig, NULL);
	pthread_join(victims, NULL);
	pthread_join(reparent, NULL);

	end = sh->deadline + ST_GRACE_NS;
	for (alive = ST_PROCS; alive && now_ns() < end;) {
		for (i = 0; i < ST_PROCS; i++) {
			if (!ctl.workers[i] ||
			    waitpid(ctl.workers[i], &status, WNOHANG) != ctl.workers[i])
				continue;
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				st_fail("worker %d ended with status %#x", i,
					status);
			ctl.workers[i] = 0;
			alive--;
		}
		sleep_ms(10);
	}
	for (i = 0; i < ST_PROCS; i++) {
		if (!ctl.workers[i])
			continue;
		st_fail("worker %d hangs", i);
		kill(ctl.workers[i], SIGKILL);
		waitpid(ctl.workers[i], &status, 0);
	}
	ksft_print_msg("%llu acquires in %llu s: %.0f/s\n",
		       (unsigned long long)sh->ops, (unsigned long long)secs,
		       sh->ops / (double)secs);
	ksft_print_msg("%llu granted, %llu EAGAIN, %llu ETIMEDOUT, %llu EINTR\n",
		       (unsigned long long)sh->granted_ops,
		       (unsigned long long)sh->eagain,
		       (unsigned long long)sh->timeouts,
		       (unsigned long long)sh->eintr);
	ksft_print_msg("%llu reconfigurations, %llu victims killed, %llu signals, %llu churns\n",
		       (unsigned long long)sh->reconfigs,
		       (unsigned long long)sh->victims,
		       (unsigned long long)sh->signals,
		       (unsigned long long)sh->churn);
	ksft_print_msg("%llu moves between trees, %llu refused (EBUSY)\n",
		       (unsigned long long)sh->reparents,
		       (unsigned long long)sh->refused);
	for (i = 0; i < sh->nfails && i < ST_FAILS; i++)
		TH_LOG("FAIL: %s", sh->fails[i]);
	EXPECT_EQ(0, sh->nfails);

	for (l = 0; l < L_NR; l++)
		st_check_end(_metadata, l);
	{
		struct rl_stats ts;

		ASSERT_EQ(0, ks_stats(st_top, &ts));
		EXPECT_EQ(0, ts.held) TH_LOG("top: permits never came back");
		EXPECT_EQ(0, ts.waiters);
		close(st_top);
		st_name(name, sizeof(name), "top");
		EXPECT_FALSE(sysfs_exists(name)) TH_LOG("%s still exists", name);
	}

	/* Close everything: no name may stay behind. */
	for (l = 0; l < L_NR; l++)
		close(st_master[l]);
	st_name(name, sizeof(name), st_defs[L_RATE].tag);
	EXPECT_EQ(0, ks_unl_name(name)) TH_LOG("%s: %s", name, strerror(errno));
	st_name(name, sizeof(name), "churn");
	if (ks_unl_name(name))
		EXPECT_EQ(ENOENT, errno);
	for (l = 0; l <= L_NR; l++) {
		st_name(name, sizeof(name), l < L_NR ? st_defs[l].tag : "churn");
		EXPECT_FALSE(sysfs_exists(name)) TH_LOG("%s still exists", name);
	}
	EXPECT_EQ(count0, ks_named_count());
	munmap(sh, sizeof(*sh));
}

TEST_HARNESS_MAIN
