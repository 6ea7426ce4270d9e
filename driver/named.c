// SPDX-License-Identifier: GPL-2.0-only
/*
 * Named limiters: a registry of limiters that unrelated programs attach to
 * by name, with an owner and permission bits checked like a file's.
 *
 * A limiter's kref counts its attached clients, plus one held by the name
 * of a persistent limiter. The last put removes a name still registered
 * and frees the limiter; it runs under rl_registry_lock, so a lookup never
 * finds a limiter on its way out.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/ctype.h>
#include <linux/kref.h>
#include <linux/refcount.h>
#include <linux/list.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "ratelimit.h"

static unsigned int max_named = 1024;
module_param(max_named, uint, 0644);
MODULE_PARM_DESC(max_named, "Most named limiters at once (default 1024)");

static unsigned int max_named_per_user = 64;
module_param(max_named_per_user, uint, 0644);
MODULE_PARM_DESC(max_named_per_user,
		 "Most named limiters one uid may own (default 64)");

/* Guards the registry and the name fields of every limiter. */
DEFINE_MUTEX(rl_registry_lock);
/* Named limiters, by rl_limiter.node; rl_registry_lock. */
static LIST_HEAD(rl_registry);
/* Entries of rl_registry; rl_registry_lock for writes. */
static int rl_nr_named;

/**
 * rl_named_count() - number of named limiters
 *
 * Return: the number, read without the lock.
 */
int rl_named_count(void)
{
	return READ_ONCE(rl_nr_named);
}

/* Names of the global files in /sys/kernel/ratelimit/. */
static const char *const rl_reserved_names[] = {
	"count", "version", "features",
};

static bool rl_name_valid(const char *name)
{
	const char *c;

	if (!*name || *name == '.' ||
	    match_string(rl_reserved_names, ARRAY_SIZE(rl_reserved_names),
			 name) >= 0)
		return false;
	for (c = name; *c; c++)
		if (!(isascii(*c) && isalnum(*c)) && *c != '.' && *c != '_' &&
		    *c != '-')
			return false;
	return true;
}

/**
 * rl_name_from_user() - copy in and check a limiter name
 * @name: buffer of RL_NAME_MAX bytes
 * @uptr: user pointer to the NUL-terminated name
 *
 * Return: 0, -EFAULT, or -EINVAL for a name too long, with a character
 * outside [A-Za-z0-9._-], a leading '.', or reserved for a global sysfs
 * file.
 */
int rl_name_from_user(char *name, u64 uptr)
{
	long len;

	len = strncpy_from_user(name, u64_to_user_ptr(uptr), RL_NAME_MAX);
	if (len < 0)
		return len;
	if (len == RL_NAME_MAX || !rl_name_valid(name))
		return -EINVAL;
	return 0;
}

static struct rl_limiter *rl_lookup(const char *name)
{
	struct rl_limiter *lim;

	lockdep_assert_held(&rl_registry_lock);
	list_for_each_entry(lim, &rl_registry, node)
		if (!strcmp(lim->name, name))
			return lim;
	return NULL;
}

/* May the current task do @mask (MAY_READ, MAY_WRITE) to @lim? */
static bool rl_permitted(const struct rl_limiter *lim, int mask)
{
	umode_t mode = lim->mode;

	if (uid_eq(current_fsuid(), lim->uid))
		mode >>= 6;
	else if (in_group_p(lim->gid))
		mode >>= 3;
	return (mode & mask) == mask || capable(CAP_SYS_ADMIN);
}

/* Forget @lim's name: it leaves the registry and sysfs. */
static void rl_name_remove(struct rl_limiter *lim)
{
	lockdep_assert_held(&rl_registry_lock);
	list_del_init(&lim->node);
	lim->linked = false;
	WRITE_ONCE(rl_nr_named, rl_nr_named - 1);
	rl_sysfs_del(lim);
}

/**
 * rl_limiter_put() - drop a reference to a limiter
 * @lim: the limiter; freed, its name removed, with the last reference
 */
void rl_limiter_put(struct rl_limiter *lim)
{
	if (!refcount_dec_and_mutex_lock(&lim->ref.refcount,
					 &rl_registry_lock))
		return;
	if (lim->linked)
		rl_name_remove(lim);
	mutex_unlock(&rl_registry_lock);
	if (*lim->name)
		rl_sysfs_put(lim);
	else
		rl_limiter_destroy(lim);
}

static int rl_quota_check(void)
{
	struct rl_limiter *lim;
	unsigned int mine = 0;

	lockdep_assert_held(&rl_registry_lock);
	if (rl_nr_named >= max_named)
		return -ENOSPC;
	list_for_each_entry(lim, &rl_registry, node)
		mine += uid_eq(lim->uid, current_fsuid());
	return mine >= max_named_per_user ? -EDQUOT : 0;
}

/* Create and register a named limiter, with a reference for the caller. */
static struct rl_limiter *rl_named_create(const char *name,
					  const struct rl_attach *at,
					  const struct rl_params *p)
{
	struct rl_limiter *lim;
	int ret;

	lockdep_assert_held(&rl_registry_lock);
	ret = rl_quota_check();
	if (ret)
		return ERR_PTR(ret);
	lim = rl_limiter_create(p);
	if (!lim)
		return ERR_PTR(-ENOMEM);
	strscpy(lim->name, name, sizeof(lim->name));
	lim->uid = current_fsuid();
	lim->gid = current_fsgid();
	lim->mode = at->mode;
	ret = rl_sysfs_add(lim);
	if (ret)
		return ERR_PTR(ret);	/* rl_sysfs_add() freed it */
	if (at->flags & RL_ATTACH_PERSIST) {
		lim->persistent = true;
		kref_get(&lim->ref);
	}
	list_add_tail(&lim->node, &rl_registry);
	lim->linked = true;
	WRITE_ONCE(rl_nr_named, rl_nr_named + 1);
	return lim;
}

/* Find or create @name, with a reference for the caller. */
static struct rl_limiter *rl_named_get(const char *name,
				       const struct rl_attach *at,
				       const struct rl_params *p,
				       bool *may_config)
{
	struct rl_limiter *lim;

	mutex_lock(&rl_registry_lock);
	lim = rl_lookup(name);
	if (lim) {
		if (at->flags & RL_ATTACH_EXCL)
			lim = ERR_PTR(-EEXIST);
		else if (!rl_permitted(lim, MAY_READ))
			lim = ERR_PTR(-EACCES);
		else
			kref_get(&lim->ref);
	} else if (at->flags & RL_ATTACH_CREATE) {
		lim = rl_named_create(name, at, p);
	} else {
		lim = ERR_PTR(-ENOENT);
	}
	if (!IS_ERR(lim))
		*may_config = rl_permitted(lim, MAY_WRITE);
	mutex_unlock(&rl_registry_lock);
	return lim;
}

/**
 * rl_named_attach() - make a client a client of a named limiter
 * @client: the client, serialised by its setup mutex
 * @name:   valid name
 * @at:     validated request
 * @p:      limits for a limiter created now
 *
 * Return: 0, or a negative errno with nothing changed.
 */
int rl_named_attach(struct rl_client *client, const char *name,
		    const struct rl_attach *at, const struct rl_params *p)
{
	struct rl_limiter *lim;
	bool may_config;

	lockdep_assert_held(&client->setup);
	if (client->lim)
		return -EBUSY;
	lim = rl_named_get(name, at, p, &may_config);
	if (IS_ERR(lim))
		return PTR_ERR(lim);
	client->may_config = may_config;
	rl_limiter_attach(lim, client);
	/* Pairs with smp_load_acquire() in rl_client_limiter(). */
	smp_store_release(&client->lim, lim);
	return 0;
}

/**
 * rl_named_unlink() - remove a name
 * @name: valid name
 *
 * Return: 0, -ENOENT, or -EPERM unless the caller owns the limiter or has
 * CAP_SYS_ADMIN.
 */
int rl_named_unlink(const char *name)
{
	struct rl_limiter *lim;
	bool persistent;

	mutex_lock(&rl_registry_lock);
	lim = rl_lookup(name);
	if (!lim) {
		mutex_unlock(&rl_registry_lock);
		return -ENOENT;
	}
	if (!uid_eq(current_fsuid(), lim->uid) && !capable(CAP_SYS_ADMIN)) {
		mutex_unlock(&rl_registry_lock);
		return -EPERM;
	}
	persistent = lim->persistent;
	WRITE_ONCE(lim->persistent, false);
	rl_name_remove(lim);
	mutex_unlock(&rl_registry_lock);
	/* The name's own reference, for a persistent limiter. */
	if (persistent)
		rl_limiter_put(lim);
	return 0;
}

/**
 * rl_named_exit() - free the persistent limiters at module unload
 *
 * No file is open any more, so only names hold references.
 */
void rl_named_exit(void)
{
	struct rl_limiter *lim;

	for (;;) {
		mutex_lock(&rl_registry_lock);
		lim = list_first_entry_or_null(&rl_registry, struct rl_limiter,
					       node);
		if (!lim) {
			mutex_unlock(&rl_registry_lock);
			return;
		}
		WARN_ON_ONCE(!lim->persistent);
		WRITE_ONCE(lim->persistent, false);
		rl_name_remove(lim);
		mutex_unlock(&rl_registry_lock);
		rl_limiter_put(lim);
	}
}
