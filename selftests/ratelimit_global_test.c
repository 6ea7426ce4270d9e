// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of the kernel side of global limits: fed limiters and
 * RL_IOC_DEPOSIT, leases (RL_IOC_SET_LEASE) with their expiry and the
 * death of their holder, and demand (RL_IOC_GET_DEMAND, sysfs).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"

#define NAME(buf, tag)	snprintf(buf, sizeof(buf), "gl-%d-%s", getpid(), tag)

/* An unprivileged user, as in ratelimit_perm_test.c. */
static const struct ks_cred other = { 4244, 4244, 0, { 0 } };

/* RL_IOC_DEPOSIT of @count: 0 or -1 with errno; *@excess, *@avail out. */
static int deposit(int fd, __u64 count, __u64 *excess, __u64 *avail)
{
	struct rl_deposit d;
	int ret;

	memset(&d, 0, sizeof(d));
	d.count = count;
	d.available = POISON64;
	ret = ioctl(fd, RL_IOC_DEPOSIT, &d);
	if (!ret && excess)
		*excess = d.count;
	if (!ret && avail)
		*avail = d.available;
	return ret;
}

/* A private fed limiter of burst @burst, emptied. */
static int fed_fd(__u64 burst)
{
	struct rl_acquire a;
	int fd = ks_open();

	if (fd < 0)
		return -1;
	if (ks_set(fd, 1000, NS_PER_SEC, burst, RL_CONFIG_FED) ||
	    ks_acq(fd, burst, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK, &a)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void cfg(struct rl_config *c, __u64 rate, __u64 burst)
{
	memset(c, 0, sizeof(*c));
	c->rate = rate;
	c->period_ns = NS_PER_SEC;
	c->burst = burst;
}

/* A lease of @rate until @expires, falling back to @fb_rate. */
static int lease(int fd, __u64 expires, __u64 rate, __u64 fb_rate)
{
	struct rl_lease l;

	memset(&l, 0, sizeof(l));
	l.expires_ns = expires;
	cfg(&l.config, rate, 10);
	cfg(&l.fallback, fb_rate, 5);
	return ioctl(fd, RL_IOC_SET_LEASE, &l);
}

static __u64 rate_of(int fd)
{
	struct rl_config c;

	return ks_get(fd, &c) ? POISON64 : c.rate;
}

static int demand(int fd, struct rl_demand *d)
{
	memset(d, POISON_BYTE, sizeof(*d));
	d->flags = 0;
	d->reserved0 = 0;
	return ioctl(fd, RL_IOC_GET_DEMAND, d);
}

/* Wait up to @ms for the rate of @fd to become @rate. */
static __u64 wait_rate(int fd, __u64 rate, unsigned int ms)
{
	__u64 r = rate_of(fd);

	while (r != rate && ms--) {
		sleep_ms(1);
		r = rate_of(fd);
	}
	return r;
}

TEST(features)
{
	struct rl_features f;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, RL_IOC_GET_FEATURES, &f));
	EXPECT_TRUE(f.ioctls & (1ULL << _IOC_NR(RL_IOC_DEPOSIT)));
	EXPECT_TRUE(f.ioctls & (1ULL << _IOC_NR(RL_IOC_SET_LEASE)));
	EXPECT_TRUE(f.ioctls & (1ULL << _IOC_NR(RL_IOC_GET_DEMAND)));
	EXPECT_TRUE(f.config_flags & RL_CONFIG_FED);
	close(fd);
}

/* A fed limiter grants nothing but what is deposited. */
TEST(fed_grants_nothing)
{
	struct rl_acquire a;
	struct rl_config c;
	int fd = fed_fd(10);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ((__u32)RL_CONFIG_FED, c.flags);
	sleep_ms(50);	/* 50 tokens at the rate, were it not fed */
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, RL_DEADLINE_NONE,
				    RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(RL_DEADLINE_NONE, a.ready_ns);
	EXPECT_EQ(0ULL, ks_avail(fd));
	ASSERT_EQ(0, deposit(fd, 2, NULL, NULL));
	EXPECT_EQ(0, ks_acq(fd, 2, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, RL_DEADLINE_NONE,
				    RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
}

TEST(deposit_excess)
{
	__u64 excess = POISON64, avail = POISON64;
	int fd = fed_fd(10);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, deposit(fd, 7, &excess, &avail));
	EXPECT_EQ(0ULL, excess);
	EXPECT_EQ(7ULL, avail);
	ASSERT_EQ(0, deposit(fd, 5, &excess, &avail));
	EXPECT_EQ(2ULL, excess);
	EXPECT_EQ(10ULL, avail);
	ASSERT_EQ(0, deposit(fd, ~0ULL, &excess, &avail));
	EXPECT_EQ(~0ULL, excess);
	EXPECT_EQ(10ULL, ks_avail(fd));
	close(fd);
}

/* Blocked waiters are served by deposits, in arrival order. */
TEST(deposit_wakes_waiter)
{
	int fd = fed_fd(10);
	struct waiter w1, w2;
	__u64 avail = POISON64;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, waiter_start(&w1, fd, 3, RL_DEADLINE_NONE, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	ASSERT_EQ(0, waiter_start(&w2, fd, 1, RL_DEADLINE_NONE, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 2, 2000));
	/* Not enough for the first: the second does not pass it. */
	ASSERT_EQ(0, deposit(fd, 2, NULL, &avail));
	EXPECT_EQ(2ULL, avail);
	sleep_ms(20);
	EXPECT_EQ(2ULL, ks_nwaiters(fd));
	/* Enough for the first only. */
	ASSERT_EQ(0, deposit(fd, 1, NULL, &avail));
	EXPECT_EQ(0ULL, avail);
	ASSERT_EQ(0, waiter_join(&w1, 2000));
	EXPECT_EQ(0, w1.ret);
	EXPECT_EQ(1ULL, ks_nwaiters(fd));
	EXPECT_EQ(0, __atomic_load_n(&w2.done, __ATOMIC_SEQ_CST));
	ASSERT_EQ(0, deposit(fd, 1, NULL, &avail));
	EXPECT_EQ(0ULL, avail);
	ASSERT_EQ(0, waiter_join(&w2, 2000));
	EXPECT_EQ(0, w2.ret);
	close(fd);
}

TEST(deposit_errors)
{
	int fd = ks_open(), raw = ks_open(), fed = fed_fd(10);
	struct rl_deposit d;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, raw);
	ASSERT_LE(0, fed);
	ASSERT_EQ(0, ks_set(fd, 1, NS_PER_SEC, 10, 0));
	EXPECT_ERRNO(EINVAL, deposit(fd, 1, NULL, NULL));	/* not fed */
	EXPECT_ERRNO(EINVAL, deposit(fed, 0, NULL, NULL));
	EXPECT_ERRNO(EBADFD, deposit(raw, 1, NULL, NULL));
	memset(&d, 0, sizeof(d));
	d.count = 1;
	d.flags = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fed, RL_IOC_DEPOSIT, &d));
	d.flags = 0;
	d.reserved0 = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fed, RL_IOC_DEPOSIT, &d));
	d.reserved0 = 0;
	d.reserved[1] = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fed, RL_IOC_DEPOSIT, &d));
	EXPECT_EQ(0ULL, ks_avail(fed));
	EXPECT_ERRNO(EFAULT, ioctl(fed, RL_IOC_DEPOSIT, NULL));
	close(fed);
	close(raw);
	close(fd);
}

/* Turning FED on and off by SET_CONFIG keeps the waiters. */
TEST(fed_switch_keeps_waiters)
{
	int fd = ks_open();
	struct waiter w;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, 1000 * NS_PER_SEC, 5, 0));
	ASSERT_EQ(0, ks_acq(fd, 5, RL_DEADLINE_NONE, 0, &w.a));
	ASSERT_EQ(0, waiter_start(&w, fd, 2, RL_DEADLINE_NONE, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	ASSERT_EQ(0, ks_set(fd, 1, 1000 * NS_PER_SEC, 5, RL_CONFIG_FED));
	EXPECT_EQ(1ULL, ks_nwaiters(fd));
	ASSERT_EQ(0, deposit(fd, 1, NULL, NULL));
	EXPECT_EQ(1ULL, ks_nwaiters(fd));
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 5, 0));
	ASSERT_EQ(0, waiter_join(&w, 2000));
	EXPECT_EQ(0, w.ret);
	close(fd);
}

static void try_deposit(void *arg, int *out)
{
	const char *name = arg;
	int fd = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 10);

	out[0] = fd < 0 ? errno : 0;
	out[1] = ret_err(deposit(fd, 1, NULL, NULL));
	out[2] = ret_err(lease(fd, now_ns() + NS_PER_SEC, 9, 9));
	out[3] = ret_err(ks_set(fd, 9, NS_PER_SEC, 9, 0));
}

/* Deposits and leases need the right to reconfigure the limiter. */
TEST(deposit_needs_write)
{
	char name[RL_NAME_MAX];
	int out[RUN_AS_MAX];
	struct rl_acquire a;
	int fd;

	NAME(name, "perm");
	fd = ks_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_att(fd, name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0644,
			    1, NS_PER_SEC, 10));
	ASSERT_EQ(0, ks_set(fd, 1, NS_PER_SEC, 10, RL_CONFIG_FED));
	ASSERT_EQ(0, ks_acq(fd, 10, RL_DEADLINE_NONE, 0, &a));
	ASSERT_EQ(0, run_as(&other, try_deposit, name, out, 5000));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(EPERM, out[1]);
	EXPECT_EQ(EPERM, out[2]);
	EXPECT_EQ(EACCES, out[3]);
	EXPECT_EQ(0ULL, ks_avail(fd));
	EXPECT_EQ(1ULL, rate_of(fd));
	/* The owner (root here) may. */
	EXPECT_EQ(0, deposit(fd, 1, NULL, NULL));
	close(fd);
}

/* At expiry the fallback is in force; a renewal before keeps the lease. */
TEST(lease_expiry_and_renewal)
{
	char name[RL_NAME_MAX], buf[64];
	int fd;

	NAME(name, "exp");
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
			 1, NS_PER_SEC, 10);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sysfs_read(name, "lease", buf, sizeof(buf)));
	EXPECT_STREQ("none", buf);
	ASSERT_EQ(0, lease(fd, now_ns() + 400 * NS_PER_MS, 500, 7));
	EXPECT_EQ(500ULL, rate_of(fd));
	ASSERT_EQ(0, sysfs_read(name, "lease", buf, sizeof(buf)));
	EXPECT_EQ(getpid(), atoi(strchr(buf, ' ') ? strchr(buf, ' ') : "0"));
	EXPECT_GE(400 * NS_PER_MS, strtoull(buf, NULL, 10));
	sleep_ms(200);
	ASSERT_EQ(0, lease(fd, now_ns() + 1000 * NS_PER_MS, 600, 8));
	sleep_ms(400);	/* past the first lease's end */
	EXPECT_EQ(600ULL, rate_of(fd));
	EXPECT_EQ(8ULL, wait_rate(fd, 8, 3000));
	ASSERT_EQ(0, sysfs_read(name, "lease", buf, sizeof(buf)));
	EXPECT_STREQ("none", buf);
	close(fd);
}

TEST(lease_zero_ends_now)
{
	struct rl_config c;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, NS_PER_SEC, 10, 0));
	ASSERT_EQ(0, lease(fd, now_ns() + 60 * NS_PER_SEC, 500, 7));
	ASSERT_EQ(0, lease(fd, 0, 500, 7));
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ(7ULL, c.rate);
	EXPECT_EQ(5ULL, c.burst);
	/* A deadline already past, too. */
	ASSERT_EQ(0, lease(fd, now_ns() + 60 * NS_PER_SEC, 500, 7));
	ASSERT_EQ(0, lease(fd, 1, 500, 6));
	EXPECT_EQ(6ULL, rate_of(fd));
	close(fd);
}

/* Closing the fd that holds the lease applies the fallback at once. */
TEST(lease_holder_close)
{
	char name[RL_NAME_MAX];
	int fd, agent;

	NAME(name, "close");
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
			 1, NS_PER_SEC, 10);
	ASSERT_LE(0, fd);
	agent = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 10);
	ASSERT_LE(0, agent);
	ASSERT_EQ(0, lease(agent, now_ns() + 60 * NS_PER_SEC, 500, 7));
	/* A renewal through another fd moves the lease to it. */
	ASSERT_EQ(0, lease(fd, now_ns() + 60 * NS_PER_SEC, 400, 7));
	close(agent);
	EXPECT_EQ(400ULL, rate_of(fd));
	agent = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 10);
	ASSERT_LE(0, agent);
	ASSERT_EQ(0, lease(agent, now_ns() + 60 * NS_PER_SEC, 500, 7));
	close(agent);
	EXPECT_EQ(7ULL, rate_of(fd));
	close(fd);
}

/* kill -9 of the process holding the lease applies the fallback. */
TEST(lease_holder_killed)
{
	char name[RL_NAME_MAX];
	int fd, p[2], status;
	pid_t pid;
	char c;

	NAME(name, "kill");
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
			 1, NS_PER_SEC, 10);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int afd = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 10);

		if (afd < 0 || lease(afd, now_ns() + 60 * NS_PER_SEC, 500, 3))
			_exit(1);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	ASSERT_EQ(1, read(p[0], &c, 1));
	close(p[0]);
	EXPECT_EQ(500ULL, rate_of(fd));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(3ULL, wait_rate(fd, 3, 2000));
	close(fd);
}

/* Invalid leases change nothing. */
TEST(lease_invalid)
{
	int fd = ks_open(), raw = ks_open();
	struct rl_lease l;
	struct rl_config c;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, raw);
	ASSERT_EQ(0, ks_set(fd, 1, NS_PER_SEC, 10, 0));
	memset(&l, 0, sizeof(l));
	l.expires_ns = now_ns() + 60 * NS_PER_SEC;
	cfg(&l.config, 500, 10);
	/* Fallback with period 0. */
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SET_LEASE, &l));
	cfg(&l.fallback, 7, 5);
	l.fallback.flags = 1U << 31;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SET_LEASE, &l));
	cfg(&l.fallback, 7, 5);
	l.config.reserved = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SET_LEASE, &l));
	cfg(&l.config, 500, 10);
	l.flags = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SET_LEASE, &l));
	l.flags = 0;
	l.reserved[0] = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SET_LEASE, &l));
	l.reserved[0] = 0;
	l.expires_ns = 1ULL << 63;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SET_LEASE, &l));
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ(1ULL, c.rate);
	EXPECT_EQ(10ULL, c.burst);
	l.expires_ns = now_ns() + 60 * NS_PER_SEC;
	EXPECT_ERRNO(EBADFD, ioctl(raw, RL_IOC_SET_LEASE, &l));
	close(raw);
	close(fd);
}

/* asked, refused, queued and busy_ns follow a waiter and a refusal. */
TEST(demand_counters)
{
	char name[RL_NAME_MAX];
	struct rl_demand d, e;
	struct rl_acquire a;
	struct waiter w;
	int fd;

	NAME(name, "dem");
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
			 1, 1000 * NS_PER_SEC, 4);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, demand(fd, &d));
	EXPECT_EQ(0ULL, d.asked);
	EXPECT_EQ(0ULL, d.busy_ns);
	EXPECT_EQ(0ULL, d.reserved[0]);
	ASSERT_EQ(0, ks_acq(fd, 4, RL_DEADLINE_NONE, 0, &a));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 2, RL_DEADLINE_NONE,
				    RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(ETIMEDOUT, ks_acq(fd, 1, now_ns() + NS_PER_MS, 0, &a));
	ASSERT_EQ(0, waiter_start(&w, fd, 3, RL_DEADLINE_NONE, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	sleep_ms(50);
	ASSERT_EQ(0, demand(fd, &d));
	EXPECT_EQ(10ULL, d.asked);
	EXPECT_EQ(3ULL, d.refused);
	EXPECT_EQ(3ULL, d.queued);
	/* The timed-out request slept about 1 ms, the waiter 50 ms. */
	EXPECT_LE(50 * NS_PER_MS, d.busy_ns);
	EXPECT_GE(now_ns(), d.now_ns);
	EXPECT_EQ(10ULL, sysfs_u64(name, "asked"));
	EXPECT_EQ(3ULL, sysfs_u64(name, "refused"));
	EXPECT_EQ(3ULL, sysfs_u64(name, "queued"));
	/* Served: not queued any more, and the busy time stops. */
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 4, 0));
	ASSERT_EQ(0, waiter_join(&w, 2000));
	ASSERT_EQ(0, demand(fd, &d));
	EXPECT_EQ(0ULL, d.queued);
	sleep_ms(20);
	ASSERT_EQ(0, demand(fd, &e));
	EXPECT_EQ(d.busy_ns, e.busy_ns);
	EXPECT_LT(d.now_ns, e.now_ns);
	EXPECT_EQ(e.busy_ns, sysfs_u64(name, "busy_ns"));
	d.flags = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_GET_DEMAND, &d));
	close(fd);
}

TEST_HARNESS_MAIN
