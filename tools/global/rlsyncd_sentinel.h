/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlsyncd_sentinel.h - Redis Sentinel (rlsyncd_sentinel.c): the primary
 * the sentinels name, and their +switch-master events.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLSYNCD_SENTINEL_H
#define RLSYNCD_SENTINEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlsyncd_conf.h"
#include "rlsyncd_conn.h"

/*
 * The primary of @s's sentinels into @c (the connection of @s with the
 * host and port they name): the sentinels asked in turn. 0, or -EIO with
 * one line in @err (never printed here).
 */
int rls_sentinel_primary(const struct rls_spec *s, double timeout_ms,
			 struct rls_conn *c, char *err, size_t errlen);
/*
 * The connection to that primary, shared, once ROLE says it is one; NULL
 * after a message if @say (rls_redis_error(NULL) says why).
 */
struct rls_redis *rls_sentinel_connect(const struct rls_spec *s,
				       double timeout_ms, bool say);
/* "sentinel master NAME", for messages, into @buf. */
const char *rls_sentinel_label(const struct rls_spec *s, char *buf,
			       size_t len);
/*
 * @s's sentinels' +switch-master events, from a subscription to each
 * (opened, one sentinel a second, and read, without waiting): whether one
 * named a new primary of @s's master since *@seen (then updated), and
 * that primary in *@primary (HOST:PORT).
 */
bool rls_sentinel_switched(const struct rls_spec *s, uint64_t now,
			   unsigned int *seen, const char **primary);

#endif /* RLSYNCD_SENTINEL_H */
