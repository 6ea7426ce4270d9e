// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of named limiters: RL_IOC_ATTACH and RL_IOC_UNLINK validation,
 * lifetimes (non-persistent, persistent, unlinked while attached), sharing
 * through dup, fork and exec, the module's bounds on names, and races of
 * attach, close and unlink. Permissions are in ratelimit_perm_test.c, the
 * sysfs files in ratelimit_sysfs_test.c.
 *
 * Every test uses names made of its pid, so a leftover of a failed test
 * does not disturb the next one. Blocking calls carry deadlines and every
 * child is collected with a timeout.
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

/* argv[1] of this program exec'd as a pacing client of a named limiter. */
#define PACE_ARG	"--pace-named"

#define NAME(buf, tag) \
	snprintf(buf, sizeof(buf), "rlt-%d-%s", getpid(), tag)

#define EXPECT_CONFIG(fd, r, p, b, f) do {			\
	struct rl_config __c;					\
								\
	EXPECT_EQ(0, ks_get(fd, &__c));				\
	EXPECT_EQ((__u64)(r), __c.rate);			\
	EXPECT_EQ((__u64)(p), __c.period_ns);			\
	EXPECT_EQ((__u64)(b), __c.burst);			\
	EXPECT_EQ((__u32)(f), __c.flags);			\
} while (0)

/* A fresh fd is a client of no limiter. */
#define EXPECT_FRESH(fd) do {					\
	struct rl_config __c;					\
								\
	EXPECT_ERRNO(EBADFD, ks_get(fd, &__c));			\
} while (0)

/* The name is gone: no sysfs directory, ATTACH without CREATE fails. */
static void expect_no_name(struct __test_metadata *_metadata,
			   const char *name)
{
	int fd = ks_open();

	EXPECT_LE(0, fd);
	EXPECT_ERRNO(ENOENT, ks_att(fd, name, 0, 0, 1, NS_PER_SEC, 0));
	EXPECT_FRESH(fd);
	close(fd);
	EXPECT_FALSE(sysfs_exists(name));
}

#define EXPECT_NO_NAME(name) expect_no_name(_metadata, name)

static void base_cfg(struct rl_config *c)
{
	memset(c, 0, sizeof(c[0]));
	c->rate = SLOW_RATE;
	c->period_ns = SLOW_PERIOD;
	c->burst = 5;
}

/* A new slow limiter @name (burst @burst) and an fd attached to it. */
static int slow_named(const char *name, __u32 flags, __u64 burst)
{
	return ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL | flags,
			   0600, SLOW_RATE, SLOW_PERIOD, burst);
}

/* Wait up to @ms for the named limiter count to reach @n. */
static int wait_count(__u64 n, unsigned int ms)
{
	__u64 end = now_ns() + ms * NS_PER_MS;

	do {
		if (ks_named_count() == n)
			return 0;
		sleep_ms(2);
	} while (now_ns() < end);
	return -1;
}

/* ---- feature discovery ---- */

TEST(features_named)
{
	struct rl_features f;
	int fd = ks_open();
	int i;

	ASSERT_LE(0, fd);
	memset(&f, POISON_BYTE, sizeof(f));
	ASSERT_EQ(0, ioctl(fd, RL_IOC_GET_FEATURES, &f));
	EXPECT_EQ(0x7fULL, f.ioctls & 0x7fULL);
	EXPECT_EQ((__u64)RL_ATTACH_FLAGS_ALL, f.attach_flags);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0ULL, f.reserved[i]);
	close(fd);
}

/* ---- ATTACH ---- */

TEST(attach_create)
{
	char name[RL_NAME_MAX];
	int fd = ks_open();

	ASSERT_LE(0, fd);
	NAME(name, "c");
	EXPECT_FALSE(sysfs_exists(name));
	ASSERT_EQ(0, ks_att(fd, name, RL_ATTACH_CREATE, 0640, 100,
			    NS_PER_SEC, 10));
	EXPECT_CONFIG(fd, 100, NS_PER_SEC, 10, 0);
	EXPECT_EQ(10ULL, ks_avail(fd));
	EXPECT_TRUE(sysfs_exists(name));
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	EXPECT_EQ(0ULL, sysfs_u64(name, "persistent"));
	close(fd);
}

TEST(attach_create_unlimited_and_default_burst)
{
	char name[RL_NAME_MAX];
	struct rl_config c;
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	NAME(name, "u");
	memset(&c, 0, sizeof(c));
	c.rate = 1000;
	c.period_ns = NS_PER_SEC;
	ASSERT_EQ(0, ks_att_cfg(fd, name, RL_ATTACH_CREATE, 0600, &c));
	/* burst 0 picks the default, as SET_CONFIG does. */
	EXPECT_CONFIG(fd, 1000, NS_PER_SEC, 100, 0);
	close(fd);

	fd = ks_open();
	ASSERT_LE(0, fd);
	c.flags = RL_CONFIG_UNLIMITED;
	ASSERT_EQ(0, ks_att_cfg(fd, name, RL_ATTACH_CREATE, 0600, &c));
	EXPECT_CONFIG(fd, 1000, NS_PER_SEC, 100, RL_CONFIG_UNLIMITED);
	EXPECT_EQ(0, ks_acq(fd, 1000000, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
}

TEST(attach_existing_shares)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	struct rl_stats s;
	int fd1, fd2;

	NAME(name, "s");
	fd1 = slow_named(name, 0, 10);
	ASSERT_LE(0, fd1);
	fd2 = ks_open();
	ASSERT_LE(0, fd2);
	/* Another config: ignored, the limiter exists. */
	ASSERT_EQ(0, ks_att(fd2, name, 0, 0777, 1000, NS_PER_MS, 3));
	EXPECT_CONFIG(fd2, SLOW_RATE, SLOW_PERIOD, 10, 0);
	ASSERT_EQ(0, ks_acq(fd2, 3, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(7ULL, ks_avail(fd1));
	ASSERT_EQ(0, ks_acq(fd1, 7, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd2, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, ks_stats(fd2, &s));
	EXPECT_EQ(10ULL, s.granted);
	EXPECT_EQ(1ULL, s.rejected);
	EXPECT_EQ(2ULL, sysfs_u64(name, "clients"));
	close(fd1);
	close(fd2);
}

TEST(attach_create_existing_attaches)
{
	char name[RL_NAME_MAX], buf[16];
	struct rl_acquire a;
	int fd1, fd2;

	NAME(name, "ce");
	fd1 = slow_named(name, 0, 4);
	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, ks_acq(fd1, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	fd2 = ks_open();
	ASSERT_LE(0, fd2);
	/* CREATE without EXCL attaches to the one that exists. */
	ASSERT_EQ(0, ks_att(fd2, name, RL_ATTACH_CREATE | RL_ATTACH_PERSIST,
			    0666, 1000, NS_PER_SEC, 50));
	EXPECT_CONFIG(fd2, SLOW_RATE, SLOW_PERIOD, 4, 0);
	EXPECT_EQ(3ULL, ks_avail(fd2));
	ASSERT_EQ(0, sysfs_read(name, "mode", buf, sizeof(buf)));
	EXPECT_STREQ("0600", buf);
	EXPECT_EQ(0ULL, sysfs_u64(name, "persistent"));
	close(fd1);
	close(fd2);
	EXPECT_NO_NAME(name);
}

TEST(attach_excl_eexist)
{
	char name[RL_NAME_MAX];
	int fd1, fd2;

	NAME(name, "x");
	fd1 = slow_named(name, 0, 4);
	ASSERT_LE(0, fd1);
	fd2 = ks_open();
	ASSERT_LE(0, fd2);
	EXPECT_ERRNO(EEXIST, ks_att(fd2, name,
				    RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
				    1, NS_PER_SEC, 0));
	EXPECT_FRESH(fd2);
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	/* The fd is still usable. */
	EXPECT_EQ(0, ks_att(fd2, name, 0, 0, 1, NS_PER_SEC, 0));
	EXPECT_EQ(4ULL, ks_avail(fd2));
	close(fd1);
	close(fd2);
}

TEST(attach_missing_enoent)
{
	char name[RL_NAME_MAX];
	__u64 n0 = ks_named_count();
	int fd = ks_open();

	ASSERT_LE(0, fd);
	NAME(name, "m");
	EXPECT_ERRNO(ENOENT, ks_att(fd, name, 0, 0600, 1, NS_PER_SEC, 0));
	EXPECT_ERRNO(ENOENT, ks_att(fd, name, RL_ATTACH_PERSIST, 0600, 1,
				    NS_PER_SEC, 0));
	EXPECT_FRESH(fd);
	EXPECT_FALSE(sysfs_exists(name));
	EXPECT_EQ(n0, ks_named_count());
	/* A failed ATTACH leaves a fresh fd: SET_CONFIG still works. */
	EXPECT_EQ(0, ks_set(fd, 5, NS_PER_SEC, 2, 0));
	EXPECT_CONFIG(fd, 5, NS_PER_SEC, 2, 0);
	close(fd);
}

TEST(attach_private_ebusy)
{
	char name[RL_NAME_MAX];
	int fd = ks_open();

	ASSERT_LE(0, fd);
	NAME(name, "bp");
	ASSERT_EQ(0, ks_set(fd, 7, NS_PER_SEC, 3, 0));
	EXPECT_ERRNO(EBUSY, ks_att(fd, name, RL_ATTACH_CREATE, 0600, 1,
				   NS_PER_SEC, 0));
	EXPECT_CONFIG(fd, 7, NS_PER_SEC, 3, 0);
	EXPECT_NO_NAME(name);
	close(fd);
}

TEST(attach_attached_ebusy)
{
	char name[RL_NAME_MAX], name2[RL_NAME_MAX];
	int fd;

	NAME(name, "b1");
	NAME(name2, "b2");
	fd = slow_named(name, 0, 4);
	ASSERT_LE(0, fd);
	EXPECT_ERRNO(EBUSY, ks_att(fd, name2, RL_ATTACH_CREATE, 0600, 1,
				   NS_PER_SEC, 0));
	EXPECT_ERRNO(EBUSY, ks_att(fd, name, 0, 0, 1, NS_PER_SEC, 0));
	EXPECT_ERRNO(EBUSY, ks_att(fd, name, RL_ATTACH_CREATE, 0600, 1,
				   NS_PER_SEC, 0));
	EXPECT_NO_NAME(name2);
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	EXPECT_CONFIG(fd, SLOW_RATE, SLOW_PERIOD, 4, 0);
	close(fd);
}

TEST(attach_set_config_reconfigures_shared)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	int fd1, fd2;

	NAME(name, "sc");
	fd1 = slow_named(name, 0, 10);
	ASSERT_LE(0, fd1);
	fd2 = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ks_acq(fd1, 4, 0, RL_ACQUIRE_NONBLOCK, &a));
	/* SET_CONFIG on an attached fd changes the shared limiter. */
	ASSERT_EQ(0, ks_set(fd2, 0, 2 * NS_PER_SEC, 20, 0));
	EXPECT_CONFIG(fd1, 0, 2 * NS_PER_SEC, 20, 0);
	EXPECT_EQ(6ULL, ks_avail(fd1));
	EXPECT_EQ(20ULL, sysfs_u64(name, "burst"));
	close(fd1);
	close(fd2);
}

/* ATTACH with @at must fail with @err and create nothing. */
static void expect_bad_attach(struct __test_metadata *_metadata,
			      struct rl_attach *at, int err, const char *name)
{
	__u64 n0 = ks_named_count();
	int fd = ks_open();

	ASSERT_LE(0, fd);
	EXPECT_ERRNO(err, ioctl(fd, RL_IOC_ATTACH, at));
	EXPECT_FRESH(fd);
	EXPECT_EQ(n0, ks_named_count());
	if (name)
		EXPECT_NO_NAME(name);
	close(fd);
}

/* The last 8 bytes of struct rl_config are reserved, must be zero. */
static __u64 *cfg_last_reserved(struct rl_config *c)
{
	return (__u64 *)(c + 1) - 1;
}

static void good_attach(struct rl_attach *at, const char *name)
{
	memset(at, 0, sizeof(*at));
	at->name_ptr = (__u64)(uintptr_t)name;
	at->flags = RL_ATTACH_CREATE;
	at->mode = 0600;
	base_cfg(&at->config);
}

TEST(attach_bad_flags)
{
	static const __u32 bad[] = {
		1U << 3, 1U << 4, 1U << 31, ~0U,
		RL_ATTACH_CREATE | (1U << 3),
	};
	char name[RL_NAME_MAX];
	struct rl_attach at;
	unsigned int i;

	NAME(name, "bf");
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		good_attach(&at, name);
		at.flags = bad[i];
		expect_bad_attach(_metadata, &at, EINVAL, name);
	}
}

TEST(attach_bad_reserved)
{
	char name[RL_NAME_MAX];
	struct rl_attach at;
	int i;

	NAME(name, "br");
	for (i = 0; i < 4; i++) {
		good_attach(&at, name);
		at.reserved[i] = 1ULL << i;
		expect_bad_attach(_metadata, &at, EINVAL, name);
	}
	good_attach(&at, name);
	*cfg_last_reserved(&at.config) = POISON64;
	expect_bad_attach(_metadata, &at, EINVAL, name);
	good_attach(&at, name);
	at.config.reserved0 = 1;
	expect_bad_attach(_metadata, &at, EINVAL, name);
}

TEST(attach_bad_mode)
{
	static const __u32 bad[] = {
		01000, 02000, 04000, 04755, 01777, 0x10000, ~0U,
	};
	char name[RL_NAME_MAX];
	struct rl_attach at;
	unsigned int i;

	NAME(name, "bm");
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		good_attach(&at, name);
		at.mode = bad[i];
		expect_bad_attach(_metadata, &at, EINVAL, name);
	}
}

TEST(attach_bad_config_new)
{
	char name[RL_NAME_MAX];
	struct rl_attach at;

	NAME(name, "bc");
	good_attach(&at, name);
	at.config.period_ns = 0;
	expect_bad_attach(_metadata, &at, EINVAL, name);
	good_attach(&at, name);
	at.config.period_ns = RL_PERIOD_MAX_NS + 1;
	expect_bad_attach(_metadata, &at, EINVAL, name);
	good_attach(&at, name);
	at.config.flags = 1U << 4;
	expect_bad_attach(_metadata, &at, EINVAL, name);
	good_attach(&at, name);
	at.config.period_ns = NS_PER_SEC;
	at.config.burst = RL_BURST_PERIOD_MAX / NS_PER_SEC + 1;
	expect_bad_attach(_metadata, &at, EINVAL, name);
}

TEST(attach_bad_config_existing)
{
	char name[RL_NAME_MAX];
	struct rl_attach at;
	int fd;

	NAME(name, "bx");
	fd = slow_named(name, 0, 4);
	ASSERT_LE(0, fd);
	/* Ignored but still validated when the limiter exists. */
	good_attach(&at, name);
	at.flags = 0;
	at.config.period_ns = 0;
	expect_bad_attach(_metadata, &at, EINVAL, NULL);
	good_attach(&at, name);
	*cfg_last_reserved(&at.config) = 1;
	expect_bad_attach(_metadata, &at, EINVAL, NULL);
	good_attach(&at, name);
	at.config.flags = ~0U;
	expect_bad_attach(_metadata, &at, EINVAL, NULL);
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	EXPECT_CONFIG(fd, SLOW_RATE, SLOW_PERIOD, 4, 0);
	close(fd);
}

TEST(attach_bad_names)
{
	static const char *const bad[] = {
		"", ".", "..", ".hidden", "a/b", "/", "a b", " a", "a ",
		"a\tb", "a\nb", "a:b", "a*", "caf\xc3\xa9", "\xff",
		"a\\b", "a%b", "a+b", "a@b",
		/* The global files beside the limiters in sysfs. */
		"count", "version", "features",
		/* 64 characters */
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	};
	struct rl_attach at;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		good_attach(&at, bad[i]);
		expect_bad_attach(_metadata, &at, EINVAL, NULL);
		good_attach(&at, bad[i]);
		at.flags = 0;
		expect_bad_attach(_metadata, &at, EINVAL, NULL);
	}
}

TEST(attach_long_name_einval)
{
	char name[300];
	struct rl_attach at;

	/* Well past RL_NAME_MAX, all valid characters. */
	memset(name, 'b', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	good_attach(&at, name);
	expect_bad_attach(_metadata, &at, EINVAL, NULL);
	name[RL_NAME_MAX] = '\0';
	good_attach(&at, name);
	expect_bad_attach(_metadata, &at, EINVAL, NULL);
}

TEST(attach_name_efault)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct rl_attach at;
	char *p;

	good_attach(&at, NULL);
	expect_bad_attach(_metadata, &at, EFAULT, NULL);
	good_attach(&at, NULL);
	at.name_ptr = 1;
	expect_bad_attach(_metadata, &at, EFAULT, NULL);
	good_attach(&at, NULL);
	at.name_ptr = ~0ULL - 16;
	expect_bad_attach(_metadata, &at, EFAULT, NULL);

	/* A name that runs into an unmapped page without a NUL. */
	p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, munmap(p + pg, pg));
	memset(p + pg - 8, 'a', 8);
	good_attach(&at, p + pg - 8);
	expect_bad_attach(_metadata, &at, EFAULT, NULL);
	/* A page of protection PROT_NONE. */
	ASSERT_EQ(0, mprotect(p, pg, PROT_NONE));
	good_attach(&at, p);
	expect_bad_attach(_metadata, &at, EFAULT, NULL);
	munmap(p, pg);
}

TEST(attach_name_at_page_end_ok)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct rl_attach at;
	char *p, *name;
	int fd;

	/* A short name whose NUL is the last byte before an unmapped page. */
	p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, munmap(p + pg, pg));
	snprintf(p, 16, "rlt-%d-pe", getpid());
	name = p + pg - strlen(p) - 1;
	memmove(name, p, strlen(p) + 1);
	good_attach(&at, name);
	fd = ks_open();
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, ioctl(fd, RL_IOC_ATTACH, &at));
	EXPECT_TRUE(sysfs_exists(name));
	close(fd);
	EXPECT_NO_NAME(name);
	munmap(p, pg);
}

TEST(attach_name_max_length)
{
	char name[RL_NAME_MAX];
	int fd;

	NAME(name, "");
	memset(name + strlen(name), 'z', RL_NAME_MAX - 1 - strlen(name));
	name[RL_NAME_MAX - 1] = '\0';
	ASSERT_EQ((size_t)RL_NAME_MAX - 1, strlen(name));
	fd = ks_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_att(fd, name, RL_ATTACH_CREATE | RL_ATTACH_EXCL,
			    0600, 1, NS_PER_SEC, 0));
	EXPECT_TRUE(sysfs_exists(name));
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	close(fd);
	EXPECT_NO_NAME(name);
}

TEST(attach_name_charset)
{
	static const char *const tails[] = {
		"AZaz09._-", "-lead", "_lead", "x", "9", "a..b", "end.",
	};
	char name[RL_NAME_MAX];
	unsigned int i;
	int fd;

	for (i = 0; i < ARRAY_SIZE(tails); i++) {
		NAME(name, tails[i]);
		fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL,
				 0600, 1, NS_PER_SEC, 0);
		EXPECT_LE(0, fd);
		EXPECT_TRUE(sysfs_exists(name));
		if (fd >= 0)
			close(fd);
	}
	/* Short names of their own, not prefixed. */
	fd = ks_open_att("-", RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600, 1,
			 NS_PER_SEC, 0);
	EXPECT_LE(0, fd);
	EXPECT_TRUE(sysfs_exists("-"));
	if (fd >= 0)
		close(fd);
	EXPECT_NO_NAME("-");
}

TEST(attach_names_near_reserved)
{
	static const char *const names[] = {
		"Count", "count2", "versions", "features-", "xcount",
	};
	unsigned int i;
	int fd;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		fd = ks_open_att(names[i], RL_ATTACH_CREATE | RL_ATTACH_EXCL,
				 0600, 1, NS_PER_SEC, 0);
		EXPECT_LE(0, fd);
		EXPECT_TRUE(sysfs_exists(names[i]));
		if (fd >= 0)
			close(fd);
		EXPECT_NO_NAME(names[i]);
	}
}

TEST(attach_mode_exact_no_umask)
{
	static const __u32 modes[] = { 0, 0777, 0666, 0640, 0400, 0070 };
	char name[RL_NAME_MAX], buf[16], want[16];
	unsigned int i;
	int fd;

	umask(077);
	NAME(name, "mode");
	for (i = 0; i < ARRAY_SIZE(modes); i++) {
		fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL,
				 modes[i], 1, NS_PER_SEC, 0);
		ASSERT_LE(0, fd);
		snprintf(want, sizeof(want), "%04o", modes[i]);
		ASSERT_EQ(0, sysfs_read(name, "mode", buf, sizeof(buf)));
		EXPECT_STREQ(want, buf);
		close(fd);
	}
}

/* ---- UNLINK ---- */

TEST(unlink_missing_enoent)
{
	char name[RL_NAME_MAX];
	int fd = ks_open();

	ASSERT_LE(0, fd);
	NAME(name, "um");
	EXPECT_ERRNO(ENOENT, ks_unl(fd, name));
	EXPECT_FRESH(fd);
	close(fd);
}

static void expect_bad_unlink(struct __test_metadata *_metadata,
			      struct rl_unlink *u, int err)
{
	int fd = ks_open();

	ASSERT_LE(0, fd);
	EXPECT_ERRNO(err, ioctl(fd, RL_IOC_UNLINK, u));
	close(fd);
}

TEST(unlink_bad_flags_reserved)
{
	char name[RL_NAME_MAX];
	struct rl_unlink u;
	int fd, i;

	NAME(name, "ub");
	fd = slow_named(name, RL_ATTACH_PERSIST, 3);
	ASSERT_LE(0, fd);
	close(fd);
	for (i = 0; i < 4; i++) {
		memset(&u, 0, sizeof(u));
		u.name_ptr = (__u64)(uintptr_t)name;
		u.flags = i < 3 ? 1U << (i * 15) : ~0U;
		expect_bad_unlink(_metadata, &u, EINVAL);
	}
	memset(&u, 0, sizeof(u));
	u.name_ptr = (__u64)(uintptr_t)name;
	u.reserved0 = 1;
	expect_bad_unlink(_metadata, &u, EINVAL);
	for (i = 0; i < 2; i++) {
		memset(&u, 0, sizeof(u));
		u.name_ptr = (__u64)(uintptr_t)name;
		u.reserved[i] = 1ULL << 63;
		expect_bad_unlink(_metadata, &u, EINVAL);
	}
	/* Still there, and a good UNLINK removes it. */
	EXPECT_TRUE(sysfs_exists(name));
	EXPECT_EQ(0, ks_unl_name(name));
	EXPECT_NO_NAME(name);
}

TEST(unlink_bad_names)
{
	static const char *const bad[] = {
		"", ".", "..", ".x", "a/b", "a b", "caf\xc3\xa9", "count",
		"version", "features",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	};
	struct rl_unlink u;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		memset(&u, 0, sizeof(u));
		u.name_ptr = (__u64)(uintptr_t)bad[i];
		expect_bad_unlink(_metadata, &u, EINVAL);
	}
	memset(&u, 0, sizeof(u));
	expect_bad_unlink(_metadata, &u, EFAULT);
	u.name_ptr = 8;
	expect_bad_unlink(_metadata, &u, EFAULT);
}

TEST(unlink_through_any_fd)
{
	char name[RL_NAME_MAX], other[RL_NAME_MAX];
	int fd, priv, att;

	NAME(name, "ua");
	NAME(other, "uo");
	priv = ks_open();
	ASSERT_LE(0, priv);
	ASSERT_EQ(0, ks_set(priv, 1, NS_PER_SEC, 1, 0));
	att = slow_named(other, 0, 1);
	ASSERT_LE(0, att);

	fd = slow_named(name, RL_ATTACH_PERSIST, 1);
	ASSERT_LE(0, fd);
	close(fd);
	EXPECT_EQ(0, ks_unl(priv, name));
	EXPECT_NO_NAME(name);

	fd = slow_named(name, RL_ATTACH_PERSIST, 1);
	ASSERT_LE(0, fd);
	close(fd);
	EXPECT_EQ(0, ks_unl(att, name));
	EXPECT_NO_NAME(name);
	/* The fd used keeps its own limiter. */
	EXPECT_EQ(1ULL, sysfs_u64(other, "clients"));
	EXPECT_CONFIG(priv, 1, NS_PER_SEC, 1, 0);

	/* Unlinking through the attached fd itself. */
	EXPECT_EQ(0, ks_unl(att, other));
	EXPECT_NO_NAME(other);
	EXPECT_CONFIG(att, SLOW_RATE, SLOW_PERIOD, 1, 0);
	EXPECT_ERRNO(ENOENT, ks_unl(att, other));
	close(att);
	close(priv);
}

/* ---- lifetimes ---- */

TEST(nonpersistent_dies_with_last_fd)
{
	char name[RL_NAME_MAX];
	__u64 n0 = ks_named_count();
	int fd1, fd2, fd3;

	NAME(name, "np");
	fd1 = slow_named(name, 0, 3);
	ASSERT_LE(0, fd1);
	EXPECT_EQ(n0 + 1, ks_named_count());
	fd2 = dup(fd1);
	ASSERT_LE(0, fd2);
	fd3 = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd3);
	EXPECT_EQ(2ULL, sysfs_u64(name, "clients"));
	close(fd1);
	EXPECT_TRUE(sysfs_exists(name));
	close(fd3);
	EXPECT_TRUE(sysfs_exists(name));
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	EXPECT_CONFIG(fd2, SLOW_RATE, SLOW_PERIOD, 3, 0);
	close(fd2);
	EXPECT_NO_NAME(name);
	EXPECT_EQ(n0, ks_named_count());
}

TEST(nonpersistent_new_after_death)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	struct rl_stats s;
	int fd;

	NAME(name, "nd");
	fd = slow_named(name, 0, 5);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 5, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
	/* Same name, a new limiter: full bucket, fresh counters. */
	fd = slow_named(name, 0, 5);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(5ULL, s.available);
	EXPECT_EQ(0ULL, s.granted);
	EXPECT_EQ(0ULL, s.requests);
	close(fd);
}

/* A child's name to use and the fds it inherited, to close first. */
struct child_arg {
	const char *name;
	int close_fds[2];
};

static void close_inherited(struct child_arg *ca)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ca->close_fds); i++)
		if (ca->close_fds[i] >= 0)
			close(ca->close_fds[i]);
}

static void hold_by_name(void *arg, int *out)
{
	struct child_arg *ca = arg;
	int fd;

	close_inherited(ca);
	fd = ks_open_att(ca->name, 0, 0, 1, NS_PER_SEC, 0);
	out[0] = fd < 0 ? errno : 0;
	/* Stay attached a while after the parent closed its fd. */
	sleep_ms(400);
	if (fd >= 0)
		close(fd);
}

TEST(nonpersistent_kept_by_other_process)
{
	struct child_arg ca = { NULL, { -1, -1 } };
	char name[RL_NAME_MAX];
	struct ks_child ch;
	int out[RUN_AS_MAX];
	__u64 end;
	int fd;

	NAME(name, "kp");
	fd = slow_named(name, 0, 2);
	ASSERT_LE(0, fd);
	ca.name = name;
	ca.close_fds[0] = fd;
	ASSERT_EQ(0, child_start(&ch, NULL, hold_by_name, &ca));
	/* Wait for the child to attach. */
	end = now_ns() + 2 * NS_PER_SEC;
	while (sysfs_u64(name, "clients") != 2 && now_ns() < end)
		sleep_ms(2);
	ASSERT_EQ(2ULL, sysfs_u64(name, "clients"));
	close(fd);
	EXPECT_TRUE(sysfs_exists(name));
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	ASSERT_EQ(0, child_finish(&ch, out, 2000));
	EXPECT_EQ(0, out[0]);
	EXPECT_NO_NAME(name);
}

TEST(persistent_survives_close)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	__u64 n0 = ks_named_count();
	int fd;

	NAME(name, "ps");
	fd = slow_named(name, RL_ATTACH_PERSIST, 10);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 4, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
	EXPECT_TRUE(sysfs_exists(name));
	EXPECT_EQ(1ULL, sysfs_u64(name, "persistent"));
	EXPECT_EQ(0ULL, sysfs_u64(name, "clients"));
	EXPECT_EQ(n0 + 1, ks_named_count());
	/* The same limiter, tokens and all. */
	fd = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd);
	EXPECT_CONFIG(fd, SLOW_RATE, SLOW_PERIOD, 10, 0);
	EXPECT_EQ(6ULL, ks_avail(fd));
	close(fd);
	EXPECT_TRUE(sysfs_exists(name));
	EXPECT_EQ(0, ks_unl_name(name));
	EXPECT_NO_NAME(name);
	EXPECT_EQ(n0, ks_named_count());
	EXPECT_ERRNO(ENOENT, ks_unl_name(name));
}

TEST(unlink_while_attached)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	struct rl_stats s;
	int fd1, fd2;

	NAME(name, "uw");
	fd1 = slow_named(name, 0, 5);
	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, ks_acq(fd1, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, ks_unl(fd1, name));
	/* The name is gone at once... */
	EXPECT_NO_NAME(name);
	/* ...but the fd keeps its limiter. */
	EXPECT_CONFIG(fd1, SLOW_RATE, SLOW_PERIOD, 5, 0);
	EXPECT_EQ(0, ks_acq(fd1, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	/* A new limiter takes the name. */
	fd2 = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
			  SLOW_RATE, SLOW_PERIOD, 7);
	ASSERT_LE(0, fd2);
	EXPECT_CONFIG(fd2, SLOW_RATE, SLOW_PERIOD, 7, 0);
	EXPECT_EQ(7ULL, ks_avail(fd2));
	EXPECT_EQ(7ULL, sysfs_u64(name, "burst"));
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	/* The two are independent. */
	EXPECT_EQ(0, ks_acq(fd1, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd1, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(7ULL, ks_avail(fd2));
	ASSERT_EQ(0, ks_stats(fd2, &s));
	EXPECT_EQ(0ULL, s.granted);
	EXPECT_CONFIG(fd1, SLOW_RATE, SLOW_PERIOD, 5, 0);
	/* Closing the old one leaves the new one alone. */
	close(fd1);
	EXPECT_TRUE(sysfs_exists(name));
	EXPECT_EQ(7ULL, ks_avail(fd2));
	close(fd2);
	EXPECT_NO_NAME(name);
}

TEST(unlink_persistent_while_attached)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	__u64 n0 = ks_named_count();
	int fd;

	NAME(name, "up");
	fd = slow_named(name, RL_ATTACH_PERSIST, 3);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_unl_name(name));
	EXPECT_NO_NAME(name);
	EXPECT_EQ(0, ks_acq(fd, 3, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
	EXPECT_NO_NAME(name);
	EXPECT_EQ(n0, ks_named_count());
}

TEST(dup_shares_named)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	struct rl_stats s;
	int fd, fd2;

	NAME(name, "dup");
	fd = slow_named(name, 0, 6);
	ASSERT_LE(0, fd);
	fd2 = dup(fd);
	ASSERT_LE(0, fd2);
	/* One open file: one client. */
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	EXPECT_ERRNO(EBUSY, ks_att(fd2, name, 0, 0, 1, NS_PER_SEC, 0));
	ASSERT_EQ(0, ks_acq(fd2, 4, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(2ULL, ks_avail(fd));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(4ULL, s.granted);
	close(fd);
	EXPECT_EQ(0, ks_acq(fd2, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd2);
	EXPECT_NO_NAME(name);
}

struct fork_arg {
	const char *name;
	int fd;
};

static void fork_user(void *arg, int *out)
{
	struct fork_arg *fa = arg;
	struct rl_acquire a;
	int fd;

	/* The inherited fd... */
	out[0] = ret_err(ks_acq(fa->fd, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	/* ...and one of its own, by name. */
	fd = ks_open_att(fa->name, 0, 0, 1, NS_PER_SEC, 0);
	out[1] = fd < 0 ? errno : 0;
	out[2] = ret_err(ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	out[3] = (int)sysfs_u64(fa->name, "clients");
	out[4] = (int)ks_avail(fa->fd);
	close(fd);
}

TEST(fork_shares_named)
{
	char name[RL_NAME_MAX];
	struct fork_arg fa;
	struct rl_stats s;
	int out[RUN_AS_MAX];

	NAME(name, "fk");
	fa.name = name;
	fa.fd = slow_named(name, 0, 8);
	ASSERT_LE(0, fa.fd);
	ASSERT_EQ(0, run_as(NULL, fork_user, &fa, out, 2000));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(0, out[1]);
	EXPECT_EQ(0, out[2]);
	EXPECT_EQ(2, out[3]);
	EXPECT_EQ(5, out[4]);
	ASSERT_EQ(0, ks_stats(fa.fd, &s));
	EXPECT_EQ(3ULL, s.granted);
	EXPECT_EQ(5ULL, s.available);
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	close(fa.fd);
	EXPECT_NO_NAME(name);
}

/* ---- bounds: module parameters ---- */

FIXTURE(bounds) {
	__u64 max_named;
	__u64 max_per_user;
	char name[RL_NAME_MAX];
};

FIXTURE_SETUP(bounds)
{
	self->max_named = param_get("max_named");
	self->max_per_user = param_get("max_named_per_user");
	ASSERT_NE(POISON64, self->max_named);
	ASSERT_NE(POISON64, self->max_per_user);
	NAME(self->name, "bd");
}

FIXTURE_TEARDOWN(bounds)
{
	char name[RL_NAME_MAX + 8];
	int i;

	EXPECT_EQ(0, param_set("max_named", self->max_named));
	EXPECT_EQ(0, param_set("max_named_per_user", self->max_per_user));
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "%s%d", self->name, i);
		ks_unl_name(name);
	}
}

/* Create "<base><i>" (persistent when @persist) and keep the fd. */
static int bounds_create(const char *base, int i, int persist)
{
	char name[RL_NAME_MAX + 8];

	snprintf(name, sizeof(name), "%s%d", base, i);
	return ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL |
			   (persist ? RL_ATTACH_PERSIST : 0), 0644,
			   1, NS_PER_SEC, 0);
}

TEST_F(bounds, defaults)
{
	EXPECT_EQ(1024ULL, self->max_named);
	EXPECT_EQ(64ULL, self->max_per_user);
}

TEST_F(bounds, max_named_enospc)
{
	char name[RL_NAME_MAX + 8];
	__u64 n0 = ks_named_count();
	int a, b, c, d, fd;

	ASSERT_NE(POISON64, n0);
	ASSERT_EQ(0, param_set("max_named", n0 + 2));
	EXPECT_EQ(n0 + 2, param_get("max_named"));
	a = bounds_create(self->name, 0, 0);
	ASSERT_LE(0, a);
	b = bounds_create(self->name, 1, 1);
	ASSERT_LE(0, b);
	close(b);
	EXPECT_EQ(n0 + 2, ks_named_count());
	errno = 0;
	EXPECT_EQ(-1, bounds_create(self->name, 2, 0));
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(-1, bounds_create(self->name, 2, 1));
	EXPECT_EQ(ENOSPC, errno);
	snprintf(name, sizeof(name), "%s%d", self->name, 2);
	EXPECT_NO_NAME(name);
	/* Attaching to one that exists is no creation. */
	snprintf(name, sizeof(name), "%s%d", self->name, 1);
	fd = ks_open_att(name, RL_ATTACH_CREATE, 0600, 1, NS_PER_SEC, 0);
	EXPECT_LE(0, fd);
	close(fd);
	/* Unlinking the persistent one makes room. */
	EXPECT_EQ(0, ks_unl_name(name));
	c = bounds_create(self->name, 2, 0);
	EXPECT_LE(0, c);
	EXPECT_EQ(-1, bounds_create(self->name, 3, 0));
	EXPECT_EQ(ENOSPC, errno);
	/* So does closing the last fd of a non-persistent one. */
	close(a);
	d = bounds_create(self->name, 3, 0);
	EXPECT_LE(0, d);
	EXPECT_EQ(-1, bounds_create(self->name, 4, 0));
	EXPECT_EQ(ENOSPC, errno);
	/* Raising the bound again lets more in. */
	ASSERT_EQ(0, param_set("max_named", n0 + 3));
	fd = bounds_create(self->name, 4, 0);
	EXPECT_LE(0, fd);
	close(fd);
	close(c);
	close(d);
}

struct quota_arg {
	const char *base;
	int first, n;
};

/* As the user: create base<first..first+n-1>, persistent; errno of each. */
static void quota_create(void *arg, int *out)
{
	struct quota_arg *q = arg;
	int i, fd;

	for (i = 0; i < q->n && i < RUN_AS_MAX; i++) {
		fd = bounds_create(q->base, q->first + i, 1);
		out[i] = fd < 0 ? errno : 0;
		if (fd >= 0)
			close(fd);
	}
}

static void attach_existing(void *arg, int *out)
{
	int fd = ks_open_att(arg, RL_ATTACH_CREATE, 0600, 1, NS_PER_SEC, 0);

	out[0] = fd < 0 ? errno : 0;
}

static const struct ks_cred user4242 = { 4242, 4242, 0, { 0 } };

TEST_F(bounds, max_named_per_user_edquot)
{
	struct quota_arg q = { self->name, 0, 3 };
	char name[RL_NAME_MAX + 8], buf[16];
	int out[RUN_AS_MAX];

	ASSERT_EQ(0, param_set("max_named_per_user", 2));
	EXPECT_EQ(2ULL, param_get("max_named_per_user"));
	ASSERT_EQ(0, run_as(&user4242, quota_create, &q, out, 2000));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(0, out[1]);
	EXPECT_EQ(EDQUOT, out[2]);
	snprintf(name, sizeof(name), "%s%d", self->name, 0);
	ASSERT_EQ(0, sysfs_read(name, "owner", buf, sizeof(buf)));
	EXPECT_STREQ("4242", buf);
	snprintf(name, sizeof(name), "%s%d", self->name, 2);
	EXPECT_NO_NAME(name);
	/* Another user has a quota of its own. */
	q.first = 5;
	q.n = 1;
	ASSERT_EQ(0, run_as(&(struct ks_cred){ 4243, 4243, 0, { 0 } },
			    quota_create, &q, out, 2000));
	EXPECT_EQ(0, out[0]);
	/* Removing one of the user's limiters frees a slot. */
	snprintf(name, sizeof(name), "%s%d", self->name, 0);
	ASSERT_EQ(0, ks_unl_name(name));
	q.first = 2;
	q.n = 2;
	ASSERT_EQ(0, run_as(&user4242, quota_create, &q, out, 2000));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(EDQUOT, out[1]);
	/* EDQUOT is about creation: attaching to its own still works. */
	snprintf(name, sizeof(name), "%s%d", self->name, 1);
	ASSERT_EQ(0, run_as(&user4242, attach_existing, name, out, 2000));
	EXPECT_EQ(0, out[0]);
}

TEST_F(bounds, max_named_zero)
{
	int fd;

	ASSERT_EQ(0, param_set("max_named", 0));
	errno = 0;
	fd = bounds_create(self->name, 0, 0);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(ENOSPC, errno);
	/* Private limiters are not bounded. */
	fd = ks_open();
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, ks_set(fd, 1, NS_PER_SEC, 1, 0));
	close(fd);
}

/* ---- sharing across exec'd programs ---- */

/*
 * argv: PACE_ARG NAME MS. Attach to NAME and acquire one token at a time
 * for MS milliseconds; print the tokens granted. Exit 0, or 1 on an error.
 */
static int pace_main(int argc, char **argv)
{
	struct rl_acquire a;
	__u64 end, granted = 0;
	int fd;

	if (argc != 4)
		return 1;
	fd = ks_open_att(argv[2], 0, 0, 1, NS_PER_SEC, 0);
	if (fd < 0)
		return 1;
	end = now_ns() + strtoull(argv[3], NULL, 10) * NS_PER_MS;
	while (now_ns() < end) {
		if (ks_acq(fd, 1, end, 0, &a)) {
			if (errno == ETIMEDOUT)
				break;
			return 1;
		}
		granted++;
	}
	printf("%llu\n", (unsigned long long)granted);
	return fflush(stdout) ? 1 : 0;
}

struct pacer {
	pid_t pid;
	int out;
	char buf[64];
	size_t len;
};

static int pacer_start(struct pacer *p, const char *name, unsigned int ms)
{
	char msbuf[16];
	int pfd[2];

	memset(p, 0, sizeof(*p));
	snprintf(msbuf, sizeof(msbuf), "%u", ms);
	if (pipe(pfd))
		return -1;
	fflush(stdout);
	p->pid = fork();
	if (p->pid < 0)
		return -1;
	if (p->pid == 0) {
		close(pfd[0]);
		if (dup2(pfd[1], 1) < 0)
			_exit(126);
		execl("/proc/self/exe", "rlt-pace", PACE_ARG, name, msbuf,
		      (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	p->out = pfd[0];
	return 0;
}

/* Tokens a pacer reported, or -1; kills it after @timeout_ms. */
static long long pacer_finish(struct pacer *p, unsigned int timeout_ms)
{
	__u64 end = now_ns() + timeout_ms * NS_PER_MS;
	int status;
	ssize_t n;

	for (;;) {
		struct pollfd pfd = { .fd = p->out, .events = POLLIN };
		__u64 t = now_ns();

		if (t >= end || poll(&pfd, 1, (end - t) / NS_PER_MS + 1) <= 0)
			break;
		n = read(p->out, p->buf + p->len, sizeof(p->buf) - 1 - p->len);
		if (n <= 0)
			break;
		p->len += n;
	}
	close(p->out);
	kill(p->pid, SIGKILL);
	if (waitpid(p->pid, &status, 0) != p->pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -1;
	p->buf[p->len] = '\0';
	return p->len ? strtoll(p->buf, NULL, 10) : -1;
}

#define PACE_RATE	200ULL
#define PACE_BURST	10ULL

TEST(exec_programs_share)
{
	char name[RL_NAME_MAX];
	struct pacer p[2];
	long long got[2];
	struct rl_stats s;
	__u64 t0, t1, bound;
	int fd, i;

	NAME(name, "ex");
	t0 = now_ns();
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0644,
			 PACE_RATE, NS_PER_SEC, PACE_BURST);
	ASSERT_LE(0, fd);
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pacer_start(&p[i], name, 1000));
	for (i = 0; i < 2; i++)
		got[i] = pacer_finish(&p[i], 2500);
	t1 = now_ns();
	ASSERT_EQ(0, ks_stats(fd, &s));
	TH_LOG("pacers got %lld and %lld of %llu tokens in %llu ms",
	       got[0], got[1], (unsigned long long)s.granted,
	       (unsigned long long)((t1 - t0) / NS_PER_MS));
	ASSERT_LE(0, got[0]);
	ASSERT_LE(0, got[1]);
	EXPECT_EQ(s.granted, (__u64)(got[0] + got[1]));
	/* Never more than the bucket plus the refill since creation. */
	bound = PACE_BURST + PACE_RATE * (t1 - t0) / NS_PER_SEC + 1;
	EXPECT_GE(bound, s.granted);
	/* Both made progress: each more than a fifth. */
	EXPECT_LT(s.granted / 5, (__u64)got[0]);
	EXPECT_LT(s.granted / 5, (__u64)got[1]);
	/* And together they were paced, not starved: half a second's worth. */
	EXPECT_LE(PACE_RATE / 2, s.granted);
	close(fd);
	EXPECT_NO_NAME(name);
}

#define RLPACE		"/tools/rlpace"
#define RLPACE_N	100	/* tokens each rlpace takes */
#define RLPACE_NSTR	"100"

static pid_t rlpace_start(const char *name)
{
	pid_t pid;
	int nul;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		nul = open("/dev/null", O_WRONLY);
		if (nul < 0 || dup2(nul, 1) < 0)
			_exit(126);
		execl(RLPACE, "rlpace", "-N", name, "-n", RLPACE_NSTR, "-q",
		      (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Exit status of @pid within @ms, or -1 (then it is killed). */
static int wait_exit(pid_t pid, unsigned int ms)
{
	__u64 end = now_ns() + ms * NS_PER_MS;
	int status;

	do {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		sleep_ms(5);
	} while (now_ns() < end);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* Granted through @pid's attachment per client_list, or -1. */
static long long client_granted(const char *name, pid_t pid, char *comm,
				size_t len)
{
	char buf[4096], c[32], *line, *save = NULL;
	unsigned long long g;
	int p;

	if (sysfs_read(name, "client_list", buf, sizeof(buf)))
		return -1;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%d %31s %llu", &p, c, &g) == 3 && p == pid) {
			snprintf(comm, len, "%s", c);
			return g;
		}
	}
	return -1;
}

/* The guest's rlpace, twice, on one named limiter (rlpace -N). */
TEST(rlpace_programs_share)
{
	char name[RL_NAME_MAX], comm[32];
	long long g[2] = { -1, -1 };
	__u64 t0, t, total = 0, end;
	pid_t pid[2];
	int fd, i;

	if (access(RLPACE, X_OK))
		SKIP(return, "no " RLPACE);
	NAME(name, "rp");
	t0 = now_ns();
	t = t0;
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0644,
			 PACE_RATE, NS_PER_SEC, PACE_BURST);
	ASSERT_LE(0, fd);
	for (i = 0; i < 2; i++) {
		pid[i] = rlpace_start(name);
		ASSERT_LT(0, pid[i]);
	}
	/* Half way through, both have a fair share. */
	end = now_ns() + 2 * NS_PER_SEC;
	while (now_ns() < end) {
		for (i = 0; i < 2; i++)
			g[i] = client_granted(name, pid[i], comm, sizeof(comm));
		t = now_ns();
		total = sysfs_u64(name, "granted");
		if (g[0] >= 0 && g[1] >= 0 && total >= RLPACE_N)
			break;
		sleep_ms(10);
	}
	TH_LOG("after %llu ms: %lld and %lld of %llu",
	       (unsigned long long)((t - t0) / NS_PER_MS), g[0], g[1],
	       (unsigned long long)total);
	EXPECT_STREQ("rlpace", comm);
	EXPECT_LE(RLPACE_N, total);
	EXPECT_GE(PACE_BURST + PACE_RATE * (t - t0) / NS_PER_SEC + 1, total);
	EXPECT_LT((long long)total / 5, g[0]);
	EXPECT_LT((long long)total / 5, g[1]);
	for (i = 0; i < 2; i++)
		EXPECT_EQ(0, wait_exit(pid[i], 3000));
	t = now_ns();
	total = sysfs_u64(name, "granted");
	EXPECT_EQ(2ULL * RLPACE_N, total);
	EXPECT_GE(PACE_BURST + PACE_RATE * (t - t0) / NS_PER_SEC + 1, total);
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	close(fd);
}

/* ---- waiters, close and unlink ---- */

static void wait_on_name(void *arg, int *out)
{
	struct child_arg *ca = arg;
	struct rl_acquire a;
	int fd;

	close_inherited(ca);
	fd = ks_open_att(ca->name, 0, 0, 1, NS_PER_SEC, 0);
	out[0] = fd < 0 ? errno : 0;
	out[1] = ret_err(ks_acq(fd, 1, now_ns() + 3 * NS_PER_SEC, 0, &a));
}

TEST(close_while_others_wait)
{
	struct child_arg ca;
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	struct waiter w[2];
	struct ks_child ch;
	int out[RUN_AS_MAX];
	int fda, fdb, i;
	__u64 deadline;

	NAME(name, "cw");
	/* Paused, its one token taken. */
	fda = ks_open_att(name, RL_ATTACH_CREATE, 0600, 0, NS_PER_SEC, 1);
	ASSERT_LE(0, fda);
	ASSERT_EQ(0, ks_acq(fda, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	fdb = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fdb);
	deadline = now_ns() + 3 * NS_PER_SEC;
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, waiter_start(&w[i], fdb, 1, deadline, 0));
	ca.name = name;
	ca.close_fds[0] = fda;
	ca.close_fds[1] = fdb;
	ASSERT_EQ(0, child_start(&ch, NULL, wait_on_name, &ca));
	ASSERT_EQ(0, ks_wait_waiters(fdb, 3, 1500));
	EXPECT_EQ(3ULL, sysfs_u64(name, "clients"));

	/* Closing an idle fd and killing a sleeping client... */
	close(fda);
	EXPECT_EQ(2ULL, sysfs_u64(name, "clients"));
	kill(ch.pid, SIGKILL);
	EXPECT_EQ(-1, child_finish(&ch, out, 1000));
	EXPECT_EQ(0, ks_wait_waiters(fdb, 2, 1000));
	sleep_ms(50);
	/* ...leaves the other waiters asleep. */
	EXPECT_EQ(2ULL, ks_nwaiters(fdb));
	for (i = 0; i < 2; i++)
		EXPECT_FALSE(__atomic_load_n(&w[i].done, __ATOMIC_SEQ_CST));
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	/* And a refill wakes them. */
	ASSERT_EQ(0, ks_set(fdb, 1000, NS_PER_SEC, 1, 0));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, waiter_join(&w[i], 2000));
		EXPECT_EQ(0, w[i].ret);
	}
	close(fdb);
	EXPECT_NO_NAME(name);
}

TEST(unlink_with_waiters)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	struct waiter w[2];
	__u64 deadline;
	int fd, i;

	NAME(name, "wu");
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_PERSIST, 0600, 0,
			 NS_PER_SEC, 1);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	deadline = now_ns() + 3 * NS_PER_SEC;
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, waiter_start(&w[i], fd, 1, deadline, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 2, 1500));
	ASSERT_EQ(0, ks_unl_name(name));
	EXPECT_NO_NAME(name);
	sleep_ms(50);
	EXPECT_EQ(2ULL, ks_nwaiters(fd));
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 1, 0));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, waiter_join(&w[i], 2000));
		EXPECT_EQ(0, w[i].ret);
	}
	close(fd);
}

/* ---- races ---- */

#define RACE_MS		1000
#define NRACERS		3

struct race_arg {
	const char *name;
	int id;
	__u64 end;
};

/*
 * out[0]: unexpected errors, out[1]: the last one, out[2]: successful
 * attaches (or creations), out[3]: loops.
 */
static void race_note(int *out, int err)
{
	out[0]++;
	out[1] = err;
}

static void race_attacher(void *arg, int *out)
{
	struct race_arg *r = arg;
	struct rl_acquire a;
	struct rl_stats s;
	int fd, i;

	out[0] = 0;
	out[2] = 0;
	out[3] = 0;
	for (i = 0; now_ns() < r->end; i++) {
		__u32 flags = (i + r->id) % 2 ? RL_ACQUIRE_NONBLOCK : 0;

		out[3]++;
		fd = ks_open();
		if (fd < 0) {
			race_note(out, errno);
			continue;
		}
		if (ks_att(fd, r->name, i % 3 ? 0 : RL_ATTACH_CREATE, 0600,
			   100000, NS_PER_SEC, 100)) {
			if (errno != ENOENT || !(i % 3))
				race_note(out, errno);
			close(fd);
			continue;
		}
		out[2]++;
		if (ks_acq(fd, 1, now_ns() + 500 * NS_PER_MS, flags, &a) &&
		    errno != EAGAIN)
			race_note(out, errno);
		if (ks_stats(fd, &s))
			race_note(out, errno);
		if (i % 5 == 0 && ks_set(fd, 100000, NS_PER_SEC, 100, 0))
			race_note(out, errno);
		close(fd);
	}
}

static void race_unlinker(void *arg, int *out)
{
	struct race_arg *r = arg;
	int fd, i;

	out[0] = 0;
	out[2] = 0;
	out[3] = 0;
	for (i = 0; now_ns() < r->end; i++) {
		out[3]++;
		if (ks_unl_name(r->name) && errno != ENOENT)
			race_note(out, errno);
		fd = ks_open();
		if (fd < 0) {
			race_note(out, errno);
			continue;
		}
		if (ks_att(fd, r->name, RL_ATTACH_CREATE | RL_ATTACH_EXCL |
			   (i % 2 ? RL_ATTACH_PERSIST : 0), 0600,
			   100000, NS_PER_SEC, 100)) {
			if (errno != EEXIST)
				race_note(out, errno);
		} else {
			out[2]++;
		}
		close(fd);
	}
}

/* Readers and writers of the sysfs files of a name that comes and goes. */
static void race_sysfs(void *arg, int *out)
{
	static const char *const files[] = {
		"rate", "client_list", "clients", "available", "waiters",
		"owner", "mode", "persistent", "granted",
	};
	struct race_arg *r = arg;
	char buf[4096];
	unsigned int i;

	out[0] = 0;
	out[2] = 0;
	out[3] = 0;
	for (i = 0; now_ns() < r->end; i++) {
		out[3]++;
		if (sysfs_read(r->name, files[i % ARRAY_SIZE(files)], buf,
			       sizeof(buf))) {
			if (errno != ENOENT && errno != ENODEV)
				race_note(out, errno);
		} else {
			out[2]++;
		}
		if (sysfs_write(r->name, i % 2 ? "rate" : "burst", "100000") &&
		    errno != ENOENT && errno != ENODEV)
			race_note(out, errno);
	}
}

static void expect_racer(struct __test_metadata *_metadata, const char *who,
			 int ret, const int *out)
{
	EXPECT_EQ(0, ret);
	if (out[0])
		TH_LOG("%s: %d unexpected errors, the last %d (%s)", who,
		       out[0], out[1], strerror(out[1]));
	EXPECT_EQ(0, out[0]);
	EXPECT_LT(0, out[2]);
	EXPECT_LT(0, out[3]);
}

TEST(race_attach_unlink_recreate)
{
	struct race_arg args[NRACERS + 2];
	struct ks_child ch[NRACERS + 2];
	int out[RUN_AS_MAX], i, n = NRACERS + 2;
	char name[RL_NAME_MAX];
	__u64 n0 = ks_named_count();

	NAME(name, "race");
	for (i = 0; i < n; i++) {
		args[i].name = name;
		args[i].id = i;
		args[i].end = now_ns() + RACE_MS * NS_PER_MS;
	}
	for (i = 0; i < NRACERS; i++)
		ASSERT_EQ(0, child_start(&ch[i], NULL, race_attacher,
					 &args[i]));
	ASSERT_EQ(0, child_start(&ch[i], NULL, race_unlinker, &args[i]));
	i++;
	ASSERT_EQ(0, child_start(&ch[i], NULL, race_sysfs, &args[i]));
	for (i = 0; i < n; i++) {
		int ret = child_finish(&ch[i], out, RACE_MS + 1500);

		expect_racer(_metadata, i < NRACERS ? "attacher" :
			     i == NRACERS ? "unlinker" : "sysfs", ret, out);
	}
	ks_unl_name(name);
	EXPECT_NO_NAME(name);
	EXPECT_EQ(0, wait_count(n0, 1000));
}

/* Many names at once: create, share and drop them in parallel. */
static void race_many(void *arg, int *out)
{
	struct race_arg *r = arg;
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	int fd[4], i, j;

	out[0] = 0;
	out[2] = 0;
	out[3] = 0;
	for (i = 0; now_ns() < r->end; i++) {
		out[3]++;
		for (j = 0; j < 4; j++) {
			snprintf(name, sizeof(name), "rlt-%d-many%d",
				 getppid(), (i + j) % 6);
			fd[j] = ks_open_att(name, RL_ATTACH_CREATE, 0600,
					    100000, NS_PER_SEC, 100);
			if (fd[j] < 0) {
				race_note(out, errno);
				continue;
			}
			out[2]++;
			if (ks_acq(fd[j], 1, 0, RL_ACQUIRE_NONBLOCK, &a) &&
			    errno != EAGAIN)
				race_note(out, errno);
		}
		for (j = 0; j < 4; j++)
			if (fd[j] >= 0)
				close(fd[j]);
	}
}

TEST(race_many_names)
{
	struct race_arg args[NRACERS];
	struct ks_child ch[NRACERS];
	int out[RUN_AS_MAX], i;
	__u64 n0 = ks_named_count();

	for (i = 0; i < NRACERS; i++) {
		args[i].name = NULL;
		args[i].id = i;
		args[i].end = now_ns() + RACE_MS * NS_PER_MS;
		ASSERT_EQ(0, child_start(&ch[i], NULL, race_many, &args[i]));
	}
	for (i = 0; i < NRACERS; i++)
		expect_racer(_metadata, "many",
			     child_finish(&ch[i], out, RACE_MS + 1500), out);
	EXPECT_EQ(0, wait_count(n0, 1000));
}

struct same_fd_arg {
	int fd;
	int id;
	int *go;
	int ret;
	int err;
	char name[RL_NAME_MAX];
};

static void *same_fd_fn(void *arg)
{
	struct same_fd_arg *r = arg;

	while (!__atomic_load_n(r->go, __ATOMIC_ACQUIRE))
		;
	if (r->id == 0)
		r->ret = ks_set(r->fd, 0, NS_PER_SEC, 9, 0);
	else
		r->ret = ks_att(r->fd, r->name, RL_ATTACH_CREATE, 0600, 0,
				NS_PER_SEC, r->id);
	r->err = errno;
	return NULL;
}

#define NSAME	4

/*
 * Threads race to give one fresh fd a limiter: SET_CONFIG (a private one)
 * against ATTACH to different names. Exactly one limiter results: at most
 * one ATTACH succeeds, the others fail with EBUSY and create nothing.
 */
TEST(race_attach_same_fd)
{
	struct same_fd_arg r[NSAME];
	pthread_t th[NSAME];
	int go, i, round, attached;
	__u64 n0 = ks_named_count();
	struct rl_config c;

	for (round = 0; round < 20; round++) {
		int fd = ks_open();

		ASSERT_LE(0, fd);
		go = 0;
		for (i = 0; i < NSAME; i++) {
			r[i].fd = fd;
			r[i].id = i;
			r[i].go = &go;
			snprintf(r[i].name, sizeof(r[i].name), "rlt-%d-sf%d",
				 getpid(), i);
			ASSERT_EQ(0, pthread_create(&th[i], NULL, same_fd_fn,
						    &r[i]));
		}
		__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
		attached = -1;
		for (i = 0; i < NSAME; i++) {
			ASSERT_EQ(0, pthread_join(th[i], NULL));
			if (i == 0 || !r[i].ret)
				continue;
			EXPECT_EQ(EBUSY, r[i].err);
			EXPECT_FALSE(sysfs_exists(r[i].name));
		}
		for (i = 1; i < NSAME; i++) {
			if (r[i].ret)
				continue;
			EXPECT_EQ(-1, attached);
			attached = i;
			EXPECT_TRUE(sysfs_exists(r[i].name));
		}
		/* SET_CONFIG works either way: private or named limiter. */
		EXPECT_EQ(0, r[0].ret);
		ASSERT_EQ(0, ks_get(fd, &c));
		if (attached < 0) {
			EXPECT_EQ(9ULL, c.burst);
		} else {
			EXPECT_EQ(c.burst, sysfs_u64(r[attached].name,
						     "burst"));
		}
		close(fd);
		EXPECT_EQ(n0, ks_named_count());
	}
}

/*
 * Leave a persistent limiter, with its token state, for the module
 * unload at the end of the run: rmmod must free it (the rig checks that
 * rmmod succeeds and, with kmemleak, that nothing leaks).
 */
TEST(persistent_left_for_unload)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	int fd;

	snprintf(name, sizeof(name), "rlt-left-for-unload");
	ks_unl_name(name);
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_PERSIST, 0644,
			 SLOW_RATE, SLOW_PERIOD, 5);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
	EXPECT_TRUE(sysfs_exists(name));
}

/* TEST_HARNESS_MAIN, and the pacing client of exec_programs_share. */
static void __attribute__((constructor)) __constructor_order_last(void)
{
	if (!__constructor_order)
		__constructor_order = _CONSTRUCTOR_ORDER_BACKWARD;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], PACE_ARG))
		return pace_main(argc, argv);
	return test_harness_run(argc, argv);
}
