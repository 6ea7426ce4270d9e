// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of /dev/ratelimit: acquires through io_uring (RL_URING_ACQUIRE,
 * through the library's rl_acquire_async()). Immediate results, order of
 * service among blocking waiters, deadlines, cancellation (RL_URING_CANCEL,
 * IORING_OP_ASYNC_CANCEL, closing the ring, the exit of the task) in the
 * middle of a request above the burst, and 10,000 requests outstanding
 * from one thread; and the acquires of a key of a keyed limiter
 * (RL_URING_ACQUIRE_KEY, rl_acquire_key_async()).
 *
 * On a kernel without RL_FEATURE_URING_CMD (before 6.8: io_uring there
 * cannot cancel a command of a file) the commands must fail with
 * -EOPNOTSUPP, and the other tests are skipped.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"
#include "libratelimit.h"

/* Deadline of calls that should end well before. */
#define SAFETY_NS	(3000 * NS_PER_MS)
/* How long a completion may take to come under TCG. */
#define WAIT_MS		3000
#define NO_REASON	"RL_FEATURE_URING_CMD not reported: io_uring cannot cancel a command of a file on this kernel (before 6.8)"
#define MANY		10000

static __u64 soon(void)
{
	return now_ns() + SAFETY_NS;
}

/* Queue and submit one acquire; 0 or -errno. */
static int submit(struct io_uring *ring, int fd, struct rl_acquire *a,
		  __u64 data)
{
	int ret = rl_acquire_async(ring, fd, a, data);

	if (ret)
		return ret;
	ret = io_uring_submit(ring);
	return ret == 1 ? 0 : ret < 0 ? ret : -EIO;
}

/* Queue and submit a cancellation of @target; 0 or -errno. */
static int submit_cancel(struct io_uring *ring, int fd, __u64 target,
			 __u64 data)
{
	int ret = rl_cancel_async(ring, fd, target, data);

	if (ret)
		return ret;
	ret = io_uring_submit(ring);
	return ret == 1 ? 0 : ret < 0 ? ret : -EIO;
}

/* The next completion within @ms: its user_data and result; -ETIME. */
static int reap(struct io_uring *ring, unsigned int ms, __u64 *data, int *res)
{
	struct __kernel_timespec ts = {
		.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000LL,
	};
	struct io_uring_cqe *cqe;
	int ret;

	ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	if (ret)
		return ret;
	*data = io_uring_cqe_get_data64(cqe);
	*res = rl_async_result(cqe);
	io_uring_cqe_seen(ring, cqe);
	return 0;
}

/*
 * Reap completions until those of user_data @d1 and @d2 came; their
 * results in @r1 and @r2. 0, or -ETIME.
 */
static int reap_pair(struct io_uring *ring, __u64 d1, int *r1, __u64 d2,
		     int *r2)
{
	int seen = 0, res;
	__u64 data;

	while (seen != 3) {
		if (reap(ring, WAIT_MS, &data, &res))
			return -ETIME;
		if (data == d1) {
			*r1 = res;
			seen |= 1;
		} else if (data == d2) {
			*r2 = res;
			seen |= 2;
		}
	}
	return 0;
}

/* Wait until the limiter has no waiter and no permit held. */
static int settled(int fd, struct rl_stats *s)
{
	__u64 end = now_ns() + WAIT_MS * NS_PER_MS;

	do {
		if (ks_stats(fd, s))
			return -1;
		if (!s->waiters && !s->held)
			return 0;
		sleep_ms(2);
	} while (now_ns() < end);
	return -1;
}

FIXTURE(uring) {
	struct io_uring ring;
	int fd;
	int supported;
};

FIXTURE_SETUP(uring)
{
	self->fd = ks_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, io_uring_queue_init(64, &self->ring, 0));
	/*
	 * A SKIP() here does not stop the test on 6.1's harness: every
	 * test says it again.
	 */
	self->supported = rl_async_supported(self->fd) == 1;
	if (!self->supported)
		SKIP(return, NO_REASON);
}

FIXTURE_TEARDOWN(uring)
{
	io_uring_queue_exit(&self->ring);
	close(self->fd);
}

/* The feature bit tells the truth either way. */
TEST(feature_matches_behaviour)
{
	char line[256], padded[260];
	struct rl_features f;
	struct io_uring ring;
	struct rl_acquire a;
	int fd = ks_open(), res;
	__u64 data;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 1000, NS_PER_SEC, 10, 0));
	ASSERT_EQ(0, rl_get_features(fd, &f));
	EXPECT_EQ(0, f.flags & ~(__u32)(RL_FEATURE_URING_CMD | RL_FEATURE_QUEUED |
					 RL_FEATURE_FAST | RL_FEATURE_KEYED |
					 RL_FEATURE_IPC_NS));
	ASSERT_EQ(0, io_uring_queue_init(8, &ring, 0));
	ks_acq_req(&a, 1, soon(), 0);
	ASSERT_EQ(0, submit(&ring, fd, &a, 7));
	ASSERT_EQ(0, reap(&ring, WAIT_MS, &data, &res));
	EXPECT_EQ(7, data);
	ASSERT_EQ(0, file_read("/sys/kernel/ratelimit/features", line,
			       sizeof(line)));
	snprintf(padded, sizeof(padded), " %s ", line);
	if (f.flags & RL_FEATURE_URING_CMD) {
		EXPECT_EQ(0, res);
		EXPECT_EQ(1, rl_async_supported(fd));
		EXPECT_NE(NULL, strstr(padded, " io_uring "));
	} else {
		EXPECT_EQ(-EOPNOTSUPP, res);
		EXPECT_EQ(0, rl_async_supported(fd));
		EXPECT_EQ(NULL, strstr(padded, " io_uring "));
	}
	io_uring_queue_exit(&ring);
	close(fd);
}

TEST_F(uring, immediate_results)
{
	struct rl_acquire a;
	struct rl_stats s;
	__u64 data;
	int fd, res;

	if (!self->supported)
		SKIP(return, NO_REASON);
	fd = ks_drained(_metadata, 10, NS_PER_SEC, 2, 0, 2);
	ASSERT_LE(0, fd);
	ks_acq_req(&a, 2, soon(), 0);
	ASSERT_EQ(0, submit(&self->ring, fd, &a, 1));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &res));
	EXPECT_EQ(0, res);
	EXPECT_EQ(0, a.wait_ns);
	/* Nonblocking, as RL_IOC_ACQUIRE: -EAGAIN with the predicted time. */
	ks_acq_req(&a, 1, soon(), RL_ACQUIRE_NONBLOCK);
	ASSERT_EQ(0, submit(&self->ring, fd, &a, 2));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &res));
	EXPECT_EQ(-EAGAIN, res);
	EXPECT_LT(now_ns(), a.ready_ns + 1);
	/* Bad requests fail as the ioctl's do. */
	ks_acq_req(&a, 0, soon(), 0);
	ASSERT_EQ(0, submit(&self->ring, fd, &a, 3));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &res));
	EXPECT_EQ(-EINVAL, res);
	ASSERT_EQ(0, submit(&self->ring, fd, (struct rl_acquire *)8, 4));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &res));
	EXPECT_EQ(-EFAULT, res);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(2, s.granted);
	EXPECT_EQ(1, s.rejected);
	close(fd);
}

/* Issued from io-wq (IOSQE_ASYNC): at once, and after a wait. */
TEST_F(uring, io_wq_issue)
{
	struct io_uring_sqe *sqe;
	struct rl_acquire a[2];
	__u64 data;
	int fd, i, res;

	if (!self->supported)
		SKIP(return, NO_REASON);
	/* One token left; the next one 100 ms later. */
	fd = ks_drained(_metadata, 10, NS_PER_SEC, 1, 0, 1);
	ASSERT_LE(0, fd);
	for (i = 0; i < 2; i++) {
		ks_acq_req(&a[i], 1, soon(), 0);
		sqe = io_uring_get_sqe(&self->ring);
		ASSERT_NE(NULL, sqe);
		rl_prep_acquire_async(sqe, fd, &a[i]);
		io_uring_sqe_set_data64(sqe, i);
		sqe->flags |= IOSQE_ASYNC;
		ASSERT_EQ(1, io_uring_submit(&self->ring));
		ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &res));
		EXPECT_EQ(i, data);
		EXPECT_EQ(0, res);
	}
	EXPECT_EQ(0, a[0].wait_ns);
	EXPECT_LT(20 * NS_PER_MS, a[1].wait_ns);
	close(fd);
}

/* An async request takes its turn among sleeping ones, in arrival order. */
TEST_F(uring, order_among_blocking_waiters)
{
	int order[3], len = 0, fd, res;
	struct waiter wa, wc;
	struct rl_acquire a;
	__u64 data;

	if (!self->supported)
		SKIP(return, NO_REASON);
	/* One token every 500 ms, none left. */
	fd = ks_drained(_metadata, 2, NS_PER_SEC, 1, 0, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, waiter_start_ordered(&wa, fd, 1, soon(), 0, order, &len, 1));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, WAIT_MS));
	ks_acq_req(&a, 1, soon(), 0);
	ASSERT_EQ(0, submit(&self->ring, fd, &a, 2));
	ASSERT_EQ(0, ks_wait_waiters(fd, 2, WAIT_MS));
	ASSERT_EQ(0, waiter_start_ordered(&wc, fd, 1, soon(), 0, order, &len, 3));
	ASSERT_EQ(0, ks_wait_waiters(fd, 3, WAIT_MS));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &res));
	EXPECT_EQ(0, res);
	order[__atomic_fetch_add(&len, 1, __ATOMIC_SEQ_CST)] = 2;
	EXPECT_LT(100 * NS_PER_MS, a.wait_ns);
	ASSERT_EQ(0, waiter_join(&wa, WAIT_MS));
	ASSERT_EQ(0, waiter_join(&wc, WAIT_MS));
	ASSERT_EQ(3, len);
	EXPECT_EQ(1, order[0]);
	EXPECT_EQ(2, order[1]);
	EXPECT_EQ(3, order[2]);
	close(fd);
}

TEST_F(uring, deadline)
{
	struct rl_acquire a;
	struct rl_stats s;
	__u64 data, t0;
	int fd, res;

	if (!self->supported)
		SKIP(return, NO_REASON);
	fd = ks_drained(_metadata, 0, NS_PER_SEC, 1, 0, 0);
	ASSERT_LE(0, fd);
	t0 = now_ns();
	ks_acq_req(&a, 1, t0 + 200 * NS_PER_MS, 0);
	ASSERT_EQ(0, submit(&self->ring, fd, &a, 1));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &res));
	EXPECT_EQ(-ETIMEDOUT, res);
	EXPECT_LE(t0 + 200 * NS_PER_MS, now_ns());
	/* Paused: it could never be granted. */
	EXPECT_EQ(RL_DEADLINE_NONE, a.ready_ns);
	ASSERT_EQ(0, settled(fd, &s));
	EXPECT_EQ(1, s.timeouts);
	/* The token drained. */
	EXPECT_EQ(1, s.granted);
	close(fd);
}

/*
 * A request of 25 with a burst of 10, 20 tokens/s and a concurrency limit,
 * cancelled after two chunks: its 25 permits and 20 tokens come back (the
 * bucket then holds its burst, which it could not have for another 400 ms
 * otherwise).
 */
static void mid_chunk_start(struct __test_metadata *_metadata, int fd,
			    struct io_uring *ring, struct rl_acquire *a)
{
	struct rl_stats s;

	ks_acq_req(a, 25, soon() + 2 * SAFETY_NS, 0);
	ASSERT_EQ(0, submit(ring, fd, a, 42));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, WAIT_MS));
	/* Chunks at 500 and 1000 ms. */
	sleep_ms(1100);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(1, s.waiters);
	EXPECT_EQ(25, s.held);
	EXPECT_GT(10, s.available);
}

static void mid_chunk_check(struct __test_metadata *_metadata, int fd)
{
	struct rl_stats s;

	ASSERT_EQ(0, settled(fd, &s));
	EXPECT_EQ(0, s.held);
	EXPECT_EQ(10, s.available);
	/* The tokens drained, not the request's. */
	EXPECT_EQ(10, s.granted);
	EXPECT_EQ(1, s.interrupted);
}

TEST_F(uring, cancel_mid_chunk)
{
	int fd, res, cres;
	struct rl_acquire a;
	__u64 data;

	if (!self->supported)
		SKIP(return, NO_REASON);
	fd = ks_drained(_metadata, 20, NS_PER_SEC, 10, 100, 0);
	ASSERT_LE(0, fd);
	mid_chunk_start(_metadata, fd, &self->ring, &a);
	/* Another user_data: nothing to cancel. */
	ASSERT_EQ(0, submit_cancel(&self->ring, fd, 41, 1));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &res));
	EXPECT_EQ(1, data);
	EXPECT_EQ(-ENOENT, res);
	ASSERT_EQ(0, submit_cancel(&self->ring, fd, 42, 2));
	ASSERT_EQ(0, reap_pair(&self->ring, 2, &cres, 42, &res));
	EXPECT_EQ(1, cres);
	EXPECT_EQ(-ECANCELED, res);
	mid_chunk_check(_metadata, fd);
	close(fd);
}

/*
 * io_uring's IORING_OP_ASYNC_CANCEL does not reach commands of files:
 * the request must then be left intact (and RL_URING_CANCEL ends it);
 * should a kernel reach it, it must give everything back.
 */
TEST_F(uring, async_cancel_op)
{
	struct io_uring_sqe *sqe;
	struct rl_acquire a;
	int fd, res, cres;
	__u64 data;

	if (!self->supported)
		SKIP(return, NO_REASON);
	fd = ks_drained(_metadata, 20, NS_PER_SEC, 10, 100, 0);
	ASSERT_LE(0, fd);
	mid_chunk_start(_metadata, fd, &self->ring, &a);
	sqe = io_uring_get_sqe(&self->ring);
	ASSERT_NE(NULL, sqe);
	io_uring_prep_cancel64(sqe, 42, 0);
	io_uring_sqe_set_data64(sqe, 9);
	ASSERT_EQ(1, io_uring_submit(&self->ring));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &cres));
	if (cres == -ENOENT) {
		ASSERT_EQ(9, data);
		/* Left intact: still queued, holding its permits. */
		EXPECT_EQ(1, ks_nwaiters(fd));
		ASSERT_EQ(0, submit_cancel(&self->ring, fd, 42, 10));
		ASSERT_EQ(0, reap_pair(&self->ring, 10, &cres, 42, &res));
		EXPECT_EQ(1, cres);
	} else {
		res = data == 42 ? cres : 1;
		ASSERT_EQ(0, reap_pair(&self->ring, 9, &cres, 42, &res));
	}
	EXPECT_EQ(-ECANCELED, res);
	mid_chunk_check(_metadata, fd);
	close(fd);
}

/* Closing the ring cancels its queued requests. */
TEST_F(uring, ring_teardown)
{
	struct rl_acquire a;
	struct rl_stats s;
	int fd;

	if (!self->supported)
		SKIP(return, NO_REASON);
	fd = ks_drained(_metadata, 20, NS_PER_SEC, 10, 100, 0);
	ASSERT_LE(0, fd);
	mid_chunk_start(_metadata, fd, &self->ring, &a);
	io_uring_queue_exit(&self->ring);
	mid_chunk_check(_metadata, fd);
	ASSERT_EQ(0, ks_stats(fd, &s));
	/* For the fixture's teardown. */
	ASSERT_EQ(0, io_uring_queue_init(8, &self->ring, 0));
	close(fd);
}

/* A process that exits with requests queued gives everything back. */
TEST_F(uring, exit_with_queued_requests)
{
	struct rl_acquire a[4];
	struct rl_stats s;
	struct io_uring r;
	int fd, i, st;
	pid_t pid;

	if (!self->supported)
		SKIP(return, NO_REASON);
	/* Paused, a full bucket: the first request gets a chunk of 10. */
	fd = ks_drained(_metadata, 0, NS_PER_SEC, 10, 100, 10);
	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (io_uring_queue_init(8, &r, 0))
			_exit(2);
		for (i = 0; i < 4; i++) {
			ks_acq_req(&a[i], 20, RL_DEADLINE_NONE, 0);
			if (submit(&r, fd, &a[i], i))
				_exit(3);
		}
		if (ks_wait_waiters(fd, 4, WAIT_MS))
			_exit(4);
		if (ks_stats(fd, &s) || s.held != 20 || s.available)
			_exit(5);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(0, WEXITSTATUS(st));
	ASSERT_EQ(0, settled(fd, &s));
	EXPECT_EQ(0, s.held);
	EXPECT_EQ(10, s.available);
	EXPECT_EQ(0, s.granted);
	EXPECT_EQ(4, s.interrupted);
	close(fd);
}

/*
 * A request that waited through io_uring is in the wait histogram of its
 * named limiter, once: the limiter has a histogram from the first request
 * queued, and an empty one before.
 */
TEST_F(uring, wait_histogram)
{
	char name[RL_NAME_MAX], buf[4096];
	unsigned long long floor, count;
	struct rl_acquire a;
	struct rl_stats s;
	__u64 data;
	int fd, res;

	if (!self->supported)
		SKIP(return, NO_REASON);
	snprintf(name, sizeof(name), "uring-%d-hist", getpid());
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600, 2,
			 NS_PER_SEC, 1);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, sysfs_read(name, "wait_histogram", buf, sizeof(buf)));
	EXPECT_STREQ("", buf);
	ks_acq_req(&a, 1, soon(), 0);
	ASSERT_EQ(0, submit(&self->ring, fd, &a, 1));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &res));
	ASSERT_EQ(0, res);
	ASSERT_EQ(0, ks_stats(fd, &s));
	ASSERT_EQ(1, s.waited);
	ASSERT_EQ(0, sysfs_read(name, "wait_histogram", buf, sizeof(buf)));
	res = sscanf(buf, "%llu %llu", &floor, &count);
	ASSERT_EQ(2, res) TH_LOG("%s", buf);
	/* Up to 500 ms: in a bucket from 2^20 ns (1 ms) on, alone. */
	EXPECT_LE(1ULL << 20, floor);
	EXPECT_EQ(1, count);
	EXPECT_EQ(NULL, strchr(buf, '\n'));
	close(fd);
}

/* ---- keys: RL_URING_ACQUIRE_KEY ---- */

/* A private keyed limiter: @rate per @period, burst 1. */
static int key_fd(__u64 rate, __u64 period)
{
	struct rl_config c = { .rate = rate, .period_ns = period, .burst = 1,
			       .flags = RL_CONFIG_KEYED };
	int fd = ks_open();

	if (fd >= 0 && ioctl(fd, RL_IOC_SET_CONFIG, &c)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void key_req(struct rl_key_acquire *k, const char *key, __u64 deadline, __u32 flags)
{
	memset(k, 0, sizeof(*k));
	ks_acq_req(&k->acquire, 1, deadline, flags);
	k->key_len = strlen(key);
	memcpy(k->key, key, k->key_len);
}

/* Queue and submit an acquire of a key, or any SQE of it for a bad @len. */
static int submit_key(struct io_uring *ring, int fd, struct rl_key_acquire *k, __u64 data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	int ret;

	if (!sqe)
		return -EBUSY;
	rl_prep_acquire_key_async(sqe, fd, k);
	io_uring_sqe_set_data64(sqe, data);
	ret = io_uring_submit(ring);
	return ret == 1 ? 0 : ret < 0 ? ret : -EIO;
}

/* Requests sleeping or queued on @key, or -1. */
static long key_waiters(int fd, const char *key)
{
	struct rl_key_state st;

	memset(&st, 0, sizeof(st));
	st.key_len = strlen(key);
	memcpy(st.key, key, st.key_len);
	return ioctl(fd, RL_IOC_GET_KEY, &st) ? -1 : (long)st.waiters;
}

/* Wait until nobody is in @key's line (a ring's teardown ends its requests later). */
static long key_settled(int fd, const char *key)
{
	__u64 end = now_ns() + WAIT_MS * NS_PER_MS;
	long n;

	while ((n = key_waiters(fd, key)) > 0 && now_ns() < end)
		sleep_ms(2);
	return n;
}

/* Immediate results, order in a key's line, other keys, deadline, errors. */
TEST_F(uring, key_acquires)
{
	struct rl_key_acquire k[4];
	int fd, plain, res[4], r;
	struct rl_acquire a;
	__u64 data, t0;

	if (!self->supported)
		SKIP(return, NO_REASON);
	/* One token every 200 ms per key, burst 1. */
	fd = key_fd(5, NS_PER_SEC);
	ASSERT_LE(0, fd);
	key_req(&k[0], "a", soon(), 0);
	ASSERT_EQ(0, rl_acquire_key_async(&self->ring, fd, &k[0], 1));
	ASSERT_EQ(1, io_uring_submit(&self->ring));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &r));
	EXPECT_EQ(1, data);
	EXPECT_EQ(0, r);
	EXPECT_EQ(0, k[0].acquire.wait_ns);
	/* Two in key a's line, in order; key b at once. */
	key_req(&k[1], "a", soon(), 0);
	ASSERT_EQ(0, submit_key(&self->ring, fd, &k[1], 2));
	key_req(&k[2], "a", soon(), 0);
	ASSERT_EQ(0, submit_key(&self->ring, fd, &k[2], 3));
	EXPECT_EQ(2, key_waiters(fd, "a"));
	key_req(&k[3], "b", soon(), 0);
	ASSERT_EQ(0, submit_key(&self->ring, fd, &k[3], 4));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &r));
	EXPECT_EQ(4, data);
	EXPECT_EQ(0, r);
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &res[0]));
	EXPECT_EQ(2, data);
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &res[1]));
	EXPECT_EQ(3, data);
	EXPECT_EQ(0, res[0]);
	EXPECT_EQ(0, res[1]);
	EXPECT_LE(k[1].acquire.ready_ns + 200 * NS_PER_MS, k[2].acquire.ready_ns);
	EXPECT_LT(100 * NS_PER_MS, k[2].acquire.wait_ns);
	/* Nonblocking: -EAGAIN with a ready time; a deadline: -ETIMEDOUT. */
	key_req(&k[0], "a", soon(), RL_ACQUIRE_NONBLOCK);
	ASSERT_EQ(0, submit_key(&self->ring, fd, &k[0], 5));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &r));
	EXPECT_EQ(-EAGAIN, r);
	EXPECT_LT(now_ns(), k[0].acquire.ready_ns);
	t0 = now_ns();
	key_req(&k[0], "a", t0 + 50 * NS_PER_MS, 0);
	ASSERT_EQ(0, submit_key(&self->ring, fd, &k[0], 6));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &r));
	EXPECT_EQ(-ETIMEDOUT, r);
	EXPECT_LT(t0 + 50 * NS_PER_MS, k[0].acquire.ready_ns);
	EXPECT_EQ(0, key_waiters(fd, "a"));
	/* Bad requests fail as the ioctl's do; plain and keyed do not mix. */
	key_req(&k[0], "a", soon(), 0);
	k[0].key_len = 0;
	ASSERT_EQ(0, submit_key(&self->ring, fd, &k[0], 7));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &r));
	EXPECT_EQ(-EINVAL, r);
	key_req(&k[0], "a", soon(), 0);
	k[0].reserved[1] = 1;
	ASSERT_EQ(0, submit_key(&self->ring, fd, &k[0], 8));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &r));
	EXPECT_EQ(-EINVAL, r);
	ks_acq_req(&a, 1, soon(), 0);
	ASSERT_EQ(0, submit(&self->ring, fd, &a, 9));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &r));
	EXPECT_EQ(-EINVAL, r);
	plain = ks_open();
	ASSERT_LE(0, plain);
	ASSERT_EQ(0, ks_set(plain, 5, NS_PER_SEC, 1, 0));
	key_req(&k[0], "a", soon(), 0);
	ASSERT_EQ(0, submit_key(&self->ring, plain, &k[0], 10));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &r));
	EXPECT_EQ(-EINVAL, r);
	close(plain);
	close(fd);
}

/* Cancelled in line, or with its ring: nothing taken, nobody left in line. */
TEST_F(uring, key_cancel)
{
	struct rl_key_acquire k[2];
	int fd, r, cr;
	struct rl_stats s0, s;
	__u64 data;

	if (!self->supported)
		SKIP(return, NO_REASON);
	/* One token an hour per key. */
	fd = key_fd(1, 3600 * NS_PER_SEC);
	ASSERT_LE(0, fd);
	key_req(&k[0], "c", soon(), 0);
	ASSERT_EQ(0, submit_key(&self->ring, fd, &k[0], 1));
	ASSERT_EQ(0, reap(&self->ring, WAIT_MS, &data, &r));
	EXPECT_EQ(0, r);
	ASSERT_EQ(0, ks_stats(fd, &s0));
	key_req(&k[0], "c", RL_DEADLINE_NONE, 0);
	ASSERT_EQ(0, submit_key(&self->ring, fd, &k[0], 2));
	EXPECT_EQ(1, key_waiters(fd, "c"));
	ASSERT_EQ(0, submit_cancel(&self->ring, fd, 2, 3));
	ASSERT_EQ(0, reap_pair(&self->ring, 3, &cr, 2, &r));
	EXPECT_EQ(1, cr);
	EXPECT_EQ(-ECANCELED, r);
	EXPECT_EQ(0, key_waiters(fd, "c"));
	/* Closing the ring ends one still in line. */
	key_req(&k[1], "c", RL_DEADLINE_NONE, 0);
	ASSERT_EQ(0, submit_key(&self->ring, fd, &k[1], 4));
	EXPECT_EQ(1, key_waiters(fd, "c"));
	io_uring_queue_exit(&self->ring);
	EXPECT_EQ(0, key_settled(fd, "c"));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(s0.granted, s.granted);
	EXPECT_EQ(s0.interrupted + 2, s.interrupted);
	/* For the fixture's teardown. */
	ASSERT_EQ(0, io_uring_queue_init(8, &self->ring, 0));
	close(fd);
}

/* 10,000 requests outstanding from one thread, all granted at once. */
/*
 * A request a mapped fd's reservation page holds completes at once, as a
 * no-op the library submits, on every kernel (RL_FEATURE_FAST).
 */
TEST(fast_page)
{
	struct rl_config c = { .rate = 1, .period_ns = 3600 * NS_PER_SEC, .burst = 800 };
	struct io_uring ring;
	struct rl_acquire a;
	struct rl_stats s;
	int fd = rl_open(0), res;
	__u64 data;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, rl_set_config(fd, &c));
	/* Through the ioctl: the page gets a chunk, burst / 8. */
	ASSERT_EQ(0, rl_try_acquire(fd, 1, NULL));
	ASSERT_EQ(0, io_uring_queue_init(8, &ring, 0));
	ks_acq_req(&a, 5, soon(), 0);
	ASSERT_EQ(0, submit(&ring, fd, &a, 9));
	ASSERT_EQ(0, reap(&ring, WAIT_MS, &data, &res));
	EXPECT_EQ(9, data);
	EXPECT_EQ(0, res);
	EXPECT_EQ(0, a.wait_ns);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(6, s.granted);
	EXPECT_EQ(2, s.requests);
	io_uring_queue_exit(&ring);
	EXPECT_EQ(0, rl_close(fd));
}

TEST(many_outstanding)
{
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE,
				     .cq_entries = 2 * MANY };
	struct rl_acquire *a, one;
	struct io_uring ring;
	struct rl_stats s;
	int fd, i, n, res, bad = 0;
	__u64 data;

	fd = ks_open();
	ASSERT_LE(0, fd);
	if (rl_async_supported(fd) != 1)
		SKIP(close(fd); return, NO_REASON);
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 1, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &one));
	a = calloc(MANY, sizeof(*a));
	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, io_uring_queue_init_params(1024, &ring, &p));
	for (i = 0; i < MANY; i++) {
		ks_acq_req(&a[i], 1, soon() + 60 * NS_PER_SEC, 0);
		if (rl_acquire_async(&ring, fd, &a[i], i) == -EBUSY) {
			ASSERT_LT(0, io_uring_submit(&ring));
			ASSERT_EQ(0, rl_acquire_async(&ring, fd, &a[i], i));
		}
	}
	ASSERT_LE(0, io_uring_submit(&ring));
	ASSERT_EQ(0, ks_wait_waiters(fd, MANY, 10 * WAIT_MS));
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, 0, RL_CONFIG_UNLIMITED));
	for (n = 0; n < MANY; n++) {
		if (reap(&ring, 10 * WAIT_MS, &data, &res))
			break;
		bad += res != 0 || data >= MANY;
	}
	EXPECT_EQ(MANY, n);
	EXPECT_EQ(0, bad);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(0, s.waiters);
	EXPECT_EQ(MANY, s.waited);
	io_uring_queue_exit(&ring);
	free(a);
	close(fd);
}

TEST_HARNESS_MAIN
