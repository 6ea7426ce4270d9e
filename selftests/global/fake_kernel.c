// SPDX-License-Identifier: GPL-2.0-only
/*
 * fake_kernel.c - the few libratelimit calls rlsyncd makes, on a simulated
 * limiter instead of /dev/ratelimit, so that selftests/global/agents.sh
 * can run real rlsyncd agents on this host without the module.
 *
 * The limiter serves min(demand, rate) tokens per second; demand is read
 * from the file $RLS_FAKE_DEMAND (tokens per second) at each stats read,
 * and callers wait (a waiter is counted) while demand exceeds the rate;
 * below it, they sleep the part $RLS_FAKE_BUSY of the time (0 without it:
 * clients that come in bursts sleep a little under any rate), and none
 * sleeps while the demand is 0.
 * Every rate set is appended to $RLS_FAKE_OUT as "MS RATE", MS being
 * CLOCK_REALTIME in milliseconds with three decimals (the tests merge the
 * agents' logs by it, and one agent often lowers its rate in the same
 * millisecond as another raises its own), with
 * RLS_FAKE_NAMES set "MS RATE NAME": each named limiter is simulated
 * apart (up to 1024).
 *
 * With RLS_FAKE_FED=1 the limiter is fed instead (batch mode: it offers
 * the module's demand and deposit, rls_k_features()): clients asking
 * $RLS_FAKE_DEMAND tokens per second take the tokens deposited, and
 * wait (a backlog of at most 50 ms of demand) while there are none. Each
 * deposit and stats read appends "MS GRANTED" to $RLS_FAKE_OUT, GRANTED
 * being the tokens the clients got in all.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libratelimit.h"
#include "../../tools/global/rlsyncd_kernel.h"

#define LIM_MAX	1024

static struct lim {
	char name[RL_NAME_MAX];
	struct rl_config cfg;
	double rate;
	double granted;
	double wait_ns;
	uint64_t waiters;
	uint64_t t_ns;
	/* fed */
	double tokens;
	double asked;
	double backlog;
} lims[LIM_MAX], *L = lims;
static unsigned int nlims;

/* The limiter of @fd (100 + its index) is the one the calls work on. */
static void pick(int fd)
{
	if (fd >= 100 && fd < 100 + (int)nlims)
		L = &lims[fd - 100];
}

static bool fed(void)
{
	const char *v = getenv("RLS_FAKE_FED");

	return v && *v == '1';
}

/* Append "MS VALUE" to $RLS_FAKE_OUT. */
static void out(double v)
{
	const char *path = getenv("RLS_FAKE_OUT");
	struct timespec ts;
	FILE *f;

	f = path ? fopen(path, "ae") : NULL;
	if (!f)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(f, "%lld.%03ld %.3f%s%s\n",
		(long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
		ts.tv_nsec / 1000 % 1000, v,
		getenv("RLS_FAKE_NAMES") ? " " : "",
		getenv("RLS_FAKE_NAMES") ? L->name : "");
	fclose(f);
}

uint64_t rl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static double demand(void)
{
	const char *path = getenv("RLS_FAKE_DEMAND");
	double d = 0;
	FILE *f;

	f = path ? fopen(path, "re") : NULL;
	if (f) {
		if (fscanf(f, "%lf", &d) != 1)
			d = 0;
		fclose(f);
	}
	return d;
}

/* Fed: @want tokens asked (with the backlog) served from those there are. */
static void serve(double want, double d)
{
	double got = want < L->tokens ? want : L->tokens;

	L->tokens -= got;
	L->granted += got;
	L->backlog = want - got < d * 0.05 ? want - got : d * 0.05;
	L->waiters = L->backlog > 0.5;
}

/*
 * The part of the time bursty callers sleep below the rate
 * ($RLS_FAKE_BUSY, 0 without it): held by their own bursts, not by it.
 */
static double bursts(void)
{
	const char *v = getenv("RLS_FAKE_BUSY");

	return v ? strtod(v, NULL) : 0;
}

/* Serve the time since the last call at the rate in force. */
static void advance(void)
{
	uint64_t now = rl_now_ns();
	double dt = (double)(now - L->t_ns) / 1e9, d = demand();

	if (fed()) {
		L->asked += d * dt;
		if (L->waiters)
			L->wait_ns += dt * 1e9;
		serve(L->backlog + d * dt, d);
		L->t_ns = now;
		return;
	}

	L->granted += (d < L->rate ? d : L->rate) * dt;
	L->waiters = d > L->rate + 0.001;
	if (L->waiters)
		L->wait_ns += dt * 1e9;
	else if (d > 0)
		L->wait_ns += dt * 1e9 * bursts();
	L->t_ns = now;
}

int rl_name_valid(const char *name)
{
	return name && *name && *name != '.' && strlen(name) < RL_NAME_MAX;
}

int rl_open_named(const char *name, uint32_t flags, uint32_t mode,
		  const struct rl_config *cfg)
{
	unsigned int i;

	(void)flags;
	(void)mode;
	for (i = 0; i < nlims && strcmp(lims[i].name, name); i++)
		;
	if (i == LIM_MAX)
		return -ENOSPC;
	if (i == nlims)
		nlims++;
	L = &lims[i];
	snprintf(L->name, sizeof(L->name), "%s", name);
	if (cfg)
		L->cfg = *cfg;
	L->t_ns = rl_now_ns();
	return 100 + (int)i;
}

int rl_close(int fd)
{
	(void)fd;
	return 0;
}

int rl_get_config(int fd, struct rl_config *cfg)
{
	pick(fd);
	(void)fd;
	*cfg = L->cfg;
	return 0;
}

int rl_set_config(int fd, const struct rl_config *cfg)
{
	pick(fd);
	(void)fd;
	if (!cfg->period_ns)
		return -EINVAL;
	advance();
	L->cfg = *cfg;
	L->rate = (double)cfg->rate * 1e9 / (double)cfg->period_ns;
	if (!fed())
		out(L->rate);
	return 0;
}

int rl_get_stats(int fd, struct rl_stats *st)
{
	pick(fd);
	(void)fd;
	advance();
	memset(st, 0, sizeof(*st));
	st->granted = (uint64_t)L->granted;
	st->waiters = L->waiters;
	st->wait_ns_total = (uint64_t)L->wait_ns;
	st->available = (uint64_t)L->tokens;
	if (fed())
		out(L->granted);
	return 0;
}

/* Fed: what is left taken out (batch mode's exit). */
int rl_try_acquire(int fd, uint64_t count, uint64_t *ready_ns)
{
	pick(fd);
	(void)fd;
	(void)ready_ns;
	advance();
	if (!fed() || L->tokens < (double)count)
		return -EAGAIN;
	L->tokens -= (double)count;
	return 0;
}

/*
 * rlsyncd_kernel.c's calls in rlsyncd-fake, declared in rlsyncd_kernel.h
 * (built with RLS_FAKE).
 */
unsigned int fake_k_features(void)
{
	return fed() ? RLS_K_DEMAND | RLS_K_DEPOSIT : 0;
}

int fake_k_demand(int fd, uint64_t d[5])
{
	pick(fd);
	if (!fed())
		return -ENOTTY;
	advance();
	d[0] = (uint64_t)L->asked;
	d[1] = 0;
	d[2] = (uint64_t)L->backlog;
	d[3] = (uint64_t)L->wait_ns;
	d[4] = L->t_ns;
	return 0;
}

int fake_k_deposit(int fd, uint64_t count, uint64_t *excess)
{
	double room;

	pick(fd);
	if (!fed())
		return -ENOTTY;
	advance();
	room = (double)L->cfg.burst - L->tokens;
	if (room < 0)
		room = 0;
	*excess = (double)count > room ? count - (uint64_t)room : 0;
	L->tokens += (double)(count - *excess);
	serve(L->backlog, demand());
	out(L->granted);
	return 0;
}
