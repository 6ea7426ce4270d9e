// SPDX-License-Identifier: GPL-2.0-only
/*
 * libratelimit: rl_get_features(), what the loaded module supports.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "lib_test.h"

/* Bit _IOC_NR(cmd) of struct rl_features.ioctls. */
#define IOC_BIT(cmd)	(1ULL << _IOC_NR(cmd))

static const unsigned long ioctls[] = {
	RL_IOC_GET_FEATURES, RL_IOC_SET_CONFIG, RL_IOC_GET_CONFIG,
	RL_IOC_ACQUIRE, RL_IOC_GET_STATS, RL_IOC_ATTACH, RL_IOC_UNLINK,
	RL_IOC_RELEASE, RL_IOC_REFUND, RL_IOC_SET_CLIENT, RL_IOC_GET_CLIENT,
	RL_IOC_SUBMIT, RL_IOC_COLLECT, RL_IOC_CANCEL,
};

static void check_features(struct __test_metadata *_metadata, int fd)
{
	struct rl_features f;
	size_t i;

	/* The caller's struct may hold anything: every field is written. */
	memset(&f, POISON_BYTE, sizeof(f));
	EXPECT_LIB(0, rl_get_features(fd, &f));
	EXPECT_EQ((__u32)RL_ABI_VERSION, f.version);
	EXPECT_EQ((__u32)(RL_FEATURE_QUEUED | RL_FEATURE_FAST | RL_FEATURE_KEYED |
			  RL_FEATURE_IPC_NS),
		  f.flags & ~(__u32)RL_FEATURE_URING_CMD);
	for (i = 0; i < ARRAY_SIZE(ioctls); i++)
		EXPECT_EQ(IOC_BIT(ioctls[i]), f.ioctls & IOC_BIT(ioctls[i]));
	EXPECT_EQ((__u64)RL_CONFIG_FLAGS_ALL, f.config_flags);
	EXPECT_EQ((__u64)RL_ACQUIRE_FLAGS_ALL, f.acquire_flags);
	EXPECT_EQ((__u64)RL_ATTACH_FLAGS_ALL, f.attach_flags);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0ULL, f.reserved[i]);
}

TEST(features_without_limiter)
{
	int fd = rl_open(0);

	ASSERT_LE(0, fd);
	check_features(_metadata, fd);
	/* Asking made no limiter. */
	EXPECT_EQ(POISON64, ks_lib_avail(fd));
	rl_close(fd);
}

TEST(features_with_limiter)
{
	int fd = ks_lib_slow_fd(10);

	ASSERT_LE(0, fd);
	check_features(_metadata, fd);
	rl_close(fd);
}

TEST(features_errors)
{
	struct rl_features f;
	int fd = rl_open(0), null = open("/dev/null", O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, null);
	EXPECT_LIB(-EINVAL, rl_get_features(fd, NULL));
	EXPECT_LIB(-EBADF, rl_get_features(-1, &f));
	EXPECT_LIB(-ENOTTY, rl_get_features(null, &f));
	close(null);
	rl_close(fd);
}

TEST_HARNESS_MAIN
