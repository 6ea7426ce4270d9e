// SPDX-License-Identifier: GPL-2.0-only
/*
 * libratelimit: rl_set_parent() and rl_get_parent(), trees of named
 * limiters, and the tokens a grant takes at every level.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "lib_test.h"

/* A named limiter of @burst tokens that refills too slowly to matter. */
static int slow_named(const char *name, __u64 burst)
{
	struct rl_config c = ks_cfg(1, 1000 * NS_PER_SEC, burst);

	return rl_open_named(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
			     &c);
}

TEST(hier_roundtrip)
{
	char np[RL_NAME_MAX], nc[RL_NAME_MAX], got[RL_NAME_MAX];
	struct rl_parent p;
	int fp, fc;

	fp = slow_named(ks_lib_name(np, sizeof(np), "p"), 4);
	fc = slow_named(ks_lib_name(nc, sizeof(nc), "c"), 10);
	ASSERT_LE(0, fp);
	ASSERT_LE(0, fc);
	memset(got, POISON_BYTE, sizeof(got));
	EXPECT_LIB(0, rl_get_parent(fc, &p, got));
	EXPECT_STREQ("", got);
	EXPECT_EQ(0U, p.depth);
	EXPECT_EQ(1U, p.weight);
	EXPECT_LIB(0, rl_set_parent(fc, np, 5));
	EXPECT_LIB(0, rl_get_parent(fc, &p, got));
	EXPECT_STREQ(np, got);
	EXPECT_EQ(1U, p.depth);
	EXPECT_EQ(5U, p.weight);
	EXPECT_LIB(0, rl_get_parent(fp, &p, NULL));
	EXPECT_EQ(1U, p.children);
	/* A grant takes at both levels: the parent's 4 bound the child. */
	EXPECT_LIB(0, rl_try_acquire(fc, 3, NULL));
	EXPECT_EQ(1ULL, ks_lib_avail(fp));
	EXPECT_EQ(7ULL, ks_lib_avail(fc));
	EXPECT_LIB(-EAGAIN, rl_try_acquire(fc, 2, NULL));
	EXPECT_LIB(-ELOOP, rl_set_parent(fp, nc, 1));
	EXPECT_LIB(-EBUSY, rl_unlink(fp, np));
	EXPECT_LIB(-ENOENT, rl_set_parent(fc, "lib-no-such-parent", 1));
	EXPECT_LIB(-EINVAL, rl_get_parent(fc, NULL, NULL));
	EXPECT_LIB(0, rl_set_parent(fc, NULL, 0));
	EXPECT_LIB(0, rl_get_parent(fp, &p, NULL));
	EXPECT_EQ(0U, p.children);
	rl_close(fc);
	rl_close(fp);
}

TEST(hier_private_refused)
{
	char np[RL_NAME_MAX];
	int fp, fd = ks_lib_slow_fd(1);

	fp = slow_named(ks_lib_name(np, sizeof(np), "pp"), 4);
	ASSERT_LE(0, fd);
	ASSERT_LE(0, fp);
	EXPECT_LIB(-EINVAL, rl_set_parent(fd, np, 1));
	rl_close(fd);
	rl_close(fp);
}

TEST_HARNESS_MAIN
