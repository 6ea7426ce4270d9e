/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Locking a limiter: the lock of its tree, through rl_limiter.tlock
 * (the lock order is at the top of ratelimit.h).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_LOCK_H
#define _RL_LOCK_H

#include <linux/rcupdate.h>
#include <linux/spinlock.h>

#include "ratelimit.h"

/*
 * Lock a limiter: its tree's lock (tree.c moves it). The pointer changes only under
 * the lock it points to, so it is checked again once the lock is held. The
 * lock read may be that of a root the limiter just left, which may be
 * freed then: limiters are freed after an RCU grace period, and the lock
 * is taken, and let go if it is not the one, under rcu_read_lock(). The
 * limiter's own lock lives as long as the caller's reference to it: no
 * RCU for a limiter outside a tree, the immediate grant's case.
 */
static inline void rl_lock_irq(struct rl_limiter *lim)
	__acquires(lim->tlock)
{
	spinlock_t *l = READ_ONCE(lim->tlock);	/* the lock in force when read */

	if (likely(l == &lim->lock)) {
		spin_lock_irq(l);
		if (likely(l == READ_ONCE(lim->tlock)))
			return;
		spin_unlock_irq(l);
	}
	for (;;) {
		rcu_read_lock();
		l = READ_ONCE(lim->tlock);
		spin_lock_irq(l);
		if (likely(l == READ_ONCE(lim->tlock))) {
			rcu_read_unlock();
			break;
		}
		spin_unlock_irq(l);
		rcu_read_unlock();
	}
}

static inline void rl_unlock_irq(struct rl_limiter *lim)
	__releases(lim->tlock)
{
	spin_unlock_irq(lim->tlock);
}

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

static inline void rl_unlock_irqrestore(struct rl_limiter *lim,
					unsigned long flags)
	__releases(lim->tlock)
{
	spin_unlock_irqrestore(lim->tlock, flags);
}

#endif /* _RL_LOCK_H */
