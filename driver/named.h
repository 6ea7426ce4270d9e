/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The registry of named limiters, their names and their directories in
 * /sys/kernel/ratelimit/ (named.c).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _RL_NAMED_H
#define _RL_NAMED_H

#include <linux/uidgid.h>

#include "ratelimit.h"

/* Is @lim a named limiter? Constant from its creation on. */
static inline bool rl_limiter_named(const struct rl_limiter *lim)
{
	return lim->name[0];
}

int rl_named_attach(struct rl_client *client, const char *name,
		    const struct rl_attach *at, const struct rl_params *p);
void rl_named_detach(struct rl_limiter *lim, struct rl_client *client);
int rl_named_unlink(const char *name);
int rl_name_from_user(char *name, u64 uptr);
int rl_named_set_parent(struct rl_limiter *lim, const char *pname, u32 weight);
int rl_named_set_perm(struct rl_limiter *lim, u32 flags, kuid_t uid, kgid_t gid, umode_t mode);
int rl_named_share(struct rl_limiter *lim, int fd, bool revoke);
int rl_named_init(void);
void rl_named_exit(void);
int rl_sysfs_init(void);
void rl_sysfs_exit(void);

#endif /* _RL_NAMED_H */
