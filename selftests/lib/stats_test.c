// SPDX-License-Identifier: GPL-2.0-only
/*
 * libratelimit: rl_get_stats(), the counters of a limiter, and its errors.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "lib_test.h"

TEST(stats_fresh_limiter)
{
	struct rl_stats st;
	int fd = ks_lib_slow_fd(10), i;

	ASSERT_LE(0, fd);
	/* The caller's struct may hold anything: the inputs are zeroed. */
	memset(&st, POISON_BYTE, sizeof(st));
	EXPECT_LIB(0, rl_get_stats(fd, &st));
	EXPECT_EQ(0U, st.flags);
	EXPECT_EQ(0U, st.reserved0);
	EXPECT_EQ(0ULL, st.granted);
	EXPECT_EQ(0ULL, st.requests);
	EXPECT_EQ(0ULL, st.waiters);
	EXPECT_EQ(10ULL, st.available);
	EXPECT_EQ(0ULL, st.held);
	EXPECT_EQ(1ULL, st.clients);
	EXPECT_EQ(0ULL, st.refunded);
	for (i = 0; i < (int)(sizeof(st) / sizeof(__u64)); i++)
		EXPECT_NE(POISON64, ((__u64 *)&st)[i]);
	rl_close(fd);
}

TEST(stats_count_outcomes)
{
	struct rl_stats st;
	int fd = ks_lib_slow_fd(10);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire(fd, 4));
	ASSERT_LIB(0, rl_try_acquire(fd, 5, NULL));
	ASSERT_LIB(-EAGAIN, rl_try_acquire(fd, 2, NULL));
	ASSERT_LIB(-ETIMEDOUT, rl_acquire_timeout(fd, 2, 10 * NS_PER_MS,
						  NULL));
	ASSERT_LIB(-ETIMEDOUT, rl_acquire_timeout(fd, 2, 0, NULL));
	ASSERT_LIB(0, rl_refund(fd, 3));
	/* Invalid requests are not counted. */
	ASSERT_LIB(-EINVAL, rl_acquire(fd, 0));
	EXPECT_LIB(0, rl_get_stats(fd, &st));
	EXPECT_EQ(9ULL, st.granted);
	EXPECT_EQ(5ULL, st.requests);
	EXPECT_EQ(2ULL, st.immediate);
	EXPECT_EQ(0ULL, st.waited);
	EXPECT_EQ(1ULL, st.rejected);
	EXPECT_EQ(2ULL, st.timeouts);
	EXPECT_EQ(3ULL, st.refunded);
	EXPECT_EQ(4ULL, st.available);
	rl_close(fd);
}

TEST(stats_count_waits)
{
	struct rl_stats st;
	int fd = ks_lib_fd(10, 1);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire(fd, 1));
	ASSERT_LIB(0, rl_acquire(fd, 1));	/* about 100 ms */
	EXPECT_LIB(0, rl_get_stats(fd, &st));
	EXPECT_EQ(2ULL, st.granted);
	EXPECT_EQ(1ULL, st.immediate);
	EXPECT_EQ(1ULL, st.waited);
	EXPECT_LE(50 * NS_PER_MS, st.wait_ns_total);
	EXPECT_EQ(st.wait_ns_total, st.wait_ns_max);
	rl_close(fd);
}

TEST(stats_clients_of_named)
{
	struct rl_config c = ks_cfg(10, NS_PER_SEC, 10);
	struct rl_stats st;
	char name[64];
	int a, b;

	ks_lib_name(name, sizeof(name), "stats");
	a = rl_open_named(name, RL_ATTACH_CREATE, 0600, &c);
	ASSERT_LE(0, a);
	b = rl_open_named(name, 0, 0, NULL);
	ASSERT_LE(0, b);
	EXPECT_LIB(0, rl_get_stats(a, &st));
	EXPECT_EQ(2ULL, st.clients);
	rl_close(b);
	EXPECT_LIB(0, rl_get_stats(a, &st));
	EXPECT_EQ(1ULL, st.clients);
	rl_close(a);
}

TEST(stats_errors)
{
	struct rl_stats st;
	int fd = rl_open(0);

	ASSERT_LE(0, fd);
	EXPECT_LIB(-EBADFD, rl_get_stats(fd, &st));
	EXPECT_LIB(-EINVAL, rl_get_stats(fd, NULL));
	EXPECT_LIB(-EBADF, rl_get_stats(-1, &st));
	rl_close(fd);
}

TEST_HARNESS_MAIN
