/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The reservation page of a client (fast.c): tokens the kernel moved out
 * of its limiter's bucket for the client's process to take without a
 * system call. Everything here but rl_fast_init(), rl_fast_exit(),
 * rl_fast_map(), rl_fast_free() and rl_fast_closed() runs under the
 * limiter's lock (rl_lock_irq()).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_FAST_H
#define _RL_FAST_H

#include <linux/mm_types.h>

#include "ratelimit.h"

int rl_fast_init(void);
void rl_fast_exit(void);
int rl_fast_map(struct rl_client *client, struct vm_area_struct *vma);
void rl_fast_free(struct rl_client *client);
void rl_fast_closed(struct rl_client *client);
void rl_fast_sweep(struct rl_limiter *lim);
void rl_fast_reclaim(struct rl_limiter *lim);
void rl_fast_leave(struct rl_limiter *lim, struct rl_client *client);
void rl_fast_topup(struct rl_limiter *lim, struct rl_client *client);
void rl_fast_refill(struct rl_limiter *lim, u64 now);

#endif /* _RL_FAST_H */
