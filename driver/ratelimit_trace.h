/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The "ratelimit" events of tracefs. Each names its limiter by "limiter",
 * a named limiter's name or "" for a private one, and "lim", its address
 * (hashed when printed), which tells private limiters apart.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM ratelimit

#if !defined(_RL_RATELIMIT_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _RL_RATELIMIT_TRACE_H

#include <linux/tracepoint.h>

#include "ratelimit.h"

/* define_trace.h reads this file again: define the helpers once. */
#ifndef _RL_RATELIMIT_TRACE_ONCE
#define _RL_RATELIMIT_TRACE_ONCE
/* The fields every event starts with (lim, limiter), from @lim. */
static inline void rl_trace_lim(const void **p, char *limiter,
				const struct rl_limiter *lim)
{
	*p = lim;
	strscpy(limiter, lim->name, RL_NAME_MAX);
}
#endif

/**
 * ratelimit_acquire - an acquire call starts, after its checks
 * @lim:   the limiter
 * @count: tokens (or permits) asked
 * @level: priority level, 0 (LOW) to 3 (USER)
 * @flags: RL_ACQUIRE_* flags
 */
TRACE_EVENT(ratelimit_acquire,
	TP_PROTO(const struct rl_limiter *lim, u64 count, u8 level, u32 flags),
	TP_ARGS(lim, count, level, flags),
	TP_STRUCT__entry(
		__field(const void *, lim)
		__array(char, limiter, RL_NAME_MAX)
		__field(u64, count)
		__field(u8, level)
		__field(u32, flags)
	),
	TP_fast_assign(
		rl_trace_lim(&__entry->lim, __entry->limiter, lim);
		__entry->count = count;
		__entry->level = level;
		__entry->flags = flags;
	),
	TP_printk("limiter=%s lim=%p count=%llu level=%u flags=%#x",
		  __entry->limiter, __entry->lim, __entry->count,
		  __entry->level, __entry->flags)
);

/**
 * ratelimit_grant - an acquire call succeeds
 * @lim:       the limiter
 * @count:     tokens (or permits) granted
 * @waited_ns: how long it slept, 0 if granted at once
 * @lag_ns:    how far behind schedule the grant is, as struct
 *             rl_acquire.lag_ns
 */
TRACE_EVENT(ratelimit_grant,
	TP_PROTO(const struct rl_limiter *lim, u64 count, u64 waited_ns,
		 u64 lag_ns),
	TP_ARGS(lim, count, waited_ns, lag_ns),
	TP_STRUCT__entry(
		__field(const void *, lim)
		__array(char, limiter, RL_NAME_MAX)
		__field(u64, count)
		__field(u64, waited_ns)
		__field(u64, lag_ns)
	),
	TP_fast_assign(
		rl_trace_lim(&__entry->lim, __entry->limiter, lim);
		__entry->count = count;
		__entry->waited_ns = waited_ns;
		__entry->lag_ns = lag_ns;
	),
	TP_printk("limiter=%s lim=%p count=%llu waited_ns=%llu lag_ns=%llu",
		  __entry->limiter, __entry->lim, __entry->count,
		  __entry->waited_ns, __entry->lag_ns)
);

DECLARE_EVENT_CLASS(ratelimit_abort,
	TP_PROTO(const struct rl_limiter *lim, u64 count, u64 waited_ns),
	TP_ARGS(lim, count, waited_ns),
	TP_STRUCT__entry(
		__field(const void *, lim)
		__array(char, limiter, RL_NAME_MAX)
		__field(u64, count)
		__field(u64, waited_ns)
	),
	TP_fast_assign(
		rl_trace_lim(&__entry->lim, __entry->limiter, lim);
		__entry->count = count;
		__entry->waited_ns = waited_ns;
	),
	TP_printk("limiter=%s lim=%p count=%llu waited_ns=%llu",
		  __entry->limiter, __entry->lim, __entry->count,
		  __entry->waited_ns)
);

/**
 * ratelimit_timeout - an acquire call fails with ETIMEDOUT
 * @lim:       the limiter
 * @count:     tokens asked; what it had been granted went back
 * @waited_ns: how long it slept
 */
DEFINE_EVENT(ratelimit_abort, ratelimit_timeout,
	TP_PROTO(const struct rl_limiter *lim, u64 count, u64 waited_ns),
	TP_ARGS(lim, count, waited_ns)
);

/**
 * ratelimit_interrupt - a signal ends an acquire call (EINTR, or a restart)
 * @lim:       the limiter
 * @count:     tokens asked; what it had been granted went back
 * @waited_ns: how long it slept
 */
DEFINE_EVENT(ratelimit_abort, ratelimit_interrupt,
	TP_PROTO(const struct rl_limiter *lim, u64 count, u64 waited_ns),
	TP_ARGS(lim, count, waited_ns)
);

/**
 * ratelimit_release - permits come back (RL_IOC_RELEASE, or a close)
 * @lim:   the limiter
 * @count: permits released
 * @held:  permits the limiter's clients still hold
 */
TRACE_EVENT(ratelimit_release,
	TP_PROTO(const struct rl_limiter *lim, u64 count, u64 held),
	TP_ARGS(lim, count, held),
	TP_STRUCT__entry(
		__field(const void *, lim)
		__array(char, limiter, RL_NAME_MAX)
		__field(u64, count)
		__field(u64, held)
	),
	TP_fast_assign(
		rl_trace_lim(&__entry->lim, __entry->limiter, lim);
		__entry->count = count;
		__entry->held = held;
	),
	TP_printk("limiter=%s lim=%p count=%llu held=%llu",
		  __entry->limiter, __entry->lim, __entry->count,
		  __entry->held)
);

/**
 * ratelimit_reconfigure - new limits are in force
 * @lim: the limiter, with its new params
 */
TRACE_EVENT(ratelimit_reconfigure,
	TP_PROTO(const struct rl_limiter *lim),
	TP_ARGS(lim),
	TP_STRUCT__entry(
		__field(const void *, lim)
		__array(char, limiter, RL_NAME_MAX)
		__field(u64, rate)
		__field(u64, period_ns)
		__field(u64, burst)
		__field(u64, concurrency)
		__field(bool, unlimited)
	),
	TP_fast_assign(
		rl_trace_lim(&__entry->lim, __entry->limiter, lim);
		__entry->rate = lim->params.rate;
		__entry->period_ns = lim->params.period;
		__entry->burst = lim->params.burst;
		__entry->concurrency = lim->params.concurrency;
		__entry->unlimited = lim->params.unlimited;
	),
	TP_printk("limiter=%s lim=%p rate=%llu period_ns=%llu burst=%llu concurrency=%llu unlimited=%d",
		  __entry->limiter, __entry->lim, __entry->rate,
		  __entry->period_ns, __entry->burst, __entry->concurrency,
		  __entry->unlimited)
);

/**
 * ratelimit_timer - the limiter's timer fires
 * @lim:      the limiter
 * @late_ns:  how long after its (soft) expiry it ran
 * @nwaiters: sleeping requests before it served them
 */
TRACE_EVENT(ratelimit_timer,
	TP_PROTO(const struct rl_limiter *lim, u64 late_ns, u64 nwaiters),
	TP_ARGS(lim, late_ns, nwaiters),
	TP_STRUCT__entry(
		__field(const void *, lim)
		__array(char, limiter, RL_NAME_MAX)
		__field(u64, late_ns)
		__field(u64, nwaiters)
	),
	TP_fast_assign(
		rl_trace_lim(&__entry->lim, __entry->limiter, lim);
		__entry->late_ns = late_ns;
		__entry->nwaiters = nwaiters;
	),
	TP_printk("limiter=%s lim=%p late_ns=%llu nwaiters=%llu",
		  __entry->limiter, __entry->lim, __entry->late_ns,
		  __entry->nwaiters)
);

#endif /* _RL_RATELIMIT_TRACE_H */

/* This part must be outside the include guard. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE ratelimit_trace
#include <trace/define_trace.h>
