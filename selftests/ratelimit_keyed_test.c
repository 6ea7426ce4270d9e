// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of /dev/ratelimit: keyed limiters (RL_FEATURE_KEYED), a token
 * bucket per key, through the raw ioctls RL_IOC_ACQUIRE_KEY, GET_KEY and
 * GET_KEYS. The features; the validation of configs and requests, and that
 * a refused request takes nothing; the bucket bound per key over every
 * window for 1,000 keys driven by 8 processes at once, counted from the
 * grants' own timestamps and ready_ns, while sleepers drain other keys;
 * eviction checked against a reference GCRA bucket computed here; FIFO per
 * key and no waiting across keys; timeouts, signals and kill -9 taking
 * nothing; close freeing the keys; the cap (ENOSPC, then room again once
 * the keys refill); and a flood of distinct keys from an unprivileged
 * process, bounded by the cap, with another family unaffected.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"

#define HOUR		(3600 * NS_PER_SEC)
#define NOBODY		65534

/* ---- helpers ---- */

static int kcfg(int fd, __u64 rate, __u64 period, __u64 burst, __u64 keys)
{
	struct rl_config c;

	memset(&c, 0, sizeof(c));
	c.rate = rate;
	c.period_ns = period;
	c.burst = burst;
	c.flags = RL_CONFIG_KEYED;
	c.keys = keys;
	return ioctl(fd, RL_IOC_SET_CONFIG, &c);
}

/* A new fd with a private keyed limiter, or -1. */
static int kopen(__u64 rate, __u64 period, __u64 burst, __u64 keys)
{
	int fd = ks_open();

	if (fd >= 0 && kcfg(fd, rate, period, burst, keys)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A key request with the outputs poisoned. */
static void kreq(struct rl_key_acquire *ka, const void *key, __u32 len,
		 __u64 count, __u64 deadline, __u32 flags)
{
	memset(ka, 0, sizeof(*ka));
	ks_acq_req(&ka->acquire, count, deadline, flags);
	ka->key_len = len;
	memcpy(ka->key, key, len > RL_KEY_MAX ? RL_KEY_MAX : len);
}

static int kacq(int fd, const void *key, __u32 len, __u64 count,
		__u64 deadline, __u32 flags, struct rl_key_acquire *ka)
{
	kreq(ka, key, len, count, deadline, flags);
	return ioctl(fd, RL_IOC_ACQUIRE_KEY, ka);
}

/* Key number @id as bytes: "key-<id>". */
static __u32 kname(char *buf, unsigned int id)
{
	return (__u32)snprintf(buf, RL_KEY_MAX, "key-%u", id);
}

static int kacq_id(int fd, unsigned int id, __u64 count, __u64 deadline,
		   __u32 flags, struct rl_key_acquire *ka)
{
	char k[RL_KEY_MAX];

	return kacq(fd, k, kname(k, id), count, deadline, flags, ka);
}

/* A queued request of key @id, the outputs poisoned; @user_data given back. */
static void kq_fill(struct rl_key_queued *kq, unsigned int id, __u64 count, __u64 deadline,
		    __u32 flags, __u64 user_data)
{
	memset(kq, 0, sizeof(*kq));
	kq->queued.ticket = POISON64;
	kq->queued.count = count;
	kq->queued.deadline_ns = deadline;
	kq->queued.flags = flags;
	kq->queued.wait_ns = POISON64;
	kq->queued.ready_ns = POISON64;
	kq->queued.lag_ns = POISON64;
	kq->queued.user_data = user_data;
	kq->key_len = kname((char *)kq->key, id);
}

/* RL_IOC_SUBMIT_KEY of kq_fill()'s request. */
static int ksub_id(int fd, unsigned int id, __u64 count, __u64 deadline, __u32 flags,
		   __u64 user_data, struct rl_key_queued *kq)
{
	kq_fill(kq, id, count, deadline, flags, user_data);
	return ioctl(fd, RL_IOC_SUBMIT_KEY, kq);
}

/* Wait up to @ms for a finished ticket, then RL_IOC_COLLECT it into @q. */
static int kcollect(int fd, struct rl_queued *q, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (poll(&pfd, 1, ms) != 1)
		return -1;
	memset(q, POISON_BYTE, sizeof(*q));
	return ioctl(fd, RL_IOC_COLLECT, q);
}

static int kstate(int fd, const void *key, __u32 len, struct rl_key_state *st)
{
	memset(st, POISON_BYTE, sizeof(*st));
	st->key_len = len;
	st->flags = 0;
	memcpy(st->key, key, len > RL_KEY_MAX ? RL_KEY_MAX : len);
	return ioctl(fd, RL_IOC_GET_KEY, st);
}

static int kstate_id(int fd, unsigned int id, struct rl_key_state *st)
{
	char k[RL_KEY_MAX];

	return kstate(fd, k, kname(k, id), st);
}

static int kstats(int fd, struct rl_keys_stats *st)
{
	memset(st, POISON_BYTE, sizeof(*st));
	st->flags = 0;
	st->reserved0 = 0;
	return ioctl(fd, RL_IOC_GET_KEYS, st);
}

static __u64 nkeys(int fd)
{
	struct rl_keys_stats st;

	return kstats(fd, &st) ? POISON64 : st.keys;
}

static __u64 key_waiters(int fd, unsigned int id)
{
	struct rl_key_state st;

	return kstate_id(fd, id, &st) ? POISON64 : st.waiters;
}

/* Wait until key @id has @n sleepers: 0, or -1 after @ms. */
static int wait_key_waiters(int fd, unsigned int id, __u64 n, unsigned int ms)
{
	__u64 end = now_ns() + ms * NS_PER_MS;

	while (key_waiters(fd, id) != n) {
		if (now_ns() > end)
			return -1;
		sleep_ms(1);
	}
	return 0;
}

static bool zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		if (*b++)
			return false;
	return true;
}

/* Drop CAP_SYS_RESOURCE from this process's effective and permitted sets. */
static int drop_sys_resource(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[CAP_SYS_RESOURCE / 32].effective &= ~(1U << (CAP_SYS_RESOURCE % 32));
	d[CAP_SYS_RESOURCE / 32].permitted &= ~(1U << (CAP_SYS_RESOURCE % 32));
	d[CAP_SYS_RESOURCE / 32].inheritable &= ~(1U << (CAP_SYS_RESOURCE % 32));
	return syscall(SYS_capset, &h, d) ? -1 : 0;
}

/* A sleeper on one key, in a thread. */
struct ksleeper {
	int fd;
	unsigned int id;
	__u64 count, deadline;
	struct rl_key_acquire ka;
	int ret, err, done;
	int *order, *order_len;
	int seq;
	__u64 t_end;
	pthread_t th;
};

static void *ksleeper_fn(void *arg)
{
	struct ksleeper *s = arg;

	s->ret = kacq_id(s->fd, s->id, s->count, s->deadline, 0, &s->ka);
	s->err = errno;
	s->t_end = now_ns();
	if (s->order)
		s->order[__atomic_fetch_add(s->order_len, 1, __ATOMIC_SEQ_CST)] = s->seq;
	__atomic_store_n(&s->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static int ksleeper_start(struct ksleeper *s, int fd, unsigned int id,
			  __u64 count, __u64 deadline, int *order,
			  int *order_len, int seq)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->id = id;
	s->count = count;
	s->deadline = deadline;
	s->ret = -2;
	s->order = order;
	s->order_len = order_len;
	s->seq = seq;
	return pthread_create(&s->th, NULL, ksleeper_fn, s);
}

static int ksleeper_join(struct ksleeper *s, unsigned int ms)
{
	struct timespec ts;
	__u64 t;

	clock_gettime(CLOCK_REALTIME, &ts);
	t = (__u64)ts.tv_sec * NS_PER_SEC + ts.tv_nsec + ms * NS_PER_MS;
	ts.tv_sec = t / NS_PER_SEC;
	ts.tv_nsec = t % NS_PER_SEC;
	return pthread_timedjoin_np(s->th, NULL, &ts);
}

/*
 * The reference bucket: GCRA with emission interval T = period / rate
 * (whole ns in these tests) and tolerance tau = burst * T. @tat is the
 * theoretical arrival time; a new key has tat 0 (full).
 */
struct refbucket {
	__u64 T, tau, tat;
};

/* Would @n tokens be granted at @t? */
static bool ref_ok(const struct refbucket *r, __u64 n, __u64 t)
{
	__u64 base = r->tat > t ? r->tat : t;

	return base + n * r->T <= t + r->tau;
}

/* When @n tokens could be granted (no sleepers): tat + n T - tau. */
static __u64 ref_ready(const struct refbucket *r, __u64 n)
{
	return r->tat + n * r->T - r->tau;
}

FIXTURE(keyed) {
	int unused;
};

FIXTURE_SETUP(keyed)
{
	int fd = ks_open();

	if (fd < 0)
		SKIP(return, "no " KS_DEV);
	close(fd);
}

FIXTURE_TEARDOWN(keyed)
{
}

/* ---- features and validation ---- */

TEST_F(keyed, features)
{
	struct rl_features f;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	memset(&f, POISON_BYTE, sizeof(f));
	ASSERT_EQ(0, ioctl(fd, RL_IOC_GET_FEATURES, &f));
	EXPECT_TRUE(f.flags & RL_FEATURE_KEYED);
	EXPECT_TRUE(f.config_flags & RL_CONFIG_KEYED);
	EXPECT_EQ(0, f.config_flags & ~(__u64)RL_CONFIG_FLAGS_ALL);
	EXPECT_TRUE(f.ioctls & (1ULL << _IOC_NR(RL_IOC_ACQUIRE_KEY)));
	EXPECT_TRUE(f.ioctls & (1ULL << _IOC_NR(RL_IOC_GET_KEY)));
	EXPECT_TRUE(f.ioctls & (1ULL << _IOC_NR(RL_IOC_GET_KEYS)));
	EXPECT_TRUE(f.ioctls & (1ULL << _IOC_NR(RL_IOC_SUBMIT_KEY)));
	close(fd);
}

static void child_keys_cap(void *arg, int *out)
{
	int fd;

	out[0] = drop_sys_resource();
	fd = ks_open();
	out[1] = fd < 0 ? errno : 0;
	out[2] = ret_err(kcfg(fd, 10, NS_PER_SEC, 10, RL_KEYS_USER_MAX + 1ULL));
	out[3] = ret_err(kcfg(fd, 10, NS_PER_SEC, 10, RL_KEYS_MAX));
	out[4] = ret_err(kcfg(fd, 10, NS_PER_SEC, 10, RL_KEYS_USER_MAX));
	/* Raising the cap of an existing family past it: refused as well. */
	out[5] = ret_err(kcfg(fd, 10, NS_PER_SEC, 10, RL_KEYS_USER_MAX + 1ULL));
	out[6] = (int)(nkeys(fd) == 0);
	close(fd);
}

TEST_F(keyed, config_validation)
{
	static const struct {
		const char *what;
		struct rl_config c;
	} bad[] = {
		{ "rate 0", { .rate = 0, .period_ns = NS_PER_SEC, .burst = 1,
			      .flags = RL_CONFIG_KEYED } },
		{ "rate above RL_KEY_RATE_MAX",
		  { .rate = RL_KEY_RATE_MAX + 1, .period_ns = NS_PER_SEC, .burst = 1,
		    .flags = RL_CONFIG_KEYED } },
		{ "concurrency", { .rate = 10, .period_ns = NS_PER_SEC, .burst = 1,
				   .flags = RL_CONFIG_KEYED, .concurrency = 1 } },
		{ "catchup", { .rate = 10, .period_ns = NS_PER_SEC, .burst = 1,
			       .flags = RL_CONFIG_KEYED, .catchup = 2000 } },
		{ "backlog", { .rate = 10, .period_ns = NS_PER_SEC, .burst = 1,
			       .flags = RL_CONFIG_KEYED, .backlog = 1 } },
		{ "catchup and backlog",
		  { .rate = 10, .period_ns = NS_PER_SEC, .burst = 1,
		    .flags = RL_CONFIG_KEYED, .catchup = 2000, .backlog = 1000 } },
		{ "fed", { .rate = 10, .period_ns = NS_PER_SEC, .burst = 1,
			   .flags = RL_CONFIG_KEYED | RL_CONFIG_FED } },
		{ "unlimited", { .rate = 10, .period_ns = NS_PER_SEC, .burst = 1,
				 .flags = RL_CONFIG_KEYED | RL_CONFIG_UNLIMITED } },
		{ "fair per user", { .rate = 10, .period_ns = NS_PER_SEC, .burst = 1,
				     .flags = RL_CONFIG_KEYED | RL_CONFIG_FAIR_PER_USER } },
		{ "keys without keyed", { .rate = 10, .period_ns = NS_PER_SEC,
					  .burst = 1, .keys = 1 } },
		{ "keys above RL_KEYS_MAX",
		  { .rate = 10, .period_ns = NS_PER_SEC, .burst = 1,
		    .flags = RL_CONFIG_KEYED, .keys = RL_KEYS_MAX + 1ULL } },
		{ "keys ~0", { .rate = 10, .period_ns = NS_PER_SEC, .burst = 1,
			       .flags = RL_CONFIG_KEYED, .keys = ~0ULL } },
		{ "unknown flag", { .rate = 10, .period_ns = NS_PER_SEC, .burst = 1,
				    .flags = RL_CONFIG_KEYED | (1U << 31) } },
		{ "period 0", { .rate = 10, .period_ns = 0, .burst = 1,
				.flags = RL_CONFIG_KEYED } },
	};
	struct rl_config c;
	struct rl_keys_stats ks;
	int out[RUN_AS_MAX];
	unsigned int i;
	int fd;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		fd = ks_open();
		ASSERT_LE(0, fd);
		c = bad[i].c;
		errno = 0;
		EXPECT_EQ(-1, ioctl(fd, RL_IOC_SET_CONFIG, &c)) TH_LOG("%s", bad[i].what);
		EXPECT_EQ(EINVAL, errno) TH_LOG("%s", bad[i].what);
		/* Nothing was created. */
		EXPECT_ERRNO(EBADFD, kstats(fd, &ks));
		close(fd);
	}

	/* Valid: strict catch-up, the default burst, the cap's bounds. */
	fd = ks_open();
	ASSERT_LE(0, fd);
	memset(&c, 0, sizeof(c));
	c.rate = 10;
	c.period_ns = NS_PER_SEC;
	c.flags = RL_CONFIG_KEYED;
	c.catchup = RL_CATCHUP_STRICT;
	EXPECT_EQ(0, ioctl(fd, RL_IOC_SET_CONFIG, &c));
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_TRUE(c.flags & RL_CONFIG_KEYED);
	EXPECT_EQ(1, c.burst);	/* 100 ms at 10/s */
	/* 0 asked for the default: GET says 0 or the value in force. */
	EXPECT_TRUE(c.keys == 0 || c.keys == RL_KEYS_DEFAULT)
		TH_LOG("keys %llu", (unsigned long long)c.keys);
	ASSERT_EQ(0, kstats(fd, &ks));
	EXPECT_EQ(RL_KEYS_DEFAULT, ks.keys_max);
	EXPECT_EQ(0, ks.keys);
	EXPECT_EQ(0, kcfg(fd, RL_KEY_RATE_MAX, NS_PER_SEC, 1, 1));
	EXPECT_EQ(0, kcfg(fd, 1, NS_PER_SEC, 1, RL_KEYS_USER_MAX));
	/* Root: above the unprivileged cap, up to RL_KEYS_MAX. */
	EXPECT_EQ(0, kcfg(fd, 1, NS_PER_SEC, 1, RL_KEYS_MAX));
	ASSERT_EQ(0, kstats(fd, &ks));
	EXPECT_EQ(RL_KEYS_MAX, ks.keys_max);

	/* Keyed is fixed at creation: off on a keyed limiter ... */
	EXPECT_ERRNO(EINVAL, ks_set(fd, 10, NS_PER_SEC, 1, 0));
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_TRUE(c.flags & RL_CONFIG_KEYED);
	/* ... and on for a plain one. */
	close(fd);
	fd = ks_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_set(fd, 10, NS_PER_SEC, 1, 0));
	EXPECT_ERRNO(EINVAL, kcfg(fd, 10, NS_PER_SEC, 1, 0));
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_FALSE(c.flags & RL_CONFIG_KEYED);
	EXPECT_EQ(0, c.keys);
	close(fd);

	/* A cap above RL_KEYS_USER_MAX takes CAP_SYS_RESOURCE. */
	ASSERT_EQ(0, run_as(NULL, child_keys_cap, NULL, out, 10000));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(0, out[1]);
	EXPECT_EQ(EPERM, out[2]);
	EXPECT_EQ(EPERM, out[3]);
	EXPECT_EQ(0, out[4]);
	EXPECT_EQ(EPERM, out[5]);
	EXPECT_EQ(1, out[6]);
}

/* The ops a keyed limiter refuses, and the requests a key refuses. */
TEST_F(keyed, wrong_ops_and_requests)
{
	struct rl_key_acquire ka;
	struct rl_key_state st;
	struct rl_keys_stats ks;
	struct rl_acquire a;
	struct rl_config c;
	struct rl_queued q;
	struct rl_lease l;
	struct rl_stats s;
	char key[RL_KEY_MAX + 8];
	void *p;
	int fd, plain, fresh, i;

	fd = kopen(10, NS_PER_SEC, 4, 0);
	ASSERT_LE(0, fd);
	plain = ks_open();
	ASSERT_LE(0, plain);
	ASSERT_EQ(0, ks_set(plain, 10, NS_PER_SEC, 4, 0));
	fresh = ks_open();
	ASSERT_LE(0, fresh);
	memset(key, 'k', sizeof(key));

	/* The plain acquires on a keyed fd. */
	EXPECT_ERRNO(EINVAL, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_ERRNO(EINVAL, ks_acq(fd, 1, RL_DEADLINE_NONE, 0, &a));
	memset(&q, 0, sizeof(q));
	q.count = 1;
	q.deadline_ns = RL_DEADLINE_NONE;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SUBMIT, &q));
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	if (p != MAP_FAILED)
		munmap(p, 4096);
	/* GET_STATS works: sums of the keys. */
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(0, s.available);
	EXPECT_EQ(0, s.held);

	/* The key ioctls on a plain limiter and on an fd without one. */
	EXPECT_ERRNO(EINVAL, kacq(plain, key, 4, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	EXPECT_ERRNO(EINVAL, kstate(plain, key, 4, &st));
	EXPECT_ERRNO(EINVAL, kstats(plain, &ks));
	EXPECT_EQ(4, ks_avail(plain));
	EXPECT_ERRNO(EBADFD, kacq(fresh, key, 4, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	EXPECT_ERRNO(EBADFD, kstate(fresh, key, 4, &st));
	EXPECT_ERRNO(EBADFD, kstats(fresh, &ks));

	/* RL_IOC_SUBMIT_KEY's checks. */
	{
		struct rl_key_queued kq;

		EXPECT_ERRNO(EINVAL, ksub_id(plain, 1, 1, RL_DEADLINE_NONE, 0, 0, &kq));
		EXPECT_ERRNO(EBADFD, ksub_id(fresh, 1, 1, RL_DEADLINE_NONE, 0, 0, &kq));
		EXPECT_ERRNO(EINVAL, ksub_id(fd, 1, 0, RL_DEADLINE_NONE, 0, 0, &kq));
		EXPECT_ERRNO(EINVAL, ksub_id(fd, 1, 5, RL_DEADLINE_NONE, 0, 0, &kq));
		EXPECT_ERRNO(EINVAL, ksub_id(fd, 1, 1, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK, 0,
					     &kq));
		kq_fill(&kq, 1, 1, RL_DEADLINE_NONE, 0, 0);
		kq.key_len = 0;
		EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SUBMIT_KEY, &kq));
		kq.key_len = RL_KEY_MAX + 1;
		EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SUBMIT_KEY, &kq));
		kq_fill(&kq, 1, 1, RL_DEADLINE_NONE, 0, 0);
		kq.flags = 1;
		EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SUBMIT_KEY, &kq));
		for (i = 0; i < 3; i++) {
			kq_fill(&kq, 1, 1, RL_DEADLINE_NONE, 0, 0);
			kq.reserved[i] = 1;
			EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SUBMIT_KEY, &kq));
		}
		kq_fill(&kq, 1, 1, RL_DEADLINE_NONE, 0, 0);
		kq.queued.reserved0 = 1;
		EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SUBMIT_KEY, &kq));
		kq_fill(&kq, 1, 1, RL_DEADLINE_NONE, 0, 0);
		kq.queued.reserved = 1;
		EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SUBMIT_KEY, &kq));
		EXPECT_ERRNO(EFAULT, ioctl(fd, RL_IOC_SUBMIT_KEY, (void *)8));
	}

	/* A keyed limiter takes no lease, and no lease makes a limiter keyed. */
	memset(&l, 0, sizeof(l));
	l.expires_ns = now_ns() + NS_PER_SEC;
	l.config = (struct rl_config){ .rate = 10, .period_ns = NS_PER_SEC, .burst = 4 };
	l.fallback = l.config;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SET_LEASE, &l));
	l.config.flags = RL_CONFIG_KEYED;
	EXPECT_ERRNO(EINVAL, ioctl(plain, RL_IOC_SET_LEASE, &l));
	l.config.flags = 0;
	l.fallback.flags = RL_CONFIG_KEYED;
	EXPECT_ERRNO(EINVAL, ioctl(plain, RL_IOC_SET_LEASE, &l));
	ASSERT_EQ(0, ioctl(plain, RL_IOC_GET_CONFIG, &c));
	EXPECT_EQ(0, c.flags & RL_CONFIG_KEYED);
	EXPECT_ERRNO(EINVAL, kstats(plain, &ks));

	/* Key lengths. */
	EXPECT_ERRNO(EINVAL, kacq(fd, key, 0, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	EXPECT_ERRNO(EINVAL, kacq(fd, key, RL_KEY_MAX + 1, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	EXPECT_ERRNO(EINVAL, kacq(fd, key, ~0U, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	EXPECT_ERRNO(EINVAL, kstate(fd, key, 0, &st));
	EXPECT_ERRNO(EINVAL, kstate(fd, key, RL_KEY_MAX + 1, &st));
	/* Counts: 1 .. burst, never in chunks. */
	EXPECT_ERRNO(EINVAL, kacq(fd, key, 4, 0, 0, RL_ACQUIRE_NONBLOCK, &ka));
	EXPECT_ERRNO(EINVAL, kacq(fd, key, 4, 5, 0, RL_ACQUIRE_NONBLOCK, &ka));
	EXPECT_ERRNO(EINVAL, kacq(fd, key, 4, 5, RL_DEADLINE_NONE, 0, &ka));
	EXPECT_ERRNO(EINVAL, kacq(fd, key, 4, ~0ULL, 0, RL_ACQUIRE_NONBLOCK, &ka));
	/* Flags and reserved fields. */
	kreq(&ka, key, 4, 1, 0, RL_ACQUIRE_NONBLOCK);
	ka.flags = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_ACQUIRE_KEY, &ka));
	for (i = 0; i < 3; i++) {
		kreq(&ka, key, 4, 1, 0, RL_ACQUIRE_NONBLOCK);
		ka.reserved[i] = 1;
		EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_ACQUIRE_KEY, &ka));
	}
	for (i = 0; i < 2; i++) {
		kreq(&ka, key, 4, 1, 0, RL_ACQUIRE_NONBLOCK);
		ka.acquire.reserved[i] = 1;
		EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_ACQUIRE_KEY, &ka));
	}
	kreq(&ka, key, 4, 1, 0, RL_ACQUIRE_NONBLOCK | (1U << 30));
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_ACQUIRE_KEY, &ka));
	kreq(&ka, key, 4, 1, 0, RL_ACQUIRE_NONBLOCK);
	ka.acquire.priority = RL_PRIO_USER + 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_ACQUIRE_KEY, &ka));
	EXPECT_ERRNO(EFAULT, ioctl(fd, RL_IOC_ACQUIRE_KEY, (void *)8));
	memset(&st, 0, sizeof(st));
	st.key_len = 4;
	st.flags = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_GET_KEY, &st));
	memset(&ks, 0, sizeof(ks));
	ks.flags = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_GET_KEYS, &ks));
	memset(&ks, 0, sizeof(ks));
	ks.reserved0 = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_GET_KEYS, &ks));

	/* None of them created a key or took a token. */
	ASSERT_EQ(0, kstats(fd, &ks));
	EXPECT_EQ(0, ks.keys);
	EXPECT_EQ(0, ks.created);
	EXPECT_TRUE(zero(ks.reserved, sizeof(ks.reserved)));
	ASSERT_EQ(0, kstate(fd, key, 4, &st));
	EXPECT_EQ(4, st.available);
	EXPECT_EQ(0, st.kept);
	EXPECT_EQ(0, st.full_ns);
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(0, st.reserved0);
	EXPECT_TRUE(zero(st.reserved, sizeof(st.reserved)));

	/* The whole burst at once is a valid request; bytes past key_len do not count. */
	kreq(&ka, key, 4, 4, 0, RL_ACQUIRE_NONBLOCK);
	memset(ka.key + 4, 'x', RL_KEY_MAX - 4);
	EXPECT_EQ(0, ioctl(fd, RL_IOC_ACQUIRE_KEY, &ka));
	EXPECT_EQ(0, ka.acquire.lag_ns);
	EXPECT_LE(ka.acquire.ready_ns, now_ns());
	ASSERT_EQ(0, kstate(fd, key, 4, &st));
	EXPECT_EQ(0, st.available);
	EXPECT_EQ(1, st.kept);
	/* Other lengths of the same bytes are other keys; 64 bytes works. */
	ASSERT_EQ(0, kstate(fd, key, 5, &st));
	EXPECT_EQ(4, st.available);
	EXPECT_EQ(0, kacq(fd, key, RL_KEY_MAX, 4, 0, RL_ACQUIRE_NONBLOCK, &ka));
	EXPECT_EQ(0, kacq(fd, key, 1, 4, 0, RL_ACQUIRE_NONBLOCK, &ka));
	EXPECT_EQ(3, nkeys(fd));
	close(fd);
	close(plain);
	close(fresh);
}

/* ---- the bound per key, 1,000 keys, 8 processes ---- */

#define BD_KEYS		1000
#define BD_PROCS	8
#define BD_HOG_KEYS	10		/* keys 0..9 also have sleepers */
#define BD_CAP		60000		/* grants recorded per process */
#define BD_RATE		5
#define BD_PERIOD	NS_PER_SEC
#define BD_BURST	3
#define BD_SECS		3

struct bd_grant {
	__u32 key;
	__u32 count;
	__u64 before, after, ready;
};

struct bd_shared {
	__u64 start, end;
	int go;
	__u32 n[BD_PROCS + 1];
	__u64 errors[BD_PROCS + 1];
	struct bd_grant g[BD_PROCS + 1][BD_CAP];
};

static void bd_proc(struct bd_shared *sh, int fd, int p)
{
	struct rl_key_acquire ka;
	__u64 rnd = 0x9e3779b97f4a7c15ULL * (p + 1), before, after;
	unsigned int id = (unsigned int)p * (BD_KEYS / BD_PROCS);
	__u32 count;
	int ret;

	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
		sched_yield();
	for (;;) {
		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		count = 1 + (rnd & 1);
		before = now_ns();
		if (before >= sh->end)
			break;
		if (p == BD_PROCS)	/* the hog: sleeps on keys 0..9 */
			ret = kacq_id(fd, (unsigned int)(rnd % BD_HOG_KEYS), count,
				      before + 400 * NS_PER_MS, 0, &ka);
		else
			ret = kacq_id(fd, id, count, 0, RL_ACQUIRE_NONBLOCK, &ka);
		after = now_ns();
		if (!ret && sh->n[p] < BD_CAP) {
			struct bd_grant *g = &sh->g[p][sh->n[p]++];

			g->key = p == BD_PROCS ? (unsigned int)(rnd % BD_HOG_KEYS) : id;
			g->count = count;
			g->before = before;
			g->after = after;
			g->ready = ka.acquire.ready_ns;
		} else if (ret && errno != EAGAIN && errno != ETIMEDOUT) {
			sh->errors[p]++;
		}
		if (p != BD_PROCS)
			id = (id + 1) % BD_KEYS;
	}
	_exit(0);
}

static int cmp_ready(const void *a, const void *b)
{
	const struct bd_grant *x = *(struct bd_grant *const *)a, *y = *(struct bd_grant *const *)b;

	return x->ready < y->ready ? -1 : x->ready > y->ready;
}

static int cmp_after(const void *a, const void *b)
{
	const struct bd_grant *x = *(struct bd_grant *const *)a, *y = *(struct bd_grant *const *)b;

	return x->after < y->after ? -1 : x->after > y->after;
}

TEST_F_TIMEOUT(keyed, bound_per_key_8_procs, 240)
{
	const __u64 T = BD_PERIOD / BD_RATE, tau = BD_BURST * T;
	struct bd_grant **byk;
	struct bd_shared *sh;
	__u32 *kn, *koff, total = 0, i, j, k, p, off;
	__u64 worst_min = ~0ULL, most = 0, dur;
	pid_t pids[BD_PROCS + 1];
	int fd, status, bad = 0;
	struct rl_keys_stats ks;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	fd = kopen(BD_RATE, BD_PERIOD, BD_BURST, 0);
	ASSERT_LE(0, fd);
	for (p = 0; p <= BD_PROCS; p++) {
		pids[p] = fork();
		ASSERT_LE(0, pids[p]);
		if (!pids[p])
			bd_proc(sh, fd, (int)p);
	}
	sh->start = now_ns();
	sh->end = sh->start + BD_SECS * NS_PER_SEC;
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	for (p = 0; p <= BD_PROCS; p++) {
		ASSERT_EQ(pids[p], waitpid(pids[p], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
		EXPECT_EQ(0, sh->errors[p]);
		EXPECT_GT(BD_CAP, sh->n[p]);
		total += sh->n[p];
	}
	ASSERT_EQ(0, kstats(fd, &ks));
	EXPECT_EQ(0, ks.waiters);
	EXPECT_GE(ks.created, BD_KEYS);
	dur = sh->end + 400 * NS_PER_MS - sh->start;

	/* Group the grants by key. */
	kn = calloc(BD_KEYS, sizeof(*kn));
	koff = calloc(BD_KEYS + 1, sizeof(*koff));
	byk = calloc(total ? total : 1, sizeof(*byk));
	ASSERT_TRUE(kn && koff && byk);
	for (p = 0; p <= BD_PROCS; p++)
		for (i = 0; i < sh->n[p]; i++)
			kn[sh->g[p][i].key]++;
	for (k = 0, off = 0; k < BD_KEYS; k++) {
		koff[k] = off;
		off += kn[k];
		kn[k] = 0;
	}
	koff[BD_KEYS] = off;
	for (p = 0; p <= BD_PROCS; p++)
		for (i = 0; i < sh->n[p]; i++) {
			k = sh->g[p][i].key;
			byk[koff[k] + kn[k]++] = &sh->g[p][i];
		}

	for (k = 0; k < BD_KEYS && bad < 10; k++) {
		struct bd_grant **g = byk + koff[k];
		__u32 n = kn[k];
		__u64 tokens = 0;

		for (i = 0; i < n; i++) {
			tokens += g[i]->count;
			/* The tokens existed at or before the grant. */
			if (g[i]->ready > g[i]->after) {
				TH_LOG("key %u: ready %llu after the grant %llu", k,
				       (unsigned long long)g[i]->ready,
				       (unsigned long long)g[i]->after);
				bad++;
			}
		}
		/* By ready_ns: each grant's tokens come T apart. */
		qsort(g, n, sizeof(*g), cmp_ready);
		for (i = 1; i < n; i++)
			if (g[i]->ready < g[i - 1]->ready + g[i]->count * T) {
				TH_LOG("key %u: grants at ready %llu then %llu of %u",
				       k, (unsigned long long)g[i - 1]->ready,
				       (unsigned long long)g[i]->ready, g[i]->count);
				bad++;
			}
		/*
		 * By the callers' clocks: the grants known to lie within
		 * [before_i, after_j] hold at most burst + rate (b - a) / period.
		 */
		qsort(g, n, sizeof(*g), cmp_after);
		for (i = 0; i < n; i++) {
			__u64 in = 0;

			for (j = i; j < n; j++) {
				if (g[j]->before < g[i]->before)
					continue;
				in += g[j]->count;
				if (in * BD_PERIOD > BD_BURST * BD_PERIOD +
				    BD_RATE * (g[j]->after - g[i]->before)) {
					TH_LOG("key %u: %llu tokens in %llu ns", k,
					       (unsigned long long)in,
					       (unsigned long long)(g[j]->after - g[i]->before));
					bad++;
					break;
				}
			}
		}
		/* The whole run: at most burst + rate x its length. */
		if (tokens * T > tau + dur) {
			TH_LOG("key %u: %llu tokens in the run", k, (unsigned long long)tokens);
			bad++;
		}
		if (k >= BD_HOG_KEYS && tokens < worst_min)
			worst_min = tokens;
		if (tokens > most)
			most = tokens;
	}
	EXPECT_EQ(0, bad);
	ksft_print_msg("%u grants; tokens per key: least %llu, most %llu, bound %llu\n",
		       total, (unsigned long long)worst_min, (unsigned long long)most,
		       (unsigned long long)((tau + dur) / T));
	/*
	 * No borrowing: the keys without sleepers got their burst and at
	 * least half the refill of the run, although keys 0..9 were drained
	 * and slept on all along.
	 */
	EXPECT_GE(worst_min, BD_BURST + (__u64)BD_RATE * BD_SECS / 2);
	free(kn);
	free(koff);
	free(byk);
	munmap(sh, sizeof(*sh));
	close(fd);
}

/* ---- eviction against the reference bucket ---- */

/*
 * One step of a try-acquire sequence on key @id against @r: the kernel's
 * answer must be the model's at some instant between the call's two
 * clock readings, and ready_ns the model's exactly where it is determined.
 */
static int ref_step(struct __test_metadata *_metadata, int fd, unsigned int id,
		    struct refbucket *r, __u64 n, int *ambiguous)
{
	struct rl_key_acquire ka;
	__u64 before, after;
	bool early, late;
	int ret, err;

	before = now_ns();
	ret = kacq_id(fd, id, n, 0, RL_ACQUIRE_NONBLOCK, &ka);
	err = errno;
	after = now_ns();
	early = ref_ok(r, n, before);
	late = ref_ok(r, n, after);
	if (early != late)
		(*ambiguous)++;
	if (ret) {
		EXPECT_EQ(EAGAIN, err);
		EXPECT_FALSE(early) TH_LOG("refused %llu tokens the model grants",
					   (unsigned long long)n);
		/* Retry-After: when the model grants them. */
		EXPECT_EQ(ref_ready(r, n), ka.acquire.ready_ns);
		return -1;
	}
	EXPECT_TRUE(late) TH_LOG("granted %llu tokens the model refuses",
				 (unsigned long long)n);
	EXPECT_EQ(0, ka.acquire.wait_ns);
	EXPECT_EQ(0, ka.acquire.lag_ns);
	if (r->tat >= after) {
		/* Not full: the answer does not depend on the instant. */
		EXPECT_EQ(ref_ready(r, n), ka.acquire.ready_ns);
	} else if (r->tat <= before) {
		/* Full: granted at t in [before, after], ready t + n T - tau. */
		EXPECT_LE(before + n * r->T - r->tau, ka.acquire.ready_ns);
		EXPECT_GE(after + n * r->T - r->tau, ka.acquire.ready_ns);
	}
	r->tat = ka.acquire.ready_ns + r->tau;
	return 0;
}

TEST_F_TIMEOUT(keyed, eviction_is_invisible, 120)
{
	const __u64 rate = 10, period = NS_PER_SEC, burst = 4;
	struct refbucket ref = { .T = period / rate, .tau = burst * period / rate };
	struct refbucket kept = ref;
	__u64 rnd = 12345, evicted0, granted = 0, refused = 0;
	struct rl_keys_stats ks;
	struct rl_key_state st;
	int fd, round, step, ambiguous = 0;
	__u64 end, t, n;

	fd = kopen(rate, period, burst, 0);
	ASSERT_LE(0, fd);
	for (round = 0; round < 3; round++) {
		for (step = 0; step < 40; step++) {
			rnd = rnd * 6364136223846793005ULL + 1442695040888963407ULL;
			n = 1 + (rnd >> 33) % burst;
			if (ref_step(_metadata, fd, 1, &ref, n, &ambiguous))
				refused++;
			else
				granted++;
			/* Key 2 is used every step, so it is never evicted. */
			ref_step(_metadata, fd, 2, &kept, 1, &ambiguous);
			sleep_ms((unsigned int)((rnd >> 40) % 60));
		}
		/* GET_KEY agrees with the model while key 1 carries state. */
		t = now_ns();
		ASSERT_EQ(0, kstate_id(fd, 1, &st));
		n = now_ns();
		if (ref.tat > n) {
			EXPECT_EQ(1, st.kept);
			EXPECT_EQ(ref.tat, st.full_ns);
			EXPECT_LE((t + ref.tau - ref.tat) / ref.T, st.available);
			EXPECT_GE((n + ref.tau - ref.tat) / ref.T, st.available);
		}
		/* Key 1 idles until it is dropped; key 2 goes on. */
		ASSERT_EQ(0, kstats(fd, &ks));
		evicted0 = ks.evicted;
		end = now_ns() + 15 * NS_PER_SEC;
		for (;;) {
			ASSERT_EQ(0, kstate_id(fd, 1, &st));
			if (!st.kept)
				break;
			ASSERT_GT(end, now_ns()) TH_LOG("key 1 never evicted");
			ref_step(_metadata, fd, 2, &kept, 1, &ambiguous);
			sleep_ms(50);
		}
		ASSERT_EQ(0, kstats(fd, &ks));
		EXPECT_LT(evicted0, ks.evicted);
		/* Dropped: as a new key, full, no waiters. */
		EXPECT_EQ(burst, st.available);
		EXPECT_EQ(0, st.full_ns);
		EXPECT_EQ(0, st.waiters);
		ASSERT_EQ(0, kstate_id(fd, 2, &st));
		EXPECT_EQ(1, st.kept);
	}
	ksft_print_msg("key 1: %llu granted, %llu refused, %d answers at a boundary\n",
		       (unsigned long long)granted, (unsigned long long)refused, ambiguous);
	EXPECT_LT(0, granted);
	EXPECT_LT(0, refused);
	close(fd);
}

/* ---- order per key, independence across keys ---- */

TEST_F_TIMEOUT(keyed, fifo_per_key, 60)
{
	const __u64 T = 200 * NS_PER_MS;
	struct ksleeper a[4], b;
	struct rl_key_acquire ka;
	int order[5], order_len = 0, fd, i;
	__u64 late, most = 0;

	fd = kopen(1, T, 1, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kacq_id(fd, 10, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	ASSERT_EQ(0, kacq_id(fd, 11, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	/* Four sleepers on key 10, one after the other, the first wanting most. */
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, ksleeper_start(&a[i], fd, 10, 1, RL_DEADLINE_NONE,
					    order, &order_len, i));
		ASSERT_EQ(0, wait_key_waiters(fd, 10, (__u64)i + 1, 5000));
	}
	/* A try on key 10 is behind them all; on a fresh key, at once. */
	EXPECT_ERRNO(EAGAIN, kacq_id(fd, 10, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	EXPECT_EQ(0, kacq_id(fd, 12, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	/* One sleeper on key 11: served after about T, not behind key 10's. */
	ASSERT_EQ(0, ksleeper_start(&b, fd, 11, 1, RL_DEADLINE_NONE, order, &order_len, 4));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, ksleeper_join(&a[i], 10000));
	ASSERT_EQ(0, ksleeper_join(&b, 10000));
	ASSERT_EQ(5, order_len);
	/*
	 * Each next in line is granted one T after the one before it, or
	 * later when it woke late (burst 1 keeps nothing for it meanwhile).
	 */
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(0, a[i].ret);
		if (!i)
			continue;
		EXPECT_LE(a[i - 1].ka.acquire.ready_ns + T, a[i].ka.acquire.ready_ns);
		late = a[i].ka.acquire.ready_ns - a[i - 1].ka.acquire.ready_ns - T;
		if (late > most)
			most = late;
	}
	ksft_print_msg("key 10's sleepers: granted up to %.3f ms after their turn\n",
		       most / 1e6);
	EXPECT_GT(NS_PER_SEC, most);
	EXPECT_EQ(0, b.ret);
	/* Key 10's order, with key 11's sleeper among the first two. */
	for (i = 0, order_len = 0; i < 5; i++)
		if (order[i] != 4)
			EXPECT_EQ(order_len++, order[i]);
	EXPECT_TRUE(order[0] == 4 || order[1] == 4) TH_LOG("key 11 waited for key 10");
	EXPECT_GT(2 * T, b.ka.acquire.wait_ns);
	EXPECT_EQ(0, key_waiters(fd, 10));
	close(fd);
}

/*
 * A key's slot moves while requests sleep on it: the stripes' tables grow
 * under thousands of new keys, then, at the cap, idle keys are dropped
 * and the keys after them move back. The sleepers stay in line, in order,
 * each served one period after the one before it, and the key's count of
 * sleepers follows them.
 */
TEST_F_TIMEOUT(keyed, sleepers_keep_their_key_while_slots_move, 60)
{
	const __u64 T = 1000 * NS_PER_MS;
	const unsigned int keys = 4096, sleepers = 3;
	int order[3], order_len = 0, fd, i;
	struct rl_key_acquire ka;
	struct rl_keys_stats ks;
	struct ksleeper a[3];
	unsigned int id;

	fd = kopen(1, T, 1, keys);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kacq_id(fd, 0, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	for (i = 0; i < (int)sleepers; i++) {
		ASSERT_EQ(0, ksleeper_start(&a[i], fd, 0, 1, RL_DEADLINE_NONE,
					    order, &order_len, i));
		ASSERT_EQ(0, wait_key_waiters(fd, 0, (__u64)i + 1, 5000));
	}
	/* The tables grow from 4 slots a stripe: every key is moved. */
	for (id = 1; id < keys; id++)
		ASSERT_EQ(0, kacq_id(fd, id, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	EXPECT_EQ(sleepers, key_waiters(fd, 0));
	/* Once those are idle, new keys at the cap drop them, moving others back. */
	ASSERT_EQ(0, ksleeper_join(&a[0], 5000));
	sleep_ms(T / NS_PER_MS / 4);
	for (id = keys; id < 2 * keys; id++) {
		int ret = kacq_id(fd, id, 1, 0, RL_ACQUIRE_NONBLOCK, &ka);

		ASSERT_TRUE(!ret || errno == ENOSPC) TH_LOG("key %u: %s", id, strerror(errno));
	}
	ASSERT_EQ(0, kstats(fd, &ks));
	ksft_print_msg("%llu keys evicted, %llu refused, while the key's sleepers waited\n",
		       (unsigned long long)ks.evicted, (unsigned long long)ks.refused);
	EXPECT_LT(keys / 2, ks.evicted);
	EXPECT_EQ(sleepers - 1, key_waiters(fd, 0));
	for (i = 1; i < (int)sleepers; i++)
		ASSERT_EQ(0, ksleeper_join(&a[i], 10000));
	ASSERT_EQ((int)sleepers, order_len);
	for (i = 0; i < (int)sleepers; i++) {
		EXPECT_EQ(0, a[i].ret);
		EXPECT_EQ(i, order[i]);
		if (i)
			EXPECT_LE(a[i - 1].ka.acquire.ready_ns + T, a[i].ka.acquire.ready_ns);
	}
	EXPECT_EQ(0, key_waiters(fd, 0));
	close(fd);
}

/* ---- timeouts, signals and kill -9 take nothing ---- */

static void kill_sleeper_child(int fd)
{
	struct rl_key_acquire ka;

	kacq_id(fd, 7, 2, RL_DEADLINE_NONE, 0, &ka);
	_exit(1);
}

TEST_F_TIMEOUT(keyed, cancelled_requests_take_nothing, 60)
{
	const __u64 T = HOUR / 4;
	struct rl_key_acquire ka;
	struct rl_key_state st0, st;
	struct rl_keys_stats ks;
	struct rl_stats s0, s;
	struct ksleeper w;
	__u64 r0, t;
	pid_t pid;
	int fd, status;

	/* 4 per hour, burst 4: nothing comes back during the test. */
	fd = kopen(4, HOUR, 4, 0);
	ASSERT_LE(0, fd);
	t = now_ns();
	ASSERT_EQ(0, kacq_id(fd, 7, 3, 0, RL_ACQUIRE_NONBLOCK, &ka));
	ASSERT_EQ(0, kstate_id(fd, 7, &st0));
	EXPECT_EQ(1, st0.available);
	/* Full again 3 T after the grant; its tokens existed T before it. */
	EXPECT_LE(t + 3 * T, st0.full_ns);
	EXPECT_GE(now_ns() + 3 * T, st0.full_ns);
	if (st0.full_ns >= 4 * T)
		EXPECT_EQ(st0.full_ns - 4 * T, ka.acquire.ready_ns);
	/* The tat the key owes from: full_ns = r0 + 4 T. */
	r0 = st0.full_ns - 4 * T;
	ASSERT_EQ(0, ks_stats(fd, &s0));

	/* A timeout, after sleeping; and a predicted one, at once. */
	t = now_ns();
	EXPECT_ERRNO(ETIMEDOUT, kacq_id(fd, 7, 2, t + 100 * NS_PER_MS, 0, &ka));
	EXPECT_LE(t + 100 * NS_PER_MS, now_ns());
	EXPECT_EQ(r0 + 2 * T, ka.acquire.ready_ns);
	EXPECT_ERRNO(ETIMEDOUT, kacq_id(fd, 7, 2, t + NS_PER_SEC, RL_ACQUIRE_PREDICT, &ka));
	EXPECT_EQ(r0 + 2 * T, ka.acquire.ready_ns);

	/* A signal without SA_RESTART: EINTR. */
	ASSERT_EQ(0, catch_signal(SIGUSR1, 0));
	ASSERT_EQ(0, ksleeper_start(&w, fd, 7, 2, RL_DEADLINE_NONE, NULL, NULL, 0));
	ASSERT_EQ(0, wait_key_waiters(fd, 7, 1, 5000));
	pthread_kill(w.th, SIGUSR1);
	ASSERT_EQ(0, ksleeper_join(&w, 5000));
	EXPECT_EQ(-1, w.ret);
	EXPECT_EQ(EINTR, w.err);
	EXPECT_EQ(1, signal_hits());

	/* With SA_RESTART: the call goes on to its absolute deadline. */
	ASSERT_EQ(0, catch_signal(SIGUSR1, SA_RESTART));
	t = now_ns() + 600 * NS_PER_MS;
	ASSERT_EQ(0, ksleeper_start(&w, fd, 7, 2, t, NULL, NULL, 0));
	ASSERT_EQ(0, wait_key_waiters(fd, 7, 1, 5000));
	pthread_kill(w.th, SIGUSR1);
	ASSERT_EQ(0, ksleeper_join(&w, 5000));
	EXPECT_EQ(-1, w.ret);
	EXPECT_EQ(ETIMEDOUT, w.err);
	EXPECT_EQ(1, signal_hits());
	EXPECT_LE(t, w.t_end);
	signal(SIGUSR1, SIG_DFL);

	/* kill -9 of a sleeping process. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		kill_sleeper_child(fd);
	ASSERT_EQ(0, wait_key_waiters(fd, 7, 1, 5000));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));

	/* As if none of them had asked. */
	ASSERT_EQ(0, kstate_id(fd, 7, &st));
	EXPECT_EQ(st0.available, st.available);
	EXPECT_EQ(st0.full_ns, st.full_ns);
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(1, st.kept);
	ASSERT_EQ(0, kstats(fd, &ks));
	EXPECT_EQ(0, ks.waiters);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(s0.granted, s.granted);
	EXPECT_EQ(0, s.waiters);
	EXPECT_LE(s0.timeouts + 3, s.timeouts);
	EXPECT_LE(s0.interrupted + 2, s.interrupted);
	/* The next grant is the one the key owed before: ready r0 + T. */
	EXPECT_EQ(0, kacq_id(fd, 7, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	EXPECT_EQ(r0 + T, ka.acquire.ready_ns);
	EXPECT_ERRNO(EAGAIN, kacq_id(fd, 7, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	EXPECT_EQ(r0 + 2 * T, ka.acquire.ready_ns);
	close(fd);
}

/* ---- queued requests of a key: RL_IOC_SUBMIT_KEY, poll, COLLECT, CANCEL ---- */

TEST_F_TIMEOUT(keyed, queued_in_line_with_sleepers, 60)
{
	const __u64 T = 200 * NS_PER_MS;
	struct rl_key_queued kq;
	struct rl_keys_stats ks;
	struct rl_queued q1, q2;
	struct pollfd pfd;
	struct ksleeper w;
	__u64 t1, t2;
	int fd;

	fd = kopen(1, T, 1, 0);
	ASSERT_LE(0, fd);
	/* A full key: granted at once, ticket 0, nothing to collect. */
	ASSERT_EQ(0, ksub_id(fd, 20, 1, RL_DEADLINE_NONE, 0, 5, &kq));
	EXPECT_EQ(0, kq.queued.ticket);
	EXPECT_EQ(0, kq.queued.result);
	EXPECT_LE(kq.queued.ready_ns, now_ns());
	/* Then in line: a ticket, a sleeper behind it, a ticket behind both. */
	ASSERT_EQ(0, ksub_id(fd, 20, 1, RL_DEADLINE_NONE, 0, 7, &kq));
	t1 = kq.queued.ticket;
	EXPECT_LT(0, t1);
	EXPECT_EQ(0, kq.queued.ready_ns);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	ASSERT_EQ(0, ksleeper_start(&w, fd, 20, 1, RL_DEADLINE_NONE, NULL, NULL, 0));
	ASSERT_EQ(0, wait_key_waiters(fd, 20, 2, 5000));
	ASSERT_EQ(0, ksub_id(fd, 20, 1, RL_DEADLINE_NONE, 0, 9, &kq));
	t2 = kq.queued.ticket;
	EXPECT_LT(t1, t2);
	EXPECT_EQ(3, key_waiters(fd, 20));
	/* Another key waits for none of them. */
	ASSERT_EQ(0, ksub_id(fd, 21, 1, RL_DEADLINE_NONE, 0, 0, &kq));
	EXPECT_EQ(0, kq.queued.ticket);

	/* Served in arrival order, one T apart (burst 1). */
	ASSERT_EQ(0, kcollect(fd, &q1, 5000));
	EXPECT_EQ(t1, q1.ticket);
	EXPECT_EQ(0, q1.result);
	EXPECT_EQ(7, q1.user_data);
	EXPECT_EQ(1, q1.count);
	EXPECT_LT(0, q1.wait_ns);
	EXPECT_EQ(0, q1.lag_ns);
	ASSERT_EQ(0, ksleeper_join(&w, 5000));
	EXPECT_EQ(0, w.ret);
	EXPECT_LE(q1.ready_ns + T, w.ka.acquire.ready_ns);
	ASSERT_EQ(0, kcollect(fd, &q2, 5000));
	EXPECT_EQ(t2, q2.ticket);
	EXPECT_EQ(0, q2.result);
	EXPECT_EQ(9, q2.user_data);
	EXPECT_LE(w.ka.acquire.ready_ns + T, q2.ready_ns);
	/* Nothing more to collect. */
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_ERRNO(EAGAIN, ioctl(fd, RL_IOC_COLLECT, &q1));
	ASSERT_EQ(0, kstats(fd, &ks));
	EXPECT_EQ(0, ks.waiters);
	close(fd);
}

TEST_F_TIMEOUT(keyed, queued_timeout_cancel_close, 60)
{
	const __u64 T = HOUR / 4;
	struct rl_key_state st0, st;
	struct rl_key_acquire ka;
	struct rl_key_queued kq;
	struct rl_config c = { .rate = 4, .period_ns = HOUR, .burst = 4,
			       .flags = RL_CONFIG_KEYED };
	struct rl_stats s0, s;
	struct rl_queued q;
	__u64 r0, t, id;
	int fd, fd2, i;
	char name[32];

	/* 4 per hour, burst 4: nothing comes back during the test. Named, for two files. */
	snprintf(name, sizeof(name), "kq-%d", getpid());
	fd = ks_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_att_cfg(fd, name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600, &c));
	ASSERT_EQ(0, kacq_id(fd, 7, 3, 0, RL_ACQUIRE_NONBLOCK, &ka));
	ASSERT_EQ(0, kstate_id(fd, 7, &st0));
	r0 = st0.full_ns - 4 * T;
	ASSERT_EQ(0, ks_stats(fd, &s0));

	/* The deadline passes in line: -ETIMEDOUT collected, nothing taken. */
	t = now_ns();
	ASSERT_EQ(0, ksub_id(fd, 7, 2, t + 100 * NS_PER_MS, 0, 1, &kq));
	id = kq.queued.ticket;
	EXPECT_LT(0, id);
	ASSERT_EQ(0, kcollect(fd, &q, 5000));
	EXPECT_EQ(id, q.ticket);
	EXPECT_EQ(-ETIMEDOUT, q.result);
	EXPECT_EQ(r0 + 2 * T, q.ready_ns);
	EXPECT_LE(t + 100 * NS_PER_MS, now_ns());
	/* Predicted late: -ETIMEDOUT at once, ready_ns written. */
	EXPECT_ERRNO(ETIMEDOUT, ksub_id(fd, 7, 2, now_ns() + NS_PER_SEC, RL_ACQUIRE_PREDICT, 0,
					&kq));
	EXPECT_EQ(0, kq.queued.ticket);
	EXPECT_EQ(r0 + 2 * T, kq.queued.ready_ns);

	/* Cancelled in line: gone, nothing to collect, nothing taken. */
	ASSERT_EQ(0, ksub_id(fd, 7, 2, RL_DEADLINE_NONE, 0, 0, &kq));
	id = kq.queued.ticket;
	EXPECT_EQ(1, key_waiters(fd, 7));
	EXPECT_EQ(0, ioctl(fd, RL_IOC_CANCEL, &id));
	EXPECT_ERRNO(ENOENT, ioctl(fd, RL_IOC_CANCEL, &id));
	EXPECT_ERRNO(EAGAIN, ioctl(fd, RL_IOC_COLLECT, &q));
	EXPECT_EQ(0, key_waiters(fd, 7));

	/* RL_QUEUED_MAX tickets per fd, then EBUSY; CANCEL of 0 ends them all. */
	for (i = 0; i < RL_QUEUED_MAX; i++) {
		ASSERT_EQ(0, ksub_id(fd, 7, 2, RL_DEADLINE_NONE, 0, 0, &kq));
		ASSERT_LT(0, kq.queued.ticket);
	}
	EXPECT_ERRNO(EBUSY, ksub_id(fd, 7, 2, RL_DEADLINE_NONE, 0, 0, &kq));
	EXPECT_EQ(RL_QUEUED_MAX, key_waiters(fd, 7));
	id = 0;
	EXPECT_EQ(0, ioctl(fd, RL_IOC_CANCEL, &id));
	EXPECT_EQ(0, key_waiters(fd, 7));

	/* Close with tickets in line: another file of the limiter's. */
	fd2 = ks_open();
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ks_att_cfg(fd2, name, 0, 0, &c));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, ksub_id(fd2, 7, 2, RL_DEADLINE_NONE, 0, 0, &kq));
	EXPECT_EQ(3, key_waiters(fd, 7));
	close(fd2);
	EXPECT_EQ(0, key_waiters(fd, 7));

	/* As if none had asked: the key owes what it owed, nobody in line. */
	ASSERT_EQ(0, kstate_id(fd, 7, &st));
	EXPECT_EQ(st0.available, st.available);
	EXPECT_EQ(st0.full_ns, st.full_ns);
	EXPECT_EQ(0, st.waiters);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(s0.granted, s.granted);
	EXPECT_LE(s0.timeouts + 2, s.timeouts);
	EXPECT_LE(s0.interrupted + 1 + RL_QUEUED_MAX + 3, s.interrupted);
	EXPECT_EQ(0, kacq_id(fd, 7, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	EXPECT_EQ(r0 + T, ka.acquire.ready_ns);

	/* Tickets still in line when the last fd closes: freed with it. */
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, ksub_id(fd, 7, 1, RL_DEADLINE_NONE, 0, 0, &kq));
	close(fd);
}

/* ---- close, the cap ---- */

TEST_F_TIMEOUT(keyed, close_frees_keys, 60)
{
	struct rl_key_acquire ka;
	struct rl_keys_stats ks;
	unsigned int i;
	int fd, dup_fd;

	fd = kopen(1, HOUR, 1, 0);
	ASSERT_LE(0, fd);
	for (i = 0; i < 1000; i++)
		ASSERT_EQ(0, kacq_id(fd, i, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	ASSERT_EQ(0, kstats(fd, &ks));
	EXPECT_EQ(1000, ks.keys);
	EXPECT_EQ(1000, ks.created);
	EXPECT_EQ(0, ks.evicted);
	/* The keys live while an fd of the limiter does. */
	dup_fd = dup(fd);
	close(fd);
	EXPECT_EQ(1000, nkeys(dup_fd));
	EXPECT_ERRNO(EAGAIN, kacq_id(dup_fd, 5, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	close(dup_fd);
	/* A new private family starts with none. */
	fd = kopen(1, HOUR, 1, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kstats(fd, &ks));
	EXPECT_EQ(0, ks.keys);
	EXPECT_EQ(0, ks.created);
	EXPECT_EQ(0, kacq_id(fd, 5, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	close(fd);
}

TEST_F_TIMEOUT(keyed, cap_enospc_then_room, 60)
{
	const __u64 T = 500 * NS_PER_MS;
	struct rl_key_acquire ka;
	struct rl_keys_stats ks;
	struct rl_key_state st;
	unsigned int i, late = 0;
	__u64 t, end;
	int fd, ret;

	fd = kopen(1, T, 1, 64);
	ASSERT_LE(0, fd);
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, kacq_id(fd, i, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	ASSERT_EQ(0, kstats(fd, &ks));
	EXPECT_EQ(64, ks.keys);
	EXPECT_EQ(64, ks.keys_max);
	EXPECT_EQ(0, ks.refused);
	/* A 65th: ENOSPC, with a time room comes back at. */
	t = now_ns();
	EXPECT_ERRNO(ENOSPC, kacq_id(fd, 64, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	EXPECT_LT(t, ka.acquire.ready_ns);
	EXPECT_GE(now_ns() + T, ka.acquire.ready_ns);
	/* Blocking or not, the same; nothing is created. */
	EXPECT_ERRNO(ENOSPC, kacq_id(fd, 65, 1, RL_DEADLINE_NONE, 0, &ka));
	ASSERT_EQ(0, kstate_id(fd, 64, &st));
	EXPECT_EQ(0, st.kept);
	EXPECT_EQ(1, st.available);
	/* The kept keys go on: EAGAIN, not ENOSPC. */
	EXPECT_ERRNO(EAGAIN, kacq_id(fd, 3, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	ASSERT_EQ(0, kstats(fd, &ks));
	EXPECT_EQ(64, ks.keys);
	EXPECT_EQ(2, ks.refused);
	/* Once the keys refilled, new keys get room again. */
	sleep_ms(T / NS_PER_MS + 50);
	for (i = 100; i < 164; i++) {
		end = now_ns() + 5 * NS_PER_SEC;
		while ((ret = kacq_id(fd, i, 1, 0, RL_ACQUIRE_NONBLOCK, &ka)) &&
		       errno == ENOSPC && now_ns() < end) {
			late++;
			sleep_ms(20);
		}
		ASSERT_EQ(0, ret) TH_LOG("new key %u: %s", i, strerror(errno));
	}
	ASSERT_EQ(0, kstats(fd, &ks));
	EXPECT_GE(64, ks.keys);
	EXPECT_LE(64, ks.evicted);
	ksft_print_msg("room for 64 new keys after %u refusals\n", late);
	close(fd);
}

/* ---- a flood of keys from an unprivileged process ---- */

#define FLOOD_KEYS	1000000
/* Time the flood may take: the guest runs a test binary for 300 s at most. */
#define FLOOD_SECS	200

struct flood_arg {
	unsigned int keys;
	__u64 secs;
};

static void child_flood(void *arg, int *out)
{
	const struct flood_arg *fa = arg;
	__u64 rnd = 0x2545f4914f6cdd1dULL ^ (__u64)getpid(), granted = 0, nospc = 0;
	__u64 other = 0, most = 0, t0 = now_ns(), end = t0 + fa->secs * NS_PER_SEC, t_cap = 0;
	struct rl_key_acquire ka;
	struct rl_keys_stats ks;
	unsigned int i, j;
	__u32 len;
	int fd, ret;

	fd = kopen(1, HOUR, 1, 0);
	out[0] = fd < 0 ? errno : 0;
	for (i = 0; i < fa->keys && now_ns() < end; i++) {
		kreq(&ka, "", 0, 1, 0, RL_ACQUIRE_NONBLOCK);
		/* 4 to 64 random bytes: distinct keys, but for a rare collision. */
		len = 4 + (__u32)(rnd % (RL_KEY_MAX - 3));
		for (j = 0; j < len; j++) {
			rnd ^= rnd << 13;
			rnd ^= rnd >> 7;
			rnd ^= rnd << 17;
			ka.key[j] = (__u8)rnd;
		}
		ka.key_len = len;
		ret = ioctl(fd, RL_IOC_ACQUIRE_KEY, &ka);
		if (!ret) {
			granted++;
		} else if (errno == ENOSPC) {
			if (!nospc++)
				t_cap = now_ns();
		} else if (errno != EAGAIN) {	/* a rare collision is EAGAIN */
			other++;
		}
		if ((i & 4095) == 0 && !kstats(fd, &ks) && ks.keys > most)
			most = ks.keys;
	}
	if (!kstats(fd, &ks) && ks.keys > most)
		most = ks.keys;
	out[1] = (int)i;
	out[2] = (int)granted;
	out[3] = (int)nospc;
	out[4] = (int)other;
	out[5] = (int)most;
	out[6] = (int)ks.keys_max;
	out[7] = (int)ks.refused;
	/* ns per request before the cap, and past it. */
	out[8] = t_cap && granted ? (int)((t_cap - t0) / granted) : -1;
	out[9] = t_cap && i > granted ? (int)((now_ns() - t_cap) / (i - granted)) : -1;
	close(fd);
}

TEST_F_TIMEOUT(keyed, hostile_flood_bounded, 600)
{
	struct ks_cred nobody = { .uid = NOBODY, .gid = NOBODY };
	struct flood_arg fa = { .keys = FLOOD_KEYS, .secs = FLOOD_SECS };
	struct rl_key_acquire ka;
	struct ks_child ch;
	int out[RUN_AS_MAX], fd, i = 0, fails = 0;
	__u64 t0, t1, t, slowest = 0;

	if (getenv("RL_KEYED_FLOOD"))
		fa.keys = (unsigned int)strtoul(getenv("RL_KEYED_FLOOD"), NULL, 0);
	/* Another family, another user's: works throughout. */
	fd = kopen(1000, NS_PER_SEC, 1000, 100000);
	ASSERT_LE(0, fd);
	t0 = now_ns();
	ASSERT_EQ(0, child_start(&ch, &nobody, child_flood, &fa));
	for (;;) {
		struct pollfd pfd = { .fd = ch.fd, .events = POLLIN };

		/* The child writes its results when it is done. */
		if (poll(&pfd, 1, 0) || i >= 50000)
			break;
		t = now_ns();
		if (kacq_id(fd, (unsigned int)i++, 1, 0, RL_ACQUIRE_NONBLOCK, &ka))
			fails++;
		t = now_ns() - t;
		if (t > slowest)
			slowest = t;
		if (!(i % 100))
			sleep_ms(10);
	}
	ASSERT_EQ(0, child_finish(&ch, out, 600000));
	t1 = now_ns();
	EXPECT_EQ(0, fails);
	EXPECT_EQ(0, out[0]);
	ksft_print_msg("flood: %d keys in %.1f s: %d granted, %d ENOSPC, %d other\n",
		       out[1], (t1 - t0) / 1e9, out[2], out[3], out[4]);
	ksft_print_msg("flood: most kept %d of %d; ns per request: %d before the cap, %d past it\n",
		       out[5], out[6], out[8], out[9]);
	ksft_print_msg("the other family: %d requests, %d failed, slowest %.3f ms\n",
		       i, fails, slowest / 1e6);
	EXPECT_LT(0, i);
	EXPECT_EQ(RL_KEYS_DEFAULT, out[6]);
	EXPECT_GE(out[6], out[5]);
	EXPECT_EQ(0, out[4]);
	/* Every new key past the cap failed clearly. */
	EXPECT_EQ(out[3], out[7]);
	if (out[1] > RL_KEYS_DEFAULT) {
		EXPECT_LE(RL_KEYS_DEFAULT - 16, out[2]);
		EXPECT_LT(0, out[3]);
	}
	/*
	 * A slow (debug) kernel may not get through them all in the time:
	 * far past the cap is what counts.
	 */
	if (out[1] < (int)fa.keys)
		ksft_print_msg("flood: stopped at %d of %u keys by its time limit\n",
			       out[1], fa.keys);
	EXPECT_LE(4 * RL_KEYS_DEFAULT, out[1]);
	EXPECT_EQ(0, kacq_id(fd, 1u << 30, 1, 0, RL_ACQUIRE_NONBLOCK, &ka));
	close(fd);
}

TEST_HARNESS_MAIN
