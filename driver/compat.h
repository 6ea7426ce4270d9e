/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel version differences, hidden here so that the .c files carry no
 * version checks.
 */
#ifndef _RL_COMPAT_H
#define _RL_COMPAT_H

#include <linux/hrtimer.h>

/*
 * Kbuild defines RL_HAVE_* after looking at the kernel's headers, so that
 * no version numbers are needed.
 */

#ifndef RL_HAVE_HRTIMER_SETUP
/* hrtimer_setup() replaced hrtimer_init() plus setting ->function in 6.13. */
static inline void hrtimer_setup(struct hrtimer *timer,
				 enum hrtimer_restart (*function)(struct hrtimer *),
				 clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
#endif

/* kobj_type.get_ownership() takes a const kobject since 6.2. */
#ifdef RL_HAVE_CONST_KOBJ_OWNERSHIP
#define rl_ownership_const const
#else
#define rl_ownership_const
#endif

#endif /* _RL_COMPAT_H */
