// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * cycle.c - giving back concurrency permits and acquiring again in one
 * call (RL_IOC_CYCLE).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "rl_internal.h"

static_assert(sizeof(struct rl_cycle) == 96, "struct rl_cycle size");

int rl_cycle_ex(int fd, struct rl_cycle *req)
{
	if (!req)
		return -EINVAL;
	return rl_sys_ioctl(fd, RL_IOC_CYCLE, req);
}

int rl_cycle(int fd, uint64_t release, uint64_t count, uint64_t *released)
{
	struct rl_cycle req;
	int ret;

	memset(&req, 0, sizeof(req));
	req.release = release;
	req.acquire.count = count;
	req.acquire.deadline_ns = RL_DEADLINE_NONE;
	ret = rl_sys_ioctl(fd, RL_IOC_CYCLE, &req);
	if (released)
		*released = release - req.release;
	return ret;
}
