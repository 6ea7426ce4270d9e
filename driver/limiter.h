/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the other files call of the limiter (limiter.c), and its lock (its
 * tree's, rl_limiter.tlock), which each takes but rl_dispatch() and
 * rl_move_busy(), called under it.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_LIMITER_H
#define _RL_LIMITER_H

#include <linux/poll.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>

#include "ratelimit.h"

static inline unsigned long rl_lock_irqsave(struct rl_limiter *lim)
	__acquires(lim->tlock)
{
	unsigned long flags;
	spinlock_t *l;	/* the lock in force when read */

	for (;;) {
		rcu_read_lock();
		l = READ_ONCE(lim->tlock);
		spin_lock_irqsave(l, flags);
		if (likely(l == READ_ONCE(lim->tlock))) {
			rcu_read_unlock();
			break;
		}
		spin_unlock_irqrestore(l, flags);
		rcu_read_unlock();
	}
	return flags;
}

/*
 * Lock a limiter: its tree's lock (tree.c moves it), checked again once
 * held. The lock read may be that of a root just left, freed after an RCU
 * grace period: hence rcu_read_lock(), but for the limiter's own, which
 * lives as long as the caller's reference (the immediate grant's case).
 * Interrupts are on when called: rl_unlock_irq() turns them on again.
 */
static inline void rl_lock_irq(struct rl_limiter *lim)
	__acquires(lim->tlock)
{
	spinlock_t *l = READ_ONCE(lim->tlock);

	if (likely(l == &lim->lock)) {
		spin_lock_irq(l);
		if (likely(l == READ_ONCE(lim->tlock)))
			return;
		spin_unlock_irq(l);
	}
	rl_lock_irqsave(lim);
}

static inline void rl_unlock_irq(struct rl_limiter *lim)
	__releases(lim->tlock)
{
	spin_unlock_irq(lim->tlock);
}

static inline void rl_unlock_irqrestore(struct rl_limiter *lim, unsigned long flags)
	__releases(lim->tlock)
{
	spin_unlock_irqrestore(lim->tlock, flags);
}

int rl_limiter_init(void);
void rl_limiter_exit(void);
struct rl_client *rl_client_alloc(void);
void rl_client_free(struct rl_client *client);
struct rl_limiter *rl_limiter_create(const struct rl_params *p);
void rl_limiter_get(struct rl_limiter *lim);
void rl_limiter_put(struct rl_limiter *lim);
void rl_limiter_attach(struct rl_limiter *lim, struct rl_client *client);
u64 rl_limiter_detach(struct rl_limiter *lim, struct rl_client *client);
int rl_limiter_set_params(struct rl_limiter *lim, const struct rl_params *p, u64 self);
void rl_limiter_get_params(struct rl_limiter *lim, struct rl_params *p);
int rl_limiter_set_tunables(struct rl_limiter *lim, const u64 *vals, unsigned long given);
void rl_limiter_set_client(struct rl_limiter *lim, struct rl_client *client,
			   const struct rl_client_config *cc);
void rl_limiter_get_client(struct rl_limiter *lim, struct rl_client *client,
			   struct rl_client_config *cc);
void rl_limiter_snapshot(struct rl_limiter *lim, struct rl_snapshot *s);
void rl_limiter_get_hist(struct rl_limiter *lim, u64 *hist);
void rl_limiter_get_stats(struct rl_limiter *lim, struct rl_stats *st);
void rl_limiter_walk_clients(struct rl_limiter *lim, rl_client_fn fn, void *arg);

int rl_limiter_acquire(struct rl_limiter *lim, struct rl_client *client,
		       struct rl_acquire *req, bool nonblock);
/* rl_limiter_acquire_async() queued the request. */
#define RL_QUEUED	1
int rl_limiter_acquire_async(struct rl_limiter *lim, struct rl_client *client,
			     struct rl_acquire *req, bool nonblock, struct rl_waiter *w,
			     void (*served)(struct rl_waiter *w), u64 *start);
int rl_limiter_acquire_end(struct rl_limiter *lim, struct rl_acquire *req,
			   struct rl_waiter *w, int why, u64 start);
void rl_limiter_acquire_expire(struct rl_limiter *lim, struct rl_acquire *req,
			       struct rl_waiter *w, u64 start);
void rl_limiter_acquire_drop(struct rl_limiter *lim, struct rl_acquire *req,
			     struct rl_waiter *w, u64 start);
int rl_limiter_cycle(struct rl_limiter *lim, struct rl_client *client, u64 release,
		     struct rl_acquire *req, bool nonblock, bool *released);
int rl_limiter_release(struct rl_limiter *lim, struct rl_client *client, u64 count);
int rl_limiter_refund(struct rl_limiter *lim, struct rl_client *client, u64 count);

int rl_limiter_deposit(struct rl_limiter *lim, struct rl_deposit *dep);
int rl_limiter_lease(struct rl_limiter *lim, struct rl_client *client,
		     const struct rl_params *p, const struct rl_params *fb, u64 expires);
void rl_limiter_get_demand(struct rl_limiter *lim, struct rl_demand *d);
bool rl_limiter_get_lease(struct rl_limiter *lim, u64 *left, pid_t *pid);
__poll_t rl_limiter_poll(struct rl_limiter *lim, struct rl_client *client);

void rl_dispatch(struct rl_limiter *lim, u64 now);
bool rl_move_busy(const struct rl_limiter *lim, const struct rl_limiter *old,
		  const struct rl_limiter *parent, u64 self);

#endif /* _RL_LIMITER_H */
