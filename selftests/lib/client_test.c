// SPDX-License-Identifier: GPL-2.0-only
/*
 * libratelimit: rl_set_client() and rl_get_client(), an fd's priority,
 * weight and cap, and the permits and tokens counted per fd.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "lib_test.h"

static struct rl_client_config cc_of(__u32 prio, __u32 weight, __u64 cap)
{
	struct rl_client_config cc;

	memset(&cc, 0, sizeof(cc));
	cc.priority = prio;
	cc.weight = weight;
	cc.cap = cap;
	return cc;
}

TEST(client_defaults)
{
	struct rl_client_config cc;
	int fd = ks_lib_slow_fd(10);

	ASSERT_LE(0, fd);
	memset(&cc, POISON_BYTE, sizeof(cc));
	EXPECT_LIB(0, rl_get_client(fd, &cc));
	EXPECT_EQ((__u32)RL_PRIO_MID, cc.priority);
	EXPECT_EQ(1U, cc.weight);
	EXPECT_EQ(0ULL, cc.cap);
	EXPECT_EQ(0U, cc.flags);
	EXPECT_EQ(0ULL, cc.held);
	EXPECT_EQ(0ULL, cc.granted);
	EXPECT_EQ(0ULL, cc.reserved[0]);
	EXPECT_EQ(0ULL, cc.reserved[2]);
	rl_close(fd);
}

TEST(client_roundtrip)
{
	struct rl_client_config cc = cc_of(RL_PRIO_HIGH, 7, 5), got;
	int fd = ks_lib_slow_fd(10);

	ASSERT_LE(0, fd);
	EXPECT_LIB(0, rl_set_client(fd, &cc));
	EXPECT_LIB(0, rl_get_client(fd, &got));
	EXPECT_EQ((__u32)RL_PRIO_HIGH, got.priority);
	EXPECT_EQ(7U, got.weight);
	EXPECT_EQ(5ULL, got.cap);
	/* 0 means the defaults. */
	cc = cc_of(0, 0, 0);
	EXPECT_LIB(0, rl_set_client(fd, &cc));
	EXPECT_LIB(0, rl_get_client(fd, &got));
	EXPECT_EQ((__u32)RL_PRIO_MID, got.priority);
	EXPECT_EQ(1U, got.weight);
	rl_close(fd);
}

TEST(client_get_counts_granted_passes_back)
{
	struct rl_client_config got;
	int fd = ks_lib_slow_fd(10);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire(fd, 3));
	EXPECT_LIB(0, rl_get_client(fd, &got));
	EXPECT_EQ(3ULL, got.granted);
	/* The outputs of GET are ignored on SET: the struct goes back. */
	got.weight = 2;
	EXPECT_LIB(0, rl_set_client(fd, &got));
	EXPECT_LIB(0, rl_get_client(fd, &got));
	EXPECT_EQ(2U, got.weight);
	EXPECT_EQ(3ULL, got.granted);
	rl_close(fd);
}

TEST(client_cap_limits_fd)
{
	struct rl_config c = ks_cfg(1, 1000 * NS_PER_SEC, 10);
	struct rl_client_config cc = cc_of(0, 0, 2);
	char name[64];
	int fd, other;

	ks_lib_name(name, sizeof(name), "cap");
	fd = rl_open_named(name, RL_ATTACH_CREATE, 0600, &c);
	ASSERT_LE(0, fd);
	other = rl_open_named(name, 0, 0, NULL);
	ASSERT_LE(0, other);
	/* 2 tokens per period (1000 s) for this fd, 8 left for others. */
	EXPECT_LIB(0, rl_set_client(fd, &cc));
	EXPECT_LIB(0, rl_try_acquire(fd, 2, NULL));
	EXPECT_LIB(-EAGAIN, rl_try_acquire(fd, 1, NULL));
	EXPECT_EQ(8ULL, ks_lib_avail(fd));
	EXPECT_LIB(0, rl_try_acquire(other, 8, NULL));
	rl_close(other);
	rl_close(fd);
}

TEST(client_errors)
{
	struct rl_client_config cc = cc_of(RL_PRIO_USER + 1, 0, 0), got;
	int fd = ks_lib_slow_fd(10), raw = rl_open(0);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, raw);
	EXPECT_LIB(-EINVAL, rl_set_client(fd, &cc));
	cc = cc_of(0, RL_WEIGHT_MAX + 1, 0);
	EXPECT_LIB(-EINVAL, rl_set_client(fd, &cc));
	cc = cc_of(0, 0, 0);
	cc.flags = 1;
	EXPECT_LIB(-EINVAL, rl_set_client(fd, &cc));
	cc = cc_of(0, 0, 0);
	cc.reserved[1] = 1;
	EXPECT_LIB(-EINVAL, rl_set_client(fd, &cc));
	EXPECT_LIB(-EINVAL, rl_set_client(fd, NULL));
	EXPECT_LIB(-EINVAL, rl_get_client(fd, NULL));
	/* Nothing changed. */
	EXPECT_LIB(0, rl_get_client(fd, &got));
	EXPECT_EQ((__u32)RL_PRIO_MID, got.priority);
	EXPECT_EQ(1U, got.weight);
	cc = cc_of(0, 0, 0);
	EXPECT_LIB(-EBADFD, rl_set_client(raw, &cc));
	EXPECT_LIB(-EBADFD, rl_get_client(raw, &got));
	EXPECT_LIB(-EBADF, rl_get_client(-1, &got));
	rl_close(raw);
	rl_close(fd);
}

TEST_HARNESS_MAIN
