// SPDX-License-Identifier: GPL-2.0-only
/*
 * libratelimit: rl_acquire(), rl_try_acquire(), rl_acquire_timeout(),
 * rl_acquire_ex() and rl_now_ns(): blocking, non-blocking, timeouts and
 * deadlines, with their errors as -errno and errno left alone.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "lib_test.h"

/* Slack for a QEMU guest under software emulation. */
#define LATE_NS		(2 * NS_PER_SEC)

TEST(now_ns_is_monotonic_clock)
{
	__u64 a, b, c;

	a = now_ns();
	errno = KS_ERRNO_MARK;
	b = rl_now_ns();
	EXPECT_EQ(KS_ERRNO_MARK, errno);
	c = now_ns();
	EXPECT_LE(a, b);
	EXPECT_LE(b, c);
}

TEST(acquire_within_burst)
{
	int fd = ks_lib_slow_fd(10);

	ASSERT_LE(0, fd);
	EXPECT_LIB(0, rl_acquire(fd, 4));
	EXPECT_LIB(0, rl_acquire(fd, 6));
	EXPECT_EQ(0ULL, ks_lib_avail(fd));
	rl_close(fd);
}

TEST(acquire_waits_for_tokens)
{
	/* 100 per second, burst 10: 20 more tokens take about 200 ms. */
	int fd = ks_lib_fd(100, 10);
	__u64 t;

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire(fd, 10));
	t = now_ns();
	EXPECT_LIB(0, rl_acquire(fd, 20));
	t = now_ns() - t;
	EXPECT_LE(150 * NS_PER_MS, t);
	EXPECT_GT(LATE_NS + 200 * NS_PER_MS, t);
	rl_close(fd);
}

TEST(acquire_errors)
{
	int fd = ks_lib_slow_fd(10), raw = rl_open(0);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, raw);
	EXPECT_LIB(-EINVAL, rl_acquire(fd, 0));
	EXPECT_LIB(-EBADFD, rl_acquire(raw, 1));
	EXPECT_LIB(-EBADF, rl_acquire(-1, 1));
	EXPECT_EQ(10ULL, ks_lib_avail(fd));
	rl_close(raw);
	rl_close(fd);
}

TEST(acquire_o_nonblock_eagain)
{
	struct rl_config c = ks_cfg(1, 1000 * NS_PER_SEC, 2);
	int fd = ks_lib_open(O_NONBLOCK, &c);

	ASSERT_LE(0, fd);
	EXPECT_LIB(0, rl_acquire(fd, 2));
	EXPECT_LIB(-EAGAIN, rl_acquire(fd, 1));
	EXPECT_LIB(-EAGAIN, rl_acquire_timeout(fd, 1, NS_PER_SEC, NULL));
	rl_close(fd);
}

TEST(try_acquire)
{
	uint64_t ready = POISON64;
	__u64 t;
	int fd = ks_lib_fd(10, 5);	/* a token every 100 ms */

	ASSERT_LE(0, fd);
	/* Granted: ready_ns is not written. */
	EXPECT_LIB(0, rl_try_acquire(fd, 5, &ready));
	EXPECT_EQ(POISON64, ready);
	/* Empty: -EAGAIN and the time 3 tokens exist, 300 ms ahead. */
	t = rl_now_ns();
	EXPECT_LIB(-EAGAIN, rl_try_acquire(fd, 3, &ready));
	EXPECT_LT(t, ready);
	EXPECT_GE(t + 300 * NS_PER_MS + LATE_NS, ready);
	EXPECT_LIB(-EAGAIN, rl_try_acquire(fd, 3, NULL));
	rl_close(fd);
}

TEST(try_acquire_errors)
{
	uint64_t ready = POISON64;
	int fd = ks_lib_slow_fd(5);

	ASSERT_LE(0, fd);
	EXPECT_LIB(-EINVAL, rl_try_acquire(fd, 6, &ready));	/* > burst */
	EXPECT_LIB(-EINVAL, rl_try_acquire(fd, 0, &ready));
	EXPECT_EQ(POISON64, ready);
	EXPECT_LIB(-EBADF, rl_try_acquire(-1, 1, &ready));
	EXPECT_EQ(POISON64, ready);
	EXPECT_EQ(5ULL, ks_lib_avail(fd));
	rl_close(fd);
}

TEST(try_acquire_paused)
{
	struct rl_config c = ks_cfg(0, NS_PER_SEC, 1);	/* rate 0: paused */
	uint64_t ready = 0;
	int fd = ks_lib_open(0, &c);

	ASSERT_LE(0, fd);
	/* A fresh limiter starts full: take its token, then wait forever. */
	EXPECT_LIB(0, rl_try_acquire(fd, 1, NULL));
	EXPECT_LIB(-EAGAIN, rl_try_acquire(fd, 1, &ready));
	EXPECT_EQ(RL_DEADLINE_NONE, ready);
	rl_close(fd);
}

TEST(timeout_expires_all_or_nothing)
{
	uint64_t wait = POISON64;
	__u64 t;
	int fd = ks_lib_slow_fd(10);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire(fd, 5));
	/* 8 of the 5 there: times out, the 5 stay in the bucket. */
	t = now_ns();
	EXPECT_LIB(-ETIMEDOUT, rl_acquire_timeout(fd, 8, 100 * NS_PER_MS,
						  &wait));
	t = now_ns() - t;
	EXPECT_LE(100 * NS_PER_MS, t);
	EXPECT_GT(100 * NS_PER_MS + LATE_NS, t);
	EXPECT_EQ(POISON64, wait);
	EXPECT_EQ(5ULL, ks_lib_avail(fd));
	rl_close(fd);
}

TEST(timeout_zero)
{
	uint64_t wait = POISON64;
	int fd = ks_lib_slow_fd(2);

	ASSERT_LE(0, fd);
	/* A zero timeout is a try: granted when there, else -ETIMEDOUT. */
	EXPECT_LIB(0, rl_acquire_timeout(fd, 2, 0, &wait));
	EXPECT_EQ(0ULL, wait);
	EXPECT_LIB(-ETIMEDOUT, rl_acquire_timeout(fd, 1, 0, NULL));
	rl_close(fd);
}

TEST(timeout_granted_reports_wait)
{
	uint64_t wait = POISON64;
	int fd = ks_lib_fd(10, 1);	/* a token every 100 ms */

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire(fd, 1));
	EXPECT_LIB(0, rl_acquire_timeout(fd, 2, 10 * NS_PER_SEC, &wait));
	EXPECT_LE(150 * NS_PER_MS, wait);
	EXPECT_GT(200 * NS_PER_MS + LATE_NS, wait);
	rl_close(fd);
}

TEST(timeout_forever)
{
	int fd = ks_lib_fd(20, 1);

	ASSERT_LE(0, fd);
	/* No deadline, and timeouts too long for one, wait as long as needed. */
	EXPECT_LIB(0, rl_acquire_timeout(fd, 2, RL_DEADLINE_NONE, NULL));
	EXPECT_LIB(0, rl_acquire_timeout(fd, 2, INT64_MAX, NULL));
	EXPECT_LIB(0, rl_acquire_timeout(fd, 2, RL_DEADLINE_NONE - 1, NULL));
	rl_close(fd);
}

TEST(timeout_errors)
{
	int fd = ks_lib_slow_fd(2);

	ASSERT_LE(0, fd);
	EXPECT_LIB(-EINVAL, rl_acquire_timeout(fd, 0, NS_PER_SEC, NULL));
	EXPECT_LIB(-EBADF, rl_acquire_timeout(-1, 1, NS_PER_SEC, NULL));
	EXPECT_EQ(2ULL, ks_lib_avail(fd));
	rl_close(fd);
}

static void *kick(void *arg)
{
	pthread_t *main = arg;

	sleep_ms(200);
	pthread_kill(*main, SIGUSR1);
	return NULL;
}

TEST(acquire_signal_eintr)
{
	pthread_t self = pthread_self(), th;
	int fd = ks_lib_slow_fd(1);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire(fd, 1));
	ASSERT_EQ(0, catch_signal(SIGUSR1, 0));
	ASSERT_EQ(0, pthread_create(&th, NULL, kick, &self));
	EXPECT_LIB(-EINTR, rl_acquire_timeout(fd, 1, 20 * NS_PER_SEC, NULL));
	EXPECT_EQ(1, signal_hits());
	pthread_join(th, NULL);
	rl_close(fd);
}

TEST(acquire_ex_deadline)
{
	struct rl_acquire req;
	int fd = ks_lib_slow_fd(1);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire(fd, 1));
	/* A deadline in the past: -ETIMEDOUT at once, with a ready time. */
	memset(&req, 0, sizeof(req));
	req.count = 1;
	req.deadline_ns = rl_now_ns() - 1;
	EXPECT_LIB(-ETIMEDOUT, rl_acquire_ex(fd, &req));
	EXPECT_LT(rl_now_ns(), req.ready_ns);
	/* PREDICT: the token is 1000 s away, past a 10 s deadline. */
	memset(&req, 0, sizeof(req));
	req.count = 1;
	req.deadline_ns = rl_now_ns() + 10 * NS_PER_SEC;
	req.flags = RL_ACQUIRE_PREDICT;
	EXPECT_LIB(-ETIMEDOUT, rl_acquire_ex(fd, &req));
	EXPECT_LT(req.deadline_ns, req.ready_ns);
	rl_close(fd);
}

TEST(acquire_ex_outputs)
{
	struct rl_acquire req;
	int fd = ks_lib_fd(10, 1);

	ASSERT_LE(0, fd);
	memset(&req, 0, sizeof(req));
	req.count = 2;
	req.deadline_ns = RL_DEADLINE_NONE;
	req.wait_ns = POISON64;
	req.lag_ns = POISON64;
	EXPECT_LIB(0, rl_acquire_ex(fd, &req));
	EXPECT_LE(50 * NS_PER_MS, req.wait_ns);
	EXPECT_GT(100 * NS_PER_MS + LATE_NS, req.wait_ns);
	EXPECT_EQ(0ULL, req.lag_ns);
	rl_close(fd);
}

TEST(acquire_ex_errors)
{
	struct rl_acquire req;
	int fd = ks_lib_slow_fd(1);

	ASSERT_LE(0, fd);
	EXPECT_LIB(-EINVAL, rl_acquire_ex(fd, NULL));
	memset(&req, 0, sizeof(req));
	req.count = 1;
	req.deadline_ns = RL_DEADLINE_NONE;
	req.flags = 1U << 31;
	EXPECT_LIB(-EINVAL, rl_acquire_ex(fd, &req));
	req.flags = 0;
	req.reserved[1] = 1;
	EXPECT_LIB(-EINVAL, rl_acquire_ex(fd, &req));
	req.reserved[1] = 0;
	req.priority = RL_PRIO_USER + 1;
	EXPECT_LIB(-EINVAL, rl_acquire_ex(fd, &req));
	req.priority = 0;
	req.deadline_ns = (__u64)INT64_MAX + 1;	/* neither forever nor valid */
	EXPECT_LIB(-EINVAL, rl_acquire_ex(fd, &req));
	EXPECT_EQ(1ULL, ks_lib_avail(fd));
	rl_close(fd);
}

TEST_HARNESS_MAIN
