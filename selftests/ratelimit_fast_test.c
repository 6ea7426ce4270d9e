// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of /dev/ratelimit: acquires without a system call
 * (RL_FEATURE_FAST): the reservation page an fd maps, and the library's
 * rl_acquire() and rl_try_acquire() taking from it. The checks of mmap();
 * that a grant at once tops the page up and what it takes counts in the
 * statistics; that reserved tokens count as taken (the bucket refills to
 * the burst less them); that a request that would wait or fail takes them
 * back first, so a sleeper is never overtaken; that a change of limits, a
 * cap, a tree, close and kill -9 give them back; that a value written into
 * the page forges nothing; that an fd which may only acquire cannot map;
 * and the limiter's bound with mapped and unmapped processes mixed.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"
#include "libratelimit.h"

/* A period in which a test sees no token come. */
#define HOUR	(3600 * NS_PER_SEC)

/* The page of @fd, or MAP_FAILED with errno set. */
static struct rl_fast *fmap(int fd)
{
	return mmap(NULL, RL_FAST_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
}

static __u64 ks_nclients(int fd)
{
	struct rl_stats s;

	return ks_stats(fd, &s) ? POISON64 : s.clients;
}

static __u64 page_tokens(const struct rl_fast *f)
{
	return __atomic_load_n(&f->tokens, __ATOMIC_ACQUIRE);
}

/* A private limiter of @rate per @period, burst @burst, mapped at *@f. */
static int mapped(struct __test_metadata *_metadata, __u64 rate, __u64 period,
		  __u64 burst, struct rl_fast **f)
{
	int fd = ks_open();

	EXPECT_LE(0, fd);
	EXPECT_EQ(0, ks_set(fd, rate, period, burst, 0));
	*f = fmap(fd);
	EXPECT_NE(MAP_FAILED, *f);
	return fd;
}

/* Take @n from @f as the library does; 1 if taken. */
static int take(struct rl_fast *f, __u64 n)
{
	__u64 t = page_tokens(f);

	while (t >= n)
		if (__atomic_compare_exchange_n(&f->tokens, &t, t - n, 1,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			__atomic_fetch_add(&f->acquires, 1, __ATOMIC_RELAXED);
			return 1;
		}
	return 0;
}

TEST(feature)
{
	struct rl_features f;
	char line[256] = "";
	FILE *fp;
	int fd = ks_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, rl_get_features(fd, &f));
	EXPECT_TRUE(f.flags & RL_FEATURE_FAST);
	fp = fopen(KS_SYSFS "/features", "r");
	ASSERT_NE(NULL, fp);
	ASSERT_NE(NULL, fgets(line, sizeof(line), fp));
	fclose(fp);
	EXPECT_NE(NULL, strstr(line, " fast"));
	close(fd);
}

TEST(map_errors)
{
	int fd = ks_open();
	void *p;

	ASSERT_LE(0, fd);
	/* No limiter yet. */
	EXPECT_EQ(MAP_FAILED, fmap(fd));
	EXPECT_EQ(EBADFD, errno);
	EXPECT_EQ(-EBADFD, rl_fast_map(fd));
	ASSERT_EQ(0, ks_set(fd, 100, NS_PER_SEC, 10, 0));
	p = mmap(NULL, RL_FAST_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, RL_FAST_SIZE);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 2 * RL_FAST_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, RL_FAST_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, RL_FAST_SIZE, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, RL_FAST_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	/* Never executable later either. */
	EXPECT_EQ(-1, mprotect(p, RL_FAST_SIZE, PROT_READ | PROT_EXEC));
	/* Every mapping is the same page. */
	EXPECT_EQ(0, rl_fast_map(fd));
	EXPECT_EQ(0, rl_fast_map(fd));
	EXPECT_EQ(0, rl_fast_unmap(fd));
	EXPECT_EQ(-ENOENT, rl_fast_unmap(fd));
	EXPECT_EQ(-EBADF, rl_fast_map(-1));
	munmap(p, RL_FAST_SIZE);
	close(fd);
}

/* A grant at once tops the page up to a chunk, at most half of what is left. */
TEST(topup_and_stats)
{
	struct rl_fast *f, *g;
	struct rl_stats s;
	int fd, i;

	fd = mapped(_metadata, 1, HOUR, 800, &f);
	EXPECT_EQ(0, page_tokens(f));
	EXPECT_EQ(0, rl_try_acquire(fd, 1, NULL));
	/* A chunk is burst / 8. */
	EXPECT_EQ(100, page_tokens(f));
	/* Available counts what a page holds: it comes back for any request. */
	EXPECT_EQ(799, ks_avail(fd));
	/* The same page through a second mapping. */
	g = fmap(fd);
	ASSERT_NE(MAP_FAILED, g);
	EXPECT_EQ(100, page_tokens(g));
	/* rl_try_acquire() and rl_acquire() take from it: no ioctl, no request seen yet. */
	ASSERT_EQ(0, rl_fast_map(fd));
	for (i = 0; i < 30; i++)
		ASSERT_EQ(0, rl_try_acquire(fd, 2, NULL));
	EXPECT_EQ(0, rl_acquire(fd, 5));
	EXPECT_EQ(35, page_tokens(f));
	EXPECT_EQ(31, f->acquires);
	/* Statistics read the page: 1 + 65 granted, 32 requests, all at once. */
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(66, s.granted);
	EXPECT_EQ(32, s.requests);
	EXPECT_EQ(32, s.immediate);
	/* Bucket 699: the next grant at once tops up to the chunk, half of it at most. */
	EXPECT_EQ(0, rl_try_acquire(fd, 40, NULL));
	EXPECT_EQ(100, page_tokens(f));
	EXPECT_EQ(799 - 40 - 65, ks_avail(fd));
	EXPECT_EQ(0, rl_fast_unmap(fd));
	munmap(g, RL_FAST_SIZE);
	munmap(f, RL_FAST_SIZE);
	close(fd);
}

/* Reserved tokens are taken: the bucket refills to the burst less them. */
TEST(reserved_count_as_taken)
{
	int fd, got = 0;
	struct rl_fast *f;
	__u64 t0, el;

	fd = mapped(_metadata, 200, NS_PER_SEC, 80, &f);
	/* 1 granted, a chunk of 10 reserved, then time fills the bucket. */
	ASSERT_EQ(0, rl_try_acquire(fd, 1, NULL));
	EXPECT_EQ(10, page_tokens(f));
	sleep_ms(600);
	EXPECT_EQ(80, ks_avail(fd));
	/* Everything there now, through the ioctl and from the page: at most the burst. */
	t0 = now_ns();
	{
		struct rl_acquire a;

		while (!ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a))
			got++;
	}
	while (take(f, 1))
		got++;
	el = now_ns() - t0;
	EXPECT_GE(80 + 200 * el / NS_PER_SEC + 1, (__u64)got);
	EXPECT_LE(70, got);
	TH_LOG("%d tokens at once of a burst of 80 (%llu us)", got,
	       (unsigned long long)(el / 1000));
	munmap(f, RL_FAST_SIZE);
	close(fd);
}

/* A named limiter "fast_NAME_PID", created: @rate per @period, and its fd. */
static int named(const char *name, __u32 mode, __u64 rate, __u64 period, __u64 burst)
{
	char n[RL_NAME_MAX];

	snprintf(n, sizeof(n), "fast_%s_%d", name, (int)getpid());
	return ks_open_att(n, RL_ATTACH_CREATE, mode, rate, period, burst);
}

/* Another fd of the limiter named() made in process @pid. */
static int named_again(const char *name, pid_t pid)
{
	char n[RL_NAME_MAX];

	snprintf(n, sizeof(n), "fast_%s_%d", name, (int)pid);
	return ks_open_att(n, 0, 0, 1, NS_PER_SEC, 1);
}

/* A sleeper takes the reservations back when it queues: no fast taker overtakes it. */
TEST(sleeper_not_overtaken)
{
	struct rl_acquire a;
	struct rl_fast *f;
	struct waiter w;
	int fd, fd2;

	fd = named("sleep", 0600, 10, NS_PER_SEC, 80);
	ASSERT_LE(0, fd);
	fd2 = named_again("sleep", getpid());
	ASSERT_LE(0, fd2);
	f = fmap(fd);
	ASSERT_NE(MAP_FAILED, f);
	/* 1 granted, a chunk of 10 reserved; the other fd takes the 69 left. */
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(10, page_tokens(f));
	ASSERT_EQ(0, ks_acq(fd2, 69, 0, RL_ACQUIRE_NONBLOCK, &a));
	/* 15 for the other fd: the page's 10 come back, it still waits. */
	ASSERT_EQ(0, waiter_start(&w, fd2, 15, RL_DEADLINE_NONE, 0));
	EXPECT_EQ(0, ks_wait_waiters(fd, 1, 3000));
	EXPECT_EQ(0, page_tokens(f));
	EXPECT_EQ(0, take(f, 1));
	/* The page's fd through the ioctl: behind the sleeper, and no top-up. */
	EXPECT_ERRNO(EAGAIN, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, page_tokens(f));
	EXPECT_EQ(0, waiter_join(&w, 5000));
	EXPECT_EQ(0, w.ret);
	munmap(f, RL_FAST_SIZE);
	close(fd2);
	close(fd);
}

/* A request that would fail takes the reservations back first. */
TEST(try_takes_back)
{
	struct rl_acquire a;
	struct rl_fast *f;
	int fd, fd2;

	fd = named("try", 0600, 1, HOUR, 16);
	ASSERT_LE(0, fd);
	fd2 = named_again("try", getpid());
	ASSERT_LE(0, fd2);
	f = fmap(fd);
	ASSERT_NE(MAP_FAILED, f);
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(2, page_tokens(f));
	/* 13 left in the bucket: 15 fit only with the page's 2. */
	EXPECT_EQ(0, ks_acq(fd2, 15, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, page_tokens(f));
	EXPECT_EQ(0, ks_avail(fd));
	munmap(f, RL_FAST_SIZE);
	close(fd2);
	close(fd);
}

/* close() and kill -9 give the reservation back. */
TEST(close_and_kill_give_back)
{
	struct rl_acquire a;
	struct rl_fast *f;
	int fd, fd2, pfd[2];
	pid_t pid, me;
	char c;

	fd = named("close", 0600, 1, HOUR, 80);
	ASSERT_LE(0, fd);
	fd2 = named_again("close", getpid());
	ASSERT_LE(0, fd2);
	f = fmap(fd2);
	ASSERT_NE(MAP_FAILED, f);
	ASSERT_EQ(0, ks_acq(fd2, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(10, page_tokens(f));
	EXPECT_EQ(79, ks_avail(fd));
	/* The mapping does not keep the file: close ends the client, the page is emptied. */
	close(fd2);
	EXPECT_EQ(1, ks_nclients(fd));
	EXPECT_EQ(0, page_tokens(f));
	EXPECT_EQ(0, take(f, 1));
	EXPECT_EQ(79, ks_avail(fd));
	munmap(f, RL_FAST_SIZE);
	/* All 79 for another fd: none stayed in a page. */
	ASSERT_EQ(0, ks_acq(fd, 79, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, ks_avail(fd));
	ASSERT_EQ(0, ks_refund(fd, 79));
	EXPECT_EQ(79, ks_avail(fd));

	ASSERT_EQ(0, pipe(pfd));
	me = getpid();
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int cfd = named_again("close", me);
		struct rl_fast *cf = cfd < 0 ? MAP_FAILED : fmap(cfd);

		if (cf == MAP_FAILED || ks_acq(cfd, 1, 0, RL_ACQUIRE_NONBLOCK, &a))
			_exit(1);
		c = (char)page_tokens(cf);
		if (write(pfd[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	ASSERT_EQ(1, read(pfd[0], &c, 1));
	EXPECT_EQ(10, c);
	EXPECT_EQ(78, ks_avail(fd));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	EXPECT_EQ(1, ks_nclients(fd));
	ASSERT_EQ(0, ks_acq(fd, 78, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, ks_avail(fd));
	close(pfd[0]);
	close(fd);
}

/*
 * Without a mapping, no top-up: the kernel's next look at the pages (a
 * statistics read) takes an unmapped page back, the fd still open.
 */
TEST(unmapped_no_topup)
{
	struct rl_acquire a;
	struct rl_fast *f;
	int fd;

	fd = mapped(_metadata, 1, HOUR, 800, &f);
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(100, page_tokens(f));
	munmap(f, RL_FAST_SIZE);
	EXPECT_EQ(799, ks_avail(fd));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	f = fmap(fd);
	ASSERT_NE(MAP_FAILED, f);
	EXPECT_EQ(0, page_tokens(f));
	EXPECT_EQ(798, ks_avail(fd));
	/* Mapped again: topped up again. */
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(100, page_tokens(f));
	munmap(f, RL_FAST_SIZE);
	close(fd);
}

/* A stats field of @fd's limiter, or POISON64. */
#define stat_of(fd, field) ({ struct rl_stats _s;			\
	ks_stats(fd, &_s) ? POISON64 : (__u64)_s.field; })

/* "fast_NAME_PID" for the library's rl_open_named(). */
static const char *lname(char *buf, const char *name)
{
	snprintf(buf, RL_NAME_MAX, "fast_%s_%d", name, (int)getpid());
	return buf;
}

/* rl_open_named() of a limiter of @rate per @period, burst @burst, @conc permits. */
static int lib_named(const char *name, __u32 flags, __u32 mode, __u64 rate,
		     __u64 period, __u64 burst, __u64 conc)
{
	struct rl_config c = { .rate = rate, .period_ns = period, .burst = burst,
			       .concurrency = conc };
	char n[RL_NAME_MAX];

	return rl_open_named(lname(n, name), flags, mode, &c);
}

/*
 * close(2) of a mapped fd of the library ends its client with its last fd:
 * a forked child's copy keeps the permits until it exits, and a new fd of
 * the same number gives its own back at its close(2).
 */
TEST(close_ends_client)
{
	int fd, fd2, watch, pfd[2];
	char c = 0, n[RL_NAME_MAX];
	pid_t pid;

	fd = lib_named("conc", RL_ATTACH_CREATE, 0666, 1000, NS_PER_SEC, 10, 2);
	ASSERT_LE(0, fd);
	/* rl_open_named() mapped it: mapping again is 0, a page is there. */
	EXPECT_EQ(0, rl_fast_map(fd));
	watch = named_again("conc", getpid());
	ASSERT_LE(0, watch);
	ASSERT_EQ(0, rl_acquire(fd, 2));
	EXPECT_EQ(2, stat_of(watch, held));
	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(pfd[1]);
		_exit(read(pfd[0], &c, 1) < 0);
	}
	close(pfd[0]);
	/* The child's copy of the file holds them; then its exit gives them back. */
	close(fd);
	EXPECT_EQ(2, stat_of(watch, held));
	EXPECT_EQ(2, stat_of(watch, clients));
	close(pfd[1]);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	EXPECT_EQ(0, stat_of(watch, held));
	EXPECT_EQ(1, stat_of(watch, clients));
	/* The same number again, mapped again: its close gives its permits back. */
	fd2 = rl_open_named(lname(n, "conc"), 0, 0, NULL);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, rl_acquire(fd2, 2));
	EXPECT_EQ(2, stat_of(watch, held));
	close(fd2);
	EXPECT_EQ(0, stat_of(watch, held));
	EXPECT_EQ(1, stat_of(watch, clients));
	close(watch);
	/* A limiter that is not persistent goes with its last fd, mapped or not. */
	fd = lib_named("transient", RL_ATTACH_CREATE, 0600, 1, HOUR, 80, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, rl_try_acquire(fd, 1, NULL));
	snprintf(n, sizeof(n), KS_SYSFS "/fast_transient_%d", (int)getpid());
	EXPECT_EQ(0, access(n, F_OK));
	close(fd);
	EXPECT_NE(0, access(n, F_OK));
}

/*
 * A forked child shares the page; a close in the parent (closes goes up)
 * sends the child through the ioctl once, to map again, and nothing is
 * lost: every token is counted once when the last fd goes.
 */
TEST(fork_shares_page)
{
	int fd, watch, go[2], done[2], st;
	struct rl_fast *f;
	char c = 0;
	pid_t pid;

	fd = lib_named("fork", RL_ATTACH_CREATE, 0600, 1, HOUR, 800, 0);
	ASSERT_LE(0, fd);
	watch = named_again("fork", getpid());
	ASSERT_LE(0, watch);
	/* Through the ioctl: 1 granted, 100 reserved in the page. */
	ASSERT_EQ(0, rl_try_acquire(fd, 1, NULL));
	f = fmap(fd);
	ASSERT_NE(MAP_FAILED, f);
	ASSERT_EQ(100, page_tokens(f));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int i, ok = 1;

		for (i = 0; i < 5; i++)
			ok &= !rl_try_acquire(fd, 1, NULL);
		ok &= write(done[1], &c, 1) == 1 && read(go[0], &c, 1) == 1;
		ok &= !rl_try_acquire(fd, 1, NULL);
		_exit(!ok);
	}
	ASSERT_EQ(1, read(done[0], &c, 1));
	/* The child's five came from the page, no system call. */
	EXPECT_EQ(95, page_tokens(f));
	EXPECT_EQ(0, f->closes);
	close(fd);
	EXPECT_EQ(1, f->closes);
	EXPECT_EQ(2, stat_of(watch, clients));
	ASSERT_EQ(1, write(go[1], &c, 1));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_EQ(0, st);
	/* Mapped again after the close, the same page: the sixth came from it. */
	EXPECT_EQ(1, stat_of(watch, clients));
	EXPECT_EQ(0, page_tokens(f));
	EXPECT_EQ(7, stat_of(watch, granted));
	EXPECT_EQ(793, stat_of(watch, available));
	munmap(f, RL_FAST_SIZE);
	close(go[0]);
	close(go[1]);
	close(done[0]);
	close(done[1]);
	close(watch);
}

/*
 * dup2() over a mapped fd number: the number's takes are the new file's,
 * never from the old file's page, which is still open elsewhere.
 */
TEST(dup2_over_mapped)
{
	int x, y, keep, wx, wy;
	struct rl_fast *fx;

	x = lib_named("dupx", RL_ATTACH_CREATE, 0600, 1, HOUR, 800, 0);
	ASSERT_LE(0, x);
	y = lib_named("dupy", RL_ATTACH_CREATE, 0600, 1, HOUR, 800, 0);
	ASSERT_LE(0, y);
	wx = named_again("dupx", getpid());
	wy = named_again("dupy", getpid());
	ASSERT_LE(0, wx);
	ASSERT_LE(0, wy);
	ASSERT_EQ(0, rl_try_acquire(x, 1, NULL));
	ASSERT_EQ(0, rl_try_acquire(x, 1, NULL));
	keep = dup(x);
	ASSERT_LE(0, keep);
	fx = fmap(keep);
	ASSERT_NE(MAP_FAILED, fx);
	ASSERT_EQ(99, page_tokens(fx));
	ASSERT_EQ(x, dup2(y, x));
	/* Ten takes of number x: y's, through y's page once mapped. */
	for (int i = 0; i < 10; i++)
		ASSERT_EQ(0, rl_try_acquire(x, 1, NULL));
	EXPECT_EQ(99, page_tokens(fx));
	EXPECT_EQ(2, stat_of(wx, granted));
	EXPECT_EQ(10, stat_of(wy, granted));
	EXPECT_EQ(2, stat_of(wx, clients));
	/* x's file ends with its last fd: its page emptied, its tokens back. */
	close(keep);
	EXPECT_EQ(1, stat_of(wx, clients));
	EXPECT_EQ(0, page_tokens(fx));
	EXPECT_EQ(798, stat_of(wx, available));
	munmap(fx, RL_FAST_SIZE);
	close(x);
	close(y);
	EXPECT_EQ(1, stat_of(wy, clients));
	EXPECT_EQ(790, stat_of(wy, available));
	close(wx);
	close(wy);
}

/*
 * What a process took from its page is room in the bucket from the
 * kernel's next look on, not for the time the bucket stood at the burst
 * less the page's tokens: they may have been taken a moment before. The
 * bucket once refilled for that time too, and gave as many again at once
 * (the start of bound_mixed, seen 4 and 8 over the bound).
 */
TEST(taken_is_room_from_now_on)
{
	__u64 t0, t1, allow;
	struct rl_acquire a;
	struct rl_fast *f;
	int fa, fb, n = 0;

	fa = named("roomnow", 0600, 2000, NS_PER_SEC, 64);
	ASSERT_LE(0, fa);
	fb = named_again("roomnow", getpid());
	ASSERT_LE(0, fb);
	f = fmap(fa);
	ASSERT_NE(MAP_FAILED, f);
	/* A grant at once fills fa's page: 8 there, 55 in the bucket. */
	ASSERT_EQ(0, ks_acq(fa, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(8, page_tokens(f));
	/* The bucket reaches 56 within a ms and stands there. */
	sleep_ms(50);
	t0 = now_ns();
	while (take(f, 1))
		n++;
	/* fb is not mapped: its grants come from the bucket alone. */
	while (!ks_acq(fb, 1, 0, RL_ACQUIRE_NONBLOCK, &a))
		n++;
	t1 = now_ns();
	allow = 64 + 2000 * (t1 - t0) / NS_PER_SEC + 1;
	TH_LOG("%d taken in %llu us, %llu allowed", n,
	       (unsigned long long)(t1 - t0) / 1000, (unsigned long long)allow);
	EXPECT_GE(allow, (__u64)n);
	EXPECT_LE(64, n);
	munmap(f, RL_FAST_SIZE);
	close(fb);
	close(fa);
}

/*
 * A swap of the library's page that fails midway. mremap() and mmap() with
 * MAP_FIXED may take the old mapping away before they fail for want of
 * memory; this program is linked with --wrap=mmap,mremap so that the next
 * such call of the library does exactly that, and every such call is
 * counted by its address.
 */
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__real_mremap(void *old, size_t old_len, size_t new_len, int flags, ...);

static int fail_next;		/* MAP_FIXED or MREMAP_FIXED: the next such call fails */
static void *failed_at;		/* where it failed */
static void *fixed_at[64];	/* every fixed call's address, in order */
static int nfixed;

/* A fixed call at @addr of kind @kind: MAP_FAILED if it is to fail, else NULL. */
static void *fixed_call(int kind, void *addr)
{
	if (nfixed < (int)ARRAY_SIZE(fixed_at))
		fixed_at[nfixed++] = addr;
	if (fail_next != kind)
		return NULL;
	fail_next = 0;
	failed_at = addr;
	munmap(addr, RL_FAST_SIZE);
	errno = ENOMEM;
	return MAP_FAILED;
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (flags & MAP_FIXED && fixed_call(MAP_FIXED, addr))
		return MAP_FAILED;
	return __real_mmap(addr, len, prot, flags, fd, off);
}

void *__wrap_mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *new_addr = NULL;
	va_list ap;

	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
		if (fixed_call(MREMAP_FIXED, new_addr))
			return MAP_FAILED;
	}
	return __real_mremap(old, old_len, new_len, flags, new_addr);
}

/*
 * After a fixed call made to fail: another mapping of the process's own
 * is put where it failed (so it left a hole), for swap_check().
 */
static char *swap_failed(struct __test_metadata *_metadata, int *from)
{
	char *other;

	EXPECT_EQ(0, fail_next) TH_LOG("no such call to fail");
	other = mmap(failed_at, RL_FAST_SIZE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	EXPECT_EQ(failed_at, other) TH_LOG("the failed call left no hole");
	if (other != failed_at)
		return NULL;
	memset(other, 0x5a, RL_FAST_SIZE);
	*from = nfixed;
	return other;
}

/* Since @from, the library mapped nothing over @other, which is intact. */
static void swap_check(struct __test_metadata *_metadata, char *other, int from)
{
	int i, bad = 0;

	for (i = from; i < nfixed; i++)
		EXPECT_NE(failed_at, fixed_at[i]) TH_LOG("mapped over it at call %d", i);
	for (i = 0; i < RL_FAST_SIZE; i++)
		bad += other[i] != 0x5a;
	EXPECT_EQ(0, bad);
	munmap(other, RL_FAST_SIZE);
}

/*
 * A swap that fails midway leaves a hole where the page was, which the
 * process may fill with anything: the library forgets the address rather
 * than map over it later (the fuzzer's io_uring ring was once there).
 * Takes keep working meanwhile.
 */
TEST(swap_fails_midway)
{
	int a, b, c, num, from;
	char *other;

	/* mremap() of a new file's page to the number's old address. */
	a = lib_named("swapa", RL_ATTACH_CREATE, 0600, 1, HOUR, 800, 0);
	ASSERT_LE(0, a);
	ASSERT_EQ(0, rl_try_acquire(a, 1, NULL));
	num = a;
	close(a);
	fail_next = MREMAP_FIXED;
	b = lib_named("swapb", RL_ATTACH_CREATE, 0600, 1, HOUR, 800, 0);
	ASSERT_EQ(num, b);
	other = swap_failed(_metadata, &from);
	ASSERT_NE(NULL, other);
	ASSERT_EQ(0, rl_try_acquire(b, 1, NULL));
	ASSERT_EQ(0, rl_fast_map(b));
	ASSERT_EQ(0, rl_try_acquire(b, 1, NULL));
	close(b);
	c = lib_named("swapc", RL_ATTACH_CREATE, 0600, 1, HOUR, 800, 0);
	ASSERT_EQ(num, c);
	ASSERT_EQ(0, rl_try_acquire(c, 1, NULL));
	ASSERT_EQ(0, rl_fast_unmap(c));
	swap_check(_metadata, other, from);
	EXPECT_EQ(1, stat_of(c, granted));
	rl_close(c);

	/* An empty page put where a page given up was. */
	a = lib_named("swapd", RL_ATTACH_CREATE, 0600, 1, HOUR, 800, 0);
	ASSERT_LE(0, a);
	ASSERT_EQ(0, rl_try_acquire(a, 1, NULL));
	fail_next = MAP_FIXED;
	ASSERT_EQ(0, rl_fast_unmap(a));
	other = swap_failed(_metadata, &from);
	ASSERT_NE(NULL, other);
	ASSERT_EQ(0, rl_try_acquire(a, 1, NULL));
	ASSERT_EQ(0, rl_fast_map(a));
	ASSERT_EQ(0, rl_try_acquire(a, 1, NULL));
	ASSERT_EQ(0, rl_fast_unmap(a));
	ASSERT_EQ(0, rl_fast_map(a));
	swap_check(_metadata, other, from);
	EXPECT_EQ(3, stat_of(a, granted));
	rl_close(a);
}

/*
 * exec drops a process's mappings while the fd lives on in the new image:
 * the page, mapped nowhere, is taken back at the kernel's next look and
 * gets no top-up.
 */
TEST(exec_drops_mapping)
{
	struct rl_fast *f;
	char comm[32] = "";
	int fd, watch, i;
	pid_t pid;

	if (access("/bin/sleep", X_OK))
		SKIP(return, "no /bin/sleep to exec");
	fd = lib_named("exec", RL_ATTACH_CREATE, 0600, 1, HOUR, 800, 0);
	ASSERT_LE(0, fd);
	watch = named_again("exec", getpid());
	ASSERT_LE(0, watch);
	ASSERT_EQ(0, rl_try_acquire(fd, 1, NULL));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* The fd stays across exec, the library's mapping does not. */
		fcntl(fd, F_SETFD, 0);
		execl("/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 500 && strcmp(comm, "sleep\n"); i++) {
		char path[64];
		FILE *cf;

		usleep(10000);
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
		cf = fopen(path, "r");
		if (cf) {
			if (!fgets(comm, sizeof(comm), cf))
				comm[0] = '\0';
			fclose(cf);
		}
	}
	ASSERT_STREQ("sleep\n", comm);
	/* Only this process maps it now, twice: the library and here. */
	f = fmap(fd);
	ASSERT_NE(MAP_FAILED, f);
	EXPECT_EQ(100, page_tokens(f));
	ASSERT_EQ(0, rl_fast_unmap(fd));
	munmap(f, RL_FAST_SIZE);
	/* Mapped nowhere: a statistics read takes it back, no top-up after. */
	EXPECT_EQ(799, stat_of(watch, available));
	ASSERT_EQ(0, rl_try_acquire(fd, 1, NULL));
	f = fmap(fd);
	ASSERT_NE(MAP_FAILED, f);
	EXPECT_EQ(0, page_tokens(f));
	/* The file, the parent's and the child's, and the watch. */
	EXPECT_EQ(2, stat_of(watch, clients));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	munmap(f, RL_FAST_SIZE);
	close(fd);
	close(watch);
}

#define RACERS	4

struct racer {
	int fd;
	int *stop;
	__u64 got;
	pthread_t th;
};

static void *racer_fn(void *arg)
{
	struct racer *r = arg;

	while (!__atomic_load_n(r->stop, __ATOMIC_ACQUIRE))
		if (!rl_try_acquire(r->fd, 1, NULL))
			r->got++;
	return NULL;
}

/*
 * Threads take from an fd's page while another closes it and opens
 * another limiter under the same number: no fault, and every token one of
 * them got was counted once, by the one limiter it came from.
 */
TEST(close_races_take)
{
	int fd, fd2, wx, wy, stop = 0, i, round;
	struct racer r[RACERS];
	char n[RL_NAME_MAX];
	__u64 got = 0;

	wx = -1;
	wy = -1;
	for (round = 0; round < 20; round++) {
		fd = lib_named("racex", RL_ATTACH_CREATE | RL_ATTACH_PERSIST, 0600,
			       1, HOUR, 64, 0);
		ASSERT_LE(0, fd);
		if (wx < 0) {
			wx = named_again("racex", getpid());
			ASSERT_LE(0, wx);
		}
		stop = 0;
		for (i = 0; i < RACERS; i++) {
			r[i] = (struct racer){ .fd = fd, .stop = &stop };
			ASSERT_EQ(0, pthread_create(&r[i].th, NULL, racer_fn, &r[i]));
		}
		usleep(1000 * (round % 5));
		close(fd);
		fd2 = lib_named("racey", RL_ATTACH_CREATE | RL_ATTACH_PERSIST, 0600,
				1, HOUR, 64, 0);
		ASSERT_LE(0, fd2);
		if (wy < 0) {
			wy = named_again("racey", getpid());
			ASSERT_LE(0, wy);
		}
		usleep(2000);
		__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
		for (i = 0; i < RACERS; i++) {
			pthread_join(r[i].th, NULL);
			got += r[i].got;
		}
		close(fd2);
	}
	/* Whatever number each take named, x's and y's grants add up to them. */
	EXPECT_EQ(got, stat_of(wx, granted) + stat_of(wy, granted));
	EXPECT_GE(64, stat_of(wx, granted));
	EXPECT_GE(64, stat_of(wy, granted));
	EXPECT_EQ(1, stat_of(wx, clients));
	EXPECT_EQ(1, stat_of(wy, clients));
	TH_LOG("%llu taken: %llu from x, %llu from y", (unsigned long long)got,
	       (unsigned long long)stat_of(wx, granted),
	       (unsigned long long)stat_of(wy, granted));
	close(wx);
	close(wy);
	ks_unl_name(lname(n, "racex"));
	ks_unl_name(lname(n, "racey"));
}

/* rl_submit() takes from the page: granted at once, nothing to collect. */
TEST(submit_from_page)
{
	struct rl_config c = { .rate = 1, .period_ns = HOUR, .burst = 800 };
	struct rl_queued q;
	struct rl_stats s;
	struct rl_fast *f;
	int fd = rl_open(0);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, rl_set_config(fd, &c));
	f = fmap(fd);
	ASSERT_NE(MAP_FAILED, f);
	memset(&q, 0, sizeof(q));
	q.count = 1;
	ASSERT_EQ(0, rl_submit(fd, &q));
	EXPECT_EQ(0, q.ticket);
	ASSERT_EQ(100, page_tokens(f));
	memset(&q, 0, sizeof(q));
	q.count = 7;
	q.wait_ns = POISON64;
	ASSERT_EQ(0, rl_submit(fd, &q));
	EXPECT_EQ(0, q.ticket);
	EXPECT_EQ(0, q.result);
	EXPECT_EQ(0, q.wait_ns);
	EXPECT_EQ(93, page_tokens(f));
	/* A request with a priority goes to the kernel, which tops the page up. */
	memset(&q, 0, sizeof(q));
	q.count = 1;
	q.priority = RL_PRIO_HIGH;
	ASSERT_EQ(0, rl_submit(fd, &q));
	EXPECT_EQ(100, page_tokens(f));
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(9, s.granted);
	EXPECT_EQ(3, s.requests);
	munmap(f, RL_FAST_SIZE);
	EXPECT_EQ(0, rl_close(fd));
}

/* A change of limits, a cap, a priority or a tree takes the page back and stops top-ups. */
TEST(kernel_only_settings)
{
	struct rl_acquire a;
	struct rl_config c;
	struct rl_fast *f, *pf;
	int fd, parent;
	char pn[RL_NAME_MAX];

	fd = named("cfg", 0600, 1, HOUR, 800);
	ASSERT_LE(0, fd);
	f = fmap(fd);
	ASSERT_NE(MAP_FAILED, f);
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(100, page_tokens(f));
	/* New limits: taken back; plain limits again: topped up again. */
	ASSERT_EQ(0, ks_set(fd, 1, HOUR, 800, 0));
	EXPECT_EQ(0, page_tokens(f));
	EXPECT_EQ(799, ks_avail(fd));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(100, page_tokens(f));
	/* Concurrency: every grant is the kernel's. */
	memset(&c, 0, sizeof(c));
	c.rate = 1;
	c.period_ns = HOUR;
	c.burst = 800;
	c.concurrency = 5;
	ASSERT_EQ(0, ioctl(fd, RL_IOC_SET_CONFIG, &c));
	EXPECT_EQ(0, page_tokens(f));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, page_tokens(f));
	ASSERT_EQ(0, ks_release(fd, 1));
	/* Unlimited, paused: none. */
	ASSERT_EQ(0, ks_set(fd, 1, HOUR, 800, RL_CONFIG_UNLIMITED));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, page_tokens(f));
	ASSERT_EQ(0, ks_set(fd, 0, HOUR, 800, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, page_tokens(f));
	ASSERT_EQ(0, ks_set(fd, 1, HOUR, 800, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(100, page_tokens(f));
	/* A cap, then a default priority above MID, on this fd. */
	ASSERT_EQ(0, ks_client(fd, 0, 0, 1000));
	EXPECT_EQ(0, page_tokens(f));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, page_tokens(f));
	ASSERT_EQ(0, ks_client(fd, RL_PRIO_HIGH, 0, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, page_tokens(f));
	ASSERT_EQ(0, ks_client(fd, RL_PRIO_LOW, 0, 0));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(100, page_tokens(f));
	/* Under a parent: taken back, none while in the tree; the parent's too. */
	parent = named("cfgp", 0600, 1, HOUR, 800);
	ASSERT_LE(0, parent);
	pf = fmap(parent);
	ASSERT_NE(MAP_FAILED, pf);
	ASSERT_EQ(0, ks_acq(parent, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(100, page_tokens(pf));
	snprintf(pn, sizeof(pn), "fast_cfgp_%d", (int)getpid());
	ASSERT_EQ(0, rl_set_parent(fd, pn, 1));
	EXPECT_EQ(0, page_tokens(f));
	EXPECT_EQ(0, page_tokens(pf));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(0, ks_acq(parent, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, page_tokens(f));
	EXPECT_EQ(0, page_tokens(pf));
	ASSERT_EQ(0, rl_set_parent(fd, NULL, 1));
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_NE(0, page_tokens(f));
	munmap(pf, RL_FAST_SIZE);
	munmap(f, RL_FAST_SIZE);
	close(parent);
	close(fd);
}

/* What a process writes into its page is trusted up to what the kernel put there. */
TEST(forged_page)
{
	struct rl_acquire a;
	struct rl_stats s;
	struct rl_fast *f;
	int fd;

	fd = mapped(_metadata, 1, HOUR, 800, &f);
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(100, page_tokens(f));
	__atomic_store_n(&f->tokens, 1ULL << 40, __ATOMIC_RELEASE);
	__atomic_store_n(&f->acquires, 1ULL << 50, __ATOMIC_RELEASE);
	/* The statistics see nothing taken; new limits take back 100, not more. */
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(1, s.granted);
	EXPECT_EQ(1, s.requests);
	ASSERT_EQ(0, ks_set(fd, 1, HOUR, 800, 0));
	EXPECT_EQ(799, ks_avail(fd));
	/* Taking more than there was, then a write back down: counted as taken, at most 100. */
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	ASSERT_EQ(100, page_tokens(f));
	__atomic_store_n(&f->tokens, 0, __ATOMIC_RELEASE);
	ASSERT_EQ(0, ks_stats(fd, &s));
	EXPECT_EQ(102, s.granted);
	EXPECT_GE(103, s.requests);
	munmap(f, RL_FAST_SIZE);
	close(fd);
}

/* An fd that may only acquire cannot map; its acquires still work. */
TEST(reader_refused)
{
	struct rl_acquire a;
	int fd, pfd[2];
	pid_t pid, me = getpid();
	char res = 0;

	fd = named("reader", 0644, 1, HOUR, 80);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int rfd, r;

		if (setgid(65534) || setuid(65534))
			_exit(1);
		rfd = named_again("reader", me);
		if (rfd < 0)
			_exit(2);
		r = fmap(rfd) == MAP_FAILED && errno == EACCES;
		r = r && rl_fast_map(rfd) == -EACCES;
		r = r && !ks_acq(rfd, 1, 0, RL_ACQUIRE_NONBLOCK, &a);
		r = r && rl_try_acquire(rfd, 1, NULL) == 0;
		res = r ? 'y' : 'n';
		if (write(pfd[1], &res, 1) != 1)
			_exit(3);
		_exit(0);
	}
	close(pfd[1]);
	ASSERT_EQ(1, read(pfd[0], &res, 1));
	EXPECT_EQ('y', res);
	waitpid(pid, NULL, 0);
	EXPECT_EQ(78, ks_avail(fd));
	close(pfd[0]);
	close(fd);
}

/*
 * The bound with fast and ioctl takers mixed: 8 processes on one limiter,
 * half of them mapped, the other half not, each taking 1 or 2 tokens with
 * rl_try_acquire() in a loop; limits changed and paused during the run.
 * Each grant is known to lie between a time taken before the call and one
 * after: a window holds for sure the grants both of whose times lie in
 * it, and those must be at most burst + rate x window (of the limits in
 * force: the highest here). Callers that sleep are not here: a sleeper
 * served late is within the bound at its tokens' instants, which a fast
 * grant has not (ratelimit(4), Bounds); sleeper_not_overtaken is theirs.
 */
#define BOUND_PROCS	8
#define BOUND_MAX	20000
#define BOUND_RATE	2000
#define BOUND_BURST	64

struct span {
	__u64 s, e;
};

struct bound_run {
	int n[BOUND_PROCS];
	struct span g[BOUND_PROCS][BOUND_MAX];
	int stop;
};

static void bound_child(struct bound_run *r, int i, int fd)
{
	struct span sp;
	int k, ret;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE) && r->n[i] < BOUND_MAX) {
		sp.s = now_ns();
		ret = rl_try_acquire(fd, 1 + i % 2, NULL);
		sp.e = now_ns();
		if (ret == -EAGAIN)
			continue;
		if (ret)
			_exit(1);
		for (k = 0; k < 1 + i % 2 && r->n[i] < BOUND_MAX; k++)
			r->g[i][r->n[i]++] = sp;
	}
	_exit(0);
}

static int u64_cmp(const void *a, const void *b)
{
	const __u64 *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

TEST(bound_mixed)
{
	struct bound_run *r;
	struct span *all;
	pid_t pid[BOUND_PROCS];
	__u64 worst = 0, wa = 0, wb = 0, t0;
	long excess = LONG_MIN;
	int fd, i, j, k, tot = 0, fast = 0;
	char name[RL_NAME_MAX];

	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, r);
	fd = named("bound", 0600, BOUND_RATE, NS_PER_SEC, BOUND_BURST);
	ASSERT_LE(0, fd);
	snprintf(name, sizeof(name), "fast_bound_%d", (int)getpid());
	for (i = 0; i < BOUND_PROCS; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (!pid[i]) {
			int cfd = rl_open(0);

			if (cfd < 0 || rl_attach(cfd, name, 0, 0, NULL))
				_exit(1);
			/* rl_open()'s fds are mapped by rl_attach(): unmap half. */
			if (i < BOUND_PROCS / 2 ? rl_fast_map(cfd) : rl_fast_unmap(cfd))
				_exit(1);
			bound_child(r, i, cfd);
		}
	}
	/* Changes of limits and a pause while they run. */
	t0 = now_ns();
	sleep_ms(400);
	ASSERT_EQ(0, ks_set(fd, BOUND_RATE / 2, NS_PER_SEC, BOUND_BURST, 0));
	sleep_ms(300);
	ASSERT_EQ(0, ks_set(fd, 0, NS_PER_SEC, BOUND_BURST, 0));
	sleep_ms(200);
	ASSERT_EQ(0, ks_set(fd, BOUND_RATE, NS_PER_SEC, BOUND_BURST, 0));
	sleep_ms(600);
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < BOUND_PROCS; i++) {
		int st = -1;

		EXPECT_EQ(pid[i], waitpid(pid[i], &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st));
		tot += r->n[i];
		if (i < BOUND_PROCS / 2)
			fast += r->n[i];
	}
	all = calloc(tot, sizeof(*all));
	ASSERT_NE(NULL, all);
	for (i = 0, k = 0; i < BOUND_PROCS; i++)
		for (j = 0; j < r->n[i]; j++)
			all[k++] = r->g[i][j];
	qsort(all, tot, sizeof(*all), span_cmp);
	/* For each start, the grants wholly inside [start, end], for every end. */
	for (i = 0; i < tot; i++) {
		__u64 ends[4096];
		int ne = 0;
		long allow;

		for (j = i; j < tot && ne < 4096; j++)
			if (all[j].e - all[i].s <= NS_PER_SEC / 2)
				ends[ne++] = all[j].e;
		qsort(ends, ne, sizeof(ends[0]), u64_cmp);
		for (j = 0; j < ne; j++) {
			/* The grants ending by ends[j]: j + 1, or more with ties. */
			if (j + 1 < ne && ends[j + 1] == ends[j])
				continue;
			allow = BOUND_BURST +
				(long)(BOUND_RATE * (ends[j] - all[i].s) / NS_PER_SEC);
			if (j + 1 - allow > excess) {
				excess = j + 1 - allow;
				worst = j + 1;
				wa = all[i].s;
				wb = ends[j];
			}
		}
	}
	TH_LOG("%d grants (%d mapped), worst window %llu us at %lld ms: %llu grants, excess %ld",
	       tot, fast, (unsigned long long)((wb - wa) / 1000),
	       (long long)(wa - t0) / (long long)NS_PER_MS, (unsigned long long)worst, excess);
	/*
	 * No slack: 66 grants in 425 us, and excesses of 4 and 8, as the
	 * processes started, were the bucket refilled for the time it had
	 * stood full while pages were taken from (taken_is_room_from_now_on).
	 */
	EXPECT_GE(0, excess);
	EXPECT_LT(0, fast);
	EXPECT_LT(0, tot - fast);
	free(all);
	munmap(r, sizeof(*r));
	close(fd);
}

TEST_HARNESS_MAIN
