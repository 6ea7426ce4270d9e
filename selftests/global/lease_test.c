// SPDX-License-Identifier: GPL-2.0-only
/*
 * lease_test.c - the Redis side of global limits (tools/global/ratelimit.lua)
 * driven directly, with simulated hosts, against a private redis-server
 * that selftests/global/run.sh starts.
 *
 *   lease_test SOCKET [MEMBERS]
 *
 * Each simulated host behaves as rlsyncd does: it runs at the rate of its
 * last reply until its lease ends on its own clock (measured from when it
 * sent the request, less a margin), then at its floor; some replies are
 * "lost" (the host keeps its old lease). The checks are on what the hosts
 * run at, not only on what Redis believes. Prints one "ok"/"not ok" line
 * per test with its figures, and "N passed, N failed" last.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#define NHOST		8
#define MARGIN_MS	20.0
#define EPS		0.001
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct host {
	char id[16];
	double rate;		/* what it runs at while its lease lasts */
	double floor;		/* what it runs at after */
	double exp_ms;		/* end of its lease, local clock */
	double mexp_ms;		/* end of its floor, local clock */
	double wants;
	double want_floor;
	double weight;		/* 0: 1 */
	long long next_ms;	/* when the reply says to renew */
};

static redisContext *rc;
static const char *res = "t";
static const char *hold = "0";	/* floors end with the lease */
static const char *refresh = "50";
static int passed, failed;

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms)
{
	usleep((useconds_t)(ms * 1000));
}

/* FCALL @fn on the resource with @argc string arguments. */
static redisReply *fcall(const char *fn, int argc, ...)
{
	const char *argv[16];
	char keys[4][80];
	va_list ap;
	int i, n = 0;

	snprintf(keys[0], sizeof(keys[0]), "rl:{%s}:cfg", res);
	snprintf(keys[1], sizeof(keys[1]), "rl:{%s}:epoch", res);
	snprintf(keys[2], sizeof(keys[2]), "rl:{%s}:members", res);
	snprintf(keys[3], sizeof(keys[3]), "rl:{%s}:bucket", res);
	argv[n++] = "FCALL";
	argv[n++] = fn;
	argv[n++] = "4";
	for (i = 0; i < 4; i++)
		argv[n++] = keys[i];
	va_start(ap, argc);
	for (i = 0; i < argc && n < 16; i++)
		argv[n++] = va_arg(ap, const char *);
	va_end(ap);
	return redisCommandArgv(rc, n, argv, NULL);
}

static void check(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s - %s: ", ok ? "ok" : "not ok", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (ok)
		passed++;
	else
		failed++;
}

static void configure(const char *mode, const char *cap, const char *algo,
		      const char *lease, const char *burst)
{
	redisReply *r = fcall("rl_config", 9, "test", mode, cap, algo, lease,
			      refresh, hold, "300", burst);

	if (!r || r->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, "rl_config: %s\n", r ? r->str : rc->errstr);
		exit(1);
	}
	freeReplyObject(r);
}

/* What @h runs at now on its own clock. */
static double running(const struct host *h)
{
	double now = mono_ms();

	if (now < h->exp_ms)
		return h->rate;
	return now < h->mexp_ms ? h->floor : 0;
}

static double total(const struct host *hs, int n)
{
	double sum = 0;
	int i;

	for (i = 0; i < n; i++)
		sum += running(&hs[i]);
	return sum;
}

/*
 * One refresh of @h: report wants and what it runs at, apply the reply
 * unless @lose. Returns 0, or -1 on an error reply (printed).
 */
static int renew(struct host *h, int lose)
{
	char w[32], has[32], wt[32], fl[32];
	double sent = mono_ms();
	redisReply *r;

	snprintf(w, sizeof(w), "%.17g", h->wants);
	snprintf(has, sizeof(has), "%.6f", running(h));
	snprintf(wt, sizeof(wt), "%.17g", h->weight > 0 ? h->weight : 1);
	snprintf(fl, sizeof(fl), "%.3f", h->want_floor);
	r = fcall("rl_lease", 5, h->id, w, has, wt, fl);
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 9) {
		printf("# rl_lease: %s\n", r && r->str ? r->str : "no reply");
		freeReplyObject(r);
		return -1;
	}
	if (!lose) {
		h->rate = atof(r->element[0]->str);
		h->floor = atof(r->element[1]->str);
		h->exp_ms = sent + r->element[2]->integer - MARGIN_MS;
		h->mexp_ms = h->exp_ms + r->element[4]->integer;
		h->next_ms = r->element[3]->integer;
	}
	freeReplyObject(r);
	return 0;
}

static void hosts_init(struct host *hs, int n, double wants)
{
	int i;

	memset(hs, 0, n * sizeof(*hs));
	for (i = 0; i < n; i++) {
		snprintf(hs[i].id, sizeof(hs[i].id), "h%d", i);
		hs[i].wants = wants;
	}
}

static void round_all(struct host *hs, int n)
{
	int i;

	for (i = 0; i < n; i++)
		renew(&hs[i], 0);
}

/*
 * Random calls from @n hosts (NHOST; 100: the cached round of a large
 * resource): the sum they run at never exceeds C.
 */
static void test_random(const char *name, int n)
{
	struct host *hs = calloc(n, sizeof(*hs));
	double worst = 0, t, start;
	int calls = 0, errs = 0;

	if (!hs) {
		check(0, "random calls keep sum <= C", "out of memory");
		return;
	}
	res = name;
	hold = "1000";
	configure("lease", "1000", "fair", "400", "0");
	hold = "0";
	hosts_init(hs, n, 0);
	srand(11);
	start = mono_ms();
	while ((t = mono_ms()) - start < 3000) {
		struct host *h = &hs[rand() % n];

		if (h == &hs[n - 1] && t - start > 1500)
			continue;	/* one host dies half-way */
		h->wants = rand() % (4800 / n);
		h->want_floor = rand() % 4 ? 0 : rand() % (800 / n);
		errs += renew(h, rand() % 10 == 0) < 0;
		calls++;
		worst = fmax(worst, total(hs, n));
		sleep_ms(rand() % 3 / (n > NHOST ? 4.0 : 1.0));
	}
	check(worst <= 1000 + EPS && !errs, "random calls keep sum <= C",
	      "%d calls from %d hosts over 3 s, 10%% replies lost, max sum %.1f of 1000",
	      calls, n, worst);
	free(hs);
}

static double jain(double a, double b)
{
	return (a + b) * (a + b) / (2 * (a * a + b * b));
}

/* Wait out the learning period of a new resource, renewing. */
static void learn(struct host *hs, int n, double lease)
{
	double start = mono_ms();

	while (mono_ms() - start < lease + 60) {
		round_all(hs, n);
		sleep_ms(50);
	}
}

/* One wanting 10 %, two wanting all: max-min shares within 3 rounds. */
static void test_fair(void)
{
	struct host hs[3];
	int r, conv = -1;
	double j = 0;

	res = "fair";
	configure("lease", "5000", "fair", "400", "0");
	hosts_init(hs, 3, 5000);
	learn(hs, 3, 400);
	hs[0].wants = 500;
	for (r = 1; r <= 6; r++) {
		round_all(hs, 3);
		j = jain(hs[1].rate, hs[2].rate);
		printf("# round %d: %.0f %.0f %.0f\n", r, hs[0].rate, hs[1].rate, hs[2].rate);
		if (conv < 0 && fabs(hs[0].rate - 500) < 1 &&
		    fabs(hs[1].rate - 2250) < 23 && j >= 0.99)
			conv = r;
	}
	check(conv > 0 && conv <= 3, "fair share",
	      "has %.0f %.0f %.0f (max-min 500 2250 2250), Jain %.4f, converged in round %d",
	      hs[0].rate, hs[1].rate, hs[2].rate, j, conv);
}

static void test_proportional(void)
{
	struct host hs[3];
	double err = 0;
	int i;

	res = "prop";
	configure("lease", "3000", "proportional", "400", "0");
	hosts_init(hs, 3, 0);
	learn(hs, 3, 400);
	for (i = 0; i < 3; i++)
		hs[i].wants = 1000 * (i + 1);
	for (i = 0; i < 4; i++)
		round_all(hs, 3);
	for (i = 0; i < 3; i++)
		err = fmax(err, fabs(hs[i].rate / (500.0 * (i + 1)) - 1));
	check(err <= 0.05, "proportional share",
	      "wants 1000 2000 3000 of 3000: has %.0f %.0f %.0f, worst error %.2f %%",
	      hs[0].rate, hs[1].rate, hs[2].rate, err * 100);
}

/* Weighted max-min fair shares of @cap among @n demands @d (weights @w, NULL: all 1). */
static void exact_fill(const double *d, const double *w, int n, double cap,
		       double *out)
{
	double wleft = 0;
	int i, left = n;
	bool *done = calloc(n, sizeof(*done));

	for (i = 0; i < n; i++)
		wleft += w ? w[i] : 1;
	while (done && left) {
		double lvl = cap / wleft;
		int met = 0;

		for (i = 0; i < n; i++) {
			if (!done[i] && d[i] <= (w ? w[i] : 1) * lvl) {
				out[i] = d[i];
				cap -= d[i];
				wleft -= w ? w[i] : 1;
				done[i] = true;
				met++;
			}
		}
		left -= met;
		if (met)
			continue;
		for (i = 0; i < n; i++)
			if (!done[i])
				out[i] = (w ? w[i] : 1) * lvl;
		break;
	}
	free(done);
}

/*
 * Rounds of every host renewing, one a refresh (@every ms), until each
 * runs within 2 % of @want.
 */
static int large_rounds(struct host *hs, int n, const double *want,
			double every, double *worst_sum, double *err)
{
	double cap = 10000, start;
	int r, i, conv = -1;

	for (r = 1; r <= 8; r++) {
		start = mono_ms();
		*err = 0;
		for (i = 0; i < n; i++) {
			renew(&hs[i], 0);
			*worst_sum = fmax(*worst_sum, total(hs, n));
		}
		for (i = 0; i < n; i++)
			*err = fmax(*err, fabs(hs[i].rate - want[i]) /
				    fmax(want[i], EPS));
		if (conv < 0 && *err <= 0.02)
			conv = r;
		if (total(hs, n) > cap + EPS)
			return -1;
		sleep_ms(fmax(0, start + every - mono_ms()));
	}
	return *err <= 0.02 ? conv : -1;
}

/* Redis's time per FCALL (INFO commandstats) since CONFIG RESETSTAT, us. */
static double fcall_us(void)
{
	static const char field[] = "usec_per_call=";
	redisReply *r = redisCommand(rc, "INFO commandstats");
	const char *p = r && r->str ? strstr(r->str, "cmdstat_fcall:") : NULL;
	double us = -1;

	if (p)
		p = strstr(p, field);
	if (p)
		us = atof(p + strlen(field));
	freeReplyObject(r);
	return us;
}

/*
 * A resource of more members than the library reads on every call (64):
 * @n hosts (300; lease_test's second argument), 100 wanting 10..109/s,
 * the others backlogged, then half of the backlogged down to 5/s, then
 * the first half of the hosts leaving (rl_leave; the backlogged that
 * stay get what they left): every host within 2 % of the
 * exact max-min share within 4 rounds (one a refresh: 200 ms, or what
 * a round of calls takes at 10000 calls/s; the lease 4 refreshes), and
 * the sum the hosts run at never above the capacity. The figures: Redis's time per
 * call here and with 40 members.
 */
static void test_large(int n)
{
	struct host *hs = calloc(n, sizeof(*hs));
	double *d = calloc(n, sizeof(*d)), *want = calloc(n, sizeof(*want));
	double worst = 0, e1 = 0, e2 = 0, e3 = 0, us40, us300, every;
	int i, c1, c2, c3, cached;
	char ms[2][24];
	redisReply *r;

	if (!hs || !d || !want || n < 200) {
		check(0, "large resource", "%d members: out of memory or under 200", n);
		goto out;
	}

	/* a refresh long enough for one round (Redis: 10000 calls/s) */
	every = fmax(200, n / 3);
	snprintf(ms[0], sizeof(ms[0]), "%.0f", every);
	snprintf(ms[1], sizeof(ms[1]), "%.0f", 4 * every);
	res = "large";
	refresh = ms[0];
	configure("lease", "10000", "fair", ms[1], "0");
	refresh = "50";
	hosts_init(hs, 40, 10000);
	learn(hs, 40, 4 * every);
	freeReplyObject(redisCommand(rc, "CONFIG RESETSTAT"));
	round_all(hs, 40);
	round_all(hs, 40);
	us40 = fcall_us();
	hosts_init(hs, n, 10000);
	for (i = 0; i < 100; i++)
		hs[i].wants = 10 + i;
	for (i = 0; i < n; i++)
		d[i] = hs[i].wants;
	exact_fill(d, NULL, n, 10000, want);
	freeReplyObject(redisCommand(rc, "CONFIG RESETSTAT"));
	c1 = large_rounds(hs, n, want, every, &worst, &e1);
	us300 = fcall_us();
	r = redisCommand(rc, "HMGET rl:{large}:members %s", "");
	cached = r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
		 r->element[0]->type == REDIS_REPLY_STRING;
	freeReplyObject(r);
	for (i = 100; i < 100 + (n - 100) / 2; i++) {
		hs[i].wants = 5;
		d[i] = 5;
	}
	exact_fill(d, NULL, n, 10000, want);
	c2 = large_rounds(hs, n, want, every, &worst, &e2);
	for (i = 0; i < n / 2; i++) {
		r = fcall("rl_leave", 1, hs[i].id);
		freeReplyObject(r);
		hs[i].exp_ms = 0;
		hs[i].mexp_ms = 0;
	}
	exact_fill(d + n / 2, NULL, n - n / 2, 10000, want + n / 2);
	c3 = large_rounds(hs + n / 2, n - n / 2, want + n / 2, every, &worst,
			  &e3);
	check(cached && c1 > 0 && c1 <= 4 && c2 > 0 && c2 <= 4 && c3 > 0 &&
	      c3 <= 4 && worst <= 10000 + EPS,
	      "large resource: max-min shares from the cached round",
	      "%d members (round cached: %s): within 2 %% of the exact water-fill in round %d (worst %.2f %%), after a demand shift in round %d (%.2f %%), after %d left in round %d (%.2f %%); the most the hosts ran at %.1f of 10000; Redis per call %.1f us (40 members: %.1f us)",
	      n, cached ? "yes" : "no", c1, e1 * 100, c2, e2 * 100, n / 2, c3,
	      e3 * 100, worst,
	      us300, us40);
out:
	free(hs);
	free(d);
	free(want);
}

/*
 * The steps Newton's method takes to the water level of @n demands @d
 * (weights @w) in @cap, as ratelimit.lua's fill() takes them: from cap /
 * (sum of weights), each step takes the members below the level at their
 * demand and shares the rest among the others, until one takes no new
 * member.
 */
static int newton_steps(const double *d, const double *w, int n, double cap)
{
	double lvl, wsum = 0;
	int i, steps = 0, took = -1;

	for (i = 0; i < n; i++)
		wsum += w[i];
	lvl = cap / wsum;
	for (;;) {
		double taken = 0, rest = 0;
		int below = 0;

		steps++;
		for (i = 0; i < n; i++) {
			if (d[i] < w[i] * lvl) {
				below++;
				taken += d[i];
			} else {
				rest += w[i];
			}
		}
		if (below == took || rest <= 0 || steps > n)
			return steps;
		took = below;
		lvl = (cap - taken) / rest;
	}
}

/*
 * Demands whose water level Newton's method reaches a member a step, 21
 * steps, where ratelimit.lua's fill() takes 16 and then walks the members
 * in order: 80 members (a cached round), the first 20 of weights 1, 1/2,
 * 1/4, ..., each wanting its weight times just more than the level of the
 * step before its own, the 60 others backlogged at weight 1e-9. Every
 * host within 2 % of the exact weighted water-fill within 4 rounds, and
 * the sum never above the capacity: the level of the 16th step would
 * leave the 20th member 14 % short and each backlogged one 86 %.
 */
static void test_deep(void)
{
	enum { N = 80, CHAIN = 20 };
	double d[N], w[N], want[N], wsum = 0, taken = 0, wt = 0, prev = -1;
	double lvl, worst = 0, err = 0;
	struct host hs[N];
	int i, steps, conv;

	for (i = 0; i < N; i++) {
		w[i] = i < CHAIN ? ldexp(1, -i) : 1 / 1e9;
		d[i] = 1e12;
		wsum += w[i];
	}
	lvl = 10000 / wsum;
	for (i = 0; i < CHAIN; i++) {
		d[i] = w[i] * (prev < 0 ? lvl / 2 : prev * (1 + 1 / 1e9));
		taken += d[i];
		wt += w[i];
		prev = lvl;
		lvl = (10000 - taken) / (wsum - wt);
	}
	steps = newton_steps(d, w, N, 10000);
	exact_fill(d, w, N, 10000, want);
	res = "deep";
	refresh = "200";
	configure("lease", "10000", "fair", "800", "0");
	refresh = "50";
	hosts_init(hs, N, 0);
	for (i = 0; i < N; i++) {
		hs[i].wants = d[i];
		hs[i].weight = w[i];
	}
	learn(hs, N, 800);
	conv = large_rounds(hs, N, want, 200, &worst, &err);
	check(steps > 16 && conv > 0 && conv <= 4 && worst <= 10000 + EPS,
	      "a water level many steps deep",
	      "%d members, a level %d steps of Newton's method deep: within 2 %% of the exact weighted water-fill in round %d (worst %.2f %%; the 20th member %.6f of %.6f, a backlogged one %.6f of %.6f); the most the hosts ran at %.1f of 10000",
	      N, steps, conv, err * 100, hs[CHAIN - 1].rate, want[CHAIN - 1],
	      hs[N - 1].rate, want[N - 1], worst);
}

/* Whether every one of @n hosts runs within 2 % of @want. */
static bool all_near(const struct host *hs, int n, double want)
{
	int i;

	for (i = 0; i < n; i++)
		if (fabs(running(&hs[i]) - want) > 0.02 * want)
			return false;
	return true;
}

/*
 * The resource @name (fair, 10000/s, refresh @ref ms, lease @lease ms)
 * out of its learning period, and @n hosts wanting 10000 (backlogged).
 */
static void backlogged(struct host *hs, int n, const char *name,
		       const char *ref, const char *lease)
{
	res = name;
	refresh = ref;
	configure("lease", "10000", "fair", lease, "0");
	refresh = "50";
	freeReplyObject(redisCommand(rc, "HSET rl:{%s}:epoch learn_until 0",
				     name));
	hosts_init(hs, n, 10000);
}

/*
 * A call whose target share moves by more than half owes its resource a
 * round an eighth of a refresh later (ratelimit.lua: a round owed): 100
 * backlogged hosts (100/s each of 10000, refresh 8 s: a round every 4 s),
 * a fresh round, then half of them down to 10/s (and acknowledging it):
 * the other half's next renewal is still at the round's 100/s before an
 * eighth of a refresh (1 s), and at the new share, 190/s, after it, not
 * 4 s later. Then ten of that half leave (rl_leave), which owes a round
 * too: 237.5/s an eighth of a refresh later. The sum the hosts run at is
 * never above the capacity.
 */
static void test_owed(void)
{
	struct host hs[100];
	double worst = 0, t1, before, after, at_leave, left;
	bool steady = false;
	int i, r;

	backlogged(hs, 100, "owed", "8000", "48000");
	for (r = 0; r < 12 && !steady; r++) {
		if (r)
			sleep_ms(1100);
		round_all(hs, 100);
		worst = fmax(worst, total(hs, 100));
		steady = all_near(hs, 100, 100);
	}
	sleep_ms(4100);		/* the round is due: hs[0] makes it */
	renew(&hs[0], 0);
	for (i = 50; i < 100; i++)
		hs[i].wants = 10;
	t1 = mono_ms();
	round_all(hs + 50, 50);
	round_all(hs + 50, 50);	/* their decrease acknowledged */
	renew(&hs[0], 0);
	before = hs[0].rate;
	worst = fmax(worst, total(hs, 100));
	sleep_ms(fmax(0, t1 + 1100 - mono_ms()));
	renew(&hs[0], 0);
	after = hs[0].rate;
	worst = fmax(worst, total(hs, 100));
	/* ten backlogged hosts leave: 9500 / 40 each, a round owed */
	for (i = 40; i < 50; i++) {
		freeReplyObject(fcall("rl_leave", 1, hs[i].id));
		hs[i].rate = 0;
		hs[i].floor = 0;
	}
	renew(&hs[0], 0);
	at_leave = hs[0].rate;
	sleep_ms(1100);
	renew(&hs[0], 0);
	left = hs[0].rate;
	worst = fmax(worst, total(hs, 100));
	check(steady && fabs(before - 100) < 2 && fabs(after - 190) < 3.8 &&
	      fabs(at_leave - 190) < 3.8 && fabs(left - 237.5) < 4.75 &&
	      worst <= 10000 + EPS, "a demand shift and a leave owe a round",
	      "100 members: shares steady at 100/s in %d rounds; after half fell to 10/s, h0 at %.1f/s at once (the round's), %.1f/s an eighth of a refresh later (190: a round made 3 s before its regular time); 10 left: h0 at %.1f/s at once, %.1f/s an eighth later (237.5); the most the hosts ran at %.1f of 10000",
	      r, before, after, at_leave, left, worst);
}

/*
 * The cached round of the resource: its first byte (2, or 3 when steady:
 * ratelimit.lua's ROUND_CFG and ROUND_STEADY), and when it was made (ms of
 * Redis's clock) in @t. 0 when there is none.
 */
static int round_of(double *t)
{
	redisReply *r;
	char key[80];
	int f = 0;

	snprintf(key, sizeof(key), "rl:{%s}:members", res);
	r = redisCommand(rc, "HGET %s %b", key, "", (size_t)0);
	if (r && r->type == REDIS_REPLY_STRING && r->len >= 9) {
		f = (unsigned char)r->str[0];
		memcpy(t, r->str + 1, sizeof(*t));	/* little-endian */
	}
	freeReplyObject(r);
	return f;
}

/* @h renews at @at ms of the local clock, or at once when that is past. */
static void renew_at(struct host *h, double at)
{
	sleep_ms(fmax(0, at - mono_ms()));
	renew(h, 0);
}

/*
 * A round that finds the level, the ratio and the sum of the round before
 * it within 1 % is steady and lasts a whole refresh (ratelimit.lua's
 * steady rounds), any other half of one: 100 backlogged hosts (10000, refresh
 * 2 s). Their rounds become steady; a call 1.1 s after a steady round
 * takes it as it is, one 2.1 s after makes the next. Then 30 hosts drop
 * to 95/s (5 %: no round owed), which raises the level by 2.1 %: the next
 * round is not steady, the one 1.1 s after it is made and steady again.
 * The sum the hosts run at is never above the capacity.
 */
static void test_steady(void)
{
	struct host hs[100];
	double worst = 0, t = 0, t0 = 0, t1 = 0, t2 = 0, t3 = 0, start;
	int i, r, f = 0, f_kept, f_moved, f_after;

	backlogged(hs, 100, "steady", "2000", "8000");
	round_all(hs, 100);
	for (r = 0; r < 4 && f != 3; r++) {
		sleep_ms(1100);
		round_all(hs, 100);
		worst = fmax(worst, total(hs, 100));
		f = round_of(&t0);
	}
	start = mono_ms();
	renew_at(&hs[0], start + 1100);	/* half a refresh: kept */
	f_kept = round_of(&t1);
	renew_at(&hs[0], start + 2100);	/* a refresh: made anew */
	round_of(&t2);
	start = mono_ms();
	for (i = 70; i < 100; i++)
		hs[i].wants = 95;
	round_all(hs, 100);
	round_all(hs + 70, 30);	/* their decrease acknowledged */
	worst = fmax(worst, total(hs, 100));
	renew_at(&hs[0], start + 2100);	/* the steady round ended */
	f_moved = round_of(&t3);
	start = mono_ms();
	renew_at(&hs[0], start + 1100);	/* half a refresh after it */
	f_after = round_of(&t);
	worst = fmax(worst, total(hs, 100));
	check(f == 3 && f_kept == 3 && t1 == t0 && t2 > t0 + 1900 &&
	      f_moved == 2 && t3 > t2 && f_after == 3 && t > t3 + 1000 &&
	      fabs(hs[0].rate - 10000 / 70.0 * (1 - 0.285)) < 1 &&
	      worst <= 10000 + EPS, "steady rounds last a refresh",
	      "100 members: steady in %d rounds; 1.1 s later the same round (%s), 2.1 s later a new one %.0f ms on, steady (%d); 30 down to 95/s: the next round %s, the one 1.1 s after it %.0f ms on, %s; h0 at %.2f/s (102.14); the most the hosts ran at %.1f of 10000",
	      r, t1 == t0 ? "yes" : "no", t2 - t0, f_kept,
	      f_moved == 3 ? "steady" : "not steady", t - t3,
	      f_after == 3 ? "steady" : "not steady", hs[0].rate, worst);
}

/* h2 stops renewing: h1 gets its share after one lease, not before. */
static void test_expiry(void)
{
	struct host hs[3];
	double stop, before = 0, after_ms = -1;

	res = "exp";
	configure("lease", "5000", "fair", "400", "0");
	hosts_init(hs, 3, 5000);
	hs[0].wants = 500;
	learn(hs, 3, 400);
	round_all(hs, 3);
	round_all(hs, 3);
	stop = mono_ms();
	while (mono_ms() - stop < 800) {
		renew(&hs[0], 0);
		renew(&hs[1], 0);
		if (mono_ms() - stop < 380)
			before = fmax(before, hs[1].rate);
		if (after_ms < 0 && hs[1].rate > 4499)
			after_ms = mono_ms() - stop;
		sleep_ms(20);
	}
	check(before <= 2250 + 23 && after_ms >= 380 && after_ms <= 600,
	      "silent host loses its share after one lease",
	      "lease 400 ms: max %.0f before expiry, 4500 reached %.0f ms after h2 stopped",
	      before, after_ms);
}

/*
 * A decrease is held for the others until its host acknowledges it,
 * unless the host already runs at no more than the new grant (it lowered
 * its limiter to its demand before asking).
 */
static void test_quarantine(void)
{
	struct host hs[2];
	double held, back, freed;
	int i;

	res = "quar";
	configure("lease", "5000", "fair", "400", "0");
	hosts_init(hs, 2, 5000);
	hs[0].wants = 500;
	learn(hs, 2, 400);
	round_all(hs, 2);
	round_all(hs, 2);
	/* h0's demand falls to 0; it still runs at 500 when it asks */
	hs[0].wants = 0;
	renew(&hs[0], 0);
	renew(&hs[1], 0);
	held = hs[1].rate;
	/* acknowledged, back at 500, then lowered to 0 before asking */
	renew(&hs[0], 0);
	hs[0].wants = 500;
	renew(&hs[1], 0);
	for (i = 0; i < 4; i++)
		round_all(hs, 2);
	back = hs[0].rate;
	hs[0].wants = 0;
	hs[0].rate = 0;
	renew(&hs[0], 0);
	renew(&hs[1], 0);
	freed = hs[1].rate;
	check(fabs(held - 4500) < 1 && fabs(back - 500) < 1 &&
	      fabs(freed - 5000) < 1,
	      "a decrease acknowledged in the asking frees at once",
	      "h0 from 500 to 0: h1 has %.0f while h0 still ran at 500 (held); h0 back at %.0f; h1 has %.0f when h0 lowered itself first",
	      held, back, freed);
}

/*
 * Rates travel as text of 6 decimals: a host that runs at its grant as
 * the reply wrote it acknowledges it, though the text (666.666667 of
 * 2000 / 3) is above the share Redis keeps.
 */
static void test_quarantine_text(void)
{
	struct host hs[3];
	double held, freed;

	res = "quar6";
	configure("lease", "2000", "fair", "400", "0");
	hosts_init(hs, 3, 2000);
	learn(hs, 2, 400);
	round_all(hs, 2);
	/* h2 joins: h0 and h1 go from 1000 to 2000 / 3, still at 1000 */
	renew(&hs[2], 0);
	round_all(hs, 2);
	renew(&hs[2], 0);
	held = hs[2].rate;
	/* h0 and h1 at 666.666667, as the replies wrote it */
	round_all(hs, 2);
	renew(&hs[2], 0);
	freed = hs[2].rate;
	check(held < 1 && fabs(freed - 2000.0 / 3) < 0.001,
	      "a decrease acknowledged at the reply's text",
	      "h0, h1 from 1000 to %.6f: h2 has %.6f while they ran at 1000, %.6f once they ran at the reply's rate",
	      hs[0].rate, held, freed);
}

/* Two hosts wanting 5000/s of resource @r, out of learning, renewed twice. */
static void settled(struct host *hs, const char *r, const char *cap,
		    const char *algo)
{
	res = r;
	configure("lease", cap, algo, "400", "0");
	hosts_init(hs, 2, 5000);
	learn(hs, 2, 400);
	round_all(hs, 2);
	round_all(hs, 2);
}

/*
 * A host below its demand on its way up is told to renew in a quarter of
 * the refresh (13 ms of 50): short of its share while capacity is still
 * held for another host, or after a rise of more than a quarter; the
 * refresh otherwise (a steady share, a decrease, a host that has all it
 * wants).
 */
static void test_soon(void)
{
	long long steady, fell, shortly, rose, again, met;
	double short_rate, rose_rate;
	struct host hs[2], *s;

	settled(hs, "soon", "5000", "fair");
	steady = hs[0].next_ms == hs[1].next_ms ? hs[0].next_ms : -1;
	/* h0's demand falls to 1000; it still runs at 2500 when it asks */
	hs[0].wants = 1000;
	renew(&hs[0], 0);
	fell = hs[0].next_ms;
	renew(&hs[1], 0);	/* share 4000, 2500 free */
	shortly = hs[1].next_ms;
	short_rate = hs[1].rate;
	renew(&hs[0], 0);	/* acknowledged at 1000 */
	met = hs[0].next_ms;
	renew(&hs[1], 0);
	rose = hs[1].next_ms;
	rose_rate = hs[1].rate;
	renew(&hs[1], 0);
	again = hs[1].next_ms;
	/* statics of 300 on 500: the second host short for good */
	settled(hs, "soon_s", "500", "static");
	s = hs[0].rate < hs[1].rate ? &hs[0] : &hs[1];
	check(steady == 50 && fell == 50 && shortly == 13 &&
	      fabs(short_rate - 2500) < 1 && met == 50 && rose == 13 &&
	      fabs(rose_rate - 4000) < 1 && again == 50 &&
	      fabs(s->rate - 200) < 1 && s->next_ms == 50,
	      "a host on its way up renews soon",
	      "renew after (ms): steady shares %lld; h0 after its decrease %lld; h1 short at %.0f of 4000 %lld; h0 at its demand %lld; h1 risen to %.0f %lld, then %lld; a static host short at %.0f of 300 %lld",
	      steady, fell, short_rate, shortly, met, rose_rate, rose, again,
	      s->rate, s->next_ms);
}

/* FLUSHALL: learning for one lease, the hosts' rates summed stay <= C. */
static void test_flush(void)
{
	struct host hs[4];
	double t0, worst = 0, newcomer = 0, late = 0;
	redisReply *r;

	res = "flush";
	configure("lease", "5000", "fair", "400", "0");
	hosts_init(hs, 4, 5000);
	learn(hs, 3, 400);
	round_all(hs, 3);
	r = redisCommand(rc, "FLUSHALL");
	freeReplyObject(r);
	t0 = mono_ms();
	while (mono_ms() - t0 < 900) {
		int i;

		for (i = 0; i < 4; i++) {
			if (i == 2)
				continue;	/* h2 holds its lease, silent */
			if (renew(&hs[i], 0) < 0)
				configure("lease", "5000", "fair", "400", "0");
			worst = fmax(worst, total(hs, 4));
		}
		if (mono_ms() - t0 < 350)
			newcomer = fmax(newcomer, hs[3].rate);
		late = hs[3].rate;
		sleep_ms(20);
	}
	check(worst <= 5000 + EPS && newcomer == 0 && late > 1600,
	      "lost state: learning mode",
	      "max sum %.0f of 5000; a new host got %.0f during learning, %.0f after (3 share 5000)",
	      worst, newcomer, late);
}

/*
 * FLUSHALL while a host whose lease ended runs at its floor: learning
 * lasts the lease plus the hold, so its floor is not handed out again.
 */
static void test_flush_floor(void)
{
	struct host hs[3];
	double t0, worst = 0;
	redisReply *r;
	int i;

	res = "flushf";
	hold = "600";
	configure("lease", "1000", "fair", "400", "0");
	hold = "0";
	hosts_init(hs, 3, 1000);
	hs[2].want_floor = 300;
	learn(hs, 3, 1000);
	round_all(hs, 3);
	while (mono_ms() < hs[2].exp_ms + 20) {	/* h2 falls silent */
		renew(&hs[0], 0);
		renew(&hs[1], 0);
		sleep_ms(20);
	}
	r = redisCommand(rc, "FLUSHALL");
	freeReplyObject(r);
	t0 = mono_ms();
	while (mono_ms() - t0 < 1300) {
		for (i = 0; i < 2; i++) {
			if (renew(&hs[i], 0) < 0) {
				hold = "600";
				configure("lease", "1000", "fair", "400", "0");
				hold = "0";
			}
			worst = fmax(worst, total(hs, 3));
		}
		sleep_ms(20);
	}
	check(worst <= 1000 + EPS && hs[0].rate > 450,
	      "lost state: learning covers floors",
	      "a silent host at its floor of %.0f: max sum %.0f of 1000, h0 %.0f after",
	      hs[2].floor, worst, hs[0].rate);
}

/* A floor is reserved: a new host gets it even when others want all. */
static void test_floor(void)
{
	struct host hs[3];
	double worst = 0;
	int i;

	res = "floor";
	configure("lease", "1000", "fair", "400", "0");
	hosts_init(hs, 3, 1000);
	learn(hs, 2, 400);
	hs[2].want_floor = 100;
	for (i = 0; i < 5; i++) {
		round_all(hs, 3);
		worst = fmax(worst, total(hs, 3));
	}
	check(hs[2].floor == 100 && worst <= 1000 + EPS, "floors",
	      "floor granted %.0f, has %.0f %.0f %.0f, max sum %.0f of 1000",
	      hs[2].floor, hs[0].rate, hs[1].rate, hs[2].rate, worst);
}

/* Batch: take until >= 2 x 10^4 tokens at 10^4/s; accuracy against TIME. */
static void test_batch(void)
{
	long long got = 0, calls = 0;
	double t0, t1, want;
	redisReply *r;

	res = "batch";
	/* a burst of 0.5 s: a loaded machine's pauses lose no tokens */
	configure("batch", "10000", "fair", "1000", "5000");
	r = fcall("rl_take", 2, "5000", "0");
	freeReplyObject(r);
	t0 = mono_ms();
	while (got < 20000) {
		r = fcall("rl_take", 2, "5000", "0");
		if (!r || r->type != REDIS_REPLY_ARRAY)
			break;
		got += r->element[0]->integer;
		calls++;
		freeReplyObject(r);
		sleep_ms(1);
	}
	t1 = mono_ms();
	want = (t1 - t0) * 10;
	check(fabs(got - want) <= want * 0.01, "batch bucket accuracy",
	      "%lld tokens in %.1f ms at 10000/s (%.0f expected), error %.3f %%, %lld calls",
	      got, t1 - t0, want, 100 * (got - want) / want, calls);
	r = fcall("rl_give", 1, "9000");
	check(r && r->type == REDIS_REPLY_INTEGER && r->integer <= 5000,
	      "batch give back", "took back %lld of 9000 (burst 5000)",
	      r ? r->integer : -1);
	freeReplyObject(r);
}

/* Whether @r is an error reply beginning with @code. */
static int is_error(const redisReply *r, const char *code)
{
	return r && r->type == REDIS_REPLY_ERROR &&
	       !strncmp(r->str, code, strlen(code));
}

/* The last configuration written wins; bad ones change nothing. */
static void test_config(void)
{
	redisReply *r;
	int ok;

	res = "cfg";
	configure("lease", "100", "fair", "400", "0");
	configure("lease", "200", "static", "400", "0");
	r = fcall("rl_config", 9, "x", "lease", "0", "fair", "400", "50",
		  "1000", "0", "0");
	ok = is_error(r, "RLARG");
	freeReplyObject(r);
	r = redisCommand(rc, "HMGET rl:{cfg}:cfg capacity algorithm version");
	ok = ok && r && r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
	     r->element[0]->str && !strcmp(r->element[0]->str, "200") &&
	     !strcmp(r->element[1]->str, "static") &&
	     !strcmp(r->element[2]->str, "2");
	check(ok, "configuration",
	      "last writer wins (capacity 200, static, version 2), a capacity of 0 is refused");
	freeReplyObject(r);
	res = "none";
	r = fcall("rl_lease", 5, "h", "1", "0", "1", "0");
	check(is_error(r, "RLNOCONF"), "unknown resource", "%s",
	      r ? r->str : "no reply");
	freeReplyObject(r);
}

/*
 * Every argument of rl_lease is checked, whether its text was seen before
 * or not: the library keeps the numbers of texts it has read, and a text
 * that is a good demand is still a bad lease_ms (below 100).
 */
static void test_args(void)
{
	static const char *const bad[][5] = {
		{ "h", "-1", "0", "1", "0" },	/* wants below 0 */
		{ "h", "nan", "0", "1", "0" },
		{ "h", "1e999", "0", "1", "0" },	/* infinite */
		{ "h", "x", "0", "1", "0" },
		{ "h", "1", "-1", "1", "0" },	/* has */
		{ "h", "1", "0", "0", "0" },	/* weight 0 */
		{ "h", "1", "0", "1", "-5" },	/* floor */
		{ "", "1", "0", "1", "0" },	/* no host */
	};
	int i, n = ARRAY_SIZE(bad), refused = 0, good, late;
	redisReply *r;

	res = "args";
	configure("lease", "100", "fair", "400", "0");
	/* each twice: the second finds the text read once */
	for (i = 0; i < 2 * n; i++) {
		r = fcall("rl_lease", 5, bad[i / 2][0], bad[i / 2][1],
			  bad[i / 2][2], bad[i / 2][3], bad[i / 2][4]);
		refused += is_error(r, "RLARG");
		freeReplyObject(r);
	}
	r = fcall("rl_lease", 5, "h", "50", "0", "1", "0");
	good = r && r->type == REDIS_REPLY_ARRAY;
	freeReplyObject(r);
	r = fcall("rl_config", 9, "x", "lease", "100", "fair", "50", "50",
		  "1000", "0", "0");
	late = is_error(r, "RLARG");
	freeReplyObject(r);
	check(refused == 2 * n && good && late,
	      "bad arguments",
	      "%d of %d bad calls refused with RLARG (each twice); a demand of 50 granted, then a lease_ms of 50 %s",
	      refused, 2 * n,
	      late ? "refused" : "taken");
}

/* The three keys of rl_lease for resource @r into @k. */
static void lease_keys(char k[3][80], const char *r)
{
	snprintf(k[0], 80, "rl:{%s}:cfg", r);
	snprintf(k[1], 80, "rl:{%s}:epoch", r);
	snprintf(k[2], 80, "rl:{%s}:members", r);
}

/*
 * rl_lease_many: resources {m}.a, {m}.none (unknown) and {m}.b of one
 * slot renewed by host h1 in one call, host h2 calling rl_lease on each
 * known one: each reply its own (RLNOCONF stays with {m}.none), and the
 * shares those of one call per resource (fair: 500 / 500 of 1000 once
 * both are members).
 */
static void test_many(void)
{
	const char *names[3] = { "{m}.a", "{m}.none", "{m}.b" };
	const char *argv[3 + 3 * 3 + 5 * 3];
	char k[3][3][80];
	double has[2] = { -1, -1 };
	redisReply *r, *e;
	int i, j, n = 0, round, errs = 0;
	bool err_own = false;

	hold = "0";
	for (i = 0; i < 3; i += 2) {
		res = names[i];
		configure("lease", "1000", "fair", "2000", "0");
		/* no learning period: the shares at once */
		r = redisCommand(rc, "HSET rl:{%s}:epoch learn_until 0", res);
		freeReplyObject(r);
	}
	r = NULL;
	argv[n++] = "FCALL";
	argv[n++] = "rl_lease_many";
	argv[n++] = "9";
	for (i = 0; i < 3; i++) {
		lease_keys(k[i], names[i]);
		for (j = 0; j < 3; j++)
			argv[n++] = k[i][j];
	}
	for (i = 0; i < 3; i++) {
		const char *a[5] = { "h1", "5000", "500", "1", "0" };

		for (j = 0; j < 5; j++)
			argv[n++] = a[j];
	}
	for (round = 0; round < 3; round++) {
		for (i = 0; i < 3; i += 2) {
			res = names[i];
			freeReplyObject(fcall("rl_lease", 5, "h2", "5000", "500",
					      "1", "0"));
		}
		freeReplyObject(r);
		r = redisCommandArgv(rc, n, argv, NULL);
	}
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
		check(0, "rl_lease_many", "reply: %s", r && r->str ? r->str : "not 3");
		freeReplyObject(r);
		return;
	}
	for (i = 0; i < 3; i++) {
		e = r->element[i];
		if (i == 1) {
			err_own = e->type == REDIS_REPLY_ERROR &&
				  strstr(e->str, "RLNOCONF");
		} else if (e->type == REDIS_REPLY_ARRAY && e->elements == 9) {
			has[i / 2] = atof(e->element[0]->str);
		} else {
			errs++;
		}
	}
	check(err_own && !errs && fabs(has[0] - 500) < 1 &&
	      fabs(has[1] - 500) < 1, "rl_lease_many",
	      "3 resources of one slot in one call: has %.1f, %s, %.1f %s",
	      has[0], err_own ? "RLNOCONF" : "no error for the unknown one",
	      has[1], "(fair: 500 each beside h2's rl_lease)");
	freeReplyObject(r);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: lease_test SOCKET [MEMBERS]\n");
		return 2;
	}
	rc = redisConnectUnix(argv[1]);
	if (!rc || rc->err) {
		fprintf(stderr, "lease_test: %s: %s\n", argv[1],
			rc ? rc->errstr : "out of memory");
		return 1;
	}
	test_config();
	test_args();
	test_many();
	test_random("rand", NHOST);
	test_random("rand100", 100);
	test_fair();
	test_proportional();
	test_expiry();
	test_quarantine();
	test_quarantine_text();
	test_floor();
	test_flush();
	test_flush_floor();
	test_batch();
	test_large(argc > 2 ? atoi(argv[2]) : 300);
	test_deep();
	test_owed();
	test_steady();
	test_soon();
	printf("%d passed, %d failed\n", passed, failed);
	redisFree(rc);
	return failed ? 1 : 0;
}
