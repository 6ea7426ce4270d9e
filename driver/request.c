// SPDX-License-Identifier: GPL-2.0-only
/*
 * An ACQUIRE's request between user space and the limiter: read and
 * checked once, its outputs written back once, for RL_IOC_ACQUIRE and
 * shared with RL_IOC_CYCLE (cycle.c) and io_uring (uring.c).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/fs.h>
#include <linux/uaccess.h>

#include "ratelimit.h"
#include "request.h"

/**
 * rl_acquire_check() - validate the in fields of an acquire request
 * @req: the request, as read from userspace
 *
 * Return: 0, or -EINVAL.
 */
int rl_acquire_check(const struct rl_acquire *req)
{
	BUILD_BUG_ON(ARRAY_SIZE(req->reserved) != 2);
	if (!req->count || req->flags & ~RL_ACQUIRE_FLAGS_ALL ||
	    req->priority > RL_PRIO_USER ||
	    req->reserved[0] || req->reserved[1])
		return -EINVAL;
	if (req->deadline_ns > KTIME_MAX && req->deadline_ns != RL_DEADLINE_NONE)
		return -EINVAL;
	return 0;
}

/*
 * ACQUIRE is the hot path: read its inputs and write its outputs field by
 * field, in one user access window each, rather than copying the whole
 * block both ways (copy_*_user() add out-of-line calls and the hardened
 * usercopy checks: 0.07x of a no-op ioctl in the benchmark's guest).
 * Reading also clears the outputs, so that a block the caller may read
 * but not write fails before anything is taken. Inline in
 * rl_ioctl_acquire(), as are the admission and the write-back; called
 * for RL_IOC_CYCLE's embedded request (cycle.c) and io_uring (uring.c).
 */
static __always_inline int __rl_acquire_read(struct rl_acquire *req,
					     struct rl_acquire __user *u)
{
	if (!user_access_begin(u, sizeof(*u)))
		return -EFAULT;
	unsafe_get_user(req->count, &u->count, efault);
	unsafe_get_user(req->deadline_ns, &u->deadline_ns, efault);
	unsafe_get_user(req->flags, &u->flags, efault);
	unsafe_get_user(req->priority, &u->priority, efault);
	unsafe_get_user(req->reserved[0], &u->reserved[0], efault);
	unsafe_get_user(req->reserved[1], &u->reserved[1], efault);
	unsafe_put_user(0, &u->wait_ns, efault);
	unsafe_put_user(0, &u->ready_ns, efault);
	unsafe_put_user(0, &u->lag_ns, efault);
	user_access_end();
	req->wait_ns = 0;
	req->ready_ns = 0;
	req->lag_ns = 0;
	return 0;
efault:
	user_access_end();
	return -EFAULT;
}

/**
 * rl_acquire_read() - read an ACQUIRE's inputs, clear its outputs
 * @req: filled in from @u, outputs zeroed
 * @u:   the caller's request
 *
 * Return: 0, or -EFAULT.
 */
int rl_acquire_read(struct rl_acquire *req, struct rl_acquire __user *u)
{
	return __rl_acquire_read(req, u);
}

static __always_inline int __rl_acquire_write(struct rl_acquire __user *u,
					      const struct rl_acquire *req)
{
	if (!user_access_begin(u, sizeof(*u)))
		return -EFAULT;
	unsafe_put_user(req->wait_ns, &u->wait_ns, efault);
	unsafe_put_user(req->ready_ns, &u->ready_ns, efault);
	unsafe_put_user(req->lag_ns, &u->lag_ns, efault);
	user_access_end();
	return 0;
efault:
	user_access_end();
	return -EFAULT;
}

/**
 * rl_acquire_write() - report an ACQUIRE's outputs
 * @u:   the caller's request
 * @req: the request, with its outputs filled in
 *
 * Return: 0, or -EFAULT.
 */
int rl_acquire_write(struct rl_acquire __user *u, const struct rl_acquire *req)
{
	return __rl_acquire_write(u, req);
}

/* Only priorities above RL_PRIO_MID need rl_may_boost() (main.c) to ask. */
static __always_inline int __rl_acquire_admit(struct rl_client *client,
					      const struct rl_acquire *req,
					      struct rl_limiter **limp)
{
	struct rl_limiter *lim = rl_client_limiter(client);
	int ret;

	ret = rl_acquire_check(req);
	if (ret)
		return ret;
	if (!lim)
		return -EBADFD;
	if (req->priority > RL_PRIO_MID && !rl_may_boost(client, req->priority, 1))
		return -EPERM;
	*limp = lim;
	return 0;
}

/**
 * rl_acquire_admit() - may @client make request @req?
 * @client: the client asking
 * @req:    the request, read from user space
 * @limp:   set to the client's limiter
 *
 * Return: 0, or -EINVAL, -EBADFD, -EPERM.
 */
int rl_acquire_admit(struct rl_client *client, const struct rl_acquire *req,
		     struct rl_limiter **limp)
{
	return __rl_acquire_admit(client, req, limp);
}

/**
 * rl_acquire_prepare() - read and check an ACQUIRE's request
 * @client: the client asking
 * @req:    filled in from @u, outputs zeroed
 * @u:      the caller's request, whose outputs are cleared
 * @limp:   set to the client's limiter
 *
 * Return: 0, or -EFAULT, -EINVAL, -EBADFD, -EPERM with nothing taken.
 */
int rl_acquire_prepare(struct rl_client *client, struct rl_acquire *req,
		       struct rl_acquire __user *u, struct rl_limiter **limp)
{
	if (__rl_acquire_read(req, u))
		return -EFAULT;
	return __rl_acquire_admit(client, req, limp);
}

/**
 * rl_ioctl_acquire() - RL_IOC_ACQUIRE
 * @client: the client asking
 * @file:   its file, for O_NONBLOCK
 * @argp:   the caller's request
 *
 * Return: 0 when granted, else a negative errno; the outputs are written
 * on success, -EAGAIN and -ETIMEDOUT.
 */
int rl_ioctl_acquire(struct rl_client *client, struct file *file,
		     struct rl_acquire __user *argp)
{
	struct rl_limiter *lim;
	struct rl_acquire req;
	bool nonblock;
	int ret;

	if (__rl_acquire_read(&req, argp))
		return -EFAULT;
	ret = __rl_acquire_admit(client, &req, &lim);
	if (ret)
		return ret;

	nonblock = req.flags & RL_ACQUIRE_NONBLOCK || file->f_flags & O_NONBLOCK;
	ret = rl_limiter_acquire(lim, client, &req, nonblock);
	if (ret && ret != -EAGAIN && ret != -ETIMEDOUT)
		return ret;
	if (__rl_acquire_write(argp, &req))
		return -EFAULT;
	return ret;
}
