// SPDX-License-Identifier: GPL-2.0-only
/*
 * /dev/ratelimit: rate limiting as a kernel service. Every open file is a
 * client of one limiter: RL_IOC_SET_CONFIG on a fresh file creates its
 * private limiter, RL_IOC_ATTACH joins a named one. Each ioctl handler
 * copies in, validates, calls the limiter core and copies out.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/atomic.h>
#include <linux/build_bug.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "fast.h"
#include "keys.h"
#include "limiter.h"
#include "named.h"
#include "ratelimit.h"
#include "request.h"
#include "ticket.h"
#include "tree.h"

#define CREATE_TRACE_POINTS
#include "ratelimit_trace.h"

static_assert(sizeof(struct rl_config) == 64);
static_assert(sizeof(struct rl_acquire) == 64);
static_assert(sizeof(struct rl_stats) == 128);
static_assert(sizeof(struct rl_features) == 64);
static_assert(sizeof(struct rl_attach) == 112);
static_assert(sizeof(struct rl_unlink) == 32);
static_assert(sizeof(struct rl_release) == 32);
static_assert(sizeof(struct rl_client_config) == 64);
static_assert(sizeof(struct rl_parent) == 40);
static_assert(sizeof(struct rl_key_queued) == 176);
static_assert(RL_DEPTH_MAX == RL_HIER_DEPTH_MAX);
static_assert(sizeof(struct rl_cycle) == 96);
static_assert(sizeof(struct rl_perm) == 32);
static_assert(sizeof(struct rl_deposit) == 40);
static_assert(sizeof(struct rl_lease) == 160);
static_assert(sizeof(struct rl_demand) == 80);
static_assert(sizeof(struct rl_queued) == 80);
static_assert(sizeof(struct rl_key_acquire) == 160);
static_assert(sizeof(struct rl_key_state) == 128);
static_assert(sizeof(struct rl_keys_stats) == 128);
/* rl_ioctl_get_counts() checks both through struct rl_stats. */
static_assert(offsetof(struct rl_stats, flags) == offsetof(struct rl_demand, flags));
static_assert(offsetof(struct rl_stats, reserved0) == offsetof(struct rl_demand, reserved0));

#define RL_IOC_BIT(_cmd)	BIT_ULL(_IOC_NR(RL_IOC_##_cmd))
#define RL_IOCTLS_ALL	(RL_IOC_BIT(GET_FEATURES) | RL_IOC_BIT(SET_CONFIG) |		\
			 RL_IOC_BIT(GET_CONFIG) | RL_IOC_BIT(ACQUIRE) |		\
			 RL_IOC_BIT(GET_STATS) | RL_IOC_BIT(ATTACH) | RL_IOC_BIT(UNLINK) |	\
			 RL_IOC_BIT(RELEASE) | RL_IOC_BIT(REFUND) | RL_IOC_BIT(SET_CLIENT) |	\
			 RL_IOC_BIT(GET_CLIENT) | RL_IOC_BIT(DEPOSIT) | RL_IOC_BIT(SET_LEASE) |	\
			 RL_IOC_BIT(GET_DEMAND) | RL_IOC_BIT(SET_PARENT) |		\
			 RL_IOC_BIT(GET_PARENT) | RL_IOC_BIT(CYCLE) | RL_IOC_BIT(SET_PERM) |	\
			 RL_IOC_BIT(SUBMIT) | RL_IOC_BIT(COLLECT) | RL_IOC_BIT(CANCEL) |	\
			 RL_IOC_BIT(ACQUIRE_KEY) | RL_IOC_BIT(GET_KEY) | RL_IOC_BIT(GET_KEYS) |	\
			 RL_IOC_BIT(SUBMIT_KEY) | RL_IOC_BIT(SHARE))

/* Flags and reserved fields here, the limits in rl_params_from_config(). */
static int rl_params_from_user(const struct rl_config *cfg, struct rl_params *p)
{
	if (cfg->flags & ~RL_CONFIG_FLAGS_ALL || cfg->reserved0)
		return -EINVAL;
	return rl_params_from_config(cfg, p) ?: rl_keys_allowed(p);
}

static int rl_ioctl_get_features(void __user *argp)
{
	struct rl_features f = {
		.version = RL_ABI_VERSION,
		.flags = rl_uring_features() | RL_FEATURE_QUEUED | RL_FEATURE_FAST |
			 RL_FEATURE_KEYED | RL_FEATURE_IPC_NS,
		.ioctls = RL_IOCTLS_ALL,
		.config_flags = RL_CONFIG_FLAGS_ALL,
		.acquire_flags = RL_ACQUIRE_FLAGS_ALL,
		.attach_flags = RL_ATTACH_FLAGS_ALL,
	};

	return copy_to_user(argp, &f, sizeof(f)) ? -EFAULT : 0;
}

/* Give @client a private limiter with limits @p. */
static int rl_client_create(struct rl_client *client, const struct rl_params *p)
{
	struct rl_limiter *lim;

	lockdep_assert_held(&client->setup);
	lim = rl_limiter_create(p);
	if (!lim)
		return -ENOMEM;
	client->may_config = true;
	rl_limiter_attach(lim, client);
	/* Pairs with smp_load_acquire() in rl_client_limiter(). */
	smp_store_release(&client->lim, lim);
	return 0;
}

static int rl_ioctl_set_config(struct rl_client *client, void __user *argp)
{
	struct rl_limiter *lim;
	struct rl_config cfg;
	struct rl_params p;
	int ret;

	if (copy_from_user(&cfg, argp, sizeof(cfg)))
		return -EFAULT;
	ret = rl_params_from_user(&cfg, &p);
	if (ret)
		return ret;
	lim = rl_client_limiter(client);
	if (!lim) {
		mutex_lock(&client->setup);
		lim = client->lim;
		if (!lim)
			ret = rl_client_create(client, &p);
		mutex_unlock(&client->setup);
		if (!lim)
			return ret;
	}
	if (!client->may_config)
		return -EACCES;
	return rl_limiter_set_params(lim, &p, 1);
}

static int rl_ioctl_attach(struct rl_client *client, void __user *argp)
{
	char name[RL_NAME_MAX];
	struct rl_attach at;
	struct rl_params p;
	int ret;

	if (copy_from_user(&at, argp, sizeof(at)))
		return -EFAULT;
	if (at.flags & ~RL_ATTACH_FLAGS_ALL || at.mode & ~0777 ||
	    memchr_inv(at.reserved, 0, sizeof(at.reserved)))
		return -EINVAL;
	ret = rl_params_from_user(&at.config, &p) ?: rl_name_from_user(name, at.name_ptr);
	if (ret)
		return ret;
	mutex_lock(&client->setup);
	ret = rl_named_attach(client, name, &at, &p);
	mutex_unlock(&client->setup);
	return ret;
}

static int rl_ioctl_unlink(void __user *argp)
{
	char name[RL_NAME_MAX];
	struct rl_unlink un;
	int ret;

	if (copy_from_user(&un, argp, sizeof(un)))
		return -EFAULT;
	if (un.flags || un.reserved0 || memchr_inv(un.reserved, 0, sizeof(un.reserved)))
		return -EINVAL;
	ret = rl_name_from_user(name, un.name_ptr);
	return ret ?: rl_named_unlink(name);
}

static int rl_ioctl_get_config(struct rl_limiter *lim, void __user *argp)
{
	struct rl_config cfg = {};
	struct rl_params p;

	if (!lim)
		return -EBADFD;
	rl_limiter_get_params(lim, &p);
	rl_params_to_config(&p, &cfg);
	return copy_to_user(argp, &cfg, sizeof(cfg)) ? -EFAULT : 0;
}

/* 0 when granted, else a negative errno; outputs written on 0, -EAGAIN and -ETIMEDOUT. */
static int rl_ioctl_acquire(struct rl_client *client, struct file *file,
			    struct rl_acquire __user *argp)
{
	struct rl_limiter *lim;
	struct rl_acquire req;
	bool nonblock;
	int ret;

	if (rl_acquire_read(&req, argp))
		return -EFAULT;
	ret = rl_acquire_admit(client, &req, &lim);
	if (ret)
		return ret;
	nonblock = req.flags & RL_ACQUIRE_NONBLOCK || file->f_flags & O_NONBLOCK;
	ret = rl_limiter_acquire(lim, client, &req, nonblock);
	if (ret && ret != -EAGAIN && ret != -ETIMEDOUT)
		return ret;
	return rl_acquire_write(argp, &req) ? -EFAULT : ret;
}

/*
 * RL_IOC_ACQUIRE_KEY: the request read as an ACQUIRE's, then the key. Errors
 * of RL_IOC_ACQUIRE, -EINVAL for a limiter that is not keyed, -ENOSPC.
 */
static int rl_ioctl_acquire_key(struct rl_client *client, struct file *file,
				struct rl_key_acquire __user *argp)
{
	const size_t tail = offsetof(struct rl_key_acquire, key_len);
	struct rl_limiter *lim = rl_client_limiter(client);
	struct rl_key_acquire ka;
	bool nonblock;
	int ret;

	if (rl_acquire_read(&ka.acquire, &argp->acquire) ||
	    copy_from_user((u8 *)&ka + tail, (u8 __user *)argp + tail, sizeof(ka) - tail))
		return -EFAULT;
	if (rl_key_fields_bad(ka.key_len, ka.flags, ka.reserved))
		return -EINVAL;
	ret = rl_acquire_check(client, &ka.acquire, lim);
	if (ret)
		return ret;
	if (!lim->keys)
		return -EINVAL;
	nonblock = ka.acquire.flags & RL_ACQUIRE_NONBLOCK || file->f_flags & O_NONBLOCK;
	ret = rl_keys_acquire(lim->keys, ka.key, ka.key_len, &ka.acquire, nonblock);
	if (ret && ret != -EAGAIN && ret != -ETIMEDOUT && ret != -ENOSPC)
		return ret;
	return rl_acquire_write(&argp->acquire, &ka.acquire) ? -EFAULT : ret;
}

/* RL_IOC_GET_KEY: one key's state, without creating it. */
static int rl_ioctl_get_key(struct rl_limiter *lim, void __user *argp)
{
	const size_t out = offsetof(struct rl_key_state, available);
	struct rl_key_state st;

	if (copy_from_user(&st, argp, sizeof(st)))
		return -EFAULT;
	if (!st.key_len || st.key_len > RL_KEY_MAX || st.flags)
		return -EINVAL;
	if (!lim)
		return -EBADFD;
	if (!lim->keys)
		return -EINVAL;
	memset((u8 *)&st + out, 0, sizeof(st) - out);
	rl_keys_get_key(lim->keys, st.key, st.key_len, &st);
	return copy_to_user(argp, &st, sizeof(st)) ? -EFAULT : 0;
}

/* RL_IOC_GET_KEYS: the counts of a keyed limiter's keys. */
static int rl_ioctl_get_keys(struct rl_limiter *lim, void __user *argp)
{
	struct rl_keys_stats st;

	if (copy_from_user(&st, argp, sizeof(st)))
		return -EFAULT;
	if (st.flags || st.reserved0)
		return -EINVAL;
	if (!lim)
		return -EBADFD;
	if (!lim->keys)
		return -EINVAL;
	memset(&st, 0, sizeof(st));
	rl_keys_get_stats(lim->keys, &st);
	return copy_to_user(argp, &st, sizeof(st)) ? -EFAULT : 0;
}

/*
 * Read the request's own fields, writing @release back as it is, then the
 * embedded ACQUIRE as rl_acquire_read() does: a block the caller cannot
 * write fails before anything is given back.
 */
static int rl_cycle_read(struct rl_cycle *c, struct rl_cycle __user *u)
{
	if (!user_access_begin(u, sizeof(*u)))
		return -EFAULT;
	unsafe_get_user(c->release, &u->release, efault);
	unsafe_get_user(c->flags, &u->flags, efault);
	unsafe_get_user(c->reserved0, &u->reserved0, efault);
	unsafe_get_user(c->reserved[0], &u->reserved[0], efault);
	unsafe_get_user(c->reserved[1], &u->reserved[1], efault);
	unsafe_put_user(c->release, &u->release, efault);
	user_access_end();
	return rl_acquire_read(&c->acquire, &u->acquire);
efault:
	user_access_end();
	return -EFAULT;
}

/*
 * RL_IOC_CYCLE: give back concurrency permits and acquire again under one
 * hold of the limiter's lock (rl_limiter_cycle()), one syscall instead of an
 * RL_IOC_RELEASE and an RL_IOC_ACQUIRE. Errors as RL_IOC_ACQUIRE's, and
 * -EINVAL for more permits to give back than @client holds.
 */
static long rl_ioctl_cycle(struct rl_client *client, struct file *file,
			   struct rl_cycle __user *argp)
{
	struct rl_acquire *req;
	struct rl_limiter *lim;
	bool nonblock, out, released = false;
	struct rl_cycle c;
	int ret;

	if (rl_cycle_read(&c, argp))
		return -EFAULT;
	req = &c.acquire;
	if (c.flags || c.reserved0 || c.reserved[0] || c.reserved[1])
		return -EINVAL;
	ret = rl_acquire_admit(client, req, &lim);
	if (ret)
		return ret;
	nonblock = req->flags & RL_ACQUIRE_NONBLOCK || file->f_flags & O_NONBLOCK;
	ret = rl_limiter_cycle(lim, client, c.release, req, nonblock, &released);
	out = !ret || ret == -EAGAIN || ret == -ETIMEDOUT;
	if ((released && put_user(0, &argp->release)) ||
	    (out && rl_acquire_write(&argp->acquire, req)))
		return -EFAULT;
	return ret;
}

static int rl_ioctl_set_parent(struct rl_client *client, struct rl_limiter *lim, void __user *argp)
{
	char name[RL_NAME_MAX];
	struct rl_parent rp;
	int ret;

	if (copy_from_user(&rp, argp, sizeof(rp)))
		return -EFAULT;
	if (rp.flags || rp.depth || rp.children || rp.weight > RL_WEIGHT_MAX ||
	    memchr_inv(rp.reserved, 0, sizeof(rp.reserved)))
		return -EINVAL;
	ret = rp.name_ptr ? rl_name_from_user(name, rp.name_ptr) : 0;
	if (ret)
		return ret;
	if (!lim)
		return -EBADFD;
	if (!rl_limiter_named(lim) || lim->keys)
		return -EINVAL;
	if (!client->may_config)
		return -EACCES;
	return rl_named_set_parent(lim, rp.name_ptr ? name : NULL, rp.weight ?: 1);
}

static int rl_ioctl_get_parent(struct rl_limiter *lim, void __user *argp)
{
	char name[RL_NAME_MAX];
	struct rl_parent rp;
	u64 uptr;

	if (copy_from_user(&rp, argp, sizeof(rp)))
		return -EFAULT;
	if (rp.flags)
		return -EINVAL;
	if (!lim)
		return -EBADFD;
	uptr = rp.name_ptr;
	rp = (struct rl_parent) { .name_ptr = uptr };
	rl_tree_get(lim, &rp, name);
	if (uptr && copy_to_user(u64_to_user_ptr(uptr), name, strlen(name) + 1))
		return -EFAULT;
	return copy_to_user(argp, &rp, sizeof(rp)) ? -EFAULT : 0;
}

/* RL_IOC_GET_STATS and RL_IOC_GET_DEMAND, of one shape. */
static int rl_ioctl_get_counts(struct rl_limiter *lim, unsigned int cmd, void __user *argp)
{
	union {
		struct rl_stats st;
		struct rl_demand d;
	} u;

	if (copy_from_user(&u, argp, _IOC_SIZE(cmd)))
		return -EFAULT;
	if (u.st.flags || u.st.reserved0)
		return -EINVAL;
	if (!lim)
		return -EBADFD;
	memset(&u, 0, sizeof(u));
	if (cmd == RL_IOC_GET_STATS)
		rl_limiter_get_stats(lim, &u.st);
	else
		rl_limiter_get_demand(lim, &u.d);
	return copy_to_user(argp, &u, _IOC_SIZE(cmd)) ? -EFAULT : 0;
}

/* RL_IOC_RELEASE and RL_IOC_REFUND. */
static int rl_ioctl_release(struct rl_client *client, struct rl_limiter *lim,
			    unsigned int cmd, void __user *argp)
{
	struct rl_release rel;

	if (copy_from_user(&rel, argp, sizeof(rel)))
		return -EFAULT;
	if (!rel.count || rel.flags || rel.reserved0 ||
	    memchr_inv(rel.reserved, 0, sizeof(rel.reserved)))
		return -EINVAL;
	if (!lim)
		return -EBADFD;
	if (cmd == RL_IOC_REFUND)
		return rl_limiter_refund(lim, client, rel.count);
	return rl_limiter_release(lim, client, rel.count);
}

static int rl_ioctl_set_client(struct rl_client *client, struct rl_limiter *lim, void __user *argp)
{
	struct rl_client_config cc;

	if (copy_from_user(&cc, argp, sizeof(cc)))
		return -EFAULT;
	if (cc.priority > RL_PRIO_USER || cc.weight > RL_WEIGHT_MAX || cc.flags ||
	    cc.reserved0 || memchr_inv(cc.reserved, 0, sizeof(cc.reserved)))
		return -EINVAL;
	if (!lim)
		return -EBADFD;
	if (!rl_may_boost(client, cc.priority, cc.weight))
		return -EPERM;
	rl_limiter_set_client(lim, client, &cc);
	return 0;
}

static int rl_ioctl_get_client(struct rl_client *client, struct rl_limiter *lim, void __user *argp)
{
	struct rl_client_config cc = {};

	if (!lim)
		return -EBADFD;
	rl_limiter_get_client(lim, client, &cc);
	return copy_to_user(argp, &cc, sizeof(cc)) ? -EFAULT : 0;
}

static int rl_ioctl_set_perm(struct rl_limiter *lim, void __user *argp)
{
	struct user_namespace *ns = current_user_ns();
	struct rl_perm perm;
	kuid_t uid;
	kgid_t gid;

	if (copy_from_user(&perm, argp, sizeof(perm)))
		return -EFAULT;
	if (!perm.flags || perm.flags & ~RL_PERM_FLAGS_ALL || perm.mode & ~0777 ||
	    memchr_inv(perm.reserved, 0, sizeof(perm.reserved)))
		return -EINVAL;
	uid = make_kuid(ns, perm.uid);
	gid = make_kgid(ns, perm.gid);
	if ((perm.flags & RL_PERM_UID && !uid_valid(uid)) ||
	    (perm.flags & RL_PERM_GID && !gid_valid(gid)))
		return -EINVAL;
	if (!lim)
		return -EBADFD;
	if (!rl_limiter_named(lim))
		return -EINVAL;
	return rl_named_set_perm(lim, perm.flags, uid, gid, perm.mode);
}

static int rl_ioctl_share(struct rl_limiter *lim, void __user *argp)
{
	struct rl_share sh;

	if (copy_from_user(&sh, argp, sizeof(sh)))
		return -EFAULT;
	if (sh.flags & ~RL_SHARE_FLAGS_ALL || memchr_inv(sh.reserved, 0, sizeof(sh.reserved)))
		return -EINVAL;
	if (!lim)
		return -EBADFD;
	if (!rl_limiter_named(lim))
		return -EINVAL;
	return rl_named_share(lim, sh.ns_fd, sh.flags & RL_SHARE_REVOKE);
}

static int rl_ioctl_deposit(struct rl_client *client, struct rl_limiter *lim,
			    struct rl_deposit __user *argp)
{
	struct rl_deposit dep;
	int ret;

	if (copy_from_user(&dep, argp, sizeof(dep)))
		return -EFAULT;
	if (!dep.count || dep.flags || dep.reserved0 ||
	    memchr_inv(dep.reserved, 0, sizeof(dep.reserved)))
		return -EINVAL;
	if (!lim)
		return -EBADFD;
	if (lim->keys)
		return -EINVAL;
	if (!client->may_config)
		return -EPERM;
	/* Fail before adding anything if the answer cannot be written. */
	if (put_user(0, &argp->available))
		return -EFAULT;
	ret = rl_limiter_deposit(lim, &dep);
	if (ret)
		return ret;
	return copy_to_user(argp, &dep, sizeof(dep)) ? -EFAULT : 0;
}

/* Both configurations are checked before anything changes. */
static int rl_ioctl_set_lease(struct rl_client *client, struct rl_limiter *lim, void __user *argp)
{
	struct rl_params p, fb;
	struct rl_lease l;
	int ret;

	if (copy_from_user(&l, argp, sizeof(l)))
		return -EFAULT;
	if (l.flags || l.reserved0 || l.expires_ns > KTIME_MAX ||
	    memchr_inv(l.reserved, 0, sizeof(l.reserved)))
		return -EINVAL;
	ret = rl_params_from_user(&l.config, &p) ?: rl_params_from_user(&l.fallback, &fb);
	if (ret)
		return ret;
	/* A keyed limiter takes no lease, and a lease makes no limiter keyed. */
	if (p.keyed || fb.keyed)
		return -EINVAL;
	if (!lim)
		return -EBADFD;
	if (lim->keys)
		return -EINVAL;
	if (!client->may_config)
		return -EPERM;
	return rl_limiter_lease(lim, client, &p, &fb, l.expires_ns);
}

static long rl_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct rl_client *client = file->private_data;
	struct rl_limiter *lim = rl_client_limiter(client);
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case RL_IOC_GET_FEATURES:
		return rl_ioctl_get_features(argp);
	case RL_IOC_SET_CONFIG:
		return rl_ioctl_set_config(client, argp);
	case RL_IOC_GET_CONFIG:
		return rl_ioctl_get_config(lim, argp);
	case RL_IOC_ACQUIRE:
		return rl_ioctl_acquire(client, file, argp);
	case RL_IOC_GET_STATS:
	case RL_IOC_GET_DEMAND:
		return rl_ioctl_get_counts(lim, cmd, argp);
	case RL_IOC_ATTACH:
		return rl_ioctl_attach(client, argp);
	case RL_IOC_UNLINK:
		return rl_ioctl_unlink(argp);
	case RL_IOC_RELEASE:
	case RL_IOC_REFUND:
		return rl_ioctl_release(client, lim, cmd, argp);
	case RL_IOC_SET_CLIENT:
		return rl_ioctl_set_client(client, lim, argp);
	case RL_IOC_GET_CLIENT:
		return rl_ioctl_get_client(client, lim, argp);
	case RL_IOC_DEPOSIT:
		return rl_ioctl_deposit(client, lim, argp);
	case RL_IOC_SET_LEASE:
		return rl_ioctl_set_lease(client, lim, argp);
	case RL_IOC_SET_PARENT:
		return rl_ioctl_set_parent(client, lim, argp);
	case RL_IOC_GET_PARENT:
		return rl_ioctl_get_parent(lim, argp);
	case RL_IOC_CYCLE:
		return rl_ioctl_cycle(client, file, argp);
	case RL_IOC_SET_PERM:
		return rl_ioctl_set_perm(lim, argp);
	case RL_IOC_SHARE:
		return rl_ioctl_share(lim, argp);
	case RL_IOC_SUBMIT:
		return rl_ticket_submit(client, argp);
	case RL_IOC_COLLECT:
		return rl_ticket_collect(client, argp);
	case RL_IOC_CANCEL:
		return rl_ticket_cancel(client, argp);
	case RL_IOC_ACQUIRE_KEY:
		return rl_ioctl_acquire_key(client, file, argp);
	case RL_IOC_SUBMIT_KEY:
		return rl_ticket_submit_key(client, argp);
	case RL_IOC_GET_KEY:
		return rl_ioctl_get_key(lim, argp);
	case RL_IOC_GET_KEYS:
		return rl_ioctl_get_keys(lim, argp);
	default:
		return -ENOTTY;
	}
}

static int rl_open(struct inode *inode, struct file *file)
{
	struct rl_client *client;

	client = rl_client_alloc();
	if (!client)
		return -ENOMEM;
	init_waitqueue_head(&client->pollq);
	INIT_LIST_HEAD(&client->node);
	INIT_LIST_HEAD(&client->poll_node);
	INIT_LIST_HEAD(&client->async);
	INIT_LIST_HEAD(&client->tickets);
	INIT_LIST_HEAD(&client->done);
	INIT_LIST_HEAD(&client->fast_node);
	mutex_init(&client->setup);
	mutex_init(&client->tmutex);
	client->tgid = task_tgid_nr(current);
	client->uid = current_euid();
	get_task_comm(client->comm, current);
	file->private_data = client;
	return nonseekable_open(inode, file);
}

static int rl_release(struct inode *inode, struct file *file)
{
	struct rl_client *client = file->private_data;
	struct rl_limiter *lim = client->lim;

	if (lim) {
		rl_ticket_release(client);
		/* Leaving a named limiter may remove its name. */
		if (rl_limiter_named(lim))
			rl_named_detach(lim, client);
		else
			rl_limiter_detach(lim, client);
		rl_limiter_put(lim);
	}
	mutex_destroy(&client->tmutex);
	mutex_destroy(&client->setup);
	rl_client_free(client);
	return 0;
}

static __poll_t rl_poll(struct file *file, poll_table *pt)
{
	struct rl_client *client = file->private_data;
	struct rl_limiter *lim;

	poll_wait(file, &client->pollq, pt);
	lim = rl_client_limiter(client);
	if (!lim)
		return EPOLLERR;
	/* A keyed limiter's fd is readable for its tickets only. */
	if (lim->keys)
		return rl_ticket_poll(lim, client);
	return rl_ticket_poll(lim, client) ?: rl_limiter_poll(lim, client);
}

/* Describe the fd's limiter in /proc/<pid>/fdinfo. */
static void rl_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct rl_limiter *lim = rl_client_limiter(file->private_data);
	struct rl_snapshot s;

	if (!lim)
		return;
	rl_limiter_snapshot(lim, &s);
	seq_printf(m, "rl-rate:\t%llu\nrl-period-ns:\t%llu\nrl-burst:\t%llu\n",
		   s.params.rate, s.params.period, s.params.burst);
	seq_printf(m, "rl-flags:\t0x%x\n",
		   (s.params.unlimited ? (u32)RL_CONFIG_UNLIMITED : 0) |
		   (s.params.fed ? (u32)RL_CONFIG_FED : 0) |
		   (s.params.keyed ? (u32)RL_CONFIG_KEYED : 0));
	seq_printf(m, "rl-available:\t%llu\nrl-waiters:\t%llu\nrl-granted:\t%llu\n",
		   s.available, s.waiters, s.counters.granted);
	seq_printf(m, "rl-concurrency:\t%llu\nrl-held:\t%llu\nrl-dropped-late:\t%llu\n",
		   s.params.concurrency, s.held, s.counters.dropped_late);
}

/*
 * The fd's reservation page (RL_FEATURE_FAST), for a client that may
 * reconfigure. The mapping does not hold the file (fast.c).
 */
static int rl_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct rl_client *client = file->private_data;

	struct rl_limiter *lim = rl_client_limiter(client);

	if (!lim)
		return -EBADFD;
	if (lim->keys)
		return -EINVAL;
	if (!client->may_config)
		return -EACCES;
	return rl_fast_map(client, vma);
}

/* Any close of an fd of @file (close(2), dup2(), exec, exit): told to its page. */
static int rl_flush(struct file *file, fl_owner_t id)
{
	rl_fast_closed(file->private_data);
	return 0;
}

static const struct file_operations rl_fops = {
	.owner = THIS_MODULE,
	.open = rl_open,
	.release = rl_release,
	.unlocked_ioctl = rl_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.poll = rl_poll,
	.mmap = rl_mmap,
	.flush = rl_flush,
	.show_fdinfo = rl_show_fdinfo,
	RL_URING_FOPS
};

static struct miscdevice rl_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "ratelimit",
	.fops = &rl_fops,
	.mode = 0666,
};

static int __init rl_init(void)
{
	int ret = rl_limiter_init();

	if (ret)
		return ret;
	ret = rl_named_init();
	if (ret)
		goto err_limiter;
	ret = rl_sysfs_init();
	if (ret)
		goto err_named;
	ret = rl_fast_init();
	if (ret)
		goto err_sysfs;
	ret = misc_register(&rl_misc);
	if (ret)
		goto err_fast;
	return 0;

err_fast:
	rl_fast_exit();
err_sysfs:
	rl_sysfs_exit();
err_named:
	rl_named_exit();
err_limiter:
	rl_limiter_exit();
	return ret;
}

static void __exit rl_exit(void)
{
	misc_deregister(&rl_misc);
	rl_fast_exit();
	rl_named_exit();
	rl_sysfs_exit();
	rl_limiter_exit();
}

module_init(rl_init);
module_exit(rl_exit);

MODULE_DESCRIPTION("Rate limiting as a kernel service: /dev/ratelimit");
MODULE_AUTHOR("The ratelimit authors");
MODULE_LICENSE("GPL");
MODULE_VERSION(RL_VERSION);
