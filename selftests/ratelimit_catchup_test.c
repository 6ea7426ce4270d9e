// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of /dev/ratelimit: wait accounting and catching up. wait_ns
 * and lag_ns of an acquire, the wait_histogram of a named limiter, a small
 * request from one fd not stuck behind a huge one from another, and the
 * backlog that a limiter with rl_config.catchup above 1000 keeps for a
 * client that fell behind and releases faster than the rate.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"

#define SAFETY_NS	(3 * NS_PER_SEC)
#define LATE_NS		(700 * NS_PER_MS)
#define NAME(buf, tag)	snprintf(buf, sizeof(buf), "cu-%d-%s", getpid(), tag)

static __u64 soon(void)
{
	return now_ns() + SAFETY_NS;
}

/* ---- wait_ns and lag_ns ---- */

TEST(wait_and_lag_when_waiting)
{
	struct rl_acquire a;
	__u64 t0, t1;
	int i, fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 10, NS_PER_SEC, 1, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, soon(), 0, &a));
	EXPECT_GT(NS_PER_MS, a.wait_ns);
	for (i = 0; i < 3; i++) {
		t0 = now_ns();
		ASSERT_EQ(0, ks_acq(fd, 1, soon(), 0, &a));
		t1 = now_ns();
		/* Slept most of the 100 ms, and was on time. */
		EXPECT_LE(50 * NS_PER_MS, a.wait_ns);
		EXPECT_GE(t1 - t0, a.wait_ns);
		EXPECT_EQ(0ULL, a.lag_ns);
	}
	close(fd);
}

TEST(lag_when_late)
{
	struct rl_acquire a;
	__u64 t1a, t1b, t2a, t2b, lo, hi;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	/*
	 * 10/s, burst 10, emptied at t1: a token is there from t1 + 100 ms,
	 * and the bucket is not full again before t1 + 1 s.
	 */
	ASSERT_EQ(0, ks_set(fd, 10, NS_PER_SEC, 10, 0));
	t1a = now_ns();
	ASSERT_EQ(0, ks_acq(fd, 10, soon(), 0, &a));
	t1b = now_ns();
	EXPECT_EQ(0ULL, a.lag_ns);
	sleep_ms(500);
	t2a = now_ns();
	ASSERT_EQ(0, ks_acq(fd, 1, soon(), 0, &a));
	t2b = now_ns();
	EXPECT_GT(NS_PER_MS, a.wait_ns);
	lo = t2a - t1b - 100 * NS_PER_MS - 50 * NS_PER_MS;
	hi = t2b - t1a - 100 * NS_PER_MS + 50 * NS_PER_MS;
	TH_LOG("lag %.3f ms, expected %.3f .. %.3f ms",
	       (double)a.lag_ns / NS_PER_MS, (double)lo / NS_PER_MS,
	       (double)hi / NS_PER_MS);
	EXPECT_LE(lo, a.lag_ns);
	EXPECT_GE(hi, a.lag_ns);
	close(fd);
}

/* ---- wait_histogram ---- */

/* Bucket floor of a wait: 0, or 2^(fls64(w) - 1). */
static __u64 bucket_floor(__u64 w)
{
	return w ? 1ULL << (63 - __builtin_clzll(w)) : 0;
}

#define NHIST	64

TEST(wait_histogram_counts_waits)
{
	__u64 floors[NHIST], counts[NHIST], want[NHIST], f, n;
	char name[RL_NAME_MAX], buf[4096], *line, *save = NULL;
	unsigned long long fl, cnt;
	struct rl_acquire a;
	struct rl_stats s;
	int fd, i, nb = 0, waited = 0;

	memset(want, 0, sizeof(want));
	NAME(name, "hist");
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600, 20,
			 NS_PER_SEC, 1);
	ASSERT_LE(0, fd);
	/* One immediate grant, one rejected, then 5 that wait ~50 ms. */
	ASSERT_EQ(0, ks_acq(fd, 1, soon(), 0, &a));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(0, ks_acq(fd, 1, soon(), 0, &a));
		if (!a.wait_ns)
			continue;
		waited++;
		want[63 - __builtin_clzll(a.wait_ns)]++;
	}
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ((__u64)waited, s.waited);
	ASSERT_EQ(0, sysfs_read(name, "wait_histogram", buf, sizeof(buf)));
	for (line = strtok_r(buf, "\n", &save); line && nb < NHIST;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%llu %llu", &fl, &cnt) != 2) {
			TH_LOG("bad line \"%s\"", line);
			EXPECT_TRUE(0);
			continue;
		}
		floors[nb] = fl;
		counts[nb++] = cnt;
	}
	n = 0;
	for (i = 0; i < nb; i++) {
		f = floors[i];
		/* A floor is 0 or a power of 2, listed once, not empty. */
		EXPECT_EQ(bucket_floor(f), f);
		EXPECT_LT(0ULL, counts[i]);
		if (i)
			EXPECT_LT(floors[i - 1], f);
		if (!f) {
			/* Only a grant without sleep can be there. */
			EXPECT_GE(s.immediate, counts[i]);
			continue;
		}
		n += counts[i];
		EXPECT_EQ(want[63 - __builtin_clzll(f)], counts[i]);
		TH_LOG("bucket %llu ns: %llu", (unsigned long long)f,
		       (unsigned long long)counts[i]);
	}
	/* Every waited grant is in the histogram, once. */
	EXPECT_EQ(s.waited, n);
	close(fd);
}

/* ---- requests above the burst ---- */

TEST(small_not_stuck_behind_huge_other_fd)
{
	char name[RL_NAME_MAX];
	struct waiter big, small;
	struct rl_config c;
	struct rl_acquire a;
	__u64 t0;
	int fd1, fd2;

	NAME(name, "huge");
	fd1 = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600, 0,
			  NS_PER_SEC, 2);
	ASSERT_LE(0, fd1);
	fd2 = ks_open_att(name, 0, 0, 0, NS_PER_SEC, 2);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ks_acq(fd1, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	/* 20 tokens at burst 2: 10 chunks, 1 s at 20/s. */
	ASSERT_EQ(0, waiter_start(&big, fd1, 20, soon(), 0));
	ASSERT_EQ(0, ks_wait_waiters(fd1, 1, 2000));
	ASSERT_EQ(0, waiter_start(&small, fd2, 1, soon(), 0));
	ASSERT_EQ(0, ks_wait_waiters(fd1, 2, 2000));
	memset(&c, 0, sizeof(c));
	c.rate = 20;
	c.period_ns = NS_PER_SEC;
	c.burst = 2;
	t0 = now_ns();
	ASSERT_EQ(0, ioctl(fd1, RL_IOC_SET_CONFIG, &c));
	ASSERT_EQ(0, waiter_join(&small, 3000));
	ASSERT_EQ(0, waiter_join(&big, 3000));
	EXPECT_EQ(0, small.ret);
	EXPECT_EQ(0, big.ret);
	TH_LOG("small granted after %.1f ms, big after %.1f ms",
	       (double)(small.t_end - t0) / NS_PER_MS,
	       (double)(big.t_end - t0) / NS_PER_MS);
	EXPECT_LT(small.t_end, big.t_end);
	/* At most one chunk of the big one goes first. */
	EXPECT_GT(t0 + 150 * NS_PER_MS + LATE_NS, small.t_end);
	EXPECT_LE(t0 + 950 * NS_PER_MS, big.t_end);
	close(fd2);
	close(fd1);
}

/* ---- catching up ---- */

#define CU_RATE		100ULL
#define CU_BURST	10ULL
#define CU_BACKLOG	50ULL

static int cu_fd(__u32 catchup, __u64 backlog)
{
	struct rl_config c;
	int fd = ks_open();

	if (fd < 0)
		return -1;
	memset(&c, 0, sizeof(c));
	c.rate = CU_RATE;
	c.period_ns = NS_PER_SEC;
	c.burst = CU_BURST;
	c.catchup = catchup;
	c.backlog = backlog;
	if (ioctl(fd, RL_IOC_SET_CONFIG, &c)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Acquire 2 tokens at a time for 1 s from now, as fast as granted. Checks
 * at every grant that n(t) <= what was there at the start (@avail + @back)
 * plus the refill, and <= @avail + rate x @catchup / 1000 x t. Returns
 * the tokens got, *@t the time of the last grant since the start.
 */
static __u64 cu_drain(struct __test_metadata *_metadata, int fd, __u64 avail,
		      __u64 back, __u32 catchup, __u64 *t)
{
	struct rl_acquire a;
	__u64 ts = now_ns(), now, n = 0, b1, b2;

	*t = 0;
	while ((now = now_ns()) < ts + NS_PER_SEC) {
		if (ks_acq(fd, 2, soon(), 0, &a))
			break;
		n += 2;
		now = now_ns();
		*t = now - ts;
		b1 = avail + back + CU_RATE * *t / NS_PER_SEC + 2;
		b2 = avail + CU_RATE * catchup / 1000 * *t / NS_PER_SEC + 2;
		if (n > b1 || n > b2) {
			TH_LOG("%llu tokens at %.3f s: bounds %llu, %llu",
			       (unsigned long long)n, (double)*t / NS_PER_SEC,
			       (unsigned long long)b1, (unsigned long long)b2);
			EXPECT_GE(b1, n);
			EXPECT_GE(b2, n);
			break;
		}
	}
	return n;
}

TEST(catchup_backlog_released_fast)
{
	struct rl_stats s;
	__u64 n, t, strict;
	int fd = cu_fd(2000, CU_BACKLOG);

	ASSERT_LE(0, fd);
	/* Full after 0.1 s, then 70 tokens overflow: 50 kept. */
	sleep_ms(800);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(CU_BURST, s.available);
	EXPECT_EQ(CU_BACKLOG, s.backlog);
	n = cu_drain(_metadata, fd, s.available, s.backlog, 2000, &t);
	strict = CU_BURST + CU_RATE * t / NS_PER_SEC;
	TH_LOG("%llu tokens in %.3f s; strict would allow %llu, +backlog %llu",
	       (unsigned long long)n, (double)t / NS_PER_SEC,
	       (unsigned long long)strict,
	       (unsigned long long)(strict + CU_BACKLOG));
	/* Most of the backlog came on top of the rate. */
	EXPECT_LE(strict + CU_BACKLOG / 2, n);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_GE(5ULL, s.backlog);
	close(fd);
}

TEST(catchup_backlog_capped)
{
	struct rl_stats s;
	int fd = cu_fd(RL_CATCHUP_MAX, 20);

	ASSERT_LE(0, fd);
	sleep_ms(600);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(CU_BURST, s.available);
	EXPECT_EQ(20ULL, s.backlog);
	close(fd);
}

TEST(catchup_strict_keeps_nothing)
{
	struct rl_stats s;
	__u64 n, t;
	int fd = cu_fd(RL_CATCHUP_STRICT, CU_BACKLOG);
	int fd0 = cu_fd(0, CU_BACKLOG);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, fd0);
	sleep_ms(800);
	ASSERT_EQ(0, ks_stats(fd0, &s));
	EXPECT_EQ(0ULL, s.backlog);
	close(fd0);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(CU_BURST, s.available);
	EXPECT_EQ(0ULL, s.backlog);
	n = cu_drain(_metadata, fd, s.available, 0, 1000, &t);
	TH_LOG("strict: %llu tokens in %.3f s", (unsigned long long)n,
	       (double)t / NS_PER_SEC);
	EXPECT_LE(CU_BURST + CU_RATE / 2, n);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(0ULL, s.backlog);
	close(fd);
}

TEST_HARNESS_MAIN
