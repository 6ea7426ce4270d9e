// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * client.c - giving tokens back (RL_IOC_RELEASE, RL_IOC_REFUND) and the
 * fd's place in its limiter (RL_IOC_SET_CLIENT, RL_IOC_GET_CLIENT).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "rl_internal.h"

static_assert(sizeof(struct rl_release) == 32, "struct rl_release size");
static_assert(sizeof(struct rl_client_config) == 64,
	      "struct rl_client_config size");

static int rl_give_back(int fd, unsigned long cmd, uint64_t count)
{
	struct rl_release req;

	memset(&req, 0, sizeof(req));
	req.count = count;
	return rl_sys_ioctl(fd, cmd, &req);
}

int rl_release(int fd, uint64_t count)
{
	return rl_give_back(fd, RL_IOC_RELEASE, count);
}

int rl_refund(int fd, uint64_t count)
{
	return rl_give_back(fd, RL_IOC_REFUND, count);
}

int rl_set_client(int fd, const struct rl_client_config *cc)
{
	struct rl_client_config req;

	if (!cc)
		return -EINVAL;
	/* The outputs of GET may be passed back as they are. */
	req = *cc;
	req.held = 0;
	req.granted = 0;
	return rl_sys_ioctl(fd, RL_IOC_SET_CLIENT, &req);
}

int rl_get_client(int fd, struct rl_client_config *cc)
{
	if (!cc)
		return -EINVAL;
	memset(cc, 0, sizeof(*cc));
	return rl_sys_ioctl(fd, RL_IOC_GET_CLIENT, cc);
}
