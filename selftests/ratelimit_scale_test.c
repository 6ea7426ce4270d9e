// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of the module at scale: thousands of named limiters created,
 * found by name and unlinked (the registry is a hash table, its per-user
 * counts kept by uid), with the module's bounds raised for the test and
 * put back after it; many pollers of one limiter, of which a token wakes
 * one, not all.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"

/*
 * Limiters of the many-names tests: enough to grow the table of names
 * several times. Each has a sysfs directory of some 30 files, slow to
 * make on the debug kernel: the tests get minutes, not the default 30 s,
 * for a fixture whose teardown must run (a killed test leaves its
 * limiters to the next tests).
 */
#define NMANY		1000
#define MANY_TIMEOUT	90

FIXTURE(many) {
	__u64 max_named;
	__u64 max_per_user;
	__u64 count0;
	int *fd;
	char base[32];
};

FIXTURE_SETUP(many)
{
	struct rlimit rl = { NMANY + 64, NMANY + 64 };

	self->max_named = param_get("max_named");
	self->max_per_user = param_get("max_named_per_user");
	self->count0 = ks_named_count();
	ASSERT_NE(POISON64, self->max_named);
	ASSERT_NE(POISON64, self->max_per_user);
	ASSERT_NE(POISON64, self->count0);
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	ASSERT_EQ(0, param_set("max_named", self->count0 + NMANY));
	ASSERT_EQ(0, param_set("max_named_per_user", self->count0 + NMANY));
	self->fd = calloc(NMANY, sizeof(int));
	ASSERT_NE(NULL, self->fd);
	snprintf(self->base, sizeof(self->base), "rls-%d-", getpid());
}

FIXTURE_TEARDOWN(many)
{
	char name[RL_NAME_MAX];
	int i;

	for (i = 0; i < NMANY; i++) {
		snprintf(name, sizeof(name), "%s%d", self->base, i);
		ks_unl_name(name);
	}
	free(self->fd);
	EXPECT_EQ(0, param_set("max_named", self->max_named));
	EXPECT_EQ(0, param_set("max_named_per_user", self->max_per_user));
	EXPECT_EQ(self->count0, ks_named_count());
}

/* Limiter @i of the test: persistent, with a burst of its own, i + 1. */
static int many_create(const char *base, int i)
{
	char name[RL_NAME_MAX];
	int fd;

	snprintf(name, sizeof(name), "%s%d", base, i);
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL |
			 RL_ATTACH_PERSIST, 0600, 1, NS_PER_SEC, i + 1);
	if (fd >= 0)
		close(fd);
	return fd < 0 ? -1 : 0;
}

/* Attach to limiter @i without creating it: its burst, or 0. */
static __u64 many_burst(const char *base, int i)
{
	char name[RL_NAME_MAX];
	struct rl_config c;
	__u64 burst = 0;
	int fd;

	snprintf(name, sizeof(name), "%s%d", base, i);
	fd = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 1);
	if (fd < 0)
		return 0;
	if (!ks_get(fd, &c))
		burst = c.burst;
	close(fd);
	return burst;
}

TEST_F_TIMEOUT(many, create_lookup_unlink, MANY_TIMEOUT)
{
	char name[RL_NAME_MAX];
	int i, bad = 0;

	for (i = 0; i < NMANY; i++)
		ASSERT_EQ(0, many_create(self->base, i)) TH_LOG("limiter %d", i);
	EXPECT_EQ(self->count0 + NMANY, ks_named_count());
	/* Each name finds its own limiter, in another order than made. */
	for (i = NMANY - 1; i >= 0; i--)
		bad += many_burst(self->base, i) != (__u64)i + 1;
	EXPECT_EQ(0, bad);
	/* A name made of a prefix of others, or longer, is none of them. */
	snprintf(name, sizeof(name), "%s", self->base);
	EXPECT_ERRNO(ENOENT, ks_unl_name(name));
	snprintf(name, sizeof(name), "%s%dx", self->base, 7);
	EXPECT_ERRNO(ENOENT, ks_unl_name(name));
	/* Unlink every other one: the rest are still found. */
	for (i = 0; i < NMANY; i += 2) {
		snprintf(name, sizeof(name), "%s%d", self->base, i);
		EXPECT_EQ(0, ks_unl_name(name));
	}
	EXPECT_EQ(self->count0 + NMANY / 2, ks_named_count());
	for (i = 0; i < NMANY; i++)
		bad += many_burst(self->base, i) != (i % 2 ? (__u64)i + 1 : 0);
	EXPECT_EQ(0, bad);
	for (i = 1; i < NMANY; i += 2) {
		snprintf(name, sizeof(name), "%s%d", self->base, i);
		EXPECT_EQ(0, ks_unl_name(name));
		EXPECT_ERRNO(ENOENT, ks_unl_name(name));
	}
	EXPECT_EQ(self->count0, ks_named_count());
}

TEST_F_TIMEOUT(many, per_user_count_follows_unlink, MANY_TIMEOUT)
{
	char name[RL_NAME_MAX];
	int i;

	/*
	 * Room for 10 more of root's: the uid's count must come down with
	 * each unlink, or the loop fails after 10 rounds.
	 */
	ASSERT_EQ(0, param_set("max_named_per_user", self->count0 + 10));
	for (i = 0; i < 3 * NMANY / 10; i++) {
		snprintf(name, sizeof(name), "%s%d", self->base, i);
		ASSERT_EQ(0, many_create(self->base, i)) TH_LOG("round %d", i);
		ASSERT_EQ(0, ks_unl_name(name));
	}
	for (i = 0; i < 10; i++)
		ASSERT_EQ(0, many_create(self->base, i));
	EXPECT_EQ(self->count0 + 10, ks_named_count());
}

TEST_F_TIMEOUT(many, nonpersistent_die_with_their_fds, MANY_TIMEOUT)
{
	char name[RL_NAME_MAX];
	int i;

	for (i = 0; i < NMANY; i++) {
		snprintf(name, sizeof(name), "%s%d", self->base, i);
		self->fd[i] = ks_open_att(name, RL_ATTACH_CREATE |
					  RL_ATTACH_EXCL, 0600, 1, NS_PER_SEC,
					  i + 1);
		ASSERT_LE(0, self->fd[i]) TH_LOG("limiter %d", i);
	}
	EXPECT_EQ(self->count0 + NMANY, ks_named_count());
	for (i = 0; i < NMANY; i++)
		close(self->fd[i]);
	EXPECT_EQ(self->count0, ks_named_count());
	for (i = 0; i < NMANY; i += 97)
		EXPECT_EQ(0ULL, many_burst(self->base, i));
}

/* ---- pollers ---- */

#define NPOLLERS	20
/* The driver wakes the next poller this long after one left a token untaken (RL_POLL_GRACE_NS). */
#define POLL_GRACE_NS	(2 * 1000 * 1000ULL)

struct poller {
	int fd;
	pid_t tid;
	int *stop;
	int got;		/* tokens taken */
	__u64 took_ns;		/* when the last was taken */
	int ready;
};

static void *poller_fn(void *arg)
{
	struct poller *p = arg;
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
	struct rl_acquire a;

	p->tid = syscall(SYS_gettid);
	__atomic_store_n(&p->ready, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(p->stop, __ATOMIC_SEQ_CST)) {
		if (poll(&pfd, 1, 5000) == 1 &&
		    !ks_acq(p->fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a)) {
			p->took_ns = now_ns();
			p->got++;
		}
	}
	return NULL;
}

/* Voluntary context switches of thread @tid of this process, or -1. */
static long tid_nvcsw(pid_t tid)
{
	char path[64], buf[4096], *s;
	long v = -1;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	if (file_read(path, buf, sizeof(buf)))
		return -1;
	s = strstr(buf, "voluntary_ctxt_switches:");
	if (s)
		v = strtol(s + strlen("voluntary_ctxt_switches:"), NULL, 10);
	return v;
}

static long pollers_nvcsw(const struct poller *p, int n)
{
	long sum = 0;
	int i;

	for (i = 0; i < n; i++)
		sum += tid_nvcsw(p[i].tid);
	return sum;
}

TEST(pollers_one_token_wakes_one)
{
	struct rl_config un = { .period_ns = NS_PER_SEC, .burst = 1,
				.flags = RL_CONFIG_UNLIMITED };
	struct poller p[NPOLLERS];
	pthread_t th[NPOLLERS];
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	int fd, i, got = 0, stop = 0;
	long before, after, allowed;
	__u64 t0, took = 0;

	snprintf(name, sizeof(name), "rls-%d-poll", getpid());
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600, 1,
			 10 * NS_PER_SEC, 1);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	for (i = 0; i < NPOLLERS; i++) {
		p[i] = (struct poller){ .stop = &stop };
		p[i].fd = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 1);
		ASSERT_LE(0, p[i].fd);
		ASSERT_EQ(0, pthread_create(&th[i], NULL, poller_fn, &p[i]));
	}
	for (i = 0; i < NPOLLERS; i++)
		while (!__atomic_load_n(&p[i].ready, __ATOMIC_SEQ_CST))
			sleep_ms(1);
	sleep_ms(300);
	before = pollers_nvcsw(p, NPOLLERS);
	/* One token comes back: one poller takes it, the rest sleep on. */
	t0 = now_ns();
	ASSERT_EQ(0, ks_refund(fd, 1));
	sleep_ms(500);
	after = pollers_nvcsw(p, NPOLLERS);
	for (i = 0; i < NPOLLERS; i++) {
		got += p[i].got;
		if (p[i].got)
			took = p[i].took_ns;
	}
	EXPECT_EQ(1, got);
	/*
	 * The winner wakes and sleeps again. While the token lies untaken, one more poller is
	 * woken every grace period: an emulated guest may take a while to run the winner. All
	 * woken at once would be about 20.
	 */
	allowed = 4 + (took > t0 ? (took - t0) / POLL_GRACE_NS : 0);
	EXPECT_GE(allowed, after - before)
		TH_LOG("%ld wake-ups, the token taken %llu us after the refund", after - before,
		       took > t0 ? (unsigned long long)(took - t0) / 1000 : 0ULL);
	__atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
	ASSERT_EQ(0, ioctl(fd, RL_IOC_SET_CONFIG, &un));
	for (i = 0; i < NPOLLERS; i++) {
		pthread_join(th[i], NULL);
		close(p[i].fd);
	}
	close(fd);
}

TEST(pollers_all_hear_a_token_nobody_takes)
{
	struct pollfd pfd[NPOLLERS];
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	int fd, i, n = 0;
	pid_t pid;

	snprintf(name, sizeof(name), "rls-%d-hear", getpid());
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600, 1,
			 10 * NS_PER_SEC, 1);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	for (i = 0; i < NPOLLERS; i++) {
		pfd[i].fd = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 1);
		pfd[i].events = POLLIN;
		ASSERT_LE(0, pfd[i].fd);
	}
	/* Each poller in a child of its own, none takes the token. */
	for (i = 0; i < NPOLLERS; i++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			_exit(poll(&pfd[i], 1, 3000) == 1 ? 0 : 1);
	}
	sleep_ms(200);
	ASSERT_EQ(0, ks_refund(fd, 1));
	for (i = 0; i < NPOLLERS; i++) {
		int status;

		ASSERT_LT(0, wait(&status));
		n += WIFEXITED(status) && !WEXITSTATUS(status);
	}
	EXPECT_EQ(NPOLLERS, n);
	for (i = 0; i < NPOLLERS; i++)
		close(pfd[i].fd);
	close(fd);
}

TEST_HARNESS_MAIN
