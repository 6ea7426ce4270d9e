// SPDX-License-Identifier: GPL-2.0-only
/*
 * async.c - section async: one thread keeping 1,000 acquires outstanding
 * through io_uring (rl_acquire_async()) against 1,000 threads blocked in
 * RL_IOC_ACQUIRE, on one limiter: tokens/s, and the guest's CPU time per
 * token (busy time from /proc/stat: the dispatches run in the timer's
 * interrupt, whichever task it lands on).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <liburing.h>
#include <math.h>

#include "bench.h"

#define ASYNC_N		1000
#define ASYNC_STACK	(64 * 1024)

struct async_res {
	double tput;		/* tokens per second */
	double cpu_us;		/* guest busy us per token */
	double self_us;		/* this process's CPU us per token */
};

/*
 * The ends of a measurement: time and tokens together, then the CPU times,
 * read so that neither end's reading (cpu_ns() walks /proc) is inside it.
 */
struct async_clock {
	uint64_t t, tokens, busy, self;
};

static void async_start(struct async_clock *c,
			const atomic_uint_fast64_t *tokens)
{
	c->self = cpu_ns();
	c->busy = sys_busy_ns();
	c->t = rl_now_ns();
	c->tokens = atomic_load(tokens);
}

static void async_stop(struct async_clock *c,
		       const atomic_uint_fast64_t *tokens)
{
	c->t = rl_now_ns();
	c->tokens = atomic_load(tokens);
	c->busy = sys_busy_ns();
	c->self = cpu_ns();
}

static void async_result(const struct async_clock *a,
			 const struct async_clock *b, struct async_res *r)
{
	uint64_t tokens = b->tokens - a->tokens;
	double n = tokens ? (double)tokens : 1;

	r->tput = (double)tokens * NSEC_PER_SEC / (double)(b->t - a->t);
	r->cpu_us = (double)(b->busy - a->busy) / 1e3 / n;
	r->self_us = (double)(b->self - a->self) / 1e3 / n;
}

/* Reap what completed; resubmit each request. Returns the grants. */
static uint64_t async_reap(struct io_uring *ring, int fd,
			   struct rl_acquire *req, bool again)
{
	struct io_uring_cqe *cqe;
	uint64_t got = 0, i;
	unsigned int head, n = 0;
	int ret;

	io_uring_for_each_cqe(ring, head, cqe) {
		n++;
		i = io_uring_cqe_get_data64(cqe);
		ret = rl_async_result(cqe);
		if (ret && ret != -ECANCELED)
			die("async acquire", ret);
		got += !ret;
		if (again && rl_acquire_async(ring, fd, &req[i], i))
			die("rl_acquire_async", EBUSY);
	}
	io_uring_cq_advance(ring, n);
	return got;
}

static void async_req(struct rl_acquire *a)
{
	memset(a, 0, sizeof(*a));
	a->count = 1;
	a->deadline_ns = RL_DEADLINE_NONE;
}

/* One thread, ASYNC_N acquires outstanding, for @dur ns at @rate. */
static void async_ring(uint64_t rate, uint64_t dur, struct async_res *r)
{
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE,
				     .cq_entries = 2 * ASYNC_N };
	struct rl_acquire *req = xcalloc(ASYNC_N, sizeof(*req));
	atomic_uint_fast64_t got = 0;
	struct async_clock c0, c1;
	struct io_uring ring;
	uint64_t i, t0;
	int fd, ret;

	fd = open_private(rate, 0, 0);
	drain(fd);
	ret = io_uring_queue_init_params(ASYNC_N, &ring, &p);
	if (ret)
		die("io_uring_queue_init", ret);
	for (i = 0; i < ASYNC_N; i++) {
		async_req(&req[i]);
		if (rl_acquire_async(&ring, fd, &req[i], i))
			die("rl_acquire_async", EBUSY);
	}
	/* Measured after half a second, as the threads are. */
	t0 = rl_now_ns();
	c0.t = 0;
	do {
		ret = io_uring_submit_and_wait(&ring, 1);
		if (ret < 0 && ret != -EINTR)
			die("io_uring_submit_and_wait", -ret);
		got += async_reap(&ring, fd, req, true);
		if (!c0.t && rl_now_ns() - t0 >= NSEC_PER_SEC / 2)
			async_start(&c0, &got);
	} while (!c0.t || rl_now_ns() - c0.t < dur);
	async_stop(&c1, &got);
	async_result(&c0, &c1, r);
	/* Closing the ring cancels the rest; the limiter sees it. */
	io_uring_queue_exit(&ring);
	rl_close(fd);
	free(req);
}

struct async_thr {
	int fd;
	atomic_int *stop;
	atomic_uint_fast64_t *got;
};

static void *async_thread(void *arg)
{
	const struct async_thr *a = arg;
	struct rl_acquire req;
	int ret;

	while (!atomic_load(a->stop)) {
		async_req(&req);
		req.deadline_ns = rl_now_ns() + 200 * NSEC_PER_MSEC;
		ret = rl_acquire_ex(a->fd, &req);
		if (!ret)
			atomic_fetch_add(a->got, 1);
		else if (ret != -ETIMEDOUT)
			die("acquire", ret);
	}
	return NULL;
}

/* ASYNC_N threads blocked in acquires, for @dur ns at @rate. */
static void async_threads(uint64_t rate, uint64_t dur, struct async_res *r)
{
	pthread_t *th = xcalloc(ASYNC_N, sizeof(*th));
	atomic_uint_fast64_t got = 0;
	struct async_clock c0, c1;
	atomic_int stop = 0;
	struct async_thr a;
	pthread_attr_t attr;
	int i, ret;

	a.fd = open_private(rate, 0, 0);
	a.stop = &stop;
	a.got = &got;
	drain(a.fd);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, ASYNC_STACK);
	for (i = 0; i < ASYNC_N; i++) {
		ret = pthread_create(&th[i], &attr, async_thread, &a);
		if (ret)
			die("pthread_create", ret);
	}
	/* Once they are all queued, or the tokens of one second went. */
	sleep_ns(NSEC_PER_SEC / 2);
	async_start(&c0, &got);
	sleep_ns(dur);
	async_stop(&c1, &got);
	async_result(&c0, &c1, r);
	atomic_store(&stop, 1);
	for (i = 0; i < ASYNC_N; i++)
		pthread_join(th[i], NULL);
	pthread_attr_destroy(&attr);
	rl_close(a.fd);
	free(th);
}

static void async_rows(const char *rs, const struct async_res *ar,
		       const struct async_res *tr, bool goal)
{
	char name[96];

	snprintf(name, sizeof(name), "%s: tokens/s, 1 thread + 1000 async", rs);
	row("async", name, ar->tput, "/s", "1000 blocked threads", tr->tput,
	    goal ? ">= 0.95x" : NULL,
	    goal ? at_least(ar->tput / tr->tput, 0.95) : V_INFO);
	snprintf(name, sizeof(name), "%s: guest CPU per token", rs);
	row("async", name, ar->cpu_us, "us", "1000 blocked threads",
	    tr->cpu_us, goal ? "<= 1x" : NULL,
	    goal ? at_most(ar->cpu_us / tr->cpu_us, 1) : V_INFO);
	snprintf(name, sizeof(name), "%s: process CPU per token", rs);
	row("async", name, ar->self_us, "us", "1000 blocked threads",
	    tr->self_us, NULL, V_INFO);
}

void bench_async(void)
{
	static const uint64_t rates[] = { 10000, HUGE_RATE };
	struct async_res ar, tr;
	uint64_t dur = scaled(3.0 * NSEC_PER_SEC, NSEC_PER_SEC / 2);
	char rs[32];
	unsigned int i;
	int fd = rl_open(0);

	if (fd < 0)
		die("rl_open", fd);
	if (rl_async_supported(fd) != 1) {
		row("async", "acquires through io_uring", NAN, "", NULL, 0,
		    "RL_FEATURE_URING_CMD", V_SKIP);
		note("async", "skipped: %s",
		     "this kernel's io_uring cannot cancel a command of a file (before 6.8)");
		rl_close(fd);
		return;
	}
	rl_close(fd);
	for (i = 0; i < ARRAY_SIZE(rates); i++) {
		async_ring(rates[i], dur, &ar);
		async_threads(rates[i], dur, &tr);
		if (rates[i] == HUGE_RATE)
			snprintf(rs, sizeof(rs), "unpaced (1e9/s)");
		else
			snprintf(rs, sizeof(rs), "%" PRIu64 "/s", rates[i]);
		async_rows(rs, &ar, &tr, rates[i] != HUGE_RATE);
	}
}
