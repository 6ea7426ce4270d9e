// SPDX-License-Identifier: GPL-2.0-only
/*
 * libratelimit: keyed limiters, rl_acquire_key(), rl_try_acquire_key(),
 * rl_acquire_key_timeout(), rl_acquire_key_ex(), rl_submit_key(),
 * rl_get_key() and rl_get_keys(): a bucket per key, keys independent of each other, the
 * cap on keys, and every error as -errno with errno left alone.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "lib_test.h"

/* Slack for a QEMU guest under software emulation. */
#define LATE_NS		(2 * NS_PER_SEC)

/* A private keyed limiter: @rate per @period_ns, burst @burst, @keys keys. */
static int key_fd(__u64 rate, __u64 period_ns, __u64 burst, __u64 keys)
{
	struct rl_config c = ks_cfg(rate, period_ns, burst);

	c.flags = RL_CONFIG_KEYED;
	c.keys = keys;
	return ks_lib_open(0, &c);
}

/* One that refills too slowly to matter during a test (1 per 1000 s). */
static int key_slow_fd(__u64 burst, __u64 keys)
{
	return key_fd(1, 1000 * NS_PER_SEC, burst, keys);
}

/* A request for @count tokens of @key by @deadline_ns. */
static void key_req(struct rl_key_acquire *r, const char *key, __u64 count,
		    __u64 deadline_ns)
{
	memset(r, 0, sizeof(*r));
	r->acquire.count = count;
	r->acquire.deadline_ns = deadline_ns;
	r->key_len = strlen(key);
	memcpy(r->key, key, r->key_len);
}

/* Tokens of @key now (rl_get_key()), or POISON64 on error. */
static __u64 key_avail(int fd, const char *key)
{
	struct rl_key_state st;

	return rl_get_key(fd, key, strlen(key), &st) ? POISON64 : st.available;
}

TEST(features_keyed)
{
	struct rl_features f;
	int fd = rl_open(0);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_get_features(fd, &f));
	EXPECT_EQ((__u32)RL_FEATURE_KEYED, f.flags & RL_FEATURE_KEYED);
	EXPECT_EQ((__u64)RL_CONFIG_KEYED, f.config_flags & RL_CONFIG_KEYED);
	EXPECT_NE(0ULL, f.ioctls & (1ULL << _IOC_NR(RL_IOC_ACQUIRE_KEY)));
	EXPECT_NE(0ULL, f.ioctls & (1ULL << _IOC_NR(RL_IOC_GET_KEY)));
	EXPECT_NE(0ULL, f.ioctls & (1ULL << _IOC_NR(RL_IOC_GET_KEYS)));
	rl_close(fd);
}

TEST(config_keyed)
{
	struct rl_keys_stats ks;
	struct rl_config c;
	int fd = key_slow_fd(5, 0);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_get_config(fd, &c));
	EXPECT_EQ((__u32)RL_CONFIG_KEYED, c.flags & RL_CONFIG_KEYED);
	EXPECT_EQ(5ULL, c.burst);
	/* keys 0: the default, in force. */
	ASSERT_LIB(0, rl_get_keys(fd, &ks));
	EXPECT_EQ((__u64)RL_KEYS_DEFAULT, ks.keys_max);
	/* Keyed is fixed at creation. */
	c.flags &= ~RL_CONFIG_KEYED;
	c.keys = 0;
	EXPECT_LIB(-EINVAL, rl_set_config(fd, &c));
	rl_close(fd);
}

TEST(acquire_key_within_burst)
{
	int fd = key_slow_fd(10, 0);

	ASSERT_LE(0, fd);
	EXPECT_LIB(0, rl_acquire_key(fd, "alice", 5, 4));
	EXPECT_LIB(0, rl_acquire_key(fd, "alice", 5, 6));
	EXPECT_EQ(0ULL, key_avail(fd, "alice"));
	rl_close(fd);
}

TEST(acquire_key_waits_for_tokens)
{
	/* 10 per second, burst 1: two more tokens take about 200 ms. */
	int fd = key_fd(10, NS_PER_SEC, 1, 0);
	__u64 t;

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire_key(fd, "k", 1, 1));
	t = now_ns();
	EXPECT_LIB(0, rl_acquire_key(fd, "k", 1, 1));
	EXPECT_LIB(0, rl_acquire_key(fd, "k", 1, 1));
	t = now_ns() - t;
	EXPECT_LE(150 * NS_PER_MS, t);
	EXPECT_GT(LATE_NS + 200 * NS_PER_MS, t);
	rl_close(fd);
}

TEST(keys_independent)
{
	uint64_t ready = POISON64;
	int fd = key_slow_fd(3, 0);
	const unsigned char bin[] = { 10, 0, 0, 1 };

	ASSERT_LE(0, fd);
	EXPECT_LIB(0, rl_try_acquire_key(fd, "a", 1, 3, &ready));
	EXPECT_LIB(-EAGAIN, rl_try_acquire_key(fd, "a", 1, 1, &ready));
	/* Other keys keep their whole burst: no borrowing either way. */
	EXPECT_LIB(0, rl_try_acquire_key(fd, "b", 1, 3, NULL));
	EXPECT_LIB(0, rl_try_acquire_key(fd, bin, sizeof(bin), 2, NULL));
	/* A prefix is another key, and so is a key with a NUL more. */
	EXPECT_LIB(0, rl_try_acquire_key(fd, bin, 3, 3, NULL));
	EXPECT_LIB(0, rl_try_acquire_key(fd, "a", 2, 3, NULL));
	EXPECT_EQ(0ULL, key_avail(fd, "a"));
	EXPECT_EQ(0ULL, key_avail(fd, "b"));
	EXPECT_EQ(3ULL, key_avail(fd, "c"));
	rl_close(fd);
}

TEST(try_acquire_key_eagain_ready)
{
	uint64_t ready = POISON64;
	__u64 t;
	int fd = key_fd(10, NS_PER_SEC, 5, 0);	/* a token every 100 ms */

	ASSERT_LE(0, fd);
	/* Granted: ready_ns is not written. */
	EXPECT_LIB(0, rl_try_acquire_key(fd, "k", 1, 5, &ready));
	EXPECT_EQ(POISON64, ready);
	/* Empty: -EAGAIN and the time 3 tokens exist, 300 ms ahead. */
	t = rl_now_ns();
	EXPECT_LIB(-EAGAIN, rl_try_acquire_key(fd, "k", 1, 3, &ready));
	EXPECT_LT(t, ready);
	EXPECT_GE(t + 300 * NS_PER_MS + LATE_NS, ready);
	EXPECT_LE(t + 200 * NS_PER_MS, ready);
	EXPECT_LIB(-EAGAIN, rl_try_acquire_key(fd, "k", 1, 3, NULL));
	rl_close(fd);
}

TEST(key_len_invalid_without_syscall)
{
	char key[RL_KEY_MAX + 1];
	struct rl_key_acquire req;
	struct rl_key_state st;
	uint64_t ready = POISON64;

	memset(key, 'k', sizeof(key));
	/* fd -1: a system call would fail with -EBADF, not -EINVAL. */
	EXPECT_LIB(-EINVAL, rl_acquire_key(-1, key, 0, 1));
	EXPECT_LIB(-EINVAL, rl_acquire_key(-1, key, RL_KEY_MAX + 1, 1));
	EXPECT_LIB(-EINVAL, rl_acquire_key(-1, NULL, 4, 1));
	EXPECT_LIB(-EINVAL, rl_try_acquire_key(-1, key, 0, 1, &ready));
	EXPECT_LIB(-EINVAL, rl_try_acquire_key(-1, key, RL_KEY_MAX + 1, 1,
					       &ready));
	EXPECT_EQ(POISON64, ready);
	EXPECT_LIB(-EINVAL, rl_acquire_key_timeout(-1, key, 0, 1, 0, &ready));
	EXPECT_LIB(-EINVAL, rl_acquire_key_timeout(-1, key, RL_KEY_MAX + 1,
						   1, 0, &ready));
	EXPECT_EQ(POISON64, ready);
	EXPECT_LIB(-EINVAL, rl_get_key(-1, key, 0, &st));
	EXPECT_LIB(-EINVAL, rl_get_key(-1, key, RL_KEY_MAX + 1, &st));
	EXPECT_LIB(-EINVAL, rl_get_key(-1, key, 1, NULL));
	key_req(&req, "k", 1, RL_DEADLINE_NONE);
	req.key_len = 0;
	EXPECT_LIB(-EINVAL, rl_acquire_key_ex(-1, &req));
	req.key_len = RL_KEY_MAX + 1;
	EXPECT_LIB(-EINVAL, rl_acquire_key_ex(-1, &req));
	EXPECT_LIB(-EINVAL, rl_acquire_key_ex(-1, NULL));
	EXPECT_LIB(-EINVAL, rl_get_keys(-1, NULL));
	/* A valid length reaches the kernel. */
	EXPECT_LIB(-EBADF, rl_acquire_key(-1, key, RL_KEY_MAX, 1));
	EXPECT_LIB(-EBADF, rl_get_key(-1, key, 1, &st));
}

TEST(key_of_max_len)
{
	char a[RL_KEY_MAX], b[RL_KEY_MAX];
	int fd = key_slow_fd(2, 0);

	ASSERT_LE(0, fd);
	memset(a, 'x', sizeof(a));
	memcpy(b, a, sizeof(b));
	b[RL_KEY_MAX - 1] = 'y';	/* differs in the last byte only */
	EXPECT_LIB(0, rl_acquire_key(fd, a, sizeof(a), 2));
	EXPECT_LIB(-EAGAIN, rl_try_acquire_key(fd, a, sizeof(a), 1, NULL));
	EXPECT_LIB(0, rl_try_acquire_key(fd, b, sizeof(b), 2, NULL));
	rl_close(fd);
}

TEST(count_invalid)
{
	uint64_t ready = POISON64;
	int fd = key_slow_fd(5, 0);

	ASSERT_LE(0, fd);
	EXPECT_LIB(-EINVAL, rl_acquire_key(fd, "k", 1, 0));
	EXPECT_LIB(-EINVAL, rl_try_acquire_key(fd, "k", 1, 0, &ready));
	EXPECT_LIB(-EINVAL, rl_acquire_key_timeout(fd, "k", 1, 0, 0, &ready));
	/* Above the burst: never, in any form (no chunks by key). */
	EXPECT_LIB(-EINVAL, rl_acquire_key(fd, "k", 1, 6));
	EXPECT_LIB(-EINVAL, rl_try_acquire_key(fd, "k", 1, 6, &ready));
	EXPECT_LIB(-EINVAL, rl_acquire_key_timeout(fd, "k", 1, 6, NS_PER_SEC,
						   &ready));
	EXPECT_EQ(POISON64, ready);
	EXPECT_EQ(5ULL, key_avail(fd, "k"));
	rl_close(fd);
}

TEST(not_keyed)
{
	struct rl_keys_stats ks;
	struct rl_key_state st;
	struct rl_key_acquire req;
	int fd = ks_lib_slow_fd(5), raw = rl_open(0);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, raw);
	EXPECT_LIB(-EINVAL, rl_acquire_key(fd, "k", 1, 1));
	EXPECT_LIB(-EINVAL, rl_try_acquire_key(fd, "k", 1, 1, NULL));
	EXPECT_LIB(-EINVAL, rl_acquire_key_timeout(fd, "k", 1, 1, 0, NULL));
	key_req(&req, "k", 1, RL_DEADLINE_NONE);
	EXPECT_LIB(-EINVAL, rl_acquire_key_ex(fd, &req));
	EXPECT_LIB(-EINVAL, rl_get_key(fd, "k", 1, &st));
	EXPECT_LIB(-EINVAL, rl_get_keys(fd, &ks));
	EXPECT_EQ(5ULL, ks_lib_avail(fd));
	/* No limiter at all. */
	EXPECT_LIB(-EBADFD, rl_acquire_key(raw, "k", 1, 1));
	EXPECT_LIB(-EBADFD, rl_get_keys(raw, &ks));
	rl_close(raw);
	rl_close(fd);
}

TEST(keyed_refuses_plain_acquire)
{
	int fd = key_slow_fd(5, 0);

	ASSERT_LE(0, fd);
	EXPECT_LIB(-EINVAL, rl_acquire(fd, 1));
	EXPECT_LIB(-EINVAL, rl_try_acquire(fd, 1, NULL));
	rl_close(fd);
}

TEST(timeout_key_expires)
{
	uint64_t ready = POISON64;
	__u64 t;
	int fd = key_slow_fd(4, 0);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire_key(fd, "k", 1, 3));
	/* 2 of the 1 there: times out, the one stays with the key. */
	t = now_ns();
	EXPECT_LIB(-ETIMEDOUT, rl_acquire_key_timeout(fd, "k", 1, 2,
						      100 * NS_PER_MS, &ready));
	t = now_ns() - t;
	EXPECT_LE(100 * NS_PER_MS, t);
	EXPECT_GT(100 * NS_PER_MS + LATE_NS, t);
	EXPECT_LT(rl_now_ns() + 100 * NS_PER_SEC, ready);	/* 1000 s off */
	EXPECT_EQ(1ULL, key_avail(fd, "k"));
	/* A zero timeout is a try. */
	EXPECT_LIB(-ETIMEDOUT, rl_acquire_key_timeout(fd, "k", 1, 2, 0, NULL));
	EXPECT_LIB(0, rl_acquire_key_timeout(fd, "k", 1, 1, 0, NULL));
	rl_close(fd);
}

TEST(timeout_key_granted)
{
	uint64_t ready = POISON64;
	int fd = key_fd(10, NS_PER_SEC, 1, 0);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire_key(fd, "k", 1, 1));
	EXPECT_LIB(0, rl_acquire_key_timeout(fd, "k", 1, 1, 10 * NS_PER_SEC,
					     &ready));
	EXPECT_EQ(POISON64, ready);
	EXPECT_LIB(0, rl_acquire_key_timeout(fd, "k", 1, 1, RL_DEADLINE_NONE,
					     NULL));
	rl_close(fd);
}

TEST(keys_cap_enospc)
{
	struct rl_keys_stats ks;
	uint64_t ready = POISON64;
	__u64 t;
	int fd = key_slow_fd(2, 2);

	ASSERT_LE(0, fd);
	/* Two keys with state (not full): the cap. */
	ASSERT_LIB(0, rl_acquire_key(fd, "a", 1, 1));
	ASSERT_LIB(0, rl_acquire_key(fd, "b", 1, 1));
	t = rl_now_ns();
	EXPECT_LIB(-ENOSPC, rl_try_acquire_key(fd, "c", 1, 1, &ready));
	EXPECT_LT(t, ready);
	ready = POISON64;
	EXPECT_LIB(-ENOSPC, rl_acquire_key_timeout(fd, "c", 1, 1, NS_PER_SEC,
						   &ready));
	EXPECT_LT(t, ready);
	EXPECT_LIB(-ENOSPC, rl_acquire_key(fd, "c", 1, 1));
	/* The keys kept go on as before. */
	EXPECT_LIB(0, rl_try_acquire_key(fd, "a", 1, 1, NULL));
	EXPECT_LIB(-EAGAIN, rl_try_acquire_key(fd, "a", 1, 1, NULL));
	memset(&ks, POISON_BYTE, sizeof(ks));
	ASSERT_LIB(0, rl_get_keys(fd, &ks));
	EXPECT_EQ(2ULL, ks.keys);
	EXPECT_EQ(2ULL, ks.keys_max);
	EXPECT_EQ(2ULL, ks.created);
	EXPECT_EQ(0ULL, ks.evicted);
	EXPECT_EQ(3ULL, ks.refused);
	EXPECT_EQ(0ULL, ks.waiters);
	rl_close(fd);
}

TEST(get_key_state)
{
	struct rl_key_state st;
	__u64 t;
	int fd = key_slow_fd(5, 0);

	ASSERT_LE(0, fd);
	/* A key never seen: full, no state, nothing created. */
	memset(&st, POISON_BYTE, sizeof(st));
	EXPECT_LIB(0, rl_get_key(fd, "new", 3, &st));
	EXPECT_EQ(5ULL, st.available);
	EXPECT_EQ(0ULL, st.full_ns);
	EXPECT_EQ(0ULL, st.waiters);
	EXPECT_EQ(0U, st.kept);
	EXPECT_EQ(3U, st.key_len);
	EXPECT_EQ(0, memcmp(st.key, "new", 3));
	/* After a take: kept, and full again in 2 x 1000 s. */
	ASSERT_LIB(0, rl_acquire_key(fd, "used", 4, 2));
	t = rl_now_ns();
	memset(&st, POISON_BYTE, sizeof(st));
	EXPECT_LIB(0, rl_get_key(fd, "used", 4, &st));
	EXPECT_EQ(3ULL, st.available);
	EXPECT_LT(t + 1000 * NS_PER_SEC, st.full_ns);
	EXPECT_GE(t + 2000 * NS_PER_SEC, st.full_ns);
	EXPECT_EQ(1U, st.kept);
	EXPECT_EQ(0U, st.reserved0);
	/* The key may be read from @st itself. */
	EXPECT_LIB(0, rl_get_key(fd, st.key, st.key_len, &st));
	EXPECT_EQ(3ULL, st.available);
	/* Reading made no key. */
	EXPECT_LIB(0, rl_get_key(fd, "new", 3, &st));
	EXPECT_EQ(0U, st.kept);
	rl_close(fd);
}

TEST(get_keys_counts)
{
	struct rl_keys_stats ks;
	int fd = key_slow_fd(5, 100);

	ASSERT_LE(0, fd);
	memset(&ks, POISON_BYTE, sizeof(ks));
	EXPECT_LIB(0, rl_get_keys(fd, &ks));
	EXPECT_EQ(0ULL, ks.keys);
	EXPECT_EQ(100ULL, ks.keys_max);
	EXPECT_EQ(0ULL, ks.created);
	EXPECT_EQ(0ULL, ks.reserved[0]);
	EXPECT_EQ(0ULL, ks.reserved[8]);
	ASSERT_LIB(0, rl_acquire_key(fd, "a", 1, 1));
	ASSERT_LIB(0, rl_acquire_key(fd, "b", 1, 1));
	ASSERT_LIB(0, rl_acquire_key(fd, "c", 1, 1));
	EXPECT_LIB(0, rl_get_keys(fd, &ks));
	EXPECT_EQ(3ULL, ks.keys);
	EXPECT_EQ(3ULL, ks.created);
	EXPECT_EQ(0ULL, ks.refused);
	rl_close(fd);
}

TEST(acquire_key_ex)
{
	struct rl_key_acquire req;
	int fd = key_fd(10, NS_PER_SEC, 1, 0);

	ASSERT_LE(0, fd);
	key_req(&req, "k", 1, RL_DEADLINE_NONE);
	req.acquire.wait_ns = POISON64;
	req.acquire.lag_ns = POISON64;
	EXPECT_LIB(0, rl_acquire_key_ex(fd, &req));
	EXPECT_EQ(0ULL, req.acquire.lag_ns);
	/* The next token is 100 ms away: waited for. */
	key_req(&req, "k", 1, RL_DEADLINE_NONE);
	EXPECT_LIB(0, rl_acquire_key_ex(fd, &req));
	EXPECT_LE(50 * NS_PER_MS, req.acquire.wait_ns);
	EXPECT_GT(100 * NS_PER_MS + LATE_NS, req.acquire.wait_ns);
	/* PREDICT: past a deadline 1 ms away, -ETIMEDOUT at once. */
	key_req(&req, "k", 1, rl_now_ns() + NS_PER_MS);
	req.acquire.flags = RL_ACQUIRE_PREDICT;
	EXPECT_LIB(-ETIMEDOUT, rl_acquire_key_ex(fd, &req));
	EXPECT_LT(req.acquire.deadline_ns, req.acquire.ready_ns);
	/* NONBLOCK: -EAGAIN with a ready time. */
	key_req(&req, "k", 1, RL_DEADLINE_NONE);
	req.acquire.flags = RL_ACQUIRE_NONBLOCK;
	req.acquire.ready_ns = 0;
	EXPECT_LIB(-EAGAIN, rl_acquire_key_ex(fd, &req));
	EXPECT_LT(0ULL, req.acquire.ready_ns);
	rl_close(fd);
}

TEST(acquire_key_ex_errors)
{
	struct rl_key_acquire req;
	int fd = key_slow_fd(1, 0);

	ASSERT_LE(0, fd);
	key_req(&req, "k", 1, RL_DEADLINE_NONE);
	req.flags = 1;
	EXPECT_LIB(-EINVAL, rl_acquire_key_ex(fd, &req));
	key_req(&req, "k", 1, RL_DEADLINE_NONE);
	req.reserved[2] = 1;
	EXPECT_LIB(-EINVAL, rl_acquire_key_ex(fd, &req));
	key_req(&req, "k", 1, RL_DEADLINE_NONE);
	req.acquire.reserved[0] = 1;
	EXPECT_LIB(-EINVAL, rl_acquire_key_ex(fd, &req));
	key_req(&req, "k", 1, RL_DEADLINE_NONE);
	req.acquire.flags = 1U << 31;
	EXPECT_LIB(-EINVAL, rl_acquire_key_ex(fd, &req));
	key_req(&req, "k", 2, RL_DEADLINE_NONE);	/* above the burst */
	EXPECT_LIB(-EINVAL, rl_acquire_key_ex(fd, &req));
	EXPECT_EQ(1ULL, key_avail(fd, "k"));
	rl_close(fd);
}

/* A queued request of @count tokens of @key. */
static void key_queued(struct rl_key_queued *kq, const char *key, __u64 count,
		       __u64 deadline_ns, __u64 user_data)
{
	memset(kq, 0, sizeof(*kq));
	kq->queued.count = count;
	kq->queued.deadline_ns = deadline_ns;
	kq->queued.user_data = user_data;
	kq->key_len = strlen(key);
	memcpy(kq->key, key, kq->key_len);
}

TEST(submit_key)
{
	struct pollfd pfd = { .events = POLLIN };
	struct rl_key_queued kq;
	struct rl_queued q;
	int fd = key_fd(10, NS_PER_SEC, 1, 0);

	ASSERT_LE(0, fd);
	pfd.fd = fd;
	/* Granted at once: ticket 0. */
	key_queued(&kq, "k", 1, RL_DEADLINE_NONE, 1);
	EXPECT_LIB(0, rl_submit_key(fd, &kq));
	EXPECT_EQ(0ULL, kq.queued.ticket);
	/* The next token is 100 ms away: a ticket, collected once the fd is readable. */
	key_queued(&kq, "k", 1, RL_DEADLINE_NONE, 2);
	EXPECT_LIB(0, rl_submit_key(fd, &kq));
	EXPECT_LT(0ULL, kq.queued.ticket);
	EXPECT_LIB(-EAGAIN, rl_collect(fd, &q));
	ASSERT_EQ(1, poll(&pfd, 1, 10000));
	EXPECT_LIB(0, rl_collect(fd, &q));
	EXPECT_EQ(kq.queued.ticket, q.ticket);
	EXPECT_EQ(0, q.result);
	EXPECT_EQ(2ULL, q.user_data);
	EXPECT_LE(50 * NS_PER_MS, q.wait_ns);
	/* Withdrawn in line: nothing taken, nothing to collect. */
	key_queued(&kq, "k", 1, RL_DEADLINE_NONE, 3);
	EXPECT_LIB(0, rl_submit_key(fd, &kq));
	EXPECT_LIB(0, rl_cancel(fd, kq.queued.ticket));
	EXPECT_LIB(-EAGAIN, rl_collect(fd, &q));
	/* Checked here: no system call for a bad key length or a NULL request. */
	key_queued(&kq, "k", 1, RL_DEADLINE_NONE, 0);
	kq.key_len = 0;
	EXPECT_LIB(-EINVAL, rl_submit_key(fd, &kq));
	kq.key_len = RL_KEY_MAX + 1;
	EXPECT_LIB(-EINVAL, rl_submit_key(fd, &kq));
	EXPECT_LIB(-EINVAL, rl_submit_key(fd, NULL));
	rl_close(fd);
}

static void *kick(void *arg)
{
	pthread_t *main = arg;

	sleep_ms(200);
	pthread_kill(*main, SIGUSR1);
	return NULL;
}

TEST(acquire_key_signal_eintr)
{
	pthread_t self = pthread_self(), th;
	int fd = key_slow_fd(1, 0);

	ASSERT_LE(0, fd);
	ASSERT_LIB(0, rl_acquire_key(fd, "k", 1, 1));
	ASSERT_EQ(0, catch_signal(SIGUSR1, 0));
	ASSERT_EQ(0, pthread_create(&th, NULL, kick, &self));
	EXPECT_LIB(-EINTR, rl_acquire_key_timeout(fd, "k", 1, 1,
						  20 * NS_PER_SEC, NULL));
	EXPECT_EQ(1, signal_hits());
	pthread_join(th, NULL);
	/* Another key was never held up. */
	EXPECT_LIB(0, rl_try_acquire_key(fd, "j", 1, 1, NULL));
	rl_close(fd);
}

TEST(named_keyed)
{
	struct rl_config c = ks_cfg(1, 1000 * NS_PER_SEC, 2);
	struct rl_keys_stats ks;
	char name[RL_NAME_MAX];
	int a, b;

	c.flags = RL_CONFIG_KEYED;
	c.keys = 10;
	ks_lib_name(name, sizeof(name), "keyed");
	a = rl_open_named(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600, &c);
	ASSERT_LE(0, a);
	b = rl_open_named(name, 0, 0, NULL);
	ASSERT_LE(0, b);
	/* One bucket per key, shared by every fd of the limiter. */
	EXPECT_LIB(0, rl_acquire_key(a, "k", 1, 2));
	EXPECT_LIB(-EAGAIN, rl_try_acquire_key(b, "k", 1, 1, NULL));
	EXPECT_LIB(0, rl_try_acquire_key(b, "l", 1, 1, NULL));
	EXPECT_LIB(0, rl_get_keys(b, &ks));
	EXPECT_EQ(2ULL, ks.keys);
	EXPECT_EQ(10ULL, ks.keys_max);
	rl_close(b);
	rl_close(a);
}

TEST_HARNESS_MAIN
