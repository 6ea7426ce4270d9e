// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of /dev/ratelimit: queued acquires for event loops
 * (RL_IOC_SUBMIT, RL_IOC_COLLECT, RL_IOC_CANCEL through the library's
 * rl_submit(), rl_collect() and rl_cancel()). Grants at once, the checks
 * of every field, poll and epoll readiness, the order of service among
 * blocking sleepers, deadlines (a request that timed out leaves the queue
 * before it is collected), cancellation of queued, partly and wholly
 * granted requests, the per-fd bound, close and kill -9 with requests
 * outstanding, and one fd's share beside a blocking one.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/wait.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"
#include "libratelimit.h"

/* Deadline of calls that should end well before. */
#define SAFETY_NS	(3000 * NS_PER_MS)
/* How long a grant may take to come under TCG. */
#define WAIT_MS		3000

/* A request of @count tokens, the outputs poisoned. */
static void req(struct rl_queued *q, __u64 count, __u64 deadline, __u64 data)
{
	memset(q, 0, sizeof(*q));
	q->count = count;
	q->deadline_ns = deadline;
	q->user_data = data;
	q->ticket = POISON64;
	q->wait_ns = POISON64;
	q->ready_ns = POISON64;
	q->lag_ns = POISON64;
	q->result = 12345;
}

/* Wait up to @ms for @fd to poll readable: 1, 0 if it did not, -1. */
static int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, ms);

	return n < 0 ? -1 : n && p.revents & POLLIN;
}

/* Collect one result within @ms: 0 or -errno (-EAGAIN: none came). */
static int collect(int fd, struct rl_queued *q, int ms)
{
	__u64 end = now_ns() + ms * NS_PER_MS;
	int ret;

	for (;;) {
		memset(q, POISON_BYTE, sizeof(*q));
		ret = rl_collect(fd, q);
		if (ret != -EAGAIN || now_ns() >= end)
			return ret;
		readable(fd, 50);
	}
}

TEST(feature)
{
	struct rl_features f;
	char line[256];
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, rl_get_features(fd, &f));
	EXPECT_TRUE(f.flags & RL_FEATURE_QUEUED);
	EXPECT_TRUE(f.ioctls & (1ULL << _IOC_NR(RL_IOC_SUBMIT)));
	EXPECT_TRUE(f.ioctls & (1ULL << _IOC_NR(RL_IOC_COLLECT)));
	EXPECT_TRUE(f.ioctls & (1ULL << _IOC_NR(RL_IOC_CANCEL)));
	ASSERT_EQ(0, file_read("/sys/kernel/ratelimit/features", line, sizeof(line)));
	EXPECT_NE(NULL, strstr(line, " queued"));
	close(fd);
}

/* Every field is checked; nothing is queued or taken on error. */
TEST(bad_requests)
{
	struct rl_queued q;
	struct rl_stats s;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	req(&q, 1, RL_DEADLINE_NONE, 0);
	EXPECT_EQ(-EBADFD, rl_submit(fd, &q));
	EXPECT_EQ(-EBADFD, rl_collect(fd, &q));
	EXPECT_EQ(-EBADFD, rl_cancel(fd, 0));
	ASSERT_EQ(0, ks_set(fd, 1, NS_PER_SEC, 2, 0));
	req(&q, 0, RL_DEADLINE_NONE, 0);
	EXPECT_EQ(-EINVAL, rl_submit(fd, &q));
	req(&q, 1, RL_DEADLINE_NONE, 0);
	q.flags = RL_ACQUIRE_NONBLOCK;
	EXPECT_EQ(-EINVAL, rl_submit(fd, &q));
	req(&q, 1, RL_DEADLINE_NONE, 0);
	q.flags = 1U << 31;
	EXPECT_EQ(-EINVAL, rl_submit(fd, &q));
	req(&q, 1, RL_DEADLINE_NONE, 0);
	q.reserved0 = 1;
	EXPECT_EQ(-EINVAL, rl_submit(fd, &q));
	req(&q, 1, RL_DEADLINE_NONE, 0);
	q.reserved = 1;
	EXPECT_EQ(-EINVAL, rl_submit(fd, &q));
	req(&q, 1, RL_DEADLINE_NONE, 0);
	q.priority = RL_PRIO_USER + 1;
	EXPECT_EQ(-EINVAL, rl_submit(fd, &q));
	req(&q, 1, (__u64)INT64_MAX + 1, 0);
	EXPECT_EQ(-EINVAL, rl_submit(fd, &q));
	EXPECT_ERRNO(EFAULT, ioctl(fd, RL_IOC_SUBMIT, (void *)8));
	EXPECT_ERRNO(EFAULT, ioctl(fd, RL_IOC_COLLECT, (void *)8));
	EXPECT_ERRNO(EFAULT, ioctl(fd, RL_IOC_CANCEL, (void *)8));
	EXPECT_EQ(-ENOENT, rl_cancel(fd, 1));
	EXPECT_EQ(0, rl_cancel(fd, 0));
	EXPECT_EQ(-EAGAIN, rl_collect(fd, &q));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(2, s.available);
	EXPECT_EQ(0, s.waiters);
	EXPECT_EQ(0, s.requests);
	close(fd);
}

/* Granted at once: ticket 0, final outputs, nothing to collect. */
TEST(granted_at_once)
{
	struct rl_queued q;
	struct rl_stats s;
	int fd = ks_drained(_metadata, 10, NS_PER_SEC, 2, 0, 2);

	ASSERT_LE(0, fd);
	req(&q, 2, RL_DEADLINE_NONE, 77);
	ASSERT_EQ(0, rl_submit(fd, &q));
	EXPECT_EQ(0, q.ticket);
	EXPECT_EQ(0, q.result);
	EXPECT_EQ(0, q.wait_ns);
	EXPECT_NE(POISON64, q.ready_ns);
	EXPECT_EQ(77, q.user_data);
	EXPECT_EQ(-EAGAIN, rl_collect(fd, &q));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(2, s.granted);
	EXPECT_EQ(1, s.immediate);
	EXPECT_EQ(0, s.waiters);
	close(fd);
}

/* Queued: the fd is not readable until the grant, then collect says so, once. */
TEST(queued_then_granted)
{
	struct rl_queued q;
	struct rl_stats s;
	int fd = ks_drained(_metadata, 5, NS_PER_SEC, 1, 0, 0);

	ASSERT_LE(0, fd);
	req(&q, 1, RL_DEADLINE_NONE, 0xfeed);
	ASSERT_EQ(0, rl_submit(fd, &q));
	EXPECT_EQ(1, q.ticket);
	EXPECT_EQ(0, q.result);
	EXPECT_EQ(0, q.wait_ns);
	EXPECT_EQ(1, ks_nwaiters(fd));
	EXPECT_EQ(-EAGAIN, rl_collect(fd, &q));
	EXPECT_EQ(1, readable(fd, WAIT_MS));
	ASSERT_EQ(0, collect(fd, &q, 0));
	EXPECT_EQ(1, q.ticket);
	EXPECT_EQ(1, q.count);
	EXPECT_EQ(0, q.result);
	EXPECT_EQ(0xfeed, q.user_data);
	EXPECT_LT(20 * NS_PER_MS, q.wait_ns);
	EXPECT_EQ(0, q.reserved);
	EXPECT_EQ(-EAGAIN, rl_collect(fd, &q));
	EXPECT_EQ(-ENOENT, rl_cancel(fd, 1));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(1, s.waited);
	/* and the token ks_drained() took */
	EXPECT_EQ(2, s.granted);
	EXPECT_EQ(0, s.waiters);
	/* Tickets count up per fd. */
	req(&q, 1, RL_DEADLINE_NONE, 0);
	ASSERT_EQ(0, rl_submit(fd, &q));
	EXPECT_EQ(2, q.ticket);
	EXPECT_EQ(0, rl_cancel(fd, 2));
	close(fd);
}

/* epoll sees a finished request as EPOLLIN. */
TEST(epoll)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct rl_queued q;
	int fd = ks_drained(_metadata, 5, NS_PER_SEC, 1, 0, 0), ep;

	ASSERT_LE(0, fd);
	ep = epoll_create1(0);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	req(&q, 1, RL_DEADLINE_NONE, 0);
	ASSERT_EQ(0, rl_submit(fd, &q));
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, WAIT_MS));
	EXPECT_TRUE(out.events & EPOLLIN);
	ASSERT_EQ(0, rl_collect(fd, &q));
	EXPECT_EQ(1, q.ticket);
	close(ep);
	close(fd);
}

/* A queued request takes its turn among sleepers of the same fd, in arrival order. */
TEST(order_among_blocking_waiters)
{
	int order[3], len = 0, fd;
	struct waiter wa, wc;
	struct rl_queued q;

	/* One token every 500 ms, none left. */
	fd = ks_drained(_metadata, 2, NS_PER_SEC, 1, 0, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, waiter_start_ordered(&wa, fd, 1, now_ns() + SAFETY_NS, 0, order, &len, 1));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, WAIT_MS));
	req(&q, 1, RL_DEADLINE_NONE, 2);
	ASSERT_EQ(0, rl_submit(fd, &q));
	ASSERT_NE(0, q.ticket);
	ASSERT_EQ(0, ks_wait_waiters(fd, 2, WAIT_MS));
	ASSERT_EQ(0, waiter_start_ordered(&wc, fd, 1, now_ns() + SAFETY_NS, 0, order, &len, 3));
	ASSERT_EQ(0, ks_wait_waiters(fd, 3, WAIT_MS));
	ASSERT_EQ(0, collect(fd, &q, WAIT_MS));
	EXPECT_EQ(0, q.result);
	order[__atomic_fetch_add(&len, 1, __ATOMIC_SEQ_CST)] = 2;
	ASSERT_EQ(0, waiter_join(&wa, WAIT_MS));
	ASSERT_EQ(0, waiter_join(&wc, WAIT_MS));
	ASSERT_EQ(3, len);
	EXPECT_EQ(1, order[0]);
	EXPECT_EQ(2, order[1]);
	EXPECT_EQ(3, order[2]);
	close(fd);
}

/*
 * A request that times out leaves the queue at its deadline, not when
 * collected: the one behind it is served meanwhile.
 */
TEST(deadline)
{
	struct rl_queued q, q2;
	struct rl_stats s;
	int fd = ks_drained(_metadata, 10, NS_PER_SEC, 10, 0, 0);

	ASSERT_LE(0, fd);
	/* 10 tokens take 1 s; this one may wait 100 ms. */
	req(&q, 10, now_ns() + 100 * NS_PER_MS, 1);
	ASSERT_EQ(0, rl_submit(fd, &q));
	ASSERT_EQ(1, q.ticket);
	req(&q2, 1, RL_DEADLINE_NONE, 2);
	ASSERT_EQ(0, rl_submit(fd, &q2));
	ASSERT_EQ(2, q2.ticket);
	/* Nothing collected: the second is granted all the same. */
	ASSERT_EQ(0, ks_wait_waiters(fd, 0, WAIT_MS));
	ASSERT_EQ(0, collect(fd, &q, WAIT_MS));
	EXPECT_EQ(1, q.ticket);
	EXPECT_EQ(-ETIMEDOUT, q.result);
	EXPECT_EQ(1, q.user_data);
	EXPECT_NE(POISON64, q.ready_ns);
	ASSERT_EQ(0, collect(fd, &q2, WAIT_MS));
	EXPECT_EQ(2, q2.ticket);
	EXPECT_EQ(0, q2.result);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(1, s.timeouts);
	EXPECT_EQ(10 + 1, s.granted);
	/* Past deadline, or predicted late: -ETIMEDOUT at once, nothing queued. */
	req(&q, 1, now_ns() - 1, 0);
	EXPECT_EQ(-ETIMEDOUT, rl_submit(fd, &q));
	EXPECT_EQ(0, q.ticket);
	req(&q, 10, now_ns() + 10 * NS_PER_MS, 0);
	q.flags = RL_ACQUIRE_PREDICT;
	EXPECT_EQ(-ETIMEDOUT, rl_submit(fd, &q));
	EXPECT_LT(now_ns(), q.ready_ns);
	EXPECT_EQ(0, ks_nwaiters(fd));
	close(fd);
}

/* Cancelled while queued: out of the queue, nothing to collect, counted. */
TEST(cancel_queued)
{
	struct rl_queued q;
	struct rl_stats s;
	int fd = ks_drained(_metadata, 1, 10 * NS_PER_SEC, 1, 0, 0);

	ASSERT_LE(0, fd);
	req(&q, 1, RL_DEADLINE_NONE, 0);
	ASSERT_EQ(0, rl_submit(fd, &q));
	ASSERT_EQ(1, ks_nwaiters(fd));
	EXPECT_EQ(0, rl_cancel(fd, q.ticket));
	EXPECT_EQ(-ENOENT, rl_cancel(fd, q.ticket));
	EXPECT_EQ(-EAGAIN, rl_collect(fd, &q));
	EXPECT_EQ(0, readable(fd, 0));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(0, s.waiters);
	EXPECT_EQ(1, s.interrupted);
	/* only the token ks_drained() took */
	EXPECT_EQ(1, s.granted);
	close(fd);
}

/* Cancelled once granted and not collected: its tokens and permits come back. */
TEST(cancel_granted)
{
	struct rl_queued q;
	struct rl_stats s;
	int fd = ks_drained(_metadata, 5, NS_PER_SEC, 1, 1, 0);

	ASSERT_LE(0, fd);
	req(&q, 1, RL_DEADLINE_NONE, 0);
	ASSERT_EQ(0, rl_submit(fd, &q));
	ASSERT_NE(0, q.ticket);
	ASSERT_EQ(1, readable(fd, WAIT_MS));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(1, s.held);
	EXPECT_EQ(0, rl_cancel(fd, q.ticket));
	EXPECT_EQ(0, readable(fd, 0) && rl_collect(fd, &q) == 0);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(0, s.held);
	EXPECT_EQ(1, s.available);
	EXPECT_EQ(1, s.granted);
	EXPECT_EQ(1, s.interrupted);
	/* The permit is free again: taken at once. */
	req(&q, 1, RL_DEADLINE_NONE, 0);
	ASSERT_EQ(0, rl_submit(fd, &q));
	EXPECT_EQ(0, q.ticket);
	close(fd);
}

/* A request above the burst cancelled between chunks gives back the chunks it got. */
TEST(cancel_mid_chunk)
{
	struct rl_queued q;
	struct rl_stats s;
	/* Paused, a full bucket of 10 and 100 permits: a chunk of 10, then nothing. */
	int fd = ks_drained(_metadata, 0, NS_PER_SEC, 10, 100, 10);

	ASSERT_LE(0, fd);
	req(&q, 25, RL_DEADLINE_NONE, 0);
	ASSERT_EQ(0, rl_submit(fd, &q));
	ASSERT_NE(0, q.ticket);
	/* Every permit at the first chunk, as for RL_IOC_ACQUIRE. */
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(25, s.held);
	EXPECT_EQ(0, s.available);
	EXPECT_EQ(1, s.waiters);
	EXPECT_EQ(0, rl_cancel(fd, 0));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(0, s.held);
	EXPECT_EQ(10, s.available);
	EXPECT_EQ(0, s.waiters);
	close(fd);
}

/* At most RL_QUEUED_MAX outstanding per fd, collected ones not counted. */
TEST(bounded_per_fd)
{
	struct rl_queued q;
	int fd = ks_drained(_metadata, 1, 100 * NS_PER_SEC, 1, 0, 0), i;

	ASSERT_LE(0, fd);
	for (i = 0; i < RL_QUEUED_MAX; i++) {
		req(&q, 1, RL_DEADLINE_NONE, i);
		ASSERT_EQ(0, rl_submit(fd, &q));
		ASSERT_EQ(i + 1, q.ticket);
	}
	req(&q, 1, RL_DEADLINE_NONE, 0);
	EXPECT_EQ(-EBUSY, rl_submit(fd, &q));
	EXPECT_EQ(RL_QUEUED_MAX, ks_nwaiters(fd));
	/* A cancelled one makes room. */
	EXPECT_EQ(0, rl_cancel(fd, 5));
	req(&q, 1, RL_DEADLINE_NONE, 0);
	EXPECT_EQ(0, rl_submit(fd, &q));
	EXPECT_EQ(RL_QUEUED_MAX + 1, q.ticket);
	EXPECT_EQ(0, rl_cancel(fd, 0));
	EXPECT_EQ(0, ks_nwaiters(fd));
	close(fd);
}

/* The child's part of close_and_kill: a grant held, one not collected, one queued. */
static int child_requests(const char *name, int p, int go)
{
	struct rl_queued q;
	int kid = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 1);
	char x;

	/* 6 at once (6 permits); 6 queued (4 left) until the first 6 are refunded. */
	req(&q, 6, RL_DEADLINE_NONE, 0);
	if (kid < 0 || rl_submit(kid, &q) || q.ticket)
		return 2;
	req(&q, 6, RL_DEADLINE_NONE, 0);
	if (rl_submit(kid, &q) || !q.ticket || rl_refund(kid, 6) || readable(kid, WAIT_MS) != 1)
		return 3;
	req(&q, 6, RL_DEADLINE_NONE, 0);
	if (rl_submit(kid, &q) || !q.ticket)
		return 4;
	if (write(p, "x", 1) != 1 || read(go, &x, 1) != 1)
		return 5;
	/* Close it (the kill -9 round never gets here). */
	return close(kid) ? 6 : 0;
}

/* Close, and kill -9, with requests granted and queued: everything comes back. */
TEST(close_and_kill)
{
	struct rl_config c = { .period_ns = NS_PER_SEC, .burst = 10, .concurrency = 100 };
	int fd, st, i, p[2], go[2], ret;
	char name[RL_NAME_MAX], x;
	struct rl_stats s;
	pid_t pid;

	snprintf(name, sizeof(name), "kq-%d", getpid());
	fd = ks_open();
	ASSERT_LE(0, fd);
	/* Paused, 10 tokens. */
	ASSERT_EQ(0, ks_att_cfg(fd, name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600, &c));
	ASSERT_EQ(10, ks_avail(fd));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pipe(p));
		ASSERT_EQ(0, pipe(go));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			_exit(child_requests(name, p[1], go[0]));
		close(p[1]);
		close(go[0]);
		ASSERT_EQ(1, read(p[0], &x, 1));
		close(p[0]);
		ASSERT_EQ(0, ks_stats(fd, &s));
		EXPECT_EQ(1, s.waiters);
		EXPECT_EQ(12, s.held);
		EXPECT_EQ(4, s.available);
		/* Round 0: the child closes its fd and exits; round 1: kill -9. */
		ret = i == 0 ? write(go[1], "x", 1) != 1 : kill(pid, SIGKILL);
		ASSERT_EQ(0, ret);
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		close(go[1]);
		if (i == 0)
			ASSERT_EQ(0, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		ASSERT_EQ(0, ks_stats(fd, &s));
		EXPECT_EQ(0, s.waiters);
		EXPECT_EQ(0, s.held);
		/* The grant not collected gave its 6 tokens back. */
		EXPECT_EQ(10, s.available);
	}
	EXPECT_EQ(0, ks_unl(fd, name));
	close(fd);
}

struct blocker {
	int fd;
	int n;
	int ret;
	int done;		/* __atomic */
};

/* @n blocking acquires of one token each, one after the other. */
static void *blocker_fn(void *arg)
{
	struct blocker *b = arg;
	struct rl_acquire a;
	int i;

	for (i = 0; i < b->n && !b->ret; i++)
		b->ret = ks_acq(b->fd, 1, now_ns() + SAFETY_NS, 0, &a);
	__atomic_store_n(&b->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/*
 * One fd with many requests queued is one client: beside a blocking fd on
 * the same named limiter, each gets about half the grants.
 */
TEST(one_fd_one_share)
{
	struct blocker b = { .n = 20 };
	char name[RL_NAME_MAX];
	int fd, a, i, mine = 0;
	struct rl_queued q;
	pthread_t th;

	snprintf(name, sizeof(name), "kq1-%d", getpid());
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600, 50, NS_PER_SEC, 1);
	ASSERT_LE(0, fd);
	a = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 1);
	b.fd = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 1);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b.fd);
	for (i = 0; i < 20; i++) {
		req(&q, 1, RL_DEADLINE_NONE, i);
		ASSERT_EQ(0, rl_submit(a, &q));
	}
	ASSERT_EQ(0, pthread_create(&th, NULL, blocker_fn, &b));
	while (!__atomic_load_n(&b.done, __ATOMIC_SEQ_CST)) {
		readable(a, 100);
		while (!rl_collect(a, &q)) {
			mine++;
			req(&q, 1, RL_DEADLINE_NONE, 0);
			ASSERT_EQ(0, rl_submit(a, &q));
		}
	}
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, b.ret);
	/* 20 each, within a few: the blocker asks again only after its grant. */
	EXPECT_LE(15, mine);
	EXPECT_GE(25, mine);
	EXPECT_EQ(0, rl_cancel(a, 0));
	EXPECT_EQ(0, ks_nwaiters(fd));
	EXPECT_EQ(0, ks_unl(fd, name));
	close(a);
	close(b.fd);
	close(fd);
}

TEST_HARNESS_MAIN
