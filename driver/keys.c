// SPDX-License-Identifier: GPL-2.0-only
/*
 * Keyed limiters: a token bucket per key (RL_CONFIG_KEYED, RL_IOC_ACQUIRE_KEY).
 *
 * A family (struct rl_keys) hangs off its limiter from creation to free.
 * A key's bucket is its theoretical arrival time (GCRA): the instant its
 * bucket is full again, in ns plus a fraction in 1/rate ns, so that every
 * step is exact. n tokens cost n * period / rate; a request is granted at
 * @now when max(tat, now) + cost - tau <= now, tau being the burst's cost.
 * A key whose tat has passed and on which nobody sleeps holds nothing a
 * new key would not: it is dropped whenever met (lookups, the sweep).
 *
 * The keys are spread by a keyed hash over stripes, each a table under
 * its own spinlock: requests on keys of different stripes share no lock
 * and no written cache line but the per-cpu counters. A table holds its
 * keys themselves, by open addressing with linear probing, so that a
 * request reads its stripe and the key's slot, two lines, and nothing
 * points into it. A stripe's table grows and shrinks by itself,
 * allocated with the lock dropped; the sweep visits one stripe per hold
 * of its lock.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/hrtimer.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/memcontrol.h>
#include <linux/percpu.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/siphash.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "keys.h"
#include "request.h"

/* Smallest table of a stripe with keys: 2^this bytes, 5 slots. */
#define RL_STRIPE_ORDER_MIN	7
/*
 * Keys per stripe at the cap, which sizes the stripes of a family, up to
 * RL_STRIPES_MAX: 1,024 up to RL_KEYS_USER_MAX keys; above it (a cap only
 * CAP_SYS_RESOURCE may set) stripes hold more, up to 65,536 at
 * RL_KEYS_MAX. Few stripes keep the stripes' array (64 KiB at most) in
 * the caches and the TLB, so that a request on a key among millions
 * misses once, at the key's slot: 1.39x a plain ACQUIRE at a million
 * keys against 1.67x with 4,096 stripes under TCG (performance.md).
 */
#define RL_STRIPE_KEYS		1024
#define RL_STRIPES_MIN		64
#define RL_STRIPES_MAX		1024
/*
 * Other stripes a request for a new key at the cap sweeps, if their locks
 * are free, and how long the next requests at the cap leave them alone.
 */
#define RL_RECLAIM_STRIPES	16
#define RL_RECLAIM_GAP_NS	(100 * NSEC_PER_MSEC)
/* Least time between two rounds of the sweep. */
#define RL_SWEEP_MIN_NS		(2 * NSEC_PER_SEC)
/*
 * The arrays of a family: charged to its creator's memory cgroup, and a
 * failure is the caller's ENOMEM, not a warning in the kernel's log.
 */
#define RL_KEYS_GFP		(GFP_KERNEL_ACCOUNT | __GFP_NOWARN)
/* Slack of a sleeper's timer, as the limiter's. */
#define RL_KEY_SLACK_NS		RL_TIMER_SLACK_NS

/*
 * One key's state, a slot of its stripe's table: 24 bytes. The stripe's
 * lock guards every field. A key with @tat passed and no @waiters may be
 * dropped by whoever holds the lock. Keys move within the table when one
 * is dropped or the table is resized: nothing keeps a pointer to one
 * across a release of the lock, and a request in line names its key by
 * @hash.
 */
struct rl_key {
	u64 hash;			/* siphash of the key with the family's secret; 0: free */
	u64 tat;			/* ns: when the bucket is full again */
	u32 frac;			/* and this many 1/rate ns */
	u32 waiters;			/* requests sleeping on the key */
};

static_assert(sizeof(struct rl_key) == 24);

/* An instant with a fraction of a ns, in 1/rate ns. */
struct rl_kt {
	u64 ns;
	u64 frac;
};

/* The limits of every key, copied from the limiter's. */
struct rl_kparams {
	u64 rate;			/* 1 .. RL_KEY_RATE_MAX */
	u64 period;			/* ns */
	u64 burst;			/* tokens */
	struct rl_kt tau;		/* what the burst costs */
	u64 keys_max;			/* the cap on keys with state */
};

/* A part of the keys, by hash. */
struct rl_stripe {
	spinlock_t lock;		/* guards the stripe and its keys */
	u32 order;			/* the table has 2^@order bytes; 0: no table */
	u32 slots;			/* of struct rl_key: 2^@order / 24 */
	u32 count;			/* keys in the table, at most 3/4 of its slots */
	struct rl_key *table;		/* by hash, linear probing; or NULL */
	struct list_head waiters;	/* struct rl_kwait, in arrival order */
	u32 nwaiters;			/* entries of @waiters */
	u64 idle_at;			/* ns: no key here is idle before it */
} ____cacheline_aligned_in_smp;

/* Statistics, per cpu, written under a stripe's lock. */
struct rl_kcounters {
	u64 granted;
	u64 requests;
	u64 immediate;
	u64 waited;
	u64 wait_ns_total;
	u64 wait_ns_max;
	u64 timeouts;
	u64 interrupted;
	u64 rejected;
	u64 refused;
	u64 created;
	u64 evicted;
};

/*
 * The keys of a limiter. @secret, @nstripes, @stripes, @memcg and @stats
 * are constant; @params changes under @plock (a seqlock); @live is atomic;
 * each stripe's lock guards the stripe.
 */
struct rl_keys {
	siphash_key_t secret;
	u32 stripe_bits;		/* log2 of @nstripes */
	u32 nstripes;
	struct rl_stripe *stripes;
	seqlock_t plock;
	struct rl_kparams params;
	atomic_long_t live;		/* keys with state */
	struct rl_kcounters __percpu *stats;
	struct mem_cgroup *memcg;	/* the creator's: keys are charged to it */
	struct delayed_work sweep;	/* rl_keys_sweep_fn() */
	unsigned long reclaim_after;	/* jiffies: the cap may sweep other stripes; racy */
	unsigned long kick_after;	/* jiffies: a refusal may start the sweep; racy */
};

/*
 * A request in line on a key: a sleeper's, on its stack, or a queued
 * one's (struct rl_kasync). The stripe's lock.
 */
struct rl_kwait {
	struct list_head node;		/* in the stripe's waiters */
	u64 hash;			/* its key's */
	struct task_struct *task;	/* the sleeper; NULL: a struct rl_kasync */
	u64 count;
};

/*
 * A queued request of a key (rl_keys_submit()), from its submission to
 * rl_keys_async_end(). Its timer, a soft one (so the stripes' locks are
 * taken with bottom halves off), looks again at the head's ready time,
 * at the deadline, and when the request before it leaves.
 */
struct rl_kasync {
	struct rl_kwait w;		/* in line while @queued */
	struct rl_keys *ks;
	struct rl_stripe *s;
	struct hrtimer timer;
	struct rl_acquire req;		/* the request; its outputs once finished */
	u64 start;			/* when it was submitted */
	rl_kasync_done_fn done;		/* called once it finished, unlocked */
	void *arg;
	int result;			/* once finished: 0, -ETIMEDOUT, -EINVAL; the lock */
	bool queued;			/* in line; the stripe's lock */
};

/* a < b */
static bool rl_kt_before(struct rl_kt a, struct rl_kt b)
{
	return a.ns < b.ns || (a.ns == b.ns && a.frac < b.frac);
}

static struct rl_kt rl_kt_add(struct rl_kt a, struct rl_kt b, u64 rate)
{
	a.ns += b.ns;
	a.frac += b.frac;
	if (a.frac >= rate) {
		a.frac -= rate;
		a.ns++;
	}
	return a;
}

/* a - b, for a >= b */
static struct rl_kt rl_kt_sub(struct rl_kt a, struct rl_kt b, u64 rate)
{
	if (a.frac < b.frac) {
		a.frac += rate;
		a.ns--;
	}
	a.ns -= b.ns;
	a.frac -= b.frac;
	return a;
}

/* What @n tokens cost, @n <= burst: n * period fits in 64 bits. */
static struct rl_kt rl_kt_cost(const struct rl_kparams *kp, u64 n)
{
	struct rl_kt c;

	c.ns = div64_u64_rem(n * kp->period, kp->rate, &c.frac);
	return c;
}

/* The first ns at or after @t. */
static u64 rl_kt_ceil(struct rl_kt t)
{
	return t.ns + !!t.frac;
}

static struct rl_kt rl_key_tat(const struct rl_key *k, const struct rl_kparams *kp)
{
	/* A fraction of a former, larger rate: less than a ns. */
	return (struct rl_kt){ k->tat, min_t(u64, k->frac, kp->rate - 1) };
}

static bool rl_key_full(const struct rl_key *k, u64 now)
{
	return k->tat < now || (k->tat == now && !k->frac);
}

static bool rl_key_idle(const struct rl_key *k, u64 now)
{
	return !k->waiters && rl_key_full(k, now);
}

/* The first instant at which @k is full: rl_key_full() from then on. */
static u64 rl_key_full_at(const struct rl_key *k)
{
	return k->tat + !!k->frac;
}

/* max(tat, now) + what @n tokens cost: the key's tat once they are granted. */
static struct rl_kt rl_key_after(const struct rl_key *k, const struct rl_kparams *kp, u64 n,
				 u64 now)
{
	struct rl_kt t = rl_key_tat(k, kp), base = { now, 0 };

	if (rl_kt_before(t, base))
		t = base;
	return rl_kt_add(t, rl_kt_cost(kp, n), kp->rate);
}

/* When the tokens of a key whose tat would be @after existed: after - tau, or 0. */
static struct rl_kt rl_kt_ready(struct rl_kt after, const struct rl_kparams *kp)
{
	if (rl_kt_before(after, kp->tau))
		return (struct rl_kt){};
	return rl_kt_sub(after, kp->tau, kp->rate);
}

/* Grant @n tokens of @k at @now if its bucket holds them; *@at: when they existed. */
static bool rl_key_take(struct rl_key *k, const struct rl_kparams *kp, u64 n, u64 now, u64 *at)
{
	struct rl_kt after = rl_key_after(k, kp, n, now);
	struct rl_kt ready = rl_kt_ready(after, kp);

	if (ready.ns > now || (ready.ns == now && ready.frac))
		return false;
	k->tat = after.ns;
	k->frac = after.frac;
	*at = ready.ns;
	return true;
}

static void rl_keys_read_params(struct rl_keys *ks, struct rl_kparams *kp)
{
	unsigned int seq;

	do {
		seq = read_seqbegin(&ks->plock);
		*kp = ks->params;
	} while (read_seqretry(&ks->plock, seq));
}

/* The hash of a key's bytes, never 0 (a free slot). */
static u64 rl_keys_hash(struct rl_keys *ks, const u8 *key, u32 len)
{
	return siphash(key, len, &ks->secret) ?: 1;
}

static struct rl_stripe *rl_stripe_of(struct rl_keys *ks, u64 hash)
{
	return &ks->stripes[hash & (ks->nstripes - 1)];
}

static u32 rl_stripe_slots(const struct rl_stripe *s)
{
	return s->table ? s->slots : 0;
}

/* The slot where the probe for @hash starts: the hash above the stripe's bits, scaled. */
static u32 rl_key_home(struct rl_keys *ks, struct rl_stripe *s, u64 hash)
{
	return ((u64)(u32)(hash >> ks->stripe_bits) * s->slots) >> 32;
}

static u32 rl_slot_next(const struct rl_stripe *s, u32 i)
{
	return i + 1 == s->slots ? 0 : i + 1;
}

/* How far slot @to is after slot @from, going round. */
static u32 rl_slot_dist(const struct rl_stripe *s, u32 from, u32 to)
{
	return to >= from ? to - from : to + s->slots - from;
}

/* The slot of the key of @hash, or the free one that ends its probe; a table. */
static struct rl_key *rl_key_slot(struct rl_keys *ks, struct rl_stripe *s, u64 hash)
{
	u32 i = rl_key_home(ks, s, hash);

	while (s->table[i].hash && s->table[i].hash != hash)
		i = rl_slot_next(s, i);
	return &s->table[i];
}

static struct rl_key *rl_key_find(struct rl_keys *ks, struct rl_stripe *s, u64 hash)
{
	struct rl_key *k;

	if (!s->table)
		return NULL;
	k = rl_key_slot(ks, s, hash);
	return k->hash ? k : NULL;
}

/*
 * Drop the key in slot @i; the stripe's lock. The keys after it up to a
 * free slot move back into the hole when their probe passes it, so that
 * every key is still found from its home: they stay within that run.
 */
static void rl_key_evict(struct rl_keys *ks, struct rl_stripe *s, u32 i)
{
	u32 j;

	for (j = rl_slot_next(s, i); s->table[j].hash; j = rl_slot_next(s, j)) {
		u32 home = rl_key_home(ks, s, s->table[j].hash);

		/* Its home is not in (i, j]: the hole is on its probe. */
		if (rl_slot_dist(s, home, j) >= rl_slot_dist(s, i, j)) {
			s->table[i] = s->table[j];
			i = j;
		}
	}
	s->table[i] = (struct rl_key){};
	s->count--;
	atomic_long_dec(&ks->live);
	__this_cpu_inc(ks->stats->evicted);
}

/*
 * Drop the stripe's idle keys. A key's tat only grows but for a new key,
 * so none can be idle before the first instant a key left here is full
 * (with sleepers or not): until then the stripe is not walked again, and a
 * flood of new keys at the cap costs a refusal a few compares, not a walk.
 * The walk starts at a free slot, which stays free: a key moved back by
 * rl_key_evict() lands in the slot being looked at, never in one seen.
 */
static void rl_stripe_sweep(struct rl_keys *ks, struct rl_stripe *s, u64 now)
{
	u64 next = U64_MAX;
	u32 i = 0, seen;

	if (now < s->idle_at || !s->table)
		return;
	while (s->table[i].hash)
		i++;
	for (seen = 0; seen < s->slots; ) {
		struct rl_key *k = &s->table[i];

		if (k->hash && rl_key_idle(k, now)) {
			rl_key_evict(ks, s, i);
			continue;
		}
		if (k->hash)
			next = min(next, rl_key_full_at(k));
		i = rl_slot_next(s, i);
		seen++;
	}
	s->idle_at = next;
}

/* The slots of a table of 2^@order bytes, 0 for none. */
static u32 rl_order_slots(u32 order)
{
	return order ? (1U << order) / sizeof(struct rl_key) : 0;
}

/* Would @count keys leave 1/4 of @slots free? */
static bool rl_slots_hold(u32 slots, u32 count)
{
	return (u64)count * 4 <= (u64)slots * 3;
}

/* The table a request wants before it looks: one at all, or twice as large when full. */
static u32 rl_stripe_grows(const struct rl_stripe *s)
{
	if (!s->table)
		return RL_STRIPE_ORDER_MIN;
	return rl_slots_hold(s->slots, s->count + 1) ? s->order : s->order + 1;
}

/*
 * The table the sweep leaves: none for no key (0), else as a request
 * wants, or, below one key in 8 slots, two slots a key.
 */
static u32 rl_stripe_fits(const struct rl_stripe *s)
{
	u32 order = rl_stripe_grows(s);

	if (!s->count)
		return 0;
	if (order == s->order && s->order > RL_STRIPE_ORDER_MIN && s->count < s->slots / 8)
		order = max_t(u32, RL_STRIPE_ORDER_MIN,
			      order_base_2(2 * s->count * sizeof(struct rl_key)));
	return order;
}

/*
 * A table of 2^@order bytes, free slots, charged to the family's memory
 * cgroup: a power of two, what kmalloc() and vmalloc() give.
 */
static struct rl_key *rl_table_alloc(struct rl_keys *ks, u32 order)
{
	struct mem_cgroup *old = set_active_memcg(ks->memcg);
	struct rl_key *t = kvzalloc(1UL << order, RL_KEYS_GFP);

	set_active_memcg(old);
	return t;
}

static void rl_stripe_rehash(struct rl_keys *ks, struct rl_stripe *s, struct rl_key *t, u32 order)
{
	struct rl_key *old = s->table;
	u32 i, n = rl_stripe_slots(s);

	s->table = t;
	s->order = order;
	s->slots = rl_order_slots(order);
	for (i = 0; i < n; i++)
		if (old[i].hash)
			*rl_key_slot(ks, s, old[i].hash) = old[i];
}

/*
 * Give the stripe a table of 2^@order bytes, or none for @order 0, if its
 * keys still fit then. Called and returns with the lock held; drops it to
 * allocate and to free. False if the allocation failed.
 */
static bool rl_stripe_resize(struct rl_keys *ks, struct rl_stripe *s, u32 order)
	__must_hold(&s->lock)
{
	struct rl_key *t = NULL, *old;

	if (order) {
		spin_unlock_bh(&s->lock);
		t = rl_table_alloc(ks, order);
		spin_lock_bh(&s->lock);
		if (!t)
			return false;
	}
	old = t;
	if (order != s->order && (order ? rl_slots_hold(rl_order_slots(order), s->count) :
				  !s->count)) {
		old = s->table;
		rl_stripe_rehash(ks, s, t, order);
	}
	spin_unlock_bh(&s->lock);
	kvfree(old);
	spin_lock_bh(&s->lock);
	return true;
}

/* Sweep up to RL_RECLAIM_STRIPES stripes after @s whose locks are free: no order between them. */
static void rl_keys_reclaim(struct rl_keys *ks, struct rl_stripe *s, u64 keys_max, u64 now)
{
	u32 i, at = s - ks->stripes;

	for (i = 1; i <= RL_RECLAIM_STRIPES && i < ks->nstripes; i++) {
		struct rl_stripe *o = &ks->stripes[(at + i) & (ks->nstripes - 1)];

		if (atomic_long_read(&ks->live) <= keys_max)
			return;
		if (!spin_trylock_bh(&o->lock))
			continue;
		rl_stripe_sweep(ks, o, now);
		spin_unlock_bh(&o->lock);
	}
}

/*
 * Room for one more key (counted in @ks->live when true)? At the cap,
 * sweeps the stripe, and other stripes at most every RL_RECLAIM_GAP_NS:
 * a flood of new keys at the cap costs a request a stripe's walk at
 * most, and a few compares while none of its keys can be idle
 * (rl_stripe_sweep()). No room found starts the sweep of every stripe,
 * at most every RL_SWEEP_MIN_NS.
 */
static bool rl_keys_room(struct rl_keys *ks, struct rl_stripe *s, u64 keys_max, u64 now)
{
	unsigned long j = jiffies;

	if (atomic_long_inc_return(&ks->live) <= keys_max)
		return true;
	rl_stripe_sweep(ks, s, now);
	if (atomic_long_read(&ks->live) > keys_max &&
	    time_after_eq(j, READ_ONCE(ks->reclaim_after))) {
		WRITE_ONCE(ks->reclaim_after, j + nsecs_to_jiffies(RL_RECLAIM_GAP_NS));
		rl_keys_reclaim(ks, s, keys_max, now);
	}
	if (atomic_long_read(&ks->live) <= keys_max)
		return true;
	atomic_long_dec(&ks->live);
	if (time_after_eq(j, READ_ONCE(ks->kick_after))) {
		WRITE_ONCE(ks->kick_after, j + nsecs_to_jiffies(RL_SWEEP_MIN_NS));
		mod_delayed_work(system_unbound_wq, &ks->sweep, 0);
	}
	return false;
}

/* Put in the key of @hash, at its free slot @k: it is full, nobody waits. */
static struct rl_key *rl_key_insert(struct rl_keys *ks, struct rl_stripe *s, struct rl_key *k,
				    u64 hash, const struct rl_kparams *kp)
{
	*k = (struct rl_key){ .hash = hash };
	s->count++;
	s->idle_at = 0;
	__this_cpu_inc(ks->stats->created);
	if (s->count == 1)
		queue_delayed_work(system_unbound_wq, &ks->sweep,
				   nsecs_to_jiffies(max_t(u64, kp->tau.ns, RL_SWEEP_MIN_NS)));
	return k;
}

/*
 * The key of @hash, with the stripe's lock held: found, or made. The
 * table first grows if a new key would fill it (dropping the lock), so
 * that the lookup, the cap and the insertion are one hold of the lock
 * and a refusal allocates nothing. An ERR_PTR: -ENOSPC at the cap,
 * -ENOMEM. *@now: the time once the lock is held for good.
 */
static struct rl_key *rl_key_get(struct rl_keys *ks, struct rl_stripe *s, u64 hash,
				 const struct rl_kparams *kp, u64 *now)
	__must_hold(&s->lock)
{
	struct rl_key *k;
	u32 order;

	while ((order = rl_stripe_grows(s)) != s->order)
		if (!rl_stripe_resize(ks, s, order))
			break;
	*now = ktime_get_ns();
	k = rl_key_find(ks, s, hash);
	if (k)
		return k;
	/* A full table whose growth failed still takes keys up to one free slot. */
	if (!s->table || s->count + 1 >= rl_stripe_slots(s))
		return ERR_PTR(-ENOMEM);
	if (!rl_keys_room(ks, s, kp->keys_max, *now))
		return ERR_PTR(-ENOSPC);
	return rl_key_insert(ks, s, rl_key_slot(ks, s, hash), hash, kp);
}

/* When @n tokens of @k could be granted, behind its sleepers, up to @self. */
static struct rl_kt rl_key_ready(struct rl_stripe *s, struct rl_key *k, const struct rl_kparams *kp,
				 u64 n, struct rl_kwait *self, u64 now)
{
	struct rl_key probe = *k;
	struct rl_kwait *w;
	struct rl_kt after;

	list_for_each_entry(w, &s->waiters, node) {
		if (w == self)
			break;
		if (w->hash != k->hash)
			continue;
		after = rl_key_after(&probe, kp, w->count, now);
		probe.tat = after.ns;
		probe.frac = after.frac;
	}
	return rl_kt_ready(rl_key_after(&probe, kp, n, now), kp);
}

static bool rl_kwait_head(struct rl_stripe *s, struct rl_kwait *self)
{
	struct rl_kwait *w;

	list_for_each_entry(w, &s->waiters, node)
		if (w->hash == self->hash)
			return w == self;
	return false;
}

/* Let @w look again: wake its sleeper, or fire its timer now. */
static void rl_kwait_wake(struct rl_kwait *w)
{
	if (w->task)
		wake_up_process(w->task);
	else
		hrtimer_start(&container_of(w, struct rl_kasync, w)->timer, 0,
			      HRTIMER_MODE_REL_SOFT);
}

/* @self leaves; the next in line on its key, now its head, looks again. */
static void rl_kwait_leave(struct rl_keys *ks, struct rl_stripe *s, struct rl_kwait *self)
{
	struct rl_kwait *w = self;
	bool head = rl_kwait_head(s, self);

	list_for_each_entry_continue(w, &s->waiters, node) {
		if (w->hash != self->hash)
			continue;
		if (head)
			rl_kwait_wake(w);
		break;
	}
	list_del(&self->node);
	/* Its key stays while it is in line (rl_key_idle()). */
	rl_key_find(ks, s, self->hash)->waiters--;
	WRITE_ONCE(s->nwaiters, s->nwaiters - 1);
}

/* Sleep until @until (U64_MAX: until woken); the stripe's lock is dropped meanwhile. */
static void rl_kwait_sleep(struct rl_stripe *s, u64 until)
	__must_hold(&s->lock)
{
	ktime_t t = ns_to_ktime(until);

	set_current_state(TASK_INTERRUPTIBLE);
	spin_unlock_bh(&s->lock);
	schedule_hrtimeout_range(until == U64_MAX ? NULL : &t, RL_KEY_SLACK_NS, HRTIMER_MODE_ABS);
	spin_lock_bh(&s->lock);
}

/*
 * One look of @w, in line on its key: 0 when its tokens are granted (*@at:
 * when they existed), -ETIMEDOUT past the deadline, -EINVAL when the burst
 * was lowered below its count, or 1 to look again at *@until (U64_MAX:
 * when the request before it leaves). The stripe's lock.
 */
static int rl_kwait_look(struct rl_keys *ks, struct rl_stripe *s, struct rl_kwait *w,
			 struct rl_acquire *req, u64 *at, u64 *until)
{
	struct rl_key *k = rl_key_find(ks, s, w->hash);
	u64 deadline = req->deadline_ns, now;
	struct rl_kparams kp;
	struct rl_kt ready;

	rl_keys_read_params(ks, &kp);
	now = ktime_get_ns();
	if (w->count > kp.burst)
		return -EINVAL;
	if (rl_kwait_head(s, w) && rl_key_take(k, &kp, w->count, now, at))
		return 0;
	ready = rl_key_ready(s, k, &kp, w->count, w, now);
	if (now >= deadline) {
		req->ready_ns = rl_kt_ceil(ready);
		return -ETIMEDOUT;
	}
	*until = rl_kwait_head(s, w) ? min(rl_kt_ceil(ready), deadline) : deadline;
	return 1;
}

/*
 * Wait in line on @w's key until its tokens are granted, the deadline
 * passes or a signal comes. Takes the stripe's lock and returns with it.
 */
static int rl_kwait(struct rl_keys *ks, struct rl_stripe *s, struct rl_kwait *w,
		    struct rl_acquire *req, u64 *at)
	__must_hold(&s->lock)
{
	u64 until;
	int ret;

	while ((ret = rl_kwait_look(ks, s, w, req, at, &until)) > 0) {
		if (signal_pending(current))
			return -ERESTARTSYS;
		rl_kwait_sleep(s, until);
	}
	return ret;
}

/* Account for a request that slept; the stripe's lock. */
static int rl_kwait_end(struct rl_keys *ks, struct rl_stripe *s, struct rl_kwait *w,
			struct rl_acquire *req, int ret, u64 start, u64 at)
{
	struct rl_kcounters *c = this_cpu_ptr(ks->stats);
	u64 wait = ktime_get_ns() - start;

	rl_kwait_leave(ks, s, w);
	if (!ret) {
		req->wait_ns = wait;
		req->ready_ns = at;
		c->waited++;
		c->granted += req->count;
		c->wait_ns_total += wait;
		c->wait_ns_max = max(c->wait_ns_max, wait);
	} else if (ret == -ETIMEDOUT) {
		c->timeouts++;
	}
	return ret;
}

/*
 * Serve a request now (0), refuse it (-EAGAIN, -ETIMEDOUT, @req->ready_ns
 * set), or say that it waits in line (1); the stripe's lock.
 */
static int rl_key_admit(struct rl_keys *ks, struct rl_stripe *s, struct rl_key *k,
			const struct rl_kparams *kp, struct rl_acquire *req, bool nonblock,
			u64 now)
{
	struct rl_kcounters *c = this_cpu_ptr(ks->stats);
	struct rl_kt ready;
	u64 at;

	if (!k->waiters && rl_key_take(k, kp, req->count, now, &at)) {
		req->ready_ns = at;
		c->immediate++;
		c->granted += req->count;
		return 0;
	}
	ready = rl_key_ready(s, k, kp, req->count, NULL, now);
	req->ready_ns = rl_kt_ceil(ready);
	if (nonblock) {
		c->rejected++;
		return -EAGAIN;
	}
	if (now >= req->deadline_ns ||
	    (req->flags & RL_ACQUIRE_PREDICT && req->ready_ns > req->deadline_ns)) {
		c->timeouts++;
		return -ETIMEDOUT;
	}
	req->ready_ns = 0;
	return 1;
}

/* Put @w at the end of the line of its key @k; the stripe's lock. */
static void rl_kwait_add(struct rl_stripe *s, struct rl_key *k, struct rl_kwait *w)
{
	list_add_tail(&w->node, &s->waiters);
	k->waiters++;
	WRITE_ONCE(s->nwaiters, s->nwaiters + 1);
}

/* Serve a request now, refuse it, or sleep in line; the stripe's lock. */
static int rl_key_request(struct rl_keys *ks, struct rl_stripe *s, struct rl_key *k,
			  const struct rl_kparams *kp, struct rl_acquire *req, bool nonblock,
			  u64 now)
	__must_hold(&s->lock)
{
	struct rl_kwait w = { .hash = k->hash, .task = current, .count = req->count };
	u64 at = 0;
	int ret;

	ret = rl_key_admit(ks, s, k, kp, req, nonblock, now);
	if (ret <= 0)
		return ret;
	rl_kwait_add(s, k, &w);
	ret = rl_kwait(ks, s, &w, req, &at);
	return rl_kwait_end(ks, s, &w, req, ret, now, at);
}

/*
 * Find or make the key of @hash, counting a request: the key, or an
 * ERR_PTR: -ENOSPC at the cap (@req->ready_ns set), -ENOMEM. Called and
 * returns with the stripe's lock held; drops it to allocate. *@now: when
 * the key was found.
 */
static struct rl_key *rl_key_lookup(struct rl_keys *ks, struct rl_stripe *s, u64 hash,
				    const struct rl_kparams *kp, struct rl_acquire *req, u64 *now)
	__must_hold(&s->lock)
{
	struct rl_key *k = rl_key_get(ks, s, hash, kp, now);

	if (k == ERR_PTR(-ENOMEM))
		return k;
	__this_cpu_inc(ks->stats->requests);
	if (k == ERR_PTR(-ENOSPC)) {
		__this_cpu_inc(ks->stats->refused);
		req->ready_ns = rl_kt_ceil(rl_kt_add((struct rl_kt){ *now, 0 }, kp->tau, kp->rate));
	}
	return k;
}

/**
 * rl_keys_acquire() - take tokens from one key's bucket (RL_IOC_ACQUIRE_KEY)
 * @ks:       the family
 * @key:      the key's bytes
 * @len:      1 .. RL_KEY_MAX
 * @req:      the request, checked by rl_acquire_admit(); outputs filled in
 * @nonblock: fail with -EAGAIN instead of sleeping
 * Return: 0, -EINVAL (count above the burst), -EAGAIN, -ETIMEDOUT,
 * -ERESTARTSYS, -ENOSPC (a new key at the cap), -ENOMEM.
 */
int rl_keys_acquire(struct rl_keys *ks, const u8 *key, u32 len, struct rl_acquire *req,
		    bool nonblock)
{
	u64 hash = rl_keys_hash(ks, key, len), now;
	struct rl_stripe *s = rl_stripe_of(ks, hash);
	struct rl_kparams kp;
	struct rl_key *k;
	int ret;

	rl_keys_read_params(ks, &kp);
	if (req->count > kp.burst)
		return -EINVAL;
	spin_lock_bh(&s->lock);
	k = rl_key_lookup(ks, s, hash, &kp, req, &now);
	ret = IS_ERR(k) ? PTR_ERR(k) : rl_key_request(ks, s, k, &kp, req, nonblock, now);
	spin_unlock_bh(&s->lock);
	/* A stop or the freezer restarts the call unseen: one request, as for a limiter. */
	if (ret == -ERESTARTSYS) {
		if (rl_signal_seen())
			this_cpu_inc(ks->stats->interrupted);
		else
			this_cpu_dec(ks->stats->requests);
	}
	return ret;
}

/* End @a in line with @ret: its outputs, the counters, the next in line told. The lock. */
static void rl_kasync_finish(struct rl_kasync *a, int ret, u64 at)
{
	a->queued = false;
	a->result = rl_kwait_end(a->ks, a->s, &a->w, &a->req, ret, a->start, at);
}

/* @a's outputs into @req, once it finished: its result. */
static int rl_kasync_outputs(const struct rl_kasync *a, struct rl_acquire *req)
{
	req->wait_ns = a->req.wait_ns;
	req->ready_ns = a->req.ready_ns;
	req->lag_ns = 0;
	return a->result;
}

/* Look again at @a, if it is still in line: finished, or the timer set again. The lock. */
static bool rl_kasync_look(struct rl_kasync *a)
{
	u64 at = 0, until = U64_MAX;
	int ret;

	if (!a->queued)
		return false;
	ret = rl_kwait_look(a->ks, a->s, &a->w, &a->req, &at, &until);
	if (ret <= 0) {
		rl_kasync_finish(a, ret, at);
		return true;
	}
	if (until != U64_MAX)
		hrtimer_start_range_ns(&a->timer, ns_to_ktime(until), RL_KEY_SLACK_NS,
				       HRTIMER_MODE_ABS_SOFT);
	return false;
}

static enum hrtimer_restart rl_kasync_fire(struct hrtimer *timer)
{
	struct rl_kasync *a = container_of(timer, struct rl_kasync, timer);
	bool finished;

	spin_lock(&a->s->lock);
	finished = rl_kasync_look(a);
	spin_unlock(&a->s->lock);
	/* rl_keys_async_end() waits for this callback before freeing @a. */
	if (finished)
		a->done(a->arg);
	return HRTIMER_NORESTART;
}

/**
 * rl_keys_submit() - queue a request of one key's tokens (RL_IOC_SUBMIT_KEY)
 * @ks:   the family
 * @key:  the key's bytes
 * @len:  1 .. RL_KEY_MAX
 * @req:  the request, checked by rl_acquire_check(); outputs filled in when
 *        it ends at once
 * @done: called once, from a timer and unlocked, when a queued request
 *        finishes; rl_keys_async_end() then gives its result
 * @arg:  for @done
 * @ap:   set to the queued request, or NULL when it ended at once
 *
 * The request waits in line on its key behind the sleepers and queued
 * requests before it, as a sleeper of RL_IOC_ACQUIRE_KEY does.
 *
 * Return: 0 (granted at once when *@ap is NULL), -EINVAL (count above the
 * burst), -ETIMEDOUT (the deadline past or, with RL_ACQUIRE_PREDICT,
 * predicted late), -ENOSPC (a new key at the cap), -ENOMEM.
 */
int rl_keys_submit(struct rl_keys *ks, const u8 *key, u32 len, struct rl_acquire *req,
		   rl_kasync_done_fn done, void *arg, struct rl_kasync **ap)
{
	u64 hash = rl_keys_hash(ks, key, len), now;
	struct rl_stripe *s = rl_stripe_of(ks, hash);
	struct rl_kparams kp;
	struct rl_kasync *a;
	struct rl_key *k;
	int ret;

	*ap = NULL;
	rl_keys_read_params(ks, &kp);
	if (req->count > kp.burst)
		return -EINVAL;
	a = kzalloc(sizeof(*a), GFP_KERNEL_ACCOUNT);
	if (!a)
		return -ENOMEM;
	spin_lock_bh(&s->lock);
	k = rl_key_lookup(ks, s, hash, &kp, req, &now);
	ret = IS_ERR(k) ? PTR_ERR(k) : rl_key_admit(ks, s, k, &kp, req, false, now);
	if (ret == 1) {
		*a = (struct rl_kasync){ .w = { .hash = hash, .count = req->count }, .ks = ks,
					 .s = s, .req = *req, .start = now, .done = done,
					 .arg = arg, .queued = true };
		hrtimer_setup(&a->timer, rl_kasync_fire, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
		rl_kwait_add(s, k, &a->w);
		ret = 0;
		if (rl_kasync_look(a))
			ret = rl_kasync_outputs(a, req);
		else
			*ap = a;
	}
	spin_unlock_bh(&s->lock);
	if (!*ap)
		kfree(a);
	return ret;
}

/**
 * rl_keys_async_end() - end a queued request and free it
 * @a:   from rl_keys_submit()
 * @req: its outputs are filled in
 *
 * A request still in line leaves it, taking nothing (counted as
 * interrupted); a granted one keeps its tokens: a key takes none back.
 * Once this returns, @a's done callback is not running and never will.
 *
 * Return: 0 (granted), -ETIMEDOUT, -EINVAL (the burst lowered below its
 * count), or -ECANCELED when it was still in line.
 */
int rl_keys_async_end(struct rl_kasync *a, struct rl_acquire *req)
{
	struct rl_stripe *s = a->s;
	int ret;

	spin_lock_bh(&s->lock);
	if (a->queued) {
		rl_kasync_finish(a, -ECANCELED, 0);
		__this_cpu_inc(a->ks->stats->interrupted);
	}
	spin_unlock_bh(&s->lock);
	/* Out of line, nobody starts the timer again; a callback running ends. */
	hrtimer_cancel(&a->timer);
	ret = rl_kasync_outputs(a, req);
	kfree(a);
	return ret;
}

/**
 * rl_keys_get_key() - read one key's state without creating it (RL_IOC_GET_KEY)
 * @ks:  the family
 * @key: the key's bytes
 * @len: 1 .. RL_KEY_MAX
 * @st:  its output fields are filled in
 */
void rl_keys_get_key(struct rl_keys *ks, const u8 *key, u32 len, struct rl_key_state *st)
{
	u64 hash = rl_keys_hash(ks, key, len), now;
	struct rl_stripe *s = rl_stripe_of(ks, hash);
	struct rl_kt left, tat;
	struct rl_kparams kp;
	struct rl_key *k;

	rl_keys_read_params(ks, &kp);
	st->available = kp.burst;
	spin_lock_bh(&s->lock);
	now = ktime_get_ns();
	k = rl_key_find(ks, s, hash);
	if (k && !rl_key_full(k, now)) {
		tat = rl_key_tat(k, &kp);
		st->full_ns = rl_kt_ceil(tat);
		/* Tokens: (now + tau - tat) * rate / period, tat - now < tau. */
		left = rl_kt_sub(tat, (struct rl_kt){ now, 0 }, kp.rate);
		st->available = 0;
		if (rl_kt_before(left, kp.tau)) {
			left = rl_kt_sub(kp.tau, left, kp.rate);
			st->available = div64_u64(left.ns * kp.rate + left.frac, kp.period);
		}
	}
	if (k) {
		st->waiters = k->waiters;
		st->kept = 1;
	}
	spin_unlock_bh(&s->lock);
}

static void rl_keys_sum(struct rl_keys *ks, struct rl_kcounters *sum)
{
	int cpu;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu) {
		const struct rl_kcounters *c = per_cpu_ptr(ks->stats, cpu);

		sum->granted += READ_ONCE(c->granted);
		sum->requests += READ_ONCE(c->requests);
		sum->immediate += READ_ONCE(c->immediate);
		sum->waited += READ_ONCE(c->waited);
		sum->wait_ns_total += READ_ONCE(c->wait_ns_total);
		sum->wait_ns_max = max(sum->wait_ns_max, READ_ONCE(c->wait_ns_max));
		sum->timeouts += READ_ONCE(c->timeouts);
		sum->interrupted += READ_ONCE(c->interrupted);
		sum->rejected += READ_ONCE(c->rejected);
		sum->refused += READ_ONCE(c->refused);
		sum->created += READ_ONCE(c->created);
		sum->evicted += READ_ONCE(c->evicted);
	}
}

static u64 rl_keys_waiters(struct rl_keys *ks)
{
	u64 n = 0;
	u32 i;

	for (i = 0; i < ks->nstripes; i++)
		n += READ_ONCE(ks->stripes[i].nwaiters);
	return n;
}

/**
 * rl_keys_get_stats() - the counts of a family's keys (RL_IOC_GET_KEYS)
 * @ks: the family
 * @st: its output fields are filled in
 */
void rl_keys_get_stats(struct rl_keys *ks, struct rl_keys_stats *st)
{
	struct rl_kcounters sum;
	struct rl_kparams kp;

	rl_keys_read_params(ks, &kp);
	rl_keys_sum(ks, &sum);
	st->keys = max_t(long, atomic_long_read(&ks->live), 0);
	st->keys_max = kp.keys_max;
	st->created = sum.created;
	st->evicted = sum.evicted;
	st->refused = sum.refused;
	st->waiters = rl_keys_waiters(ks);
}

/**
 * rl_keys_counters() - a family's statistics as a limiter's
 * @ks:      the family
 * @c:       the fields of struct rl_stats are set to the sums of all keys
 * @waiters: set to the requests sleeping on any key
 */
void rl_keys_counters(struct rl_keys *ks, struct rl_counters *c, u64 *waiters)
{
	struct rl_kcounters sum;

	rl_keys_sum(ks, &sum);
	c->granted = sum.granted;
	c->requests = sum.requests;
	c->immediate = sum.immediate;
	c->waited = sum.waited;
	c->wait_ns_total = sum.wait_ns_total;
	c->wait_ns_max = sum.wait_ns_max;
	c->timeouts = sum.timeouts;
	c->interrupted = sum.interrupted;
	c->rejected = sum.rejected;
	*waiters = rl_keys_waiters(ks);
}

/* One round: every stripe, one hold of its lock each, idle keys dropped, tables fitted. */
static void rl_keys_sweep_fn(struct work_struct *work)
{
	struct rl_keys *ks = container_of(to_delayed_work(work), struct rl_keys, sweep);
	struct rl_kparams kp;
	u32 i, order;

	for (i = 0; i < ks->nstripes; i++) {
		struct rl_stripe *s = &ks->stripes[i];

		spin_lock_bh(&s->lock);
		rl_stripe_sweep(ks, s, ktime_get_ns());
		order = rl_stripe_fits(s);
		if (s->table && order != s->order)
			rl_stripe_resize(ks, s, order);
		spin_unlock_bh(&s->lock);
		cond_resched();
	}
	rl_keys_read_params(ks, &kp);
	if (atomic_long_read(&ks->live) > 0)
		queue_delayed_work(system_unbound_wq, &ks->sweep,
				   nsecs_to_jiffies(max_t(u64, kp.tau.ns, RL_SWEEP_MIN_NS)));
}

static void rl_kparams_from(struct rl_kparams *kp, const struct rl_params *p)
{
	kp->rate = p->rate;
	kp->period = p->period;
	kp->burst = p->burst;
	kp->tau = rl_kt_cost(kp, p->burst);
	kp->keys_max = p->keys ?: RL_KEYS_DEFAULT;
}

/**
 * rl_keys_allowed() - may the caller ask for these limits of a keyed limiter?
 * @p: limits, checked by rl_params_check()
 * Return: 0, or -EPERM for more than RL_KEYS_USER_MAX keys without CAP_SYS_RESOURCE.
 */
int rl_keys_allowed(const struct rl_params *p)
{
	if (p->keys > RL_KEYS_USER_MAX && !capable(CAP_SYS_RESOURCE))
		return -EPERM;
	return 0;
}

/**
 * rl_keys_create() - a family with no key yet, charged to the caller's memory cgroup
 * @p: the limits of every key: rl_params_check()ed, keyed
 * Return: the family, or NULL without memory.
 */
struct rl_keys *rl_keys_create(const struct rl_params *p)
{
	u64 keys_max = p->keys ?: RL_KEYS_DEFAULT;
	struct rl_keys *ks;
	u32 i;

	ks = kzalloc(sizeof(*ks), GFP_KERNEL_ACCOUNT);
	if (!ks)
		return NULL;
	ks->nstripes = clamp_t(u64, roundup_pow_of_two(max_t(u64, keys_max / RL_STRIPE_KEYS, 1)),
			       RL_STRIPES_MIN, RL_STRIPES_MAX);
	ks->stripe_bits = ilog2(ks->nstripes);
	ks->stripes = kvcalloc(ks->nstripes, sizeof(*ks->stripes), RL_KEYS_GFP);
	if (!ks->stripes)
		goto free_ks;
	ks->stats = alloc_percpu_gfp(struct rl_kcounters, GFP_KERNEL_ACCOUNT);
	if (!ks->stats)
		goto free_stripes;
	for (i = 0; i < ks->nstripes; i++) {
		spin_lock_init(&ks->stripes[i].lock);
		INIT_LIST_HEAD(&ks->stripes[i].waiters);
	}
	get_random_bytes(&ks->secret, sizeof(ks->secret));
	seqlock_init(&ks->plock);
	rl_kparams_from(&ks->params, p);
	INIT_DELAYED_WORK(&ks->sweep, rl_keys_sweep_fn);
	ks->memcg = get_mem_cgroup_from_mm(current->mm);
	return ks;

free_stripes:
	kvfree(ks->stripes);
free_ks:
	kfree(ks);
	return NULL;
}

/**
 * rl_keys_set_params() - new limits for every key, from each key's next request on
 * @ks: the family
 * @p:  limits, checked, keyed; may be called under the limiter's lock
 */
void rl_keys_set_params(struct rl_keys *ks, const struct rl_params *p)
{
	write_seqlock(&ks->plock);
	rl_kparams_from(&ks->params, p);
	write_sequnlock(&ks->plock);
}

/**
 * rl_keys_free() - free a family and all its keys; nobody may sleep on one
 * @ks: the family, or NULL
 */
void rl_keys_free(struct rl_keys *ks)
{
	u32 i;

	if (!ks)
		return;
	cancel_delayed_work_sync(&ks->sweep);
	for (i = 0; i < ks->nstripes; i++) {
		WARN_ON_ONCE(ks->stripes[i].nwaiters);
		kvfree(ks->stripes[i].table);
		cond_resched();
	}
	mem_cgroup_put(ks->memcg);
	free_percpu(ks->stats);
	kvfree(ks->stripes);
	kfree(ks);
}
