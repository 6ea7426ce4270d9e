/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The types of the ratelimit module: who owns each and their lifetime are
 * in Documentation/driver.md; each field's kernel-doc says what guards it.
 * Lock order, outer first: rl_client.setup, the registry lock (named.c),
 * kernfs active references, the limiter lock (rl_limiter.tlock, one per
 * tree, rl_lock_irq()), rl_client.pollq's lock. No sysfs callback waits
 * for the registry lock.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_RATELIMIT_H
#define _RL_RATELIMIT_H

#include <linux/hrtimer.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/uidgid.h>
#include <linux/list.h>
#include <linux/poll.h>
#include <linux/rbtree.h>
#include <linux/rhashtable-types.h>
#include <linux/rcupdate.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include <linux/ratelimit_dev.h>

#include "bucket.h"

struct rl_dir;

/* Most ancestors a limiter may have: a tree has at most 5 levels. */
#define RL_HIER_DEPTH_MAX	4

/**
 * struct rl_hnode - a limiter's place in its tree
 * @parent:   the parent, NULL for a root; written under the registry lock
 *            and the tree's lock, read under either. A child holds a
 *            reference to its parent.
 * @children: its children (their @sibling)
 * @sibling:  entry in the parent's @children
 * @weight:   share among the parent's backlogged children, 1..RL_WEIGHT_MAX
 * @queued:   sleeping requests in its subtree (its own and its children's)
 * @vtag:     virtual time at which it is due at its parent
 * @ready:    while @parked, when it may be served again (U64_MAX: when a
 *            permit comes back in its subtree)
 * @kvtime:   tag of the child served last; activated children start no
 *            earlier
 * @knode:    entry in the parent's @kids while active and not @parked, in
 *            its @parked_kids while @parked
 * @kids:     children with sleeping requests, by @vtag
 * @parked_kids: children out of tokens or permits, by @ready
 * @active:   in one of the parent's trees
 * @parked:   in the parent's @parked_kids
 *
 * All but @parent, @children and @sibling are guarded by the tree's lock
 * alone; those three by both the registry lock and the tree's lock.
 */
struct rl_hnode {
	struct rl_limiter *parent;
	struct list_head children;
	struct list_head sibling;
	u32 weight;
	bool active;
	bool parked;
	u64 queued;
	u64 vtag;
	u64 ready;
	u64 kvtime;
	struct rb_node knode;
	struct rb_root_cached kids;
	struct rb_root_cached parked_kids;
};

/* Slack allowed to the refill timer, ns: lets the kernel batch expiries. */
#define RL_TIMER_SLACK_NS	(5 * NSEC_PER_USEC)

/*
 * Most chunks one dispatch grants, and flows it moves between the levels
 * and the capped flows: the timer, started at once, does the rest.
 */
#define RL_DISPATCH_MAX		256
/*
 * Expiries in a row, each starting the timer again for a time already
 * past, that rl_timer_fn() takes for a bug: it warns and backs off.
 */
#define RL_TIMER_SPINS_MAX	4096
#define RL_TIMER_BACKOFF_NS	NSEC_PER_MSEC
/* Most clients' pollers one dispatch wakes; the timer wakes the rest. */
#define RL_WAKE_MAX		64
/* How long woken pollers may take to come for their token (rl_serve_pollers()). */
#define RL_POLL_GRACE_NS	(2 * NSEC_PER_MSEC)

/*
 * Most lateness, ns, the schedule makes up for: tokens stay owed to queued
 * requests this long (rl_dispatch()), and late grants may take this much
 * of the next request's idle time (rl_settle()).
 */
#define RL_LATE_MAX_NS		(20 * NSEC_PER_MSEC)

/* Priority levels, by index: LOW, MID, HIGH, USER (RL_PRIO_* - 1). */
#define RL_NLEVELS		4
#define RL_LEVEL_USER		(RL_PRIO_USER - 1)
/* Buckets of the wait histogram: fls64() of the wait in ns. */
#define RL_HIST_BUCKETS		65

/*
 * Statistics: the fields of struct rl_stats and struct rl_demand of the
 * same names, and @dropped_late, tokens owed to the queue but dropped when
 * served over RL_LATE_MAX_NS late (rl_drop_late()).
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
	u64 refunded;
	u64 asked;
	u64 refused;
	u64 dropped_late;
};

/**
 * struct rl_level - requests of one priority
 * @flows: flows with waiters, by virtual time tag (weighted fair queuing)
 * @vtime: tag of the flow served last; new flows start no earlier
 */
struct rl_level {
	struct rb_root_cached flows;
	u64 vtime;
};

/**
 * struct rl_flow - the requests of one client at one priority
 * @node:    entry in rl_level.flows while @waiters is not empty, or in
 *           rl_limiter.capped while @parked
 * @waiters: sleeping requests (struct rl_waiter), in arrival order
 * @vtag:    virtual time at which the head request is due: grows by
 *           tokens / weight with every chunk served
 * @ready:   while @parked, when the client's cap lets the head through
 * @level:   index in rl_limiter.levels
 * @parked:  the head request is over the client's cap (rl_cap_allows())
 *
 * Guarded by the limiter's lock.
 */
struct rl_flow {
	struct rb_node node;
	struct list_head waiters;
	u64 vtag;
	u64 ready;
	u8 level;
	bool parked;
};

/**
 * struct rl_global - a limiter's side of global limits: demand, lease
 * @busy_ns:     time with at least one request sleeping, until
 *               @busy_since while there is one
 * @busy_since:  when the current sleepers began, while there are some
 * @lease_end:   when the lease ends, ns; 0 without a lease
 * @fallback:    limits applied when it ends
 * @holder:      the client that set it last: closing it ends the lease
 * @holder_pid:  that client's process, for sysfs
 * @ending:      @lease_timer put the fallback's limits on the bucket and
 *               no other limits came since: @fallback_work is to apply
 *               @fallback in full
 * @lease_timer: fires at @lease_end
 * @fallback_work: applies @fallback after @lease_timer (rl_lease_work_fn())
 *
 * Guarded by the limiter's lock, but @lease_timer and @fallback_work.
 */
struct rl_global {
	u64 busy_ns;
	u64 busy_since;
	u64 lease_end;
	struct rl_params fallback;
	struct rl_client *holder;
	pid_t holder_pid;
	bool ending;
	struct hrtimer lease_timer;
	struct work_struct fallback_work;
};

/**
 * struct rl_limiter - a token bucket with a queue of sleeping requests
 * @lock:         the lock of the tree whose root this limiter is
 * @low_first:    the next grant serves the lowest priority first
 * @timer_spins:  expiries in a row for a time already past (rl_timer_fn())
 * @tlock:        the lock in force: guards @low_first, @timer_spins, the
 *                fields from @params to @nclients, and @h; &@lock, or the
 *                lock of its root when it has a parent (tree.c); lock
 *                with rl_lock_irq()
 * @params:       limits in force
 * @bucket:       tokens
 * @levels:       sleeping requests, by priority
 * @capped:       flows over their clients' caps (struct rl_flow.node), by
 *                the time the cap lets them through
 * @queued:       tokens the sleeping requests still wait for, modulo 2^64
 * @queued_hi:    times @queued wrapped: the sum is @queued_hi * 2^64 + @queued
 * @nwaiters:     sleeping requests
 * @held:         permits held by the clients (params.concurrency)
 * @backlog:      tokens kept for catching up (params.catchup)
 * @release:      the catch-up pace: tokens of @backlog that may go now
 * @clients:      attached clients (struct rl_client.node)
 * @pollers:      clients (struct rl_client.poll_node) whose poller found
 *                the limiter not ready: rl_dispatch() wakes them when it is
 * @late:         ns the bucket's time is behind because the last grants
 *                emptied the queue late: owed to the next request
 * @timer_expiry: time the timer was last started for, 0 if not started
 * @counters:     statistics
 * @hist:         waited grants by fls64() of their wait in ns (@tlock);
 *                NULL until a request first waits, then set once without
 *                the lock (rl_limiter_hist_alloc()): READ_ONCE()
 * @global:       demand, and the lease of global limits
 * @nclients:     entries of @clients; written with WRITE_ONCE() for the
 *                lockless read of sysfs
 * @timer:        fires when the next request (or a poller) can be served
 * @ref:          references: attached clients, a named limiter's sysfs
 *                directory
 * @name:         name of a named limiter, "" for a private one; constant
 * @uid:          owner of a named limiter; set at its creation, then
 *                written (WRITE_ONCE()) under the registry lock
 *                (RL_IOC_SET_PERM), read under it or with READ_ONCE()
 * @gid:          group of a named limiter; as @uid
 * @mode:         permission bits of a named limiter; as @uid
 * @persistent:   the name stays when the last client leaves; registry lock
 * @node:         entry in the registry; registry lock
 * @hnode:        entry in the registry's table of names; registry lock
 * @dir:          /sys/kernel/ratelimit/<name> while the name is in the
 *                registry, else NULL; registry lock
 * @h:            its place in a tree of limiters (tree.c, queue.c); @tlock, and
 *                the registry lock for its links
 * @rcu:          frees it after a grace period: rl_lock_irq() of a former
 *                child may still be looking at its lock
 */
struct rl_limiter {
	spinlock_t lock;	/* see the kernel-doc above */
	bool low_first;
	u16 timer_spins;
	spinlock_t *tlock;	/* see the kernel-doc above */
	struct rl_params params;
	struct rl_bucket bucket;
	struct rl_level levels[RL_NLEVELS];
	struct rb_root_cached capped;
	u64 queued;
	u64 queued_hi;
	u64 nwaiters;
	u64 held;
	u64 backlog;
	struct rl_bucket release;
	struct list_head clients;
	struct list_head pollers;
	u64 late;
	u64 timer_expiry;
	struct rl_counters counters;
	u64 *hist;
	struct rl_global global;
	u64 nclients;
	struct hrtimer timer;
	struct kref ref;
	char name[RL_NAME_MAX];
	kuid_t uid;
	kgid_t gid;
	umode_t mode;
	bool persistent;
	struct list_head node;
	struct rhash_head hnode;
	struct rl_dir *dir;
	struct rl_hnode h;
	struct rcu_head rcu;
};

/**
 * struct rl_client - an open /dev/ratelimit file
 * @lim:    its limiter; NULL until the first RL_IOC_SET_CONFIG, then set
 *          once (cmpxchg) and constant until release
 * @pollq:  pollers of the file sleep here, from open() on, so that an fd
 *          added to epoll before it has a limiter is woken too
 * @node:   entry in the limiter's client list, guarded by its lock
 * @poll_node: entry in the limiter's pollers, guarded by its lock; empty
 *          when not there
 * @setup:  serialises giving the client a limiter
 * @may_config: RL_IOC_SET_CONFIG is allowed; written before @lim is set
 * @granted: tokens granted through this client, guarded by the limiter's
 *          lock
 * @tgid:   process that attached, for sysfs
 * @comm:   its command name then
 * @level:  priority level of its requests that ask for the default
 * @weight: share among the backlogged clients of a level
 * @cap:    most tokens per period of the limiter, 0 for no cap
 * @cap_bucket: tokens left under @cap
 * @held:   permits held
 * @refundable: tokens taken from the bucket and not refunded
 * @flows:  its sleeping requests, by level
 * @async:  its requests queued through io_uring (struct rl_async in
 *          uring.c)
 *
 * The fields from @granted on are guarded by the limiter's lock.
 */
struct rl_client {
	struct rl_limiter *lim;
	wait_queue_head_t pollq;
	struct list_head node;
	struct list_head poll_node;
	struct mutex setup;	/* see the kernel-doc above */
	bool may_config;
	u64 granted;
	pid_t tgid;
	char comm[TASK_COMM_LEN];
	u8 level;
	u32 weight;
	u64 cap;
	struct rl_bucket cap_bucket;
	u64 held;
	u64 refundable;
	struct rl_flow flows[RL_NLEVELS];
	struct list_head async;
};

/* The client's limiter, or NULL before its first SET_CONFIG or ATTACH. */
static inline struct rl_limiter *rl_client_limiter(struct rl_client *client)
{
	/* Pairs with the cmpxchg() publishing the limiter. */
	return smp_load_acquire(&client->lim);
}

/**
 * struct rl_waiter - a request sleeping in a limiter
 * @node:   entry in its flow's waiters
 * @flow:   the flow of its client and priority
 * @client: the client asking
 * @task:   the sleeping task; NULL for a request of io_uring (uring.c)
 * @served: without @task, called under the limiter lock once all is granted
 * @want:   tokens still to be granted
 * @got:    tokens granted so far, in chunks
 * @taken:  of those, tokens taken from the bucket (not when unlimited)
 * @held:   permits taken, all at the first chunk
 * @at:     the instant the tokens of its last chunk existed (the bucket's
 *          time when it was granted)
 * @done:   all granted and off the queue; written under the limiter lock,
 *          read locklessly by the sleeper
 */
struct rl_waiter {
	struct list_head node;
	struct rl_flow *flow;
	struct rl_client *client;
	struct task_struct *task;
	void (*served)(struct rl_waiter *w);
	u64 want;
	u64 got;
	u64 taken;
	u64 held;
	u64 at;
	bool done;
};

/* A limiter's limits, state and statistics, read at once under its lock. */
struct rl_snapshot {
	struct rl_params params;
	struct rl_counters counters;
	u64 waiters;
	u64 available;
	u64 held;
	u64 clients;
	u64 backlog;
};

/* A look at one client, under the limiter's lock: false stops the walk. */
typedef bool (*rl_client_fn)(const struct rl_client *client, void *arg);

/**
 * struct rl_tunable - a tunable of a limiter (tunables.c)
 * @name:        its file in the sysfs directory of a named limiter
 * @param:       offsetof() its field in struct rl_params
 * @param_size:  sizeof() that field: 1, 4 or 8
 * @config:      offsetof() its field in struct rl_config
 * @config_size: sizeof() that field: 4 or 8
 * @config_flag: the bit of rl_config.flags that it is, or 0 for a field
 * @mode:        permission bits of its sysfs file (the limiter's owner
 *               owns it); RL_IOC_SET_CONFIG needs the right to
 *               reconfigure the limiter, as for every tunable
 * @min:         least value in force
 * @max:         largest value in force
 * @dflt:        what a 0 written asks for, when @default_fn is NULL
 * @default_fn:  what a 0 written asks for, given the fields before it
 * @feature:     word of /sys/kernel/ratelimit/features that announces it,
 *               or NULL
 */
struct rl_tunable {
	const char *name;
	size_t param;
	size_t param_size;
	size_t config;
	size_t config_size;
	u32 config_flag;
	umode_t mode;
	u64 min;
	u64 max;
	u64 dflt;
	u64 (*default_fn)(const struct rl_params *p);
	const char *feature;
};

/* tunables.c: ends with an entry of NULL name. */
extern const struct rl_tunable rl_tunables[];
u64 rl_tunable_get(const struct rl_tunable *t, const struct rl_params *p);
int rl_tunable_set(const struct rl_tunable *t, struct rl_params *p, u64 val);
int rl_params_from_config(const struct rl_config *cfg, struct rl_params *p);
void rl_params_to_config(const struct rl_params *p, struct rl_config *cfg);

#endif /* _RL_RATELIMIT_H */
