/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Internal interfaces of the ratelimit module.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_RATELIMIT_H
#define _RL_RATELIMIT_H

#include <linux/hrtimer.h>
#include <linux/kobject.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/uidgid.h>
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
 * @nclients:     entries of @clients
 * @timer:        fires when the head of @queue (or a poller) can be served
 * @ref:          attached clients, plus one while a persistent name exists
 * @name:         name of a named limiter, "" for a private one
 * @uid:          owner of a named limiter, constant
 * @gid:          group of a named limiter, constant
 * @mode:         permission bits of a named limiter, constant
 * @persistent:   the name holds a reference; rl_registry_lock
 * @linked:       the name is in the registry; rl_registry_lock
 * @node:         entry in the registry; rl_registry_lock
 * @kobj:         /sys/kernel/ratelimit/<name>; frees a named limiter
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
	u64 nclients;
	struct hrtimer timer;
	struct kref ref;
	char name[RL_NAME_MAX];
	kuid_t uid;
	kgid_t gid;
	umode_t mode;
	bool persistent;
	bool linked;
	struct list_head node;
	struct kobject kobj;
};

/**
 * struct rl_client - an open /dev/ratelimit file
 * @lim:    its limiter; NULL until the first RL_IOC_SET_CONFIG, then set
 *          once (cmpxchg) and constant until release
 * @pollq:  pollers of the file sleep here, from open() on, so that an fd
 *          added to epoll before it has a limiter is woken too
 * @node:   entry in the limiter's client list, guarded by its lock
 * @setup:  serialises giving the client a limiter
 * @may_config: RL_IOC_SET_CONFIG is allowed; written before @lim is set
 * @granted: tokens granted through this client, guarded by the limiter's
 *          lock
 * @tgid:   process that attached, for sysfs
 * @comm:   its command name then
 */
struct rl_client {
	struct rl_limiter *lim;
	wait_queue_head_t pollq;
	struct list_head node;
	struct mutex setup;	/* see the kernel-doc above */
	bool may_config;
	u64 granted;
	pid_t tgid;
	char comm[TASK_COMM_LEN];
};

/* Tunables of a limiter that sysfs writes one at a time. */
enum rl_param {
	RL_PARAM_RATE,
	RL_PARAM_PERIOD,
	RL_PARAM_BURST,
	RL_PARAM_UNLIMITED,
};

extern struct mutex rl_registry_lock;

struct rl_limiter *rl_limiter_create(const struct rl_params *p);
void rl_limiter_destroy(struct rl_limiter *lim);
void rl_limiter_attach(struct rl_limiter *lim, struct rl_client *client);
void rl_limiter_detach(struct rl_limiter *lim, struct rl_client *client);
void rl_limiter_set_params(struct rl_limiter *lim, const struct rl_params *p);
void rl_limiter_get_params(struct rl_limiter *lim, struct rl_params *p);
int rl_limiter_set_param(struct rl_limiter *lim, enum rl_param which,
			 u64 val);
int rl_limiter_acquire(struct rl_limiter *lim, struct rl_client *client,
		       struct rl_acquire *req, bool nonblock);
int rl_limiter_show_clients(struct rl_limiter *lim, char *buf);
void rl_limiter_get_stats(struct rl_limiter *lim, struct rl_stats *st);
__poll_t rl_limiter_poll(struct rl_limiter *lim);
void rl_limiter_show(struct rl_limiter *lim, struct seq_file *m);

/* named.c */
void rl_limiter_put(struct rl_limiter *lim);
int rl_named_attach(struct rl_client *client, const char *name,
		    const struct rl_attach *at, const struct rl_params *p);
int rl_named_unlink(const char *name);
int rl_name_from_user(char *name, u64 uptr);
int rl_named_count(void);
void rl_named_exit(void);

/* sysfs.c */
int rl_sysfs_init(void);
void rl_sysfs_exit(void);
int rl_sysfs_add(struct rl_limiter *lim);
void rl_sysfs_del(struct rl_limiter *lim);
void rl_sysfs_put(struct rl_limiter *lim);

#endif /* _RL_RATELIMIT_H */
