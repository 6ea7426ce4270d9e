// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * async.c - acquires through io_uring (RL_URING_ACQUIRE, RL_URING_ACQUIRE_KEY),
 * on liburing.
 *
 * Only liburing's inline functions are used: the library does not link
 * with liburing, the caller does.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <string.h>
#include <liburing.h>

#include "rl_internal.h"

/* Fill @sqe for the command @op of fd @fd with @addr, and nothing else. */
static void rl_prep_cmd(struct io_uring_sqe *sqe, int fd, __u32 op, __u64 addr)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	sqe->addr = addr;
}

void rl_prep_acquire_async(struct io_uring_sqe *sqe, int fd,
			   struct rl_acquire *req)
{
	rl_prep_cmd(sqe, fd, RL_URING_ACQUIRE, (__u64)(uintptr_t)req);
}

void rl_prep_acquire_key_async(struct io_uring_sqe *sqe, int fd,
			       struct rl_key_acquire *req)
{
	rl_prep_cmd(sqe, fd, RL_URING_ACQUIRE_KEY, (__u64)(uintptr_t)req);
}

void rl_prep_cancel_async(struct io_uring_sqe *sqe, int fd, uint64_t target)
{
	rl_prep_cmd(sqe, fd, RL_URING_CANCEL, target);
}

/* Queue the command on @ring with @user_data; -EBUSY when the SQ is full. */
static int rl_queue_cmd(struct io_uring *ring, int fd, __u32 op, __u64 addr,
			uint64_t user_data)
{
	struct io_uring_sqe *sqe;

	if (!ring)
		return -EINVAL;
	sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	rl_prep_cmd(sqe, fd, op, addr);
	io_uring_sqe_set_data64(sqe, user_data);
	return 0;
}

/*
 * A request the fd's reservation page serves: a no-op with @user_data,
 * whose completion (res 0) says granted. Only a request of the defaults:
 * the kernel checks every other.
 */
static int rl_acquire_fast(struct io_uring *ring, int fd, struct rl_acquire *req,
			   uint64_t user_data)
{
	struct io_uring_sqe *sqe;

	if (!rli_fast_mapped(fd) || req->flags || req->priority || req->reserved[0] ||
	    req->reserved[1])
		return 0;
	sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return 0;
	if (!rl_fast_take(fd, req->count)) {
		/* Not taken: the command goes in the same slot. */
		rl_prep_cmd(sqe, fd, RL_URING_ACQUIRE, (__u64)(uintptr_t)req);
		io_uring_sqe_set_data64(sqe, user_data);
		return 1;
	}
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, user_data);
	req->wait_ns = 0;
	req->ready_ns = 0;
	req->lag_ns = 0;
	return 1;
}

int rl_acquire_async(struct io_uring *ring, int fd, struct rl_acquire *req,
		     uint64_t user_data)
{
	if (!req || !ring)
		return -EINVAL;
	if (rl_acquire_fast(ring, fd, req, user_data))
		return 0;
	return rl_queue_cmd(ring, fd, RL_URING_ACQUIRE,
			    (__u64)(uintptr_t)req, user_data);
}

int rl_acquire_key_async(struct io_uring *ring, int fd, struct rl_key_acquire *req,
			 uint64_t user_data)
{
	if (!req || !ring || !req->key_len || req->key_len > RL_KEY_MAX)
		return -EINVAL;
	return rl_queue_cmd(ring, fd, RL_URING_ACQUIRE_KEY,
			    (__u64)(uintptr_t)req, user_data);
}

int rl_cancel_async(struct io_uring *ring, int fd, uint64_t target,
		    uint64_t user_data)
{
	return rl_queue_cmd(ring, fd, RL_URING_CANCEL, target, user_data);
}

int rl_async_result(const struct io_uring_cqe *cqe)
{
	return cqe ? cqe->res : -EINVAL;
}

int rl_async_supported(int fd)
{
	struct rl_features f;
	int ret;

	ret = rl_get_features(fd, &f);
	if (ret)
		return ret;
	return !!(f.flags & RL_FEATURE_URING_CMD);
}
