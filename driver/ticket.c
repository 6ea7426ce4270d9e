// SPDX-License-Identifier: GPL-2.0-only
/*
 * Queued acquires for event loops: RL_IOC_SUBMIT puts a request in the
 * limiter's queue as a sleeper's (struct rl_waiter with no task) and
 * returns a ticket; the fd polls readable once it is finished, and
 * RL_IOC_COLLECT ends it; RL_IOC_CANCEL or close withdraws it.
 * RL_IOC_SUBMIT_KEY does the same for a key of a keyed limiter: keys.c
 * keeps the request in the key's line (struct rl_kasync) and calls
 * rl_ticket_key_done() when it finished; the rest is the same.
 *
 * A ticket is finished once, under the limiter's lock, by whichever comes
 * first: rl_dispatch() serving it (rl_ticket_served()), or its deadline
 * timer, which also ends it at once so that it holds up no one behind it.
 * A cancel takes it off the queue under the same lock. Only the fd's own
 * calls (SUBMIT, COLLECT, CANCEL, close) free tickets, one at a time
 * under the client's ticket mutex, after the timer is cancelled.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/hrtimer.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "keys.h"
#include "limiter.h"
#include "ratelimit.h"
#include "request.h"
#include "ticket.h"

/* A request of RL_IOC_SUBMIT, from its submission until collected or cancelled. */
struct rl_ticket {
	struct rl_waiter w;		/* its entry in the limiter's queue */
	struct rl_acquire req;		/* the request, then its results */
	struct hrtimer timer;		/* fires at the deadline, if any */
	struct list_head node;		/* in rl_client.tickets; rl_client.tmutex */
	struct list_head done;		/* in rl_client.done once finished; limiter lock */
	struct rl_limiter *lim;
	struct rl_kasync *ka;		/* a key's request in its line (keys.c), or NULL */
	u64 id;				/* its ticket number on the fd */
	u64 user_data;			/* the caller's, given back */
	u64 start;			/* when it arrived */
	int result;			/* once @ended: 0, or -ETIMEDOUT; limiter lock */
	bool finished;			/* served, timed out or cancelled; limiter lock */
	bool ended;			/* accounted for by its timer; limiter lock */
};

/* Read SUBMIT's inputs into @req and clear the outputs: 0 or -EFAULT. */
static int rl_ticket_read(struct rl_queued *q, struct rl_queued __user *u)
{
	if (!user_access_begin(u, sizeof(*u)))
		return -EFAULT;
	unsafe_get_user(q->count, &u->count, efault);
	unsafe_get_user(q->deadline_ns, &u->deadline_ns, efault);
	unsafe_get_user(q->flags, &u->flags, efault);
	unsafe_get_user(q->priority, &u->priority, efault);
	unsafe_get_user(q->reserved0, &u->reserved0, efault);
	unsafe_get_user(q->user_data, &u->user_data, efault);
	unsafe_get_user(q->reserved, &u->reserved, efault);
	unsafe_put_user(0, &u->ticket, efault);
	unsafe_put_user(0, &u->result, efault);
	unsafe_put_user(0, &u->wait_ns, efault);
	unsafe_put_user(0, &u->ready_ns, efault);
	unsafe_put_user(0, &u->lag_ns, efault);
	user_access_end();
	return 0;
efault:
	user_access_end();
	return -EFAULT;
}

/* Write the outputs of ticket @id with result @res and request @req: 0 or -EFAULT. */
static int rl_ticket_write(struct rl_queued __user *u, u64 id, int res,
			   const struct rl_acquire *req, u64 user_data)
{
	struct rl_queued q = {
		.ticket = id, .count = req->count, .deadline_ns = req->deadline_ns,
		.flags = req->flags, .priority = req->priority, .result = res,
		.wait_ns = req->wait_ns, .ready_ns = req->ready_ns, .lag_ns = req->lag_ns,
		.user_data = user_data,
	};

	return copy_to_user(u, &q, sizeof(q)) ? -EFAULT : 0;
}

/* Finish @t: listed to be collected, the fd readable. Limiter lock held. */
static void rl_ticket_finish(struct rl_ticket *t)
{
	struct rl_client *client = t->w.client;

	lockdep_assert_held(t->lim->tlock);
	t->finished = true;
	list_add_tail(&t->done, &client->done);
	wake_up_poll(&client->pollq, EPOLLIN | EPOLLRDNORM);
}

/* @w is all granted; limiter lock. A ticket being cancelled is not listed. */
static void rl_ticket_served(struct rl_waiter *w)
{
	struct rl_ticket *t = container_of(w, struct rl_ticket, w);

	if (!t->finished)
		rl_ticket_finish(t);
}

static enum hrtimer_restart rl_ticket_deadline(struct hrtimer *timer)
{
	struct rl_ticket *t = container_of(timer, struct rl_ticket, timer);
	unsigned long flags;

	flags = rl_lock_irqsave(t->lim);
	if (!t->finished) {
		t->result = -ETIMEDOUT;
		t->ended = true;
		/* Listed before whatever its leaving the queue lets through. */
		rl_ticket_finish(t);
		rl_limiter_acquire_expire(t->lim, &t->req, &t->w, t->start);
	}
	rl_unlock_irqrestore(t->lim, flags);
	return HRTIMER_NORESTART;
}

/* Take @t off the fd and free it; it is finished and its timer stopped. tmutex held. */
static void rl_ticket_free(struct rl_client *client, struct rl_ticket *t)
{
	lockdep_assert_held(&client->tmutex);
	list_del(&t->node);
	client->ntickets--;
	kfree(t);
}

/* Withdraw a key's @t; a grant stays taken. It is gone after. tmutex held. */
static void rl_ticket_drop_key(struct rl_client *client, struct rl_ticket *t)
{
	/* After this, rl_ticket_key_done() has listed @t or never will. */
	rl_keys_async_end(t->ka, &t->req);
	rl_lock_irq(t->lim);
	if (t->finished)
		list_del(&t->done);
	rl_unlock_irq(t->lim);
	rl_ticket_free(client, t);
}

/* Withdraw @t, giving back what it got; it is gone after. tmutex held. */
static void rl_ticket_drop(struct rl_client *client, struct rl_ticket *t)
{
	bool queued;

	if (t->ka) {
		rl_ticket_drop_key(client, t);
		return;
	}

	/* After this, the timer has finished @t or never will. */
	hrtimer_cancel(&t->timer);
	rl_lock_irq(t->lim);
	queued = !t->finished;
	if (queued)
		t->finished = true;
	else
		list_del(&t->done);
	rl_unlock_irq(t->lim);
	/* Timed out: its end gave everything back already. */
	if (!t->ended)
		rl_limiter_acquire_drop(t->lim, &t->req, &t->w, t->start);
	rl_ticket_free(client, t);
}

/* Queue a new ticket @t for @q: 0 when granted now, RL_QUEUED, or -errno. tmutex held. */
static int rl_ticket_queue(struct rl_client *client, struct rl_ticket *t,
			   const struct rl_queued *q)
{
	int ret;

	t->req = (struct rl_acquire) { .count = q->count, .deadline_ns = q->deadline_ns,
				       .flags = q->flags, .priority = q->priority };
	if (q->flags & ~RL_ACQUIRE_PREDICT || q->reserved0 || q->reserved)
		return -EINVAL;
	ret = rl_acquire_admit(client, &t->req, &t->lim);
	if (ret)
		return ret;
	if (client->ntickets >= RL_QUEUED_MAX)
		return -EBUSY;
	INIT_LIST_HEAD(&t->done);
	hrtimer_setup(&t->timer, rl_ticket_deadline, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	ret = rl_limiter_acquire_async(t->lim, client, &t->req, false, &t->w, rl_ticket_served,
				       &t->start);
	if (ret != RL_QUEUED)
		return ret;
	t->id = ++client->next_ticket;
	list_add_tail(&t->node, &client->tickets);
	client->ntickets++;
	/* Watch the deadline, as rl_sleep() does. */
	if (t->req.deadline_ns != RL_DEADLINE_NONE)
		hrtimer_start_range_ns(&t->timer, ns_to_ktime(t->req.deadline_ns),
				       current->timer_slack_ns, HRTIMER_MODE_ABS);
	return RL_QUEUED;
}

/**
 * rl_ticket_submit() - RL_IOC_SUBMIT
 * @client: the fd's client
 * @u:      the caller's struct rl_queued
 * Return: 0 (ticket 0 when granted at once), or -errno as documented for it.
 */
int rl_ticket_submit(struct rl_client *client, struct rl_queued __user *u)
{
	struct rl_ticket *t;
	struct rl_queued q;
	int ret;

	if (rl_ticket_read(&q, u))
		return -EFAULT;
	t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);
	if (!t)
		return -ENOMEM;
	t->user_data = q.user_data;
	mutex_lock(&client->tmutex);
	ret = rl_ticket_queue(client, t, &q);
	if (ret == RL_QUEUED) {
		/* A ticket number cannot fail to be written: the block was written above. */
		ret = put_user(t->id, &u->ticket);
		if (ret)
			rl_ticket_drop(client, t);
		mutex_unlock(&client->tmutex);
		return ret;
	}
	mutex_unlock(&client->tmutex);
	if (!ret || ret == -ETIMEDOUT)
		ret = rl_ticket_write(u, 0, 0, &t->req, q.user_data) ?: ret;
	kfree(t);
	return ret;
}

/* A key's @arg (a struct rl_ticket) finished: list it. From keys.c's timer. */
static void rl_ticket_key_done(void *arg)
{
	struct rl_ticket *t = arg;
	unsigned long flags;

	flags = rl_lock_irqsave(t->lim);
	rl_ticket_finish(t);
	rl_unlock_irqrestore(t->lim, flags);
}

/* Read SUBMIT_KEY's inputs into @kq and clear the outputs: 0 or -EFAULT. */
static int rl_ticket_read_key(struct rl_key_queued *kq, struct rl_key_queued __user *u)
{
	const size_t tail = offsetof(struct rl_key_queued, key_len);

	if (rl_ticket_read(&kq->queued, &u->queued) ||
	    copy_from_user((u8 *)kq + tail, (u8 __user *)u + tail, sizeof(*kq) - tail))
		return -EFAULT;
	return 0;
}

/* Queue a key's ticket @t for @kq: 0 when it ended at once, RL_QUEUED, or -errno. tmutex held. */
static int rl_ticket_queue_key(struct rl_client *client, struct rl_ticket *t,
			       const struct rl_key_queued *kq)
{
	const struct rl_queued *q = &kq->queued;
	int ret;

	t->req = (struct rl_acquire) { .count = q->count, .deadline_ns = q->deadline_ns,
				       .flags = q->flags, .priority = q->priority };
	if (q->flags & ~RL_ACQUIRE_PREDICT || q->reserved0 || q->reserved ||
	    rl_key_fields_bad(kq->key_len, kq->flags, kq->reserved))
		return -EINVAL;
	t->lim = rl_client_limiter(client);
	ret = rl_acquire_check(client, &t->req, t->lim);
	if (ret)
		return ret;
	if (!t->lim->keys)
		return -EINVAL;
	if (client->ntickets >= RL_QUEUED_MAX)
		return -EBUSY;
	INIT_LIST_HEAD(&t->done);
	t->w.client = client;
	ret = rl_keys_submit(t->lim->keys, kq->key, kq->key_len, &t->req, rl_ticket_key_done, t,
			     &t->ka);
	if (ret || !t->ka)
		return ret;
	t->id = ++client->next_ticket;
	list_add_tail(&t->node, &client->tickets);
	client->ntickets++;
	return RL_QUEUED;
}

/**
 * rl_ticket_submit_key() - RL_IOC_SUBMIT_KEY
 * @client: the fd's client
 * @u:      the caller's struct rl_key_queued
 * Return: 0 (ticket 0 when granted at once), or -errno as documented for it.
 */
int rl_ticket_submit_key(struct rl_client *client, struct rl_key_queued __user *u)
{
	struct rl_key_queued kq;
	struct rl_ticket *t;
	int ret;

	if (rl_ticket_read_key(&kq, u))
		return -EFAULT;
	t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);
	if (!t)
		return -ENOMEM;
	t->user_data = kq.queued.user_data;
	mutex_lock(&client->tmutex);
	ret = rl_ticket_queue_key(client, t, &kq);
	if (ret == RL_QUEUED) {
		ret = put_user(t->id, &u->queued.ticket);
		if (ret)
			rl_ticket_drop(client, t);
		mutex_unlock(&client->tmutex);
		return ret;
	}
	mutex_unlock(&client->tmutex);
	if (!ret || ret == -ETIMEDOUT || ret == -ENOSPC)
		ret = rl_ticket_write(&u->queued, 0, 0, &t->req, t->user_data) ?: ret;
	kfree(t);
	return ret;
}

/**
 * rl_ticket_collect() - RL_IOC_COLLECT: end the first finished ticket and report it
 * @client: the fd's client
 * @u:      the caller's struct rl_queued, for the result
 * Return: 0, -EAGAIN when none is finished, -EBADFD, or -EFAULT (the ticket stays).
 */
int rl_ticket_collect(struct rl_client *client, struct rl_queued __user *u)
{
	struct rl_limiter *lim = rl_client_limiter(client);
	struct rl_ticket *t;
	int ret = -EAGAIN;

	if (!lim)
		return -EBADFD;
	/* Fail before the ticket is taken, not after. */
	if (clear_user(u, sizeof(*u)))
		return -EFAULT;
	mutex_lock(&client->tmutex);
	rl_lock_irq(lim);
	t = list_first_entry_or_null(&client->done, struct rl_ticket, done);
	if (t)
		list_del(&t->done);
	rl_unlock_irq(lim);
	if (t && t->ka) {
		t->result = rl_keys_async_end(t->ka, &t->req);
		t->ka = NULL;
	} else if (t) {
		hrtimer_cancel(&t->timer);
		if (!t->ended)
			t->result = rl_limiter_acquire_end(lim, &t->req, &t->w, 0, t->start);
	}
	if (t) {
		ret = rl_ticket_write(u, t->id, t->result, &t->req, t->user_data);
		rl_ticket_free(client, t);
	}
	mutex_unlock(&client->tmutex);
	return ret;
}

/**
 * rl_ticket_cancel() - RL_IOC_CANCEL: withdraw a ticket, or all of them
 * @client: the fd's client
 * @u:      the ticket, or 0 for all
 * Return: 0, -ENOENT when no such ticket is outstanding, -EFAULT, or -EBADFD.
 */
int rl_ticket_cancel(struct rl_client *client, u64 __user *u)
{
	struct rl_ticket *t, *next;
	int ret = -ENOENT;
	u64 id;

	if (get_user(id, u))
		return -EFAULT;
	if (!rl_client_limiter(client))
		return -EBADFD;
	mutex_lock(&client->tmutex);
	list_for_each_entry_safe(t, next, &client->tickets, node) {
		if (id && t->id != id)
			continue;
		rl_ticket_drop(client, t);
		ret = 0;
	}
	mutex_unlock(&client->tmutex);
	return id ? ret : 0;
}

/**
 * rl_ticket_poll() - is a finished ticket waiting to be collected?
 * @lim:    the client's limiter
 * @client: the client, already on its poll queue
 * Return: EPOLLIN | EPOLLRDNORM if so, else 0.
 */
__poll_t rl_ticket_poll(struct rl_limiter *lim, struct rl_client *client)
{
	bool ready;

	rl_lock_irq(lim);
	ready = !list_empty(&client->done);
	rl_unlock_irq(lim);
	return ready ? EPOLLIN | EPOLLRDNORM : 0;
}

/**
 * rl_ticket_release() - withdraw every ticket of a client, for close
 * @client: the client, attached, with no other user of its fd left
 */
void rl_ticket_release(struct rl_client *client)
{
	struct rl_ticket *t, *next;

	mutex_lock(&client->tmutex);
	list_for_each_entry_safe(t, next, &client->tickets, node)
		rl_ticket_drop(client, t);
	mutex_unlock(&client->tmutex);
}
