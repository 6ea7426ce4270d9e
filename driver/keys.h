/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Keyed limiters (keys.c): a token bucket per key, for a limiter created
 * with RL_CONFIG_KEYED.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_KEYS_H
#define _RL_KEYS_H

#include <linux/types.h>

#include "ratelimit.h"

struct rl_keys;
struct rl_kasync;

/* Called once when a queued request of a key finishes (rl_keys_submit()). */
typedef void (*rl_kasync_done_fn)(void *arg);

int rl_keys_allowed(const struct rl_params *p);
struct rl_keys *rl_keys_create(const struct rl_params *p);
void rl_keys_free(struct rl_keys *ks);
void rl_keys_set_params(struct rl_keys *ks, const struct rl_params *p);
int rl_keys_acquire(struct rl_keys *ks, const u8 *key, u32 len, struct rl_acquire *req,
		    bool nonblock);
int rl_keys_submit(struct rl_keys *ks, const u8 *key, u32 len, struct rl_acquire *req,
		   rl_kasync_done_fn done, void *arg, struct rl_kasync **ap);
int rl_keys_async_end(struct rl_kasync *a, struct rl_acquire *req);
void rl_keys_get_key(struct rl_keys *ks, const u8 *key, u32 len, struct rl_key_state *st);
void rl_keys_get_stats(struct rl_keys *ks, struct rl_keys_stats *st);
void rl_keys_counters(struct rl_keys *ks, struct rl_counters *c, u64 *waiters);

#endif /* _RL_KEYS_H */
