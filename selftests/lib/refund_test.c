// SPDX-License-Identifier: GPL-2.0-only
/*
 * libratelimit: rl_refund(), rate tokens given back. The bucket takes back
 * what an fd acquired and did not refund yet, never more than the burst.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "lib_test.h"

static __u64 refunded(int fd)
{
	struct rl_stats st;

	return rl_get_stats(fd, &st) ? POISON64 : st.refunded;
}

TEST(refund_returns_tokens)
{
	int fd = ks_lib_slow_fd(10);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire(fd, 8));
	EXPECT_EQ(2ULL, ks_lib_avail(fd));
	EXPECT_LIB(0, rl_refund(fd, 5));
	EXPECT_EQ(7ULL, ks_lib_avail(fd));
	EXPECT_EQ(5ULL, refunded(fd));
	/* The refunded tokens can be taken again. */
	EXPECT_LIB(0, rl_try_acquire(fd, 7, NULL));
	rl_close(fd);
}

TEST(refund_capped_by_burst)
{
	int fd = ks_lib_fd(1000, 10);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire(fd, 10));
	/* Let the bucket refill, then refund: it holds the burst at most. */
	sleep_ms(50);
	EXPECT_LIB(0, rl_refund(fd, 10));
	EXPECT_EQ(10ULL, ks_lib_avail(fd));
	rl_close(fd);
}

TEST(refund_errors)
{
	int fd = ks_lib_slow_fd(10), raw = rl_open(0);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, raw);
	EXPECT_LIB(-EINVAL, rl_refund(fd, 1));		/* nothing acquired */
	ASSERT_LIB(0, rl_acquire(fd, 4));
	EXPECT_LIB(-EINVAL, rl_refund(fd, 0));
	EXPECT_LIB(-EINVAL, rl_refund(fd, 5));		/* acquired 4 */
	EXPECT_LIB(0, rl_refund(fd, 3));
	EXPECT_LIB(-EINVAL, rl_refund(fd, 2));		/* 1 left */
	EXPECT_LIB(0, rl_refund(fd, 1));
	EXPECT_EQ(10ULL, ks_lib_avail(fd));
	EXPECT_LIB(-EBADFD, rl_refund(raw, 1));
	EXPECT_LIB(-EBADF, rl_refund(-1, 1));
	rl_close(raw);
	rl_close(fd);
}

TEST(refund_per_fd)
{
	struct rl_config c = ks_cfg(1, 1000 * NS_PER_SEC, 10);
	char name[64];
	int a, b;

	ks_lib_name(name, sizeof(name), "refund");
	a = rl_open_named(name, RL_ATTACH_CREATE, 0600, &c);
	ASSERT_LE(0, a);
	b = rl_open_named(name, 0, 0, NULL);
	ASSERT_LE(0, b);
	ASSERT_LIB(0, rl_acquire(a, 6));
	/* Only what went through the fd itself comes back through it. */
	EXPECT_LIB(-EINVAL, rl_refund(b, 1));
	EXPECT_LIB(0, rl_refund(a, 6));
	EXPECT_EQ(10ULL, ks_lib_avail(b));
	rl_close(b);
	rl_close(a);
}

TEST(refund_wakes_waiter)
{
	struct waiter w;
	int fd = ks_lib_slow_fd(4);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire(fd, 4));
	ASSERT_EQ(0, waiter_start(&w, fd, 2, now_ns() + 20 * NS_PER_SEC, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 5000));
	EXPECT_LIB(0, rl_refund(fd, 2));
	ASSERT_EQ(0, waiter_join(&w, 5000));
	EXPECT_EQ(0, w.ret);
	EXPECT_EQ(0ULL, ks_lib_avail(fd));
	rl_close(fd);
}

TEST_HARNESS_MAIN
