// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of /sys/kernel/ratelimit/: the top-level files, one directory
 * of five files per named limiter, their modes, the lines of stat and
 * config, several tunables in one write, values that agree with GET_CONFIG
 * and GET_STATS, writes that reconfigure (and wake waiters), writes that
 * must fail and change nothing, and client_list.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"

#define SLOW_RATE	1ULL
#define SLOW_PERIOD	(10 * NS_PER_SEC)
/* How long a woken thread may take to run under TCG. */
#define LATE_NS		(700 * NS_PER_MS)

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

/* The tunables, config's lines: sysfs_invalid_writes writes each. */
static const char *const rw_files[] = {
	"rate", "period_ns", "burst", "unlimited", "concurrency", "fairness",
	"catchup", "backlog",
	"fed",
};

/* The lines of stat, in their order. */
static const char *const stat_keys[] = {
	"granted", "requests", "immediate", "waited", "wait_ns_total",
	"wait_ns_max", "timeouts", "interrupted", "rejected", "waiters",
	"available", "held", "refunded", "backlog_tokens",
	"asked", "refused", "queued", "busy_ns", "clients", "owner", "group",
	"mode", "persistent", "lease_ns", "lease_pid",
};

/* The files of a limiter's directory: config, then the read-only ones. */
static const char *const dir_files[] = {
	"config", "stat", "children", "client_list", "wait_histogram",
};

static int new_named(const char *name, __u32 flags, __u32 mode, __u64 rate,
		     __u64 period, __u64 burst)
{
	return ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL | flags,
			   mode, rate, period, burst);
}

/* Directories of the host's limiters under /sys/kernel/ratelimit (no ipc:INUM), or -1. */
static int count_dirs(void)
{
	struct dirent *de;
	int n = 0;
	DIR *d;

	d = opendir(KS_SYSFS);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_type == DT_DIR && de->d_name[0] != '.' &&
		    !strchr(de->d_name, ':'))
			n++;
	closedir(d);
	return n;
}

/* ---- top-level files ---- */

TEST(top_files)
{
	static const char *const files[] = { "count", "version", "features" };
	char path[256], buf[256];
	struct stat st;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", KS_SYSFS, files[i]);
		ASSERT_EQ(0, stat(path, &st));
		EXPECT_TRUE(S_ISREG(st.st_mode));
		EXPECT_EQ(0444, st.st_mode & 07777);
		EXPECT_EQ(0U, st.st_uid);
		/* Even root: a sysfs file without a store method. */
		EXPECT_ERRNO(EACCES, file_write(path, "1"));
	}
	ASSERT_EQ(0, file_read(KS_SYSFS "/version", buf, sizeof(buf)));
	EXPECT_EQ((__u64)RL_ABI_VERSION, strtoull(buf, NULL, 10));
	EXPECT_EQ(0, file_read(KS_SYSFS "/count", buf, sizeof(buf)));
}

/*
 * The module's MODULE_VERSION, the project's version (the Makefile's
 * VERSION, as the tools' --version), in /sys/module/ratelimit/version.
 */
TEST(module_version)
{
	char buf[64];

	ASSERT_EQ(0, file_read("/sys/module/ratelimit/version", buf,
			       sizeof(buf)));
	EXPECT_STREQ(RL_VERSION, buf);
}

/* Every word of this version, each once (the driver builds the line). */
TEST(features_words)
{
	static const char *const words[] = {
		"unlimited", "nonblock", "predict", "named", "sysfs",
		"priority", "fair-share", "cap", "concurrency", "refund",
		"catchup", "queued", "fast", "ipc-namespace", "fair-per-user",
	};
	char buf[256], padded[260], w[64];
	const char *at;
	unsigned int i;

	ASSERT_EQ(0, file_read(KS_SYSFS "/features", buf, sizeof(buf)));
	snprintf(padded, sizeof(padded), " %s ", buf);
	for (i = 0; i < ARRAY_SIZE(words); i++) {
		snprintf(w, sizeof(w), " %s ", words[i]);
		at = strstr(padded, w);
		if (!at || strstr(at + 1, w))
			TH_LOG("\"%s\": %s not there once", buf, words[i]);
		EXPECT_NE(NULL, at);
		if (at)
			EXPECT_EQ(NULL, strstr(at + 1, w));
	}
}

TEST(count_tracks_limiters)
{
	char n1[RL_NAME_MAX], n2[RL_NAME_MAX];
	__u64 n0 = ks_named_count();
	int fd1, fd2;

	ASSERT_NE(POISON64, n0);
	EXPECT_EQ((int)n0, count_dirs());
	NAME(n1, "c1");
	NAME(n2, "c2");
	fd1 = new_named(n1, 0, 0600, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd1);
	EXPECT_EQ(n0 + 1, ks_named_count());
	fd2 = new_named(n2, RL_ATTACH_PERSIST, 0600, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd2);
	close(fd2);
	EXPECT_EQ(n0 + 2, ks_named_count());
	EXPECT_EQ((int)n0 + 2, count_dirs());
	close(fd1);
	EXPECT_EQ(n0 + 1, ks_named_count());
	EXPECT_EQ(0, ks_unl_name(n2));
	EXPECT_EQ(n0, ks_named_count());
	EXPECT_EQ((int)n0, count_dirs());
}

/* ---- the files of a limiter ---- */

TEST(limiter_files_and_modes)
{
	char name[RL_NAME_MAX], path[256];
	struct dirent *de;
	struct stat st;
	unsigned int i, n = 0;
	DIR *d;
	int fd;

	NAME(name, "f");
	fd = new_named(name, 0, 0640, 100, NS_PER_SEC, 10);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, stat(sysfs_path(path, sizeof(path), name, NULL), &st));
	EXPECT_TRUE(S_ISDIR(st.st_mode));
	EXPECT_EQ(0755, st.st_mode & 07777);
	for (i = 0; i < ARRAY_SIZE(dir_files); i++) {
		ASSERT_EQ(0, stat(sysfs_path(path, sizeof(path), name,
					     dir_files[i]), &st));
		if ((st.st_mode & 07777) != (i ? 0444 : 0644))
			TH_LOG("%s: %04o", dir_files[i], st.st_mode & 07777);
		EXPECT_TRUE(S_ISREG(st.st_mode));
		EXPECT_EQ(i ? 0444 : 0644, st.st_mode & 07777);
		EXPECT_EQ(0U, st.st_uid);
		EXPECT_EQ(0U, st.st_gid);
	}
	/* These five, nothing else: each file is a kernfs node of 128 B. */
	d = opendir(sysfs_path(path, sizeof(path), name, NULL));
	ASSERT_NE(NULL, d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	EXPECT_EQ(ARRAY_SIZE(dir_files), n);
	close(fd);
}

TEST(read_only_files_reject_writes)
{
	char name[RL_NAME_MAX], path[256];
	unsigned int i;
	int fd;

	NAME(name, "ro");
	fd = new_named(name, 0, 0600, SLOW_RATE, SLOW_PERIOD, 3);
	ASSERT_LE(0, fd);
	for (i = 1; i < ARRAY_SIZE(dir_files); i++) {
		sysfs_path(path, sizeof(path), name, dir_files[i]);
		/* Even root: a 0444 sysfs file has no store method. */
		EXPECT_ERRNO(EACCES, file_write(path, "granted 0"));
	}
	EXPECT_EQ(3ULL, sysfs_u64(name, "available"));
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	close(fd);
}

/* stat: every key once, in the ABI's order, "KEY VALUE" lines. */
TEST(stat_lines)
{
	char name[RL_NAME_MAX], text[4096], key[64];
	unsigned long long v;
	unsigned int i = 0;
	char *line, *save;
	int fd, n;

	NAME(name, "st");
	fd = new_named(name, 0, 0640, 100, NS_PER_SEC, 10);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sysfs_read(name, "stat", text, sizeof(text)));
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), i++) {
		ASSERT_GT(ARRAY_SIZE(stat_keys), i);
		n = sscanf(line, "%63s %llu", key, &v);
		ASSERT_EQ(2, n);
		EXPECT_STREQ(stat_keys[i], key);
	}
	EXPECT_EQ(ARRAY_SIZE(stat_keys), i);
	EXPECT_EQ(10ULL, sysfs_u64(name, "available"));
	close(fd);
}

/* config: the tunables in order, then weight; parent only for a child. */
TEST(config_lines)
{
	char name[RL_NAME_MAX], kid[RL_NAME_MAX], text[4096], want[1024];
	int fd, fd2;

	NAME(name, "cl");
	NAME(kid, "clk");
	fd = new_named(name, 0, 0600, 100, NS_PER_SEC, 10);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sysfs_read(name, "config", text, sizeof(text)));
	EXPECT_STREQ("rate 100\nperiod_ns 1000000000\nburst 10\n"
		     "unlimited 0\nconcurrency 0\nfairness 10\n"
		     "catchup 1000\nbacklog 0\nfed 0\nkeyed 0\nkeys 0\n"
		     "fair_per_user 0\nweight 1", text);
	fd2 = new_named(kid, 0, 0600, 5, NS_PER_SEC, 1);
	ASSERT_LE(0, fd2);
	snprintf(want, sizeof(want), "parent %s\nweight 3\n", name);
	EXPECT_EQ(0, sysfs_write(kid, "config", want));
	ASSERT_EQ(0, sysfs_read(kid, "config", text, sizeof(text)));
	snprintf(want, sizeof(want), "rate 5\nperiod_ns 1000000000\nburst 1\n"
		 "unlimited 0\nconcurrency 0\nfairness 10\ncatchup 1000\n"
		 "backlog 0\nfed 0\nkeyed 0\nkeys 0\nfair_per_user 0\n"
		 "weight 3\nparent %s", name);
	EXPECT_STREQ(want, text);
	/* "parent" with no value: a root again, its weight kept. */
	EXPECT_EQ(0, sysfs_write(kid, "config", "parent\n"));
	ASSERT_EQ(0, sysfs_read(kid, "config", text, sizeof(text)));
	EXPECT_EQ(NULL, strstr(text, "parent"));
	EXPECT_EQ(3ULL, sysfs_u64(kid, "weight"));
	close(fd2);
	close(fd);
}

/* Several lines in one write: all at once, or none on an error. */
TEST(config_write_several)
{
	char name[RL_NAME_MAX];
	struct rl_config want;
	int fd;

	NAME(name, "cw");
	fd = new_named(name, 0, 0600, 100, NS_PER_SEC, 10);
	ASSERT_LE(0, fd);
	/* Rate, period and burst in one write. */
	EXPECT_EQ(0, sysfs_write(name, "config",
				 "period_ns 10000000\nrate 2\nburst 4\n"));
	EXPECT_CONFIG(fd, 2, 10 * NS_PER_MS, 4, 0);
	/* Applied in the table's order: burst 0 follows the new rate. */
	EXPECT_EQ(0, sysfs_write(name, "config", "burst 0\nrate 1000"));
	EXPECT_CONFIG(fd, 1000, 10 * NS_PER_MS, 10000, 0);
	ASSERT_EQ(0, ks_get(fd, &want));
	/* One bad line: nothing changes. */
	EXPECT_ERRNO(EINVAL, sysfs_write(name, "config", "rate 7\nburst x\n"));
	EXPECT_ERRNO(EINVAL, sysfs_write(name, "config", "rate 7\nnope 1\n"));
	EXPECT_ERRNO(EINVAL, sysfs_write(name, "config", "rate 7\nrate 8\n"));
	EXPECT_ERRNO(EINVAL, sysfs_write(name, "config", "rate 7\nburst\n"));
	EXPECT_ERRNO(EINVAL, sysfs_write(name, "config", "rate 7 burst 3"));
	EXPECT_ERRNO(EINVAL, sysfs_write(name, "config", "rate\t7"));
	EXPECT_ERRNO(EINVAL, sysfs_write(name, "config", "rate 7\nweight 0"));
	EXPECT_ERRNO(EINVAL, sysfs_write(name, "config", "\n"));
	EXPECT_ERRNO(EINVAL, sysfs_write(name, "config", "rate 7\n\n"));
	EXPECT_ERRNO(EINVAL, sysfs_write(name, "config", "\nrate 7"));
	EXPECT_ERRNO(EINVAL, sysfs_write(name, "config", "7"));
	/* Valid lines, an invalid whole: burst * period_ns past 2^63. */
	EXPECT_ERRNO(EINVAL, sysfs_write(name, "config",
					 "rate 7\nperiod_ns 86400000000000\n"
					 "burst 18446744073709551615\n"));
	EXPECT_ERRNO(ENOENT, sysfs_write(name, "config",
					 "rate 7\nparent rlt-none-such"));
	EXPECT_CONFIG(fd, want.rate, want.period_ns, want.burst, want.flags);
	/* What config reads, config takes back. */
	EXPECT_EQ(0, sysfs_write(name, "config",
				 "rate 1000\nperiod_ns 10000000\nburst 10000\n"
				 "unlimited 0\nconcurrency 0\nfairness 10\n"
				 "catchup 1000\nbacklog 0\nfed 0\nweight 1\n"));
	EXPECT_CONFIG(fd, want.rate, want.period_ns, want.burst, want.flags);
	close(fd);
}

TEST(identity_files)
{
	char name[RL_NAME_MAX], buf[32];
	int fd;

	NAME(name, "id");
	fd = new_named(name, 0, 0640, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0ULL, sysfs_u64(name, "owner"));
	EXPECT_EQ(0ULL, sysfs_u64(name, "group"));
	ASSERT_EQ(0, sysfs_read(name, "mode", buf, sizeof(buf)));
	EXPECT_STREQ("0640", buf);
	EXPECT_EQ(0ULL, sysfs_u64(name, "persistent"));
	close(fd);

	fd = new_named(name, RL_ATTACH_PERSIST, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, sysfs_read(name, "mode", buf, sizeof(buf)));
	EXPECT_STREQ("0000", buf);
	EXPECT_EQ(1ULL, sysfs_u64(name, "persistent"));
	EXPECT_EQ(0ULL, sysfs_u64(name, "clients"));
	EXPECT_EQ(0, ks_unl_name(name));
}

TEST(config_values_match)
{
	char name[RL_NAME_MAX];
	struct rl_config c;
	int fd;

	NAME(name, "cv");
	fd = new_named(name, 0, 0600, 12345, 2 * NS_PER_SEC, 77);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ(c.rate, sysfs_u64(name, "rate"));
	EXPECT_EQ(c.period_ns, sysfs_u64(name, "period_ns"));
	EXPECT_EQ(c.burst, sysfs_u64(name, "burst"));
	EXPECT_EQ(0ULL, sysfs_u64(name, "unlimited"));
	EXPECT_EQ(12345ULL, sysfs_u64(name, "rate"));
	EXPECT_EQ(77ULL, sysfs_u64(name, "available"));
	close(fd);
}

TEST(set_config_seen_in_sysfs)
{
	char name[RL_NAME_MAX];
	int fd;

	NAME(name, "sc");
	fd = new_named(name, 0, 0600, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 999, 3 * NS_PER_SEC, 33, 0));
	EXPECT_EQ(999ULL, sysfs_u64(name, "rate"));
	EXPECT_EQ(3 * NS_PER_SEC, sysfs_u64(name, "period_ns"));
	EXPECT_EQ(33ULL, sysfs_u64(name, "burst"));
	EXPECT_EQ(0ULL, sysfs_u64(name, "unlimited"));
	ASSERT_EQ(0, ks_set(fd, 999, 3 * NS_PER_SEC, 33, RL_CONFIG_UNLIMITED));
	EXPECT_EQ(1ULL, sysfs_u64(name, "unlimited"));
	/* burst 0: the default, 100 ms at 1000/s. */
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 0, 0));
	EXPECT_EQ(100ULL, sysfs_u64(name, "burst"));
	EXPECT_EQ(0ULL, sysfs_u64(name, "unlimited"));
	close(fd);
}

TEST(sysfs_write_seen_by_get_config)
{
	char name[RL_NAME_MAX];
	int fd, fd2;

	NAME(name, "sw");
	fd = new_named(name, 0, 0600, 10, NS_PER_SEC, 5);
	ASSERT_LE(0, fd);
	fd2 = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, sysfs_write(name, "rate", "500"));
	EXPECT_CONFIG(fd, 500, NS_PER_SEC, 5, 0);
	/* A trailing newline, as echo writes it. */
	EXPECT_EQ(0, sysfs_write(name, "period_ns", "2000000000\n"));
	EXPECT_CONFIG(fd2, 500, 2 * NS_PER_SEC, 5, 0);
	EXPECT_EQ(0, sysfs_write(name, "burst", "25"));
	EXPECT_CONFIG(fd, 500, 2 * NS_PER_SEC, 25, 0);
	EXPECT_EQ(0, sysfs_write(name, "unlimited", "1"));
	EXPECT_CONFIG(fd2, 500, 2 * NS_PER_SEC, 25, RL_CONFIG_UNLIMITED);
	EXPECT_EQ(1ULL, sysfs_u64(name, "unlimited"));
	EXPECT_EQ(0, sysfs_write(name, "unlimited", "0\n"));
	EXPECT_CONFIG(fd, 500, 2 * NS_PER_SEC, 25, 0);
	EXPECT_EQ(0, sysfs_write(name, "rate", "0"));
	EXPECT_CONFIG(fd, 0, 2 * NS_PER_SEC, 25, 0);
	EXPECT_EQ(0ULL, sysfs_u64(name, "rate"));
	close(fd);
	close(fd2);
}

TEST(sysfs_write_decimal)
{
	char name[RL_NAME_MAX];
	int fd;

	NAME(name, "dec");
	fd = new_named(name, 0, 0600, 1, NS_PER_SEC, 5);
	ASSERT_LE(0, fd);
	/* A leading zero is not octal. */
	EXPECT_EQ(0, sysfs_write(name, "rate", "010"));
	EXPECT_CONFIG(fd, 10, NS_PER_SEC, 5, 0);
	EXPECT_EQ(0, sysfs_write(name, "rate", "18446744073709551615"));
	EXPECT_CONFIG(fd, ~0ULL, NS_PER_SEC, 5, 0);
	EXPECT_EQ(0, sysfs_write(name, "period_ns", "86400000000000"));
	EXPECT_CONFIG(fd, ~0ULL, RL_PERIOD_MAX_NS, 5, 0);
	close(fd);
}

TEST(sysfs_write_burst_zero_default)
{
	char name[RL_NAME_MAX];
	int fd;

	NAME(name, "bz");
	fd = new_named(name, 0, 0600, 1000, NS_PER_SEC, 7);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, sysfs_write(name, "burst", "0"));
	EXPECT_CONFIG(fd, 1000, NS_PER_SEC, 100, 0);
	EXPECT_EQ(100ULL, sysfs_u64(name, "burst"));
	close(fd);
}

TEST(sysfs_write_keeps_tokens)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	int fd;

	NAME(name, "kt");
	fd = new_named(name, 0, 0600, 0, NS_PER_SEC, 10);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 4, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, sysfs_write(name, "rate", "0"));
	EXPECT_EQ(6ULL, ks_avail(fd));
	EXPECT_EQ(0, sysfs_write(name, "burst", "20"));
	EXPECT_EQ(6ULL, ks_avail(fd));
	EXPECT_EQ(6ULL, sysfs_u64(name, "available"));
	EXPECT_EQ(0, sysfs_write(name, "burst", "3"));
	EXPECT_EQ(3ULL, ks_avail(fd));
	close(fd);
}

/* The tunables of GET_CONFIG, all of them, match @want's. */
static void expect_same_config(struct __test_metadata *_metadata,
			       const struct rl_config *want,
			       const struct rl_config *c)
{
	EXPECT_EQ(want->rate, c->rate);
	EXPECT_EQ(want->period_ns, c->period_ns);
	EXPECT_EQ(want->burst, c->burst);
	EXPECT_EQ(want->flags, c->flags);
	EXPECT_EQ(want->catchup, c->catchup);
	EXPECT_EQ(want->concurrency, c->concurrency);
	EXPECT_EQ(want->backlog, c->backlog);
	EXPECT_EQ(want->fairness, c->fairness);
}

/*
 * A write of @val to @file must fail with EINVAL and change nothing. If it
 * succeeds, @want and @avail are put back so that one failure does not
 * cascade into the next checks.
 */
static void expect_bad_write(struct __test_metadata *_metadata, int fd,
			     const char *name, const char *file,
			     const char *val, const struct rl_config *want,
			     __u64 avail)
{
	struct rl_acquire a;
	struct rl_config c;
	int ret, err;
	__u64 now;

	ret = sysfs_write(name, file, val);
	err = ret ? errno : 0;
	if (ret != -1 || err != EINVAL)
		TH_LOG("%s <- \"%s\": %s", file, val,
		       ret ? strerror(err) : "accepted");
	EXPECT_EQ(-1, ret);
	EXPECT_EQ(EINVAL, err);
	ASSERT_EQ(0, ks_get(fd, &c));
	expect_same_config(_metadata, want, &c);
	now = ks_avail(fd);
	EXPECT_EQ(avail, now);
	if (!ret) {
		ASSERT_EQ(0, ioctl(fd, RL_IOC_SET_CONFIG, want));
		now = ks_avail(fd);
		if (now > avail)
			ks_acq(fd, now - avail, 0, RL_ACQUIRE_NONBLOCK, &a);
	}
}

TEST(sysfs_invalid_writes)
{
	static const char *const garbage[] = {
		"abc", "-1", "99999999999999999999", "18446744073709551616",
		"1x", "x1", " ", "1 2", "1.5", "-0x1", "+-1",
		/* Decimal only: no hexadecimal. */
		"0x10", "0X1",
	};
	char name[RL_NAME_MAX], buf[32];
	struct rl_acquire a;
	struct rl_config want;
	unsigned int i, f;
	int fd;

	NAME(name, "bad");
	fd = new_named(name, 0, 0600, SLOW_RATE, SLOW_PERIOD, 3);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, ks_get(fd, &want));
	for (f = 0; f < ARRAY_SIZE(rw_files); f++)
		for (i = 0; i < ARRAY_SIZE(garbage); i++)
			expect_bad_write(_metadata, fd, name, rw_files[f],
					 garbage[i], &want, 2);
	expect_bad_write(_metadata, fd, name, "period_ns", "0", &want, 2);
	snprintf(buf, sizeof(buf), "%llu", RL_PERIOD_MAX_NS + 1);
	expect_bad_write(_metadata, fd, name, "period_ns", buf, &want, 2);
	/* burst * period_ns past 2^63 with a 10 s period. */
	snprintf(buf, sizeof(buf), "%llu",
		 RL_BURST_PERIOD_MAX / SLOW_PERIOD + 1);
	expect_bad_write(_metadata, fd, name, "burst", buf, &want, 2);
	expect_bad_write(_metadata, fd, name, "burst", "18446744073709551615",
			 &want, 2);
	expect_bad_write(_metadata, fd, name, "unlimited", "2", &want, 2);
	expect_bad_write(_metadata, fd, name, "unlimited", "-1", &want, 2);
	close(fd);
}

/*
 * The ABI refuses a sign: "+5" and "-5" fail with EINVAL on every
 * writable file and change nothing. Each file gets at least one value
 * that would be valid without its sign ("+0" for catchup, "+1" for
 * unlimited, "+5" for the others).
 */
TEST(sysfs_write_refuses_sign)
{
	static const char *const signed_vals[] = {
		"+5", "+5\n", "+0", "+1", "+1500", "-5", "-5\n", "-0", "-1",
	};
	char name[RL_NAME_MAX], before[ARRAY_SIZE(rw_files)][32], buf[32];
	struct rl_config want = {
		.rate = 7, .period_ns = 10 * NS_PER_SEC, .burst = 3,
		.catchup = 1500, .concurrency = 9, .backlog = 8,
		.fairness = 4,
	};
	struct rl_config c;
	unsigned int f, i, g;
	int fd, ret, err;

	NAME(name, "sign");
	fd = new_named(name, 0, 0600, SLOW_RATE, SLOW_PERIOD, 3);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, RL_IOC_SET_CONFIG, &want));
	ASSERT_EQ(0, ks_get(fd, &c));
	expect_same_config(_metadata, &want, &c);
	for (f = 0; f < ARRAY_SIZE(rw_files); f++)
		ASSERT_EQ(0, sysfs_read(name, rw_files[f], before[f],
					sizeof(before[f])));
	for (f = 0; f < ARRAY_SIZE(rw_files); f++) {
		for (i = 0; i < ARRAY_SIZE(signed_vals); i++) {
			ret = sysfs_write(name, rw_files[f], signed_vals[i]);
			err = ret ? errno : 0;
			if (ret != -1 || err != EINVAL)
				TH_LOG("%s <- \"%.*s%s\": %s", rw_files[f],
				       (int)strcspn(signed_vals[i], "\n"),
				       signed_vals[i],
				       strchr(signed_vals[i], '\n') ? "\\n" : "",
				       ret ? strerror(err) : "accepted");
			EXPECT_EQ(-1, ret);
			EXPECT_EQ(EINVAL, err);
			ASSERT_EQ(0, ks_get(fd, &c));
			expect_same_config(_metadata, &want, &c);
			for (g = 0; g < ARRAY_SIZE(rw_files); g++) {
				ASSERT_EQ(0, sysfs_read(name, rw_files[g], buf,
							sizeof(buf)));
				EXPECT_STREQ(before[g], buf);
			}
			/* Put it back: one failure, not a cascade. */
			if (!ret)
				ASSERT_EQ(0, ioctl(fd, RL_IOC_SET_CONFIG,
						   &want));
		}
	}
	close(fd);
}

TEST(sysfs_invalid_period_for_burst)
{
	/* The largest burst a one-second period allows. */
	__u64 burst = RL_BURST_PERIOD_MAX / NS_PER_SEC;
	char name[RL_NAME_MAX];
	struct rl_config want;
	int fd;

	NAME(name, "bp");
	fd = new_named(name, 0, 0600, 0, NS_PER_SEC, burst);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_get(fd, &want));
	EXPECT_EQ(burst, want.burst);
	/* A longer period takes burst * period_ns past 2^63. */
	expect_bad_write(_metadata, fd, name, "period_ns", "1000000001",
			 &want, burst);
	expect_bad_write(_metadata, fd, name, "period_ns", "2000000000",
			 &want, burst);
	/* A shorter one is fine. */
	EXPECT_EQ(0, sysfs_write(name, "period_ns", "999999999"));
	EXPECT_CONFIG(fd, 0, 999999999, burst, 0);
	close(fd);
}

/* ---- writes and waiters ---- */

static void wake_test(struct __test_metadata *_metadata, const char *tag,
		      const char *file, const char *val)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	struct waiter w;
	__u64 t0;
	int fd;

	NAME(name, tag);
	fd = new_named(name, 0, 0600, 0, NS_PER_SEC, 1);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, waiter_start(&w, fd, 1, now_ns() + 3 * NS_PER_SEC, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 1500));
	EXPECT_EQ(1ULL, sysfs_u64(name, "waiters"));
	sleep_ms(20);
	EXPECT_FALSE(__atomic_load_n(&w.done, __ATOMIC_SEQ_CST));
	t0 = now_ns();
	ASSERT_EQ(0, sysfs_write(name, file, val));
	ASSERT_EQ(0, waiter_join(&w, 2500));
	EXPECT_EQ(0, w.ret);
	/* Promptly: not at the 3 s deadline. */
	EXPECT_GT(t0 + LATE_NS, w.t_end);
	EXPECT_EQ(0ULL, sysfs_u64(name, "waiters"));
	close(fd);
}

TEST(sysfs_rate_wakes_waiter)
{
	wake_test(_metadata, "wr", "rate", "1000");
}

TEST(sysfs_unlimited_wakes_waiter)
{
	wake_test(_metadata, "wu", "unlimited", "1");
}

TEST(sysfs_period_wakes_waiter)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	struct waiter w;
	__u64 t0;
	int fd;

	/* One token per 100 s: shortening the period brings it forward. */
	NAME(name, "wp");
	fd = new_named(name, 0, 0600, 1, 100 * NS_PER_SEC, 1);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, waiter_start(&w, fd, 1, now_ns() + 3 * NS_PER_SEC, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 1500));
	t0 = now_ns();
	ASSERT_EQ(0, sysfs_write(name, "period_ns", "1000000"));
	ASSERT_EQ(0, waiter_join(&w, 2500));
	EXPECT_EQ(0, w.ret);
	EXPECT_GT(t0 + LATE_NS, w.t_end);
	close(fd);
}

/* ---- counters ---- */

static const char *const stat_files[] = {
	"granted", "requests", "immediate", "waited", "wait_ns_total",
	"wait_ns_max", "timeouts", "interrupted", "rejected", "waiters",
	"available",
};

static void stats_array(const struct rl_stats *s, __u64 *v)
{
	v[0] = s->granted;
	v[1] = s->requests;
	v[2] = s->immediate;
	v[3] = s->waited;
	v[4] = s->wait_ns_total;
	v[5] = s->wait_ns_max;
	v[6] = s->timeouts;
	v[7] = s->interrupted;
	v[8] = s->rejected;
	v[9] = s->waiters;
	v[10] = s->available;
}

TEST(stats_values_match)
{
	__u64 v[ARRAY_SIZE(stat_files)], left;
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	struct rl_stats s;
	unsigned int i;
	int fd;

	NAME(name, "st");
	fd = new_named(name, 0, 0600, 20, NS_PER_SEC, 2);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	/* Waits about 50 ms for the next token. */
	ASSERT_EQ(0, ks_acq(fd, 1, now_ns() + 2 * NS_PER_SEC, 0, &a));
	/* Freeze: no refill from now on. */
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 2, 0));
	left = ks_avail(fd);
	if (left)
		ASSERT_EQ(0, ks_acq(fd, left, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(ETIMEDOUT, ks_acq(fd, 1, 0, 0, &a));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_LE(1ULL, s.waited);
	EXPECT_LE(1ULL, s.rejected);
	EXPECT_LE(1ULL, s.timeouts);
	EXPECT_LT(0ULL, s.wait_ns_max);
	stats_array(&s, v);
	for (i = 0; i < ARRAY_SIZE(stat_files); i++) {
		__u64 got = sysfs_u64(name, stat_files[i]);

		if (got != v[i])
			TH_LOG("%s: sysfs %llu, GET_STATS %llu", stat_files[i],
			       (unsigned long long)got,
			       (unsigned long long)v[i]);
		EXPECT_EQ(v[i], got);
	}
	close(fd);
}

TEST(waiters_and_interrupted_match)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	struct waiter w[2];
	struct rl_stats s;
	int fd, i;

	NAME(name, "wi");
	fd = new_named(name, 0, 0600, 0, NS_PER_SEC, 1);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, catch_signal(SIGUSR1, 0));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, waiter_start(&w[i], fd, 1,
					  now_ns() + 3 * NS_PER_SEC, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 2, 1500));
	EXPECT_EQ(2ULL, sysfs_u64(name, "waiters"));
	pthread_kill(w[0].th, SIGUSR1);
	ASSERT_EQ(0, waiter_join(&w[0], 2000));
	EXPECT_EQ(-1, w[0].ret);
	EXPECT_EQ(EINTR, w[0].err);
	EXPECT_EQ(1ULL, sysfs_u64(name, "waiters"));
	EXPECT_EQ(1ULL, sysfs_u64(name, "interrupted"));
	ASSERT_EQ(0, sysfs_write(name, "rate", "1000"));
	ASSERT_EQ(0, waiter_join(&w[1], 2000));
	EXPECT_EQ(0, w[1].ret);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(s.interrupted, sysfs_u64(name, "interrupted"));
	EXPECT_EQ(s.waited, sysfs_u64(name, "waited"));
	EXPECT_EQ(s.granted, sysfs_u64(name, "granted"));
	EXPECT_EQ(0ULL, sysfs_u64(name, "waiters"));
	close(fd);
}

/* ---- clients and client_list ---- */

TEST(clients_counts_open_files)
{
	char name[RL_NAME_MAX];
	int fd1, fd2, fd3;

	NAME(name, "cl");
	fd1 = new_named(name, 0, 0600, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd1);
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	fd2 = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(2ULL, sysfs_u64(name, "clients"));
	fd3 = dup(fd2);
	ASSERT_LE(0, fd3);
	EXPECT_EQ(2ULL, sysfs_u64(name, "clients"));
	close(fd2);
	EXPECT_EQ(2ULL, sysfs_u64(name, "clients"));
	close(fd3);
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	close(fd1);
}

struct cl_entry {
	int pid;
	char comm[32];
	unsigned long long granted;
};

/* Parse client_list: the number of lines, -1 on a malformed one. */
static int client_list(const char *name, struct cl_entry *e, int max)
{
	char buf[4096], *line, *save = NULL;
	int n = 0;

	if (sysfs_read(name, "client_list", buf, sizeof(buf)))
		return -1;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (n == max)
			return -1;
		if (sscanf(line, "%d %31s %llu", &e[n].pid, e[n].comm,
			   &e[n].granted) != 3)
			return -1;
		n++;
	}
	return n;
}

/* Index of the entry of @pid granted @granted, or -1. */
static int cl_find(const struct cl_entry *e, int n, int pid,
		   unsigned long long granted)
{
	int i;

	for (i = 0; i < n; i++)
		if (e[i].pid == pid && e[i].granted == granted)
			return i;
	return -1;
}

static void cl_child(void *arg, int *out)
{
	const char *name = arg;
	struct rl_acquire a;
	int fd;

	fd = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0);
	out[0] = fd < 0 ? errno : 0;
	out[1] = ret_err(ks_acq(fd, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	out[2] = getpid();
	/* Stay attached while the parent reads client_list. */
	sleep_ms(600);
	close(fd);
}

TEST(client_list_lines)
{
	char name[RL_NAME_MAX], comm[32];
	struct cl_entry e[8];
	struct rl_acquire a;
	struct ks_child ch;
	int out[RUN_AS_MAX];
	int fd1, fd2, fd3, n, i;
	__u64 end;

	ASSERT_EQ(0, file_read("/proc/self/comm", comm, sizeof(comm)));
	NAME(name, "lst");
	fd1 = new_named(name, 0, 0600, SLOW_RATE, SLOW_PERIOD, 20);
	ASSERT_LE(0, fd1);
	fd2 = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ks_acq(fd1, 3, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, ks_acq(fd2, 5, 0, RL_ACQUIRE_NONBLOCK, &a));
	/* A dup is the same client: its grants add to fd2's line. */
	fd3 = dup(fd2);
	ASSERT_LE(0, fd3);
	ASSERT_EQ(0, ks_acq(fd3, 1, 0, RL_ACQUIRE_NONBLOCK, &a));

	n = client_list(name, e, 8);
	ASSERT_EQ(2, n);
	EXPECT_LE(0, cl_find(e, n, getpid(), 3));
	EXPECT_LE(0, cl_find(e, n, getpid(), 6));
	for (i = 0; i < n; i++)
		EXPECT_STREQ(comm, e[i].comm);

	/* Another process shows with its own pid. */
	ASSERT_EQ(0, child_start(&ch, NULL, cl_child, name));
	end = now_ns() + 2 * NS_PER_SEC;
	while (sysfs_u64(name, "granted") != 11 && now_ns() < end)
		sleep_ms(2);
	n = client_list(name, e, 8);
	ASSERT_EQ(3, n);
	EXPECT_LE(0, cl_find(e, n, ch.pid, 2));
	EXPECT_LE(0, cl_find(e, n, getpid(), 3));
	EXPECT_LE(0, cl_find(e, n, getpid(), 6));
	ASSERT_EQ(0, child_finish(&ch, out, 2000));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(0, out[1]);
	EXPECT_EQ(ch.pid, out[2]);

	/* Gone with its fd; the limiter keeps the tokens it granted. */
	n = client_list(name, e, 8);
	EXPECT_EQ(2, n);
	EXPECT_EQ(-1, cl_find(e, n, ch.pid, 2));
	EXPECT_EQ(11ULL, sysfs_u64(name, "granted"));
	close(fd1);
	n = client_list(name, e, 8);
	ASSERT_EQ(1, n);
	EXPECT_EQ(getpid(), e[0].pid);
	EXPECT_EQ(6ULL, e[0].granted);
	close(fd2);
	close(fd3);
}

static void cl_attach_child(void *arg, int *out)
{
	const char *name = arg;
	int fd;

	fd = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0);
	out[0] = fd < 0 ? errno : 0;
	out[1] = getpid();
	sleep_ms(400);
	close(fd);
}

TEST(client_list_empty_persistent)
{
	char name[RL_NAME_MAX], buf[64];
	int out[RUN_AS_MAX];
	int fd;

	NAME(name, "le");
	fd = new_named(name, RL_ATTACH_PERSIST, 0600, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, sysfs_read(name, "client_list", buf, sizeof(buf)));
	EXPECT_STREQ("", buf);
	ASSERT_EQ(0, run_as(NULL, cl_attach_child, name, out, 2000));
	EXPECT_EQ(0, out[0]);
	ASSERT_EQ(0, sysfs_read(name, "client_list", buf, sizeof(buf)));
	EXPECT_STREQ("", buf);
	EXPECT_EQ(0, ks_unl_name(name));
}

#define MANY_CLIENTS	300

/* More clients than lines fit in a page: the list stops at a full page. */
TEST(client_list_full_page)
{
	char name[RL_NAME_MAX], path[256];
	static char buf[3 * 4096];
	int fds[MANY_CLIENTS], i, f;
	ssize_t n;

	NAME(name, "full");
	for (i = 0; i < MANY_CLIENTS; i++) {
		fds[i] = i ? ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0) :
			     new_named(name, 0, 0600, 1, NS_PER_SEC, 0);
		ASSERT_LE(0, fds[i]);
	}
	EXPECT_EQ((__u64)MANY_CLIENTS, sysfs_u64(name, "clients"));
	f = open(sysfs_path(path, sizeof(path), name, "client_list"),
		 O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, f);
	n = read(f, buf, sizeof(buf));
	close(f);
	EXPECT_LT(1000, n);
	EXPECT_GE(4096, n);
	for (i = 0; i < MANY_CLIENTS; i++)
		close(fds[i]);
	EXPECT_FALSE(sysfs_exists(name));
}

/* ---- a directory per name ---- */

TEST(directory_follows_name)
{
	char name[RL_NAME_MAX], path[256];
	int fd, fd2, sfd;
	char buf[32];

	NAME(name, "dir");
	fd = new_named(name, 0, 0600, 111, NS_PER_SEC, 0);
	ASSERT_LE(0, fd);
	/* A sysfs file held open across the unlink. */
	sfd = open(sysfs_path(path, sizeof(path), name, "config"),
		   O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(0, ks_unl_name(name));
	EXPECT_FALSE(sysfs_exists(name));
	/* Reading it now fails (kernfs: ENODEV) rather than crashing. */
	EXPECT_GT(0, pread(sfd, buf, sizeof(buf), 0));
	close(sfd);
	/* The new limiter under the name gets the directory. */
	fd2 = new_named(name, 0, 0600, 222, NS_PER_SEC, 0);
	ASSERT_LE(0, fd2);
	EXPECT_TRUE(sysfs_exists(name));
	EXPECT_EQ(222ULL, sysfs_u64(name, "rate"));
	EXPECT_EQ(1ULL, sysfs_u64(name, "clients"));
	close(fd);
	EXPECT_TRUE(sysfs_exists(name));
	close(fd2);
	EXPECT_FALSE(sysfs_exists(name));
}

TEST_HARNESS_MAIN
