// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of /dev/ratelimit: fair shares between the clients (fds) of
 * one limiter. Equal clients, weights, caps, max-min fairness for a client
 * that wants little, threads that do not buy a process a larger share,
 * and fds that do.
 * Clients are fds of a named limiter, in this process and in children.
 *
 * Every client keeps several threads queued so that it is backlogged all
 * the time. A run lasts until the clients got a number of tokens (not a
 * fixed time), so that the shares are measured over as many tokens on a
 * slow guest (the debug kernel under TCG) as on a fast one; its deadline
 * is generous, and reaching it fails the test. What the limiter granted
 * is checked against the token bucket bound over the run's real time.
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

/* A run that has not got its tokens by then fails. */
#define DEADLINE_NS	(30 * NS_PER_SEC)
/* Of each test: a few runs, each up to DEADLINE_NS. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT	120

static void fair_cfg(struct rl_config *c, __u64 rate, __u64 period_ns,
		     __u64 burst)
{
	memset(c, 0, sizeof(*c));
	c->rate = rate;
	c->period_ns = period_ns;
	c->burst = burst;
}

static void expect_clean(struct __test_metadata *_metadata, struct sc_run *r)
{
	int i;

	for (i = 0; i < r->nclients; i++) {
		EXPECT_EQ(0, r->c[i].err);
		EXPECT_EQ(0, r->c[i].setup_err);
		TH_LOG("client %d: %llu tokens, %llu acquires, mean wait %.2f ms",
		       i, (unsigned long long)r->c[i].granted,
		       (unsigned long long)r->c[i].acquires,
		       r->c[i].acquires ? (double)r->c[i].wait_ns /
		       r->c[i].acquires / NS_PER_MS : 0.0);
	}
}

static __u64 total(const struct sc_run *r, int from, int to)
{
	__u64 sum = 0;
	int i;

	for (i = from; i < to; i++)
		sum += r->c[i].granted;
	return sum;
}

/* The run ended because it got @r->want tokens, not at the deadline. */
static void expect_want(struct __test_metadata *_metadata, struct sc_run *r)
{
	double s = (double)(r->end - r->t0) / NS_PER_SEC;

	TH_LOG("%llu tokens wanted, %llu counted in %.3f s",
	       (unsigned long long)r->want, (unsigned long long)sc_wanted(r),
	       s);
	EXPECT_LE(r->want, sc_wanted(r));
}

/*
 * The token bucket bound on the sum of clients from .. to - 1: the
 * limiter starts empty at t0, so burst + rate x (end - t0) (+ 1 for the
 * rounding), end being after every grant counted.
 */
static void expect_bound(struct __test_metadata *_metadata,
			 const struct sc_run *r, int from, int to)
{
	double bound = r->cfg.burst + (double)r->cfg.rate *
		       (r->end - r->t0) / r->cfg.period_ns + 1;

	EXPECT_GE((__u64)bound, total(r, from, to));
}

/* Jain's index of clients from .. to - 1. */
static double jain_of(const struct sc_run *r, int from, int to)
{
	double x[SC_MAX_CLIENTS];
	int i;

	for (i = from; i < to; i++)
		x[i - from] = r->c[i].granted;
	return jain(x, to - from);
}

/* 4 equal clients, 2 in this process and 2 in children: Jain >= 0.99. */
TEST(fair_equal_clients_jain)
{
	struct sc_run *r = sc_alloc();
	double j;
	int i;

	ASSERT_NE(NULL, r);
	fair_cfg(&r->cfg, 400, NS_PER_SEC, 1);
	r->dur_ns = DEADLINE_NS;
	r->want = 500;
	r->nclients = 4;
	for (i = 0; i < 4; i++) {
		r->c[i].nthreads = 2;
		r->c[i].process = i & 1;
	}
	ASSERT_EQ(0, sc_go(r));
	expect_clean(_metadata, r);
	expect_want(_metadata, r);
	j = jain_of(r, 0, 4);
	TH_LOG("Jain's index %.4f over %llu tokens", j,
	       (unsigned long long)total(r, 0, 4));
	EXPECT_LE(0.99, j);
	expect_bound(_metadata, r, 0, 4);
	sc_free(r);
}

/*
 * Weights 1:2:4 get 1/7, 2/7 and 4/7 of the tokens, within 5%. Each of the
 * weight 4 client's 8 threads must be queued again within 8 of its turns:
 * at 250/s that is 56 ms, which the 6.12 debug kernel under emulation
 * needs (at 500/s it could not keep all three clients backlogged: shares
 * 0.165/0.293/0.542, the limiter short of its rate).
 */
TEST(fair_weights_1_2_4)
{
	static const __u32 weight[3] = { 1, 2, 4 };
	struct sc_run *r = sc_alloc();
	double share, want;
	__u64 sum;
	int i;

	ASSERT_NE(NULL, r);
	fair_cfg(&r->cfg, 250, NS_PER_SEC, 1);
	r->dur_ns = DEADLINE_NS;
	r->want = 600;
	r->nclients = 3;
	for (i = 0; i < 3; i++) {
		r->c[i].nthreads = SC_MAX_THREADS;
		r->c[i].weight = weight[i];
		r->c[i].process = i == 1;
	}
	ASSERT_EQ(0, sc_go(r));
	expect_clean(_metadata, r);
	expect_want(_metadata, r);
	expect_bound(_metadata, r, 0, 3);
	sum = total(r, 0, 3);
	for (i = 0; i < 3; i++) {
		share = (double)r->c[i].granted / (sum ? sum : 1);
		want = weight[i] / 7.0;
		TH_LOG("weight %u: share %.4f, want %.4f (%+.1f%%)", weight[i],
		       share, want, 100 * (share - want) / want);
		EXPECT_LE(want * 0.95, share);
		EXPECT_GE(want * 1.05, share);
	}
	sc_free(r);
}

/*
 * The capped client gets CAP tokens per CAP_PERIOD (10/s), well below what
 * a slow guest grants per second, of a limiter of 100/s (400/s with
 * others); a run lasts until it got CAP_WANT tokens (about 2 s).
 */
#define CAP_PERIOD	(200 * NS_PER_MS)
#define CAP		2ULL
#define CAP_WANT	(12 * CAP)

static void cap_run(struct __test_metadata *_metadata, int others)
{
	struct sc_run *r = sc_alloc();
	double periods;
	int i;

	ASSERT_NE(NULL, r);
	fair_cfg(&r->cfg, others ? 80 : 20, CAP_PERIOD, 4);
	r->dur_ns = DEADLINE_NS;
	r->want = CAP_WANT;
	r->want_mask = 1;
	r->nclients = 1 + others;
	r->c[0].nthreads = 3;
	r->c[0].cap = CAP;
	for (i = 1; i <= others; i++) {
		r->c[i].nthreads = 2;
		r->c[i].process = i == 1;
	}
	ASSERT_EQ(0, sc_go(r));
	expect_clean(_metadata, r);
	expect_want(_metadata, r);
	periods = (double)(r->end - r->t0) / CAP_PERIOD;
	TH_LOG("capped: %llu tokens, %.1f periods, cap %llu, %.3f of bound, %llu over",
	       (unsigned long long)r->c[0].granted, periods,
	       (unsigned long long)CAP, r->c[0].max_seen / 1000.0,
	       (unsigned long long)r->c[0].over_cap);
	EXPECT_EQ(0ULL, r->c[0].over_cap);
	/* From SET_CLIENT (before the start) to the stop. */
	EXPECT_GE((__u64)(CAP * ((double)(r->end - r->c[0].t_set) /
				 CAP_PERIOD + 1)), r->c[0].granted);
	/* And it is a cap, not a stop: the client gets most of it. */
	EXPECT_LE((__u64)(CAP * periods * 0.7), r->c[0].granted);
	if (others) {
		/*
		 * The rest of 400/s for the others, shared equally; the cap
		 * is not theirs: each gets over twice the capped one's.
		 */
		EXPECT_LE(0.98, jain_of(r, 1, 1 + others));
		EXPECT_LE(2 * others * r->c[0].granted,
			  total(r, 1, 1 + others));
	}
	expect_bound(_metadata, r, 0, 1 + others);
	sc_free(r);
}

TEST(fair_cap_alone)
{
	cap_run(_metadata, 0);
}

TEST(fair_cap_with_others)
{
	cap_run(_metadata, 2);
}

/*
 * Many capped clients: each is parked at its cap and comes back when the
 * cap lets it through, in turn, while two others take the rest. Each gets
 * most of its cap and never more, and the others are not held up.
 */
#define NCAPPED		5

TEST(fair_caps_many)
{
	struct sc_run *r = sc_alloc();
	double periods;
	int i;

	ASSERT_NE(NULL, r);
	fair_cfg(&r->cfg, 80, CAP_PERIOD, 4);
	r->dur_ns = DEADLINE_NS;
	r->want = NCAPPED * CAP_WANT;
	r->want_mask = (1U << NCAPPED) - 1;
	r->nclients = NCAPPED + 2;
	for (i = 0; i < NCAPPED; i++) {
		r->c[i].nthreads = 2;
		r->c[i].cap = CAP;
	}
	for (i = NCAPPED; i < NCAPPED + 2; i++) {
		r->c[i].nthreads = 2;
		r->c[i].process = i == NCAPPED;
	}
	ASSERT_EQ(0, sc_go(r));
	expect_clean(_metadata, r);
	expect_want(_metadata, r);
	periods = (double)(r->end - r->t0) / CAP_PERIOD;
	for (i = 0; i < NCAPPED; i++) {
		EXPECT_EQ(0ULL, r->c[i].over_cap);
		EXPECT_GE((__u64)(CAP * ((double)(r->end - r->c[i].t_set) /
					 CAP_PERIOD + 1)), r->c[i].granted);
		EXPECT_LE((__u64)(CAP * periods * 0.7), r->c[i].granted);
	}
	/* The rest, 70 of 80 per period, for the two others. */
	EXPECT_LE(0.98, jain_of(r, NCAPPED, NCAPPED + 2));
	EXPECT_LE(4 * 2 * r->c[0].granted, total(r, NCAPPED, NCAPPED + 2));
	expect_bound(_metadata, r, 0, NCAPPED + 2);
	sc_free(r);
}

/*
 * Max-min: a client asking for 5% of the rate (one token every 50 ms at
 * 400/s) gets all it asks at once, while 3 backlogged ones share the rest.
 */
TEST(fair_max_min_small_client)
{
	struct sc_run *r = sc_alloc();
	struct sc_client *s;
	double mean, elapsed, gap;
	int i;

	ASSERT_NE(NULL, r);
	fair_cfg(&r->cfg, 400, NS_PER_SEC, 1);
	r->dur_ns = DEADLINE_NS;
	r->want = 600;
	r->want_mask = 7;
	r->nclients = 4;
	for (i = 0; i < 3; i++) {
		r->c[i].nthreads = 2;
		r->c[i].process = i == 2;
	}
	s = &r->c[3];
	s->pace_ns = 50 * NS_PER_MS;
	ASSERT_EQ(0, sc_go(r));
	expect_clean(_metadata, r);
	expect_want(_metadata, r);
	mean = s->acquires ? (double)s->wait_ns / s->acquires : 1e12;
	elapsed = r->end - r->t0;
	/* Between two grants (2.5 ms at 400/s, more on a slow guest). */
	gap = elapsed / (total(r, 0, 4) + !total(r, 0, 4));
	TH_LOG("small: asked %llu, got %llu, wait mean %.2f max %.2f ms, gap %.2f ms",
	       (unsigned long long)s->asked, (unsigned long long)s->granted,
	       mean / NS_PER_MS, (double)s->wait_max / NS_PER_MS,
	       gap / NS_PER_MS);
	/* It kept its pace (it asks every 50 ms, from the start on). */
	EXPECT_LE((__u64)(0.85 * elapsed / s->pace_ns), s->asked);
	/* All it asked, but for one request still in flight at the end. */
	EXPECT_LE(s->asked, s->granted + 1);
	/* With 3 others queued it waits for about 1 grant, not 10. */
	EXPECT_GT(10 * gap, mean);
	EXPECT_LE(0.98, jain_of(r, 0, 3));
	expect_bound(_metadata, r, 0, 4);
	sc_free(r);
}

/*
 * Shares are per fd: 8 threads do not beat 1 (one process each). The one
 * thread is queued only between its call and its grant: the rate leaves
 * it 10 ms a token to come back, which the debug kernel under emulation
 * needs (at 5 ms it lost turns: 0.44 of the tokens).
 */
TEST(fair_threads_do_not_win)
{
	struct sc_run *r = sc_alloc();
	double share;

	ASSERT_NE(NULL, r);
	fair_cfg(&r->cfg, 100, NS_PER_SEC, 1);
	r->dur_ns = DEADLINE_NS;
	r->want = 200;
	r->nclients = 2;
	r->c[0].nthreads = 8;
	r->c[0].process = 1;
	r->c[1].nthreads = 1;
	r->c[1].process = 1;
	ASSERT_EQ(0, sc_go(r));
	expect_clean(_metadata, r);
	share = (double)r->c[1].granted / (total(r, 0, 2) + !total(r, 0, 2));
	TH_LOG("1 thread: share %.4f against 8 threads", share);
	expect_want(_metadata, r);
	expect_bound(_metadata, r, 0, 2);
	EXPECT_LE(0.45, share);
	EXPECT_GE(0.55, share);
	sc_free(r);
}

/*
 * 3 fds of root's against 1 of user 65534's, each fd with 2 threads queued,
 * at 400/s until 800 tokens: the share of root's fds. @flags: the limiter's.
 */
static double fds_3_to_1(struct __test_metadata *_metadata, __u32 flags)
{
	struct sc_run *r = sc_alloc();
	double share;
	int i;

	if (!r)
		return -1;
	fair_cfg(&r->cfg, 400, NS_PER_SEC, 1);
	r->cfg.flags = flags;
	r->dur_ns = DEADLINE_NS;
	r->want = 800;
	r->nclients = 4;
	for (i = 0; i < 4; i++) {
		r->c[i].nthreads = 2;
		r->c[i].process = i == 3;
	}
	r->c[3].uid = 65534;
	EXPECT_EQ(0, sc_go(r));
	expect_clean(_metadata, r);
	share = (double)total(r, 0, 3) / (total(r, 0, 4) + !total(r, 0, 4));
	TH_LOG("3 fds of root: share %.4f against 1 fd of user 65534 (flags %#x)", share, flags);
	expect_want(_metadata, r);
	expect_bound(_metadata, r, 0, 4);
	sc_free(r);
	return share;
}

/*
 * But fds do: a process with 3 fds of a shared limiter gets 3 shares of 4
 * against a process with one, whoever its user or container
 * (Documentation/containers.md)...
 */
TEST(fair_more_fds_win)
{
	double share = fds_3_to_1(_metadata, 0);

	EXPECT_LE(0.70, share);
	EXPECT_GE(0.80, share);
}

/* ... unless the owner makes the shares per user (RL_CONFIG_FAIR_PER_USER). */
TEST(fair_per_user_more_fds_do_not_win)
{
	double share = fds_3_to_1(_metadata, RL_CONFIG_FAIR_PER_USER);

	EXPECT_LE(0.45, share);
	EXPECT_GE(0.55, share);
}

/*
 * Setting and clearing RL_CONFIG_FAIR_PER_USER with requests asleep: those
 * keep their place (their fd's flow, or their user's), and all are served.
 */
TEST(fair_per_user_switched_with_sleepers)
{
	struct waiter w[6];
	char name[RL_NAME_MAX];
	struct rl_acquire a;
	struct rl_config c;
	struct rl_stats s;
	int ctl, fd[2], i;

	snprintf(name, sizeof(name), "fair-%d-switch", getpid());
	ctl = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600, 0, NS_PER_SEC, 1);
	ASSERT_LE(0, ctl);
	/* A new limiter's bucket is full: empty it, so that everyone sleeps. */
	ASSERT_EQ(0, ks_acq(ctl, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	for (i = 0; i < 2; i++) {
		fd[i] = ks_open_att(name, 0, 0, 0, NS_PER_SEC, 1);
		ASSERT_LE(0, fd[i]);
	}
	for (i = 0; i < 6; i++) {
		if (i == 4) {
			/* Still paused: the next two sleep in their user's flow. */
			ASSERT_EQ(0, ks_wait_waiters(ctl, 4, 5000));
			ASSERT_EQ(0, ks_set(ctl, 0, NS_PER_SEC, 1, RL_CONFIG_FAIR_PER_USER));
			ASSERT_EQ(0, ks_get(ctl, &c));
			EXPECT_EQ(RL_CONFIG_FAIR_PER_USER, c.flags);
		}
		ASSERT_EQ(0, waiter_start(&w[i], fd[i % 2], 1, RL_DEADLINE_NONE, 0));
	}
	ASSERT_EQ(0, ks_wait_waiters(ctl, 6, 5000));
	/* Back to shares per fd, and running: everyone is served. */
	ASSERT_EQ(0, ks_set(ctl, 1000, NS_PER_SEC, 1, 0));
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(0, waiter_join(&w[i], 10000));
		EXPECT_EQ(0, w[i].ret);
	}
	ASSERT_EQ(0, ks_stats(ctl, &s));
	EXPECT_EQ(7, s.granted);
	EXPECT_EQ(0, s.waiters);
	close(fd[0]);
	close(fd[1]);
	close(ctl);
}

TEST_HARNESS_MAIN
