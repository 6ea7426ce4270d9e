/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Load generator of the scheduling selftests. A run is a named limiter
 * and up to SC_MAX_CLIENTS clients, each an fd of its own attached to it,
 * in this process or in a child process. The threads of a client acquire
 * back to back (or one of them at a fixed pace) while the limiter runs at
 * the configured rate, and count in shared memory what they got: for a
 * fixed time, or until they got a number of tokens (so that a slow guest,
 * e.g. a KASAN kernel under TCG, measures as many tokens as a fast one).
 * Include after "ratelimit_util.h".
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RL_SELFTEST_SCHED_H
#define RL_SELFTEST_SCHED_H

#include <sys/mman.h>

#define SC_MAX_CLIENTS	8
#define SC_MAX_THREADS	8
/* Deadline of acquires queued before the start, and of every join. */
#define SC_SETUP_NS	(5 * NS_PER_SEC)

/**
 * struct sc_client - one fd of the limiter and its threads
 * @nthreads: threads acquiring back to back, 1 .. SC_MAX_THREADS.
 * @process:  run the client in a child process of its own.
 * @uid:      with @process, the child's uid and gid before it opens its fd
 *            (0: this process's); the limiter is then mode 0666.
 * @prio:     RL_IOC_SET_CLIENT priority, weight and cap (0: defaults).
 * @weight:   see @prio.
 * @cap:      see @prio.
 * @acq_prio: struct rl_acquire.priority of every acquire.
 * @count:    tokens per acquire (0 means 1).
 * @pace_ns:  when not 0 the client is one thread doing one acquire every
 *            @pace_ns from the start, instead of back to back.
 * @granted:  out: tokens granted before the stop time.
 * @acquires: out: acquires those came in.
 * @asked:    out: paced: acquires made (started before the stop time).
 * @wait_ns:  out: sum of their wait_ns.
 * @wait_max: out: longest wait_ns.
 * @over_cap: out: grants that took the client above @cap * (elapsed
 *            periods since SET_CLIENT + 1).
 * @max_seen: out: highest granted / bound ratio seen, per mille (cap).
 * @t_set:    out: time just before SET_CLIENT.
 * @err:      out: first errno other than ETIMEDOUT.
 * @setup_err: out: errno of a failed attach or SET_CLIENT.
 */
struct sc_client {
	int nthreads;
	int process;
	uid_t uid;
	__u32 prio;
	__u32 weight;
	__u64 cap;
	__u32 acq_prio;
	__u64 count;
	__u64 pace_ns;
	__u64 granted;
	__u64 acquires;
	__u64 asked;
	__u64 wait_ns;
	__u64 wait_max;
	__u64 over_cap;
	__u64 max_seen;
	__u64 t_set;
	int err;
	int setup_err;
};

/**
 * struct sc_run - a run, in memory shared with the children
 * @cfg:      the limiter's config from the start; before it the limiter
 *            is paused (rate 0) and empty while the clients queue up.
 * @dur_ns:   how long the clients count grants; with @want, the deadline.
 * @want:     when not 0: count until the clients of @want_mask together
 *            got @want tokens, or @dur_ns passed (whichever is first).
 * @want_mask: bit i: c[i] counts towards @want; 0: all clients.
 * @nclients: entries of @c in use.
 * @t0:       the start (set by sc_go(), just before the config is set).
 * @stop:     @t0 + @dur_ns, or when @want was reached.
 * @end:      out: a time after every grant counted (>= @stop).
 * @name:     the limiter's name.
 * @c:        the clients.
 */
struct sc_run {
	struct rl_config cfg;
	__u64 dur_ns;
	__u64 want;
	__u32 want_mask;
	int nclients;
	__u64 t0;
	__u64 stop;
	__u64 end;
	char name[RL_NAME_MAX];
	struct sc_client c[SC_MAX_CLIENTS];
};

struct sc_thr {
	struct sc_run *r;
	struct sc_client *c;
	int fd;
};

static inline struct sc_run *sc_alloc(void)
{
	struct sc_run *r;

	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED)
		return NULL;
	memset(r, 0, sizeof(*r));
	return r;
}

static inline void sc_free(struct sc_run *r)
{
	if (r)
		munmap(r, sizeof(*r));
}

static inline __u64 sc_load(__u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static inline void sc_max(__u64 *p, __u64 v)
{
	__u64 old = sc_load(p);

	while (v > old && !__atomic_compare_exchange_n(p, &old, v, 0,
						       __ATOMIC_SEQ_CST,
						       __ATOMIC_SEQ_CST))
		;
}

static inline void sc_set_err(int *p, int err)
{
	int zero = 0;

	__atomic_compare_exchange_n(p, &zero, err, 0, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
}

static inline void sc_count(struct sc_run *r, struct sc_client *c,
			    __u64 count, const struct rl_acquire *a, __u64 t)
{
	__u64 n = __atomic_add_fetch(&c->granted, count, __ATOMIC_SEQ_CST);
	double bound;

	__atomic_add_fetch(&c->acquires, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&c->wait_ns, a->wait_ns, __ATOMIC_SEQ_CST);
	sc_max(&c->wait_max, a->wait_ns);
	if (!c->cap)
		return;
	/* Its own bucket: full (cap) at SET_CLIENT, cap more per period. */
	bound = c->cap * ((double)(t - c->t_set) / r->cfg.period_ns + 1);
	if (n > bound)
		__atomic_add_fetch(&c->over_cap, 1, __ATOMIC_SEQ_CST);
	sc_max(&c->max_seen, (__u64)(n * 1000 / bound));
}

/* A back-to-back client thread. */
static inline void *sc_thread(void *arg)
{
	struct sc_thr *t = arg;
	struct sc_client *c = t->c;
	__u64 count = c->count ? c->count : 1;
	__u64 stop, now, dl;
	struct rl_acquire a;

	for (;;) {
		stop = sc_load(&t->r->stop);
		now = now_ns();
		if (stop && now >= stop)
			break;
		dl = stop ? stop : now + SC_SETUP_NS;
		if (ks_acq_prio(t->fd, count, dl, 0, c->acq_prio, &a)) {
			if (errno == ETIMEDOUT)
				continue;
			sc_set_err(&c->err, errno);
			break;
		}
		now = now_ns();
		stop = sc_load(&t->r->stop);
		if (stop && now < stop)
			sc_count(t->r, c, count, &a, now);
	}
	return NULL;
}

/* A paced client: one acquire every pace_ns from the start. */
static inline void *sc_paced(void *arg)
{
	struct sc_thr *t = arg;
	struct sc_client *c = t->c;
	__u64 count = c->count ? c->count : 1;
	__u64 end = now_ns() + 2 * SC_SETUP_NS;
	__u64 t0, stop, target, now, i;
	struct rl_acquire a;
	struct timespec ts;

	while (!(t0 = sc_load(&t->r->t0)) && now_ns() < end)
		sleep_ms(1);
	if (!t0 || !sc_load(&t->r->stop))
		return NULL;
	/* The stop may come earlier while this runs (sc_run.want). */
	for (i = 0; ; i++) {
		target = t0 + i * c->pace_ns;
		if (target >= sc_load(&t->r->stop))
			break;
		ts.tv_sec = target / NS_PER_SEC;
		ts.tv_nsec = target % NS_PER_SEC;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
				       NULL) == EINTR)
			;
		stop = sc_load(&t->r->stop);
		if (now_ns() >= stop)
			break;
		c->asked++;
		if (ks_acq_prio(t->fd, count, stop, 0, c->acq_prio, &a)) {
			if (errno != ETIMEDOUT)
				sc_set_err(&c->err, errno);
			continue;
		}
		now = now_ns();
		if (now < sc_load(&t->r->stop))
			sc_count(t->r, c, count, &a, now);
	}
	return NULL;
}

/* A new fd of the run's limiter with @c's client config, or -1. */
static inline int sc_attach(struct sc_run *r, struct sc_client *c)
{
	int fd = ks_open();

	if (fd < 0 || ks_att_cfg(fd, r->name, 0, 0, &r->cfg)) {
		c->setup_err = errno;
		if (fd >= 0)
			close(fd);
		return -1;
	}
	c->t_set = now_ns();
	if ((c->prio || c->weight || c->cap) &&
	    ks_client(fd, c->prio, c->weight, c->cap)) {
		c->setup_err = errno;
		close(fd);
		return -1;
	}
	return fd;
}

static inline int sc_nthreads(const struct sc_client *c)
{
	if (c->pace_ns)
		return 1;
	if (c->nthreads < 1)
		return 1;
	return c->nthreads > SC_MAX_THREADS ? SC_MAX_THREADS : c->nthreads;
}

/* Start the threads of @c on @fd; how many started. */
static inline int sc_start(struct sc_run *r, struct sc_client *c, int fd,
			   struct sc_thr *thr, pthread_t *th)
{
	int i, n = sc_nthreads(c);

	for (i = 0; i < n; i++) {
		thr[i].r = r;
		thr[i].c = c;
		thr[i].fd = fd;
		if (pthread_create(&th[i], NULL,
				   c->pace_ns ? sc_paced : sc_thread, &thr[i])) {
			c->setup_err = EAGAIN;
			break;
		}
	}
	return i;
}

static inline int sc_join(pthread_t th)
{
	struct timespec ts;
	__u64 t;

	clock_gettime(CLOCK_REALTIME, &ts);
	t = (__u64)ts.tv_sec * NS_PER_SEC + ts.tv_nsec + 2 * SC_SETUP_NS;
	ts.tv_sec = t / NS_PER_SEC;
	ts.tv_nsec = t % NS_PER_SEC;
	return pthread_timedjoin_np(th, NULL, &ts);
}

/* A client process: its fd and threads, then exit. */
static inline void sc_child(struct sc_run *r, struct sc_client *c)
{
	struct sc_thr thr[SC_MAX_THREADS];
	pthread_t th[SC_MAX_THREADS];
	int fd, i, n, rc = 0;

	if (c->uid && (setresgid(c->uid, c->uid, c->uid) ||
		       setresuid(c->uid, c->uid, c->uid))) {
		c->setup_err = errno;
		_exit(1);
	}
	fd = sc_attach(r, c);
	if (fd < 0)
		_exit(1);
	n = sc_start(r, c, fd, thr, th);
	for (i = 0; i < n; i++)
		if (sc_join(th[i]))
			rc = 2;
	_exit(rc);
}

static inline int sc_waitpid(pid_t pid, __u64 end)
{
	int status;
	pid_t p;

	while ((p = waitpid(pid, &status, WNOHANG)) == 0 && now_ns() < end)
		sleep_ms(5);
	if (p == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return -1;
	}
	return p == pid && WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

/* Tokens counted so far by the clients of @r->want_mask. */
static inline __u64 sc_wanted(struct sc_run *r)
{
	__u64 sum = 0;
	int i;

	for (i = 0; i < r->nclients; i++)
		if (!r->want_mask || (r->want_mask & (1U << i)))
			sum += sc_load(&r->c[i].granted);
	return sum;
}

/*
 * Count until @r->stop, or with @r->want until the clients have that many
 * tokens: then move the stop to now. A thread counts a grant only if it
 * read the clock before the stop, or if it read the old stop, before it
 * was moved: either way every grant counted came before @r->end.
 */
static inline void sc_wait_stop(struct sc_run *r)
{
	__u64 now, stop = sc_load(&r->stop);

	if (!r->want) {
		now = now_ns();
		sleep_ms((stop > now ? (stop - now) / NS_PER_MS : 0) + 1);
		r->end = stop;
		return;
	}
	while ((now = now_ns()) < stop && sc_wanted(r) < r->want)
		sleep_ms(2);
	if (now < stop)
		__atomic_store_n(&r->stop, now, __ATOMIC_SEQ_CST);
	r->end = now_ns();
}

/*
 * Run @r: create the limiter paused and empty, start the clients, wait
 * until the back-to-back ones are all queued, set @r->cfg, count for
 * @r->dur_ns or until @r->want, then let everyone go (RL_CONFIG_UNLIMITED)
 * and reap. 0 when everything started and ended in time, else -1 (with
 * errno of a setup failure in a client's setup_err).
 */
static inline int sc_go(struct sc_run *r)
{
	static struct sc_thr thr[SC_MAX_CLIENTS][SC_MAX_THREADS];
	static pthread_t th[SC_MAX_CLIENTS][SC_MAX_THREADS];
	static int seq;
	int nth[SC_MAX_CLIENTS] = { 0 }, fds[SC_MAX_CLIENTS];
	pid_t pids[SC_MAX_CLIENTS] = { 0 };
	struct rl_config cfg = r->cfg;
	struct rl_acquire a;
	struct rl_stats s;
	__u64 nwait = 0, end;
	int ctl, i, j, ret = 0;
	__u32 mode = 0;

	snprintf(r->name, sizeof(r->name), "sched-%d-%d", getpid(), seq++);
	cfg.rate = 0;
	cfg.flags &= ~RL_CONFIG_UNLIMITED;
	ctl = ks_open();
	if (ctl < 0)
		return -1;
	for (i = 0; i < r->nclients; i++)
		mode |= r->c[i].uid ? 0666 : 0600;
	if (ks_att_cfg(ctl, r->name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, mode,
		       &cfg) || ks_stats(ctl, &s) ||
	    (s.available &&
	     ks_acq(ctl, s.available, 0, RL_ACQUIRE_NONBLOCK, &a))) {
		close(ctl);
		return -1;
	}
	/* Children first: fork() while this process has one thread. */
	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < r->nclients; i++) {
		struct sc_client *c = &r->c[i];

		fds[i] = -1;
		if (!c->pace_ns)
			nwait += sc_nthreads(c);
		if (!c->process)
			continue;
		pids[i] = fork();
		if (pids[i] == 0)
			sc_child(r, c);
		if (pids[i] < 0)
			ret = -1;
	}
	for (i = 0; i < r->nclients; i++) {
		struct sc_client *c = &r->c[i];

		if (c->process)
			continue;
		fds[i] = sc_attach(r, c);
		if (fds[i] < 0) {
			ret = -1;
			continue;
		}
		nth[i] = sc_start(r, c, fds[i], thr[i], th[i]);
	}
	if (!ret && ks_wait_waiters(ctl, nwait, 5000))
		ret = -1;
	/* stop first: a paced client reads t0, then stop. */
	end = now_ns();
	__atomic_store_n(&r->stop, end + r->dur_ns, __ATOMIC_SEQ_CST);
	__atomic_store_n(&r->t0, end, __ATOMIC_SEQ_CST);
	if (ioctl(ctl, RL_IOC_SET_CONFIG, &r->cfg))
		ret = -1;
	sc_wait_stop(r);
	sleep_ms(20);
	cfg = r->cfg;
	cfg.flags |= RL_CONFIG_UNLIMITED;
	ioctl(ctl, RL_IOC_SET_CONFIG, &cfg);
	end = now_ns() + 2 * SC_SETUP_NS;
	for (i = 0; i < r->nclients; i++) {
		for (j = 0; j < nth[i]; j++)
			if (sc_join(th[i][j]))
				ret = -1;
		if (fds[i] >= 0)
			close(fds[i]);
		if (pids[i] > 0 && sc_waitpid(pids[i], end))
			ret = -1;
	}
	close(ctl);
	return ret;
}

/* Jain's fairness index of @n values: 1 when all are equal. */
static inline double jain(const double *x, int n)
{
	double sum = 0, sq = 0;
	int i;

	for (i = 0; i < n; i++) {
		sum += x[i];
		sq += x[i] * x[i];
	}
	return sq > 0 ? sum * sum / (n * sq) : 0;
}

#endif /* RL_SELFTEST_SCHED_H */
