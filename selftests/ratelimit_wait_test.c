// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of /dev/ratelimit: blocking acquires. Deadlines, predicted
 * timeouts, requests above the burst, signals, reconfiguration with
 * sleepers, FIFO order, exact wake-ups, a dying waiter and a stress test.
 *
 * Every blocking call carries a deadline and every thread is joined with a
 * timeout, so a broken driver fails a test instead of hanging it. Timing
 * lower bounds are strict (nothing may happen early); upper bounds are
 * generous because the guest runs under TCG.
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

/* How long a woken thread may take to run under TCG. */
#define LATE_NS		(700 * NS_PER_MS)
/* Deadline of calls that should be granted or interrupted well before. */
#define SAFETY_NS	(2500 * NS_PER_MS)

static __u64 soon(void)
{
	return now_ns() + SAFETY_NS;
}

/* A paused limiter (rate 0) with @avail of @burst tokens left. */
static int paused_fd(struct __test_metadata *_metadata, __u64 burst,
		     __u64 avail)
{
	struct rl_acquire a;
	int fd = ks_open();

	if (fd < 0)
		return fd;
	EXPECT_EQ(0, ks_set(fd, 0, NS_PER_SEC, burst, 0));
	if (burst > avail)
		EXPECT_EQ(0, ks_acq(fd, burst - avail, 0,
				    RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(avail, ks_avail(fd));
	return fd;
}

/* ---- plain waits ---- */

TEST(blocking_waits_for_refill)
{
	struct rl_acquire a;
	__u64 t0, t1, t2;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 10, NS_PER_SEC, 1, 0));
	t0 = now_ns();
	ASSERT_EQ(0, ks_acq(fd, 1, soon(), 0, &a));
	t1 = now_ns();
	/* The next token comes 100 ms after the first was taken. */
	ASSERT_EQ(0, ks_acq(fd, 1, soon(), 0, &a));
	t2 = now_ns();
	EXPECT_LE(t0 + 100 * NS_PER_MS, t2);
	EXPECT_GT(t1 + 100 * NS_PER_MS + LATE_NS, t2);
	/* wait_ns is the time slept: within the call, most of the wait. */
	EXPECT_GE(t2 - t1, a.wait_ns);
	EXPECT_LE(50 * NS_PER_MS, a.wait_ns);
	close(fd);
}

TEST(wait_stats_counters)
{
	struct rl_acquire a1, a2;
	struct rl_stats s;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 20, NS_PER_SEC, 1, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, soon(), 0, &a1));
	ASSERT_EQ(0, ks_acq(fd, 1, soon(), 0, &a1));
	ASSERT_EQ(0, ks_acq(fd, 1, soon(), 0, &a2));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(3ULL, s.granted);
	EXPECT_EQ(3ULL, s.requests);
	EXPECT_EQ(1ULL, s.immediate);
	EXPECT_EQ(2ULL, s.waited);
	EXPECT_LE(a1.wait_ns, s.wait_ns_max);
	EXPECT_LE(a2.wait_ns, s.wait_ns_max);
	EXPECT_LE(a1.wait_ns + a2.wait_ns, s.wait_ns_total);
	EXPECT_GE(s.wait_ns_total, s.wait_ns_max);
	EXPECT_LT(0ULL, s.wait_ns_total);
	EXPECT_EQ(0ULL, s.waiters);
	EXPECT_EQ(0ULL, s.timeouts);
	EXPECT_EQ(0ULL, s.interrupted);
	close(fd);
}

TEST(waiters_counted_while_sleeping)
{
	struct waiter w[2];
	int fd = paused_fd(_metadata, 1, 0);
	int i;

	ASSERT_LE(0, fd);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, waiter_start(&w[i], fd, 1, soon(), 0));
		ASSERT_EQ(0, ks_wait_waiters(fd, i + 1, 2000));
	}
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 1, 0));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, waiter_join(&w[i], 2000));
		EXPECT_EQ(0, w[i].ret);
	}
	EXPECT_EQ(0ULL, ks_nwaiters(fd));
	close(fd);
}

/* ---- deadlines ---- */

TEST(deadline_past_times_out_at_once)
{
	struct rl_acquire a;
	struct rl_stats s;
	__u64 t0, t1;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 1, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	t0 = now_ns();
	EXPECT_ERRNO(ETIMEDOUT, ks_acq(fd, 1, t0 - NS_PER_MS, 0, &a));
	t1 = now_ns();
	EXPECT_GT(t0 + 300 * NS_PER_MS, t1);
	EXPECT_NE(POISON64, a.ready_ns);
	EXPECT_LT(t1 + 9 * NS_PER_SEC, a.ready_ns);
	EXPECT_ERRNO(ETIMEDOUT, ks_acq(fd, 1, 0, 0, &a));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(2ULL, s.timeouts);
	EXPECT_EQ(1ULL, s.granted);
	EXPECT_EQ(0ULL, s.waiters);
	close(fd);
}

TEST(deadline_not_before_it)
{
	struct rl_acquire a;
	struct rl_stats s;
	__u64 t0, t1, deadline;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 1, 0));
	t0 = now_ns();
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	deadline = now_ns() + 150 * NS_PER_MS;
	EXPECT_ERRNO(ETIMEDOUT, ks_acq(fd, 1, deadline, 0, &a));
	t1 = now_ns();
	EXPECT_LE(deadline, t1);
	EXPECT_GT(deadline + LATE_NS, t1);
	/* ready_ns: 10 s after the token was taken. */
	EXPECT_LE(t0 + 10 * NS_PER_SEC - NS_PER_MS, a.ready_ns);
	EXPECT_GE(deadline + 10 * NS_PER_SEC, a.ready_ns);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(1ULL, s.timeouts);
	EXPECT_EQ(0ULL, s.waiters);
	EXPECT_EQ(0ULL, s.waited);
	close(fd);
}

TEST(deadline_timeout_consumes_nothing)
{
	struct rl_acquire a;
	int fd = paused_fd(_metadata, 4, 2);

	ASSERT_LE(0, fd);
	EXPECT_ERRNO(ETIMEDOUT, ks_acq(fd, 3, now_ns() + 100 * NS_PER_MS, 0,
				       &a));
	EXPECT_EQ(RL_DEADLINE_NONE, a.ready_ns);
	EXPECT_EQ(2ULL, ks_avail(fd));
	EXPECT_EQ(0, ks_acq(fd, 2, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
}

TEST(predict_late_fails_fast)
{
	struct rl_acquire a;
	struct rl_stats s;
	__u64 t0, t1;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 1, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	t0 = now_ns();
	/* The token is 10 s away: a 2 s deadline cannot be met. */
	EXPECT_ERRNO(ETIMEDOUT, ks_acq(fd, 1, t0 + 2 * NS_PER_SEC,
				       RL_ACQUIRE_PREDICT, &a));
	t1 = now_ns();
	EXPECT_GT(t0 + 500 * NS_PER_MS, t1);
	EXPECT_LT(t0 + 9 * NS_PER_SEC, a.ready_ns);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(1ULL, s.timeouts);
	EXPECT_EQ(2ULL, s.requests);
	EXPECT_EQ(0ULL, s.waiters);
	close(fd);
}

TEST(predict_paused_fails_fast)
{
	struct rl_acquire a;
	__u64 t0;
	int fd = paused_fd(_metadata, 1, 0);

	ASSERT_LE(0, fd);
	t0 = now_ns();
	EXPECT_ERRNO(ETIMEDOUT, ks_acq(fd, 1, t0 + 2 * NS_PER_SEC,
				       RL_ACQUIRE_PREDICT, &a));
	EXPECT_GT(t0 + 500 * NS_PER_MS, now_ns());
	EXPECT_EQ(RL_DEADLINE_NONE, a.ready_ns);
	close(fd);
}

TEST(predict_in_time_waits)
{
	struct rl_acquire a;
	__u64 t0;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 10, NS_PER_SEC, 1, 0));
	t0 = now_ns();
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, ks_acq(fd, 1, now_ns() + 2 * NS_PER_SEC,
			    RL_ACQUIRE_PREDICT, &a));
	EXPECT_LE(t0 + 100 * NS_PER_MS, now_ns());
	EXPECT_LT(0ULL, a.wait_ns);
	close(fd);
}

/* ---- requests above the burst ---- */

TEST(over_burst_served_in_chunks)
{
	struct rl_acquire a;
	struct rl_stats s;
	__u64 t0, t1;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	/* 100/s, burst 10: 30 tokens = 10 now + 20 in 200 ms. */
	ASSERT_EQ(0, ks_set(fd, 100, NS_PER_SEC, 10, 0));
	t0 = now_ns();
	ASSERT_EQ(0, ks_acq(fd, 30, soon(), 0, &a));
	t1 = now_ns();
	EXPECT_LE(t0 + 200 * NS_PER_MS, t1);
	EXPECT_GT(t0 + 200 * NS_PER_MS + LATE_NS, t1);
	EXPECT_GE(t1 - t0, a.wait_ns);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(30ULL, s.granted);
	EXPECT_EQ(1ULL, s.requests);
	EXPECT_EQ(1ULL, s.waited);
	EXPECT_GE(1ULL, s.available);
	close(fd);
}

TEST(over_burst_timeout_returns_tokens)
{
	struct rl_acquire a;
	struct rl_stats s;
	__u64 deadline;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	/* Burst 4 now, the other 2 tokens 20 s away. */
	ASSERT_EQ(0, ks_set(fd, 1, 10 * NS_PER_SEC, 4, 0));
	deadline = now_ns() + 200 * NS_PER_MS;
	EXPECT_ERRNO(ETIMEDOUT, ks_acq(fd, 6, deadline, 0, &a));
	EXPECT_LE(deadline, now_ns());
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(4ULL, s.available);
	EXPECT_EQ(1ULL, s.timeouts);
	EXPECT_EQ(0ULL, s.waiters);
	EXPECT_EQ(0, ks_acq(fd, 4, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
}

TEST(over_burst_returned_tokens_capped)
{
	struct rl_acquire a;
	__u64 deadline;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	/*
	 * 10/s, burst 4, 9 wanted: 4 granted at once, 2 more refill before
	 * the deadline, the rest cannot come in time. Giving back the 4 on
	 * top of the refill must not overflow the bucket.
	 */
	ASSERT_EQ(0, ks_set(fd, 10, NS_PER_SEC, 4, 0));
	deadline = now_ns() + 250 * NS_PER_MS;
	EXPECT_ERRNO(ETIMEDOUT, ks_acq(fd, 9, deadline, 0, &a));
	EXPECT_EQ(4ULL, ks_avail(fd));
	EXPECT_EQ(0, ks_acq(fd, 4, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
}

/* ---- signals ---- */

TEST(signal_eintr_consumes_nothing)
{
	struct rl_stats s;
	struct waiter w;
	int fd = paused_fd(_metadata, 2, 1);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, catch_signal(SIGUSR1, 0));
	ASSERT_EQ(0, waiter_start(&w, fd, 2, soon(), 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	ASSERT_EQ(0, pthread_kill(w.th, SIGUSR1));
	ASSERT_EQ(0, waiter_join(&w, 2000));
	EXPECT_EQ(-1, w.ret);
	EXPECT_EQ(EINTR, w.err);
	EXPECT_EQ(1, signal_hits());
	EXPECT_GT(w.t_start + 2 * NS_PER_SEC, w.t_end);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(1ULL, s.interrupted);
	EXPECT_EQ(0ULL, s.waiters);
	EXPECT_EQ(1ULL, s.available);
	EXPECT_EQ(1ULL, s.granted);
	EXPECT_EQ(0ULL, s.timeouts);
	close(fd);
}

TEST(signal_eintr_over_burst_returns_tokens)
{
	struct waiter w;
	int fd = paused_fd(_metadata, 2, 2);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, catch_signal(SIGUSR1, 0));
	ASSERT_EQ(0, waiter_start(&w, fd, 5, soon(), 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	ASSERT_EQ(0, pthread_kill(w.th, SIGUSR1));
	ASSERT_EQ(0, waiter_join(&w, 2000));
	EXPECT_EQ(-1, w.ret);
	EXPECT_EQ(EINTR, w.err);
	EXPECT_EQ(2ULL, ks_avail(fd));
	EXPECT_EQ(0ULL, ks_nwaiters(fd));
	close(fd);
}

TEST(signal_sa_restart_resumes)
{
	struct waiter w;
	__u64 end;
	int fd = paused_fd(_metadata, 1, 0);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, catch_signal(SIGUSR1, SA_RESTART));
	ASSERT_EQ(0, waiter_start(&w, fd, 1, soon(), 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	ASSERT_EQ(0, pthread_kill(w.th, SIGUSR1));
	end = now_ns() + NS_PER_SEC;
	while (!signal_hits() && now_ns() < end)
		sleep_ms(1);
	ASSERT_EQ(1, signal_hits());
	/* The call restarted: queued again, not returned. */
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	EXPECT_EQ(0, __atomic_load_n(&w.done, __ATOMIC_SEQ_CST));
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 1, 0));
	ASSERT_EQ(0, waiter_join(&w, 2000));
	EXPECT_EQ(0, w.ret);
	EXPECT_EQ(0ULL, ks_nwaiters(fd));
	close(fd);
}

/*
 * SIGSTOP and SIGCONT of a sleeping acquire: the call restarts and is
 * granted, the caller never sees the stop, so it is no interruption and
 * one request. With SA_RESTART the handler ran: that one counts.
 */
TEST(signal_stop_is_no_interruption)
{
	struct rl_stats s0, s;
	struct rl_acquire a;
	int fd = paused_fd(_metadata, 1, 0);
	int status;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_stats(fd, &s0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(ks_acq(fd, 1, RL_DEADLINE_NONE, 0, &a) ? 1 : 0);
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	ASSERT_EQ(pid, waitpid(pid, &status, WUNTRACED));
	ASSERT_TRUE(WIFSTOPPED(status));
	ASSERT_EQ(0, kill(pid, SIGCONT));
	/* Queued again, as it was. */
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(s0.interrupted, s.interrupted);
	EXPECT_EQ(s0.requests + 1, s.requests);
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 1, 0));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(s0.interrupted, s.interrupted);
	EXPECT_EQ(s0.requests + 1, s.requests);
	EXPECT_EQ(s0.waited + 1, s.waited);
	EXPECT_EQ(s.requests, s.immediate + s.waited + s.timeouts +
		  s.interrupted + s.rejected);
	close(fd);
}

TEST(signal_sa_restart_counts_interruption)
{
	struct rl_stats s;
	struct waiter w;
	__u64 end;
	int fd = paused_fd(_metadata, 1, 0);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, catch_signal(SIGUSR2, SA_RESTART));
	ASSERT_EQ(0, waiter_start(&w, fd, 1, soon(), 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	ASSERT_EQ(0, pthread_kill(w.th, SIGUSR2));
	end = now_ns() + NS_PER_SEC;
	while (!signal_hits() && now_ns() < end)
		sleep_ms(1);
	ASSERT_EQ(1, signal_hits());
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(1ULL, s.interrupted);
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 1, 0));
	ASSERT_EQ(0, waiter_join(&w, 2000));
	EXPECT_EQ(0, w.ret);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(1ULL, s.interrupted);
	EXPECT_EQ(s.requests, s.immediate + s.waited + s.timeouts +
		  s.interrupted + s.rejected);
	close(fd);
}

/* ---- reconfiguration with waiters ---- */

TEST(reconfig_wakes_waiter)
{
	struct waiter w;
	__u64 t0;
	int fd = paused_fd(_metadata, 1, 0);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, waiter_start(&w, fd, 1, soon(), 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	t0 = now_ns();
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 1, 0));
	ASSERT_EQ(0, waiter_join(&w, 2000));
	EXPECT_EQ(0, w.ret);
	/* The first token at 1000/s: 1 ms after the change, not 1 s. */
	EXPECT_GT(t0 + LATE_NS, w.t_end);
	EXPECT_LE(t0 + NS_PER_MS, w.t_end);
	close(fd);
}

TEST(reconfig_keeps_waiter_queued)
{
	struct waiter w;
	int fd = paused_fd(_metadata, 1, 0);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, waiter_start(&w, fd, 3, soon(), 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	/* Still paused, deeper bucket: the waiter stays queued. */
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 5, 0));
	sleep_ms(100);
	EXPECT_EQ(0, __atomic_load_n(&w.done, __ATOMIC_SEQ_CST));
	EXPECT_EQ(1ULL, ks_nwaiters(fd));
	EXPECT_EQ(0ULL, ks_avail(fd));
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 5, 0));
	ASSERT_EQ(0, waiter_join(&w, 2000));
	EXPECT_EQ(0, w.ret);
	close(fd);
}

TEST(unlimited_releases_waiters)
{
	struct waiter w[2];
	__u64 t0;
	int fd = paused_fd(_metadata, 1, 0);
	int i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, waiter_start(&w[0], fd, 1, soon(), 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	ASSERT_EQ(0, waiter_start(&w[1], fd, 1000, soon(), 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 2, 2000));
	t0 = now_ns();
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 1, RL_CONFIG_UNLIMITED));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, waiter_join(&w[i], 2000));
		EXPECT_EQ(0, w[i].ret);
		EXPECT_GT(t0 + LATE_NS, w[i].t_end);
	}
	EXPECT_EQ(0ULL, ks_nwaiters(fd));
	close(fd);
}

/* ---- order and wake-ups ---- */

#define NQ 4

TEST(fifo_order)
{
	struct waiter w[NQ];
	int order[NQ], len = 0;
	int fd = paused_fd(_metadata, 1, 0);
	int i;

	ASSERT_LE(0, fd);
	for (i = 0; i < NQ; i++) {
		ASSERT_EQ(0, waiter_start_ordered(&w[i], fd, 1, soon(), 0,
						  order, &len, i));
		ASSERT_EQ(0, ks_wait_waiters(fd, i + 1, 2000));
	}
	/* One token per 200 ms: grants far apart, in queue order. */
	ASSERT_EQ(0, ks_set(fd, 5, NS_PER_SEC, 1, 0));
	for (i = 0; i < NQ; i++) {
		ASSERT_EQ(0, waiter_join(&w[i], 2500));
		EXPECT_EQ(0, w[i].ret);
	}
	ASSERT_EQ(NQ, len);
	for (i = 0; i < NQ; i++)
		EXPECT_EQ(i, order[i]);
	for (i = 1; i < NQ; i++)
		EXPECT_LT(w[i - 1].t_end, w[i].t_end);
	close(fd);
}

TEST(small_request_not_stuck_behind_large)
{
	struct waiter big, small;
	int fd = paused_fd(_metadata, 2, 0);

	ASSERT_LE(0, fd);
	/* 7 tokens at burst 2: served in chunks, yielding between them. */
	ASSERT_EQ(0, waiter_start(&big, fd, 7, soon(), 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	ASSERT_EQ(0, waiter_start(&small, fd, 1, soon(), 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 2, 2000));
	/* 20/s: the big one needs 350 ms, the small one gets in earlier. */
	ASSERT_EQ(0, ks_set(fd, 20, NS_PER_SEC, 2, 0));
	ASSERT_EQ(0, waiter_join(&small, 2500));
	ASSERT_EQ(0, waiter_join(&big, 2500));
	EXPECT_EQ(0, small.ret);
	EXPECT_EQ(0, big.ret);
	EXPECT_LT(small.t_end, big.t_end);
	close(fd);
}

#define NHERD 5

TEST(no_thundering_herd)
{
	struct waiter w[NHERD];
	int fd = paused_fd(_metadata, 1, 0);
	int i;

	ASSERT_LE(0, fd);
	for (i = 0; i < NHERD; i++) {
		ASSERT_EQ(0, waiter_start(&w[i], fd, 1, soon(), 0));
		ASSERT_EQ(0, ks_wait_waiters(fd, i + 1, 2000));
	}
	/* One token per 50 ms: each grant must wake one thread only. */
	ASSERT_EQ(0, ks_set(fd, 20, NS_PER_SEC, 1, 0));
	for (i = 0; i < NHERD; i++) {
		ASSERT_EQ(0, waiter_join(&w[i], 2500));
		EXPECT_EQ(0, w[i].ret);
		EXPECT_LE(0, w[i].nvcsw);
		EXPECT_GE(2, w[i].nvcsw);
		if (w[i].nvcsw > 2)
			TH_LOG("waiter %d: %ld voluntary switches", i,
			       w[i].nvcsw);
	}
	close(fd);
}

/* ---- a waiter that dies ---- */

TEST(killed_waiter_leaves_no_trace)
{
	struct rl_acquire a;
	struct rl_stats s;
	int status;
	pid_t pid;
	int fd = paused_fd(_metadata, 2, 1);

	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		ks_acq(fd, 2, now_ns() + 5 * NS_PER_SEC, 0, &a);
		_exit(0);
	}
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(0, ks_wait_waiters(fd, 0, 1000));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(1ULL, s.available);
	EXPECT_EQ(1ULL, s.granted);
	/* Still a working limiter. */
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 2, 0));
	EXPECT_EQ(0, ks_acq(fd, 2, soon(), 0, &a));
	close(fd);
}

TEST(killed_waiter_over_burst_returns_tokens)
{
	struct rl_acquire a;
	int status;
	pid_t pid;
	int fd = paused_fd(_metadata, 3, 3);

	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		ks_acq(fd, 10, now_ns() + 5 * NS_PER_SEC, 0, &a);
		_exit(0);
	}
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 2000));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 0, 1000));
	EXPECT_EQ(3ULL, ks_avail(fd));
	close(fd);
}

/* ---- stress: the token bucket bound on real time ---- */

/*
 * 4 threads acquire as fast as they can from a limiter of 2000/s for 1 s
 * and until they got HAMMER_MIN tokens (a tenth of the rate: the limiter
 * is not grossly slower than its rate), which on a slow guest takes
 * longer, up to HAMMER_DEADLINE_NS.
 */
#define NHAMMER		4
#define HAMMER_RATE	2000ULL
#define HAMMER_BURST	20ULL
#define HAMMER_MIN	(HAMMER_RATE / 10)
#define HAMMER_DEADLINE_NS	(20 * NS_PER_SEC)

struct hammer {
	int fd;
	__u64 *stop;
	__u64 ok;
	__u64 fail;
	__u64 last;	/* time after the last grant */
	int bad_errno;
};

static void *hammer_fn(void *arg)
{
	struct hammer *h = arg;
	struct rl_acquire a;
	__u64 stop;

	for (;;) {
		stop = __atomic_load_n(h->stop, __ATOMIC_SEQ_CST);
		if (now_ns() >= stop)
			break;
		if (ks_acq(h->fd, 1, stop + 500 * NS_PER_MS, 0, &a) == 0) {
			__atomic_add_fetch(&h->ok, 1, __ATOMIC_SEQ_CST);
			h->last = now_ns();
		} else {
			h->fail++;
			if (errno != ETIMEDOUT)
				h->bad_errno = errno;
		}
	}
	return NULL;
}

TEST(hammer_upper_bound)
{
	pthread_t th[NHAMMER];
	struct hammer h[NHAMMER];
	struct rl_stats s;
	__u64 t0, now, stop, last = 0, ok = 0, fail = 0;
	double bound;
	int fd = ks_open();
	int i;

	ASSERT_LE(0, fd);
	t0 = now_ns();
	stop = t0 + HAMMER_DEADLINE_NS;
	ASSERT_EQ(0, ks_set(fd, HAMMER_RATE, NS_PER_SEC, HAMMER_BURST, 0));
	for (i = 0; i < NHAMMER; i++) {
		memset(&h[i], 0, sizeof(h[i]));
		h[i].fd = fd;
		h[i].stop = &stop;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, hammer_fn, &h[i]));
	}
	while ((now = now_ns()) < stop) {
		for (ok = 0, i = 0; i < NHAMMER; i++)
			ok += __atomic_load_n(&h[i].ok, __ATOMIC_SEQ_CST);
		if (now >= t0 + NS_PER_SEC && ok >= HAMMER_MIN) {
			__atomic_store_n(&stop, now, __ATOMIC_SEQ_CST);
			break;
		}
		sleep_ms(5);
	}
	for (ok = 0, i = 0; i < NHAMMER; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
		EXPECT_EQ(0, h[i].bad_errno);
		ok += h[i].ok;
		fail += h[i].fail;
		if (h[i].last > last)
			last = h[i].last;
	}
	/* Tokens granted by time T <= burst + rate * (T - creation). */
	bound = HAMMER_BURST + HAMMER_RATE * (double)(last - t0) / NS_PER_SEC;
	TH_LOG("granted %llu in %.3f s, bound %.1f, failed %llu",
	       (unsigned long long)ok, (double)(last - t0) / NS_PER_SEC,
	       bound, (unsigned long long)fail);
	EXPECT_GE((__u64)bound + 1, ok);
	/* And the limiter is not grossly slower than its rate. */
	EXPECT_LE(HAMMER_MIN, ok);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(ok, s.granted);
	EXPECT_EQ(ok + fail, s.requests);
	EXPECT_EQ(fail, s.timeouts);
	EXPECT_EQ(0ULL, s.waiters);
	close(fd);
}

/*
 * Everything at once for a second: acquires of random sizes with short
 * deadlines, signals, and reconfiguration. Afterwards the limiter must be
 * consistent; the rig checks the kernel log for warnings.
 */
#define NSTRESS 4

struct stresser {
	int fd;
	__u64 stop;
	unsigned int seed;
	__u64 ok;
	int bad_errno;
};

static void *stress_fn(void *arg)
{
	struct stresser *st = arg;
	struct rl_acquire a;
	__u64 count, dl;
	__u32 flags;

	while (now_ns() < st->stop) {
		count = 1 + rand_r(&st->seed) % 12;
		dl = now_ns() + (rand_r(&st->seed) % 30) * NS_PER_MS;
		flags = rand_r(&st->seed) % 4 == 0 ? RL_ACQUIRE_PREDICT : 0;
		if (ks_acq(st->fd, count, dl, flags, &a) == 0)
			st->ok++;
		else if (errno != ETIMEDOUT && errno != EINTR)
			st->bad_errno = errno;
	}
	return NULL;
}

TEST(stress_mixed)
{
	struct stresser st[NSTRESS];
	pthread_t th[NSTRESS];
	struct rl_stats s;
	unsigned int seed = 1;
	__u64 stop;
	int fd = ks_open();
	int i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, catch_signal(SIGUSR1, 0));
	ASSERT_EQ(0, ks_set(fd, 500, NS_PER_SEC, 8, 0));
	stop = now_ns() + NS_PER_SEC;
	for (i = 0; i < NSTRESS; i++) {
		memset(&st[i], 0, sizeof(st[i]));
		st[i].fd = fd;
		st[i].stop = stop;
		st[i].seed = i + 1;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, stress_fn, &st[i]));
	}
	while (now_ns() < stop) {
		__u64 burst = 1 + rand_r(&seed) % 10;
		__u64 rate = rand_r(&seed) % 3 ? 100 + rand_r(&seed) % 2000 : 0;
		__u32 flags = rand_r(&seed) % 10 ? 0 : RL_CONFIG_UNLIMITED;

		EXPECT_EQ(0, ks_set(fd, rate, NS_PER_SEC, burst, flags));
		pthread_kill(th[rand_r(&seed) % NSTRESS], SIGUSR1);
		sleep_ms(1 + rand_r(&seed) % 10);
	}
	for (i = 0; i < NSTRESS; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
		EXPECT_EQ(0, st[i].bad_errno);
	}
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 8, 0));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(0ULL, s.waiters);
	EXPECT_GE(8ULL, s.available);
	EXPECT_EQ(s.requests, s.immediate + s.waited + s.timeouts +
		  s.interrupted + s.rejected);
	TH_LOG("requests %llu granted %llu timeouts %llu interrupted %llu",
	       (unsigned long long)s.requests, (unsigned long long)s.granted,
	       (unsigned long long)s.timeouts,
	       (unsigned long long)s.interrupted);
	/* Still serves. */
	EXPECT_EQ(0, ks_acq(fd, 8, soon(), 0, &(struct rl_acquire){ 0 }));
	close(fd);
}

TEST_HARNESS_MAIN
