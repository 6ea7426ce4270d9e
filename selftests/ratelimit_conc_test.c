// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of /dev/ratelimit: concurrency permits (rl_config.concurrency,
 * RL_IOC_RELEASE) and giving unused tokens back (RL_IOC_REFUND). Permits
 * are held per open file until released or closed, a kill -9 included.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"

#define SAFETY_NS	(3 * NS_PER_SEC)
#define LATE_NS		(700 * NS_PER_MS)
#define NAME(buf, tag)	snprintf(buf, sizeof(buf), "conc-%d-%s", getpid(), tag)

static __u64 soon(void)
{
	return now_ns() + SAFETY_NS;
}

static void conc_cfg(struct rl_config *c, __u64 rate, __u64 burst,
		     __u32 flags, __u64 conc)
{
	memset(c, 0, sizeof(*c));
	c->rate = rate;
	c->period_ns = NS_PER_SEC;
	c->burst = burst;
	c->flags = flags;
	c->concurrency = conc;
}

/* A private limiter: @conc permits, no rate limit. */
static int sem_fd(__u64 conc)
{
	struct rl_config c;
	int fd = ks_open();

	if (fd < 0)
		return -1;
	conc_cfg(&c, 0, 1, RL_CONFIG_UNLIMITED, conc);
	if (ioctl(fd, RL_IOC_SET_CONFIG, &c)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A new named limiter of @conc permits (no rate limit) and its first fd. */
static int sem_named(const char *name, __u64 conc)
{
	struct rl_config c;
	int fd = ks_open();

	if (fd < 0)
		return -1;
	conc_cfg(&c, 0, 1, RL_CONFIG_UNLIMITED, conc);
	if (ks_att_cfg(fd, name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
		       &c)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int sem_attach(const char *name)
{
	return ks_open_att(name, 0, 0, 1, NS_PER_SEC, 1);
}

static __u64 held(int fd)
{
	struct rl_stats s;

	return ks_stats(fd, &s) ? POISON64 : s.held;
}

static __u64 fd_held(int fd)
{
	struct rl_client_config cc;

	return ks_client_get(fd, &cc) ? POISON64 : cc.held;
}

/* ---- RL_IOC_RELEASE ---- */

TEST(release_bad_input)
{
	struct rl_release r;
	struct rl_acquire a;
	int fd = sem_fd(4);
	int i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 2, soon(), 0, &a));
	EXPECT_EQ(2ULL, held(fd));
	EXPECT_ERRNO(EINVAL, ks_release(fd, 0));
	EXPECT_ERRNO(EINVAL, ks_release(fd, 3));
	EXPECT_ERRNO(EINVAL, ks_release(fd, ~0ULL));
	memset(&r, 0, sizeof(r));
	r.count = 1;
	r.flags = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_RELEASE, &r));
	r.flags = 1U << 31;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_RELEASE, &r));
	r.flags = 0;
	r.reserved0 = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_RELEASE, &r));
	for (i = 0; i < 2; i++) {
		memset(&r, 0, sizeof(r));
		r.count = 1;
		r.reserved[i] = 1ULL << 63;
		EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_RELEASE, &r));
	}
	/* None of those released anything. */
	EXPECT_EQ(2ULL, held(fd));
	EXPECT_EQ(2ULL, fd_held(fd));
	EXPECT_EQ(0, ks_release(fd, 1));
	EXPECT_EQ(1ULL, held(fd));
	EXPECT_EQ(1ULL, fd_held(fd));
	EXPECT_EQ(0, ks_release(fd, 1));
	EXPECT_EQ(0ULL, held(fd));
	EXPECT_ERRNO(EINVAL, ks_release(fd, 1));
	close(fd);
}

TEST(release_without_concurrency)
{
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 4, 0));
	ASSERT_EQ(0, ks_acq(fd, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	/* Rate tokens are not permits: nothing is held. */
	EXPECT_EQ(0ULL, held(fd));
	EXPECT_ERRNO(EINVAL, ks_release(fd, 1));
	EXPECT_EQ(2ULL, ks_avail(fd));
	close(fd);
}

TEST(release_by_other_fd_einval)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	int fd1, fd2;

	NAME(name, "other");
	fd1 = sem_named(name, 3);
	ASSERT_LE(0, fd1);
	fd2 = sem_attach(name);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ks_acq(fd1, 2, soon(), 0, &a));
	EXPECT_EQ(2ULL, fd_held(fd1));
	EXPECT_EQ(0ULL, fd_held(fd2));
	EXPECT_ERRNO(EINVAL, ks_release(fd2, 1));
	EXPECT_EQ(2ULL, held(fd2));
	EXPECT_EQ(0, ks_release(fd1, 2));
	EXPECT_EQ(0ULL, held(fd2));
	close(fd2);
	close(fd1);
}

/* ---- permits ---- */

TEST(conc_count_above_limit_einval)
{
	struct rl_acquire a;
	struct rl_stats s;
	int fd = sem_fd(2);

	ASSERT_LE(0, fd);
	/* Could never be granted: rejected, not queued forever. */
	EXPECT_ERRNO(EINVAL, ks_acq(fd, 3, soon(), 0, &a));
	EXPECT_ERRNO(EINVAL, ks_acq(fd, 3, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EINVAL, ks_acq(fd, ~0ULL, soon(), 0, &a));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(0ULL, s.requests);
	EXPECT_EQ(0ULL, s.held);
	EXPECT_EQ(0ULL, s.waiters);
	EXPECT_EQ(0, ks_acq(fd, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
}

TEST(conc_blocks_at_limit)
{
	struct rl_acquire a;
	struct waiter w;
	__u64 t0;
	int fd = sem_fd(2);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 2, soon(), 0, &a));
	EXPECT_EQ(2ULL, held(fd));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(ETIMEDOUT, ks_acq(fd, 1, now_ns() + 100 * NS_PER_MS, 0,
				       &a));
	ASSERT_EQ(0, waiter_start(&w, fd, 1, soon(), 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	sleep_ms(50);
	EXPECT_EQ(0, __atomic_load_n(&w.done, __ATOMIC_SEQ_CST));
	t0 = now_ns();
	ASSERT_EQ(0, ks_release(fd, 1));
	ASSERT_EQ(0, waiter_join(&w, 2000));
	EXPECT_EQ(0, w.ret);
	EXPECT_GT(t0 + LATE_NS, w.t_end);
	EXPECT_EQ(2ULL, held(fd));
	EXPECT_EQ(0, ks_release(fd, 2));
	EXPECT_EQ(0ULL, held(fd));
	close(fd);
}

TEST(conc_close_releases_all)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	struct waiter w;
	__u64 t0;
	int fd1, fd2;

	NAME(name, "close");
	fd1 = sem_named(name, 3);
	ASSERT_LE(0, fd1);
	fd2 = sem_attach(name);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ks_acq(fd1, 1, soon(), 0, &a));
	ASSERT_EQ(0, ks_acq(fd1, 2, soon(), 0, &a));
	EXPECT_EQ(3ULL, held(fd2));
	ASSERT_EQ(0, waiter_start(&w, fd2, 2, soon(), 0));
	ASSERT_EQ(0, ks_wait_waiters(fd2, 1, 2000));
	t0 = now_ns();
	close(fd1);
	ASSERT_EQ(0, waiter_join(&w, 2000));
	EXPECT_EQ(0, w.ret);
	EXPECT_GT(t0 + LATE_NS, w.t_end);
	EXPECT_EQ(2ULL, held(fd2));
	EXPECT_EQ(2ULL, fd_held(fd2));
	close(fd2);
}

/* A holder killed with SIGKILL frees its permits at once. */
TEST(conc_kill9_frees_permits)
{
	char name[RL_NAME_MAX], c;
	struct rl_acquire a;
	struct waiter w;
	int p[2], fd, fd2, status;
	__u64 t_kill;
	pid_t pid;

	NAME(name, "kill");
	fd = sem_named(name, 2);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int cfd = sem_attach(name);

		if (cfd < 0 || ks_acq(cfd, 2, soon(), 0, &a))
			_exit(1);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	ASSERT_EQ(1, read(p[0], &c, 1));
	close(p[0]);
	EXPECT_EQ(2ULL, held(fd));
	fd2 = sem_attach(name);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, waiter_start(&w, fd2, 1, now_ns() + 5 * NS_PER_SEC, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	t_kill = now_ns();
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(0, waiter_join(&w, 6000));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(0, w.ret);
	TH_LOG("waiter granted %.3f ms after kill -9 of the holder",
	       (double)(w.t_end - t_kill) / NS_PER_MS);
	EXPECT_GT(t_kill + LATE_NS, w.t_end);
	EXPECT_EQ(1ULL, held(fd));
	EXPECT_EQ(1ULL, fd_held(fd2));
	close(fd2);
	EXPECT_EQ(0ULL, held(fd));
	close(fd);
}

/*
 * Threads with an fd each take 1 or 2 permits of 3, hold them a moment
 * and release them, for 1.5 s and at least SEM_OPS cycles (a slow guest
 * takes longer, up to SEM_DEADLINE_NS); a shared counter of what is in use
 * and stats.held never exceed 3.
 */
#define NSEM		6
#define SEM_LIMIT	3
#define SEM_OPS		50ULL
#define SEM_DEADLINE_NS	(20 * NS_PER_SEC)

struct sem_user {
	int fd;
	__u64 *stop;
	unsigned int seed;
	int *inuse;
	int *max;
	__u64 ops;
	int bad;
};

static void *sem_fn(void *arg)
{
	struct sem_user *u = arg;
	struct rl_acquire a;
	__u64 count;
	__u64 stop;
	int n, m;

	for (;;) {
		stop = __atomic_load_n(u->stop, __ATOMIC_SEQ_CST);
		if (now_ns() >= stop)
			break;
		count = 1 + rand_r(&u->seed) % 2;
		if (ks_acq(u->fd, count, stop + 500 * NS_PER_MS, 0, &a)) {
			if (errno != ETIMEDOUT)
				u->bad = errno;
			continue;
		}
		n = __atomic_add_fetch(u->inuse, count, __ATOMIC_SEQ_CST);
		m = __atomic_load_n(u->max, __ATOMIC_SEQ_CST);
		while (n > m && !__atomic_compare_exchange_n(u->max, &m, n, 0,
							     __ATOMIC_SEQ_CST,
							     __ATOMIC_SEQ_CST))
			;
		if (rand_r(&u->seed) % 2)
			sleep_ms(1);
		__atomic_sub_fetch(u->inuse, count, __ATOMIC_SEQ_CST);
		if (ks_release(u->fd, count))
			u->bad = errno;
		__atomic_add_fetch(&u->ops, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

TEST(conc_stress_never_exceeds)
{
	struct sem_user u[NSEM];
	pthread_t th[NSEM];
	char name[RL_NAME_MAX];
	int inuse = 0, max = 0, i, ctl;
	__u64 t0, now, stop, ops = 0, samples = 0, max_held = 0, h;
	struct rl_stats s;

	NAME(name, "stress");
	ctl = sem_named(name, SEM_LIMIT);
	ASSERT_LE(0, ctl);
	t0 = now_ns();
	stop = t0 + SEM_DEADLINE_NS;
	for (i = 0; i < NSEM; i++) {
		memset(&u[i], 0, sizeof(u[i]));
		u[i].fd = sem_attach(name);
		ASSERT_LE(0, u[i].fd);
		u[i].stop = &stop;
		u[i].seed = i + 1;
		u[i].inuse = &inuse;
		u[i].max = &max;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, sem_fn, &u[i]));
	}
	while ((now = now_ns()) < stop) {
		if (now >= t0 + 1500 * NS_PER_MS) {
			for (ops = 0, i = 0; i < NSEM; i++)
				ops += __atomic_load_n(&u[i].ops,
						       __ATOMIC_SEQ_CST);
			if (ops >= SEM_OPS) {
				__atomic_store_n(&stop, now, __ATOMIC_SEQ_CST);
				break;
			}
		}
		h = held(ctl);
		if (h != POISON64 && h > max_held)
			max_held = h;
		samples++;
		sleep_ms(1);
	}
	for (ops = 0, i = 0; i < NSEM; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
		EXPECT_EQ(0, u[i].bad);
		ops += u[i].ops;
		close(u[i].fd);
	}
	TH_LOG("%llu acquire/release cycles in %.3f s, most in use %d, held %llu (%llu samples)",
	       (unsigned long long)ops, (double)(stop - t0) / NS_PER_SEC, max,
	       (unsigned long long)max_held, (unsigned long long)samples);
	EXPECT_GE(SEM_LIMIT, max);
	EXPECT_GE((__u64)SEM_LIMIT, max_held);
	/* The permits were contended, and used. */
	EXPECT_LE(2, max);
	EXPECT_LE(SEM_OPS, ops);
	ASSERT_EQ(0, ks_stats(ctl, &s));
	EXPECT_EQ(0ULL, s.held);
	EXPECT_EQ(0ULL, s.waiters);
	close(ctl);
}

/* Permits and the rate limit together: both hold. */
TEST(conc_with_rate)
{
	struct rl_config c;
	struct rl_acquire a;
	struct rl_stats s;
	__u64 t0, t, n;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	/* 20/s, burst 4, 2 permits. */
	conc_cfg(&c, 20, 4, 0, 2);
	t0 = now_ns();
	ASSERT_EQ(0, ioctl(fd, RL_IOC_SET_CONFIG, &c));
	ASSERT_EQ(0, ks_acq(fd, 2, soon(), 0, &a));
	/* Tokens in the bucket, but no permit. */
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(2ULL, s.held);
	EXPECT_LE(2ULL, s.available);
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, ks_release(fd, 2));
	n = 2;
	/* Permits, but only the rate: burst 4 + 20/s since t0. */
	while ((t = now_ns()) < t0 + NS_PER_SEC) {
		if (ks_acq(fd, 1, soon(), 0, &a))
			break;
		n++;
		t = now_ns();
		EXPECT_GE(4 + 1 + 20 * (t - t0) / NS_PER_SEC, n);
		EXPECT_GE(1ULL, held(fd));
		EXPECT_EQ(0, ks_release(fd, 1));
	}
	TH_LOG("%llu tokens in %.3f s at 20/s, burst 4",
	       (unsigned long long)n, (double)(t - t0) / NS_PER_SEC);
	EXPECT_LE(4ULL + 10, n);
	EXPECT_EQ(0ULL, held(fd));
	close(fd);
}

/* ---- RL_IOC_REFUND ---- */

TEST(refund_basic)
{
	struct rl_stats s;
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 10, 0));
	ASSERT_EQ(0, ks_acq(fd, 6, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(4ULL, ks_avail(fd));
	EXPECT_EQ(0, ks_refund(fd, 3));
	EXPECT_EQ(7ULL, ks_avail(fd));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(3ULL, s.refunded);
	/* 3 acquired and not refunded yet. */
	EXPECT_ERRNO(EINVAL, ks_refund(fd, 4));
	EXPECT_EQ(7ULL, ks_avail(fd));
	EXPECT_EQ(0, ks_refund(fd, 3));
	EXPECT_EQ(10ULL, ks_avail(fd));
	EXPECT_ERRNO(EINVAL, ks_refund(fd, 1));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(6ULL, s.refunded);
	EXPECT_EQ(6ULL, s.granted);
	/* The refunded tokens can be taken again. */
	EXPECT_EQ(0, ks_acq(fd, 10, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, ks_refund(fd, 10));
	close(fd);
}

TEST(refund_bad_input)
{
	char name[RL_NAME_MAX];
	struct rl_release r;
	struct rl_acquire a;
	int fd, fd2, i;

	NAME(name, "refund");
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600, 1,
			 10 * NS_PER_SEC, 10);
	ASSERT_LE(0, fd);
	fd2 = ks_open_att(name, 0, 0, 1, 10 * NS_PER_SEC, 10);
	ASSERT_LE(0, fd2);
	/* Nothing acquired yet. */
	EXPECT_ERRNO(EINVAL, ks_refund(fd, 1));
	ASSERT_EQ(0, ks_acq(fd, 5, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EINVAL, ks_refund(fd, 0));
	/* Another fd of the same limiter acquired nothing. */
	EXPECT_ERRNO(EINVAL, ks_refund(fd2, 1));
	memset(&r, 0, sizeof(r));
	r.count = 1;
	r.flags = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_REFUND, &r));
	r.flags = 0;
	r.reserved0 = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_REFUND, &r));
	for (i = 0; i < 2; i++) {
		memset(&r, 0, sizeof(r));
		r.count = 1;
		r.reserved[i] = 1;
		EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_REFUND, &r));
	}
	EXPECT_EQ(5ULL, ks_avail(fd));
	EXPECT_EQ(0, ks_refund(fd, 5));
	EXPECT_EQ(10ULL, ks_avail(fd2));
	close(fd2);
	close(fd);
}

TEST(refund_capped_by_burst)
{
	struct rl_acquire a;
	struct rl_stats s;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	/* 100/s, burst 10: take 20 (the second 10 after 100 ms). */
	ASSERT_EQ(0, ks_set(fd, 100, NS_PER_SEC, 10, 0));
	ASSERT_EQ(0, ks_acq(fd, 10, soon(), 0, &a));
	ASSERT_EQ(0, ks_acq(fd, 10, soon(), 0, &a));
	sleep_ms(200);
	EXPECT_EQ(10ULL, ks_avail(fd));
	/* Allowed (20 acquired), but the bucket stays at the burst. */
	EXPECT_EQ(0, ks_refund(fd, 5));
	EXPECT_EQ(10ULL, ks_avail(fd));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_GE(5ULL, s.refunded);
	EXPECT_EQ(0, ks_refund(fd, 15));
	EXPECT_ERRNO(EINVAL, ks_refund(fd, 1));
	EXPECT_EQ(10ULL, ks_avail(fd));
	close(fd);
}

TEST(refund_wakes_waiter)
{
	struct rl_acquire a;
	struct waiter w;
	__u64 t0;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	/* Paused: only a refund can bring a token. */
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 2, 0));
	ASSERT_EQ(0, ks_acq(fd, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, waiter_start(&w, fd, 1, soon(), 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	t0 = now_ns();
	ASSERT_EQ(0, ks_refund(fd, 1));
	ASSERT_EQ(0, waiter_join(&w, 2000));
	EXPECT_EQ(0, w.ret);
	EXPECT_GT(t0 + LATE_NS, w.t_end);
	EXPECT_EQ(0ULL, ks_avail(fd));
	close(fd);
}

/* ---- sysfs of a named limiter ---- */

TEST(sysfs_sched_files)
{
	static const struct { const char *file, *val; } bad[] = {
		{ "catchup", "999" }, { "catchup", "100001" },
		{ "fairness", "1000001" }, { "backlog", "10001" },
		{ "concurrency", "-1" }, { "fairness", "x" },
	};
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	struct rl_config c;
	unsigned int i;
	int fd;

	NAME(name, "sysfs");
	fd = ks_open();
	ASSERT_LE(0, fd);
	conc_cfg(&c, 1, 10, 0, 3);
	c.period_ns = 10 * NS_PER_SEC;
	c.catchup = 1500;
	c.backlog = 7;
	c.fairness = 4;
	ASSERT_EQ(0, ks_att_cfg(fd, name, RL_ATTACH_CREATE | RL_ATTACH_EXCL,
				0600, &c));
	EXPECT_EQ(3ULL, sysfs_u64(name, "concurrency"));
	EXPECT_EQ(1500ULL, sysfs_u64(name, "catchup"));
	EXPECT_EQ(7ULL, sysfs_u64(name, "backlog"));
	EXPECT_EQ(4ULL, sysfs_u64(name, "fairness"));
	EXPECT_EQ(0ULL, sysfs_u64(name, "backlog_tokens"));
	ASSERT_EQ(0, ks_acq(fd, 2, soon(), 0, &a));
	EXPECT_EQ(2ULL, sysfs_u64(name, "held"));
	EXPECT_EQ(0ULL, sysfs_u64(name, "refunded"));
	ASSERT_EQ(0, ks_refund(fd, 1));
	EXPECT_EQ(1ULL, sysfs_u64(name, "refunded"));

	/* Writes are validated like SET_CONFIG and change it. */
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		EXPECT_ERRNO(EINVAL, sysfs_write(name, bad[i].file,
						 bad[i].val));
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ(3ULL, c.concurrency);
	EXPECT_EQ(1500U, c.catchup);
	EXPECT_EQ(7ULL, c.backlog);
	EXPECT_EQ(4U, c.fairness);
	EXPECT_EQ(0, sysfs_write(name, "concurrency", "5"));
	EXPECT_EQ(0, sysfs_write(name, "fairness", "1"));
	EXPECT_EQ(0, sysfs_write(name, "catchup", "3000"));
	EXPECT_EQ(0, sysfs_write(name, "backlog", "10000"));
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ(5ULL, c.concurrency);
	EXPECT_EQ(1U, c.fairness);
	EXPECT_EQ(3000U, c.catchup);
	EXPECT_EQ(10000ULL, c.backlog);
	/* More permits now: 3 more fit beside the 2 held. */
	EXPECT_EQ(0, ks_acq(fd, 3, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(5ULL, sysfs_u64(name, "held"));
	close(fd);
}

/* ---- switching concurrency between 0 and N on a live limiter ---- */

/* A new named rate-only limiter (no permits) and its first fd. */
static int rate_named(const char *name)
{
	struct rl_config c;
	int fd = ks_open();

	if (fd < 0)
		return -1;
	conc_cfg(&c, 0, 1, RL_CONFIG_UNLIMITED, 0);
	if (ks_att_cfg(fd, name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
		       &c)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int set_conc(int fd, __u64 conc)
{
	struct rl_config c;

	if (ks_get(fd, &c))
		return -1;
	c.concurrency = conc;
	return ioctl(fd, RL_IOC_SET_CONFIG, &c);
}

/*
 * The case: a rate-only limiter with a client; adding a
 * concurrency limit is refused, and the client keeps acquiring without
 * ever holding a permit.
 */
TEST(conc_switch_busy_with_client)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	struct rl_config c;
	int fd, other, i;

	NAME(name, "switch");
	fd = rate_named(name);
	ASSERT_LE(0, fd);
	other = sem_attach(name);
	ASSERT_LE(0, other);
	EXPECT_ERRNO(EBUSY, set_conc(fd, 2));
	EXPECT_ERRNO(EBUSY, set_conc(other, 2));
	EXPECT_ERRNO(EBUSY, sysfs_write(name, "concurrency", "2"));
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ(0ULL, c.concurrency);
	/* The clients go on: more acquires than any limit, none held. */
	for (i = 0; i < 10; i++) {
		ASSERT_EQ(0, ks_acq(other, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
		ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	}
	EXPECT_EQ(0ULL, held(fd));
	/* Alone again: the change goes through. */
	close(other);
	EXPECT_EQ(0, set_conc(fd, 2));
	ASSERT_EQ(0, ks_acq(fd, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(2ULL, held(fd));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
}

/* N -> 0 with another client is refused too; N -> M is not. */
TEST(conc_switch_off_busy_n_to_m_ok)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	int fd, other;

	NAME(name, "off");
	fd = sem_named(name, 2);
	ASSERT_LE(0, fd);
	other = sem_attach(name);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, ks_acq(other, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EBUSY, set_conc(fd, 0));
	EXPECT_ERRNO(EBUSY, sysfs_write(name, "concurrency", "0"));
	EXPECT_EQ(0, set_conc(fd, 3));
	EXPECT_EQ(3ULL, sysfs_u64(name, "concurrency"));
	EXPECT_EQ(0, sysfs_write(name, "concurrency", "4"));
	EXPECT_EQ(4ULL, sysfs_u64(name, "concurrency"));
	/* The permits still go back. */
	EXPECT_EQ(0, ks_release(other, 2));
	EXPECT_EQ(0ULL, held(fd));
	close(other);
	/* Alone: the caller may switch it off; sysfs, with a client, not. */
	EXPECT_ERRNO(EBUSY, sysfs_write(name, "concurrency", "0"));
	EXPECT_EQ(0, set_conc(fd, 0));
	EXPECT_EQ(0ULL, sysfs_u64(name, "concurrency"));
	close(fd);
}

/* A persistent limiter with no client at all: sysfs may switch it. */
TEST(conc_switch_sysfs_no_client)
{
	char name[RL_NAME_MAX];
	struct rl_config c;
	int fd;

	NAME(name, "idle");
	fd = ks_open();
	ASSERT_LE(0, fd);
	conc_cfg(&c, 0, 1, RL_CONFIG_UNLIMITED, 0);
	ASSERT_EQ(0, ks_att_cfg(fd, name, RL_ATTACH_CREATE | RL_ATTACH_EXCL |
				RL_ATTACH_PERSIST, 0600, &c));
	close(fd);
	EXPECT_EQ(0, sysfs_write(name, "concurrency", "3"));
	EXPECT_EQ(3ULL, sysfs_u64(name, "concurrency"));
	EXPECT_EQ(0, sysfs_write(name, "concurrency", "0"));
	EXPECT_EQ(0, ks_unl_name(name));
}

/* A lease (or its fallback) may not switch it under other clients. */
TEST(conc_switch_lease_busy)
{
	char name[RL_NAME_MAX];
	struct rl_lease l;
	int fd, other;

	NAME(name, "lease");
	fd = rate_named(name);
	ASSERT_LE(0, fd);
	other = sem_attach(name);
	ASSERT_LE(0, other);
	memset(&l, 0, sizeof(l));
	ASSERT_EQ(0, ks_get(fd, &l.config));
	l.fallback = l.config;
	l.expires_ns = soon();
	l.config.concurrency = 1;
	EXPECT_ERRNO(EBUSY, ioctl(fd, RL_IOC_SET_LEASE, &l));
	l.config.concurrency = 0;
	l.fallback.concurrency = 1;
	EXPECT_ERRNO(EBUSY, ioctl(fd, RL_IOC_SET_LEASE, &l));
	l.fallback.concurrency = 0;
	EXPECT_EQ(0, ioctl(fd, RL_IOC_SET_LEASE, &l));
	close(other);
	close(fd);
}

TEST_HARNESS_MAIN
