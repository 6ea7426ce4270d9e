// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * global.c - what a global-limits agent needs of its local limiter:
 * feeding it tokens (RL_IOC_DEPOSIT), limits that hold until a deadline
 * (RL_IOC_SET_LEASE) and what its clients ask for (RL_IOC_GET_DEMAND).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "rl_internal.h"

static_assert(sizeof(struct rl_deposit) == 40, "struct rl_deposit size");
static_assert(sizeof(struct rl_lease) == 160, "struct rl_lease size");
static_assert(sizeof(struct rl_demand) == 80, "struct rl_demand size");

int rl_deposit(int fd, uint64_t count, uint64_t *excess)
{
	struct rl_deposit req;
	int ret;

	memset(&req, 0, sizeof(req));
	req.count = count;
	ret = rl_sys_ioctl(fd, RL_IOC_DEPOSIT, &req);
	if (!ret && excess)
		*excess = req.count;
	return ret;
}

int rl_set_lease(int fd, const struct rl_lease *lease)
{
	struct rl_lease req;

	if (!lease)
		return -EINVAL;
	req = *lease;
	return rl_sys_ioctl(fd, RL_IOC_SET_LEASE, &req);
}

int rl_get_demand(int fd, struct rl_demand *d)
{
	if (!d)
		return -EINVAL;
	memset(d, 0, sizeof(*d));
	return rl_sys_ioctl(fd, RL_IOC_GET_DEMAND, d);
}
