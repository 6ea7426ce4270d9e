// SPDX-License-Identifier: GPL-2.0-only
/*
 * Global limits: what an agent sharing one capacity among hosts (such as
 * rlsyncd) needs of a local limiter. The kernel still does all the
 * enforcement; the agent only feeds and sizes the limiter.
 *
 * - RL_CONFIG_FED: time adds no tokens (tokens.c skips the refill), so
 *   the limiter serves what RL_IOC_DEPOSIT adds, up to the burst; the
 *   excess goes back to the agent.
 * - RL_IOC_SET_LEASE: limits that hold until a deadline, then a fallback
 *   that the kernel applies itself, at once if the fd that set the lease
 *   is closed (the agent died). Applying limits takes only the limiter's
 *   lock, as the limiter's own timer does, so the lease's hrtimer applies
 *   the fallback in its callback: there is no work item to flush.
 * - RL_IOC_GET_DEMAND: tokens asked and refused, kept by acquire.c under
 *   the limiter's lock; tokens queued (sched.c keeps the sum); time with a
 *   sleeper, started and stopped when the sleepers go from 0 to 1 and back
 *   (limiter.h). No walk, no allocation.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/build_bug.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/minmax.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "global.h"
#include "limiter.h"

static_assert(sizeof(struct rl_deposit) == 40);
static_assert(sizeof(struct rl_lease) == 160);
static_assert(sizeof(struct rl_demand) == 80);

/*
 * End the lease: the fallback limits apply. SET_LEASE refused a fallback
 * whose concurrency goes between 0 and non-zero while other clients are
 * attached; if the concurrency in force changed since (while nobody else
 * was attached) and clients came, the fallback keeps it rather than
 * strand them (rl_conc_switch_busy()).
 */
static void rl_lease_end(struct rl_limiter *lim, u64 now, u64 self)
{
	struct rl_global *g = &lim->global;
	struct rl_params fb = g->fallback;

	lockdep_assert_held(lim->tlock);
	g->lease_end = 0;
	g->holder = NULL;
	g->holder_pid = 0;
	/* A callback already running finds no lease and does nothing. */
	hrtimer_try_to_cancel(&g->lease_timer);
	if (rl_conc_switch_busy(lim, &fb, self))
		fb.concurrency = lim->params.concurrency;
	rl_apply_params(lim, &fb, now);
}

static enum hrtimer_restart rl_lease_timer_fn(struct hrtimer *timer)
{
	struct rl_limiter *lim = container_of(timer, struct rl_limiter,
					      global.lease_timer);
	u64 now = ktime_get_ns();
	unsigned long flags;

	flags = rl_lock_irqsave(lim);
	/* A renewal that raced with this callback started the timer again. */
	if (lim->global.lease_end && now >= lim->global.lease_end)
		rl_lease_end(lim, now, 0);
	rl_unlock_irqrestore(lim, flags);
	return HRTIMER_NORESTART;
}

/**
 * rl_global_init() - set up a new limiter's global state: no lease
 * @lim: the limiter, not shared yet
 */
void rl_global_init(struct rl_limiter *lim)
{
	hrtimer_setup(&lim->global.lease_timer, rl_lease_timer_fn,
		      CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
}

/**
 * rl_global_free() - stop the lease timer of a limiter being freed
 * @lim: the limiter, with no reference left; its lock is not held
 *
 * Waits for a callback still running.
 */
void rl_global_free(struct rl_limiter *lim)
{
	hrtimer_cancel(&lim->global.lease_timer);
}

/**
 * rl_global_detach() - a client leaves: a lease it holds ends now
 * @lim:    the limiter, locked
 * @client: the client leaving (its fd is being closed)
 * @now:    current time, ns
 */
void rl_global_detach(struct rl_limiter *lim, struct rl_client *client,
		      u64 now)
{
	lockdep_assert_held(lim->tlock);
	/* @client no longer counts among the clients. */
	if (lim->global.lease_end && lim->global.holder == client)
		rl_lease_end(lim, now, 0);
}

/* Add up to dep->count tokens; dep->count becomes the excess. */
static int rl_limiter_deposit(struct rl_limiter *lim, struct rl_deposit *dep)
{
	const struct rl_params *p = &lim->params;
	u64 now = ktime_get_ns(), room;
	int ret = 0;

	rl_lock_irq(lim);
	if (!p->fed) {
		ret = -EINVAL;
		goto out_unlock;
	}
	rl_sync(lim, now);
	room = p->burst - min(lim->bucket.tokens, p->burst);
	room = min(room, dep->count);
	rl_bucket_give(&lim->bucket, p, room);
	dep->count -= room;
	/* The waiters are served from the deposit, in their order. */
	rl_dispatch(lim, now);
	dep->available = lim->bucket.tokens;
out_unlock:
	rl_unlock_irq(lim);
	return ret;
}

/**
 * rl_ioctl_deposit() - RL_IOC_DEPOSIT: feed tokens to a fed limiter
 * @client: the file's client
 * @argp:   struct rl_deposit in userspace
 *
 * Return: 0, -EINVAL, -EPERM, -EBADFD or -EFAULT.
 */
int rl_ioctl_deposit(struct rl_client *client, void __user *argp)
{
	struct rl_limiter *lim = rl_client_limiter(client);
	struct rl_deposit __user *u = argp;
	struct rl_deposit dep;
	int ret;

	if (copy_from_user(&dep, u, sizeof(dep)))
		return -EFAULT;
	if (!dep.count || dep.flags || dep.reserved0 ||
	    memchr_inv(dep.reserved, 0, sizeof(dep.reserved)))
		return -EINVAL;
	if (!lim)
		return -EBADFD;
	if (!client->may_config)
		return -EPERM;
	/* Fail before adding anything if the answer cannot be written. */
	if (put_user(0, &u->available))
		return -EFAULT;
	ret = rl_limiter_deposit(lim, &dep);
	if (ret)
		return ret;
	return copy_to_user(u, &dep, sizeof(dep)) ? -EFAULT : 0;
}

/*
 * Apply @p until @expires (0 or past: the fallback @fb at once); -EBUSY
 * with nothing changed if either would switch the concurrency between 0
 * and non-zero under other clients (rl_conc_switch_busy()).
 */
static int rl_limiter_lease(struct rl_limiter *lim, struct rl_client *client,
			    const struct rl_params *p,
			    const struct rl_params *fb, u64 expires)
{
	struct rl_global *g = &lim->global;
	u64 now = ktime_get_ns();

	rl_lock_irq(lim);
	if (rl_conc_switch_busy(lim, fb, 1) ||
	    (expires > now && rl_conc_switch_busy(lim, p, 1))) {
		rl_unlock_irq(lim);
		return -EBUSY;
	}
	g->fallback = *fb;
	if (expires <= now) {
		rl_lease_end(lim, now, 1);
	} else {
		g->lease_end = expires;
		g->holder = client;
		g->holder_pid = client->tgid;
		hrtimer_start(&g->lease_timer, ns_to_ktime(expires),
			      HRTIMER_MODE_ABS);
		rl_apply_params(lim, p, now);
	}
	rl_unlock_irq(lim);
	return 0;
}

/**
 * rl_ioctl_set_lease() - RL_IOC_SET_LEASE: limits until a deadline
 * @client: the file's client, which holds the lease from now on
 * @argp:   struct rl_lease in userspace
 *
 * Both configurations are checked before anything changes.
 *
 * Return: 0, -EINVAL, -EPERM, -EBADFD, -EFAULT, or -EBUSY when either
 * would switch the concurrency between 0 and non-zero while other clients
 * are attached.
 */
int rl_ioctl_set_lease(struct rl_client *client, void __user *argp)
{
	struct rl_limiter *lim = rl_client_limiter(client);
	struct rl_params p, fb;
	struct rl_lease l;
	int ret;

	if (copy_from_user(&l, argp, sizeof(l)))
		return -EFAULT;
	if (l.flags || l.reserved0 || l.expires_ns > KTIME_MAX ||
	    memchr_inv(l.reserved, 0, sizeof(l.reserved)))
		return -EINVAL;
	ret = rl_params_from_user(&l.config, &p) ?:
	      rl_params_from_user(&l.fallback, &fb);
	if (ret)
		return ret;
	if (!lim)
		return -EBADFD;
	if (!client->may_config)
		return -EPERM;
	return rl_limiter_lease(lim, client, &p, &fb, l.expires_ns);
}

/**
 * rl_limiter_get_demand() - what the clients ask for, now
 * @lim: the limiter
 * @d:   a zeroed struct rl_demand, filled in
 */
void rl_limiter_get_demand(struct rl_limiter *lim, struct rl_demand *d)
{
	const struct rl_global *g = &lim->global;

	rl_lock_irq(lim);
	d->now_ns = ktime_get_ns();
	d->asked = lim->counters.asked;
	d->refused = lim->counters.refused;
	d->queued = lim->queued_hi ? U64_MAX : lim->queued;
	d->busy_ns = g->busy_ns;
	if (lim->nwaiters)
		d->busy_ns += d->now_ns - g->busy_since;
	rl_unlock_irq(lim);
}

/**
 * rl_limiter_get_lease() - the lease in force, for sysfs
 * @lim:  the limiter
 * @left: set to the time until it ends, ns
 * @pid:  set to the process of the client that holds it
 *
 * Return: true if there is a lease, else false (and @left, @pid unset).
 */
bool rl_limiter_get_lease(struct rl_limiter *lim, u64 *left, pid_t *pid)
{
	const struct rl_global *g = &lim->global;
	u64 now = ktime_get_ns();
	bool ret;

	rl_lock_irq(lim);
	ret = g->lease_end;
	if (ret) {
		*left = g->lease_end - min(now, g->lease_end);
		*pid = g->holder_pid;
	}
	rl_unlock_irq(lim);
	return ret;
}

/**
 * rl_ioctl_get_demand() - RL_IOC_GET_DEMAND
 * @client: the file's client
 * @argp:   struct rl_demand in userspace
 *
 * Return: 0, -EINVAL, -EBADFD or -EFAULT.
 */
int rl_ioctl_get_demand(struct rl_client *client, void __user *argp)
{
	struct rl_limiter *lim = rl_client_limiter(client);
	struct rl_demand d;

	if (copy_from_user(&d, argp, sizeof(d)))
		return -EFAULT;
	if (d.flags || d.reserved0)
		return -EINVAL;
	if (!lim)
		return -EBADFD;
	memset(&d, 0, sizeof(d));
	rl_limiter_get_demand(lim, &d);
	return copy_to_user(argp, &d, sizeof(d)) ? -EFAULT : 0;
}
