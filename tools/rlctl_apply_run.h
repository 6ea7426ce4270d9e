/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlctl_apply_run.h - the changes of "rlctl apply": the items that
 * rlctl_apply.c plans (from the files and what the module has) and
 * rlctl_apply_run.c makes.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLCTL_APPLY_RUN_H
#define RLCTL_APPLY_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libratelimit.h"
#include "rlctl_conf.h"
#include "tool.h"

enum action { A_REMOVE, A_CHANGE, A_CREATE, A_NR };

/* The sysfs attributes of a limiter: RL_IOC_SET_PERM changes the first 3. */
struct owner {
	unsigned long long uid, gid, mode, persistent;
};

/* One change to make. */
struct item {
	enum action what;
	const struct rlconf_limiter *lim;	/* NULL for A_REMOVE */
	struct rl_config want;	/* as the module keeps it */
	struct rl_config have;	/* A_CHANGE: what it has now */
	struct owner owner;	/* A_CHANGE: its owner, group and mode now */
	uint32_t perm;		/* A_CHANGE: RL_PERM_* to set, from lim */
	char removed[RL_NAME_MAX];	/* A_REMOVE: the name */
};

/* "rlctl: apply: " and a message on stderr. */
#define say(...)	tool_fail(0, "apply: " __VA_ARGS__)

/*
 * Take the owner and group of the file of @l as the fs ids, to create it
 * as they would: true if done; become_self() undoes it in any case.
 */
bool become_owner(const struct rlconf_limiter *l);
void become_self(void);

/*
 * Removals, then changes, then creations of the @n @items, each printed
 * (as "would ..." when @dry_run, which changes nothing); 0 or the exit
 * status.
 */
int run_plan(const struct item *items, size_t n, bool dry_run);

#endif /* RLCTL_APPLY_RUN_H */
