// SPDX-License-Identifier: GPL-2.0-only
/*
 * libratelimit: rl_open(), rl_close(), rl_set_config(), rl_get_config().
 * Every call returns -errno and leaves errno alone.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "lib_test.h"

TEST(open_flags)
{
	int fd, fl;

	/* Always close-on-exec, read-write; O_NONBLOCK on request only. */
	errno = KS_ERRNO_MARK;
	fd = rl_open(0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(KS_ERRNO_MARK, errno);
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD));
	fl = fcntl(fd, F_GETFL);
	EXPECT_EQ(O_RDWR, fl & O_ACCMODE);
	EXPECT_EQ(0, fl & O_NONBLOCK);
	EXPECT_LIB(0, rl_close(fd));

	fd = rl_open(O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD));
	EXPECT_EQ(O_NONBLOCK, fcntl(fd, F_GETFL) & O_NONBLOCK);
	EXPECT_LIB(0, rl_close(fd));
}

TEST(open_bad_flags)
{
	int before = ks_lowest_free_fd();

	EXPECT_LIB(-EINVAL, rl_open(O_APPEND));
	EXPECT_LIB(-EINVAL, rl_open(O_RDONLY | O_TRUNC));
	EXPECT_LIB(-EINVAL, rl_open(O_CREAT));
	EXPECT_LIB(-EINVAL, rl_open(-1));
	/* Nothing was opened. */
	EXPECT_EQ(before, ks_lowest_free_fd());
}

TEST(open_fresh_fd_unconfigured)
{
	struct rl_config c;
	int fd = rl_open(0);

	ASSERT_LE(0, fd);
	memset(&c, POISON_BYTE, sizeof(c));
	EXPECT_LIB(-EBADFD, rl_get_config(fd, &c));
	rl_close(fd);
}

TEST(close_errors)
{
	int fd = rl_open(0);

	ASSERT_LE(0, fd);
	EXPECT_LIB(0, rl_close(fd));
	EXPECT_LIB(-EBADF, rl_close(fd));
	EXPECT_LIB(-EBADF, rl_close(-1));
}

TEST(config_roundtrip)
{
	struct rl_config c = ks_cfg(12000, NS_PER_SEC, 1200), got;
	int fd = rl_open(0);

	ASSERT_LE(0, fd);
	c.catchup = 2000;
	c.backlog = 5000;
	c.fairness = 7;
	c.concurrency = 3;
	EXPECT_LIB(0, rl_set_config(fd, &c));
	memset(&got, POISON_BYTE, sizeof(got));
	EXPECT_LIB(0, rl_get_config(fd, &got));
	EXPECT_EQ(0, memcmp(&c, &got, sizeof(c)));
	rl_close(fd);
}

TEST(config_defaults_filled_in)
{
	struct rl_config c = ks_cfg(1000, NS_PER_SEC, 0), got;
	int fd = rl_open(0);

	ASSERT_LE(0, fd);
	EXPECT_LIB(0, rl_set_config(fd, &c));
	EXPECT_LIB(0, rl_get_config(fd, &got));
	/* Burst 0 is the tokens of 100 ms; catchup 0 strict; fairness. */
	EXPECT_EQ(100ULL, got.burst);
	EXPECT_EQ((__u32)RL_CATCHUP_STRICT, got.catchup);
	EXPECT_EQ((__u32)RL_FAIRNESS_DEFAULT, got.fairness);
	rl_close(fd);
}

TEST(config_reconfigure_keeps_fd)
{
	struct rl_config c = ks_cfg(10, NS_PER_SEC, 10), got;
	int fd = rl_open(0);

	ASSERT_LE(0, fd);
	EXPECT_LIB(0, rl_set_config(fd, &c));
	c.flags = RL_CONFIG_UNLIMITED;
	EXPECT_LIB(0, rl_set_config(fd, &c));
	EXPECT_LIB(0, rl_get_config(fd, &got));
	EXPECT_EQ((__u32)RL_CONFIG_UNLIMITED, got.flags);
	/* Unlimited: any count at once. */
	EXPECT_LIB(0, rl_acquire(fd, 1000000));
	rl_close(fd);
}

TEST(config_null)
{
	int fd = rl_open(0);

	ASSERT_LE(0, fd);
	EXPECT_LIB(-EINVAL, rl_set_config(fd, NULL));
	EXPECT_LIB(-EINVAL, rl_get_config(fd, NULL));
	/* The failed call made no limiter. */
	EXPECT_EQ(POISON64, ks_lib_avail(fd));
	rl_close(fd);
}

TEST(config_rejected)
{
	struct rl_config c;
	int fd = rl_open(0);

	ASSERT_LE(0, fd);
	c = ks_cfg(10, 0, 10);			/* period 0 */
	EXPECT_LIB(-EINVAL, rl_set_config(fd, &c));
	c = ks_cfg(10, RL_PERIOD_MAX_NS + 1, 10);
	EXPECT_LIB(-EINVAL, rl_set_config(fd, &c));
	c = ks_cfg(10, NS_PER_SEC, 10);
	c.flags = 1U << 31;			/* unknown flag */
	EXPECT_LIB(-EINVAL, rl_set_config(fd, &c));
	c = ks_cfg(10, NS_PER_SEC, 10);
	c.keys = 1;
	EXPECT_LIB(-EINVAL, rl_set_config(fd, &c));
	c = ks_cfg(10, NS_PER_SEC, 10);
	c.reserved0 = 1;
	EXPECT_LIB(-EINVAL, rl_set_config(fd, &c));
	c = ks_cfg(10, NS_PER_SEC, 10);
	c.catchup = RL_CATCHUP_MAX + 1;
	EXPECT_LIB(-EINVAL, rl_set_config(fd, &c));
	/* Nothing was configured. */
	EXPECT_LIB(-EBADFD, rl_get_config(fd, &c));
	rl_close(fd);
}

TEST(config_bad_fd)
{
	struct rl_config c = ks_cfg(10, NS_PER_SEC, 10);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, null);
	EXPECT_LIB(-EBADF, rl_set_config(-1, &c));
	EXPECT_LIB(-EBADF, rl_get_config(-1, &c));
	/* Not /dev/ratelimit. */
	EXPECT_LIB(-ENOTTY, rl_set_config(null, &c));
	EXPECT_LIB(-ENOTTY, rl_get_config(null, &c));
	close(null);
}

TEST_HARNESS_MAIN
