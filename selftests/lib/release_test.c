// SPDX-License-Identifier: GPL-2.0-only
/*
 * libratelimit: concurrency permits. A limiter with rl_config.concurrency
 * grants permits that rl_release() gives back (or the close of the fd);
 * rl_get_client() counts the ones an fd holds.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "lib_test.h"

/* A semaphore of @conc permits with no rate limit, named @name if set. */
static int sem_fd(const char *name, __u64 conc, int oflags)
{
	struct rl_config c = ks_cfg(0, NS_PER_SEC, 1);
	int fd;

	c.flags = RL_CONFIG_UNLIMITED;
	c.concurrency = conc;
	if (!name)
		return ks_lib_open(oflags, &c);
	fd = rl_open_named(name, RL_ATTACH_CREATE, 0600, &c);
	if (fd >= 0 && oflags && fcntl(fd, F_SETFL, oflags)) {
		rl_close(fd);
		return -1;
	}
	return fd;
}

static __u64 held(int fd)
{
	struct rl_client_config cc;

	return rl_get_client(fd, &cc) ? POISON64 : cc.held;
}

TEST(permits_bound_holders)
{
	int fd = sem_fd(NULL, 3, 0);

	ASSERT_LE(0, fd);
	EXPECT_LIB(0, rl_acquire(fd, 2));
	EXPECT_LIB(0, rl_try_acquire(fd, 1, NULL));
	EXPECT_EQ(3ULL, held(fd));
	EXPECT_LIB(-EAGAIN, rl_try_acquire(fd, 1, NULL));
	EXPECT_LIB(-ETIMEDOUT, rl_acquire_timeout(fd, 1, 50 * NS_PER_MS,
						  NULL));
	EXPECT_LIB(0, rl_release(fd, 2));
	EXPECT_EQ(1ULL, held(fd));
	EXPECT_LIB(0, rl_try_acquire(fd, 2, NULL));
	EXPECT_LIB(0, rl_release(fd, 3));
	EXPECT_EQ(0ULL, held(fd));
	rl_close(fd);
}

TEST(release_errors)
{
	int fd = sem_fd(NULL, 4, 0), raw = rl_open(0);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, raw);
	ASSERT_LIB(0, rl_acquire(fd, 2));
	EXPECT_LIB(-EINVAL, rl_release(fd, 0));
	EXPECT_LIB(-EINVAL, rl_release(fd, 3));		/* holds 2 */
	EXPECT_LIB(-EINVAL, rl_release(fd, ~0ULL));
	EXPECT_EQ(2ULL, held(fd));
	EXPECT_LIB(-EBADFD, rl_release(raw, 1));
	EXPECT_LIB(-EBADF, rl_release(-1, 1));
	/* More than the limiter has is never grantable. */
	EXPECT_LIB(-EINVAL, rl_acquire(fd, 5));
	rl_close(raw);
	rl_close(fd);
}

TEST(release_per_fd)
{
	char name[64];
	int a, b;

	ks_lib_name(name, sizeof(name), "perfd");
	a = sem_fd(name, 2, 0);
	ASSERT_LE(0, a);
	b = rl_open_named(name, 0, 0, NULL);
	ASSERT_LE(0, b);
	ASSERT_LIB(0, rl_acquire(a, 2));
	/* b holds none of a's permits. */
	EXPECT_LIB(-EINVAL, rl_release(b, 1));
	EXPECT_LIB(-EAGAIN, rl_try_acquire(b, 1, NULL));
	EXPECT_LIB(0, rl_release(a, 1));
	EXPECT_LIB(0, rl_try_acquire(b, 1, NULL));
	EXPECT_EQ(1ULL, held(a));
	EXPECT_EQ(1ULL, held(b));
	rl_close(b);
	rl_close(a);
}

TEST(close_releases)
{
	char name[64];
	int a, b;

	ks_lib_name(name, sizeof(name), "close");
	a = sem_fd(name, 2, 0);
	ASSERT_LE(0, a);
	b = rl_open_named(name, 0, 0, NULL);
	ASSERT_LE(0, b);
	ASSERT_LIB(0, rl_acquire(b, 2));
	EXPECT_LIB(-EAGAIN, rl_try_acquire(a, 1, NULL));
	/* The close of the holder gives its permits back. */
	EXPECT_LIB(0, rl_close(b));
	EXPECT_LIB(0, rl_try_acquire(a, 2, NULL));
	rl_close(a);
}

TEST(waiter_woken_by_release)
{
	struct waiter w;
	int fd = sem_fd(NULL, 1, 0);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire(fd, 1));
	ASSERT_EQ(0, waiter_start(&w, fd, 1, now_ns() + 20 * NS_PER_SEC, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 5000));
	EXPECT_LIB(0, rl_release(fd, 1));
	ASSERT_EQ(0, waiter_join(&w, 5000));
	EXPECT_EQ(0, w.ret);
	EXPECT_EQ(1ULL, held(fd));
	rl_close(fd);
}

TEST_HARNESS_MAIN
