// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * queued.c - queued acquires for event loops that poll the fd
 * (RL_IOC_SUBMIT, RL_IOC_COLLECT, RL_IOC_CANCEL).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdint.h>

#include "rl_internal.h"

int rl_submit(int fd, struct rl_queued *q)
{
	if (!q)
		return -EINVAL;
	/* The fd's reservation: granted at once, nothing to collect. */
	if (rli_fast_mapped(fd) && !q->flags && !q->priority && !q->reserved0 &&
	    !q->reserved && rl_fast_take(fd, q->count)) {
		q->ticket = 0;
		q->result = 0;
		q->wait_ns = 0;
		q->ready_ns = 0;
		q->lag_ns = 0;
		return 0;
	}
	return rl_sys_ioctl(fd, RL_IOC_SUBMIT, q);
}

int rl_collect(int fd, struct rl_queued *q)
{
	if (!q)
		return -EINVAL;
	return rl_sys_ioctl(fd, RL_IOC_COLLECT, q);
}

int rl_cancel(int fd, uint64_t ticket)
{
	return rl_sys_ioctl(fd, RL_IOC_CANCEL, &ticket);
}
