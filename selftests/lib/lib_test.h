/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers of the library's tests (selftests/lib/, one program per
 * feature, built as build/selftests/lib_*_test): limiters made through
 * libratelimit, and checks of its conventions. Include after
 * "kselftest_harness.h" with _GNU_SOURCE defined; it brings
 * ../ratelimit_util.h (ks_* raw ioctls, clocks, threads) too.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RL_LIB_TEST_H
#define RL_LIB_TEST_H

#include "../ratelimit_util.h"
#include "libratelimit.h"

/* What errno holds around every library call: the library never sets it. */
#define KS_ERRNO_MARK	4242

/*
 * Expect the library call @expr to return @ret (0, a count or -errno) and
 * to leave errno alone; evaluates @expr once.
 */
#define EXPECT_LIB(ret, expr) do {		\
	long long __ret;			\
	errno = KS_ERRNO_MARK;			\
	__ret = (expr);				\
	EXPECT_EQ((long long)(ret), __ret);	\
	EXPECT_EQ(KS_ERRNO_MARK, errno);	\
} while (0)

#define ASSERT_LIB(ret, expr) do {		\
	long long __ret;			\
	errno = KS_ERRNO_MARK;			\
	__ret = (expr);				\
	ASSERT_EQ((long long)(ret), __ret);	\
	ASSERT_EQ(KS_ERRNO_MARK, errno);	\
} while (0)

/* A configuration of @rate tokens per @period_ns, burst @burst. */
static inline struct rl_config ks_cfg(__u64 rate, __u64 period_ns,
				      __u64 burst)
{
	struct rl_config c;

	memset(&c, 0, sizeof(c));
	c.rate = rate;
	c.period_ns = period_ns;
	c.burst = burst;
	return c;
}

/* rl_open(@oflags) and rl_set_config(@c): the fd, or -errno. */
static inline int ks_lib_open(int oflags, const struct rl_config *c)
{
	int fd = rl_open(oflags);
	int ret;

	if (fd < 0)
		return fd;
	ret = rl_set_config(fd, c);
	if (ret) {
		rl_close(fd);
		return ret;
	}
	return fd;
}

/* A private limiter of @rate per second with burst @burst, full. */
static inline int ks_lib_fd(__u64 rate, __u64 burst)
{
	struct rl_config c = ks_cfg(rate, NS_PER_SEC, burst);

	return ks_lib_open(0, &c);
}

/*
 * A private limiter that refills too slowly to matter during a test (one
 * token per 1000 s) with @burst tokens in the bucket.
 */
static inline int ks_lib_slow_fd(__u64 burst)
{
	struct rl_config c = ks_cfg(1, 1000 * NS_PER_SEC, burst);

	return ks_lib_open(0, &c);
}

/* Tokens in the bucket now (rl_get_stats()), or POISON64 on error. */
static inline __u64 ks_lib_avail(int fd)
{
	struct rl_stats st;

	return rl_get_stats(fd, &st) ? POISON64 : st.available;
}

/* A name unique to this process, for named limiters: "lib-PID-@tag". */
static inline const char *ks_lib_name(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "lib-%d-%s", getpid(), tag);
	return buf;
}

/* The lowest free fd number: an fd leaked by a failed call moves it. */
static inline int ks_lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd;
}

#endif /* RL_LIB_TEST_H */
