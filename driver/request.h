/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An ACQUIRE's request from user space (request.c), shared by ACQUIRE,
 * CYCLE (cycle.c) and io_uring (uring.c).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_REQUEST_H
#define _RL_REQUEST_H

#include "ratelimit.h"

/* request.c */
int rl_acquire_read(struct rl_acquire *req, struct rl_acquire __user *u);
int rl_acquire_admit(struct rl_client *client, const struct rl_acquire *req,
		     struct rl_limiter **limp);
int rl_acquire_check(const struct rl_acquire *req);
int rl_ioctl_acquire(struct rl_client *client, struct file *file,
		     struct rl_acquire __user *argp);
int rl_acquire_prepare(struct rl_client *client, struct rl_acquire *req,
		       struct rl_acquire __user *u, struct rl_limiter **limp);
int rl_acquire_write(struct rl_acquire __user *u, const struct rl_acquire *req);

/* main.c: checks of an acquire request shared with cycle.c */
bool rl_may_boost(const struct rl_client *client, u32 prio, u32 weight);

/* cycle.c */
long rl_ioctl_cycle(struct rl_client *client, struct file *file,
		    struct rl_cycle __user *argp);

#endif /* _RL_REQUEST_H */
