// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftest of module unload with named limiters: 8 times, create 200
 * persistent named limiters through the library, which maps each fd's
 * reservation page, and close each fd with close(2) (one is kept, with
 * tokens taken, until just before the unload), unload the module and load
 * it again. The pages a process keeps mapped pin neither a client nor the
 * module: the unload must succeed and free them all. On the debug kernel
 * the rig's kmemleak scan after the run reports anything left behind;
 * here the unreclaimable slab may grow by 64 kB at most over the cycles.
 * The same with keyed limiters: a persistent named one holding 100,000
 * live keys and a private one of 10,000 closed before, 4 times: the
 * unload frees every key (the keys' slab cache is destroyed with the
 * module, which the kernel log would show if a key were left in it).
 *
 * Needs the module file at KS_KO (the QEMU rig puts it at /ratelimit.ko);
 * skipped without it. Leaves the module loaded.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"
#include "libratelimit.h"

#define KS_KO		"/ratelimit.ko"
#define CYCLES		8
#define NAMED		200
/* Slab the cycles may leave, kB: what other activity of the guest may take. */
#define SLAB_SLACK_KB	64
#define KEYED_CYCLES	4
#define KEYED_KEYS	100000
/* The keys take about 5 MB a cycle, 20 MB were they left behind. */
#define KEYED_SLACK_KB	2048
/*
 * The debug kernel has it: there KASAN's quarantine holds freed objects,
 * up to 1/32 of the memory (+48 MB seen after the keys' cycles), and the
 * rig's kmemleak scan after the run is the check.
 */
#define KS_KMEMLEAK	"/sys/kernel/debug/kmemleak"

static int mod_load(void)
{
	int fd = open(KS_KO, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -1;
	ret = syscall(SYS_finit_module, fd, "", 0);
	close(fd);
	return ret;
}

static int mod_unload(void)
{
	return syscall(SYS_delete_module, "ratelimit", O_NONBLOCK);
}

/* SUnreclaim of /proc/meminfo, kB, or -1. */
static long sunreclaim_kb(void)
{
	char line[128];
	long kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SUnreclaim: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/*
 * Create the limiters, each fd mapped by the library and tokens taken
 * through it; all closed with close(2) but the first, returned in @fd.
 */
static int fill(struct __test_metadata *_metadata, int cycle, int *fd)
{
	struct rl_config c = { .rate = 100, .period_ns = NS_PER_SEC, .burst = 16 };
	char name[RL_NAME_MAX];
	int i, f;

	for (i = 0; i < NAMED; i++) {
		snprintf(name, sizeof(name), "reload-%d-%d", cycle, i);
		f = rl_open_named(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL |
				  RL_ATTACH_PERSIST, 0644, &c);
		if (f < 0) {
			TH_LOG("%s: %s", name, strerror(-f));
			return -1;
		}
		/* The second from the page the first filled. */
		EXPECT_EQ(0, rl_try_acquire(f, 1, NULL));
		EXPECT_EQ(0, rl_try_acquire(f, 1, NULL));
		if (i) {
			close(f);
			continue;
		}
		*fd = f;
	}
	return 0;
}

FIXTURE(reload) {
	int unused;
};

FIXTURE_SETUP(reload)
{
}

FIXTURE_TEARDOWN(reload)
{
	char name[RL_NAME_MAX];
	int c, i;

	/* Whatever happened, leave the module loaded, and none of ours. */
	if (access(KS_SYSFS, F_OK))
		mod_load();
	for (c = 0; c < CYCLES; c++)
		for (i = 0; i < NAMED; i++) {
			snprintf(name, sizeof(name), "reload-%d-%d", c, i);
			ks_unl_name(name);
		}
	for (c = 0; c < KEYED_CYCLES; c++) {
		snprintf(name, sizeof(name), "reload-keyed-%d", c);
		ks_unl_name(name);
	}
}

/* @n keys of @fd's keyed limiter, one token taken from each: 0 or -1. */
static int take_keys(int fd, unsigned int n)
{
	struct rl_key_acquire ka;
	unsigned int i;

	for (i = 0; i < n; i++) {
		memset(&ka, 0, sizeof(ka));
		ka.acquire.count = 1;
		ka.acquire.flags = RL_ACQUIRE_NONBLOCK;
		ka.key_len = sizeof(i);
		memcpy(ka.key, &i, sizeof(i));
		if (ioctl(fd, RL_IOC_ACQUIRE_KEY, &ka))
			return -1;
	}
	return 0;
}

TEST_F_TIMEOUT(reload, unload_with_named_limiters, 240)
{
	long before, after;
	int cycle, fd;
	__u64 n0;

	if (access(KS_KO, R_OK))
		SKIP(return, "no %s to load again", KS_KO);
	before = sunreclaim_kb();
	for (cycle = 0; cycle < CYCLES; cycle++) {
		fd = -1;
		/*
		 * Room for them: a fresh module has the default bounds (64 per
		 * user), and the tests before may have changed them.
		 */
		ASSERT_EQ(0, param_set("max_named", 100000));
		ASSERT_EQ(0, param_set("max_named_per_user", 100000));
		/* The tests before may have left some: those go with the unload. */
		n0 = ks_named_count();
		ASSERT_EQ(0, fill(_metadata, cycle, &fd));
		EXPECT_EQ(n0 + NAMED, ks_named_count());
		/* The module is busy while a file is open. */
		EXPECT_ERRNO(EWOULDBLOCK, mod_unload());
		close(fd);
		ASSERT_EQ(0, mod_unload());
		EXPECT_NE(0, access(KS_SYSFS, F_OK));
		ASSERT_EQ(0, mod_load());
		EXPECT_EQ(0ULL, ks_named_count());
	}
	after = sunreclaim_kb();
	TH_LOG("%d cycles of %d named limiters: SUnreclaim %ld kB -> %ld kB (%+ld kB)",
	       CYCLES, NAMED, before, after, after - before);
	/*
	 * With kmemleak (the debug kernel) its scan checks: KASAN's quarantine
	 * keeps freed objects in SUnreclaim until it is full (+31 MB here when
	 * this test ran first after boot).
	 */
	if (!access(KS_KMEMLEAK, F_OK))
		TH_LOG("kmemleak: the scan after the run checks, not SUnreclaim");
	else
		EXPECT_GE(SLAB_SLACK_KB, after - before);
}

/*
 * After the named limiters' cycles: a teardown of 100,000 keys moves the
 * slab caches' baseline that their 64 kB of slack is measured against.
 * With kmemleak (the debug kernel) its scan after the run is the check,
 * not SUnreclaim: a tenth of the keys in half the cycles then, since under
 * KASAN the test took 134 s of a CI run (3 s on the other kernels).
 */
TEST_F_TIMEOUT(reload, unload_with_keys, 240)
{
	struct rl_config c = {
		.rate = 1, .period_ns = 3600 * NS_PER_SEC, .burst = 1,
		.flags = RL_CONFIG_KEYED, .keys = 2 * KEYED_KEYS,
	};
	bool kmemleak = !access(KS_KMEMLEAK, F_OK);
	int cycle, fd, priv, cycles = KEYED_CYCLES;
	struct rl_keys_stats ks;
	char name[RL_NAME_MAX];
	long before, after;
	unsigned int keys = KEYED_KEYS;

	if (access(KS_KO, R_OK))
		SKIP(return, "no %s to load again", KS_KO);
	if (kmemleak) {
		keys /= 10;
		cycles /= 2;
	}
	before = sunreclaim_kb();
	for (cycle = 0; cycle < cycles; cycle++) {
		ASSERT_EQ(0, param_set("max_named", 100000));
		ASSERT_EQ(0, param_set("max_named_per_user", 100000));
		snprintf(name, sizeof(name), "reload-keyed-%d", cycle);
		fd = ks_open();
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, ks_att_cfg(fd, name, RL_ATTACH_CREATE | RL_ATTACH_EXCL |
					RL_ATTACH_PERSIST, 0644, &c));
		ASSERT_EQ(0, take_keys(fd, keys));
		memset(&ks, 0, sizeof(ks));
		ASSERT_EQ(0, ioctl(fd, RL_IOC_GET_KEYS, &ks));
		EXPECT_EQ(keys, ks.keys);
		/* A private family's keys go with its fd. */
		priv = ks_open();
		ASSERT_LE(0, priv);
		ASSERT_EQ(0, ioctl(priv, RL_IOC_SET_CONFIG, &c));
		ASSERT_EQ(0, take_keys(priv, keys / 10));
		close(priv);
		EXPECT_ERRNO(EWOULDBLOCK, mod_unload());
		close(fd);
		/* The named family persists with its keys; the unload frees them. */
		ASSERT_EQ(0, mod_unload());
		ASSERT_EQ(0, mod_load());
		EXPECT_EQ(0ULL, ks_named_count());
	}
	after = sunreclaim_kb();
	TH_LOG("%d cycles of %u live keys: SUnreclaim %ld kB -> %ld kB (%+ld kB)",
	       cycles, keys, before, after, after - before);
	if (kmemleak)
		TH_LOG("kmemleak: the scan after the run checks, not SUnreclaim");
	EXPECT_TRUE(kmemleak || after - before <= KEYED_SLACK_KB);
}

TEST_HARNESS_MAIN
