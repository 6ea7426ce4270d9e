/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * /sys/kernel/ratelimit/ (sysfs.c): the directories of named limiters.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_SYSFS_H
#define _RL_SYSFS_H

#include <linux/uidgid.h>

struct rl_limiter;
struct rl_dir;

int rl_sysfs_init(void);
void rl_sysfs_exit(void);
struct rl_dir *rl_sysfs_add(struct rl_limiter *lim);
void rl_sysfs_del(struct rl_dir *dir);
int rl_sysfs_chown(struct rl_dir *dir, kuid_t uid, kgid_t gid);

#endif /* _RL_SYSFS_H */
