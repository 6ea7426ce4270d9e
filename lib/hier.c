// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * hier.c - trees of named limiters (RL_IOC_SET_PARENT, RL_IOC_GET_PARENT).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "rl_internal.h"

static_assert(sizeof(struct rl_parent) == 40, "struct rl_parent size");

int rl_set_parent(int fd, const char *parent, uint32_t weight)
{
	struct rl_parent req;

	memset(&req, 0, sizeof(req));
	req.name_ptr = (uint64_t)(uintptr_t)parent;
	req.weight = weight;
	return rl_sys_ioctl(fd, RL_IOC_SET_PARENT, &req);
}

int rl_get_parent(int fd, struct rl_parent *p, char *name)
{
	if (!p)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	p->name_ptr = (uint64_t)(uintptr_t)name;
	return rl_sys_ioctl(fd, RL_IOC_GET_PARENT, p);
}
