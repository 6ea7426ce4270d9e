// SPDX-License-Identifier: GPL-2.0-only
/*
 * Named limiters: a registry of limiters that unrelated programs attach to
 * by name, with an owner and permission bits checked like a file's, and
 * /sys/kernel/ratelimit/, where each name is a directory of files
 * (formats: Documentation/ABI/testing/sysfs-kernel-ratelimit). A name is
 * in the registry exactly while its limiter has a directory, which holds a
 * reference; a directory's file config moves the name under another. So
 * the registry and its directories are one file. Clients attach and detach
 * under the registry lock; the last to leave a limiter that is not
 * persistent removes the name, so one found in the registry always has a
 * reference to take.
 *
 * A name lives in the IPC namespace of the process that created it, as a
 * System V IPC object does (struct rl_ns): lookups see the caller's only.
 * The host's administrator may share a host's limiter into another
 * namespace (struct rl_shared): one more name for it, there.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/ctype.h>
#include <linux/dcache.h>
#include <linux/delay.h>
#include <linux/hash.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/ipc_namespace.h>
#include <linux/jhash.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/kstrtox.h>
#include <linux/list.h>
#include <linux/magic.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/nsproxy.h>
#include <linux/proc_fs.h>
#include <linux/proc_ns.h>
#include <linux/rcupdate.h>
#include <linux/rhashtable.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "compat.h"
#include "keys.h"
#include "named.h"
#include "limiter.h"
#include "ratelimit.h"
#include "tree.h"

static struct rl_dir *rl_sysfs_add(struct rl_limiter *lim);
static void rl_sysfs_del(struct rl_dir *dir);
static int rl_sysfs_chown(struct rl_dir *dir, kuid_t uid, kgid_t gid);
static struct kobject *rl_sysfs_ns_add(unsigned int inum);
static int rl_sysfs_link(struct kobject *nsdir, struct rl_dir *dir, const char *name);

static unsigned int max_named = 1024;
module_param(max_named, uint, 0644);
MODULE_PARM_DESC(max_named, "Most named limiters at once (default 1024)");

static unsigned int max_named_per_user = 64;
module_param(max_named_per_user, uint, 0644);
MODULE_PARM_DESC(max_named_per_user, "Most named limiters one uid may own (default 64)");

static unsigned int max_named_per_ns = 64;
module_param(max_named_per_ns, uint, 0644);
MODULE_PARM_DESC(max_named_per_ns,
		 "Most named limiters in an IPC namespace other than the host's (default 64)");

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
static int rl_name_from_sysfs(char *name, const char *buf, size_t count)
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
/* Their names and the shares, by namespace and name (rl_name.hnode); rl_registry_lock. */
static struct rhashtable rl_names;

/*
 * The names of one IPC namespace. The host's (the initial namespace) is
 * rl_host_ns, always there. Another's exists while it has a name, and
 * holds its namespace through a file of nsfs, as an open /proc/PID/ns/ipc
 * would; rl_ns_reap() removes its names once nothing else holds it.
 */
struct rl_ns {
	struct ipc_namespace *ipc;	/* identity, NULL for the host's; constant */
	struct file *pin;		/* nsfs file holding @ipc, NULL for the host's; constant */
	struct kobject *kobj;		/* /sys/kernel/ratelimit/ipc:INUM, NULL for the host's */
	int nr_named;			/* its names; rl_registry_lock, READ_ONCE() for sysfs */
	struct rcu_head rcu;		/* freed after RCU readers (count_show()) */
};

static struct rl_ns rl_host_ns;

/*
 * A host's limiter shared into another namespace (RL_IOC_SHARE), where it
 * is one of that namespace's names until its name on the host goes, the
 * share is revoked or unlinked there, or the namespace goes.
 */
struct rl_shared {
	struct rl_name nm;		/* the name there */
	struct list_head node;		/* in rl_shares */
};

/* Every share; rl_registry_lock. */
static LIST_HEAD(rl_shares);
/* Namespaces other than the host's with names, by inode number; rl_registry_lock. */
static DEFINE_XARRAY(rl_nss);
static void rl_ns_reap(struct work_struct *work);
/* Runs while rl_nss is not empty. */
static DECLARE_DELAYED_WORK(rl_ns_reaper, rl_ns_reap);
#define RL_NS_REAP_PERIOD	HZ
/* Named limiters each uid owns, xa_mk_value() counts, none no entry; rl_registry_lock. */
static DEFINE_XARRAY(rl_owners);

/* What rl_names is searched by. */
struct rl_name_key {
	const struct rl_ns *ns;
	const char *name;
};

static u32 rl_name_key_hash(const struct rl_ns *ns, const char *name, u32 seed)
{
	return jhash(name, strnlen(name, RL_NAME_MAX), seed ^ hash_ptr(ns, 32));
}

static u32 rl_name_hash(const void *data, u32 len, u32 seed)
{
	const struct rl_name_key *key = data;

	return rl_name_key_hash(key->ns, key->name, seed);
}

static u32 rl_name_obj_hash(const void *obj, u32 len, u32 seed)
{
	const struct rl_name *nm = obj;

	return rl_name_key_hash(nm->ns, nm->lim->name, seed);
}

static int rl_name_cmp(struct rhashtable_compare_arg *arg, const void *obj)
{
	const struct rl_name_key *key = arg->key;
	const struct rl_name *nm = obj;

	return nm->ns != key->ns || strncmp(nm->lim->name, key->name, RL_NAME_MAX);
}

static const struct rhashtable_params rl_names_params = {
	.head_offset = offsetof(struct rl_name, hnode),
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

/* A kernel without System V IPC and POSIX message queues has no IPC namespace: NULL. */
static bool rl_ipc_is_host(const struct ipc_namespace *ipc)
{
	return !ipc || ipc->ns.inum == PROC_IPC_INIT_INO;
}

/* The names of @ipc, NULL if it has none; rl_registry_lock or RCU. */
static struct rl_ns *rl_ns_find(struct ipc_namespace *ipc)
{
	struct rl_ns *ns;

	if (rl_ipc_is_host(ipc))
		return &rl_host_ns;
	ns = xa_load(&rl_nss, ipc->ns.inum);
	return ns && ns->ipc == ipc ? ns : NULL;
}

/* The current task's IPC namespace, until it exits; NULL without any (rl_ipc_is_host()). */
static struct ipc_namespace *rl_current_ipc(void)
{
	return current->nsproxy->ipc_ns;
}

/* open_related_ns()'s callback: a reference for the nsfs inode, as get_ipc_ns(). */
static struct ns_common *rl_ns_get(struct ns_common *ns)
{
	refcount_inc(&ns->count);
	return ns;
}

/*
 * A file of nsfs holding @ipc. open_related_ns() installs it in the
 * caller's table of files, from which it is taken out at once: a thread
 * that closes a descriptor it was never given may take it first (-EBUSY).
 */
static struct file *rl_ns_pin(struct ipc_namespace *ipc)
{
	struct file *file;
	int fd;

	fd = open_related_ns(&ipc->ns, rl_ns_get);
	if (fd < 0)
		return ERR_PTR(fd);
	file = file_close_fd(fd);
	if (!file)
		return ERR_PTR(-EBUSY);
	if (file_inode(file)->i_sb->s_magic != NSFS_MAGIC ||
	    get_proc_ns(file_inode(file)) != &ipc->ns) {
		fput(file);
		return ERR_PTR(-EBUSY);
	}
	return file;
}

/* The names of @ipc, made now if it had none; @ipc is held by the caller. */
static struct rl_ns *rl_ns_get_or_add(struct ipc_namespace *ipc)
{
	struct rl_ns *ns = rl_ns_find(ipc);
	int ret = -ENOMEM;

	lockdep_assert_held(&rl_registry_lock);
	if (ns)
		return ns;
	ns = kzalloc(sizeof(*ns), GFP_KERNEL_ACCOUNT);
	if (!ns)
		return ERR_PTR(-ENOMEM);
	ns->ipc = ipc;
	ns->pin = rl_ns_pin(ipc);
	if (IS_ERR(ns->pin)) {
		ret = PTR_ERR(ns->pin);
		goto err_free;
	}
	ns->kobj = rl_sysfs_ns_add(ipc->ns.inum);
	if (!ns->kobj)
		goto err_unpin;
	ret = xa_insert(&rl_nss, ipc->ns.inum, ns, GFP_KERNEL_ACCOUNT);
	if (ret)
		goto err_del_kobj;
	schedule_delayed_work(&rl_ns_reaper, RL_NS_REAP_PERIOD);
	return ns;

err_del_kobj:
	kobject_put(ns->kobj);
err_unpin:
	fput(ns->pin);
err_free:
	kfree(ns);
	return ERR_PTR(ret);
}

/* Free @ns once it has no name; the host's stays. */
static void rl_ns_put_empty(struct rl_ns *ns)
{
	lockdep_assert_held(&rl_registry_lock);
	if (ns == &rl_host_ns || ns->nr_named)
		return;
	xa_erase(&rl_nss, ns->ipc->ns.inum);
	kobject_put(ns->kobj);
	/* Drops the namespace, which may go now. */
	fput(ns->pin);
	kfree_rcu(ns, rcu);
}

/*
 * Is @ns's namespace gone: no task in it, no other file or mount of its
 * nsfs inode? Then nothing can enter it again, and only @ns->pin's inode
 * holds it. A task entering it by setns(2) holds a file of that inode
 * until its reference is taken: so the files are counted first.
 */
static bool rl_ns_gone(const struct rl_ns *ns)
{
	if (d_count(ns->pin->f_path.dentry) > 1)
		return false;
	smp_rmb();	/* the count of files, then of references */
	return refcount_read(&ns->ipc->ns.count) == 1;
}

/**
 * rl_named_count() - number of names of the current task's namespace
 *
 * Read without the registry lock (sysfs).
 */
static int rl_named_count(void)
{
	struct rl_ns *ns;
	int n = 0;

	rcu_read_lock();
	ns = rl_ns_find(rl_current_ipc());
	if (ns)
		n = READ_ONCE(ns->nr_named);
	rcu_read_unlock();
	return n;
}

static struct rl_name *rl_lookup(const struct rl_ns *ns, const char *name)
{
	struct rl_name_key key = { .ns = ns, .name = name };

	lockdep_assert_held(&rl_registry_lock);
	return rhashtable_lookup_fast(&rl_names, &key, rl_names_params);
}

/* @name in the current task's namespace, NULL if there is none. */
static struct rl_name *rl_lookup_current(const char *name)
{
	struct rl_ns *ns = rl_ns_find(rl_current_ipc());

	return ns ? rl_lookup(ns, name) : NULL;
}

static bool rl_name_is_share(const struct rl_name *nm)
{
	return nm != &nm->lim->nm;
}

/* Take @sh out of the registry; its namespace is left to the caller. */
static void rl_share_remove(struct rl_shared *sh)
{
	struct rl_ns *ns = sh->nm.ns;

	lockdep_assert_held(&rl_registry_lock);
	rhashtable_remove_fast(&rl_names, &sh->nm.hnode, rl_names_params);
	list_del(&sh->node);
	sysfs_remove_link(ns->kobj, sh->nm.lim->name);
	WRITE_ONCE(ns->nr_named, ns->nr_named - 1);
	kfree(sh);
}

/*
 * Remove the shares of @lim (a host's limiter), and their namespaces if
 * they have no name left: none is @lim's, or a caller's to look at again.
 */
static void rl_shares_remove(struct rl_limiter *lim)
{
	struct rl_shared *sh, *tmp;
	struct rl_ns *ns;

	list_for_each_entry_safe(sh, tmp, &rl_shares, node) {
		if (sh->nm.lim != lim)
			continue;
		ns = sh->nm.ns;
		rl_share_remove(sh);
		rl_ns_put_empty(ns);
	}
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
 * Remove @lim's name and its shares: it leaves its parent, the registry
 * and sysfs; so does a parent left orphan, and so on up (RL_HIER_DEPTH_MAX
 * levels at most). All are of one namespace, a parent being looked up
 * among its own names: that is left to the caller, even if it has no name
 * now, but no share is in it (rl_shares_remove()).
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
		rhashtable_remove_fast(&rl_names, &lim->nm.hnode, rl_names_params);
		rl_owner_uncharge(lim->uid);
		rl_shares_remove(lim);
		WRITE_ONCE(lim->nm.ns->nr_named, lim->nm.ns->nr_named - 1);
		lim->nm.ns = NULL;
		dir = lim->dir;
		lim->dir = NULL;
		WRITE_ONCE(rl_nr_named, rl_nr_named - 1);
		/* Drops the directory's reference: may free @lim. */
		rl_sysfs_del(dir);
		lim = parent && rl_name_orphan(parent) ? parent : NULL;
	}
}

/* rl_name_remove(), and its namespace goes if it has no name left. */
static void rl_name_forget(struct rl_limiter *lim)
{
	struct rl_ns *ns = lim->nm.ns;

	rl_name_remove(lim);
	rl_ns_put_empty(ns);
}

/* Check the quotas of names for creating one in @ns: 0, -ENOSPC or -EDQUOT. */
static int rl_named_quota(const struct rl_ns *ns)
{
	if (rl_nr_named >= max_named)
		return -ENOSPC;
	if (ns != &rl_host_ns && ns->nr_named >= max_named_per_ns)
		return -EDQUOT;
	return rl_owned(current_fsuid()) >= max_named_per_user ? -EDQUOT : 0;
}

/*
 * Create and register a named limiter in the current task's namespace,
 * with a reference for the caller.
 */
static struct rl_limiter *rl_named_create(const char *name, const struct rl_attach *at,
					  const struct rl_params *p)
{
	struct rl_limiter *lim;
	struct rl_dir *dir;
	struct rl_ns *ns;
	int ret;

	lockdep_assert_held(&rl_registry_lock);
	ns = rl_ns_get_or_add(rl_current_ipc());
	if (IS_ERR(ns))
		return ERR_CAST(ns);
	ret = rl_named_quota(ns) ?: rl_owner_charge(current_fsuid());
	if (ret)
		goto err_put_ns;
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
	lim->nm.ns = ns;
	lim->nm.lim = lim;
	ret = rhashtable_insert_fast(&rl_names, &lim->nm.hnode, rl_names_params);
	if (ret)
		goto err_put_limiter;
	dir = rl_sysfs_add(lim);
	if (IS_ERR(dir)) {
		ret = PTR_ERR(dir);
		goto err_unhash;
	}
	lim->dir = dir;
	list_add_tail(&lim->node, &rl_registry);
	WRITE_ONCE(ns->nr_named, ns->nr_named + 1);
	WRITE_ONCE(rl_nr_named, rl_nr_named + 1);
	return lim;

err_unhash:
	rhashtable_remove_fast(&rl_names, &lim->nm.hnode, rl_names_params);
err_put_limiter:
	lim->nm.ns = NULL;
	rl_limiter_put(lim);
err_uncharge:
	rl_owner_uncharge(current_fsuid());
err_put_ns:
	rl_ns_put_empty(ns);
	return ERR_PTR(ret);
}

/* Find or create @name, with a reference for the caller. */
static struct rl_limiter *rl_named_get(const char *name, const struct rl_attach *at,
				       const struct rl_params *p)
{
	struct rl_limiter *lim;
	struct rl_name *nm;

	lockdep_assert_held(&rl_registry_lock);
	nm = rl_lookup_current(name);
	if (!nm)
		return at->flags & RL_ATTACH_CREATE ? rl_named_create(name, at, p) :
		       ERR_PTR(-ENOENT);
	lim = nm->lim;
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
		rl_name_forget(lim);
	mutex_unlock(&rl_registry_lock);
}

/* Unlink a share: only as the host's administrator, who made it. */
static int rl_share_unlink(struct rl_name *nm)
{
	struct rl_ns *ns = nm->ns;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	rl_share_remove(container_of(nm, struct rl_shared, nm));
	rl_ns_put_empty(ns);
	return 0;
}

/**
 * rl_named_unlink() - remove a name
 * @name: valid name, of the current task's namespace
 * Return: 0, -ENOENT, -EPERM unless the caller owns the limiter or has
 * CAP_SYS_ADMIN (a share: CAP_SYS_ADMIN), or -EBUSY if the limiter has
 * children.
 */
int rl_named_unlink(const char *name)
{
	struct rl_limiter *lim;
	struct rl_name *nm;
	int ret = 0;

	mutex_lock(&rl_registry_lock);
	nm = rl_lookup_current(name);
	if (!nm) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (rl_name_is_share(nm)) {
		ret = rl_share_unlink(nm);
		goto out_unlock;
	}
	lim = nm->lim;
	if (!uid_eq(current_fsuid(), lim->uid) && !capable(CAP_SYS_ADMIN))
		ret = -EPERM;
	else if (rl_tree_has_children(lim))
		ret = -EBUSY;
	if (!ret) {
		WRITE_ONCE(lim->persistent, false);
		rl_name_forget(lim);
	}
out_unlock:
	mutex_unlock(&rl_registry_lock);
	return ret;
}

/* The IPC namespace of an nsfs file, or NULL for another file. */
static struct ipc_namespace *rl_file_ipc(struct file *file)
{
	struct ns_common *ns;

	if (file_inode(file)->i_sb->s_magic != NSFS_MAGIC)
		return NULL;
	ns = get_proc_ns(file_inode(file));
	return ns->ops->type == CLONE_NEWIPC ? container_of(ns, struct ipc_namespace, ns) : NULL;
}

/* Share @lim into @ipc, under its name there: 0, -EEXIST or -ENOMEM. */
static int rl_share_add(struct rl_limiter *lim, struct ipc_namespace *ipc)
{
	struct rl_shared *sh;
	struct rl_ns *ns;
	int ret = -EEXIST;

	ns = rl_ns_get_or_add(ipc);
	if (IS_ERR(ns))
		return PTR_ERR(ns);
	if (rl_lookup(ns, lim->name))
		goto err_put_ns;
	ret = -ENOMEM;
	sh = kzalloc(sizeof(*sh), GFP_KERNEL_ACCOUNT);
	if (!sh)
		goto err_put_ns;
	sh->nm.ns = ns;
	sh->nm.lim = lim;
	ret = rhashtable_insert_fast(&rl_names, &sh->nm.hnode, rl_names_params);
	if (ret)
		goto err_free;
	ret = rl_sysfs_link(ns->kobj, lim->dir, lim->name);
	if (ret)
		goto err_unhash;
	list_add_tail(&sh->node, &rl_shares);
	WRITE_ONCE(ns->nr_named, ns->nr_named + 1);
	return 0;

err_unhash:
	rhashtable_remove_fast(&rl_names, &sh->nm.hnode, rl_names_params);
err_free:
	kfree(sh);
err_put_ns:
	rl_ns_put_empty(ns);
	return ret;
}

/* Take back the share of @lim in @ipc: 0 or -ENOENT. */
static int rl_share_revoke(struct rl_limiter *lim, struct ipc_namespace *ipc)
{
	struct rl_ns *ns = rl_ns_find(ipc);
	struct rl_name *nm = ns ? rl_lookup(ns, lim->name) : NULL;

	if (!nm || nm->lim != lim || !rl_name_is_share(nm))
		return -ENOENT;
	rl_share_remove(container_of(nm, struct rl_shared, nm));
	rl_ns_put_empty(ns);
	return 0;
}

/**
 * rl_named_share() - share a host's limiter into another IPC namespace, or revoke it
 * @lim:    a named limiter, of which the caller holds a reference
 * @fd:     a file of the namespace's nsfs inode (/proc/PID/ns/ipc)
 * @revoke: take the share back instead
 *
 * Return: 0; -EBADF for a bad @fd; -EINVAL when @fd is not an IPC
 * namespace's, or is the host's, or @lim is not the host's or was
 * unlinked; -EPERM without CAP_SYS_ADMIN; -EEXIST when the namespace has
 * the name already; -ENOENT to revoke what is not shared; -ENOMEM.
 */
int rl_named_share(struct rl_limiter *lim, int fd, bool revoke)
{
	struct ipc_namespace *ipc;
	struct file *file;
	int ret = -EINVAL;

	file = fget(fd);
	if (!file)
		return -EBADF;
	ipc = rl_file_ipc(file);
	if (!ipc || rl_ipc_is_host(ipc))
		goto out_fput;
	ret = -EPERM;
	if (!capable(CAP_SYS_ADMIN))
		goto out_fput;
	mutex_lock(&rl_registry_lock);
	if (!lim->dir || lim->nm.ns != &rl_host_ns)
		ret = -EINVAL;
	else
		ret = revoke ? rl_share_revoke(lim, ipc) : rl_share_add(lim, ipc);
	mutex_unlock(&rl_registry_lock);
out_fput:
	fput(file);
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
	struct rl_name *nm;
	int ret = 0;

	lockdep_assert_held(&rl_registry_lock);
	if (!lim->dir) {
		ret = -EINVAL;
	} else if (pname) {
		nm = rl_lookup(lim->nm.ns, pname);
		/* A parent is of the namespace's own names: a tree stays in one. */
		parent = nm && !rl_name_is_share(nm) ? nm->lim : NULL;
		if (!parent)
			ret = -ENOENT;
		else if (!rl_permitted(parent, MAY_WRITE))
			ret = -EACCES;
	}
	old = lim->h.parent;
	if (!ret)
		ret = rl_tree_set_parent(lim, parent, weight, self);
	if (!ret && old && old != parent && rl_name_orphan(old))
		rl_name_forget(old);
	return ret;
}

/**
 * rl_named_set_parent() - move a named limiter under another one
 * @lim:    a named limiter, whose client (the caller's fd) may reconfigure it
 * @pname:  name of the new parent, in @lim's namespace, NULL to make @lim a root
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
static int rl_named_set_parent_sysfs(struct rl_limiter *lim, const char *pname, u32 weight)
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

/*
 * A named limiter with no children, of @ns (any namespace's if NULL), or
 * NULL if none is left. Compares @ns with the limiters' but never reads it.
 */
static struct rl_limiter *rl_named_leaf(const struct rl_ns *ns)
{
	struct rl_limiter *lim;

	list_for_each_entry(lim, &rl_registry, node)
		if ((!ns || lim->nm.ns == ns) && !rl_tree_has_children(lim))
			return lim;
	return NULL;
}

/*
 * Remove the names of each namespace that is gone, persistent ones too,
 * children before their parents (rl_named_leaf()), and the shares into
 * it; then @ns is freed.
 * Their limiters stay while files hold them, as after an unlink.
 */
static void rl_ns_reap(struct work_struct *work)
{
	struct rl_shared *sh, *tmp;
	struct rl_limiter *lim;
	struct rl_ns *ns;
	unsigned long i;

	mutex_lock(&rl_registry_lock);
	xa_for_each(&rl_nss, i, ns) {
		if (!rl_ns_gone(ns))
			continue;
		while ((lim = rl_named_leaf(ns))) {
			WRITE_ONCE(lim->persistent, false);
			rl_name_remove(lim);
		}
		list_for_each_entry_safe(sh, tmp, &rl_shares, node)
			if (sh->nm.ns == ns)
				rl_share_remove(sh);
		rl_ns_put_empty(ns);
	}
	if (!xa_empty(&rl_nss))
		schedule_delayed_work(&rl_ns_reaper, RL_NS_REAP_PERIOD);
	mutex_unlock(&rl_registry_lock);
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

	cancel_delayed_work_sync(&rl_ns_reaper);
	mutex_lock(&rl_registry_lock);
	while ((lim = rl_named_leaf(NULL))) {
		WARN_ON_ONCE(!lim->persistent);
		WRITE_ONCE(lim->persistent, false);
		rl_name_forget(lim);
	}
	WARN_ON_ONCE(!list_empty(&rl_registry));
	WARN_ON_ONCE(!xa_empty(&rl_nss));
	mutex_unlock(&rl_registry_lock);
	rhashtable_destroy(&rl_names);
	WARN_ON_ONCE(!xa_empty(&rl_owners));
}

/* /sys/kernel/ratelimit/<name> */
struct rl_dir {
	struct kobject kobj;		/* the directory; its release frees this */
	struct rl_limiter *lim;		/* the named limiter shown; a reference */
};

static inline struct rl_limiter *rl_kobj_limiter(struct kobject *kobj)
{
	return container_of(kobj, struct rl_dir, kobj)->lim;
}

/* A file, its kobj_attribute rl_attr_<name>. */
#define RL_ATTR_RO(_name)	static struct kobj_attribute rl_attr_##_name = __ATTR_RO(_name)
#define RL_A(_name)		(&rl_attr_##_name.attr)

/* The tunables, by row of tunables.h, and their number. */
enum {
#define RL_TUNABLE(_name, ...)	RL_ROW_##_name,
#include "tunables.h"
#undef RL_TUNABLE
	RL_NTUNABLES
};

/* A line of stat: a u64 field of struct rl_stats, or of struct rl_demand. */
struct rl_stat_line {
	const char *key;
	bool demand;
	size_t off;
};

#define RL_STAT(_key, _field)	{ #_key, false, offsetof(struct rl_stats, _field) }
#define RL_DEMAND(_key)		{ #_key, true, offsetof(struct rl_demand, _key) }

static const struct rl_stat_line rl_stat_lines[] = {
	RL_STAT(granted, granted), RL_STAT(requests, requests),
	RL_STAT(immediate, immediate), RL_STAT(waited, waited),
	RL_STAT(wait_ns_total, wait_ns_total), RL_STAT(wait_ns_max, wait_ns_max),
	RL_STAT(timeouts, timeouts), RL_STAT(interrupted, interrupted),
	RL_STAT(rejected, rejected), RL_STAT(waiters, waiters),
	RL_STAT(available, available), RL_STAT(held, held),
	RL_STAT(refunded, refunded), RL_STAT(backlog_tokens, backlog),
	RL_DEMAND(asked), RL_DEMAND(refused), RL_DEMAND(queued), RL_DEMAND(busy_ns),
};

/*
 * stat: the counters and the state, a "KEY VALUE" line each, as the
 * ABI file lists them. Owner, group, mode and persistent change under the
 * registry lock, not taken here: removing the name holds it while waiting
 * for sysfs readers.
 */
static ssize_t stat_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct rl_limiter *lim = rl_kobj_limiter(kobj);
	const struct rl_stat_line *l;
	struct rl_stats st = {};
	struct rl_demand d = {};
	u64 left = 0;
	pid_t pid = 0;
	int len = 0;

	rl_limiter_get_stats(lim, &st);
	rl_limiter_get_demand(lim, &d);
	if (!rl_limiter_get_lease(lim, &left, &pid)) {
		left = 0;
		pid = 0;
	}
	for (l = rl_stat_lines; l < rl_stat_lines + ARRAY_SIZE(rl_stat_lines); l++)
		len += sysfs_emit_at(buf, len, "%s %llu\n", l->key,
				     *(u64 *)((l->demand ? (char *)&d : (char *)&st) + l->off));
	return len + sysfs_emit_at(buf, len,
				   "clients %llu\nowner %u\ngroup %u\nmode %04o\npersistent %d\n"
				   "lease_ns %llu\nlease_pid %d\n",
				   READ_ONCE(lim->nclients),
				   from_kuid_munged(&init_user_ns, READ_ONCE(lim->uid)),
				   from_kgid_munged(&init_user_ns, READ_ONCE(lim->gid)),
				   READ_ONCE(lim->mode), READ_ONCE(lim->persistent), left, pid);
}

/* config: the tunables, then weight and, for a child, parent. */
static ssize_t config_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct rl_limiter *lim = rl_kobj_limiter(kobj);
	struct rl_parent rp = {};
	char name[RL_NAME_MAX];
	const struct rl_tunable *t;
	struct rl_params p;
	int len = 0;

	rl_limiter_get_params(lim, &p);
	for (t = rl_tunables; t->name; t++)
		len += sysfs_emit_at(buf, len, "%s %llu\n", t->name, rl_tunable_get(t, &p));
	rl_tree_get(lim, &rp, name);
	len += sysfs_emit_at(buf, len, "weight %u\n", rp.weight);
	if (name[0])
		len += sysfs_emit_at(buf, len, "parent %s\n", name);
	return len;
}

/* What a write of config asks for. */
struct rl_config_write {
	u64 vals[RL_NTUNABLES];		/* by row of rl_tunables */
	unsigned long given;		/* bit i: row i written */
	u32 weight;			/* 0: not written */
	bool parent;			/* @pname written */
	char pname[RL_NAME_MAX];	/* the new parent, "" for a root */
};

/* A decimal u64 of @len characters at @s: digits only, as the ABI says. */
static int rl_parse_u64(const char *s, size_t len, u64 *val)
{
	char num[24];

	if (!len || len >= sizeof(num) || !isdigit(s[0]))
		return -EINVAL;
	memcpy(num, s, len);
	num[len] = '\0';
	return kstrtou64(num, 10, val) ? -EINVAL : 0;
}

/* One line "KEY VALUE" of @len characters (no newline) into @w. */
static int rl_config_line(struct rl_config_write *w, const char *line, size_t len)
{
	const char *sp = memchr(line, ' ', len);
	const struct rl_tunable *t;
	size_t klen = sp ? sp - line : len, vlen = sp ? len - klen - 1 : 0;
	const char *v = sp ? sp + 1 : line + len;
	u64 val;

	if (klen == 6 && !memcmp(line, "parent", 6)) {
		if (w->parent)
			return -EINVAL;
		w->parent = true;
		return rl_name_from_sysfs(w->pname, v, vlen);
	}
	if (!sp || rl_parse_u64(v, vlen, &val))
		return -EINVAL;
	if (klen == 6 && !memcmp(line, "weight", 6)) {
		if (w->weight || !val || val > RL_WEIGHT_MAX)
			return -EINVAL;
		w->weight = val;
		return 0;
	}
	for (t = rl_tunables; t->name; t++) {
		if (strlen(t->name) != klen || memcmp(t->name, line, klen))
			continue;
		if (w->given & BIT(t - rl_tunables))
			return -EINVAL;
		w->given |= BIT(t - rl_tunables);
		w->vals[t - rl_tunables] = val;
		return 0;
	}
	return -EINVAL;
}

/*
 * Lines "KEY VALUE": all checked before anything changes, parent and
 * weight moved first (a busy registry restarts the write), then the
 * tunables at once.
 */
static ssize_t config_store(struct kobject *kobj, struct kobj_attribute *attr,
			    const char *buf, size_t count)
{
	struct rl_limiter *lim = rl_kobj_limiter(kobj);
	const char *line = buf, *end = buf + count, *eol;
	struct rl_config_write *w;
	struct rl_params p;
	int ret = 0;

	w = kzalloc(sizeof(*w), GFP_KERNEL);
	if (!w)
		return -ENOMEM;
	for (; !ret && line < end; line = eol + 1) {
		eol = memchr(line, '\n', end - line) ?: end;
		/* An empty line, or a write of none, is none of the ABI's. */
		ret = eol > line ? rl_config_line(w, line, eol - line) : -EINVAL;
	}
	if (!count)
		ret = -EINVAL;
	if (!ret && w->given) {
		rl_limiter_get_params(lim, &p);
		ret = rl_tunables_set(&p, w->vals, w->given) ?: rl_keys_allowed(&p);
	}
	if (!ret && (w->parent || w->weight))
		ret = rl_named_set_parent_sysfs(lim, w->parent ? w->pname : NULL, w->weight);
	if (!ret && w->given)
		ret = rl_limiter_set_tunables(lim, w->vals, w->given);
	kfree(w);
	return ret ?: count;
}

static ssize_t children_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return rl_tree_show_children(rl_kobj_limiter(kobj), buf);
}

struct rl_client_list {
	char *buf;
	int len;
};

/* Emit one line of client_list; false once the page is full. */
static bool rl_client_line(const struct rl_client *client, void *arg)
{
	struct rl_client_list *cl = arg;

	cl->len += sysfs_emit_at(cl->buf, cl->len, "%d %s %llu %llu %u %u %llu\n",
				 client->tgid, client->comm, client->granted, client->held,
				 client->level + 1, client->weight, client->cap);
	return cl->len < PAGE_SIZE - 1;
}

static ssize_t client_list_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct rl_client_list cl = { .buf = buf };

	rl_limiter_walk_clients(rl_kobj_limiter(kobj), rl_client_line, &cl);
	return cl.len;
}

static ssize_t wait_histogram_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	u64 hist[RL_HIST_BUCKETS];
	int i, len = 0;

	rl_limiter_get_hist(rl_kobj_limiter(kobj), hist);
	for (i = 0; i < RL_HIST_BUCKETS; i++)
		if (hist[i])
			len += sysfs_emit_at(buf, len, "%llu %llu\n",
					     i ? 1ULL << (i - 1) : 0, hist[i]);
	return len;
}

/* A keyed limiter's keys: counts only, never a key. */
static ssize_t keys_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct rl_keys_stats st = {};

	rl_keys_get_stats(rl_kobj_limiter(kobj)->keys, &st);
	return sysfs_emit(buf, "keys %llu\nkeys_max %llu\ncreated %llu\nevicted %llu\n"
			  "refused %llu\nwaiters %llu\n", st.keys, st.keys_max, st.created,
			  st.evicted, st.refused, st.waiters);
}

/*
 * Five files, each a kernfs node of 128 bytes and a copy of its name
 * (Documentation/performance.md, "many"), and keys for a keyed limiter.
 * All are root's but config, which rl_sysfs_chown() hands to the
 * limiter's owner and group.
 */
RL_ATTR_RO(stat);
static struct kobj_attribute rl_attr_config = __ATTR(config, 0644, config_show, config_store);
RL_ATTR_RO(children);
RL_ATTR_RO(client_list);
RL_ATTR_RO(wait_histogram);
RL_ATTR_RO(keys);

static struct attribute *rl_limiter_attrs[] = {
	RL_A(stat), RL_A(config), RL_A(children), RL_A(client_list), RL_A(wait_histogram),
	NULL,
};

static const struct attribute_group rl_limiter_group = {
	.attrs = rl_limiter_attrs,
};

static struct attribute *rl_keyed_attrs[] = {
	RL_A(keys),
	NULL,
};

static umode_t rl_keyed_visible(struct kobject *kobj, struct attribute *attr, int n)
{
	return rl_kobj_limiter(kobj)->keys ? attr->mode : 0;
}

static const struct attribute_group rl_keyed_group = {
	.attrs = rl_keyed_attrs,
	.is_visible = rl_keyed_visible,
};

static const struct attribute_group *rl_limiter_groups[] = {
	&rl_limiter_group,
	&rl_keyed_group,
	NULL,
};

static struct kobject *rl_root;

/* The directory is gone and nobody holds its kobject: drop the limiter. */
static void rl_kobj_release(struct kobject *kobj)
{
	struct rl_dir *dir = container_of(kobj, struct rl_dir, kobj);

	rl_limiter_put(dir->lim);
	kfree(dir);
}

static const struct kobj_type rl_ktype = {
	.release = rl_kobj_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = rl_limiter_groups,
};

/**
 * rl_sysfs_add() - create /sys/kernel/ratelimit/<name>, holding a reference to @lim
 * @lim: a new named limiter, its identity set
 * Return: the directory, or an ERR_PTR() with @lim untouched.
 */
static struct rl_dir *rl_sysfs_add(struct rl_limiter *lim)
{
	struct rl_dir *dir;
	int ret;

	dir = kzalloc(sizeof(*dir), GFP_KERNEL_ACCOUNT);
	if (!dir)
		return ERR_PTR(-ENOMEM);
	rl_limiter_get(lim);
	dir->lim = lim;
	ret = kobject_init_and_add(&dir->kobj, &rl_ktype, lim->nm.ns->kobj ?: rl_root,
				   "%s", lim->name);
	if (ret) {
		/* Its release drops the reference and frees @dir. */
		kobject_put(&dir->kobj);
		return ERR_PTR(ret);
	}
	/* Root's files need no attributes: leave them be. */
	if (!uid_eq(lim->uid, GLOBAL_ROOT_UID) || !gid_eq(lim->gid, GLOBAL_ROOT_GID))
		ret = rl_sysfs_chown(dir, lim->uid, lim->gid);
	if (ret) {
		rl_sysfs_del(dir);
		return ERR_PTR(ret);
	}
	return dir;
}

/**
 * rl_sysfs_ns_add() - create /sys/kernel/ratelimit/ipc:<inum>
 * @inum: inode number of an IPC namespace other than the host's
 *
 * A directory of the directories of its names; kobject_put() removes it.
 * No valid name has a ':'.
 *
 * Return: the directory, or NULL without memory.
 */
static struct kobject *rl_sysfs_ns_add(unsigned int inum)
{
	char name[sizeof("ipc:4294967295")];

	snprintf(name, sizeof(name), "ipc:%u", inum);
	return kobject_create_and_add(name, rl_root);
}

/**
 * rl_sysfs_link() - link /sys/kernel/ratelimit/ipc:<inum>/<name> to a host's directory
 * @nsdir: the namespace's directory
 * @dir:   the directory of the host's limiter shared into it
 * @name:  its name
 *
 * sysfs_remove_link() removes it.
 *
 * Return: 0, or a negative errno.
 */
static int rl_sysfs_link(struct kobject *nsdir, struct rl_dir *dir, const char *name)
{
	return sysfs_create_link(nsdir, &dir->kobj, name);
}

/**
 * rl_sysfs_del() - remove /sys/kernel/ratelimit/<name>
 * @dir: the directory, from rl_sysfs_add()
 *
 * Returns once no sysfs callback of @dir runs; drops its reference, which
 * may free the limiter.
 */
static void rl_sysfs_del(struct rl_dir *dir)
{
	kobject_del(&dir->kobj);
	kobject_put(&dir->kobj);
}

/**
 * rl_sysfs_chown() - give a limiter's file config to its owner and group
 * @dir: the directory, kept by the registry lock held
 * @uid: the limiter's owner
 * @gid: its group
 *
 * The directory and the other files stay root's: an owner other than root
 * costs kernfs 88 bytes of attributes per node it owns.
 *
 * Return: 0 or -ENOMEM, with nothing changed.
 */
static int rl_sysfs_chown(struct rl_dir *dir, kuid_t uid, kgid_t gid)
{
	return sysfs_file_change_owner(&dir->kobj, rl_attr_config.attr.name, uid, gid);
}

static ssize_t count_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", rl_named_count());
}

static ssize_t version_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", RL_ABI_VERSION);
}

/* In the line's order of old; a tunable's word not among them follows them. */
static const char *const rl_feature_words[] = {
	"unlimited", "nonblock", "predict", "named", "sysfs", "priority",
	"fair-share", "cap", "concurrency", "refund", "catchup", "queued", "fast",
};

static bool rl_feature_listed(const char *word, const struct rl_tunable *upto)
{
	const struct rl_tunable *t;

	if (match_string(rl_feature_words, ARRAY_SIZE(rl_feature_words), word) >= 0)
		return true;
	for (t = rl_tunables; t < upto; t++)
		if (t->feature && !strcmp(t->feature, word))
			return true;
	return false;
}

static ssize_t features_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	const struct rl_tunable *t;
	int len = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(rl_feature_words); i++)
		len += sysfs_emit_at(buf, len, "%s%s", i ? " " : "", rl_feature_words[i]);
	for (t = rl_tunables; t->name; t++)
		if (t->feature && !rl_feature_listed(t->feature, t))
			len += sysfs_emit_at(buf, len, " %s", t->feature);
	if (rl_uring_features() & RL_FEATURE_URING_CMD)
		len += sysfs_emit_at(buf, len, " io_uring");
	len += sysfs_emit_at(buf, len, " ipc-namespace");
	return len + sysfs_emit_at(buf, len, "\n");
}

RL_ATTR_RO(count);
RL_ATTR_RO(version);
RL_ATTR_RO(features);

static struct attribute *rl_root_attrs[] = {
	RL_A(count), RL_A(version), RL_A(features), NULL,
};

static const struct attribute_group rl_root_group = {
	.attrs = rl_root_attrs,
};

/**
 * rl_sysfs_init() - create /sys/kernel/ratelimit
 *
 * Return: 0 or a negative errno.
 */
int rl_sysfs_init(void)
{
	int ret;

	rl_root = kobject_create_and_add("ratelimit", kernel_kobj);
	if (!rl_root)
		return -ENOMEM;
	ret = sysfs_create_group(rl_root, &rl_root_group);
	if (ret)
		kobject_put(rl_root);
	return ret;
}

/**
 * rl_sysfs_exit() - remove /sys/kernel/ratelimit, once empty
 */
void rl_sysfs_exit(void)
{
	sysfs_remove_group(rl_root, &rl_root_group);
	kobject_put(rl_root);
}
