// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of /dev/ratelimit: the ABI (feature discovery, ioctl encoding,
 * validation of every struct), the non-blocking paths, counters, fdinfo
 * and how fds share limiters. Blocking waits are in ratelimit_wait_test.c,
 * poll and epoll in ratelimit_poll_test.c.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"

/* One token per 10 s: nothing refills during a test. */
#define SLOW_RATE	1ULL
#define SLOW_PERIOD	(10 * NS_PER_SEC)

#define EXPECT_CONFIG(fd, r, p, b, f) do {			\
	struct rl_config __c;					\
								\
	EXPECT_EQ(0, ks_get(fd, &__c));				\
	EXPECT_EQ((__u64)(r), __c.rate);			\
	EXPECT_EQ((__u64)(p), __c.period_ns);			\
	EXPECT_EQ((__u64)(b), __c.burst);			\
	EXPECT_EQ((__u32)(f), __c.flags);			\
} while (0)

static int set_cfg(int fd, const struct rl_config *c)
{
	return ioctl(fd, RL_IOC_SET_CONFIG, c);
}

static void base_cfg(struct rl_config *c, __u32 flags)
{
	memset(c, 0, sizeof(*c));
	c->rate = 1000;
	c->period_ns = NS_PER_SEC;
	c->burst = 10;
	c->flags = flags;
}

/* ---- feature discovery and ioctl encoding ---- */

/* Every ioctl number but 17, RL_URING_CANCEL's (io_uring, not ioctl). */
#define RL_TEST_IOCTLS	(0x1ffffULL | 1ULL << 18 | 255ULL << 19)

TEST(features)
{
	struct rl_features f;
	int fd, i;

	fd = ks_open();
	ASSERT_LE(0, fd);
	memset(&f, POISON_BYTE, sizeof(f));
	ASSERT_EQ(0, ioctl(fd, RL_IOC_GET_FEATURES, &f));
	EXPECT_EQ((__u32)RL_ABI_VERSION, f.version);
	EXPECT_EQ((__u32)(RL_FEATURE_QUEUED | RL_FEATURE_FAST | RL_FEATURE_KEYED |
			  RL_FEATURE_IPC_NS),
		  f.flags & ~(__u32)RL_FEATURE_URING_CMD);
	EXPECT_EQ(RL_TEST_IOCTLS, f.ioctls);
	EXPECT_EQ((__u64)RL_CONFIG_FLAGS_ALL, f.config_flags);
	EXPECT_EQ((__u64)RL_ACQUIRE_FLAGS_ALL, f.acquire_flags);
	EXPECT_EQ((__u64)RL_ATTACH_FLAGS_ALL, f.attach_flags);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0ULL, f.reserved[i]);
	close(fd);
}

TEST(features_after_config)
{
	struct rl_features f;
	int fd;

	fd = ks_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, NS_PER_SEC, 1, 0));
	memset(&f, POISON_BYTE, sizeof(f));
	ASSERT_EQ(0, ioctl(fd, RL_IOC_GET_FEATURES, &f));
	EXPECT_EQ((__u32)RL_ABI_VERSION, f.version);
	EXPECT_EQ(RL_TEST_IOCTLS, f.ioctls);
	close(fd);
}

static const unsigned long known_cmds[] = {
	RL_IOC_GET_FEATURES, RL_IOC_SET_CONFIG, RL_IOC_GET_CONFIG,
	RL_IOC_ACQUIRE, RL_IOC_GET_STATS, RL_IOC_ATTACH, RL_IOC_UNLINK,
	RL_IOC_RELEASE, RL_IOC_REFUND, RL_IOC_SET_CLIENT, RL_IOC_GET_CLIENT,
};

#define NR_KNOWN	ARRAY_SIZE(known_cmds)

static int is_known(unsigned long cmd)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(known_cmds); i++)
		if (known_cmds[i] == cmd)
			return 1;
	return 0;
}

static void check_enotty(struct __test_metadata *_metadata, int fd)
{
	static const unsigned int dirs[] = {
		_IOC_NONE, _IOC_READ, _IOC_WRITE, _IOC_READ | _IOC_WRITE,
	};
	static char buf[4096];
	unsigned int nr, d, size;
	unsigned long cmd;

	/* Every known number with every other direction and size. */
	for (nr = 0; nr < NR_KNOWN; nr++) {
		unsigned int sz = _IOC_SIZE(known_cmds[nr]);
		unsigned int sizes[] = { 0, 8, sz - 8, sz, sz + 8, 256 };

		for (d = 0; d < 4; d++) {
			for (size = 0; size < 6; size++) {
				cmd = _IOC(dirs[d], RL_IOC_MAGIC, nr,
					   sizes[size]);
				if (is_known(cmd))
					continue;
				memset(buf, 0, sizeof(buf));
				EXPECT_ERRNO(ENOTTY, ioctl(fd, cmd, buf));
				/* The same encoding under another magic. */
				cmd = _IOC(dirs[d], 'x', nr, sizes[size]);
				EXPECT_ERRNO(ENOTTY, ioctl(fd, cmd, buf));
			}
		}
		/* Right direction and size, wrong magic. */
		cmd = _IOC(_IOC_DIR(known_cmds[nr]), RL_IOC_MAGIC + 1, nr, sz);
		EXPECT_ERRNO(ENOTTY, ioctl(fd, cmd, buf));
	}
	/* Unknown numbers. */
	for (nr = NR_KNOWN; nr < 256; nr += (nr < 16 ? 1 : 37)) {
		memset(buf, 0, sizeof(buf));
		EXPECT_ERRNO(ENOTTY, ioctl(fd, _IO(RL_IOC_MAGIC, nr), buf));
		cmd = _IOWR(RL_IOC_MAGIC, nr, struct rl_acquire);
		EXPECT_ERRNO(ENOTTY, ioctl(fd, cmd, buf));
		cmd = _IOR(RL_IOC_MAGIC, nr, struct rl_config);
		EXPECT_ERRNO(ENOTTY, ioctl(fd, cmd, buf));
	}
	/* Generic tty/file ioctls the device does not implement. */
	EXPECT_ERRNO(ENOTTY, ioctl(fd, TCGETS, buf));
}

TEST(bad_ioctl_enotty_unconfigured)
{
	int fd = ks_open();

	ASSERT_LE(0, fd);
	check_enotty(_metadata, fd);
	/* Still a fresh fd: none of those created a limiter. */
	EXPECT_ERRNO(EBADFD, ioctl(fd, RL_IOC_GET_STATS,
				   &(struct rl_stats){ 0 }));
	close(fd);
}

TEST(bad_ioctl_enotty_configured)
{
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 7, NS_PER_SEC, 3, 0));
	check_enotty(_metadata, fd);
	EXPECT_CONFIG(fd, 7, NS_PER_SEC, 3, 0);
	EXPECT_EQ(3ULL, ks_avail(fd));
	close(fd);
}

/* ---- before the first SET_CONFIG ---- */

TEST(unconfigured_get_config_ebadfd)
{
	struct rl_config c;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	EXPECT_ERRNO(EBADFD, ks_get(fd, &c));
	close(fd);
}

TEST(unconfigured_acquire_ebadfd)
{
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	EXPECT_ERRNO(EBADFD, ks_acq(fd, 1, RL_DEADLINE_NONE, 0, &a));
	EXPECT_ERRNO(EBADFD, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
}

TEST(unconfigured_get_stats_ebadfd)
{
	struct rl_stats s;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	EXPECT_ERRNO(EBADFD, ks_stats(fd, &s));
	close(fd);
}

/* ---- SET_CONFIG / GET_CONFIG ---- */

TEST(config_roundtrip)
{
	struct rl_config c;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 12000, NS_PER_SEC, 250, 0));
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ(12000ULL, c.rate);
	EXPECT_EQ(NS_PER_SEC, c.period_ns);
	EXPECT_EQ(250ULL, c.burst);
	EXPECT_EQ(0U, c.flags);
	/* 0 on SET: strict catch-up, no backlog, default fairness. */
	EXPECT_TRUE(c.catchup == 0 || c.catchup == RL_CATCHUP_STRICT);
	EXPECT_EQ(0ULL, c.concurrency);
	EXPECT_EQ(0ULL, c.backlog);
	EXPECT_TRUE(c.fairness == 0 || c.fairness == RL_FAIRNESS_DEFAULT);
	EXPECT_EQ(0U, c.reserved0);
	EXPECT_EQ(0ULL, c.keys);

	ASSERT_EQ(0, ks_set(fd, 5, 3 * NS_PER_SEC, 2, RL_CONFIG_UNLIMITED));
	EXPECT_CONFIG(fd, 5, 3 * NS_PER_SEC, 2, RL_CONFIG_UNLIMITED);
	ASSERT_EQ(0, ks_set(fd, 1, RL_PERIOD_MAX_NS, 1, 0));
	EXPECT_CONFIG(fd, 1, RL_PERIOD_MAX_NS, 1, 0);
	close(fd);
}

TEST(config_rate_zero_valid)
{
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 4, 0));
	EXPECT_CONFIG(fd, 0, NS_PER_SEC, 4, 0);
	/* A paused limiter still starts full. */
	EXPECT_EQ(4ULL, ks_avail(fd));
	EXPECT_EQ(0, ks_acq(fd, 4, RL_DEADLINE_NONE, 0, &a));
	EXPECT_EQ(0ULL, ks_avail(fd));
	close(fd);
}

/*
 * Apply @bad to a limiter configured with @base (1 token per 10 s, burst 3,
 * 1 token taken); expect -EINVAL and no change to config or tokens.
 */
static void expect_bad_config(struct __test_metadata *_metadata, int fd,
			      const struct rl_config *bad)
{
	EXPECT_ERRNO(EINVAL, set_cfg(fd, bad));
	EXPECT_CONFIG(fd, SLOW_RATE, SLOW_PERIOD, 3, 0);
	EXPECT_EQ(2ULL, ks_avail(fd));
}

static int slow_fd(struct __test_metadata *_metadata)
{
	struct rl_acquire a;
	int fd = ks_open();

	EXPECT_LE(0, fd);
	EXPECT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 3, 0));
	EXPECT_EQ(0, ks_acq(fd, 1, RL_DEADLINE_NONE, 0, &a));
	return fd;
}

static void check_bad_flags_reserved(struct __test_metadata *_metadata,
				     int fd, __u32 flags)
{
	struct rl_config c;

	base_cfg(&c, flags);
	c.flags |= 1U << 4;
	expect_bad_config(_metadata, fd, &c);
	base_cfg(&c, flags);
	c.flags |= 1U << 31;
	expect_bad_config(_metadata, fd, &c);
	base_cfg(&c, flags);
	c.flags = ~0U;
	expect_bad_config(_metadata, fd, &c);

	base_cfg(&c, flags);
	c.reserved0 = 1;
	expect_bad_config(_metadata, fd, &c);
	base_cfg(&c, flags);
	c.reserved0 = 1U << 31;
	expect_bad_config(_metadata, fd, &c);
	base_cfg(&c, flags);
	c.keys = 1;
	expect_bad_config(_metadata, fd, &c);
	base_cfg(&c, flags);
	c.keys = 1ULL << 63;
	expect_bad_config(_metadata, fd, &c);
}

/* catchup, backlog and fairness out of range (base_cfg burst is 10). */
static void check_bad_sched(struct __test_metadata *_metadata, int fd,
			    __u32 flags)
{
	static const __u32 bad_catchup[] = {
		1, RL_CATCHUP_STRICT - 1, RL_CATCHUP_MAX + 1, ~0U,
	};
	static const __u32 bad_fairness[] = { 1000001, ~0U };
	struct rl_config c;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad_catchup); i++) {
		base_cfg(&c, flags);
		c.catchup = bad_catchup[i];
		expect_bad_config(_metadata, fd, &c);
	}
	for (i = 0; i < ARRAY_SIZE(bad_fairness); i++) {
		base_cfg(&c, flags);
		c.fairness = bad_fairness[i];
		expect_bad_config(_metadata, fd, &c);
	}
	base_cfg(&c, flags);
	c.catchup = 2000;
	c.backlog = 10 * 1000 + 1;
	expect_bad_config(_metadata, fd, &c);
	c.backlog = ~0ULL;
	expect_bad_config(_metadata, fd, &c);
	/* Strict catch-up does not make a too large backlog valid. */
	c.catchup = 0;
	c.backlog = 10 * 1000 + 1;
	expect_bad_config(_metadata, fd, &c);
}

static void check_bad_bounds(struct __test_metadata *_metadata, int fd,
			     __u32 flags)
{
	struct rl_config c;

	base_cfg(&c, flags);
	c.period_ns = 0;
	expect_bad_config(_metadata, fd, &c);
	c.period_ns = RL_PERIOD_MAX_NS + 1;
	expect_bad_config(_metadata, fd, &c);
	c.period_ns = ~0ULL;
	expect_bad_config(_metadata, fd, &c);

	/* burst * period just above 2^63 */
	base_cfg(&c, flags);
	c.period_ns = NS_PER_SEC;
	c.burst = RL_BURST_PERIOD_MAX / NS_PER_SEC + 1;
	expect_bad_config(_metadata, fd, &c);
	/* 2^62 * 8 wraps to 0 in 64 bits */
	c.burst = 1ULL << 62;
	c.period_ns = 8;
	expect_bad_config(_metadata, fd, &c);
	/* 2^33 * (2^31 + 1) wraps to 2^33 */
	c.burst = 1ULL << 33;
	c.period_ns = (1ULL << 31) + 1;
	expect_bad_config(_metadata, fd, &c);
	c.burst = ~0ULL;
	c.period_ns = 1;
	expect_bad_config(_metadata, fd, &c);
	c.burst = ~0ULL;
	c.period_ns = RL_PERIOD_MAX_NS;
	expect_bad_config(_metadata, fd, &c);
}

TEST(config_bad_flags_and_reserved)
{
	int fd = slow_fd(_metadata);

	ASSERT_LE(0, fd);
	check_bad_flags_reserved(_metadata, fd, 0);
	check_bad_sched(_metadata, fd, 0);
	close(fd);
}

TEST(config_bad_period_and_burst)
{
	int fd = slow_fd(_metadata);

	ASSERT_LE(0, fd);
	check_bad_bounds(_metadata, fd, 0);
	close(fd);
}

TEST(config_bad_with_unlimited)
{
	int fd = slow_fd(_metadata);

	ASSERT_LE(0, fd);
	check_bad_flags_reserved(_metadata, fd, RL_CONFIG_UNLIMITED);
	check_bad_sched(_metadata, fd, RL_CONFIG_UNLIMITED);
	check_bad_bounds(_metadata, fd, RL_CONFIG_UNLIMITED);
	close(fd);
}

TEST(config_sched_fields_roundtrip)
{
	struct rl_config c;
	int fd = slow_fd(_metadata);

	ASSERT_LE(0, fd);
	/* The edges of every range, all valid. */
	base_cfg(&c, 0);
	c.catchup = RL_CATCHUP_MAX;
	c.backlog = 10 * 1000;
	c.fairness = 1000000;
	c.concurrency = ~0ULL;
	ASSERT_EQ(0, set_cfg(fd, &c));
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ((__u32)RL_CATCHUP_MAX, c.catchup);
	EXPECT_EQ(10000ULL, c.backlog);
	EXPECT_EQ(1000000U, c.fairness);
	EXPECT_EQ(~0ULL, c.concurrency);
	EXPECT_EQ(0U, c.reserved0);
	EXPECT_EQ(0ULL, c.keys);

	base_cfg(&c, 0);
	c.catchup = RL_CATCHUP_STRICT;
	c.fairness = 1;
	c.concurrency = 1;
	ASSERT_EQ(0, set_cfg(fd, &c));
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ((__u32)RL_CATCHUP_STRICT, c.catchup);
	EXPECT_EQ(0ULL, c.backlog);
	EXPECT_EQ(1U, c.fairness);
	EXPECT_EQ(1ULL, c.concurrency);

	/* Concurrency alone with UNLIMITED: a semaphore. */
	base_cfg(&c, RL_CONFIG_UNLIMITED);
	c.concurrency = 3;
	ASSERT_EQ(0, set_cfg(fd, &c));
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ((__u32)RL_CONFIG_UNLIMITED, c.flags);
	EXPECT_EQ(3ULL, c.concurrency);
	close(fd);
}

TEST(config_burst_period_limits_valid)
{
	struct rl_config c;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	base_cfg(&c, 0);
	/* exactly 2^63 */
	c.burst = 1ULL << 33;
	c.period_ns = 1ULL << 30;
	ASSERT_EQ(0, set_cfg(fd, &c));
	EXPECT_CONFIG(fd, 1000, 1ULL << 30, 1ULL << 33, 0);
	c.burst = RL_BURST_PERIOD_MAX / NS_PER_SEC;
	c.period_ns = NS_PER_SEC;
	ASSERT_EQ(0, set_cfg(fd, &c));
	EXPECT_CONFIG(fd, 1000, NS_PER_SEC, RL_BURST_PERIOD_MAX / NS_PER_SEC, 0);
	c.burst = 1ULL << 63;
	c.period_ns = 1;
	ASSERT_EQ(0, set_cfg(fd, &c));
	EXPECT_CONFIG(fd, 1000, 1, 1ULL << 63, 0);
	close(fd);
}

TEST(config_invalid_on_fresh_fd)
{
	struct rl_config c;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	base_cfg(&c, 0);
	c.period_ns = 0;
	EXPECT_ERRNO(EINVAL, set_cfg(fd, &c));
	base_cfg(&c, 0);
	c.keys = 1;
	EXPECT_ERRNO(EINVAL, set_cfg(fd, &c));
	base_cfg(&c, 0);
	c.catchup = 999;
	EXPECT_ERRNO(EINVAL, set_cfg(fd, &c));
	base_cfg(&c, 0);
	c.fairness = 1000001;
	EXPECT_ERRNO(EINVAL, set_cfg(fd, &c));
	/* No limiter was created. */
	EXPECT_ERRNO(EBADFD, ks_get(fd, &c));
	close(fd);
}

TEST(burst_default)
{
	static const struct { __u64 rate, period, burst; } cases[] = {
		{ 1000, NS_PER_SEC, 100 },
		{ 15, NS_PER_SEC, 2 },		/* 1.5 rounded up */
		{ 3, NS_PER_SEC, 1 },
		{ 1, 10 * NS_PER_SEC, 1 },	/* at least 1 */
		{ 0, NS_PER_SEC, 1 },		/* paused: at least 1 */
		{ 5, NS_PER_MS, 500 },
		{ 1, 1, 100000000 },
		{ 7, 300 * NS_PER_MS, 3 },	/* 2.33 rounded up */
	};
	unsigned int i;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		ASSERT_EQ(0, ks_set(fd, cases[i].rate, cases[i].period, 0, 0));
		EXPECT_CONFIG(fd, cases[i].rate, cases[i].period,
			      cases[i].burst, 0);
	}
	close(fd);
}

TEST(burst_default_clamped)
{
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1ULL << 62, NS_PER_SEC, 0, 0));
	EXPECT_CONFIG(fd, 1ULL << 62, NS_PER_SEC,
		      RL_BURST_PERIOD_MAX / NS_PER_SEC, 0);
	ASSERT_EQ(0, ks_set(fd, ~0ULL, 1, 0, 0));
	EXPECT_CONFIG(fd, ~0ULL, 1, 1ULL << 63, 0);
	ASSERT_EQ(0, ks_set(fd, ~0ULL, RL_PERIOD_MAX_NS, 0, 0));
	EXPECT_CONFIG(fd, ~0ULL, RL_PERIOD_MAX_NS,
		      RL_BURST_PERIOD_MAX / RL_PERIOD_MAX_NS, 0);
	close(fd);
}

TEST(burst_default_fresh_limiter_full)
{
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1000, 1000 * NS_PER_SEC, 0, 0));
	/* 1000 per 1000 s: 0.1 token in 100 ms, so the default is 1. */
	EXPECT_CONFIG(fd, 1000, 1000 * NS_PER_SEC, 1, 0);
	EXPECT_EQ(1ULL, ks_avail(fd));
	EXPECT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
}

TEST(new_limiter_full_bucket)
{
	struct rl_acquire a;
	int fd = ks_open();
	int i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 5, 0));
	EXPECT_EQ(5ULL, ks_avail(fd));
	for (i = 0; i < 5; i++)
		EXPECT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0ULL, ks_avail(fd));
	close(fd);
}

TEST(reconfig_keeps_tokens)
{
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 10, 0));
	ASSERT_EQ(0, ks_acq(fd, 3, RL_DEADLINE_NONE, 0, &a));
	EXPECT_EQ(7ULL, ks_avail(fd));
	/* Same config again: not a new, full bucket. */
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 10, 0));
	EXPECT_EQ(7ULL, ks_avail(fd));
	/* A deeper bucket keeps the tokens, it does not fill. */
	ASSERT_EQ(0, ks_set(fd, 0, 2 * NS_PER_SEC, 20, 0));
	EXPECT_EQ(7ULL, ks_avail(fd));
	/* Unlimited and back keeps them too. */
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 20, RL_CONFIG_UNLIMITED));
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 20, 0));
	EXPECT_EQ(7ULL, ks_avail(fd));
	close(fd);
}

TEST(reconfig_clamps_tokens)
{
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 10, 0));
	ASSERT_EQ(0, ks_acq(fd, 2, RL_DEADLINE_NONE, 0, &a));
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 5, 0));
	EXPECT_EQ(5ULL, ks_avail(fd));
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 10, 0));
	EXPECT_EQ(5ULL, ks_avail(fd));
	close(fd);
}

/* ---- ACQUIRE validation ---- */

static int acq_raw(int fd, struct rl_acquire *a)
{
	return ioctl(fd, RL_IOC_ACQUIRE, a);
}

static void good_acq(struct rl_acquire *a)
{
	memset(a, 0, sizeof(*a));
	a->count = 1;
	a->deadline_ns = RL_DEADLINE_NONE;
}

TEST(acquire_bad_count)
{
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 5, 0));
	EXPECT_ERRNO(EINVAL, ks_acq(fd, 0, RL_DEADLINE_NONE, 0, &a));
	EXPECT_ERRNO(EINVAL, ks_acq(fd, 0, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(5ULL, ks_avail(fd));
	close(fd);
}

TEST(acquire_bad_flags)
{
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 5, 0));
	good_acq(&a);
	a.flags = 1U << 2;
	EXPECT_ERRNO(EINVAL, acq_raw(fd, &a));
	a.flags = 1U << 31;
	EXPECT_ERRNO(EINVAL, acq_raw(fd, &a));
	a.flags = ~0U;
	EXPECT_ERRNO(EINVAL, acq_raw(fd, &a));
	a.flags = RL_ACQUIRE_NONBLOCK | (1U << 7);
	EXPECT_ERRNO(EINVAL, acq_raw(fd, &a));
	EXPECT_EQ(5ULL, ks_avail(fd));
	close(fd);
}

TEST(acquire_bad_reserved)
{
	struct rl_acquire a;
	int fd = ks_open();
	int i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 5, 0));
	for (i = 0; i < 2; i++) {
		good_acq(&a);
		a.reserved[i] = POISON64;
		EXPECT_ERRNO(EINVAL, acq_raw(fd, &a));
	}
	EXPECT_EQ(5ULL, ks_avail(fd));
	close(fd);
}

TEST(acquire_bad_priority)
{
	static const __u32 bad[] = { RL_PRIO_USER + 1, 1U << 31, ~0U };
	struct rl_acquire a;
	struct rl_stats s;
	unsigned int i;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 5, 0));
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		EXPECT_ERRNO(EINVAL, ks_acq_prio(fd, 1, RL_DEADLINE_NONE, 0,
						 bad[i], &a));
		EXPECT_ERRNO(EINVAL, ks_acq_prio(fd, 1, 0, RL_ACQUIRE_NONBLOCK,
						 bad[i], &a));
	}
	EXPECT_EQ(5ULL, ks_avail(fd));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(0ULL, s.requests);
	/* Every valid priority, default included. */
	for (i = RL_PRIO_DEFAULT; i <= RL_PRIO_USER; i++)
		EXPECT_EQ(0, ks_acq_prio(fd, 1, 0, RL_ACQUIRE_NONBLOCK, i, &a));
	EXPECT_EQ(0ULL, ks_avail(fd));
	close(fd);
}

TEST(acquire_bad_deadline)
{
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 5, 0));
	EXPECT_ERRNO(EINVAL, ks_acq(fd, 1, 1ULL << 63, 0, &a));
	EXPECT_ERRNO(EINVAL, ks_acq(fd, 1, RL_DEADLINE_NONE - 1, 0, &a));
	EXPECT_ERRNO(EINVAL, ks_acq(fd, 1, 1ULL << 63, RL_ACQUIRE_NONBLOCK,
				    &a));
	EXPECT_EQ(5ULL, ks_avail(fd));
	/* The largest finite deadline and "none" are fine. */
	EXPECT_EQ(0, ks_acq(fd, 1, (__u64)INT64_MAX, 0, &a));
	EXPECT_EQ(0, ks_acq(fd, 1, RL_DEADLINE_NONE, 0, &a));
	EXPECT_EQ(3ULL, ks_avail(fd));
	close(fd);
}

TEST(acquire_nonblock_over_burst)
{
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 4, 0));
	EXPECT_ERRNO(EINVAL, ks_acq(fd, 5, RL_DEADLINE_NONE,
				    RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EINVAL, ks_acq(fd, ~0ULL, RL_DEADLINE_NONE,
				    RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(4ULL, ks_avail(fd));
	EXPECT_EQ(0, ks_acq(fd, 4, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
}

TEST(acquire_o_nonblock_over_burst)
{
	struct rl_acquire a;
	int fd = open(KS_DEV, O_RDWR | O_CLOEXEC | O_NONBLOCK);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 4, 0));
	EXPECT_ERRNO(EINVAL, ks_acq(fd, 5, RL_DEADLINE_NONE, 0, &a));
	EXPECT_EQ(4ULL, ks_avail(fd));
	close(fd);
}

TEST(acquire_invalid_not_counted)
{
	struct rl_acquire a;
	struct rl_stats s;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 2, 0));
	EXPECT_ERRNO(EINVAL, ks_acq(fd, 0, RL_DEADLINE_NONE, 0, &a));
	EXPECT_ERRNO(EINVAL, ks_acq(fd, 1, RL_DEADLINE_NONE, 1U << 9, &a));
	EXPECT_ERRNO(EINVAL, ks_acq(fd, 3, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(0ULL, s.requests);
	EXPECT_EQ(0ULL, s.granted);
	EXPECT_EQ(0ULL, s.rejected);
	EXPECT_EQ(0ULL, s.timeouts);
	EXPECT_EQ(2ULL, s.available);
	close(fd);
}

TEST(acquire_outputs_overwritten)
{
	struct rl_acquire a;
	__u64 t0, t1;
	int fd = ks_open();
	int i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 3, 0));
	t0 = now_ns();
	ASSERT_EQ(0, ks_acq(fd, 2, RL_DEADLINE_NONE, 0, &a));
	t1 = now_ns();
	/* Input poison ignored, outputs written: no sleep. */
	EXPECT_NE(POISON64, a.wait_ns);
	EXPECT_NE(POISON64, a.ready_ns);
	EXPECT_NE(POISON64, a.lag_ns);
	EXPECT_GE(t1 - t0, a.wait_ns);
	EXPECT_GT(NS_PER_MS, a.wait_ns);
	EXPECT_EQ(2ULL, a.count);
	EXPECT_EQ(0U, a.priority);
	for (i = 0; i < 2; i++)
		EXPECT_EQ(0ULL, a.reserved[i]);
	close(fd);
}

/* ---- non-blocking failures and ready_ns ---- */

TEST(nonblock_empty_eagain)
{
	struct rl_acquire a;
	struct rl_stats s;
	__u64 t0, t1;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	/* 10 per second: the next token 100 ms after the bucket empties. */
	ASSERT_EQ(0, ks_set(fd, 10, NS_PER_SEC, 1, 0));
	t0 = now_ns();
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, RL_DEADLINE_NONE,
				    RL_ACQUIRE_NONBLOCK, &a));
	t1 = now_ns();
	EXPECT_NE(POISON64, a.ready_ns);
	EXPECT_LT(t1, a.ready_ns);
	EXPECT_LE(t0 + 99 * NS_PER_MS, a.ready_ns);
	EXPECT_GE(t1 + 105 * NS_PER_MS, a.ready_ns);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(1ULL, s.rejected);
	EXPECT_EQ(2ULL, s.requests);
	EXPECT_EQ(1ULL, s.granted);
	EXPECT_EQ(0ULL, s.timeouts);
	close(fd);
}

TEST(o_nonblock_fd_eagain)
{
	struct rl_acquire a;
	int fd = open(KS_DEV, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	int fd2;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 1, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, RL_DEADLINE_NONE, 0, &a));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, RL_DEADLINE_NONE, 0, &a));
	EXPECT_LT(now_ns() + 9 * NS_PER_SEC, a.ready_ns);

	/* O_NONBLOCK set later with fcntl() counts too. */
	fd2 = ks_open();
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ks_set(fd2, SLOW_RATE, SLOW_PERIOD, 1, 0));
	ASSERT_EQ(0, ks_acq(fd2, 1, RL_DEADLINE_NONE, 0, &a));
	ASSERT_EQ(0, fcntl(fd2, F_SETFL, O_NONBLOCK));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd2, 1, RL_DEADLINE_NONE, 0, &a));
	close(fd2);
	close(fd);
}

TEST(nonblock_ready_counts_deficit)
{
	struct rl_acquire a;
	__u64 t0, t1;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 10, NS_PER_SEC, 4, 0));
	t0 = now_ns();
	ASSERT_EQ(0, ks_acq(fd, 4, 0, RL_ACQUIRE_NONBLOCK, &a));
	/* 3 missing tokens at 10/s: 300 ms after the bucket emptied. */
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 3, 0, RL_ACQUIRE_NONBLOCK, &a));
	t1 = now_ns();
	EXPECT_LE(t0 + 299 * NS_PER_MS, a.ready_ns);
	EXPECT_GE(t1 + 305 * NS_PER_MS, a.ready_ns);
	close(fd);
}

TEST(nonblock_paused_ready_none)
{
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 2, 0));
	ASSERT_EQ(0, ks_acq(fd, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(RL_DEADLINE_NONE, a.ready_ns);
	close(fd);
}

TEST(slow_rate_ten_seconds)
{
	struct rl_acquire a;
	__u64 t0, t1;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 0, 0));
	t0 = now_ns();
	EXPECT_EQ(0, ks_acq(fd, 1, RL_DEADLINE_NONE, 0, &a));
	EXPECT_GT(NS_PER_MS, a.wait_ns);
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, RL_DEADLINE_NONE,
				    RL_ACQUIRE_NONBLOCK, &a));
	t1 = now_ns();
	EXPECT_LE(t0 + 10 * NS_PER_SEC - NS_PER_MS, a.ready_ns);
	EXPECT_GE(t1 + 10 * NS_PER_SEC + 5 * NS_PER_MS, a.ready_ns);
	close(fd);
}

/* ---- unlimited ---- */

TEST(unlimited_huge_count_immediate)
{
	struct rl_acquire a;
	__u64 t0;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 1, RL_CONFIG_UNLIMITED));
	t0 = now_ns();
	EXPECT_EQ(0, ks_acq(fd, 1000000000000ULL, now_ns() + NS_PER_SEC, 0,
			    &a));
	EXPECT_GT(500 * NS_PER_MS, now_ns() - t0);
	EXPECT_GT(10 * NS_PER_MS, a.wait_ns);
	EXPECT_EQ(0, ks_acq(fd, ~0ULL, RL_DEADLINE_NONE, 0, &a));
	close(fd);
}

TEST(unlimited_nonblock_over_burst_ok)
{
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 1, RL_CONFIG_UNLIMITED));
	EXPECT_EQ(0, ks_acq(fd, 1000000000000ULL, RL_DEADLINE_NONE,
			    RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, ks_acq(fd, 5, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
}

/* ---- GET_STATS ---- */

TEST(stats_bad_input)
{
	struct rl_stats s;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 2, 0));
	memset(&s, 0, sizeof(s));
	s.flags = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_GET_STATS, &s));
	memset(&s, 0, sizeof(s));
	s.flags = 1U << 31;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_GET_STATS, &s));
	memset(&s, 0, sizeof(s));
	s.reserved0 = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_GET_STATS, &s));
	close(fd);
}

TEST(stats_outputs_overwritten)
{
	struct rl_stats s;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 2, 0));
	/* ks_stats() poisons every output field, reserved[] included. */
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(0U, s.flags);
	EXPECT_EQ(0U, s.reserved0);
	EXPECT_EQ(0ULL, s.granted);
	EXPECT_EQ(0ULL, s.requests);
	EXPECT_EQ(0ULL, s.immediate);
	EXPECT_EQ(0ULL, s.waited);
	EXPECT_EQ(0ULL, s.wait_ns_total);
	EXPECT_EQ(0ULL, s.wait_ns_max);
	EXPECT_EQ(0ULL, s.timeouts);
	EXPECT_EQ(0ULL, s.interrupted);
	EXPECT_EQ(0ULL, s.rejected);
	EXPECT_EQ(0ULL, s.waiters);
	EXPECT_EQ(2ULL, s.available);
	EXPECT_EQ(0ULL, s.held);
	EXPECT_EQ(1ULL, s.clients);
	EXPECT_EQ(0ULL, s.backlog);
	EXPECT_EQ(0ULL, s.refunded);
	close(fd);
}

TEST(stats_exact_counts)
{
	struct rl_acquire a;
	struct rl_stats s;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 4, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, RL_DEADLINE_NONE, 0, &a));
	ASSERT_EQ(0, ks_acq(fd, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, ks_acq(fd, 1, (__u64)INT64_MAX, 0, &a));
	/* Empty now: a deadline in the past times out at once. */
	EXPECT_ERRNO(ETIMEDOUT, ks_acq(fd, 1, 0, 0, &a));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(4ULL, s.granted);
	EXPECT_EQ(5ULL, s.requests);
	EXPECT_EQ(3ULL, s.immediate);
	EXPECT_EQ(0ULL, s.waited);
	EXPECT_EQ(0ULL, s.wait_ns_total);
	EXPECT_EQ(0ULL, s.wait_ns_max);
	EXPECT_EQ(1ULL, s.rejected);
	EXPECT_EQ(1ULL, s.timeouts);
	EXPECT_EQ(0ULL, s.interrupted);
	EXPECT_EQ(0ULL, s.waiters);
	EXPECT_EQ(0ULL, s.available);
	close(fd);
}

TEST(stats_counts_unlimited)
{
	struct rl_acquire a;
	struct rl_stats s;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 1, RL_CONFIG_UNLIMITED));
	ASSERT_EQ(0, ks_acq(fd, 1000, RL_DEADLINE_NONE, 0, &a));
	ASSERT_EQ(0, ks_acq(fd, 24, RL_DEADLINE_NONE, 0, &a));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(1024ULL, s.granted);
	EXPECT_EQ(2ULL, s.requests);
	EXPECT_EQ(2ULL, s.immediate);
	EXPECT_EQ(0ULL, s.waited);
	close(fd);
}

/* ---- show_fdinfo ---- */

TEST(fdinfo_keys)
{
	struct rl_acquire a;
	char raw[64];
	__u64 v;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 50, 0));
	ASSERT_EQ(0, ks_acq(fd, 3, RL_DEADLINE_NONE, 0, &a));
	ASSERT_EQ(0, fdinfo_get(fd, "rl-rate", &v, NULL, 0));
	EXPECT_EQ(1ULL, v);
	ASSERT_EQ(0, fdinfo_get(fd, "rl-period-ns", &v, NULL, 0));
	EXPECT_EQ(10 * NS_PER_SEC, v);
	ASSERT_EQ(0, fdinfo_get(fd, "rl-burst", &v, NULL, 0));
	EXPECT_EQ(50ULL, v);
	ASSERT_EQ(0, fdinfo_get(fd, "rl-flags", &v, raw, sizeof(raw)));
	EXPECT_EQ(0ULL, v);
	EXPECT_EQ(0, strncmp(raw, "0x", 2));
	ASSERT_EQ(0, fdinfo_get(fd, "rl-available", &v, NULL, 0));
	EXPECT_EQ(47ULL, v);
	ASSERT_EQ(0, fdinfo_get(fd, "rl-waiters", &v, NULL, 0));
	EXPECT_EQ(0ULL, v);
	ASSERT_EQ(0, fdinfo_get(fd, "rl-granted", &v, NULL, 0));
	EXPECT_EQ(3ULL, v);
	ASSERT_EQ(0, fdinfo_get(fd, "rl-dropped-late", &v, NULL, 0));
	EXPECT_EQ(0ULL, v);
	close(fd);
}

TEST(fdinfo_tracks_reconfig)
{
	char raw[64];
	__u64 v;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 4, 0));
	ASSERT_EQ(0, ks_set(fd, 12000, NS_PER_SEC, 3, RL_CONFIG_UNLIMITED));
	ASSERT_EQ(0, fdinfo_get(fd, "rl-flags", &v, raw, sizeof(raw)));
	EXPECT_EQ((__u64)RL_CONFIG_UNLIMITED, v);
	EXPECT_EQ(0, strncmp(raw, "0x", 2));
	ASSERT_EQ(0, fdinfo_get(fd, "rl-rate", &v, NULL, 0));
	EXPECT_EQ(12000ULL, v);
	ASSERT_EQ(0, fdinfo_get(fd, "rl-burst", &v, NULL, 0));
	EXPECT_EQ(3ULL, v);
	close(fd);
}

/* ---- fds and limiters ---- */

TEST(two_fds_independent)
{
	struct rl_acquire a;
	struct rl_stats s;
	int fd1 = ks_open();
	int fd2 = ks_open();

	ASSERT_LE(0, fd1);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ks_set(fd1, SLOW_RATE, SLOW_PERIOD, 2, 0));
	/* Configuring fd1 did nothing to fd2. */
	EXPECT_ERRNO(EBADFD, ks_acq(fd2, 1, 0, 0, &a));
	ASSERT_EQ(0, ks_set(fd2, SLOW_RATE, SLOW_PERIOD, 5, 0));
	ASSERT_EQ(0, ks_acq(fd1, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd1, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(5ULL, ks_avail(fd2));
	ASSERT_EQ(0, ks_stats(fd2, &s));
	EXPECT_EQ(0ULL, s.granted);
	EXPECT_EQ(0ULL, s.requests);
	EXPECT_CONFIG(fd1, SLOW_RATE, SLOW_PERIOD, 2, 0);
	EXPECT_CONFIG(fd2, SLOW_RATE, SLOW_PERIOD, 5, 0);
	close(fd1);
	/* fd2 outlives fd1. */
	EXPECT_EQ(0, ks_acq(fd2, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd2);
}

TEST(dup_shares_limiter)
{
	struct rl_acquire a;
	struct rl_stats s;
	int fd = ks_open();
	int fd2;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 5, 0));
	fd2 = dup(fd);
	ASSERT_LE(0, fd2);
	EXPECT_CONFIG(fd2, SLOW_RATE, SLOW_PERIOD, 5, 0);
	ASSERT_EQ(0, ks_acq(fd2, 3, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(2ULL, ks_avail(fd));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(3ULL, s.granted);
	/* Reconfiguring one is seen through the other. */
	ASSERT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 7, 0));
	EXPECT_CONFIG(fd2, SLOW_RATE, SLOW_PERIOD, 7, 0);
	close(fd);
	EXPECT_EQ(2ULL, ks_avail(fd2));
	EXPECT_EQ(0, ks_acq(fd2, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd2);
}

TEST(fork_shares_limiter)
{
	struct rl_stats s;
	int fd = ks_open();
	int status;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, SLOW_RATE, SLOW_PERIOD, 5, 0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rl_acquire a;

		if (ks_acq(fd, 2, 0, RL_ACQUIRE_NONBLOCK, &a))
			_exit(10);
		_exit(ks_avail(fd) == 3 ? 0 : 11);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(3ULL, s.available);
	EXPECT_EQ(2ULL, s.granted);
	close(fd);
}

TEST(fresh_fd_after_others_unconfigured)
{
	struct rl_config c;
	int fd1 = ks_open();
	int fd2;

	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, ks_set(fd1, 10, NS_PER_SEC, 2, 0));
	close(fd1);
	fd2 = ks_open();
	ASSERT_LE(0, fd2);
	EXPECT_ERRNO(EBADFD, ks_get(fd2, &c));
	close(fd2);
}

struct racer {
	int fd;
	__u64 burst;
	int ret;
	int *go;
};

static void *racer_fn(void *arg)
{
	struct racer *r = arg;

	while (!__atomic_load_n(r->go, __ATOMIC_ACQUIRE))
		;
	r->ret = ks_set(r->fd, 0, NS_PER_SEC, r->burst, 0);
	return NULL;
}

#define NRACE 4

TEST(concurrent_first_config)
{
	struct racer r[NRACE];
	pthread_t th[NRACE];
	struct rl_config c;
	int go = 0, i, round;

	for (round = 0; round < 20; round++) {
		int fd = ks_open();

		ASSERT_LE(0, fd);
		for (i = 0; i < NRACE; i++) {
			r[i].fd = fd;
			r[i].burst = i + 1;
			r[i].go = &go;
			ASSERT_EQ(0, pthread_create(&th[i], NULL, racer_fn,
						    &r[i]));
		}
		__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
		for (i = 0; i < NRACE; i++) {
			ASSERT_EQ(0, pthread_join(th[i], NULL));
			EXPECT_EQ(0, r[i].ret);
		}
		go = 0;
		/* One limiter: its config is one of the racers'. */
		ASSERT_EQ(0, ks_get(fd, &c));
		EXPECT_LE(1ULL, c.burst);
		EXPECT_GE((__u64)NRACE, c.burst);
		EXPECT_GE(c.burst, ks_avail(fd));
		close(fd);
	}
}

/* A request the kernel cannot read or write back fails and takes nothing. */
TEST(acquire_efault_takes_nothing)
{
	long page = sysconf(_SC_PAGESIZE);
	struct rl_acquire *a, *edge;
	struct rl_stats s;
	char *map;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 10, NS_PER_SEC, 5, 0));
	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);

	EXPECT_ERRNO(EFAULT, ioctl(fd, RL_IOC_ACQUIRE, NULL));

	/* Valid and readable, but read-only. */
	a = (struct rl_acquire *)map;
	a->count = 1;
	a->deadline_ns = RL_DEADLINE_NONE;
	ASSERT_EQ(0, mprotect(map, page, PROT_READ));
	EXPECT_ERRNO(EFAULT, ioctl(fd, RL_IOC_ACQUIRE, a));

	/* Valid, but its last half is in a page that is not mapped. */
	ASSERT_EQ(0, mprotect(map, page, PROT_READ | PROT_WRITE));
	ASSERT_EQ(0, mprotect(map + page, page, PROT_NONE));
	edge = (struct rl_acquire *)(map + page - sizeof(*edge) / 2);
	edge->count = 1;
	edge->deadline_ns = RL_DEADLINE_NONE;
	EXPECT_ERRNO(EFAULT, ioctl(fd, RL_IOC_ACQUIRE, edge));

	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(5ULL, s.available);
	EXPECT_EQ(0ULL, s.requests);
	EXPECT_EQ(0ULL, s.granted);

	/* The same request, writable now, is granted. */
	EXPECT_EQ(0, ioctl(fd, RL_IOC_ACQUIRE, a));
	EXPECT_EQ(0ULL, a->wait_ns);
	EXPECT_EQ(4ULL, ks_avail(fd));
	munmap(map, 2 * page);
	close(fd);
}

/* The outputs are cleared as soon as the request is read; inputs stay. */
TEST(acquire_outputs_cleared_inputs_kept)
{
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 10, NS_PER_SEC, 5, 0));
	memset(&a, 0, sizeof(a));
	a.count = 3;
	a.deadline_ns = RL_DEADLINE_NONE;
	a.priority = RL_PRIO_HIGH;
	a.reserved[1] = 1;
	a.wait_ns = POISON64;
	a.ready_ns = POISON64;
	a.lag_ns = POISON64;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_ACQUIRE, &a));
	EXPECT_EQ(0ULL, a.wait_ns);
	EXPECT_EQ(0ULL, a.ready_ns);
	EXPECT_EQ(0ULL, a.lag_ns);
	EXPECT_EQ(3ULL, a.count);
	EXPECT_EQ(RL_DEADLINE_NONE, a.deadline_ns);
	EXPECT_EQ((__u32)RL_PRIO_HIGH, a.priority);
	EXPECT_EQ(1ULL, a.reserved[1]);
	EXPECT_EQ(5ULL, ks_avail(fd));

	/* Granted: the inputs come back as they were. */
	a.reserved[1] = 0;
	EXPECT_EQ(0, ioctl(fd, RL_IOC_ACQUIRE, &a));
	EXPECT_EQ(3ULL, a.count);
	EXPECT_EQ((__u32)RL_PRIO_HIGH, a.priority);
	EXPECT_EQ(0ULL, a.wait_ns);
	EXPECT_EQ(2ULL, ks_avail(fd));
	close(fd);
}

/*
 * Unlimited, a grant skips the clock; a client's cap still needs it: the
 * cap must both stop the client and let it go again as time passes.
 */
TEST(unlimited_client_cap_paces)
{
	struct rl_acquire a;
	__u64 t_set, t0;
	int fd = ks_open(), i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 1, RL_CONFIG_UNLIMITED));
	t_set = now_ns();
	ASSERT_EQ(0, ks_client(fd, 0, 0, 3));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, ks_acq(fd, 1, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK, &a));
	t0 = now_ns();
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK, &a));
	/* 3 per second from the first grant, between t_set and t0. */
	EXPECT_LE(t_set + NS_PER_SEC / 3, a.ready_ns);
	EXPECT_GE(t0 + NS_PER_SEC / 3 + 1, a.ready_ns);
	/* The prediction a PREDICT request is failed on counts the cap. */
	EXPECT_ERRNO(ETIMEDOUT, ks_acq(fd, 1, now_ns() + NS_PER_MS,
				       RL_ACQUIRE_PREDICT, &a));
	EXPECT_LE(t_set + NS_PER_SEC / 3, a.ready_ns);
	/* A sleeper gets it when it comes, not before. */
	EXPECT_EQ(0, ks_acq(fd, 1, now_ns() + 10 * NS_PER_SEC, 0, &a));
	EXPECT_LT(0ULL, a.wait_ns);
	EXPECT_LE(t_set + NS_PER_SEC / 3, now_ns());
	close(fd);
}

/*
 * Unlimited, grants leave the bucket alone: limits that come back find it
 * as full as the burst allows, not fuller.
 */
TEST(unlimited_then_limited_burst_bound)
{
	struct rl_acquire a;
	int fd = ks_open(), i, got = 0;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 10, NS_PER_SEC, 4, RL_CONFIG_UNLIMITED));
	for (i = 0; i < 1000; i++)
		ASSERT_EQ(0, ks_acq(fd, 1, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK, &a));
	sleep_ms(200);
	ASSERT_EQ(0, ks_set(fd, 10, NS_PER_SEC, 4, 0));
	while (!ks_acq(fd, 1, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK, &a) &&
	       got < 100)
		got++;
	EXPECT_EQ(EAGAIN, errno);
	/* The burst, and what 10/s adds while the loop runs. */
	EXPECT_LE(4, got);
	EXPECT_GE(5, got);
	close(fd);
}

TEST_HARNESS_MAIN
