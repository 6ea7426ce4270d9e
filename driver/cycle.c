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

/*
 * Read the request, in one user access window as rl_acquire_read() does
 * for ACQUIRE, clearing the outputs and writing @release back as it is:
 * a block the caller cannot write fails before anything is given back.
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
	unsafe_get_user(req->count, &ureq->count, efault);
	unsafe_get_user(req->deadline_ns, &ureq->deadline_ns, efault);
	unsafe_get_user(req->flags, &ureq->flags, efault);
	unsafe_get_user(req->priority, &ureq->priority, efault);
	unsafe_get_user(req->reserved[0], &ureq->reserved[0], efault);
	unsafe_get_user(req->reserved[1], &ureq->reserved[1], efault);
	unsafe_put_user(c->release, &u->release, efault);
	unsafe_put_user(0, &ureq->wait_ns, efault);
	unsafe_put_user(0, &ureq->ready_ns, efault);
	unsafe_put_user(0, &ureq->lag_ns, efault);
	user_access_end();
	return 0;
efault:
	user_access_end();
	return -EFAULT;
}

/* Write back the outputs: @release once given back, the request's if @out. */
static int rl_cycle_write(struct rl_cycle __user *u, const struct rl_cycle *c,
			  bool released, bool out)
{
	if (!user_access_begin(u, sizeof(*u)))
		return -EFAULT;
	if (released)
		unsafe_put_user(0, &u->release, efault);
	if (out) {
		unsafe_put_user(c->acquire.wait_ns, &u->acquire.wait_ns, efault);
		unsafe_put_user(c->acquire.ready_ns, &u->acquire.ready_ns,
				efault);
		unsafe_put_user(c->acquire.lag_ns, &u->acquire.lag_ns, efault);
	}
	user_access_end();
	return 0;
efault:
	user_access_end();
	return -EFAULT;
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
	/* Pairs with the smp_store_release() publishing the limiter. */
	struct rl_limiter *lim = smp_load_acquire(&client->lim);
	struct rl_acquire *req;
	bool nonblock, released = false;
	struct rl_cycle c;
	int ret;

	if (rl_cycle_read(&c, argp))
		return -EFAULT;
	req = &c.acquire;
	if (c.flags || c.reserved0 || c.reserved[0] || c.reserved[1])
		return -EINVAL;
	ret = rl_acquire_check(req);
	if (ret)
		return ret;
	if (!lim)
		return -EBADFD;
	if (!rl_may_boost(client, req->priority, 1))
		return -EPERM;

	nonblock = req->flags & RL_ACQUIRE_NONBLOCK || file->f_flags & O_NONBLOCK;
	req->wait_ns = 0;
	req->ready_ns = 0;
	req->lag_ns = 0;
	ret = rl_limiter_cycle(lim, client, c.release, req, nonblock,
			       &released);
	if (rl_cycle_write(argp, &c, released,
			   !ret || ret == -EAGAIN || ret == -ETIMEDOUT))
		return -EFAULT;
	return ret;
}
