// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of /dev/ratelimit: clients and priorities. The client config
 * of an fd (RL_IOC_SET_CLIENT, RL_IOC_GET_CLIENT), the order of grants
 * between the priorities USER, HIGH, MID and LOW, and how often a lower
 * priority goes first (rl_config.fairness). Fair shares are in
 * ratelimit_fair_test.c.
 *
 * Statistical checks use wide bands: the guest runs under TCG. Shares are
 * measured over a number of tokens, however long a slow guest takes.
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
#include "ratelimit_sched.h"

#define SAFETY_NS	(3 * NS_PER_SEC)
/* A share run that has not got its tokens by then fails. */
#define DEADLINE_NS	(30 * NS_PER_SEC)
/* prio_user_always_first does two share runs. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT	120
#define NAME(buf, tag)	snprintf(buf, sizeof(buf), "prio-%d-%s", getpid(), tag)

static __u64 soon(void)
{
	return now_ns() + SAFETY_NS;
}

static void sched_cfg(struct rl_config *c, __u64 rate, __u64 burst,
		      __u32 fairness)
{
	memset(c, 0, sizeof(*c));
	c->rate = rate;
	c->period_ns = NS_PER_SEC;
	c->burst = burst;
	c->fairness = fairness;
}

#define EXPECT_CLIENT(fd, p_, w_, cap_) do {			\
	struct rl_client_config __cc;				\
								\
	EXPECT_EQ(0, ks_client_get(fd, &__cc));			\
	EXPECT_EQ((__u32)(p_), __cc.priority);			\
	EXPECT_EQ((__u32)(w_), __cc.weight);			\
	EXPECT_EQ((__u64)(cap_), __cc.cap);			\
} while (0)

/* ---- RL_IOC_SET_CLIENT / RL_IOC_GET_CLIENT ---- */

TEST(client_no_limiter_ebadfd)
{
	struct rl_client_config cc;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	EXPECT_ERRNO(EBADFD, ks_client(fd, RL_PRIO_HIGH, 2, 0));
	EXPECT_ERRNO(EBADFD, ks_client(fd, 0, 0, 0));
	EXPECT_ERRNO(EBADFD, ks_client_get(fd, &cc));
	close(fd);
}

TEST(client_defaults)
{
	struct rl_client_config cc;
	struct rl_acquire a;
	int fd = ks_open();
	int i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 5, 0));
	ASSERT_EQ(0, ks_client_get(fd, &cc));
	EXPECT_EQ((__u32)RL_PRIO_MID, cc.priority);
	EXPECT_EQ(1U, cc.weight);
	EXPECT_EQ(0ULL, cc.cap);
	EXPECT_EQ(0U, cc.flags);
	EXPECT_EQ(0U, cc.reserved0);
	EXPECT_EQ(0ULL, cc.held);
	EXPECT_EQ(0ULL, cc.granted);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0ULL, cc.reserved[i]);
	ASSERT_EQ(0, ks_acq(fd, 3, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, ks_client_get(fd, &cc));
	EXPECT_EQ(3ULL, cc.granted);
	EXPECT_EQ(0ULL, cc.held);
	close(fd);
}

TEST(client_roundtrip)
{
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 5, 0));
	ASSERT_EQ(0, ks_client(fd, RL_PRIO_HIGH, 7, 42));
	EXPECT_CLIENT(fd, RL_PRIO_HIGH, 7, 42);
	ASSERT_EQ(0, ks_client(fd, RL_PRIO_USER, RL_WEIGHT_MAX, 1ULL << 40));
	EXPECT_CLIENT(fd, RL_PRIO_USER, RL_WEIGHT_MAX, 1ULL << 40);
	ASSERT_EQ(0, ks_client(fd, RL_PRIO_LOW, 1, 1));
	EXPECT_CLIENT(fd, RL_PRIO_LOW, 1, 1);
	/* 0 means MID, weight 1, no cap. */
	ASSERT_EQ(0, ks_client(fd, 0, 0, 0));
	EXPECT_CLIENT(fd, RL_PRIO_MID, 1, 0);
	/* A new config of the limiter keeps the client's. */
	ASSERT_EQ(0, ks_client(fd, RL_PRIO_HIGH, 3, 9));
	ASSERT_EQ(0, ks_set(fd, 2, 10 * NS_PER_SEC, 5, 0));
	EXPECT_CLIENT(fd, RL_PRIO_HIGH, 3, 9);
	close(fd);
}

TEST(client_bad_values)
{
	struct rl_client_config cc;
	int fd = ks_open();
	int i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 5, 0));
	ASSERT_EQ(0, ks_client(fd, RL_PRIO_HIGH, 3, 9));
	EXPECT_ERRNO(EINVAL, ks_client(fd, RL_PRIO_USER + 1, 1, 0));
	EXPECT_ERRNO(EINVAL, ks_client(fd, ~0U, 1, 0));
	EXPECT_ERRNO(EINVAL, ks_client(fd, RL_PRIO_LOW, RL_WEIGHT_MAX + 1, 0));
	EXPECT_ERRNO(EINVAL, ks_client(fd, RL_PRIO_LOW, ~0U, 0));

	memset(&cc, 0, sizeof(cc));
	cc.flags = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SET_CLIENT, &cc));
	cc.flags = 1U << 31;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SET_CLIENT, &cc));
	memset(&cc, 0, sizeof(cc));
	cc.reserved0 = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SET_CLIENT, &cc));
	for (i = 0; i < 3; i++) {
		memset(&cc, 0, sizeof(cc));
		cc.reserved[i] = 1ULL << 63;
		EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SET_CLIENT, &cc));
	}
	/* Nothing changed. */
	EXPECT_CLIENT(fd, RL_PRIO_HIGH, 3, 9);
	close(fd);
}

/* GET, change, SET: the outputs held and granted do not get in the way. */
TEST(client_get_modify_set)
{
	struct rl_client_config cc;
	struct rl_acquire a;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 5, 0));
	ASSERT_EQ(0, ks_acq(fd, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, ks_client_get(fd, &cc));
	EXPECT_EQ(2ULL, cc.granted);
	cc.priority = RL_PRIO_LOW;
	cc.weight = 2;
	EXPECT_EQ(0, ioctl(fd, RL_IOC_SET_CLIENT, &cc));
	ASSERT_EQ(0, ks_client_get(fd, &cc));
	EXPECT_EQ((__u32)RL_PRIO_LOW, cc.priority);
	EXPECT_EQ(2U, cc.weight);
	EXPECT_EQ(2ULL, cc.granted);
	EXPECT_EQ(0ULL, cc.held);
	close(fd);
}

/* Clients are per open file: dup() shares, another open() does not. */
TEST(client_per_open_file)
{
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	struct rl_client_config cc;
	int fd1, fd2, fd3;

	NAME(name, "pof");
	fd1 = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
			  1, 10 * NS_PER_SEC, 10);
	ASSERT_LE(0, fd1);
	fd2 = ks_open_att(name, 0, 0, 1, 10 * NS_PER_SEC, 10);
	ASSERT_LE(0, fd2);
	fd3 = dup(fd1);
	ASSERT_LE(0, fd3);
	ASSERT_EQ(0, ks_client(fd1, RL_PRIO_USER, 5, 4));
	EXPECT_CLIENT(fd3, RL_PRIO_USER, 5, 4);
	EXPECT_CLIENT(fd2, RL_PRIO_MID, 1, 0);
	ASSERT_EQ(0, ks_acq(fd1, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, ks_acq(fd2, 3, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, ks_client_get(fd3, &cc));
	EXPECT_EQ(2ULL, cc.granted);
	ASSERT_EQ(0, ks_client_get(fd2, &cc));
	EXPECT_EQ(3ULL, cc.granted);
	close(fd3);
	close(fd2);
	close(fd1);
}

/* client_list: "PID COMM GRANTED HELD PRIORITY WEIGHT CAP". */
TEST(client_list_columns)
{
	char name[RL_NAME_MAX], buf[4096], comm[32], *line, *save = NULL;
	unsigned long long g, h, cap;
	unsigned int p, w;
	struct rl_acquire a;
	int fd, pid, found = 0;

	NAME(name, "cl");
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600,
			 1, 10 * NS_PER_SEC, 10);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_client(fd, RL_PRIO_HIGH, 6, 77));
	ASSERT_EQ(0, ks_acq(fd, 4, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, sysfs_read(name, "client_list", buf, sizeof(buf)));
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%d %31s %llu %llu %u %u %llu", &pid, comm,
			   &g, &h, &p, &w, &cap) != 7) {
			TH_LOG("bad line \"%s\"", line);
			continue;
		}
		if (pid != getpid())
			continue;
		found++;
		EXPECT_EQ(4ULL, g);
		EXPECT_EQ(0ULL, h);
		EXPECT_EQ((unsigned int)RL_PRIO_HIGH, p);
		EXPECT_EQ(6U, w);
		EXPECT_EQ(77ULL, cap);
	}
	EXPECT_EQ(1, found);
	close(fd);
}

/* ---- order of the priorities ---- */

#define NPRIO 4

static const __u32 prio_queue[NPRIO] = {
	RL_PRIO_LOW, RL_PRIO_MID, RL_PRIO_HIGH, RL_PRIO_USER,
};

enum prio_how {
	PER_ACQUIRE,	/* one fd, priority in each acquire */
	PER_FD,		/* an fd per waiter, priority by SET_CLIENT */
	OVERRIDE,	/* an fd per waiter set to the reverse, overridden */
};

/*
 * Queue one waiter per priority, LOW first and USER last, on a paused and
 * empty limiter; then one token per 150 ms with @fairness. Returns the
 * priorities in grant order in @got.
 */
static void prio_order(struct __test_metadata *_metadata, enum prio_how how,
		       __u32 fairness, __u32 *got)
{
	struct waiter w[NPRIO];
	struct rl_acquire a;
	struct rl_config c;
	char name[RL_NAME_MAX];
	int order[NPRIO], len = 0, fds[NPRIO], ctl, i;

	snprintf(name, sizeof(name), "prio-%d-%d", getpid(), how);
	sched_cfg(&c, 0, 1, fairness);
	ctl = ks_open();
	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, ks_att_cfg(ctl, name, RL_ATTACH_CREATE | RL_ATTACH_EXCL,
				0600, &c));
	ASSERT_EQ(0, ks_acq(ctl, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	for (i = 0; i < NPRIO; i++) {
		__u32 prio = prio_queue[i];

		fds[i] = ctl;
		if (how != PER_ACQUIRE) {
			fds[i] = ks_open_att(name, 0, 0, 0, NS_PER_SEC, 1);
			ASSERT_LE(0, fds[i]);
			ASSERT_EQ(0, ks_client(fds[i], how == PER_FD ? prio :
					       RL_PRIO_USER + 1 - prio, 1, 0));
		}
		ASSERT_EQ(0, waiter_start_prio(&w[i], fds[i], 1, soon(),
					       how == PER_FD ? 0 : prio,
					       order, &len, i));
		ASSERT_EQ(0, ks_wait_waiters(ctl, i + 1, 2000));
	}
	sched_cfg(&c, 1, 1, fairness);
	c.period_ns = 150 * NS_PER_MS;
	ASSERT_EQ(0, ioctl(ctl, RL_IOC_SET_CONFIG, &c));
	for (i = 0; i < NPRIO; i++) {
		ASSERT_EQ(0, waiter_join(&w[i], 3000));
		EXPECT_EQ(0, w[i].ret);
	}
	ASSERT_EQ(NPRIO, len);
	for (i = 0; i < NPRIO; i++)
		got[i] = prio_queue[order[i]];
	for (i = 0; i < NPRIO; i++)
		if (fds[i] != ctl)
			close(fds[i]);
	close(ctl);
}

static void expect_order(struct __test_metadata *_metadata, const __u32 *got,
			 const __u32 *want)
{
	int i;

	for (i = 0; i < NPRIO; i++)
		EXPECT_EQ(want[i], got[i]);
	TH_LOG("grant order %u %u %u %u", got[0], got[1], got[2], got[3]);
}

static const __u32 high_first[NPRIO] = {
	RL_PRIO_USER, RL_PRIO_HIGH, RL_PRIO_MID, RL_PRIO_LOW,
};

TEST(prio_order_per_acquire)
{
	__u32 got[NPRIO];

	prio_order(_metadata, PER_ACQUIRE, 1000000, got);
	expect_order(_metadata, got, high_first);
}

TEST(prio_order_per_fd)
{
	__u32 got[NPRIO];

	prio_order(_metadata, PER_FD, 1000000, got);
	expect_order(_metadata, got, high_first);
}

TEST(prio_order_acquire_overrides_fd)
{
	__u32 got[NPRIO];

	prio_order(_metadata, OVERRIDE, 1000000, got);
	expect_order(_metadata, got, high_first);
}

/* fairness 1: the lowest level always goes first, but never before USER. */
TEST(prio_order_fairness_one)
{
	static const __u32 want[NPRIO] = {
		RL_PRIO_USER, RL_PRIO_LOW, RL_PRIO_MID, RL_PRIO_HIGH,
	};
	__u32 got[NPRIO];

	prio_order(_metadata, PER_FD, 1, got);
	expect_order(_metadata, got, want);
}

/* ---- how often a lower priority goes first ---- */

/*
 * Two clients of 3 threads each, @hi and @lo, always queued, at 200
 * tokens/s (one per grant) until they got 250 tokens (1.25 s on a fast
 * guest): the share of the tokens @lo got.
 */
static double low_share(struct __test_metadata *_metadata, __u32 fairness,
			__u32 hi, __u32 lo)
{
	struct sc_run *r = sc_alloc();
	double share;
	__u64 n;
	int i;

	if (!r) {
		EXPECT_TRUE(0);
		return -1;
	}
	sched_cfg(&r->cfg, 200, 1, fairness);
	r->dur_ns = DEADLINE_NS;
	r->want = 250;
	r->nclients = 2;
	r->c[0].nthreads = SC_MAX_THREADS;
	r->c[0].prio = hi;
	r->c[1].nthreads = SC_MAX_THREADS;
	r->c[1].prio = lo;
	r->c[1].process = 1;
	EXPECT_EQ(0, sc_go(r));
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, r->c[i].err);
		EXPECT_EQ(0, r->c[i].setup_err);
	}
	n = r->c[0].granted + r->c[1].granted;
	/* It got its tokens before the deadline, and no more than the rate. */
	EXPECT_LE(r->want, n);
	EXPECT_GE((__u64)(r->cfg.burst + 1 + (double)r->cfg.rate *
			  (r->end - r->t0) / r->cfg.period_ns), n);
	share = (double)r->c[1].granted / (n + !n);
	TH_LOG("fairness %u: prio %u got %llu, prio %u got %llu: %.3f in %.3f s",
	       fairness, hi, (unsigned long long)r->c[0].granted, lo,
	       (unsigned long long)r->c[1].granted, share,
	       (double)(r->end - r->t0) / NS_PER_SEC);
	sc_free(r);
	return share;
}

TEST(prio_fairness_huge_high_wins)
{
	EXPECT_GE(0.03, low_share(_metadata, 1000000, RL_PRIO_HIGH,
				  RL_PRIO_LOW));
}

TEST(prio_fairness_two_half)
{
	double s = low_share(_metadata, 2, RL_PRIO_HIGH, RL_PRIO_LOW);

	EXPECT_LE(0.3, s);
	EXPECT_GE(0.7, s);
}

TEST(prio_fairness_default_tenth)
{
	double s = low_share(_metadata, 0, RL_PRIO_MID, RL_PRIO_LOW);

	EXPECT_LE(0.03, s);
	EXPECT_GE(0.25, s);
}

TEST(prio_fairness_one_lowest_wins)
{
	EXPECT_LE(0.97, low_share(_metadata, 1, RL_PRIO_HIGH, RL_PRIO_LOW));
}

/* USER goes first whatever the fairness: LOW gets nothing from it. */
TEST(prio_user_always_first)
{
	EXPECT_GE(0.03, low_share(_metadata, 1, RL_PRIO_USER, RL_PRIO_LOW));
	EXPECT_GE(0.03, low_share(_metadata, 2, RL_PRIO_USER, RL_PRIO_HIGH));
}

TEST_HARNESS_MAIN
