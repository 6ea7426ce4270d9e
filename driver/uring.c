// SPDX-License-Identifier: GPL-2.0-only
/*
 * Acquires through io_uring: an IORING_OP_URING_CMD RL_URING_ACQUIRE on a
 * /dev/ratelimit fd takes tokens as RL_IOC_ACQUIRE does, and completes when
 * they are granted instead of sleeping.
 *
 * A request that must wait is queued as a sleeper is (struct rl_waiter with
 * no task) and ends when rl_dispatch() serves it, its deadline timer fires,
 * or it is cancelled (RL_URING_CANCEL, or io_uring when its ring or task
 * goes away). Whichever comes first sets ->ending under the limiter lock
 * and has rl_uring_end() account for it as a waking sleeper does, write the
 * results and post the completion. Issue, cancellation and rl_uring_end()
 * all run under the ring's uring_lock, so none runs while another does.
 *
 * RL_URING_ACQUIRE_KEY does the same for a key of a keyed limiter: keys.c
 * keeps the request in its key's line (struct rl_kasync, its own deadline
 * included) and calls rl_uring_key_done() when it finished; the rest is
 * the same, rl_keys_async_end() giving the result in rl_uring_end().
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/hrtimer.h>
#include <linux/io_uring/cmd.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "compat.h"
#include "keys.h"
#include "limiter.h"
#include "ratelimit.h"
#include "request.h"

/* An acquire queued through io_uring. */
struct rl_async {
	struct rl_waiter w;		/* its entry in the limiter's queue */
	struct rl_acquire req;		/* the request, then its results */
	struct hrtimer timer;		/* fires at the deadline, if any */
	struct list_head node;		/* in rl_client.async; limiter lock */
	struct io_uring_cmd *cmd;
	struct rl_limiter *lim;
	struct rl_acquire __user *uptr;	/* the caller's, for the results */
	struct rl_kasync *ka;		/* a key's request in its line (keys.c), or NULL */
	u64 start;			/* when it arrived */
	int why;			/* -ETIMEDOUT or -ECANCELED if not served; limiter lock */
	bool ending;			/* rl_uring_end() is on its way; limiter lock */
};

static bool rl_uring_task_gone(void)
{
	return current->flags & (PF_EXITING | PF_KTHREAD);
}

/* Account, report and complete; no results from a kernel thread or exiting task. */
static void rl_uring_end(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct rl_async *a = *io_uring_cmd_to_pdu(cmd, struct rl_async *);
	struct rl_limiter *lim = a->lim;
	int ret;

	if (a->ka) {
		ret = rl_keys_async_end(a->ka, &a->req);
	} else {
		hrtimer_cancel(&a->timer);
		ret = rl_limiter_acquire_end(lim, &a->req, &a->w, a->why, a->start);
	}
	if ((!ret || ret == -ETIMEDOUT) && !rl_uring_task_gone() &&
	    rl_acquire_write(a->uptr, &a->req))
		ret = -EFAULT;
	io_uring_cmd_done(cmd, ret, 0, issue_flags);
	kfree(a);
}

/* End @a for @why, unless it is ending already. Limiter lock held. */
static void rl_uring_finish(struct rl_async *a, int why)
{
	lockdep_assert_held(a->lim->tlock);
	if (a->ending)
		return;
	a->ending = true;
	a->why = why;
	list_del_init(&a->node);
	io_uring_cmd_complete_in_task(a->cmd, rl_uring_end);
}

/* @w is all granted (no reason needed); limiter lock. */
static void rl_uring_served(struct rl_waiter *w)
{
	rl_uring_finish(container_of(w, struct rl_async, w), 0);
}

/* A key's request finished (keys.c's timer): end it, unless it is ending already. */
static void rl_uring_key_done(void *arg)
{
	struct rl_async *a = arg;
	unsigned long flags;

	flags = rl_lock_irqsave(a->lim);
	rl_uring_finish(a, 0);
	rl_unlock_irqrestore(a->lim, flags);
}

static enum hrtimer_restart rl_uring_deadline(struct hrtimer *timer)
{
	struct rl_async *a = container_of(timer, struct rl_async, timer);
	unsigned long flags;

	flags = rl_lock_irqsave(a->lim);
	rl_uring_finish(a, -ETIMEDOUT);
	rl_unlock_irqrestore(a->lim, flags);
	return HRTIMER_NORESTART;
}

/*
 * io_uring cancels the command (its ring or task goes away), and asks again
 * until it completes: so it completes here, not in the submitter's task
 * work, unless that is on its way already.
 */
static void rl_uring_cancel(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct rl_async *a = *io_uring_cmd_to_pdu(cmd, struct rl_async *);
	bool mine;

	rl_lock_irq(a->lim);
	mine = !a->ending;
	if (mine) {
		a->ending = true;
		a->why = -ECANCELED;
		list_del_init(&a->node);
	}
	rl_unlock_irq(a->lim);
	if (mine)
		rl_uring_end(cmd, issue_flags);
}

/* Complete an acquire that did not wait; -EAGAIN must not reach io_uring. */
static int rl_uring_now(struct io_uring_cmd *cmd, struct rl_async *a, int ret,
			unsigned int issue_flags)
{
	if ((!ret || ret == -EAGAIN || ret == -ETIMEDOUT || ret == -ENOSPC) &&
	    rl_acquire_write(a->uptr, &a->req))
		ret = -EFAULT;
	kfree(a);
	if (ret != -EAGAIN)
		return ret;
	io_uring_cmd_done(cmd, ret, 0, issue_flags);
	return -EIOCBQUEUED;
}

/* A new acquire of @cmd, whose sqe->addr is the caller's request; NULL without memory. */
static struct rl_async *rl_async_new(struct io_uring_cmd *cmd)
{
	struct rl_async *a = kzalloc(sizeof(*a), GFP_KERNEL_ACCOUNT);

	if (!a)
		return NULL;
	a->cmd = cmd;
	INIT_LIST_HEAD(&a->node);
	a->uptr = u64_to_user_ptr(READ_ONCE(cmd->sqe->addr));
	return a;
}

/* Wait for @a: listed for RL_URING_CANCEL, cancelable. */
static int rl_uring_wait(struct io_uring_cmd *cmd, struct rl_async *a, unsigned int issue_flags)
{
	struct rl_client *client = cmd->file->private_data;

	/* Finished already, it ends after this: see the top of this file. */
	rl_lock_irq(a->lim);
	if (!a->ending)
		list_add_tail(&a->node, &client->async);
	rl_unlock_irq(a->lim);
	io_uring_cmd_mark_cancelable(cmd, issue_flags);
	return -EIOCBQUEUED;
}

static int rl_uring_acquire(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct rl_client *client = cmd->file->private_data;
	struct rl_async *a;
	bool nonblock;
	int ret;

	a = rl_async_new(cmd);
	if (!a)
		return -ENOMEM;
	ret = rl_acquire_read(&a->req, a->uptr) ?:
	      rl_acquire_admit(client, &a->req, &a->lim);
	if (ret) {
		kfree(a);
		return ret;
	}
	hrtimer_setup(&a->timer, rl_uring_deadline, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	*io_uring_cmd_to_pdu(cmd, struct rl_async *) = a;
	/* Not the fd's O_NONBLOCK: the caller does not wait here anyway. */
	nonblock = a->req.flags & RL_ACQUIRE_NONBLOCK;
	ret = rl_limiter_acquire_async(a->lim, client, &a->req, nonblock, &a->w,
				       rl_uring_served, &a->start);
	if (ret != RL_QUEUED)
		return rl_uring_now(cmd, a, ret, issue_flags);
	/* Watch the deadline, as rl_sleep() does; one that fires first ends it. */
	if (a->req.deadline_ns != RL_DEADLINE_NONE)
		hrtimer_start_range_ns(&a->timer, ns_to_ktime(a->req.deadline_ns),
				       current->timer_slack_ns, HRTIMER_MODE_ABS);
	return rl_uring_wait(cmd, a, issue_flags);
}

/* RL_URING_ACQUIRE_KEY: sqe->addr is a struct rl_key_acquire, read now. */
static int rl_uring_acquire_key(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	const size_t tail = offsetof(struct rl_key_acquire, key_len);
	struct rl_client *client = cmd->file->private_data;
	struct rl_key_acquire __user *u;
	struct rl_key_acquire k;
	struct rl_async *a;
	int ret;

	a = rl_async_new(cmd);
	if (!a)
		return -ENOMEM;
	u = (struct rl_key_acquire __user *)a->uptr;
	ret = rl_acquire_read(&a->req, a->uptr);
	if (!ret && copy_from_user((u8 *)&k + tail, (u8 __user *)u + tail, sizeof(k) - tail))
		ret = -EFAULT;
	if (!ret && rl_key_fields_bad(k.key_len, k.flags, k.reserved))
		ret = -EINVAL;
	a->lim = rl_client_limiter(client);
	ret = ret ?: rl_acquire_check(client, &a->req, a->lim);
	if (!ret && !a->lim->keys)
		ret = -EINVAL;
	if (ret) {
		kfree(a);
		return ret;
	}
	*io_uring_cmd_to_pdu(cmd, struct rl_async *) = a;
	if (a->req.flags & RL_ACQUIRE_NONBLOCK)
		ret = rl_keys_acquire(a->lim->keys, k.key, k.key_len, &a->req, true);
	else
		ret = rl_keys_submit(a->lim->keys, k.key, k.key_len, &a->req,
				     rl_uring_key_done, a, &a->ka);
	if (ret || !a->ka)
		return rl_uring_now(cmd, a, ret, issue_flags);
	return rl_uring_wait(cmd, a, issue_flags);
}

/*
 * RL_URING_CANCEL: cancel this fd's acquires submitted to the same ring with
 * user_data sqe->addr (IORING_OP_ASYNC_CANCEL does not reach file commands).
 */
static int rl_uring_cancel_op(struct io_uring_cmd *cmd)
{
	struct io_kiocb *self = cmd_to_io_kiocb(cmd), *req;
	struct rl_client *client = cmd->file->private_data;
	u64 data = READ_ONCE(cmd->sqe->addr);
	struct rl_limiter *lim = READ_ONCE(client->lim);
	struct rl_async *a, *next;
	int n = 0;

	if (!lim)
		return -EBADFD;
	rl_lock_irq(lim);
	list_for_each_entry_safe(a, next, &client->async, node) {
		req = cmd_to_io_kiocb(a->cmd);
		if (req->ctx != self->ctx || req->cqe.user_data != data)
			continue;
		rl_uring_finish(a, -ECANCELED);
		n++;
	}
	rl_unlock_irq(lim);
	return n ?: -ENOENT;
}

static int rl_uring_issue(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	switch (cmd->cmd_op) {
	case RL_URING_ACQUIRE:
		return rl_uring_acquire(cmd, issue_flags);
	case RL_URING_ACQUIRE_KEY:
		return rl_uring_acquire_key(cmd, issue_flags);
	case RL_URING_CANCEL:
		return rl_uring_cancel_op(cmd);
	default:
		return -ENOTTY;
	}
}

/* An issue from io-wq, in the submitter's context and its ring's lock. */
static void rl_uring_issue_tw(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	int ret = -ECANCELED;

	if (!rl_uring_task_gone())
		ret = rl_uring_issue(cmd, issue_flags);
	if (ret != -EIOCBQUEUED)
		io_uring_cmd_done(cmd, ret, 0, issue_flags);
}

/**
 * rl_uring_cmd() - file_operations.uring_cmd of /dev/ratelimit
 * @cmd:         the command
 * @issue_flags: io_uring's flags for it
 * Return: the result, or -EIOCBQUEUED when the command completes later.
 */
int rl_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	if (issue_flags & IO_URING_F_CANCEL) {
		rl_uring_cancel(cmd, issue_flags);
		return 0;
	}
	/* From io-wq: issue it in the submitter's context, as rl_uring_end(). */
	if (issue_flags & IO_URING_F_UNLOCKED) {
		io_uring_cmd_complete_in_task(cmd, rl_uring_issue_tw);
		return -EIOCBQUEUED;
	}
	return rl_uring_issue(cmd, issue_flags);
}
