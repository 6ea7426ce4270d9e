/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel version differences, so that the .c files carry no version
 * checks: Kbuild defines RL_HAVE_* from what the kernel's headers have.
 */
#ifndef _RL_COMPAT_H
#define _RL_COMPAT_H

#include <linux/hrtimer.h>
#include <linux/kconfig.h>

#include <linux/ratelimit_dev.h>

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

/* vm_flags_set() and vm_flags_clear() came in 6.3; before, mmap() wrote the flags. */
#ifdef RL_HAVE_VM_FLAGS_SET
#define rl_vm_flags_set(vma, flags)	vm_flags_set(vma, flags)
#define rl_vm_flags_clear(vma, flags)	vm_flags_clear(vma, flags)
#else
#define rl_vm_flags_set(vma, flags)	((vma)->vm_flags |= (flags))
#define rl_vm_flags_clear(vma, flags)	((vma)->vm_flags &= ~(flags))
#endif

/* close_fd_get_file() became file_close_fd() in 6.8. */
#ifndef RL_HAVE_FILE_CLOSE_FD
#define file_close_fd(fd)	close_fd_get_file(fd)
#endif

/* kobj_type.get_ownership() takes a const kobject since 6.2. */
#ifdef RL_HAVE_CONST_KOBJ_OWNERSHIP
#define rl_ownership_const const
#else
#define rl_ownership_const
#endif

/*
 * Acquires through io_uring (uring.c) need io_uring_cmd_mark_cancelable(),
 * in <linux/io_uring/cmd.h> since 6.8: without it a queued command would
 * hang its ring's exit, so io_uring fails the commands with -EOPNOTSUPP.
 * io_uring_cmd_done() and the task work callback are the same 6.8-6.12.
 */
#ifdef RL_HAVE_URING_CMD
struct io_uring_cmd;
int rl_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags);
#define RL_URING_FOPS	.uring_cmd = rl_uring_cmd,
/* What this build offers through io_uring. */
static inline u32 rl_uring_features(void)
{
	return IS_ENABLED(CONFIG_IO_URING) ? RL_FEATURE_URING_CMD : 0;
}

#ifndef RL_HAVE_URING_CMD_TO_PDU
/* io_uring_cmd_to_pdu() came in 6.11; the pdu is there since 6.0. */
#define io_uring_cmd_to_pdu(cmd, type)	((type *)&(cmd)->pdu)
#endif
#else
#define RL_URING_FOPS
static inline u32 rl_uring_features(void)
{
	return 0;
}
#endif

#endif /* _RL_COMPAT_H */
