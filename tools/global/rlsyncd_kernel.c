// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_kernel.c - the module's calls for global limits (issue #11):
 * a lease the kernel ends itself (RL_IOC_SET_LEASE), the demand of a
 * limiter (RL_IOC_GET_DEMAND), tokens fed to it (RL_IOC_DEPOSIT).
 * Each returns -ENOTTY when the library was built without them, when the
 * module predates them, or in rlsyncd-fake (RLS_FAKE, the simulated
 * limiter of selftests/global/fake_kernel.c) unless its limiter is fed
 * (demand and deposit simulated too), and the callers take the older
 * path.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define PROG "rlsyncd"
#include "rlsyncd_kernel.h"

#if defined(RL_IOC_SET_LEASE) && !defined(RLS_FAKE)
#define RLS_HAVE_KERNEL	1
#endif

int rls_k_device(void)
{
#ifdef RLS_FAKE
	return 0;
#else
	int fd = rl_open(0);

	if (fd >= 0)
		return rl_close(fd);
	fprintf(stderr, PROG ": %s: %s%s\n", RL_DEVICE_PATH, strerror(-fd),
		fd == -ENOENT || fd == -ENODEV || fd == -ENXIO ?
		" (is ratelimit.ko loaded? modprobe ratelimit)" : "");
	return fd;
#endif
}

unsigned int rls_k_features(int fd)
{
#ifdef RLS_HAVE_KERNEL
	struct rl_features f;
	unsigned int have = 0;

	if (rl_get_features(fd, &f))
		return 0;
	if (f.ioctls & (1ULL << _IOC_NR(RL_IOC_SET_LEASE)))
		have |= RLS_K_LEASE;
	if (f.ioctls & (1ULL << _IOC_NR(RL_IOC_GET_DEMAND)))
		have |= RLS_K_DEMAND;
	if ((f.ioctls & (1ULL << _IOC_NR(RL_IOC_DEPOSIT))) &&
	    (f.config_flags & RL_CONFIG_FED))
		have |= RLS_K_DEPOSIT;
	return have;
#elif defined(RLS_FAKE)
	(void)fd;
	return fake_k_features();
#else
	(void)fd;
	return 0;
#endif
}

uint64_t rls_k_fed_flag(void)
{
#ifdef RLS_HAVE_KERNEL
	return RL_CONFIG_FED;
#else
	return 0;
#endif
}

int rls_k_lease(int fd, const struct rl_config *cfg,
		const struct rl_config *fallback, uint64_t until)
{
#ifdef RLS_HAVE_KERNEL
	struct rl_lease ls;

	memset(&ls, 0, sizeof(ls));
	ls.expires_ns = until;
	ls.config = *cfg;
	ls.fallback = *fallback;
	return rl_set_lease(fd, &ls);
#else
	(void)fd;
	(void)cfg;
	(void)fallback;
	(void)until;
	return -ENOTTY;
#endif
}

int rls_k_demand(int fd, struct rls_demand *d)
{
#ifdef RLS_HAVE_KERNEL
	struct rl_demand k;
	int ret;

	memset(&k, 0, sizeof(k));
	ret = rl_get_demand(fd, &k);
	if (ret)
		return ret;
	d->asked = k.asked;
	d->refused = k.refused;
	d->queued = k.queued;
	d->busy_ns = k.busy_ns;
	d->now_ns = k.now_ns;
	return 0;
#elif defined(RLS_FAKE)
	uint64_t k[5];
	int ret = fake_k_demand(fd, k);

	if (ret)
		return ret;
	d->asked = k[0];
	d->refused = k[1];
	d->queued = k[2];
	d->busy_ns = k[3];
	d->now_ns = k[4];
	return 0;
#else
	(void)fd;
	(void)d;
	return -ENOTTY;
#endif
}

int rls_k_deposit(int fd, uint64_t count, uint64_t *excess)
{
#ifdef RLS_HAVE_KERNEL
	return rl_deposit(fd, count, excess);
#elif defined(RLS_FAKE)
	return fake_k_deposit(fd, count, excess);
#else
	(void)fd;
	(void)count;
	(void)excess;
	return -ENOTTY;
#endif
}
