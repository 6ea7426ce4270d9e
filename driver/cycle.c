// SPDX-License-Identifier: GPL-2.0-only
/*
 * RL_IOC_CYCLE: give back concurrency permits and acquire again in one
 * call, under one hold of the limiter's lock (rl_limiter_cycle()). A
 * worker that holds a permit per job trades it for the next one's in one
 * syscall instead of an RL_IOC_RELEASE and an RL_IOC_ACQUIRE.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/fs.h>
#include <linux/uaccess.h>

#include "ratelimit.h"
#include "request.h"

/*
 * Read the request: its own fields, writing @release back as it is, then
 * the embedded ACQUIRE as rl_acquire_read() reads one, clearing its
 * outputs; a block the caller cannot write fails before anything is given
 * back.
 */
static int rl_cycle_read(struct rl_cycle *c, struct rl_cycle __user *u)
{
	struct rl_acquire *req = &c->acquire;
	struct rl_acquire __user *ureq = &u->acquire;

	if (!user_access_begin(u, sizeof(*u)))
		return -EFAULT;
	unsafe_get_user(c->release, &u->release, efault);
	unsafe_get_user(c->flags, &u->flags, efault);
	unsafe_get_user(c->reserved0, &u->reserved0, efault);
	unsafe_get_user(c->reserved[0], &u->reserved[0], efault);
	unsafe_get_user(c->reserved[1], &u->reserved[1], efault);
	unsafe_put_user(c->release, &u->release, efault);
	user_access_end();
	return rl_acquire_read(req, ureq);
efault:
	user_access_end();
	return -EFAULT;
}

/* Write back the outputs: @release once given back, the request's if @out. */
static int rl_cycle_write(struct rl_cycle __user *u, const struct rl_cycle *c,
			  bool released, bool out)
{
	if (released && put_user(0, &u->release))
		return -EFAULT;
	return out ? rl_acquire_write(&u->acquire, &c->acquire) : 0;
}

/**
 * rl_ioctl_cycle() - RL_IOC_CYCLE
 * @client: the fd's client
 * @file:   the fd, for O_NONBLOCK
 * @argp:   the struct rl_cycle
 *
 * Return: 0 when granted, or a negative errno as for RL_IOC_ACQUIRE;
 * -EINVAL for a bad request or more permits to give back than @client
 * holds, -EBADFD without a limiter.
 */
long rl_ioctl_cycle(struct rl_client *client, struct file *file,
		    struct rl_cycle __user *argp)
{
	struct rl_limiter *lim;
	struct rl_acquire *req;
	bool nonblock, released = false;
	struct rl_cycle c;
	int ret;

	if (rl_cycle_read(&c, argp))
		return -EFAULT;
	req = &c.acquire;
	if (c.flags || c.reserved0 || c.reserved[0] || c.reserved[1])
		return -EINVAL;
	ret = rl_acquire_admit(client, req, &lim);
	if (ret)
		return ret;

	nonblock = req->flags & RL_ACQUIRE_NONBLOCK || file->f_flags & O_NONBLOCK;
	ret = rl_limiter_cycle(lim, client, c.release, req, nonblock,
			       &released);
	if (rl_cycle_write(argp, &c, released,
			   !ret || ret == -EAGAIN || ret == -ETIMEDOUT))
		return -EFAULT;
	return ret;
}
