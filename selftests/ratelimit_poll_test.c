// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of /dev/ratelimit: poll() and epoll. An fd is readable when an
 * acquire of one token would be granted at once (a token in the bucket,
 * nobody queued, a permit free and the fd under its cap); an fd without a
 * limiter reports EPOLLERR.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/wait.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"

#define LATE_NS		(700 * NS_PER_MS)

static int poll1(int fd, int timeout_ms, short *revents)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDNORM };
	int ret;

	*revents = 0;
	ret = poll(&p, 1, timeout_ms);
	*revents = p.revents;
	return ret;
}

TEST(poll_unconfigured_err)
{
	short rev;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	EXPECT_EQ(1, poll1(fd, 0, &rev));
	EXPECT_TRUE(rev & POLLERR);
	EXPECT_FALSE(rev & POLLIN);
	/* No limiter, no timer: a timed poll does not hang either. */
	EXPECT_EQ(1, poll1(fd, 1000, &rev));
	EXPECT_TRUE(rev & POLLERR);
	close(fd);
}

TEST(poll_readable_when_token)
{
	short rev;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 2, 0));
	EXPECT_EQ(1, poll1(fd, 0, &rev));
	EXPECT_EQ(POLLIN | POLLRDNORM, rev);
	close(fd);
}

TEST(poll_not_readable_when_empty)
{
	struct rl_acquire a;
	short rev;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 2, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(1, poll1(fd, 0, &rev));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, poll1(fd, 0, &rev));
	EXPECT_EQ(0, rev);
	close(fd);
}

TEST(poll_times_out_when_paused)
{
	short rev;
	__u64 t0;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 1, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK,
			    &(struct rl_acquire){ 0 }));
	t0 = now_ns();
	EXPECT_EQ(0, poll1(fd, 150, &rev));
	EXPECT_LE(t0 + 149 * NS_PER_MS, now_ns());
	close(fd);
}

TEST(poll_wakes_on_refill)
{
	struct rl_acquire a;
	__u64 t0, t1;
	short rev;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	/* 5 per second: a token 200 ms after the bucket empties. */
	ASSERT_EQ(0, ks_set(fd, 5, NS_PER_SEC, 1, 0));
	t0 = now_ns();
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(1, poll1(fd, 2000, &rev));
	t1 = now_ns();
	EXPECT_TRUE(rev & POLLIN);
	EXPECT_LE(t0 + 200 * NS_PER_MS, t1);
	EXPECT_GT(t0 + 200 * NS_PER_MS + LATE_NS, t1);
	/* Readable means an acquire of one succeeds now. */
	EXPECT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
}

TEST(poll_wakes_on_reconfig)
{
	__u64 t0, t1;
	short rev;
	int fd = ks_open();
	int fd2, status;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 1, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK,
			    &(struct rl_acquire){ 0 }));
	fd2 = dup(fd);
	ASSERT_LE(0, fd2);
	/* A child unpauses the limiter 100 ms from now. */
	t0 = now_ns();
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		sleep_ms(100);
		_exit(ks_set(fd2, 1000, NS_PER_SEC, 1, 0) ? 1 : 0);
	}
	EXPECT_EQ(1, poll1(fd, 2000, &rev));
	t1 = now_ns();
	EXPECT_TRUE(rev & POLLIN);
	EXPECT_LE(t0 + 100 * NS_PER_MS, t1);
	EXPECT_GT(t0 + 100 * NS_PER_MS + LATE_NS, t1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	close(fd2);
	close(fd);
}

TEST(poll_not_readable_with_queued_waiter)
{
	struct waiter w;
	short rev;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	/* Paused with one of two tokens; a waiter wants both. */
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 2, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK,
			    &(struct rl_acquire){ 0 }));
	EXPECT_EQ(1, poll1(fd, 0, &rev));
	ASSERT_EQ(0, waiter_start(&w, fd, 2, now_ns() + 2500 * NS_PER_MS, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	EXPECT_EQ(1ULL, ks_avail(fd));
	/* A token is there, but it belongs to the queue. */
	EXPECT_EQ(0, poll1(fd, 0, &rev));
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 2, 0));
	ASSERT_EQ(0, waiter_join(&w, 2000));
	EXPECT_EQ(0, w.ret);
	close(fd);
}

TEST(poll_unlimited_readable)
{
	short rev;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 1, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK,
			    &(struct rl_acquire){ 0 }));
	EXPECT_EQ(0, poll1(fd, 0, &rev));
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 1, RL_CONFIG_UNLIMITED));
	EXPECT_EQ(1, poll1(fd, 0, &rev));
	EXPECT_TRUE(rev & POLLIN);
	close(fd);
}

/* All permits held: an acquire would wait, so not readable. */
TEST(poll_concurrency_full_not_readable)
{
	struct rl_config c;
	__u64 t0, t1;
	short rev;
	int fd = ks_open();
	int fd2, status;
	pid_t pid;

	ASSERT_LE(0, fd);
	memset(&c, 0, sizeof(c));
	c.period_ns = NS_PER_SEC;
	c.burst = 1;
	c.flags = RL_CONFIG_UNLIMITED;
	c.concurrency = 1;
	ASSERT_EQ(0, ioctl(fd, RL_IOC_SET_CONFIG, &c));
	EXPECT_EQ(1, poll1(fd, 0, &rev));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK,
			    &(struct rl_acquire){ 0 }));
	EXPECT_EQ(0, poll1(fd, 0, &rev));
	fd2 = dup(fd);
	ASSERT_LE(0, fd2);
	/* A child releases the permit (same open file) 100 ms from now. */
	t0 = now_ns();
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		sleep_ms(100);
		_exit(ks_release(fd2, 1) ? 1 : 0);
	}
	EXPECT_EQ(1, poll1(fd, 2000, &rev));
	t1 = now_ns();
	EXPECT_TRUE(rev & POLLIN);
	EXPECT_LE(t0 + 100 * NS_PER_MS, t1);
	EXPECT_GT(t0 + 100 * NS_PER_MS + LATE_NS, t1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	close(fd2);
	close(fd);
}

/* An fd at its own cap would wait: not readable, until the cap refills. */
TEST(poll_capped_client_not_readable)
{
	struct rl_acquire a;
	__u64 t0, t1;
	short rev;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	/* Plenty of tokens, but a cap of 1 per 300 ms for this fd. */
	ASSERT_EQ(0, ks_set(fd, 300, 300 * NS_PER_MS, 10, 0));
	ASSERT_EQ(0, ks_client(fd, 0, 0, 1));
	t0 = now_ns();
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, poll1(fd, 0, &rev));
	EXPECT_EQ(1, poll1(fd, 2000, &rev));
	t1 = now_ns();
	EXPECT_TRUE(rev & POLLIN);
	EXPECT_LE(t0 + 300 * NS_PER_MS, t1);
	EXPECT_GT(t0 + 300 * NS_PER_MS + LATE_NS, t1);
	EXPECT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
}

TEST(epoll_level_triggered)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct rl_acquire a;
	int fd = ks_open();
	int ep = epoll_create1(EPOLL_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 2, 0));
	ev.data.fd = fd;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	memset(&ev, 0, sizeof(ev));
	EXPECT_EQ(1, epoll_wait(ep, &ev, 1, 0));
	EXPECT_EQ(fd, ev.data.fd);
	EXPECT_TRUE(!!(ev.events & EPOLLIN));
	/* Still readable: level-triggered, nothing taken. */
	EXPECT_EQ(1, epoll_wait(ep, &ev, 1, 0));
	ASSERT_EQ(0, ks_acq(fd, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, epoll_wait(ep, &ev, 1, 0));
	close(ep);
	close(fd);
}

TEST(epoll_wakes_on_refill)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct rl_acquire a;
	__u64 t0, t1;
	int fd = ks_open();
	int ep = epoll_create1(EPOLL_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, ks_set(fd, 5, NS_PER_SEC, 1, 0));
	ev.data.fd = fd;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	t0 = now_ns();
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	memset(&ev, 0, sizeof(ev));
	EXPECT_EQ(1, epoll_wait(ep, &ev, 1, 2000));
	t1 = now_ns();
	EXPECT_TRUE(!!(ev.events & EPOLLIN));
	EXPECT_LE(t0 + 200 * NS_PER_MS, t1);
	EXPECT_GT(t0 + 200 * NS_PER_MS + LATE_NS, t1);
	EXPECT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(ep);
	close(fd);
}

TEST(epoll_unconfigured_err)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd = ks_open();
	int ep = epoll_create1(EPOLL_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, ep);
	ev.data.fd = fd;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	memset(&ev, 0, sizeof(ev));
	EXPECT_EQ(1, epoll_wait(ep, &ev, 1, 0));
	EXPECT_TRUE(!!(ev.events & EPOLLERR));
	/* Configuring the fd clears the error. */
	ASSERT_EQ(0, ks_set(fd, 1, NS_PER_SEC, 1, 0));
	memset(&ev, 0, sizeof(ev));
	EXPECT_EQ(1, epoll_wait(ep, &ev, 1, 0));
	EXPECT_EQ((__u32)EPOLLIN, ev.events & (EPOLLIN | EPOLLERR));
	close(ep);
	close(fd);
}

TEST(epoll_added_before_config_wakes)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct rl_acquire a;
	__u64 t0;
	int fd = ks_open();
	int ep = epoll_create1(EPOLL_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, ep);
	/* Watched before it has a limiter: later refills must still wake. */
	ev.data.fd = fd;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	ASSERT_EQ(0, ks_set(fd, 5, NS_PER_SEC, 1, 0));
	t0 = now_ns();
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	/* Drain the ready list: not readable now. */
	EXPECT_EQ(0, epoll_wait(ep, &ev, 1, 0));
	memset(&ev, 0, sizeof(ev));
	EXPECT_EQ(1, epoll_wait(ep, &ev, 1, 2000));
	EXPECT_TRUE(!!(ev.events & EPOLLIN));
	EXPECT_LE(t0 + 200 * NS_PER_MS, now_ns());
	close(ep);
	close(fd);
}

TEST(poll_many_pollers_one_token)
{
	struct rl_acquire a;
	short rev;
	int fd = ks_open();
	int fd2, i;
	pid_t pid[3];

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 5, NS_PER_SEC, 1, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	fd2 = dup(fd);
	ASSERT_LE(0, fd2);
	/* Several pollers on the same limiter all see the refill. */
	for (i = 0; i < 3; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (pid[i] == 0)
			_exit(poll1(fd2, 2000, &rev) == 1 &&
			      (rev & POLLIN) ? 0 : 1);
	}
	for (i = 0; i < 3; i++) {
		int status;

		ASSERT_EQ(pid[i], waitpid(pid[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status));
	}
	close(fd2);
	close(fd);
}

TEST_HARNESS_MAIN
