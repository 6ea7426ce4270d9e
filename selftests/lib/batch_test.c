// SPDX-License-Identifier: GPL-2.0-only
/*
 * libratelimit: batched reservations. rl_batch_open(), rl_batch_acquire(),
 * rl_batch_flush() and rl_batch_close(): how many system calls they make,
 * what they take from and give back to the limiter, and their errors.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "lib_test.h"

/* The kernel's count of tokens granted through @fd's limiter. */
static __u64 granted(int fd)
{
	struct rl_stats st;

	return rl_get_stats(fd, &st) ? POISON64 : st.granted;
}

TEST(open_clamps_to_burst)
{
	struct rl_batch b;
	int fd = ks_lib_slow_fd(50);

	ASSERT_LE(0, fd);
	memset(&b, POISON_BYTE, sizeof(b));
	EXPECT_LIB(0, rl_batch_open(&b, fd, 16));
	EXPECT_EQ(fd, b.fd);
	EXPECT_EQ(0, b.unlimited);
	EXPECT_EQ(16ULL, b.batch);
	EXPECT_EQ(0ULL, b.local);
	EXPECT_EQ(0ULL, b.syscalls);
	EXPECT_EQ(0ULL, b.taken);
	EXPECT_EQ(0ULL, b.handed);
	EXPECT_EQ(0ULL, b.refunded);
	EXPECT_LIB(0, rl_batch_open(&b, fd, 1000));
	EXPECT_EQ(50ULL, b.batch);
	rl_close(fd);
}

TEST(open_errors)
{
	struct rl_batch b;
	int fd = ks_lib_slow_fd(10), raw = rl_open(0);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, raw);
	memset(&b, POISON_BYTE, sizeof(b));
	EXPECT_LIB(-EINVAL, rl_batch_open(NULL, fd, 4));
	EXPECT_LIB(-EINVAL, rl_batch_open(&b, fd, 0));
	EXPECT_LIB(-EBADFD, rl_batch_open(&b, raw, 4));
	EXPECT_LIB(-EBADF, rl_batch_open(&b, -1, 4));
	/* A failed open leaves the state alone. */
	EXPECT_EQ(POISON64, b.local);
	rl_close(raw);
	rl_close(fd);
}

TEST(acquire_one_syscall_per_batch)
{
	struct rl_batch b;
	int fd = ks_lib_slow_fd(100), i;

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_batch_open(&b, fd, 10));
	for (i = 0; i < 30; i++)
		ASSERT_LIB(0, rl_batch_acquire(&b, 1));
	/* 30 tokens in three batches of 10, one ioctl each. */
	EXPECT_EQ(3ULL, b.syscalls);
	EXPECT_EQ(30ULL, b.taken);
	EXPECT_EQ(30ULL, b.handed);
	EXPECT_EQ(0ULL, b.local);
	EXPECT_EQ(30ULL, granted(fd));
	EXPECT_EQ(70ULL, ks_lib_avail(fd));
	/* One more token reserves a whole batch. */
	ASSERT_LIB(0, rl_batch_acquire(&b, 1));
	EXPECT_EQ(9ULL, b.local);
	EXPECT_EQ(60ULL, ks_lib_avail(fd));
	rl_close(fd);
}

TEST(acquire_larger_than_batch)
{
	struct rl_batch b;
	int fd = ks_lib_slow_fd(100);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_batch_open(&b, fd, 4));
	ASSERT_LIB(0, rl_batch_acquire(&b, 1));
	EXPECT_EQ(3ULL, b.local);
	/* 10 > what a batch holds: only the missing 7 come from the kernel. */
	ASSERT_LIB(0, rl_batch_acquire(&b, 10));
	EXPECT_EQ(0ULL, b.local);
	EXPECT_EQ(11ULL, b.taken);
	EXPECT_EQ(11ULL, b.handed);
	EXPECT_EQ(89ULL, ks_lib_avail(fd));
	rl_close(fd);
}

TEST(acquire_waits_for_missing_only)
{
	/* 5 per second, burst 4: a batch of 4 takes 800 ms to come back. */
	struct rl_batch b;
	int fd = ks_lib_fd(5, 4);
	__u64 t;

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_batch_open(&b, fd, 4));
	ASSERT_LIB(0, rl_batch_acquire(&b, 4));
	EXPECT_EQ(0ULL, b.local);
	/* Empty: a try fails, then a wait for the one token missing. */
	t = now_ns();
	ASSERT_LIB(0, rl_batch_acquire(&b, 1));
	t = now_ns() - t;
	EXPECT_EQ(0ULL, b.local);
	EXPECT_EQ(5ULL, b.taken);
	EXPECT_EQ(3ULL, b.syscalls);
	EXPECT_GT(3 * NS_PER_SEC, t);
	/* Back-off: the next acquire does not try a batch first. */
	ASSERT_LIB(0, rl_batch_acquire(&b, 1));
	EXPECT_EQ(4ULL, b.syscalls);
	rl_close(fd);
}

TEST(acquire_errors)
{
	struct rl_batch b;
	int fd = ks_lib_slow_fd(4);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_batch_open(&b, fd, 4));
	EXPECT_LIB(-EINVAL, rl_batch_acquire(NULL, 1));
	EXPECT_LIB(-EINVAL, rl_batch_acquire(&b, 0));
	EXPECT_EQ(0ULL, b.syscalls);
	rl_close(fd);
	/* The fd is the caller's: closed, the kernel says so. */
	EXPECT_LIB(-EBADF, rl_batch_acquire(&b, 1));
	EXPECT_EQ(0ULL, b.handed);
}

TEST(acquire_o_nonblock_eagain)
{
	struct rl_config c = ks_cfg(1, 1000 * NS_PER_SEC, 3);
	struct rl_batch b;
	int fd = ks_lib_open(O_NONBLOCK, &c);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_batch_open(&b, fd, 2));
	ASSERT_LIB(0, rl_batch_acquire(&b, 3));
	EXPECT_LIB(-EAGAIN, rl_batch_acquire(&b, 1));
	EXPECT_EQ(3ULL, b.handed);
	rl_close(fd);
}

TEST(flush_refunds_reserve)
{
	struct rl_batch b;
	int fd = ks_lib_slow_fd(100);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_batch_open(&b, fd, 10));
	ASSERT_LIB(0, rl_batch_acquire(&b, 3));
	EXPECT_EQ(90ULL, ks_lib_avail(fd));
	EXPECT_LIB(0, rl_batch_flush(&b));
	EXPECT_EQ(0ULL, b.local);
	EXPECT_EQ(7ULL, b.refunded);
	EXPECT_EQ(97ULL, ks_lib_avail(fd));
	/* Nothing reserved: no system call. */
	EXPECT_LIB(0, rl_batch_flush(&b));
	EXPECT_EQ(2ULL, b.syscalls);
	EXPECT_LIB(-EINVAL, rl_batch_flush(NULL));
	rl_close(fd);
}

TEST(flush_error_keeps_reserve)
{
	struct rl_batch b;
	int fd = ks_lib_slow_fd(100);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_batch_open(&b, fd, 10));
	ASSERT_LIB(0, rl_batch_acquire(&b, 1));
	rl_close(fd);
	EXPECT_LIB(-EBADF, rl_batch_flush(&b));
	EXPECT_EQ(9ULL, b.local);
	EXPECT_EQ(0ULL, b.refunded);
	/* Close drops it in any case. */
	EXPECT_LIB(-EBADF, rl_batch_close(&b));
	EXPECT_EQ(0ULL, b.local);
}

TEST(close_flushes_keeps_fd)
{
	struct rl_batch b;
	int fd = ks_lib_slow_fd(100);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_batch_open(&b, fd, 10));
	ASSERT_LIB(0, rl_batch_acquire(&b, 4));
	EXPECT_LIB(0, rl_batch_close(&b));
	EXPECT_EQ(0ULL, b.local);
	EXPECT_EQ(96ULL, ks_lib_avail(fd));
	/* The fd is still open and usable. */
	EXPECT_LIB(0, rl_acquire(fd, 1));
	EXPECT_LIB(-EINVAL, rl_batch_close(NULL));
	rl_close(fd);
}

TEST(unlimited)
{
	struct rl_config c = ks_cfg(0, NS_PER_SEC, 1);
	struct rl_batch b;
	int fd;

	c.flags = RL_CONFIG_UNLIMITED;
	fd = ks_lib_open(0, &c);
	ASSERT_LE(0, fd);
	/* Not clamped to the burst; nothing refunded on flush. */
	ASSERT_LIB(0, rl_batch_open(&b, fd, 1000));
	EXPECT_EQ(1, b.unlimited);
	EXPECT_EQ(1000ULL, b.batch);
	ASSERT_LIB(0, rl_batch_acquire(&b, 1));
	EXPECT_EQ(999ULL, b.local);
	EXPECT_LIB(0, rl_batch_flush(&b));
	EXPECT_EQ(0ULL, b.local);
	EXPECT_EQ(0ULL, b.refunded);
	EXPECT_EQ(1ULL, b.syscalls);
	rl_close(fd);
}

TEST_HARNESS_MAIN
