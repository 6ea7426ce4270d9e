/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlsyncd_link.h - one local limiter linked to a global resource
 * (rlsyncd_link.c), a struct rls_link of rlsyncd_state.h: opened,
 * refreshed, expired, closed.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLSYNCD_LINK_H
#define RLSYNCD_LINK_H

#include <stdint.h>

#include "rlsyncd_state.h"

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
