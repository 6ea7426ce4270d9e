// SPDX-License-Identifier: GPL-2.0-only
/*
 * libratelimit: rl_cycle() and rl_cycle_ex(), a permit given back and
 * taken again in one call, and what they report of the release.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "lib_test.h"

static int sem_fd(__u64 conc)
{
	struct rl_config c = ks_cfg(0, NS_PER_SEC, 1);

	c.flags = RL_CONFIG_UNLIMITED;
	c.concurrency = conc;
	return ks_lib_open(0, &c);
}

static __u64 held(int fd)
{
	struct rl_client_config cc;

	return rl_get_client(fd, &cc) ? POISON64 : cc.held;
}

TEST(cycle_trades_permits)
{
	uint64_t released = POISON64;
	int fd = sem_fd(2);

	ASSERT_LE(0, fd);
	EXPECT_LIB(0, rl_cycle(fd, 0, 1, &released));
	EXPECT_EQ(0ULL, released);
	EXPECT_EQ(1ULL, held(fd));
	EXPECT_LIB(0, rl_cycle(fd, 1, 2, &released));
	EXPECT_EQ(1ULL, released);
	EXPECT_EQ(2ULL, held(fd));
	EXPECT_LIB(0, rl_cycle(fd, 2, 1, NULL));
	EXPECT_EQ(1ULL, held(fd));
	rl_close(fd);
}

TEST(cycle_errors_report_nothing_released)
{
	uint64_t released = POISON64;
	int fd = sem_fd(2), fresh = rl_open(0);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, fresh);
	EXPECT_LIB(-EBADFD, rl_cycle(fresh, 0, 1, NULL));
	rl_close(fresh);
	EXPECT_LIB(0, rl_cycle(fd, 0, 1, NULL));
	EXPECT_LIB(-EINVAL, rl_cycle(fd, 2, 1, &released));
	EXPECT_EQ(0ULL, released);
	EXPECT_LIB(-EINVAL, rl_cycle(fd, 1, 3, &released));
	EXPECT_EQ(0ULL, released);
	EXPECT_LIB(-EINVAL, rl_cycle(fd, 1, 0, &released));
	EXPECT_EQ(1ULL, held(fd));
	EXPECT_LIB(-EINVAL, rl_cycle_ex(fd, NULL));
	rl_close(fd);
}

TEST(cycle_ex_nonblock)
{
	struct rl_cycle c;
	int fd = sem_fd(1);

	ASSERT_LE(0, fd);
	EXPECT_LIB(0, rl_cycle(fd, 0, 1, NULL));
	memset(&c, 0, sizeof(c));
	c.release = 0;
	c.acquire.count = 1;
	c.acquire.deadline_ns = RL_DEADLINE_NONE;
	c.acquire.flags = RL_ACQUIRE_NONBLOCK;
	EXPECT_LIB(-EAGAIN, rl_cycle_ex(fd, &c));
	EXPECT_NE(0ULL, c.acquire.ready_ns);
	c.release = 1;
	EXPECT_LIB(0, rl_cycle_ex(fd, &c));
	EXPECT_EQ(0ULL, c.release);
	EXPECT_EQ(1ULL, held(fd));
	rl_close(fd);
}

TEST_HARNESS_MAIN
