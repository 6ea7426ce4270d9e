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
	__u64 v;
	struct rl_config c;
	int fd = fed_fd(10);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ((__u32)RL_CONFIG_FED, c.flags);
	ASSERT_EQ(0, fdinfo_get(fd, "rl-flags", &v, NULL, 0));
	EXPECT_EQ((__u64)RL_CONFIG_FED, v);
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

/* Tokens kept for catching up are not released while fed. */
TEST(fed_keeps_backlog)
{
	struct rl_stats st;
	struct rl_acquire a;
	struct rl_config c;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	cfg(&c, 1000, 10);
	c.catchup = 2000;
	c.backlog = 1000;
	ASSERT_EQ(0, ioctl(fd, RL_IOC_SET_CONFIG, &c));
	sleep_ms(100);	/* a full bucket: about 90 tokens to the backlog */
	ASSERT_EQ(0, ks_acq(fd, 10, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK, &a));
	c.flags = RL_CONFIG_FED;
	ASSERT_EQ(0, ioctl(fd, RL_IOC_SET_CONFIG, &c));
	/*
	 * What the rate brought between the acquire and SET_CONFIG (10 ms
	 * of it on the debug kernel) is the bucket's: take it, then none
	 * may come while fed.
	 */
	ASSERT_EQ(0, ks_stats(fd, &st));
	if (st.available)
		ASSERT_EQ(0, ks_acq(fd, st.available, RL_DEADLINE_NONE,
				    RL_ACQUIRE_NONBLOCK, &a));
	sleep_ms(50);
	ASSERT_EQ(0, ks_stats(fd, &st));
	EXPECT_EQ(0ULL, st.available);
	EXPECT_LT(0ULL, st.backlog);
	/* Unfed, catching up brings them. */
	c.flags = 0;
	ASSERT_EQ(0, ioctl(fd, RL_IOC_SET_CONFIG, &c));
	sleep_ms(50);
	EXPECT_LT(0ULL, ks_avail(fd));
	close(fd);
}

static void *deposit_later(void *arg)
{
	int fd = *(int *)arg;

	sleep_ms(50);
	deposit(fd, 1, NULL, NULL);
	return NULL;
}

/* A poller of a fed limiter is woken by a deposit. */
TEST(deposit_wakes_poller)
{
	int fd = fed_fd(10);
	struct pollfd pfd;
	pthread_t th;

	ASSERT_LE(0, fd);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	ASSERT_EQ(0, pthread_create(&th, NULL, deposit_later, &fd));
	EXPECT_EQ(1, poll(&pfd, 1, 5000));
	EXPECT_TRUE(pfd.revents & POLLIN);
	pthread_join(th, NULL);
	close(fd);
}

struct taker {
	int fd;
	int stop;
	unsigned int seed;
	__u64 granted;
	int bad;
	pthread_t th;
};

/* Take 1 to 5 tokens at a time: non-blocking, short or longer deadlines. */
static void *taker_fn(void *arg)
{
	struct taker *tk = arg;
	struct rl_acquire a;
	__u64 n, deadline;
	__u32 flags;

	while (!__atomic_load_n(&tk->stop, __ATOMIC_SEQ_CST)) {
		n = 1 + rand_r(&tk->seed) % 5;
		flags = rand_r(&tk->seed) % 3 ? 0 : RL_ACQUIRE_NONBLOCK;
		deadline = now_ns() + (1 + rand_r(&tk->seed) % 20) * NS_PER_MS;
		if (!ks_acq(tk->fd, n, deadline, flags, &a))
			tk->granted += n;
		else if (errno != EAGAIN && errno != ETIMEDOUT)
			tk->bad++;
	}
	return NULL;
}

/*
 * Tokens are neither made nor lost: with takers racing deposits, every
 * token accepted by a deposit is granted or still in the bucket.
 */
TEST(deposit_conservation)
{
	__u64 accepted = 0, granted = 0, excess, end;
	struct taker tk[4];
	struct rl_stats st;
	unsigned int i;
	int fd = fed_fd(50);

	ASSERT_LE(0, fd);
	for (i = 0; i < ARRAY_SIZE(tk); i++) {
		tk[i] = (struct taker){ .fd = fd, .seed = i + 1 };
		ASSERT_EQ(0, pthread_create(&tk[i].th, NULL, taker_fn, &tk[i]));
	}
	end = now_ns() + NS_PER_SEC;
	for (i = 0; now_ns() < end; i++) {
		ASSERT_EQ(0, deposit(fd, 1 + i % 20, &excess, NULL));
		accepted += 1 + i % 20 - excess;
		usleep(200);
	}
	for (i = 0; i < ARRAY_SIZE(tk); i++) {
		__atomic_store_n(&tk[i].stop, 1, __ATOMIC_SEQ_CST);
		ASSERT_EQ(0, pthread_join(tk[i].th, NULL));
		EXPECT_EQ(0, tk[i].bad);
		granted += tk[i].granted;
	}
	ASSERT_EQ(0, ks_stats(fd, &st));
	TH_LOG("accepted %llu, granted %llu, left %llu",
	       (unsigned long long)accepted, (unsigned long long)granted,
	       (unsigned long long)st.available);
	EXPECT_LT(0ULL, granted);
	EXPECT_EQ(granted + 50, st.granted);	/* fed_fd() took 50 */
	EXPECT_EQ(accepted, granted + st.available);
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
	char name[RL_NAME_MAX];
	__u64 left;
	int fd;

	NAME(name, "exp");
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
			 1, NS_PER_SEC, 10);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0ULL, sysfs_u64(name, "lease_ns"));
	EXPECT_EQ(0ULL, sysfs_u64(name, "lease_pid"));
	ASSERT_EQ(0, lease(fd, now_ns() + 400 * NS_PER_MS, 500, 7));
	EXPECT_EQ(500ULL, rate_of(fd));
	EXPECT_EQ((__u64)getpid(), sysfs_u64(name, "lease_pid"));
	left = sysfs_u64(name, "lease_ns");
	EXPECT_GE(400 * NS_PER_MS, left);
	EXPECT_LT(0ULL, left);
	sleep_ms(200);
	ASSERT_EQ(0, lease(fd, now_ns() + 1000 * NS_PER_MS, 600, 8));
	sleep_ms(400);	/* past the first lease's end */
	EXPECT_EQ(600ULL, rate_of(fd));
	EXPECT_EQ(8ULL, wait_rate(fd, 8, 3000));
	EXPECT_EQ(0ULL, sysfs_u64(name, "lease_ns"));
	EXPECT_EQ(0ULL, sysfs_u64(name, "lease_pid"));
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

/* Waiters are kept and served under a lease's limits and its fallback. */
TEST(lease_serves_waiters)
{
	struct rl_acquire a;
	struct waiter w;
	__u64 t0;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 10, 0));
	ASSERT_EQ(0, ks_acq(fd, 10, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, waiter_start(&w, fd, 2, RL_DEADLINE_NONE, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	/* The lease's limits serve it. */
	ASSERT_EQ(0, lease(fd, now_ns() + 60 * NS_PER_SEC, 100000, 0));
	ASSERT_EQ(0, waiter_join(&w, 2000));
	EXPECT_EQ(0, w.ret);
	/* Paused by a lease, served by its fallback at the expiry. */
	sleep_ms(1);	/* full again */
	ASSERT_EQ(0, lease(fd, now_ns() + 60 * NS_PER_SEC, 0, 0));
	ASSERT_EQ(0, ks_acq(fd, 10, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK, &a));
	t0 = now_ns();
	ASSERT_EQ(0, waiter_start(&w, fd, 2, RL_DEADLINE_NONE, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	ASSERT_EQ(0, lease(fd, t0 + 200 * NS_PER_MS, 0, 100000));
	EXPECT_EQ(1ULL, ks_nwaiters(fd));
	ASSERT_EQ(0, waiter_join(&w, 3000));
	EXPECT_EQ(0, w.ret);
	EXPECT_LE(t0 + 200 * NS_PER_MS, w.t_end);
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

/*
 * At its expiry a lease's tokens above the fallback are gone at once,
 * though the fallback counts in another period (its timer puts the
 * fallback's limits in force in the lease's period); then the fallback
 * is in force as it was given.
 */
TEST(lease_expiry_stops_at_once)
{
	char name[RL_NAME_MAX], buf[64];
	struct rl_acquire a;
	struct rl_config c;
	struct rl_lease l;
	__u64 n = 0, most;
	unsigned int ms;
	int fd;

	NAME(name, "once");
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
			 1, NS_PER_SEC, 10);
	ASSERT_LE(0, fd);
	memset(&l, 0, sizeof(l));
	/* Full by the expiry: 1000 tokens. */
	l.expires_ns = now_ns() + 300 * NS_PER_MS;
	cfg(&l.config, 10000, 1000);
	cfg(&l.fallback, 1, 2);
	l.fallback.period_ns = 100 * NS_PER_MS;
	ASSERT_EQ(0, ioctl(fd, RL_IOC_SET_LEASE, &l));
	for (ms = 0; ms < 3000; ms++) {
		ASSERT_EQ(0, sysfs_read(name, "lease_pid", buf, sizeof(buf)));
		if (!strcmp(buf, "0"))
			break;
		sleep_ms(1);
	}
	ASSERT_STREQ("0", buf);
	while (!ks_acq(fd, 1, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK, &a))
		n++;
	EXPECT_EQ(EAGAIN, errno);
	/* The fallback's burst, and what its rate gave since the expiry. */
	most = 2 + (now_ns() - l.expires_ns) / (100 * NS_PER_MS) + 1;
	EXPECT_GE(most, n);
	for (ms = 0; ms < 3000; ms++) {
		ASSERT_EQ(0, ks_get(fd, &c));
		if (c.period_ns == 100 * NS_PER_MS)
			break;
		sleep_ms(1);
	}
	EXPECT_EQ(100 * NS_PER_MS, c.period_ns);
	EXPECT_EQ(1ULL, c.rate);
	EXPECT_EQ(2ULL, c.burst);
	close(fd);
}

/* Limiters freed as their leases end: the fallback's work is cancelled. */
TEST(lease_expiry_then_close)
{
	struct rl_lease l;
	int i, fd;

	for (i = 0; i < 200; i++) {
		fd = ks_open();
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, ks_set(fd, 1, NS_PER_SEC, 10, 0));
		memset(&l, 0, sizeof(l));
		l.expires_ns = now_ns() + (i % 20) * 100 * 1000;
		cfg(&l.config, 500, 10);
		cfg(&l.fallback, 7, 5);
		l.fallback.period_ns = NS_PER_SEC / (1 + i % 3);
		ASSERT_EQ(0, ioctl(fd, RL_IOC_SET_LEASE, &l));
		if (i % 2)
			sleep_ms(1);
		close(fd);
	}
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
	l.config.keys = 1;
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
	EXPECT_LE(50 * NS_PER_MS, d.busy_ns);
	sleep_ms(20);
	ASSERT_EQ(0, demand(fd, &e));
	EXPECT_EQ(d.busy_ns, e.busy_ns);
	EXPECT_LT(d.now_ns, e.now_ns);
	EXPECT_EQ(e.busy_ns, sysfs_u64(name, "busy_ns"));
	d.flags = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_GET_DEMAND, &d));
	close(fd);
}

/*
 * The cost of a deposit, an acquire and a demand read, printed (no
 * assertion on times: the guest may be emulated and the host loaded).
 */
TEST(cost)
{
	const int n = 20000;
	struct rl_acquire a;
	struct rl_demand d;
	__u64 t0, t1, t2, t3;
	int i, fails = 0, fd = fed_fd(1000000);

	ASSERT_LE(0, fd);
	t0 = now_ns();
	for (i = 0; i < n; i++)
		fails += !!deposit(fd, 1, NULL, NULL);
	t1 = now_ns();
	for (i = 0; i < n; i++)
		fails += !!ks_acq(fd, 1, RL_DEADLINE_NONE,
				  RL_ACQUIRE_NONBLOCK, &a);
	t2 = now_ns();
	for (i = 0; i < n; i++)
		fails += !!demand(fd, &d);
	t3 = now_ns();
	EXPECT_EQ(0, fails);
	TH_LOG("ns per call: deposit %llu, acquire %llu, get_demand %llu",
	       (t1 - t0) / n, (t2 - t1) / n, (t3 - t2) / n);
	close(fd);
}

TEST_HARNESS_MAIN
