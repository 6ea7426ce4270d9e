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
struct rl_ns;

/*
 * A name in the registry (named.c), guarded by the registry lock: a named
 * limiter's own (rl_limiter.nm), in the IPC namespace that created it, or
 * a share of a host's limiter in another namespace (RL_IOC_SHARE).
 */
struct rl_name {
	struct rhash_head hnode;	/* entry in the registry's table of names */
	struct rl_ns *ns;		/* its namespace while registered */
	struct rl_limiter *lim;		/* the limiter it names */
};

struct rl_keys;

/* Most ancestors a limiter may have: a tree has at most 5 levels. */
#define RL_HIER_DEPTH_MAX	4

/*
 * A limiter's place in its tree. @parent, @children and @sibling are
 * written under the registry lock and the tree's lock, read under either;
 * the rest is guarded by the tree's lock.
 */
struct rl_hnode {
	struct rl_limiter *parent;	/* NULL for a root; a child holds a reference */
	struct list_head children;	/* of their @sibling */
	struct list_head sibling;	/* entry in the parent's @children */
	u32 weight;			/* share among backlogged siblings, 1..RL_WEIGHT_MAX */
	bool active;			/* in one of the parent's trees */
	bool parked;			/* in the parent's @parked_kids */
	u64 queued;			/* sleeping requests in its subtree */
	u64 vtag;			/* virtual time at which it is due at its parent */
	u64 ready;			/* while @parked, when it may go on (U64_MAX: a permit) */
	u64 kvtime;			/* tag of the child served last: none starts earlier */
	struct rb_node knode;		/* entry in the parent's @kids, or @parked_kids */
	struct rb_root_cached kids;	/* children with sleeping requests, by @vtag */
	struct rb_root_cached parked_kids; /* children out of tokens or permits, by @ready */
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

/* The requests of one priority: weighted fair queuing between flows. */
struct rl_level {
	struct rb_root_cached flows;	/* flows with waiters, by tag */
	u64 vtime;			/* tag of the flow served last: none starts earlier */
};

struct rl_group;

/* The requests of one client (or user) at one priority; the limiter's lock. */
struct rl_flow {
	struct rb_node node;		/* in its level, or rl_limiter.capped while @parked */
	struct list_head waiters;	/* struct rl_waiter, in arrival order */
	u64 vtag;			/* when its head is due: + chunk / weight per chunk */
	u64 ready;			/* while @parked, when its head's client's cap lets it on */
	u8 level;			/* index in rl_limiter.levels */
	bool parked;			/* the head is over its client's cap (rl_cap_allows()) */
};

/*
 * A limiter's lease of global limits, allocated by its first
 * RL_IOC_SET_LEASE (rl_limiter_lease()) and kept until the limiter is
 * freed. Guarded by the limiter's lock, but @lim, @lease_timer and
 * @fallback_work.
 */
struct rl_lease_state {
	struct rl_limiter *lim;		/* the limiter whose lease it is */
	u64 lease_end;			/* when the lease ends, ns; 0 without one */
	struct rl_params fallback;	/* limits applied when it ends */
	struct rl_client *holder;	/* set it last: closing it ends the lease */
	pid_t holder_pid;		/* that client's process, for sysfs */
	/* @lease_timer put the fallback's limits on the bucket, none came since */
	bool ending;			/* @fallback_work is due */
	struct hrtimer lease_timer;	/* fires at @lease_end */
	struct work_struct fallback_work; /* rl_lease_work_fn() */
};

/* A limiter's side of global limits: its demand. The limiter's lock. */
struct rl_global {
	u64 busy_ns;			/* time with requests sleeping, until @busy_since */
	u64 busy_since;			/* when the current sleepers began */
};

/*
 * A token bucket with a queue of sleeping requests. @tlock is the lock in
 * force: &@lock, or its root's when it has a parent (tree.c); take it with
 * rl_lock_irq(). It guards the fields from @low_first to @nclients and @h,
 * but what says otherwise. @hist is NULL until a request first waits, then
 * set once without the lock (rl_limiter_hist_alloc()): READ_ONCE(). The
 * registry lock (named.c) guards the name's fields from @persistent to @dir
 * and @h's links; @uid, @gid and @mode change under it with WRITE_ONCE().
 */
struct rl_limiter {
	spinlock_t lock;		/* the lock of the tree whose root it is */
	bool low_first;			/* the next grant serves the lowest priority first */
	u16 timer_spins;		/* expiries in a row for a past time (rl_timer_fn()) */
	spinlock_t *tlock;		/* the lock in force, see above */
	struct rl_params params;	/* limits in force */
	struct rl_bucket bucket;	/* tokens */
	struct rl_level levels[RL_NLEVELS]; /* sleeping requests, by priority */
	struct rb_root_cached capped;	/* flows over their clients' caps, by when they fit */
	u64 queued;			/* tokens the sleepers still want, modulo 2^64 */
	u64 queued_hi;			/* times @queued wrapped */
	u64 nwaiters;			/* sleeping requests */
	u64 fast_out;			/* tokens @fast_clients' pages may hold: not in the burst */
	u64 held;			/* permits held by the clients */
	u64 backlog;			/* tokens kept for catching up (params.catchup) */
	struct rl_bucket release;	/* the catch-up pace: what of @backlog may go now */
	struct list_head clients;	/* attached clients (rl_client.node) */
	struct rb_root groups;		/* their users (struct rl_group, queue.c) */
	struct list_head pollers;	/* clients whose poll found it not ready (poll_node) */
	u64 late;			/* ns behind after late grants: owed to the next one */
	u64 timer_expiry;		/* time the timer was last started for, or 0 */
	struct rl_counters counters;	/* statistics */
	u64 *hist;			/* waits by fls64(ns); set once unlocked: READ_ONCE() */
	struct rl_global global;	/* demand for global limits */
	struct rl_lease_state *lease;	/* NULL until a lease is first set; WRITE_ONCE() */
	u64 nclients;			/* entries of @clients; WRITE_ONCE() for sysfs */
	struct hrtimer timer;		/* fires when the next request can be served */
	const char *name;		/* a named limiter's (kmalloc), "" if private; constant */
	struct kref ref;		/* attached clients, a named one's sysfs directory */
	kuid_t uid;			/* owner; WRITE_ONCE() under the registry lock */
	kgid_t gid;			/* group, as @uid */
	umode_t mode;			/* permission bits, as @uid */
	bool persistent;		/* the name stays when the last client leaves */
	struct list_head node;		/* entry in the registry */
	struct rl_name nm;		/* its own name */
	struct rl_dir *dir;		/* its sysfs directory while the name is registered */
	struct rl_hnode h;		/* its place in a tree (tree.c, queue.c) */
	struct list_head fast_clients;	/* clients with a reservation (rl_client.fast_node) */
	struct rl_keys *keys;		/* keyed: its keys (keys.c), else NULL; constant */
	struct rcu_head rcu;		/* a former child's rl_lock_irq() may look at @lock */
};

/*
 * An open /dev/ratelimit file. From @granted on, the limiter's lock; what
 * @fast holds, only with the atomics of fast.c.
 */
struct rl_client {
	struct rl_limiter *lim;		/* NULL, then set once (cmpxchg) until release */
	wait_queue_head_t pollq;	/* pollers, from open() on (epoll before a limiter) */
	struct list_head node;		/* in the limiter's clients; its lock */
	struct list_head poll_node;	/* in the limiter's pollers, or empty; its lock */
	struct mutex setup;		/* serialises giving the client a limiter */
	bool may_config;		/* RL_IOC_SET_CONFIG allowed; set before @lim */
	struct rl_fast *fast;		/* its page (fast.c), set once (cmpxchg) */
	u64 granted;			/* tokens granted through this client */
	pid_t tgid;			/* process that attached, for sysfs */
	char comm[TASK_COMM_LEN];	/* its command name then */
	kuid_t uid;			/* effective uid of the process that opened it; constant */
	struct rl_group *group;		/* its user's at its limiter, while attached */
	struct rl_group *spare;		/* open to attach (@setup): @group if its user has none */
	u8 level;			/* priority of requests that ask for the default */
	u32 weight;			/* share among the backlogged clients of a level */
	u64 cap;			/* most tokens per period of the limiter, 0: none */
	struct rl_bucket cap_bucket;	/* tokens left under @cap */
	u64 held;			/* permits held */
	u64 refundable;			/* tokens taken from the bucket, not refunded */
	struct rl_flow flows[RL_NLEVELS]; /* its sleeping requests, by level */
	struct list_head async;		/* its io_uring requests (rl_async, uring.c) */
	struct mutex tmutex;		/* serialises its tickets' SUBMIT, COLLECT, CANCEL */
	struct list_head tickets;	/* its outstanding rl_ticket (ticket.c); @tmutex */
	struct list_head done;		/* those finished, in order; the limiter's lock */
	u64 next_ticket;		/* the last ticket number given; @tmutex */
	unsigned int ntickets;		/* outstanding tickets; @tmutex */
	struct list_head fast_node;	/* in the limiter's fast_clients, or empty */
	u64 fast_out;			/* tokens put in @fast not known to be taken */
	u64 fast_taken;			/* tokens known taken from @fast */
	u64 fast_acq;			/* of @fast's acquires, those counted */
};

/* The client's limiter, or NULL before its first SET_CONFIG or ATTACH. */
static inline struct rl_limiter *rl_client_limiter(struct rl_client *client)
{
	/* Pairs with the cmpxchg() publishing the limiter. */
	return smp_load_acquire(&client->lim);
}

/* A request sleeping in a limiter; the limiter's lock. */
struct rl_waiter {
	struct list_head node;		/* entry in its flow's waiters */
	struct rl_flow *flow;		/* of its client and priority */
	struct rl_client *client;	/* the client asking */
	struct task_struct *task;	/* the sleeper; NULL for io_uring and tickets */
	void (*served)(struct rl_waiter *w); /* without @task: once all is granted */
	u64 want;			/* tokens still to be granted */
	u64 got;			/* tokens granted so far, in chunks */
	u64 taken;			/* of those, taken from the bucket (not unlimited) */
	u64 held;			/* permits taken, all at the first chunk */
	u64 at;				/* when the tokens of its last chunk existed */
	bool done;			/* all granted and off the queue: read locklessly */
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

/* A tunable of a limiter (tunables.c). */
struct rl_tunable {
	const char *name;		/* its key in a named limiter's sysfs file config */
	size_t param;			/* offsetof() its field in struct rl_params */
	size_t param_size;		/* sizeof() that field: 1, 4 or 8 */
	size_t config;			/* offsetof() its field in struct rl_config */
	size_t config_size;		/* sizeof() that field: 4 or 8 */
	u32 config_flag;		/* its bit of rl_config.flags, or 0 for a field */
	u64 min;			/* least value in force */
	u64 max;			/* largest value in force */
	u64 dflt;			/* what a 0 written asks for, without @default_fn */
	u64 (*default_fn)(const struct rl_params *p); /* the same, from the fields before */
	const char *feature;		/* its word of ratelimit/features in sysfs, or NULL */
};

/* tunables.c: ends with an entry of NULL name. */
extern const struct rl_tunable rl_tunables[];
u64 rl_tunable_get(const struct rl_tunable *t, const struct rl_params *p);
int rl_tunable_set(const struct rl_tunable *t, struct rl_params *p, u64 val);
int rl_tunables_set(struct rl_params *p, const u64 *vals, unsigned long given);
int rl_params_from_config(const struct rl_config *cfg, struct rl_params *p);
void rl_params_to_config(const struct rl_params *p, struct rl_config *cfg);

#endif /* _RL_RATELIMIT_H */
