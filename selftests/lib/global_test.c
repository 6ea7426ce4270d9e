// SPDX-License-Identifier: GPL-2.0-only
/*
 * libratelimit: rl_deposit(), rl_set_lease() and rl_get_demand(), the
 * calls of a global-limits agent. The kernel side is tested in
 * ../ratelimit_global_test.c; here, the library's wrapping: outputs,
 * errors, errno left alone.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "lib_test.h"

/* A fed limiter (no refill) with burst @burst, holding @burst tokens. */
static int fed_fd(__u64 burst)
{
	struct rl_config c = ks_cfg(1, NS_PER_SEC, burst);

	c.flags = RL_CONFIG_FED;
	return ks_lib_open(0, &c);
}

TEST(deposit_excess)
{
	uint64_t excess = POISON64;
	int fd = fed_fd(10);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_try_acquire(fd, 10, NULL));
	EXPECT_LIB(0, rl_deposit(fd, 4, &excess));
	EXPECT_EQ(0ULL, (__u64)excess);
	EXPECT_EQ(4ULL, ks_lib_avail(fd));
	EXPECT_LIB(0, rl_deposit(fd, 9, &excess));
	EXPECT_EQ(3ULL, (__u64)excess);
	EXPECT_EQ(10ULL, ks_lib_avail(fd));
	EXPECT_LIB(0, rl_deposit(fd, 1, NULL));
	rl_close(fd);
}

TEST(deposit_errors)
{
	int fd = ks_lib_slow_fd(10), fed = fed_fd(10), raw = rl_open(0);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, fed);
	ASSERT_LE(0, raw);
	EXPECT_LIB(-EINVAL, rl_deposit(fd, 1, NULL));	/* not fed */
	EXPECT_LIB(-EINVAL, rl_deposit(fed, 0, NULL));
	EXPECT_LIB(-EBADFD, rl_deposit(raw, 1, NULL));
	EXPECT_LIB(-EBADF, rl_deposit(-1, 1, NULL));
	rl_close(raw);
	rl_close(fed);
	rl_close(fd);
}

TEST(lease_and_fallback)
{
	struct rl_lease l;
	struct rl_config c;
	int fd = ks_lib_slow_fd(10);

	ASSERT_LE(0, fd);
	memset(&l, 0, sizeof(l));
	l.expires_ns = rl_now_ns() + 60 * NS_PER_SEC;
	l.config = ks_cfg(500, NS_PER_SEC, 50);
	l.fallback = ks_cfg(7, NS_PER_SEC, 3);
	EXPECT_LIB(0, rl_set_lease(fd, &l));
	ASSERT_LIB(0, rl_get_config(fd, &c));
	EXPECT_EQ(500ULL, c.rate);
	/* Ending the lease now applies the fallback. */
	l.expires_ns = 0;
	EXPECT_LIB(0, rl_set_lease(fd, &l));
	ASSERT_LIB(0, rl_get_config(fd, &c));
	EXPECT_EQ(7ULL, c.rate);
	EXPECT_EQ(3ULL, c.burst);
	rl_close(fd);
}

TEST(lease_errors)
{
	int fd = ks_lib_slow_fd(10), raw = rl_open(0);
	struct rl_lease l;
	struct rl_config c;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, raw);
	memset(&l, 0, sizeof(l));
	l.expires_ns = rl_now_ns() + 60 * NS_PER_SEC;
	l.config = ks_cfg(500, NS_PER_SEC, 50);
	EXPECT_LIB(-EINVAL, rl_set_lease(fd, NULL));
	/* A fallback of period 0 is invalid: nothing changes. */
	EXPECT_LIB(-EINVAL, rl_set_lease(fd, &l));
	ASSERT_LIB(0, rl_get_config(fd, &c));
	EXPECT_EQ(1ULL, c.rate);
	l.fallback = ks_cfg(7, NS_PER_SEC, 3);
	EXPECT_LIB(-EBADFD, rl_set_lease(raw, &l));
	rl_close(raw);
	rl_close(fd);
}

TEST(demand_counts)
{
	int fd = ks_lib_slow_fd(3), raw = rl_open(0);
	struct rl_demand d;
	__u64 t0 = rl_now_ns();

	ASSERT_LE(0, fd);
	ASSERT_LE(0, raw);
	ASSERT_LIB(0, rl_try_acquire(fd, 2, NULL));
	EXPECT_LIB(-EAGAIN, rl_try_acquire(fd, 3, NULL));
	memset(&d, 0xa5, sizeof(d));
	ASSERT_LIB(0, rl_get_demand(fd, &d));
	EXPECT_EQ(5ULL, d.asked);
	EXPECT_EQ(3ULL, d.refused);
	EXPECT_EQ(0ULL, d.queued);
	EXPECT_EQ(0ULL, d.busy_ns);
	EXPECT_LE(t0, d.now_ns);
	EXPECT_GE(rl_now_ns(), d.now_ns);
	EXPECT_EQ(0U, d.flags);
	EXPECT_EQ(0ULL, d.reserved[3]);
	EXPECT_LIB(-EINVAL, rl_get_demand(fd, NULL));
	EXPECT_LIB(-EBADFD, rl_get_demand(raw, &d));
	rl_close(raw);
	rl_close(fd);
}

TEST_HARNESS_MAIN
