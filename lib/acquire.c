// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * acquire.c - taking tokens (RL_IOC_ACQUIRE) and the clock it uses.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "rl_internal.h"

uint64_t rl_now_ns(void)
{
	int saved = errno;
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		memset(&ts, 0, sizeof(ts));
	errno = saved;
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

int rl_acquire_ex(int fd, struct rl_acquire *req)
{
	if (!req)
		return -EINVAL;
	return rl_sys_ioctl(fd, RL_IOC_ACQUIRE, req);
}

int rl_acquire(int fd, uint64_t count)
{
	struct rl_acquire req = {
		.count = count,
		.deadline_ns = RL_DEADLINE_NONE,
	};

	/* The hot path: the fd's reservation, else straight to the ioctl. */
	if (rli_fast_try(fd, count))
		return 0;
	return rl_sys_ioctl(fd, RL_IOC_ACQUIRE, &req);
}

int rl_try_acquire(int fd, uint64_t count, uint64_t *ready_ns)
{
	struct rl_acquire req = {
		.count = count,
		.deadline_ns = RL_DEADLINE_NONE,
		.flags = RL_ACQUIRE_NONBLOCK,
	};
	int ret;

	if (rli_fast_try(fd, count))
		return 0;
	ret = rl_acquire_ex(fd, &req);
	if (ret == -EAGAIN && ready_ns)
		*ready_ns = req.ready_ns;
	return ret;
}

__u64 rli_deadline(__u64 timeout_ns)
{
	__u64 now = rl_now_ns();

	if (timeout_ns > (__u64)INT64_MAX - now)
		return RL_DEADLINE_NONE;
	return now + timeout_ns;
}

int rl_acquire_timeout(int fd, uint64_t count, uint64_t timeout_ns,
		       uint64_t *wait_ns)
{
	struct rl_acquire req = {
		.count = count,
		.deadline_ns = rli_deadline(timeout_ns),
	};
	int ret;

	if (rli_fast_try(fd, count)) {
		if (wait_ns)
			*wait_ns = 0;
		return 0;
	}
	ret = rl_acquire_ex(fd, &req);
	if (!ret && wait_ns)
		*wait_ns = req.wait_ns;
	return ret;
}
