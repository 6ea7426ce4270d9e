/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlsyncd_link.h - one local limiter linked to a global resource
 * (rlsyncd_link.c), a struct rls_link: opened, refreshed, expired,
 * closed; its state file, for "rlctl show".
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLSYNCD_LINK_H
#define RLSYNCD_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include "libratelimit.h"
#include "rlsyncd_conf.h"
#include "rlsyncd_conn.h"
#include "rlsyncd_kernel.h"
#include "rlsyncd_redis.h"

/**
 * struct rls_batch - batch mode's figures
 * @batch:    tokens asked of Redis per round trip now
 * @taken:    tokens Redis granted, in all
 * @given:    tokens given back (excess, and what was left on exit)
 * @calls:    Redis round trips that took tokens
 * @ready_ns: when Redis will hold the next batch (rl_take's wait)
 */
struct rls_batch {
	double batch;
	uint64_t taken;
	uint64_t given;
	uint64_t calls;
	uint64_t ready_ns;
};

/**
 * struct rls_link - one local limiter linked to a global resource
 * @spec:    what it was asked
 * @fd:      the local named limiter's fd
 * @redis:   its connection, NULL while broken
 * @base:    the limiter's configuration apart from the rate
 * @running: rate the local limiter runs at, tokens per second
 * @lease:   the last lease
 * @exp_ns, @mexp_ns: end of the lease and of the floor, local clock
 * @next_ns: next refresh
 * @last_ns: when the stats were read last
 * @last:    those stats
 * @dlast:   the demand read last (with RLS_K_DEMAND)
 * @dpeek, @peek, @peek_ns: the same for the look at the demand between
 *           renewals (a demand shift renews early)
 * @shift:   the demand such a look found, to report (-1: none)
 * @sent_ns: when the last renewal was sent
 * @wants:   the demand reported last, tokens per second
 * @wants_ns: when link_demand() measured @wants (0: never)
 * @rose:    the last renewal raised the rate (soon_after_rise())
 * @kernel:  RLS_K_* the module offers
 * @leased:  a kernel lease is set on the limiter
 * @b:       batch mode's figures
 * @down:    Redis unreachable since the last success (said once)
 * @fails:   failed refreshes in a row (the retry backs off)
 * @errors:  failed Redis calls and connections, in all
 * @rtt_ms:  the last round trip to Redis that succeeded (0: none yet)
 * @wait_short: grants WAIT found short of wait-replicas, in all
 * @asked_ns: when the sentinels were last asked if the primary moved
 * @switches: the sentinels' +switch-master events seen (rls_sentinel_switched())
 * @due:     renewed in this round trip (rls_links_refresh())
 */
struct rls_link {
	struct rls_spec spec;
	int fd;
	struct rls_redis *redis;
	struct rl_config base;
	double running;
	struct rls_lease lease;
	uint64_t exp_ns;
	uint64_t mexp_ns;
	uint64_t next_ns;
	uint64_t last_ns;
	struct rl_stats last;
	struct rls_demand dlast;
	struct rls_demand dpeek;
	struct rl_stats peek;
	uint64_t peek_ns;
	double shift;
	uint64_t sent_ns;
	double wants;
	uint64_t wants_ns;
	bool rose;
	unsigned int kernel;
	bool leased;
	struct rls_batch b;
	bool down;
	unsigned int fails;
	uint64_t errors;
	double rtt_ms;
	uint64_t wait_short;
	uint64_t asked_ns;
	unsigned int switches;
	bool due;
};

/* The directory of the state files (rlsyncd -S); NULL or "": none. */
extern const char *rls_state_dir;

/* Open the local limiter of @l (created if missing); 0 or -errno. */
int rls_link_open(struct rls_link *l);

/*
 * The refreshes due of @links (@n), for @host; reconnects with @lua. The
 * lease renewals of the links on one connection go in one pipelined
 * round trip, with those of its links due within 0.6 of their refresh
 * interval. Returns when the next one is due.
 */
uint64_t rls_links_refresh(struct rls_link *links, unsigned int n,
			   const char *host, const char *lua);

/*
 * Apply what the lease allows at @now (expiry, floor, 0), or rather two
 * call timeouts later: the next call to Redis may block that long.
 */
void rls_link_expire(struct rls_link *l, uint64_t now);

/* Pause the local limiter and give the lease back (on exit). */
void rls_link_close(struct rls_link *l, const char *host);

#endif /* RLSYNCD_LINK_H */
