/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rl_internal.h - private helpers of libratelimit, not installed.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RL_INTERNAL_H
#define RL_INTERNAL_H

#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "libratelimit.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * ioctl() returning -errno, with the caller's errno preserved: the library
 * never touches errno.
 */
static inline int rl_sys_ioctl(int fd, unsigned long cmd, void *arg)
{
	int saved = errno;
	int ret;

	ret = ioctl(fd, cmd, arg);
	if (ret < 0)
		ret = -errno;
	errno = saved;
	return ret;
}

/*
 * acquire.c: the absolute deadline @timeout_ns from now. The kernel takes
 * deadlines up to INT64_MAX; anything later is as good as forever
 * (RL_DEADLINE_NONE).
 */
__u64 rli_deadline(__u64 timeout_ns);

/*
 * fast.c: set once any fd of the process is mapped, never cleared: the
 * acquires of a process without a page pay one load for the fast path.
 */
extern int rli_fast_any;

/* Take from @fd's page if the process has any: rl_fast_take(), inline. */
static inline int rli_fast_try(int fd, uint64_t count)
{
	return __builtin_expect(__atomic_load_n(&rli_fast_any, __ATOMIC_RELAXED), 0) &&
	       rl_fast_take(fd, count);
}

/* fast.c: an fd of rl_open(), which rl_set_config() or rl_attach() maps. */
void rli_fast_opened(int fd);
/* fast.c: its limiter is set: map it if rl_open() opened it. */
void rli_fast_configured(int fd);
/*
 * fast.c: is @fd's page mapped? Asked before a request is read: for
 * another fd, a bad pointer still reaches the kernel (-EFAULT).
 */
int rli_fast_mapped(int fd);

#endif /* RL_INTERNAL_H */
