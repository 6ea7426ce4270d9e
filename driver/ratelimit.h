/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Internal interfaces of the ratelimit module.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_RATELIMIT_H
#define _RL_RATELIMIT_H

#include <linux/hrtimer.h>
#include <linux/list.h>
#include <linux/poll.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>

#include <linux/ratelimit_dev.h>

#include "tokens.h"

/* Slack allowed to the refill timer, ns: lets the kernel batch expiries. */
#define RL_TIMER_SLACK_NS	(5 * NSEC_PER_USEC)

/**
 * struct rl_counters - statistics of a limiter, see struct rl_stats
 * @granted:       tokens granted
 * @requests:      validated acquire calls
 * @immediate:     grants without sleeping
 * @waited:        grants after sleeping
 * @wait_ns_total: sum of the sleep of @waited grants
 * @wait_ns_max:   longest sleep of a grant
 * @timeouts:      -ETIMEDOUT results
 * @interrupted:   requests ended by a signal
 * @rejected:      -EAGAIN results
 */
struct rl_counters {
	u64 granted;
	u64 requests;
	u64 immediate;
	u64 waited;
	u64 wait_ns_total;
	u64 wait_ns_max;
	u64 timeouts;
	u64 interrupted;
	u64 rejected;
};

/**
 * struct rl_limiter - a token bucket with a queue of sleeping requests
 * @lock:         guards every field below but @timer
 * @params:       limits in force
 * @bucket:       tokens
 * @queue:        sleeping requests (struct rl_waiter), served in order
 * @queued:       tokens the requests in @queue still wait for (saturating)
 * @nwaiters:     requests in @queue
 * @clients:      attached clients (struct rl_client.node), woken for poll
 * @poll_armed:   a poller found the limiter not ready: wake the clients'
 *                poll queues when it is
 * @timer_expiry: time the timer was last started for, 0 if not started
 * @counters:     statistics
 * @timer:        fires when the head of @queue (or a poller) can be served
 */
struct rl_limiter {
	spinlock_t lock;	/* see the kernel-doc above */
	struct rl_params params;
	struct rl_bucket bucket;
	struct list_head queue;
	u64 queued;
	u64 nwaiters;
	struct list_head clients;
	bool poll_armed;
	u64 timer_expiry;
	struct rl_counters counters;
	struct hrtimer timer;
};

/**
 * struct rl_client - an open /dev/ratelimit file
 * @lim:    its limiter; NULL until the first RL_IOC_SET_CONFIG, then set
 *          once (cmpxchg) and constant until release
 * @pollq:  pollers of the file sleep here, from open() on, so that an fd
 *          added to epoll before it has a limiter is woken too
 * @node:   entry in the limiter's client list, guarded by its lock
 */
struct rl_client {
	struct rl_limiter *lim;
	wait_queue_head_t pollq;
	struct list_head node;
};

struct rl_limiter *rl_limiter_create(const struct rl_params *p);
void rl_limiter_destroy(struct rl_limiter *lim);
void rl_limiter_attach(struct rl_limiter *lim, struct rl_client *client);
void rl_limiter_detach(struct rl_limiter *lim, struct rl_client *client);
void rl_limiter_set_params(struct rl_limiter *lim, const struct rl_params *p);
void rl_limiter_get_params(struct rl_limiter *lim, struct rl_params *p);
int rl_limiter_acquire(struct rl_limiter *lim, struct rl_acquire *req,
		       bool nonblock);
void rl_limiter_get_stats(struct rl_limiter *lim, struct rl_stats *st);
__poll_t rl_limiter_poll(struct rl_limiter *lim);
void rl_limiter_show(struct rl_limiter *lim, struct seq_file *m);

#endif /* _RL_RATELIMIT_H */
