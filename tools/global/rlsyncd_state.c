// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_state.c - the state file of each link, which "rlctl show"
 * prints: rls_state_dir/NAME (/run/rlsyncd/NAME), KEY=VALUE lines,
 * replaced whole (written aside, then renamed) at each refresh:
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
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rlsyncd_state.h"
#include "rlsyncd_sentinel.h"
#include "rlsyncd_conn.h"

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

void rls_state_write(const struct rls_link *l)
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

void rls_state_remove(const struct rls_link *l)
{
	char path[512];

	if (!rls_state_dir || !*rls_state_dir)
		return;
	path_of(l, path, sizeof(path), "");
	unlink(path);
}
