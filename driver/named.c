// SPDX-License-Identifier: GPL-2.0-only
/*
 * Named limiters: a registry of limiters that unrelated programs attach to
 * by name, with an owner and permission bits checked like a file's. A name
 * is in the registry exactly while its limiter has a sysfs directory, which
 * holds a reference. Clients attach and detach under the registry lock; the
 * last to leave a limiter that is not persistent removes the name, so one
 * found in the registry always has a reference to take.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/ctype.h>
#include <linux/delay.h>
#include <linux/jhash.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/rhashtable.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "named.h"
#include "limiter.h"
#include "ratelimit.h"
#include "sysfs.h"
#include "tree.h"

static unsigned int max_named = 1024;
module_param(max_named, uint, 0644);
MODULE_PARM_DESC(max_named, "Most named limiters at once (default 1024)");

static unsigned int max_named_per_user = 64;
module_param(max_named_per_user, uint, 0644);
MODULE_PARM_DESC(max_named_per_user, "Most named limiters one uid may own (default 64)");

/* Names of the global files in /sys/kernel/ratelimit/. */
static const char *const rl_reserved_names[] = {
	"count", "version", "features",
};

static bool rl_name_valid(const char *name)
{
	const char *c;

	if (!*name || *name == '.' ||
	    match_string(rl_reserved_names, ARRAY_SIZE(rl_reserved_names), name) >= 0)
		return false;
	for (c = name; *c; c++)
		if (!(isascii(*c) && isalnum(*c)) && *c != '.' && *c != '_' && *c != '-')
			return false;
	return true;
}

/**
 * rl_name_from_user() - copy in and check a limiter name
 * @name: buffer of RL_NAME_MAX bytes
 * @uptr: user pointer to the NUL-terminated name
 * Return: 0, -EFAULT, or -EINVAL for a name too long, with a character
 * outside [A-Za-z0-9._-], a leading '.', or of a global sysfs file.
 */
int rl_name_from_user(char *name, u64 uptr)
{
	long len = strncpy_from_user(name, u64_to_user_ptr(uptr), RL_NAME_MAX);

	if (len < 0)
		return len;
	return len == RL_NAME_MAX || !rl_name_valid(name) ? -EINVAL : 0;
}

/**
 * rl_name_from_sysfs() - copy in and check a limiter name written to sysfs
 * @name:  buffer of RL_NAME_MAX bytes
 * @buf:   the written text, one trailing newline allowed
 * @count: its length
 * Return: 0, with "" in @name for an empty write, or -EINVAL.
 */
int rl_name_from_sysfs(char *name, const char *buf, size_t count)
{
	if (count && buf[count - 1] == '\n')
		count--;
	if (count >= RL_NAME_MAX || memchr(buf, '\0', count))
		return -EINVAL;
	memcpy(name, buf, count);
	name[count] = '\0';
	return !count || rl_name_valid(name) ? 0 : -EINVAL;
}

/*
 * Guards the registry, the name fields of every limiter (persistent, node,
 * hnode, dir) and the attaching and detaching of clients of named limiters.
 */
static DEFINE_MUTEX(rl_registry_lock);
/* Named limiters, by rl_limiter.node, for the unload; rl_registry_lock. */
static LIST_HEAD(rl_registry);
/* Entries of rl_registry; rl_registry_lock for writes. */
static int rl_nr_named;
/* The same by name (rl_limiter.hnode), for lookups; rl_registry_lock. */
static struct rhashtable rl_names;
/* Named limiters each uid owns, xa_mk_value() counts, none no entry; rl_registry_lock. */
static DEFINE_XARRAY(rl_owners);

static u32 rl_name_hash(const void *data, u32 len, u32 seed)
{
	const char *name = data;

	return jhash(name, strnlen(name, RL_NAME_MAX), seed);
}

static u32 rl_name_obj_hash(const void *obj, u32 len, u32 seed)
{
	const struct rl_limiter *lim = obj;

	return rl_name_hash(lim->name, len, seed);
}

static int rl_name_cmp(struct rhashtable_compare_arg *arg, const void *obj)
{
	const struct rl_limiter *lim = obj;

	return strncmp(lim->name, arg->key, RL_NAME_MAX);
}

static const struct rhashtable_params rl_names_params = {
	.head_offset = offsetof(struct rl_limiter, hnode),
	.hashfn = rl_name_hash,
	.obj_hashfn = rl_name_obj_hash,
	.obj_cmpfn = rl_name_cmp,
	.automatic_shrinking = true,
};

/**
 * rl_named_init() - set up the registry at module load
 *
 * Return: 0, or -ENOMEM.
 */
int rl_named_init(void)
{
	return rhashtable_init(&rl_names, &rl_names_params);
}

/**
 * rl_named_count() - number of named limiters, read without the lock
 */
int rl_named_count(void)
{
	return READ_ONCE(rl_nr_named);
}

static struct rl_limiter *rl_lookup(const char *name)
{
	lockdep_assert_held(&rl_registry_lock);
	return rhashtable_lookup_fast(&rl_names, name, rl_names_params);
}

static unsigned long rl_owned(kuid_t uid)
{
	void *entry = xa_load(&rl_owners, __kuid_val(uid));

	return entry ? xa_to_value(entry) : 0;
}

/* Count one more named limiter for @uid: 0 or -ENOMEM. */
static int rl_owner_charge(kuid_t uid)
{
	void *old;

	lockdep_assert_held(&rl_registry_lock);
	old = xa_store(&rl_owners, __kuid_val(uid), xa_mk_value(rl_owned(uid) + 1),
		       GFP_KERNEL_ACCOUNT);
	return xa_err(old);
}

/* Undo rl_owner_charge(); cannot fail. */
static void rl_owner_uncharge(kuid_t uid)
{
	unsigned long n = rl_owned(uid);

	lockdep_assert_held(&rl_registry_lock);
	if (WARN_ON_ONCE(!n))
		return;
	/* Replacing an entry allocates nothing. */
	if (n == 1)
		xa_erase(&rl_owners, __kuid_val(uid));
	else
		xa_store(&rl_owners, __kuid_val(uid), xa_mk_value(n - 1), GFP_NOWAIT);
}

/* May the current task do @mask (MAY_READ, MAY_WRITE) to @lim? */
static bool rl_permitted(const struct rl_limiter *lim, int mask)
{
	umode_t mode = lim->mode;

	lockdep_assert_held(&rl_registry_lock);
	if (uid_eq(current_fsuid(), lim->uid))
		mode >>= 6;
	else if (in_group_p(lim->gid))
		mode >>= 3;
	return (mode & mask) == mask || capable(CAP_SYS_ADMIN);
}

/* A name nothing keeps: no fd, no child, not persistent. */
static bool rl_name_orphan(const struct rl_limiter *lim)
{
	return lim->dir && !lim->persistent && !lim->nclients && !rl_tree_has_children(lim);
}

/*
 * Forget @lim's name: it leaves its parent, the registry and sysfs; so does
 * a parent left orphan, and so on up (RL_HIER_DEPTH_MAX levels at most).
 */
static void rl_name_remove(struct rl_limiter *lim)
{
	struct rl_limiter *parent;
	struct rl_dir *dir;

	lockdep_assert_held(&rl_registry_lock);
	while (lim) {
		parent = lim->h.parent;
		/* The parent's directory still holds a reference to it. */
		if (parent)
			rl_tree_set_parent(lim, NULL, 1, RL_TREE_FORCE);
		list_del_init(&lim->node);
		rhashtable_remove_fast(&rl_names, &lim->hnode, rl_names_params);
		rl_owner_uncharge(lim->uid);
		dir = lim->dir;
		lim->dir = NULL;
		WRITE_ONCE(rl_nr_named, rl_nr_named - 1);
		/* Drops the directory's reference: may free @lim. */
		rl_sysfs_del(dir);
		lim = parent && rl_name_orphan(parent) ? parent : NULL;
	}
}

/* Create and register a named limiter, with a reference for the caller. */
static struct rl_limiter *rl_named_create(const char *name, const struct rl_attach *at,
					  const struct rl_params *p)
{
	struct rl_limiter *lim;
	struct rl_dir *dir;
	int ret;

	lockdep_assert_held(&rl_registry_lock);
	if (rl_nr_named >= max_named)
		return ERR_PTR(-ENOSPC);
	if (rl_owned(current_fsuid()) >= max_named_per_user)
		return ERR_PTR(-EDQUOT);
	ret = rl_owner_charge(current_fsuid());
	if (ret)
		return ERR_PTR(ret);
	lim = rl_limiter_create(p);
	if (!lim) {
		ret = -ENOMEM;
		goto err_uncharge;
	}
	/* At its length: freed with the limiter, which frees no "". */
	lim->name = kstrdup(name, GFP_KERNEL_ACCOUNT);
	if (!lim->name) {
		lim->name = "";
		ret = -ENOMEM;
		goto err_put_limiter;
	}
	lim->uid = current_fsuid();
	lim->gid = current_fsgid();
	lim->mode = at->mode;
	lim->persistent = at->flags & RL_ATTACH_PERSIST;
	ret = rhashtable_insert_fast(&rl_names, &lim->hnode, rl_names_params);
	if (ret)
		goto err_put_limiter;
	dir = rl_sysfs_add(lim);
	if (IS_ERR(dir)) {
		ret = PTR_ERR(dir);
		goto err_unhash;
	}
	lim->dir = dir;
	list_add_tail(&lim->node, &rl_registry);
	WRITE_ONCE(rl_nr_named, rl_nr_named + 1);
	return lim;

err_unhash:
	rhashtable_remove_fast(&rl_names, &lim->hnode, rl_names_params);
err_put_limiter:
	rl_limiter_put(lim);
err_uncharge:
	rl_owner_uncharge(current_fsuid());
	return ERR_PTR(ret);
}

/* Find or create @name, with a reference for the caller. */
static struct rl_limiter *rl_named_get(const char *name, const struct rl_attach *at,
				       const struct rl_params *p)
{
	struct rl_limiter *lim;

	lockdep_assert_held(&rl_registry_lock);
	lim = rl_lookup(name);
	if (!lim)
		return at->flags & RL_ATTACH_CREATE ? rl_named_create(name, at, p) :
		       ERR_PTR(-ENOENT);
	if (at->flags & RL_ATTACH_EXCL)
		return ERR_PTR(-EEXIST);
	if (!rl_permitted(lim, MAY_READ))
		return ERR_PTR(-EACCES);
	/* In the registry, so its directory holds a reference. */
	rl_limiter_get(lim);
	return lim;
}

/**
 * rl_named_attach() - make a client a client of a named limiter
 * @client: the client, serialised by its setup mutex
 * @name:   valid name
 * @at:     validated request
 * @p:      limits for a limiter created now
 * Return: 0, or a negative errno with nothing changed.
 */
int rl_named_attach(struct rl_client *client, const char *name,
		    const struct rl_attach *at, const struct rl_params *p)
{
	struct rl_limiter *lim;

	lockdep_assert_held(&client->setup);
	if (client->lim)
		return -EBUSY;
	mutex_lock(&rl_registry_lock);
	lim = rl_named_get(name, at, p);
	if (IS_ERR(lim)) {
		mutex_unlock(&rl_registry_lock);
		return PTR_ERR(lim);
	}
	client->may_config = rl_permitted(lim, MAY_WRITE);
	/* Under the registry lock, which rl_named_detach() counts under. */
	rl_limiter_attach(lim, client);
	mutex_unlock(&rl_registry_lock);
	/* Pairs with smp_load_acquire() in rl_client_limiter(). */
	smp_store_release(&client->lim, lim);
	return 0;
}

/**
 * rl_named_detach() - undo rl_named_attach(); the name goes with the last client
 * @lim:    a named limiter, of which the caller still holds the client's reference
 * @client: its client, as for rl_limiter_detach()
 */
void rl_named_detach(struct rl_limiter *lim, struct rl_client *client)
{
	mutex_lock(&rl_registry_lock);
	if (!rl_limiter_detach(lim, client) && rl_name_orphan(lim))
		rl_name_remove(lim);
	mutex_unlock(&rl_registry_lock);
}

/**
 * rl_named_unlink() - remove a name
 * @name: valid name
 * Return: 0, -ENOENT, -EPERM unless the caller owns the limiter or has
 * CAP_SYS_ADMIN, or -EBUSY if the limiter has children.
 */
int rl_named_unlink(const char *name)
{
	struct rl_limiter *lim;
	int ret = 0;

	mutex_lock(&rl_registry_lock);
	lim = rl_lookup(name);
	if (!lim)
		ret = -ENOENT;
	else if (!uid_eq(current_fsuid(), lim->uid) && !capable(CAP_SYS_ADMIN))
		ret = -EPERM;
	else if (rl_tree_has_children(lim))
		ret = -EBUSY;
	if (!ret) {
		WRITE_ONCE(lim->persistent, false);
		rl_name_remove(lim);
	}
	mutex_unlock(&rl_registry_lock);
	return ret;
}

/*
 * The rules of chmod(2) and chown(2): the owner gives the limiter to a group
 * of its own; CAP_CHOWN where owner and group are mapped, or CAP_SYS_ADMIN,
 * anything. 0 or -EPERM.
 */
static int rl_perm_check(const struct rl_limiter *lim, u32 flags, kuid_t uid, kgid_t gid)
{
	struct user_namespace *ns = current_user_ns();
	bool owner = uid_eq(current_fsuid(), lim->uid);

	lockdep_assert_held(&rl_registry_lock);
	if (owner && (!(flags & RL_PERM_UID) || uid_eq(uid, lim->uid)) &&
	    (!(flags & RL_PERM_GID) || gid_eq(gid, lim->gid) || in_group_p(gid)))
		return 0;
	if (kuid_has_mapping(ns, lim->uid) && kgid_has_mapping(ns, lim->gid) &&
	    ns_capable(ns, CAP_CHOWN))
		return 0;
	return capable(CAP_SYS_ADMIN) ? 0 : -EPERM;
}

/**
 * rl_named_set_perm() - change a named limiter's owner, group and mode
 * @lim:   a named limiter, of which the caller holds a reference
 * @flags: RL_PERM_* flags: which of @uid, @gid and @mode to set
 * @uid:   the new owner, valid
 * @gid:   the new group, valid
 * @mode:  the new permission bits, at most 0777
 *
 * Checked as chmod(2) and chown(2) are; the sysfs files change hands too.
 * Clients attached keep the rights they got when they attached.
 *
 * Return: 0, -EINVAL if @lim's name was unlinked, -EPERM, or -ENOMEM;
 * nothing changed on error.
 */
int rl_named_set_perm(struct rl_limiter *lim, u32 flags, kuid_t uid, kgid_t gid, umode_t mode)
{
	int ret;

	mutex_lock(&rl_registry_lock);
	ret = lim->dir ? rl_perm_check(lim, flags, uid, gid) : -EINVAL;
	if (ret)
		goto out_unlock;
	if (!(flags & RL_PERM_UID))
		uid = lim->uid;
	if (!(flags & RL_PERM_GID))
		gid = lim->gid;
	if (!(flags & RL_PERM_MODE))
		mode = lim->mode;
	/* The new owner answers for the name from now on. */
	if (!uid_eq(uid, lim->uid)) {
		ret = rl_owner_charge(uid);
		if (ret)
			goto out_unlock;
	}
	ret = rl_sysfs_chown(lim->dir, uid, gid);
	if (ret) {
		/* Back as it was, as far as it got. */
		rl_sysfs_chown(lim->dir, lim->uid, lim->gid);
		if (!uid_eq(uid, lim->uid))
			rl_owner_uncharge(uid);
		goto out_unlock;
	}
	if (!uid_eq(uid, lim->uid))
		rl_owner_uncharge(lim->uid);
	/* sysfs reads them without the lock. */
	WRITE_ONCE(lim->uid, uid);
	WRITE_ONCE(lim->gid, gid);
	WRITE_ONCE(lim->mode, mode);
out_unlock:
	mutex_unlock(&rl_registry_lock);
	return ret;
}

/* rl_named_set_parent(), under the registry lock. */
static int rl_named_move(struct rl_limiter *lim, const char *pname, u32 weight, u64 self)
{
	struct rl_limiter *parent = NULL, *old;
	int ret = 0;

	lockdep_assert_held(&rl_registry_lock);
	if (!lim->dir) {
		ret = -EINVAL;
	} else if (pname) {
		parent = rl_lookup(pname);
		if (!parent)
			ret = -ENOENT;
		else if (!rl_permitted(parent, MAY_WRITE))
			ret = -EACCES;
	}
	old = lim->h.parent;
	if (!ret)
		ret = rl_tree_set_parent(lim, parent, weight, self);
	if (!ret && old && old != parent && rl_name_orphan(old))
		rl_name_remove(old);
	return ret;
}

/**
 * rl_named_set_parent() - move a named limiter under another one
 * @lim:    a named limiter, whose client (the caller's fd) may reconfigure it
 * @pname:  name of the new parent, NULL to make @lim a root
 * @weight: share of @lim among its parent's children, 1..RL_WEIGHT_MAX
 * Return: 0, -EINVAL if @lim's name was unlinked, -ENOENT for a missing
 * parent, -EACCES without write permission on it, or an error of
 * rl_tree_set_parent(); nothing changed on error.
 */
int rl_named_set_parent(struct rl_limiter *lim, const char *pname, u32 weight)
{
	int ret;

	mutex_lock(&rl_registry_lock);
	ret = rl_named_move(lim, pname, weight, 1);
	mutex_unlock(&rl_registry_lock);
	return ret;
}

/**
 * rl_named_set_parent_sysfs() - rl_named_set_parent() for a sysfs store
 * @lim:    the limiter of the sysfs directory written to
 * @pname:  name of the new parent, "" to make @lim a root, NULL to keep it
 * @weight: share of @lim among its parent's children, 0 to keep it
 *
 * A sysfs callback may not wait for the registry lock: removing a name
 * holds it while waiting for the callbacks of its directory. So the lock
 * is only tried; when busy, the write sleeps a little and restarts (as
 * lock_device_hotplug_sysfs() does), letting a removal drain the callbacks.
 *
 * Return: as rl_named_set_parent(), or -ERESTARTNOINTR when the registry is busy.
 */
int rl_named_set_parent_sysfs(struct rl_limiter *lim, const char *pname, u32 weight)
{
	struct rl_limiter *parent;
	int ret;

	if (!mutex_trylock(&rl_registry_lock)) {
		usleep_range(1000, 5000);
		return restart_syscall();
	}
	parent = lim->h.parent;
	if (!pname)
		pname = parent ? parent->name : NULL;
	else if (!*pname)
		pname = NULL;
	ret = rl_named_move(lim, pname, weight ?: lim->h.weight, 0);
	mutex_unlock(&rl_registry_lock);
	return ret;
}

/* A named limiter with no children, or NULL if none is left. */
static struct rl_limiter *rl_named_leaf(void)
{
	struct rl_limiter *lim;

	list_for_each_entry(lim, &rl_registry, node)
		if (!rl_tree_has_children(lim))
			return lim;
	return NULL;
}

/**
 * rl_named_exit() - free the persistent limiters at module unload
 *
 * No file is open any more: only the directories (and children, of their
 * parents) hold references. Children go before their parents.
 */
void rl_named_exit(void)
{
	struct rl_limiter *lim;

	mutex_lock(&rl_registry_lock);
	while ((lim = rl_named_leaf())) {
		WARN_ON_ONCE(!lim->persistent);
		WRITE_ONCE(lim->persistent, false);
		rl_name_remove(lim);
	}
	WARN_ON_ONCE(!list_empty(&rl_registry));
	mutex_unlock(&rl_registry_lock);
	rhashtable_destroy(&rl_names);
	WARN_ON_ONCE(!xa_empty(&rl_owners));
}
