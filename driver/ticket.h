/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Queued acquires for event loops (ticket.c): RL_IOC_SUBMIT, SUBMIT_KEY,
 * COLLECT and CANCEL, their poll readiness, and their end at close.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_TICKET_H
#define _RL_TICKET_H

#include <linux/poll.h>

#include "ratelimit.h"

int rl_ticket_submit(struct rl_client *client, struct rl_queued __user *u);
int rl_ticket_submit_key(struct rl_client *client, struct rl_key_queued __user *u);
int rl_ticket_collect(struct rl_client *client, struct rl_queued __user *u);
int rl_ticket_cancel(struct rl_client *client, u64 __user *u);
__poll_t rl_ticket_poll(struct rl_limiter *lim, struct rl_client *client);
void rl_ticket_release(struct rl_client *client);

#endif /* _RL_TICKET_H */
