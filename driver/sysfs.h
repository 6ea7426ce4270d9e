/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What sysfs.c (the directories) and sysfs_files.c (their files) share.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_SYSFS_H
#define _RL_SYSFS_H

#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/uidgid.h>

struct rl_limiter;

/**
 * struct rl_dir - /sys/kernel/ratelimit/<name>
 * @kobj: the directory; its release frees this
 * @lim:  the named limiter shown, of which this holds a reference
 */
struct rl_dir {
	struct kobject kobj;
	struct rl_limiter *lim;
};

static inline struct rl_limiter *rl_kobj_limiter(struct kobject *kobj)
{
	return container_of(kobj, struct rl_dir, kobj)->lim;
}

/* The groups of files of a limiter's directory (sysfs_files.c). */
extern const struct attribute_group *rl_limiter_groups[];
int rl_sysfs_files_init(void);
void rl_sysfs_files_exit(void);

/* sysfs.c */
int rl_sysfs_init(void);
void rl_sysfs_exit(void);
struct rl_dir *rl_sysfs_add(struct rl_limiter *lim);
void rl_sysfs_del(struct rl_dir *dir);
int rl_sysfs_chown(struct rl_dir *dir, kuid_t uid, kgid_t gid);

#endif /* _RL_SYSFS_H */
