// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of RL_IOC_CYCLE: giving back concurrency permits and
 * acquiring again in one call. Validation (nothing given back on
 * -EINVAL, -EFAULT), the release field written back, service of the
 * requests already waiting first, a signal while waiting (with and
 * without SA_RESTART: nothing given back twice), and the counters.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <sys/mman.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"

#define SAFETY_NS	(3 * NS_PER_SEC)
#define NAME(buf, tag)	snprintf(buf, sizeof(buf), "cyc-%d-%s", getpid(), tag)

static void cyc_init(struct rl_cycle *c, __u64 release, __u64 count,
		     __u64 deadline, __u32 flags)
{
	memset(c, 0, sizeof(*c));
	c->release = release;
	c->acquire.count = count;
	c->acquire.deadline_ns = deadline;
	c->acquire.flags = flags;
}

/* RL_IOC_CYCLE of @release then @count, nonblocking: 0 or -1 (errno). */
static int cyc(int fd, __u64 release, __u64 count, struct rl_cycle *c)
{
	cyc_init(c, release, count, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK);
	return ioctl(fd, RL_IOC_CYCLE, c);
}

/* Permits @fd holds, or POISON64. */
static __u64 held(int fd)
{
	struct rl_client_config cc;

	return ks_client_get(fd, &cc) ? POISON64 : cc.held;
}

/* A limiter of @conc permits, no rate limit: private, or named @name. */
static int sem_fd(const char *name, __u64 conc)
{
	struct rl_config c;
	int fd = ks_open();

	if (fd < 0)
		return -1;
	memset(&c, 0, sizeof(c));
	c.period_ns = NS_PER_SEC;
	c.burst = 1;
	c.flags = RL_CONFIG_UNLIMITED;
	c.concurrency = conc;
	if (name ? ks_att_cfg(fd, name, RL_ATTACH_CREATE | RL_ATTACH_EXCL,
			      0600, &c) :
		   ioctl(fd, RL_IOC_SET_CONFIG, &c)) {
		close(fd);
		return -1;
	}
	return fd;
}

TEST(features_cycle)
{
	struct rl_features f;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, RL_IOC_GET_FEATURES, &f));
	EXPECT_EQ(1ULL << 16, f.ioctls & (1ULL << _IOC_NR(RL_IOC_CYCLE)));
	EXPECT_EQ(16, _IOC_NR(RL_IOC_CYCLE));
	EXPECT_EQ(96, _IOC_SIZE(RL_IOC_CYCLE));
	close(fd);
}

TEST(cycle_unconfigured_ebadfd)
{
	struct rl_cycle c;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	EXPECT_ERRNO(EBADFD, cyc(fd, 0, 1, &c));
	close(fd);
}

TEST(cycle_trades_a_permit)
{
	struct rl_cycle c;
	struct rl_stats st;
	int fd = sem_fd(NULL, 1), i;

	ASSERT_LE(0, fd);
	/* A release of 0 is a plain acquire. */
	ASSERT_EQ(0, cyc(fd, 0, 1, &c));
	EXPECT_EQ(0ULL, c.release);
	EXPECT_EQ(1ULL, held(fd));
	EXPECT_ERRNO(EAGAIN, cyc(fd, 0, 1, &c));
	EXPECT_EQ(1ULL, held(fd));
	for (i = 0; i < 100; i++) {
		ASSERT_EQ(0, cyc(fd, 1, 1, &c));
		EXPECT_EQ(0ULL, c.release);
	}
	EXPECT_EQ(1ULL, held(fd));
	ASSERT_EQ(0, ks_stats(fd, &st));
	EXPECT_EQ(1ULL, st.held);
	EXPECT_EQ(102ULL, st.requests);
	EXPECT_EQ(101ULL, st.granted);
	EXPECT_EQ(1ULL, st.rejected);
	close(fd);
}

TEST(cycle_more_than_held_einval_nothing_done)
{
	struct rl_cycle c;
	int fd = sem_fd(NULL, 3);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, cyc(fd, 0, 2, &c));
	EXPECT_ERRNO(EINVAL, cyc(fd, 3, 1, &c));
	EXPECT_EQ(3ULL, c.release);
	EXPECT_EQ(2ULL, held(fd));
	/* Never grantable: more than the limit; nothing given back. */
	EXPECT_ERRNO(EINVAL, cyc(fd, 2, 4, &c));
	EXPECT_EQ(2ULL, c.release);
	EXPECT_EQ(2ULL, held(fd));
	/* Give back 2, take 1: held 1. */
	ASSERT_EQ(0, cyc(fd, 2, 1, &c));
	EXPECT_EQ(1ULL, held(fd));
	close(fd);
}

TEST(cycle_bad_fields_einval)
{
	struct rl_cycle c;
	int fd = sem_fd(NULL, 2);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, cyc(fd, 0, 1, &c));
	cyc_init(&c, 1, 1, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK);
	c.flags = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_CYCLE, &c));
	cyc_init(&c, 1, 1, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK);
	c.reserved0 = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_CYCLE, &c));
	cyc_init(&c, 1, 1, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK);
	c.reserved[1] = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_CYCLE, &c));
	cyc_init(&c, 1, 0, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK);
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_CYCLE, &c));
	cyc_init(&c, 1, 1, RL_DEADLINE_NONE, 1U << 30);
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_CYCLE, &c));
	cyc_init(&c, 1, 1, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK);
	c.acquire.reserved[0] = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_CYCLE, &c));
	cyc_init(&c, 1, 1, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK);
	c.acquire.priority = RL_PRIO_USER + 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_CYCLE, &c));
	/* Nothing was given back by any of them. */
	EXPECT_EQ(1ULL, held(fd));
	close(fd);
}

TEST(cycle_efault_nothing_done)
{
	struct rl_cycle *c;
	int fd = sem_fd(NULL, 2);
	struct rl_cycle k;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, cyc(fd, 0, 1, &k));
	EXPECT_ERRNO(EFAULT, ioctl(fd, RL_IOC_CYCLE, NULL));
	c = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, c);
	cyc_init(c, 1, 1, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK);
	ASSERT_EQ(0, mprotect(c, 4096, PROT_READ));
	/* Readable, not writable: fails before anything is given back. */
	EXPECT_ERRNO(EFAULT, ioctl(fd, RL_IOC_CYCLE, c));
	EXPECT_EQ(1ULL, held(fd));
	munmap(c, 4096);
	close(fd);
}

TEST(cycle_rate_limiter_without_permits)
{
	struct rl_cycle c;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 2, 0));
	ASSERT_EQ(0, cyc(fd, 0, 1, &c));
	EXPECT_ERRNO(EINVAL, cyc(fd, 1, 1, &c));
	EXPECT_EQ(1ULL, ks_avail(fd));
	close(fd);
}

TEST(cycle_serves_the_waiting_first)
{
	char name[RL_NAME_MAX];
	struct waiter w;
	struct rl_cycle c;
	int a, b;

	NAME(name, "wait");
	a = sem_fd(name, 1);
	ASSERT_LE(0, a);
	b = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 1);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, cyc(a, 0, 1, &c));
	ASSERT_EQ(0, waiter_start(&w, b, 1, now_ns() + SAFETY_NS, 0));
	ASSERT_EQ(0, ks_wait_waiters(a, 1, 2000));
	/* The permit goes to the waiter; the cycle finds none left. */
	EXPECT_ERRNO(EAGAIN, cyc(a, 1, 1, &c));
	EXPECT_EQ(0ULL, c.release);
	ASSERT_EQ(0, waiter_join(&w, 2000));
	EXPECT_EQ(0, w.ret);
	EXPECT_EQ(0ULL, held(a));
	EXPECT_EQ(1ULL, held(b));
	/* Now a waits, blocking, behind nobody; b's cycle serves it first. */
	ASSERT_EQ(0, waiter_start(&w, a, 1, now_ns() + SAFETY_NS, 0));
	ASSERT_EQ(0, ks_wait_waiters(a, 1, 2000));
	cyc_init(&c, 1, 1, now_ns() + 200 * NS_PER_MS, 0);
	EXPECT_ERRNO(ETIMEDOUT, ioctl(b, RL_IOC_CYCLE, &c));
	EXPECT_EQ(0ULL, c.release);
	ASSERT_EQ(0, waiter_join(&w, 2000));
	EXPECT_EQ(0, w.ret);
	EXPECT_EQ(1ULL, held(a));
	EXPECT_EQ(0ULL, held(b));
	close(b);
	close(a);
}

struct later {
	int fd;
	pthread_t target;
};

/* Signal the cycling thread at 100 ms, release @fd's permit at 300 ms. */
static void *release_later(void *arg)
{
	struct later *l = arg;

	sleep_ms(100);
	pthread_kill(l->target, SIGALRM);
	sleep_ms(200);
	ks_release(l->fd, 1);
	return NULL;
}

/*
 * A cycle that gave its permit to a waiter and sleeps is hit by a signal:
 * with SA_RESTART it restarts with release 0 (it holds none, so a second
 * release would fail with EINVAL) and is granted when the other releases.
 */
static void cycle_signal(struct __test_metadata *_metadata, int restart)
{
	char name[RL_NAME_MAX];
	struct waiter w;
	struct rl_cycle c;
	struct later l;
	pthread_t th;
	int a, b, ret, err;

	NAME(name, restart ? "sigr" : "sig");
	a = sem_fd(name, 1);
	ASSERT_LE(0, a);
	b = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 1);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, catch_signal(SIGALRM, restart ? SA_RESTART : 0));
	ASSERT_EQ(0, cyc(a, 0, 1, &c));
	ASSERT_EQ(0, waiter_start(&w, b, 1, now_ns() + SAFETY_NS, 0));
	ASSERT_EQ(0, ks_wait_waiters(a, 1, 2000));
	l = (struct later){ .fd = b, .target = pthread_self() };
	ASSERT_EQ(0, pthread_create(&th, NULL, release_later, &l));
	cyc_init(&c, 1, 1, now_ns() + SAFETY_NS, 0);
	ret = ioctl(a, RL_IOC_CYCLE, &c);
	err = errno;
	EXPECT_EQ(0ULL, c.release);
	if (restart) {
		EXPECT_EQ(0, ret) TH_LOG("errno %d", err);
		EXPECT_EQ(1ULL, held(a));
	} else {
		EXPECT_EQ(-1, ret);
		EXPECT_EQ(EINTR, err);
		EXPECT_EQ(0ULL, held(a));
	}
	EXPECT_LE(1, signal_hits());
	ASSERT_EQ(0, waiter_join(&w, 2000));
	EXPECT_EQ(0, w.ret);
	pthread_join(th, NULL);
	close(b);
	close(a);
}

TEST(cycle_signal_restart_gives_back_once)
{
	cycle_signal(_metadata, 1);
}

TEST(cycle_signal_eintr_gave_back)
{
	cycle_signal(_metadata, 0);
}

struct poller {
	int fd;
	int ret;
	__u64 t;
};

static void *poll_fn(void *arg)
{
	struct poller *pl = arg;
	struct pollfd p = { .fd = pl->fd, .events = POLLIN };

	pl->ret = poll(&p, 1, 3000);
	pl->t = now_ns();
	return NULL;
}

TEST(cycle_wakes_pollers)
{
	char name[RL_NAME_MAX];
	struct poller pl;
	struct rl_cycle c;
	pthread_t th;
	__u64 t0;
	int a, b;

	NAME(name, "poll");
	a = sem_fd(name, 2);
	ASSERT_LE(0, a);
	b = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 1);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, cyc(a, 0, 2, &c));
	pl = (struct poller){ .fd = b, .ret = -2 };
	ASSERT_EQ(0, pthread_create(&th, NULL, poll_fn, &pl));
	sleep_ms(200);
	/* Give back 2, take 1: one is free, the sleeping poller hears. */
	t0 = now_ns();
	ASSERT_EQ(0, cyc(a, 2, 1, &c));
	pthread_join(th, NULL);
	EXPECT_EQ(1, pl.ret);
	EXPECT_GT(t0 + 1500 * NS_PER_MS, pl.t);
	EXPECT_EQ(1ULL, held(a));
	close(b);
	close(a);
}

TEST_HARNESS_MAIN
