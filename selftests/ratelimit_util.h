/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers shared by the /dev/ratelimit selftests: raw ioctls, a clock,
 * and threads that sit in RL_IOC_ACQUIRE. Include after "kselftest_harness.h"
 * with _GNU_SOURCE defined.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RL_SELFTEST_UTIL_H
#define RL_SELFTEST_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>

#include <linux/ratelimit_dev.h>

#define RL_DEV		"/dev/ratelimit"
#define NS_PER_MS	1000000ULL
#define NS_PER_SEC	1000000000ULL
#define POISON_BYTE	0xa5
#define POISON64	0xa5a5a5a5a5a5a5a5ULL

/* Expect a syscall to fail with @err; evaluates @expr once. */
#define EXPECT_ERRNO(err, expr) do {		\
	int __ret = (expr);			\
	int __err = errno;			\
	EXPECT_EQ(-1, __ret);			\
	EXPECT_EQ(err, __err);			\
} while (0)

static inline __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

static inline void sleep_ms(unsigned int ms)
{
	struct timespec ts = {
		.tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * 1000000L,
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static inline int rl_open(void)
{
	return open(RL_DEV, O_RDWR | O_CLOEXEC);
}

static inline int rl_set(int fd, __u64 rate, __u64 period_ns, __u64 burst,
			 __u32 flags)
{
	struct rl_config c;

	memset(&c, 0, sizeof(c));
	c.rate = rate;
	c.period_ns = period_ns;
	c.burst = burst;
	c.flags = flags;
	return ioctl(fd, RL_IOC_SET_CONFIG, &c);
}

/* GET_CONFIG into a poisoned struct. */
static inline int rl_get(int fd, struct rl_config *c)
{
	memset(c, POISON_BYTE, sizeof(*c));
	return ioctl(fd, RL_IOC_GET_CONFIG, c);
}

/* GET_STATS with valid inputs and poisoned outputs. */
static inline int rl_stats(int fd, struct rl_stats *s)
{
	memset(s, POISON_BYTE, sizeof(*s));
	s->flags = 0;
	s->reserved0 = 0;
	return ioctl(fd, RL_IOC_GET_STATS, s);
}

/* ACQUIRE with the output fields poisoned. */
static inline int rl_acq(int fd, __u64 count, __u64 deadline, __u32 flags,
			 struct rl_acquire *a)
{
	memset(a, 0, sizeof(*a));
	a->count = count;
	a->deadline_ns = deadline;
	a->flags = flags;
	a->wait_ns = POISON64;
	a->ready_ns = POISON64;
	return ioctl(fd, RL_IOC_ACQUIRE, a);
}

/* Tokens in the bucket now, or POISON64 on error. */
static inline __u64 rl_avail(int fd)
{
	struct rl_stats s;

	return rl_stats(fd, &s) ? POISON64 : s.available;
}

static inline __u64 rl_nwaiters(int fd)
{
	struct rl_stats s;

	return rl_stats(fd, &s) ? POISON64 : s.waiters;
}

/* Wait until stats.waiters == @n; 0 on success, -1 after @timeout_ms. */
static inline int rl_wait_waiters(int fd, __u64 n, unsigned int timeout_ms)
{
	__u64 end = now_ns() + timeout_ms * NS_PER_MS;

	do {
		if (rl_nwaiters(fd) == n)
			return 0;
		sleep_ms(1);
	} while (now_ns() < end);
	return -1;
}

static inline long thread_nvcsw(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	return ru.ru_nvcsw;
}

/*
 * A thread doing one RL_IOC_ACQUIRE. The caller fills fd, count, deadline
 * and flags; the thread records the result, the times around the call and
 * its voluntary context switches during it.
 */
struct waiter {
	int fd;
	__u64 count;
	__u64 deadline;
	__u32 flags;
	int ret;
	int err;
	struct rl_acquire a;
	__u64 t_start;
	__u64 t_end;
	long nvcsw;
	int *order;		/* optional: append id here on return */
	int *order_len;
	int id;
	int done;
	pthread_t th;
};

static inline void *waiter_fn(void *arg)
{
	struct waiter *w = arg;
	long cs;

	cs = thread_nvcsw();
	w->t_start = now_ns();
	w->ret = rl_acq(w->fd, w->count, w->deadline, w->flags, &w->a);
	w->err = errno;
	w->t_end = now_ns();
	w->nvcsw = thread_nvcsw() - cs;
	if (w->order)
		w->order[__atomic_fetch_add(w->order_len, 1, __ATOMIC_SEQ_CST)] =
			w->id;
	__atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/*
 * Start a waiter; @order, if not NULL, gets its @id appended when the
 * acquire returns (at index (*@order_len)++).
 */
static inline int waiter_start_ordered(struct waiter *w, int fd, __u64 count,
				       __u64 deadline, __u32 flags,
				       int *order, int *order_len, int id)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->count = count;
	w->deadline = deadline;
	w->flags = flags;
	w->ret = -2;
	w->order = order;
	w->order_len = order_len;
	w->id = id;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return pthread_create(&w->th, NULL, waiter_fn, w);
}

static inline int waiter_start(struct waiter *w, int fd, __u64 count,
			       __u64 deadline, __u32 flags)
{
	return waiter_start_ordered(w, fd, count, deadline, flags,
				    NULL, NULL, 0);
}

/* Join within @timeout_ms: 0 on success, else the thread is left running. */
static inline int waiter_join(struct waiter *w, unsigned int timeout_ms)
{
	struct timespec ts;
	__u64 t;

	clock_gettime(CLOCK_REALTIME, &ts);
	t = (__u64)ts.tv_sec * NS_PER_SEC + ts.tv_nsec +
	    timeout_ms * NS_PER_MS;
	ts.tv_sec = t / NS_PER_SEC;
	ts.tv_nsec = t % NS_PER_SEC;
	return pthread_timedjoin_np(w->th, NULL, &ts);
}

static int sig_hits;

static inline void on_signal(int sig)
{
	(void)sig;
	__atomic_fetch_add(&sig_hits, 1, __ATOMIC_SEQ_CST);
}

static inline int signal_hits(void)
{
	return __atomic_load_n(&sig_hits, __ATOMIC_SEQ_CST);
}

/* Install on_signal() for @sig with @flags (0 or SA_RESTART). */
static inline int catch_signal(int sig, int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	__atomic_store_n(&sig_hits, 0, __ATOMIC_SEQ_CST);
	return sigaction(sig, &sa, NULL);
}

#endif /* RL_SELFTEST_UTIL_H */
