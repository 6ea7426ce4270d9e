// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * device.c - opening /dev/ratelimit and the configuration ioctls.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "rl_internal.h"

/* The ABI pins these sizes; a mismatch means a broken uapi header. */
static_assert(sizeof(struct rl_config) == 64, "struct rl_config size");
static_assert(sizeof(struct rl_acquire) == 64, "struct rl_acquire size");
static_assert(sizeof(struct rl_stats) == 128, "struct rl_stats size");
static_assert(sizeof(struct rl_features) == 64, "struct rl_features size");
static_assert(offsetof(struct rl_config, concurrency) == 32,
	      "struct rl_config layout");
static_assert(offsetof(struct rl_acquire, lag_ns) == 40,
	      "struct rl_acquire layout");
static_assert(offsetof(struct rl_stats, refunded) == 120,
	      "struct rl_stats layout");

int rl_open(int flags)
{
	int saved = errno;
	int fd;

	if (flags & ~(O_NONBLOCK | O_CLOEXEC))
		return -EINVAL;
	fd = open(RL_DEVICE_PATH, O_RDWR | O_CLOEXEC | flags);
	if (fd < 0)
		fd = -errno;
	else
		rli_fast_opened(fd);
	errno = saved;
	return fd;
}

int rl_close(int fd)
{
	int saved = errno;
	int ret;

	rl_fast_unmap(fd);
	ret = close(fd);
	if (ret < 0)
		ret = -errno;
	errno = saved;
	return ret;
}

int rl_set_config(int fd, const struct rl_config *cfg)
{
	int ret;

	if (!cfg)
		return -EINVAL;
	ret = rl_sys_ioctl(fd, RL_IOC_SET_CONFIG, (void *)cfg);
	if (!ret)
		rli_fast_configured(fd);
	return ret;
}

int rl_get_config(int fd, struct rl_config *cfg)
{
	if (!cfg)
		return -EINVAL;
	memset(cfg, 0, sizeof(*cfg));
	return rl_sys_ioctl(fd, RL_IOC_GET_CONFIG, cfg);
}

int rl_get_stats(int fd, struct rl_stats *st)
{
	if (!st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	return rl_sys_ioctl(fd, RL_IOC_GET_STATS, st);
}

int rl_get_features(int fd, struct rl_features *f)
{
	if (!f)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	return rl_sys_ioctl(fd, RL_IOC_GET_FEATURES, f);
}
