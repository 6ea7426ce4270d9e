// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_link.c - one local named limiter linked to a global resource
 * (struct rls_link), in either mode.
 *
 * Lease mode: measure its demand, renew the lease in one Redis call, set
 * the limiter to the share (SET_CONFIG keeps tokens and waiters), and on
 * the local monotonic clock fall back when the lease ends.
 *
 * Batch mode (Rockset's): Redis holds one exact token bucket; the local
 * limiter is fed (RL_CONFIG_FED: its clock adds nothing) with batches of
 * tokens taken from it, sized to the local demand, so that only a few
 * local grants cost a Redis round trip. A batch is asked for whole, when
 * Redis will hold it (rl_take says when): one round trip per batch, also
 * when the hosts want more than the capacity. Tokens that do not fit
 * locally, and those left on exit, go back to Redis.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "rlsyncd"
#include "tool.h"
#include "rlsyncd_link.h"
#include "rlsyncd_redis.h"
#include "rlsyncd_cluster.h"
#include "rlsyncd_sentinel.h"
#include "rlsyncd_conn.h"
#include "rlsyncd_kernel.h"
#include "rlsyncd_conf.h"

#define NS_PER_MS	1000000ULL
/* Burst of the local limiter: this much time of its share. */
#define BURST_MS	100.0
/* Before the first reply: ask for everything, the fair share caps it. */
#define WANTS_UNKNOWN	1e12
/* Saturated when sleepers were there this part of the time or more. */
#define BUSY_PART	0.05
/* below this part of the rate it runs at, a limiter is not saturated */
#define SAT_PART	0.95
/* A demand within this part of the last one is reported as the last. */
#define DEADBAND	0.10
/*
 * A demand is reported with this part more, or one token of the window
 * it was read over when that is more: tokens are whole, and a window cuts
 * up to one off its count (at 100/s, a quarter of a 100 ms refresh counts
 * 2 or 3). A rate sized below what the clients ask holds them back, the
 * limiter reports itself saturated (the whole capacity), and it swings
 * between the two.
 */
#define HEADROOM	0.10
/*
 * A demand read over less than this part of a refresh is too short to
 * tell (a renewal made again at once, after RLNOCONF or a reconnection,
 * may find no call in it): the last one is reported again.
 */
#define WINDOW_MIN	0.2
/* Links due within this part of a refresh join a round trip. */
#define JOIN		0.6
/*
 * Renewals out of turn (a demand shift, the acknowledgment of a
 * decrease) come no sooner than this part of a refresh after the last.
 */
#define EARLY		0.25
/*
 * A demand shift: a change by more than this part (of the larger), and by
 * this many tokens in the time looked at (a quarter of a refresh: a call
 * more or less is no shift).
 */
#define SHIFT		0.5
#define SHIFT_TOKENS	10.0
/*
 * With sentinels or a cluster, while the lease runs: a link that cannot
 * reach its primary asks again this often (the sentinels, or the slot
 * map), so it follows a promotion before its lease ends.
 */
#define FOLLOW_MS	100.0
/* The local bucket holds this many refresh intervals at the capacity. */
#define LOCAL_REFRESHES	2
/* The local bucket is looked at this many times a refresh interval. */
#define LOOKS		4
/* Without a known capacity: the local bucket's size. */
#define LOCAL_MAX	1000000000ULL

/* --- The state file (rls_state_dir/NAME) --- */

/*
 * The state file of each link, which "rlctl show" prints:
 * rls_state_dir/NAME (/run/rlsyncd/NAME), KEY=VALUE lines, replaced
 * whole (written aside, then renamed) at each refresh:
 *
 *   pid=1234              the agent
 *   resource=api          the global resource
 *   redis=10.0.0.5:6379   or "sentinel master NAME"
 *   mode=lease            or batch
 *   has=2226.000          lease: the rate the limiter runs at, tokens/s
 *   granted=2226.000      lease: the share of Redis's last reply
 *   wants=5000.000        the demand reported, tokens/s
 *   expires_ns=...        lease: its end, CLOCK_MONOTONIC ns (0: none)
 *   kernel_lease=1        lease: the module ends the lease itself
 *   safe=pessimistic      lease: pessimistic, optimistic or RATE/s
 *   batch=300.000         batch: tokens per round trip now
 *   taken=... given=... calls=...   batch: tokens and round trips
 *   redis_up=1            0 while Redis is unreachable
 *   errors=0              failed Redis calls and connections, in all
 *   rtt_ms=0.412          the last round trip to Redis that succeeded
 *   wait_short=0          grants WAIT found short of wait-replicas
 *   primary=10.0.0.6:6379 the server connected to ("" while none)
 *   updated_ns=...        CLOCK_MONOTONIC time of the write
 *
 * Documented in rlsyncd(8); errors are ignored (the state is a view).
 */
const char *rls_state_dir = "/run/rlsyncd";

static void path_of(const struct rls_link *l, char *buf, size_t len,
		    const char *suffix)
{
	snprintf(buf, len, "%s/%s%s", rls_state_dir, l->spec.name, suffix);
}

static void write_mode(FILE *f, const struct rls_link *l)
{
	const struct rls_spec *s = &l->spec;

	if (s->batch) {
		fprintf(f, "mode=batch\nbatch=%.3f\ntaken=%llu\ngiven=%llu\ncalls=%llu\n",
			l->b.batch, (unsigned long long)l->b.taken,
			(unsigned long long)l->b.given,
			(unsigned long long)l->b.calls);
		return;
	}
	fprintf(f, "mode=lease\nhas=%.3f\ngranted=%.3f\nexpires_ns=%llu\nkernel_lease=%d\n",
		l->running < 0 ? 0 : l->running, l->lease.has,
		(unsigned long long)l->exp_ns, !!(l->kernel & RLS_K_LEASE));
	if (s->safe == RLS_SAFE)
		fprintf(f, "safe=%.3f/s\n", s->safe_rate);
	else
		fprintf(f, "safe=%s\n", s->safe == RLS_OPTIMISTIC ?
			"optimistic" : "pessimistic");
}

/* Write @l's state file in rls_state_dir. */
static void state_write(const struct rls_link *l)
{
	char tmp[512], path[512], who[RLS_ADDR_MAX + RLS_ID_MAX + 32];
	FILE *f;

	if (!rls_state_dir || !*rls_state_dir)
		return;
	mkdir(rls_state_dir, 0755);
	path_of(l, tmp, sizeof(tmp), ".tmp");
	path_of(l, path, sizeof(path), "");
	f = fopen(tmp, "we");
	if (!f)
		return;
	fprintf(f, "pid=%d\nresource=%s\nredis=%s\n", (int)getpid(),
		l->spec.resource, l->spec.ha.n ?
		rls_sentinel_label(&l->spec, who, sizeof(who)) : l->spec.redis);
	write_mode(f, l);
	fprintf(f, "wants=%.3f\nredis_up=%d\nerrors=%llu\nrtt_ms=%.3f\n",
		l->wants, !l->down, (unsigned long long)l->errors, l->rtt_ms);
	fprintf(f, "wait_short=%llu\nprimary=%s\n", (unsigned long long)l->wait_short,
		rls_redis_broken(l->redis) ? "" : rls_redis_addr(l->redis));
	fprintf(f, "updated_ns=%llu\n", (unsigned long long)rl_now_ns());
	if (fclose(f) || rename(tmp, path))
		unlink(tmp);
}

/* Remove @l's state file. */
static void state_remove(const struct rls_link *l)
{
	char path[512];

	if (!rls_state_dir || !*rls_state_dir)
		return;
	path_of(l, path, sizeof(path), "");
	unlink(path);
}

/* --- The link --- */

/* The drift margin taken off a lease. */

static double margin_ms(const struct rls_lease *l)
{
	return 10 + l->lease_ms / 50;
}

/* @l's limiter at @rate tokens per second, into @cfg. */
static void rate_config(const struct rls_link *l, double rate,
			struct rl_config *cfg)
{
	*cfg = l->base;
	cfg->flags &= ~RL_CONFIG_UNLIMITED;
	cfg->catchup = RL_CATCHUP_STRICT;
	/* rounded down: the shares of all hosts must still fit */
	if (rate >= 1000) {
		cfg->rate = (uint64_t)floor(rate);
		cfg->period_ns = 1000000000ULL;
	} else {
		cfg->rate = (uint64_t)floor(rate * 1000);
		cfg->period_ns = 1000000000000ULL;
	}
	/*
	 * Paused, the burst of the capacity (or of the last share): requests
	 * of any size the share allows stay valid and count as demand, and
	 * no token comes, as the clock adds none at rate 0.
	 */
	if (!rate)
		rate = fmax(l->spec.capacity, l->running);
	cfg->burst = (uint64_t)fmax(1, llround(rate * BURST_MS / 1000));
}

/* What the limiter falls back to when a lease at @rate ends. */
static double fallback(const struct rls_link *l, double rate)
{
	if (l->spec.safe == RLS_OPTIMISTIC)
		return rate;
	if (l->spec.safe == RLS_SAFE)
		return fmin(rate, l->lease.floor);
	return 0;
}

/*
 * The limiter at @rate until @until (CLOCK_MONOTONIC; 0: no lease), then
 * at @after. With the module's lease the kernel itself falls back at
 * @until, or at once when this agent dies (its fd closed); without it
 * (an older module) the agent does, in rls_link_expire().
 */
static int push(struct rls_link *l, double rate, uint64_t until, double after)
{
	struct rl_config cfg, fb;
	int ret = -ENOTTY;

	rate_config(l, rate, &cfg);
	if (l->kernel & RLS_K_LEASE) {
		if (!until)	/* no deadline: end the lease at this rate */
			fb = cfg;
		else
			rate_config(l, after, &fb);
		if (until || l->leased)
			ret = rls_k_lease(l->fd, &cfg, &fb, until);
		if (!ret)
			l->leased = until != 0;
	}
	if (ret == -ENOTTY)
		ret = rl_set_config(l->fd, &cfg);
	return ret;
}

/* Run the local limiter at @rate tokens per second, leased until @until. */
static void apply(struct rls_link *l, double rate, uint64_t until)
{
	int ret = push(l, rate, until, fallback(l, rate));

	if (ret) {
		fprintf(stderr, PROG ": %s: setting %.3f/s: %s\n", l->spec.name,
			rate, strerror(-ret));
		return;
	}
	if (rls_verbose && fabs(rate - l->running) > 0.000001)
		printf(PROG ": %s: %.3f/s\n", l->spec.name, rate);
	l->running = rate;
}

/*
 * Tokens per second the clients asked since *@from, from the kernel's
 * demand, over *@dt seconds; *@from becomes now.
 */
static double kernel_demand(struct rls_link *l, struct rls_demand *from,
			    double *dt, bool *sat)
{
	struct rls_demand d;
	double asked;

	if (rls_k_demand(l->fd, &d))
		return -1;
	*dt = (double)(d.now_ns - from->now_ns) / 1e9;
	if (*dt <= 0)
		return -1;
	/* refused tries are counted in asked: only sleepers hide demand */
	*sat = d.queued > 0 ||
	       (double)(d.busy_ns - from->busy_ns) / 1e9 / *dt >= BUSY_PART;
	asked = (double)(d.asked - from->asked) / *dt;
	*from = d;
	return asked;
}

/* The same from the statistics (an older module): granted, refused. */
static double stats_demand(struct rls_link *l, struct rl_stats *from,
			   uint64_t *from_ns, uint64_t now, double *dt,
			   bool *sat)
{
	struct rl_stats st;
	double g, refused, busy;

	*dt = (double)(now - *from_ns) / 1e9;
	if (rl_get_stats(l->fd, &st) || *dt <= 0)
		return -1;
	g = (double)(st.granted - from->granted) / *dt;
	refused = (double)(st.rejected - from->rejected +
			   st.timeouts - from->timeouts) / *dt;
	busy = (double)(st.wait_ns_total - from->wait_ns_total) / 1e9 / *dt;
	*from = st;
	*from_ns = now;
	*sat = refused > 0 || st.waiters > 0 || busy >= BUSY_PART;
	return g;
}

/* Whether a limiter's callers were held back (slept, or were refused). */
enum rls_held {
	RLS_FREE,	/* not at all */
	RLS_BURSTS,	/* asking below SAT_PART of its rate: by their bursts */
	RLS_SATURATED,	/* by its rate */
};

/*
 * What @l wants, in tokens per second, from what the clients asked since
 * the snapshot *@d (the kernel's demand) or *@st at *@st_ns (the
 * statistics), which become now: what was asked (granted, refused,
 * waiting), with HEADROOM. When callers slept (their pace is the
 * limiter's, so what they ask hides what they want), or, without the
 * kernel's demand figures, were refused, while asking at least SAT_PART
 * of the rate it runs at, the limiter is saturated and asks for the whole
 * capacity (the algorithm gives it its share). -1: not known. *@held
 * says which of these it was, when not NULL.
 */
static double demand_since(struct rls_link *l, uint64_t now,
			   struct rls_demand *d, struct rl_stats *st,
			   uint64_t *st_ns, enum rls_held *held)
{
	double asked = -1, dt = 0;
	bool sat = false;

	if (l->kernel & RLS_K_DEMAND)
		asked = kernel_demand(l, d, &dt, &sat);
	if (asked < 0)
		asked = stats_demand(l, st, st_ns, now, &dt, &sat);
	/*
	 * Callers that slept while asking well below the rate the limiter
	 * runs at were held by their own bursts (or by the permits), not by
	 * the rate: what they asked is what they want.
	 */
	if (held)
		*held = sat ? RLS_SATURATED : RLS_FREE;
	if (sat && asked >= 0 && l->running > 0 && asked < SAT_PART * l->running) {
		sat = false;
		if (held)
			*held = RLS_BURSTS;
	}
	if (asked < 0)
		return -1;
	if (sat)
		return l->spec.configure ? fmax(l->spec.capacity, asked)
					 : WANTS_UNKNOWN;
	return asked > 0 ? fmax(asked * (1 + HEADROOM), asked + 1 / dt) : 0;
}

/*
 * Whether @l renews at @now within half a refresh of a renewal that
 * raised its rate: Redis asks a host on its way up back in a quarter of
 * a refresh (ratelimit.lua), and a quarter just after a rate change
 * measures neither rate (one measured so lowered a host below its demand
 * by 5 %): too soon to tell. Lease mode only (take_lease() sets @rose).
 */
static bool soon_after_rise(const struct rls_link *l, uint64_t now)
{
	return l->rose &&
	       now - l->sent_ns < (uint64_t)(l->spec.refresh_ms / 2 * NS_PER_MS);
}

/*
 * Demand in tokens per second since the last call (demand_since()), or
 * the last demand when within 10 % of it, or when too soon to tell: read
 * over less than WINDOW_MIN of a refresh, or soon_after_rise().
 */
static double link_demand(struct rls_link *l, uint64_t now)
{
	double asked;

	if (soon_after_rise(l, now) || (l->wants_ns && now - l->wants_ns <
	    (uint64_t)(WINDOW_MIN * l->spec.refresh_ms * NS_PER_MS)))
		return l->wants;
	l->wants_ns = now;
	asked = demand_since(l, now, &l->dlast, &l->last, &l->last_ns, NULL);
	/* the demand's quick look (demand_shifted()) starts again here */
	l->dpeek = l->dlast;
	l->peek = l->last;
	l->peek_ns = now;
	if (asked < 0)
		return l->wants;
	/*
	 * Small changes are noise (a tenth of a second of a paced client
	 * is a few dozen calls): each would move the shares, and a share
	 * that shrinks stays reserved until its host acknowledges it.
	 */
	if (l->wants > 0 && fabs(asked - l->wants) <= DEADBAND * l->wants)
		return l->wants;
	return asked;
}

/* What @l reports when its callers slept. */
static double saturated_wants(const struct rls_link *l)
{
	return l->spec.configure ? l->spec.capacity : WANTS_UNKNOWN;
}

/* When demand_shifted() looks next at @l (UINT64_MAX: never). */
static uint64_t peek_at(const struct rls_link *l)
{
	uint64_t q = (uint64_t)(l->spec.refresh_ms * EARLY * NS_PER_MS);

	if (l->spec.batch || !l->exp_ns || l->down || l->fails)
		return UINT64_MAX;
	return (l->peek_ns > l->sent_ns ? l->peek_ns : l->sent_ns) + q;
}

/*
 * Between renewals, every quarter of a refresh: whether what @l's clients
 * asked in the last quarter (at least) moved by more than half of what it
 * told Redis (or of the new figure), and by SHIFT_TOKENS in that time.
 * Then it renews at once (not sooner than a quarter of a refresh after
 * the last renewal), with that demand, so that a host whose clients
 * stopped gives its share back within that quarter, not at its next
 * refresh over a demand half old. A quarter in which callers slept is no
 * shift: their pace is the limiter's (a saturated limiter asks for more
 * at its next refresh). After a saturated report (the whole capacity,
 * or unknown) what the limiter runs at stands for what it told Redis,
 * and only a fall counts, in a quarter in which no caller was held back
 * at all: callers that slept, even by their own bursts, may be held by a
 * rate sized on that quarter (so that a saturated host whose demand fell
 * does not wait for its next refresh, whose report mixes the two: up to
 * 2.2 refreshes before the others could take its share).
 */
static bool demand_shifted(struct rls_link *l, uint64_t now)
{
	double dt = (double)(now - l->peek_ns) / 1e9, w, was = l->wants;
	enum rls_held held;

	if (now < peek_at(l))
		return false;
	w = demand_since(l, now, &l->dpeek, &l->peek, &l->peek_ns, &held);
	l->peek_ns = now;
	if (l->wants >= saturated_wants(l)) {
		was = l->running;
		if (held != RLS_FREE || w >= was)
			return false;
	}
	if (w < 0 || held == RLS_SATURATED ||
	    fabs(w - was) <= SHIFT * fmax(w, was) ||
	    fabs(w - was) * dt < SHIFT_TOKENS)
		return false;
	l->shift = w;
	return true;
}

/* Redis answered: say so once if it was away. */
static void link_up(struct rls_link *l)
{
	if (l->down)
		printf(PROG ": %s: redis reachable again\n", l->spec.name);
	l->down = false;
}

/* Lease renewed at @sent, replied at @got: apply what it allows. */
static void take_lease(struct rls_link *l, const struct rls_lease *ls,
		       uint64_t sent, uint64_t got, double jitter)
{
	bool timely = got - sent < rls_rpc_ms(&l->spec) * NS_PER_MS;
	double was = l->running;

	l->lease = *ls;
	l->exp_ns = sent + (uint64_t)((ls->lease_ms - margin_ms(ls)) * NS_PER_MS);
	l->mexp_ns = l->exp_ns + (uint64_t)(ls->hold_ms * NS_PER_MS);
	if (ls->has < l->running || (ls->has > l->running && timely))
		apply(l, ls->has, l->exp_ns);
	else if (l->leased)	/* the same rate, a later end */
		apply(l, l->running, l->exp_ns);
	/*
	 * jittered as its round trip (round_jitter()); a quarter of a
	 * refresh after a decrease, so Redis sees it done and frees what it
	 * held for the others
	 */
	l->next_ns = got + (uint64_t)(ls->refresh_ms * NS_PER_MS * jitter);
	l->rose = l->running > was;
	if (l->running < was)
		l->next_ns = got + (uint64_t)(ls->refresh_ms * EARLY * NS_PER_MS);
	link_up(l);
	l->fails = 0;
}

/* Say once that Redis is away. */
static void link_down(struct rls_link *l, const char *why)
{
	char who[RLS_ADDR_MAX + RLS_ID_MAX + 32];

	l->errors++;
	if (!l->down && l->spec.ha.n)
		fprintf(stderr, PROG ": %s: %s: %s; keeping the lease until it ends\n",
			l->spec.name, rls_sentinel_label(&l->spec, who, sizeof(who)), why);
	else if (!l->down)
		fprintf(stderr, PROG ": %s: redis %s: %s; keeping the lease until it ends\n",
			l->spec.name, l->spec.redis, why);
	l->down = true;
}

/*
 * Connect again if the connection broke; false while Redis is away,
 * with the reason in @err.
 */
static bool reconnect(struct rls_link *l, const char *lua, char *err,
		      unsigned int errlen)
{
	if (!rls_redis_broken(l->redis) && rls_cluster_owns(l->redis, &l->spec))
		return true;
	rls_redis_free(l->redis);
	l->redis = rls_redis_connect(&l->spec, rls_rpc_ms(&l->spec), false);
	if (l->redis && rls_redis_library(l->redis, lua)) {
		snprintf(err, errlen, "%s", rls_redis_error(l->redis));
		rls_redis_free(l->redis);
		l->redis = NULL;
	} else if (!l->redis) {
		snprintf(err, errlen, "%s", rls_redis_error(NULL));
	}
	return l->redis;
}

/*
 * The refresh interval after the first failure, doubled after each one
 * in a row up to 8 refreshes, at most 5 s (or one refresh if longer):
 * the kernel's lease fallback holds the limit meanwhile. With sentinels
 * or a cluster, while the lease (or the floor's hold) runs, FOLLOW_MS
 * (at most a refresh): a failover promotes a replica within seconds, and
 * each try asks who the primary is now, so the link follows it at once.
 */
static uint64_t retry_ns(const struct rls_link *l)
{
	double ms = l->spec.refresh_ms * (1U << (l->fails < 3 ? l->fails : 3));

	if ((l->spec.ha.n || l->spec.conn.cluster) && l->exp_ns &&
	    rl_now_ns() < l->mexp_ns)
		return (uint64_t)(fmin(FOLLOW_MS, l->spec.refresh_ms) * NS_PER_MS);

	if (ms > 5000 && ms > l->spec.refresh_ms)
		ms = l->spec.refresh_ms > 5000 ? l->spec.refresh_ms : 5000;
	return (uint64_t)(ms * NS_PER_MS);
}

/*
 * The sentinels name @primary, not the primary of @l's connection (@how:
 * how they said so): make the connection stale, and renew through the
 * new primary at once.
 */
static void primary_moved(struct rls_link *l, const char *how,
			  const char *primary)
{
	char who[RLS_ID_MAX + 32];

	fprintf(stderr, PROG ": %s: %s: %s %s, not %s: connecting to it\n",
		l->spec.name, rls_sentinel_label(&l->spec, who, sizeof(who)),
		how, primary, rls_redis_addr(l->redis));
	rls_redis_stale(l->redis);
	l->next_ns = rl_now_ns();
}

/*
 * With sentinels: ask them whether @l's primary is still theirs, after a
 * grant WAIT found short (@short_acks; at most once a second) and every
 * half lease; another answer makes the connection stale.
 */
static void sentinel_follow(struct rls_link *l, unsigned int short_acks)
{
	char err[400], now_at[RLS_ADDR_MAX + 16];
	uint64_t now = rl_now_ns(), every;
	struct rls_conn c = l->spec.conn;

	if (!l->spec.ha.n || rls_redis_broken(l->redis))
		return;
	every = short_acks ? 1000000000ULL :
		(uint64_t)(l->spec.lease_ms / 2 * 1000000.0);
	if (now - l->asked_ns < every)
		return;
	l->asked_ns = now;
	/* sentinels away: keep the primary, which still answers */
	if (rls_sentinel_primary(&l->spec, rls_rpc_ms(&l->spec), &c, err,
				 sizeof(err)))
		return;
	rls_conn_label(&c, now_at, sizeof(now_at));
	if (strcmp(now_at, rls_redis_addr(l->redis)))
		primary_moved(l, "the primary is", now_at);
}

/*
 * With sentinels: the switches to another primary that their
 * +switch-master events announced (rls_sentinel_switched()); one to
 * another primary than @l's makes its connection stale, and a link that
 * lost its primary and backs off (retry_ns()) retries at once.
 */
static void sentinel_watch(struct rls_link *l)
{
	char who[RLS_ID_MAX + 32];
	uint64_t now = rl_now_ns();
	const char *primary;

	if (!l->spec.ha.n ||
	    !rls_sentinel_switched(&l->spec, now, &l->switches, &primary))
		return;
	if (rls_redis_broken(l->redis)) {
		if (l->next_ns > now)
			fprintf(stderr, PROG ": %s: %s: +switch-master to %s: %s\n",
				l->spec.name,
				rls_sentinel_label(&l->spec, who, sizeof(who)),
				primary, "connecting to it now");
		l->next_ns = now;
		return;
	}
	if (strcmp(primary, rls_redis_addr(l->redis)))
		primary_moved(l, "+switch-master to", primary);
}

/* Before a renewal: connected, or down and retried later. */
static bool lease_ready(struct rls_link *l, uint64_t now, const char *lua)
{
	char err[720];

	l->next_ns = now + (uint64_t)(l->spec.refresh_ms * NS_PER_MS);
	if (reconnect(l, lua, err, sizeof(err)))
		return true;
	link_down(l, err);
	l->shift = -1;
	l->next_ns = now + retry_ns(l);
	l->fails++;
	state_write(l);
	return false;
}

/* What @l's renewal reports: its demand, its rate, its weight and floor. */
static void lease_args(struct rls_link *l, uint64_t now, double in[4])
{
	if (l->shift >= 0) {
		/* demand_shifted()'s: the window it read ends now */
		l->wants = l->shift;
		l->dlast = l->dpeek;
		l->last = l->peek;
		l->last_ns = l->peek_ns;
		l->shift = -1;
	} else {
		l->wants = link_demand(l, now);
	}
	l->rose = false;
	/*
	 * Less wanted than run at: run at that first (a decrease is always
	 * safe; not below the floor, which Redis keeps), so that Redis, told
	 * so, frees the rest for the others at once instead of holding it
	 * until this host acknowledges it.
	 */
	if (fmax(l->wants, l->lease.floor) < l->running && l->exp_ns &&
	    now < l->exp_ns)
		apply(l, fmax(l->wants, l->lease.floor), l->exp_ns);
	l->sent_ns = now;
	in[0] = l->wants;
	in[1] = fmax(l->running, 0);
	in[2] = l->spec.weight;
	in[3] = l->spec.safe == RLS_SAFE ? l->spec.safe_rate : 0;
}

/**
 * struct reply - a renewal and its reply, kept until all of the round
 * trip's are
 * @l:          the link renewed
 * @rn:         what it reports (also for a redirection's retry), and the
 *              reply, or the send's error
 * @slot:       the hash slot of its resource
 * @k:          the renewals of the call it starts (0: in the call of one
 *              before it)
 * @short_acks: grants of its call that WAIT found short
 * @got:        when the reply was read
 */
struct reply {
	struct rls_link *l;
	struct rls_renewal rn;
	unsigned int slot;
	unsigned int k;
	unsigned int short_acks;
	uint64_t got;
};

/* Renewals by slot, then in the order of the links. */
static int by_slot(const void *a, const void *b)
{
	const struct reply *x = a, *y = b;

	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	return x->l < y->l ? -1 : x->l > y->l;
}

/*
 * Queue the renewals @rp (@k, of one slot) in one call on @r (rl_lease,
 * or rl_lease_many for more than one); or, once queued, read its reply.
 */
static void lease_call(struct rls_redis *r, struct reply *rp, unsigned int k,
		       bool send, uint64_t now, const char *host)
{
	struct rls_renewal *rn[RLS_GROUP_MAX] = { &rp[0].rn };
	unsigned int i, acks;
	int ret;

	for (i = 1; i < k; i++)
		rn[i] = &rp[i].rn;
	if (send) {
		for (i = 0; i < k; i++) {
			rp[i].rn.res = rp[i].l->spec.resource;
			lease_args(rp[i].l, now, rp[i].rn.in);
		}
		ret = rls_redis_lease_send(r, host, rn, k);
		for (i = 0; ret && i < k; i++) {
			rp[i].rn.ret = ret;
			snprintf(rp[i].rn.err, sizeof(rp[i].rn.err), "%s",
				 rls_redis_error(r));
		}
		return;
	}
	if (!rp[0].rn.ret)
		rls_redis_lease_recv(r, host, rn, k);
	/* one WAIT behind the call: for the grants of all its renewals */
	acks = rls_redis_short_acks(r);
	for (i = 0; i < k; i++) {
		rp[i].short_acks = acks;
		rp[i].got = rl_now_ns();
	}
}

/*
 * The factor of a refresh after which the links renewed in one round trip
 * are due again: 0.9 to 1.1, drawn once for all of them (rand(), which
 * main() seeds per agent, so hosts started together drift apart). The
 * links of one connection stay together: a factor of their own would
 * bring the round trip of many links back after the least of theirs
 * (about 0.9 of a refresh).
 */
static double round_jitter(void)
{
	return 0.9 + 0.2 * rand() / RAND_MAX;
}

/* The reply @rp of a renewal sent at @sent, applied; @jitter as above. */
static void lease_done(struct reply *rp, uint64_t now, uint64_t sent,
		       double jitter, const char *host, const char *lua)
{
	struct rls_link *l = rp->l;
	int ret = rp->rn.ret;

	l->wait_short += rp->short_acks;
	if (!ret) {
		l->rtt_ms = (double)(rp->got - sent) / NS_PER_MS;
		take_lease(l, &rp->rn.out, sent, rp->got, jitter);
	} else if (ret == -ENOENT && l->spec.configure) {
		/* Redis lost the resource: configure it again, then renew */
		if (!rls_redis_config(l->redis, &l->spec, host))
			l->next_ns = now;
	} else if (ret == -ENOEXEC) {
		if (!rls_redis_library(l->redis, lua))
			l->next_ns = now;
	} else if (ret == -EIO && rls_redis_broken(l->redis) && !l->fails++) {
		/* the connection broke: reconnect at once, its error says more */
		l->next_ns = now;
	} else if (ret == -EAGAIN) {
		/* a failover or a migration under way: soon again */
		link_down(l, rp->rn.err);
		l->next_ns = rp->got + retry_ns(l);
		l->fails++;
	} else {
		link_down(l, ret == -ENOENT ? "resource unknown (state lost?)" :
			      rp->rn.err);
	}
	sentinel_follow(l, rp->short_acks);
	state_write(l);
}

/*
 * One round trip on @r for the links of @links marked due that use it:
 * all renewals queued, those of one hash slot in one call (up to
 * RLS_GROUP_MAX; one a call where the library lacks rl_lease_many), all
 * replies read, then each applied (what a reply asks, another call,
 * comes after the pipeline is drained). A call of several that Redis
 * refused whole (a slot being migrated, MOVED) is made again one
 * resource a call, each following its redirection.
 */
static void renew(struct rls_redis *r, struct rls_link *links, unsigned int n,
		  struct reply *rep, uint64_t now, const char *host,
		  const char *lua)
{
	uint64_t sent = rl_now_ns();
	double jitter = round_jitter();
	unsigned int i, j, m = 0;

	for (i = 0; i < n; i++) {
		if (!links[i].due || links[i].redis != r)
			continue;
		links[i].due = false;
		memset(&rep[m], 0, sizeof(rep[m]));
		rep[m].l = &links[i];
		rep[m++].slot = rls_cluster_res_slot(links[i].spec.resource);
	}
	qsort(rep, m, sizeof(*rep), by_slot);
	for (i = 0; i < m; i = j) {
		for (j = i + 1; j < m && !rls_redis_single(r) &&
		     j - i < RLS_GROUP_MAX && rep[j].slot == rep[i].slot; j++)
			;
		rep[i].k = j - i;
		lease_call(r, &rep[i], rep[i].k, true, now, host);
	}
	for (i = 0; i < m; i += rep[i].k)
		lease_call(r, &rep[i], rep[i].k, false, now, host);
	for (i = 0; i < m; i++) {
		if (rep[i].rn.ret != -EXDEV)
			continue;
		rls_redis_lease(r, host, &rep[i].rn);
		rep[i].short_acks += rls_redis_short_acks(r);
		rep[i].got = rl_now_ns();
	}
	for (i = 0; i < m; i++)
		lease_done(&rep[i], now, sent, jitter, host, lua);
}

/* The same for @l alone. */
static void renew_one(struct rls_link *l, uint64_t now, const char *host,
		      const char *lua)
{
	uint64_t sent = rl_now_ns();
	struct reply rp = { .l = l };

	l->due = false;
	lease_call(l->redis, &rp, 1, true, now, host);
	lease_call(l->redis, &rp, 1, false, now, host);
	lease_done(&rp, now, sent, round_jitter(), host, lua);
}

/* Whether a link of @links marked due uses @r. */
static bool due_on(const struct rls_link *links, unsigned int n,
		   const struct rls_redis *r)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (links[i].due && links[i].redis == r)
			return true;
	}
	return false;
}

/* The largest batch: one refresh interval at the capacity. */
static double batch_max(const struct rls_link *l)
{
	if (!l->spec.configure)
		return (double)LOCAL_MAX / LOCAL_REFRESHES;
	return fmax(1, l->spec.capacity * l->spec.refresh_ms / 1000);
}

/* The smallest: a thousandth of the capacity a second (Rockset's). */
static double batch_min(const struct rls_link *l)
{
	return fmax(1, l->spec.configure ? l->spec.capacity / 1000 : 1);
}

static int batch_open(struct rls_link *l)
{
	struct rl_config cfg = {
		.rate = 0, .period_ns = 1000000000ULL, .burst = 1,
		.catchup = RL_CATCHUP_STRICT,
	};
	int fd, ret;

	fd = rl_open_named(l->spec.name, RL_ATTACH_CREATE, 0644, &cfg);
	if (fd < 0) {
		fprintf(stderr, PROG ": %s: cannot open the local limiter: %s\n",
			l->spec.name, strerror(-fd));
		return fd;
	}
	l->kernel = rls_k_features(fd);
	if (!(l->kernel & RLS_K_DEPOSIT)) {
		fprintf(stderr, PROG ": %s: mode batch needs %s\n", l->spec.name,
			"the module's RL_IOC_DEPOSIT and RL_CONFIG_FED, which it lacks (older module)");
		rl_close(fd);
		return -ENOTTY;
	}
	/* fed: nothing but deposits; the rate is not used */
	cfg.flags = rls_k_fed_flag();
	cfg.rate = 1;
	cfg.burst = (uint64_t)(batch_max(l) * LOCAL_REFRESHES);
	ret = rl_set_config(fd, &cfg);
	if (ret) {
		fprintf(stderr, PROG ": %s: a fed limiter: %s\n", l->spec.name,
			strerror(-ret));
		rl_close(fd);
		return ret;
	}
	l->fd = fd;
	l->base = cfg;
	l->last_ns = rl_now_ns();
	if (l->kernel & RLS_K_DEMAND)
		rls_k_demand(fd, &l->dlast);
	rl_get_stats(fd, &l->last);
	l->b.batch = batch_min(l);
	state_write(l);
	return 0;
}

/* Tokens that did not fit locally, or were left: back to Redis. */
static void give_back(struct rls_link *l, uint64_t n)
{
	int64_t back;

	if (!n)
		return;
	back = rls_redis_give(l->redis, l->spec.resource, n);
	if (back > 0)
		l->b.given += (uint64_t)back;
}

/*
 * Take up to @n from Redis and feed them to the limiter; the next take
 * not before Redis holds @n again (at most one refresh interval away).
 */
static void take(struct rls_link *l, uint64_t n, uint64_t now)
{
	uint64_t got = 0, excess = 0, sent = rl_now_ns();
	unsigned int short_acks;
	double wait_ms = 0;
	char err[720];
	int ret;

	ret = rls_redis_take(l->redis, l->spec.resource, n, &got, &wait_ms,
			     err, sizeof(err));
	short_acks = rls_redis_short_acks(l->redis);
	l->wait_short += short_acks;
	sentinel_follow(l, short_acks);
	l->b.calls++;
	if (ret) {
		link_down(l, ret == -ENOENT ? "resource unknown (state lost?)" : err);
		return;
	}
	link_up(l);
	l->rtt_ms = (double)(rl_now_ns() - sent) / NS_PER_MS;
	l->b.taken += got;
	l->b.ready_ns = now + (uint64_t)(fmin(wait_ms, l->spec.refresh_ms) *
					 NS_PER_MS);
	if (!got)
		return;
	ret = rls_k_deposit(l->fd, got, &excess);
	if (ret) {
		fprintf(stderr, PROG ": %s: deposit of %llu: %s\n", l->spec.name,
			(unsigned long long)got, strerror(-ret));
		excess = got;
	}
	give_back(l, excess);
}

/*
 * A few times a refresh interval, with no Redis call: size the batch to
 * the demand (one refresh interval of it). When the local bucket holds
 * less than half a batch, ask Redis for a whole batch, or wait until it
 * holds one: rl_take's reply says when, and the link wakes then.
 */
static void batch_refresh(struct rls_link *l, const char *lua)
{
	uint64_t now = rl_now_ns(), n;
	struct rl_stats st;
	char err[720];
	double wants;

	if (now < l->next_ns)
		return;
	l->next_ns = now + (uint64_t)(l->spec.refresh_ms / LOOKS * NS_PER_MS);
	wants = link_demand(l, now);
	l->wants = wants;
	l->b.batch = fmin(batch_max(l),
			  fmax(batch_min(l), wants * l->spec.refresh_ms / 1000));
	if (rl_get_stats(l->fd, &st))
		return;
	if ((double)st.available >= l->b.batch / 2 || wants <= 0)
		goto out;
	if (now < l->b.ready_ns) {	/* Redis holds no batch yet */
		if (l->b.ready_ns < l->next_ns)
			l->next_ns = l->b.ready_ns;
		goto out;
	}
	if (!reconnect(l, lua, err, sizeof(err))) {
		link_down(l, err);
		l->next_ns = now + retry_ns(l);
		l->fails++;
		goto out;
	}
	l->fails = 0;
	/* a whole batch, as far as the local bucket has room */
	n = (uint64_t)ceil(l->b.batch);
	if (l->base.burst > st.available && n > l->base.burst - st.available)
		n = l->base.burst - st.available;
	take(l, n, now);
	if (l->b.ready_ns < l->next_ns)
		l->next_ns = l->b.ready_ns;
out:
	state_write(l);
}

/* Take what is left in the local bucket and give it back to Redis. */
static void batch_close(struct rls_link *l)
{
	struct rl_stats st;

	if (rl_get_stats(l->fd, &st) || !st.available)
		return;
	if (!rl_try_acquire(l->fd, st.available, NULL))
		give_back(l, st.available);
}

int rls_link_open(struct rls_link *l)
{
	struct rl_config paused = {
		.rate = 0, .period_ns = 1000000000ULL, .burst = 1,
		.catchup = RL_CATCHUP_STRICT,
	};
	int fd, ret;

	if (l->spec.batch)
		return batch_open(l);
	fd = rl_open_named(l->spec.name, RL_ATTACH_CREATE, 0644, &paused);
	if (fd < 0) {
		fprintf(stderr, PROG ": %s: cannot open the local limiter: %s\n",
			l->spec.name, strerror(-fd));
		return fd;
	}
	ret = rl_get_config(fd, &l->base);
	if (!ret)
		ret = rl_get_stats(fd, &l->last);
	if (ret) {
		fprintf(stderr, PROG ": %s: %s\n", l->spec.name, strerror(-ret));
		rl_close(fd);
		return ret;
	}
	l->fd = fd;
	l->kernel = rls_k_features(fd);
	if (!(l->kernel & RLS_K_LEASE))
		fprintf(stderr, PROG ": %s: %s\n", l->spec.name,
			"the module has no kernel lease (RL_IOC_SET_LEASE; older module): the agent ends leases itself, so a killed agent leaves the last share");
	l->last_ns = rl_now_ns();
	if (l->kernel & RLS_K_DEMAND)
		rls_k_demand(fd, &l->dlast);
	l->dpeek = l->dlast;
	l->peek = l->last;
	l->peek_ns = l->last_ns;
	l->shift = -1;
	l->running = -1;
	apply(l, 0, 0);	/* nothing until Redis grants a share */
	state_write(l);
	return 0;
}

uint64_t rls_links_refresh(struct rls_link *links, unsigned int n,
			   const char *host, const char *lua)
{
	uint64_t now = rl_now_ns(), next = UINT64_MAX;
	struct rls_redis **conns;
	unsigned int i, j, nc = 0;
	struct reply *rep;
	bool any = false;

	for (i = 0; i < n; i++) {
		struct rls_link *l = &links[i];

		l->due = false;
		if (l->fd < 0)
			continue;
		sentinel_watch(l);
		if (l->spec.batch)
			batch_refresh(l, lua);
		else if (now >= l->next_ns || demand_shifted(l, now))
			l->due = lease_ready(l, now, lua);
		any = any || l->due;
	}
	conns = any ? calloc(n, sizeof(*conns)) : NULL;
	rep = any ? calloc(n, sizeof(*rep)) : NULL;
	for (i = 0; conns && rep && i < n; i++) {
		if (links[i].due && !due_on(links, i, links[i].redis))
			conns[nc++] = links[i].redis;
	}
	/*
	 * their connections' other links, if due within 0.6 of a refresh:
	 * those renewed together stay together, through the jitter (+-10 %)
	 * and a renewal soon after a decrease (half a refresh)
	 */
	for (i = 0; nc && i < n; i++) {
		struct rls_link *l = &links[i];
		uint64_t soon = now + (uint64_t)(l->spec.refresh_ms * JOIN * NS_PER_MS);

		/* (a link whose slot moved goes on its own: reconnects) */
		/* (nor one renewed within EARLY: too short to measure) */
		if (l->due || l->spec.batch || l->fd < 0 || l->next_ns > soon ||
		    now < l->sent_ns + (uint64_t)(l->spec.refresh_ms * EARLY * NS_PER_MS) ||
		    rls_redis_broken(l->redis) ||
		    !rls_cluster_owns(l->redis, &l->spec))
			continue;
		for (j = 0; j < nc && conns[j] != l->redis; j++)
			;
		if (j < nc) {
			l->next_ns = now + (uint64_t)(l->spec.refresh_ms * NS_PER_MS);
			l->due = true;
		}
	}
	for (j = 0; j < nc; j++)
		renew(conns[j], links, n, rep, now, host, lua);
	for (i = 0; i < n; i++) {
		if (links[i].due)	/* without memory: one at a time */
			renew_one(&links[i], now, host, lua);
		if (links[i].fd >= 0 && links[i].next_ns < next)
			next = links[i].next_ns;
		if (links[i].fd >= 0 && peek_at(&links[i]) < next)
			next = peek_at(&links[i]);
	}
	free(conns);
	free(rep);
	return next;
}

void rls_link_expire(struct rls_link *l, uint64_t now)
{
	double to = l->running;

	/*
	 * A call to Redis may block the agent for two timeouts (connect,
	 * reply): end what would end meanwhile now, not late.
	 */
	now += 2 * (uint64_t)(rls_rpc_ms(&l->spec) * NS_PER_MS);
	if (l->spec.batch || !l->exp_ns || now < l->exp_ns)
		return;
	if (l->spec.safe == RLS_PESSIMISTIC)
		to = 0;
	else if (l->spec.safe == RLS_SAFE)
		to = now < l->mexp_ns ? fmin(l->running, l->lease.floor) : 0;
	if (to >= l->running)
		return;
	fprintf(stderr, PROG ": %s: lease ended, running at %.3f/s\n",
		l->spec.name, to);
	/* the floor's own end, for the kernel: then 0 */
	if (to > 0 && (l->kernel & RLS_K_LEASE))
		l->running = push(l, to, l->mexp_ns, 0) ? l->running : to;
	else
		apply(l, to, 0);
	state_write(l);
}

void rls_link_close(struct rls_link *l, const char *host)
{
	if (l->fd < 0)
		return;
	if (l->spec.batch) {
		batch_close(l);
	} else {
		apply(l, 0, 0);
		rls_redis_leave(l->redis, l->spec.resource, host);
	}
	state_remove(l);
	rl_close(l->fd);
	l->fd = -1;
}
