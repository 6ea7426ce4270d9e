/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Global limits (global.c): deposits, leases and demand.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_GLOBAL_H
#define _RL_GLOBAL_H

#include "ratelimit.h"

int rl_ioctl_deposit(struct rl_client *client, void __user *argp);
int rl_ioctl_set_lease(struct rl_client *client, void __user *argp);
int rl_ioctl_get_demand(struct rl_client *client, void __user *argp);
void rl_global_init(struct rl_limiter *lim);
void rl_global_free(struct rl_limiter *lim);
void rl_global_detach(struct rl_limiter *lim, struct rl_client *client,
		      u64 now);
void rl_limiter_get_demand(struct rl_limiter *lim, struct rl_demand *d);
bool rl_limiter_get_lease(struct rl_limiter *lim, u64 *left, pid_t *pid);

#endif /* _RL_GLOBAL_H */
