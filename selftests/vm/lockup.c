// SPDX-License-Identifier: GPL-2.0-only
/*
 * lockup.c - a CPU stuck in the kernel, for the QEMU rig's own test
 * (lockup.sh); no part of ratelimit. Loading it spins in its init with
 * preemption off for secs seconds (120), past the soft lockup watchdog
 * (20 s) and RCU's stall timeout (21 s): the rig must end the guest at the
 * kernel's first report. If it does not, the spin ends, the load fails and
 * the guest goes on, which lockup.sh reports.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/preempt.h>

static unsigned int secs = 120;
module_param(secs, uint, 0444);
MODULE_PARM_DESC(secs, "seconds to spin with preemption off");

static int __init lockup_init(void)
{
	unsigned long end = jiffies + secs * HZ;

	/* at KERN_ERR: the console of a quiet boot shows it, with its time */
	pr_err("lockup: spinning %u s with preemption off\n", secs);
	preempt_disable();
	while (time_before(jiffies, end))
		cpu_relax();
	preempt_enable();
	pr_err("lockup: the spin ended and the guest runs on\n");
	return -EBUSY;	/* not -EAGAIN, which insmod retries */
}
module_init(lockup_init);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("A CPU stuck in the kernel, for the QEMU rig's test");
