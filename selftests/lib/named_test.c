// SPDX-License-Identifier: GPL-2.0-only
/*
 * libratelimit: named limiters. rl_name_valid(), rl_attach(),
 * rl_open_named() and rl_unlink(), with their errors as -errno and errno
 * left alone.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "lib_test.h"

#define CREATE		RL_ATTACH_CREATE
#define EXCL		RL_ATTACH_EXCL
#define PERSIST		RL_ATTACH_PERSIST

TEST(name_valid)
{
	char longest[RL_NAME_MAX], too_long[RL_NAME_MAX + 1];

	memset(longest, 'a', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	memset(too_long, 'a', sizeof(too_long) - 1);
	too_long[sizeof(too_long) - 1] = '\0';

	EXPECT_LIB(1, rl_name_valid("api"));
	EXPECT_LIB(1, rl_name_valid("A-z_0.9"));
	EXPECT_LIB(1, rl_name_valid("x"));
	EXPECT_LIB(1, rl_name_valid(longest));
	EXPECT_LIB(0, rl_name_valid(too_long));
	EXPECT_LIB(0, rl_name_valid(NULL));
	EXPECT_LIB(0, rl_name_valid(""));
	EXPECT_LIB(0, rl_name_valid(".hidden"));
	EXPECT_LIB(0, rl_name_valid("a/b"));
	EXPECT_LIB(0, rl_name_valid("a b"));
	EXPECT_LIB(0, rl_name_valid("caf\xc3\xa9"));
	/* The global files of /sys/kernel/ratelimit/. */
	EXPECT_LIB(0, rl_name_valid("count"));
	EXPECT_LIB(0, rl_name_valid("version"));
	EXPECT_LIB(0, rl_name_valid("features"));
}

TEST(attach_create_join)
{
	struct rl_config c = ks_cfg(1, 1000 * NS_PER_SEC, 3), got;
	int a = rl_open(0), b = rl_open(0);
	char name[64];

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ks_lib_name(name, sizeof(name), "join");
	EXPECT_LIB(-ENOENT, rl_attach(a, name, 0, 0600, &c));
	EXPECT_LIB(0, rl_attach(a, name, CREATE, 0600, &c));
	/* Joining ignores the configuration given, NULL included. */
	EXPECT_LIB(0, rl_attach(b, name, 0, 0, NULL));
	EXPECT_LIB(0, rl_get_config(b, &got));
	EXPECT_EQ(3ULL, got.burst);
	/* One bucket: tokens taken through a are gone for b. */
	EXPECT_LIB(0, rl_acquire(a, 3));
	EXPECT_LIB(-EAGAIN, rl_try_acquire(b, 1, NULL));
	rl_close(a);
	rl_close(b);
	/* Not persistent: gone with its last fd. */
	EXPECT_LIB(-ENOENT, rl_unlink(-1, name));
}

TEST(attach_errors)
{
	struct rl_config c = ks_cfg(10, NS_PER_SEC, 10), bad = c;
	int fd = rl_open(0), other = rl_open(0);
	char name[64];

	ASSERT_LE(0, fd);
	ASSERT_LE(0, other);
	ks_lib_name(name, sizeof(name), "err");
	EXPECT_LIB(-EINVAL, rl_attach(fd, NULL, CREATE, 0600, &c));
	EXPECT_LIB(-EINVAL, rl_attach(fd, ".bad", CREATE, 0600, &c));
	EXPECT_LIB(-EINVAL, rl_attach(fd, "a/b", CREATE, 0600, &c));
	EXPECT_LIB(-EINVAL, rl_attach(fd, name, 1U << 31, 0600, &c));
	EXPECT_LIB(-EINVAL, rl_attach(fd, name, CREATE, 01000, &c));
	bad.period_ns = 0;
	EXPECT_LIB(-EINVAL, rl_attach(fd, name, CREATE, 0600, &bad));
	EXPECT_LIB(-EBADF, rl_attach(-1, name, CREATE, 0600, &c));

	ASSERT_LIB(0, rl_attach(fd, name, CREATE, 0600, &c));
	/* An fd has one limiter for good. */
	EXPECT_LIB(-EBUSY, rl_attach(fd, name, 0, 0, NULL));
	EXPECT_LIB(-EEXIST, rl_attach(other, name, CREATE | EXCL, 0600, &c));
	rl_close(other);
	rl_close(fd);
}

TEST(attach_null_config_creates_paused)
{
	struct rl_config got;
	uint64_t ready = 0;
	int fd = rl_open(0);
	char name[64];

	ASSERT_LE(0, fd);
	ks_lib_name(name, sizeof(name), "paused");
	ASSERT_LIB(0, rl_attach(fd, name, CREATE, 0600, NULL));
	EXPECT_LIB(0, rl_get_config(fd, &got));
	EXPECT_EQ(0ULL, got.rate);
	EXPECT_EQ(NS_PER_SEC, got.period_ns);
	/* Whatever the default burst holds, a paused limiter refills never. */
	while (!rl_try_acquire(fd, 1, NULL))
		;
	EXPECT_LIB(-EAGAIN, rl_try_acquire(fd, 1, &ready));
	EXPECT_EQ(RL_DEADLINE_NONE, ready);
	rl_close(fd);
}

TEST(open_named)
{
	struct rl_config c = ks_cfg(1, 1000 * NS_PER_SEC, 2), got;
	char name[64];
	int fd, fd2;

	ks_lib_name(name, sizeof(name), "open");
	errno = KS_ERRNO_MARK;
	fd = rl_open_named(name, CREATE | EXCL, 0600, &c);
	ASSERT_LE(0, fd);
	EXPECT_EQ(KS_ERRNO_MARK, errno);
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD));
	EXPECT_LIB(0, rl_get_config(fd, &got));
	EXPECT_EQ(2ULL, got.burst);
	fd2 = rl_open_named(name, 0, 0, NULL);
	ASSERT_LE(0, fd2);
	EXPECT_LIB(0, rl_acquire(fd2, 2));
	EXPECT_EQ(0ULL, ks_lib_avail(fd));
	rl_close(fd2);
	rl_close(fd);
}

TEST(open_named_errors_close_fd)
{
	struct rl_config c = ks_cfg(10, NS_PER_SEC, 10);
	int before = ks_lowest_free_fd(), fd;
	char name[64];

	ks_lib_name(name, sizeof(name), "leak");
	EXPECT_LIB(-EINVAL, rl_open_named(NULL, CREATE, 0600, &c));
	EXPECT_LIB(-EINVAL, rl_open_named("a b", CREATE, 0600, &c));
	EXPECT_LIB(-ENOENT, rl_open_named(name, 0, 0, NULL));
	fd = rl_open_named(name, CREATE, 0600, &c);
	ASSERT_LE(0, fd);
	EXPECT_LIB(-EEXIST, rl_open_named(name, CREATE | EXCL, 0600, &c));
	rl_close(fd);
	/* No failed call left an fd open. */
	EXPECT_EQ(before, ks_lowest_free_fd());
}

TEST(unlink_persistent)
{
	struct rl_config c = ks_cfg(10, NS_PER_SEC, 10);
	int fd, any = rl_open(0);
	char name[64];

	ASSERT_LE(0, any);
	ks_lib_name(name, sizeof(name), "persist");
	fd = rl_open_named(name, CREATE | PERSIST, 0600, &c);
	ASSERT_LE(0, fd);
	rl_close(fd);
	/* Persistent: still there without fds. */
	fd = rl_open_named(name, 0, 0, NULL);
	ASSERT_LE(0, fd);
	/* Unlinked through any fd; attached fds keep working. */
	EXPECT_LIB(0, rl_unlink(any, name));
	EXPECT_LIB(-ENOENT, rl_unlink(any, name));
	EXPECT_LIB(-ENOENT, rl_open_named(name, 0, 0, NULL));
	EXPECT_LIB(0, rl_acquire(fd, 1));
	rl_close(fd);
	rl_close(any);
}

TEST(unlink_temporary_fd)
{
	struct rl_config c = ks_cfg(10, NS_PER_SEC, 10);
	int before, fd;
	char name[64];

	ks_lib_name(name, sizeof(name), "tmpfd");
	fd = rl_open_named(name, CREATE | PERSIST, 0600, &c);
	ASSERT_LE(0, fd);
	rl_close(fd);
	before = ks_lowest_free_fd();
	/* fd -1: the library opens and closes one of its own. */
	EXPECT_LIB(0, rl_unlink(-1, name));
	EXPECT_LIB(-ENOENT, rl_unlink(-1, name));
	EXPECT_EQ(before, ks_lowest_free_fd());
}

TEST(unlink_errors)
{
	int fd = rl_open(0);

	ASSERT_LE(0, fd);
	EXPECT_LIB(-EINVAL, rl_unlink(fd, NULL));
	EXPECT_LIB(-EINVAL, rl_unlink(fd, ".bad"));
	EXPECT_LIB(-EINVAL, rl_unlink(-1, ""));
	EXPECT_LIB(-EBADF, rl_unlink(1000000, "x"));
	rl_close(fd);
}

TEST_HARNESS_MAIN
