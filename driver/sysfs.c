// SPDX-License-Identifier: GPL-2.0-only
/*
 * sysfs of the ratelimit module: /sys/kernel/ratelimit/ with global
 * files, and one directory per named limiter, owned by the limiter's
 * owner, with its tunables and statistics (Documentation/ABI/testing/
 * sysfs-kernel-ratelimit).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/ctype.h>
#include <linux/kobject.h>
#include <linux/kstrtox.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "compat.h"
#include "ratelimit.h"

static struct kobject *rl_root;

static struct rl_limiter *rl_kobj_limiter(struct kobject *kobj)
{
	return container_of(kobj, struct rl_limiter, kobj);
}

/* Tunables: one show and one store, told apart by the attribute. */

struct rl_param_attr {
	struct kobj_attribute kattr;
	enum rl_param which;
};

static ssize_t rl_param_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	struct rl_param_attr *pa = container_of(attr, struct rl_param_attr,
						kattr);
	struct rl_params p;
	u64 val = 0;

	rl_limiter_get_params(rl_kobj_limiter(kobj), &p);
	switch (pa->which) {
	case RL_PARAM_RATE:
		val = p.rate;
		break;
	case RL_PARAM_PERIOD:
		val = p.period;
		break;
	case RL_PARAM_BURST:
		val = p.burst;
		break;
	case RL_PARAM_UNLIMITED:
		val = p.unlimited;
		break;
	case RL_PARAM_CONCURRENCY:
		val = p.concurrency;
		break;
	case RL_PARAM_FAIRNESS:
		val = p.fairness;
		break;
	case RL_PARAM_CATCHUP:
		val = p.catchup;
		break;
	case RL_PARAM_BACKLOG:
		val = p.backlog;
		break;
	}
	return sysfs_emit(buf, "%llu\n", val);
}

static ssize_t rl_param_store(struct kobject *kobj,
			      struct kobj_attribute *attr, const char *buf,
			      size_t count)
{
	struct rl_param_attr *pa = container_of(attr, struct rl_param_attr,
						kattr);
	u64 val;
	int ret;

	/* Digits only, as the ABI says: kstrtou64() would take a '+'. */
	if (!isdigit(buf[0]) || kstrtou64(buf, 10, &val))
		return -EINVAL;
	ret = rl_limiter_set_param(rl_kobj_limiter(kobj), pa->which, val);
	return ret ?: count;
}

#define RL_PARAM_ATTR(_name, _which)					\
static struct rl_param_attr rl_attr_##_name = {				\
	.kattr = {							\
		.attr = { .name = #_name, .mode = 0644 },		\
		.show = rl_param_show,					\
		.store = rl_param_store,				\
	},								\
	.which = _which,						\
}

RL_PARAM_ATTR(rate, RL_PARAM_RATE);
RL_PARAM_ATTR(period_ns, RL_PARAM_PERIOD);
RL_PARAM_ATTR(burst, RL_PARAM_BURST);
RL_PARAM_ATTR(unlimited, RL_PARAM_UNLIMITED);
RL_PARAM_ATTR(concurrency, RL_PARAM_CONCURRENCY);
RL_PARAM_ATTR(fairness, RL_PARAM_FAIRNESS);
RL_PARAM_ATTR(catchup, RL_PARAM_CATCHUP);
RL_PARAM_ATTR(backlog, RL_PARAM_BACKLOG);

/* Statistics, as in struct rl_stats: one show, told apart by offset. */

struct rl_stat_attr {
	struct kobj_attribute kattr;
	size_t offset;
};

static ssize_t rl_stat_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	struct rl_stat_attr *sa = container_of(attr, struct rl_stat_attr,
					       kattr);
	struct rl_stats st = {};

	rl_limiter_get_stats(rl_kobj_limiter(kobj), &st);
	return sysfs_emit(buf, "%llu\n", *(u64 *)((char *)&st + sa->offset));
}

#define RL_STAT_ATTR(_name)						\
static struct rl_stat_attr rl_attr_##_name = {				\
	.kattr = {							\
		.attr = { .name = #_name, .mode = 0444 },		\
		.show = rl_stat_show,					\
	},								\
	.offset = offsetof(struct rl_stats, _name),			\
}

RL_STAT_ATTR(granted);
RL_STAT_ATTR(requests);
RL_STAT_ATTR(immediate);
RL_STAT_ATTR(waited);
RL_STAT_ATTR(wait_ns_total);
RL_STAT_ATTR(wait_ns_max);
RL_STAT_ATTR(timeouts);
RL_STAT_ATTR(interrupted);
RL_STAT_ATTR(rejected);
RL_STAT_ATTR(waiters);
RL_STAT_ATTR(available);
RL_STAT_ATTR(held);
RL_STAT_ATTR(refunded);

/* Identity and clients. */

static ssize_t clients_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  READ_ONCE(rl_kobj_limiter(kobj)->nclients));
}

struct rl_client_list {
	char *buf;
	int len;
};

/* Emit one line of client_list; false once the page is full. */
static bool rl_client_line(const struct rl_client *client, void *arg)
{
	struct rl_client_list *cl = arg;

	cl->len += sysfs_emit_at(cl->buf, cl->len,
				 "%d %s %llu %llu %u %u %llu\n",
				 client->tgid, client->comm, client->granted,
				 client->held, client->level + 1,
				 client->weight, client->cap);
	return cl->len < PAGE_SIZE - 1;
}

/*
 * One line per client: "PID COMM GRANTED HELD PRIORITY WEIGHT CAP"; the
 * list stops at a full page.
 */
static ssize_t client_list_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	struct rl_client_list cl = { .buf = buf };

	rl_limiter_walk_clients(rl_kobj_limiter(kobj), rl_client_line, &cl);
	return cl.len;
}

static ssize_t backlog_tokens_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	struct rl_stats st = {};

	rl_limiter_get_stats(rl_kobj_limiter(kobj), &st);
	return sysfs_emit(buf, "%llu\n", st.backlog);
}

/*
 * One line per non-empty bucket: "FLOOR_NS COUNT", where the bucket of a
 * wait w holds the waits of fls64(w): 0, then 2^(k-1) .. 2^k - 1 ns.
 */
static ssize_t wait_histogram_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	struct rl_snapshot s;
	int i, len = 0;

	rl_limiter_snapshot(rl_kobj_limiter(kobj), &s);
	for (i = 0; i < RL_HIST_BUCKETS; i++)
		if (s.counters.hist[i])
			len += sysfs_emit_at(buf, len, "%llu %llu\n",
					     i ? 1ULL << (i - 1) : 0,
					     s.counters.hist[i]);
	return len;
}

static ssize_t owner_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  from_kuid_munged(&init_user_ns,
					   rl_kobj_limiter(kobj)->uid));
}

static ssize_t group_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  from_kgid_munged(&init_user_ns,
					   rl_kobj_limiter(kobj)->gid));
}

static ssize_t mode_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%04o\n", rl_kobj_limiter(kobj)->mode);
}

static ssize_t persistent_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	/*
	 * No rl_registry_lock: removing the name holds it while waiting for
	 * sysfs readers to leave.
	 */
	return sysfs_emit(buf, "%d\n",
			  READ_ONCE(rl_kobj_limiter(kobj)->persistent));
}

static struct kobj_attribute rl_attr_clients = __ATTR_RO(clients);
static struct kobj_attribute rl_attr_client_list = __ATTR_RO(client_list);
static struct kobj_attribute rl_attr_backlog_tokens =
	__ATTR_RO(backlog_tokens);
static struct kobj_attribute rl_attr_wait_histogram =
	__ATTR_RO(wait_histogram);
static struct kobj_attribute rl_attr_owner = __ATTR_RO(owner);
static struct kobj_attribute rl_attr_group = __ATTR_RO(group);
static struct kobj_attribute rl_attr_mode = __ATTR_RO(mode);
static struct kobj_attribute rl_attr_persistent = __ATTR_RO(persistent);

static struct attribute *rl_limiter_attrs[] = {
	&rl_attr_rate.kattr.attr,
	&rl_attr_period_ns.kattr.attr,
	&rl_attr_burst.kattr.attr,
	&rl_attr_unlimited.kattr.attr,
	&rl_attr_concurrency.kattr.attr,
	&rl_attr_fairness.kattr.attr,
	&rl_attr_catchup.kattr.attr,
	&rl_attr_backlog.kattr.attr,
	&rl_attr_granted.kattr.attr,
	&rl_attr_requests.kattr.attr,
	&rl_attr_immediate.kattr.attr,
	&rl_attr_waited.kattr.attr,
	&rl_attr_wait_ns_total.kattr.attr,
	&rl_attr_wait_ns_max.kattr.attr,
	&rl_attr_timeouts.kattr.attr,
	&rl_attr_interrupted.kattr.attr,
	&rl_attr_rejected.kattr.attr,
	&rl_attr_waiters.kattr.attr,
	&rl_attr_available.kattr.attr,
	&rl_attr_held.kattr.attr,
	&rl_attr_refunded.kattr.attr,
	&rl_attr_backlog_tokens.attr,
	&rl_attr_wait_histogram.attr,
	&rl_attr_clients.attr,
	&rl_attr_client_list.attr,
	&rl_attr_owner.attr,
	&rl_attr_group.attr,
	&rl_attr_mode.attr,
	&rl_attr_persistent.attr,
	NULL,
};
ATTRIBUTE_GROUPS(rl_limiter);

static void rl_kobj_release(struct kobject *kobj)
{
	rl_limiter_destroy(rl_kobj_limiter(kobj));
}

/* The files of a limiter belong to its owner, who may tune it. */
static void rl_kobj_get_ownership(rl_ownership_const struct kobject *kobj,
				  kuid_t *uid, kgid_t *gid)
{
	const struct rl_limiter *lim;

	lim = container_of(kobj, struct rl_limiter, kobj);
	*uid = lim->uid;
	*gid = lim->gid;
}

static const struct kobj_type rl_ktype = {
	.release = rl_kobj_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = rl_limiter_groups,
	.get_ownership = rl_kobj_get_ownership,
};

/**
 * rl_sysfs_add() - create /sys/kernel/ratelimit/<name>
 * @lim: a new named limiter
 *
 * Return: 0, or a negative errno after freeing @lim.
 */
int rl_sysfs_add(struct rl_limiter *lim)
{
	int ret;

	ret = kobject_init_and_add(&lim->kobj, &rl_ktype, rl_root, "%s",
				   lim->name);
	if (ret)
		kobject_put(&lim->kobj);
	return ret;
}

/**
 * rl_sysfs_del() - remove /sys/kernel/ratelimit/<name>
 * @lim: a named limiter; returns once no sysfs access to it runs
 */
void rl_sysfs_del(struct rl_limiter *lim)
{
	kobject_del(&lim->kobj);
}

/**
 * rl_sysfs_put() - free a named limiter
 * @lim: a named limiter whose directory was removed
 */
void rl_sysfs_put(struct rl_limiter *lim)
{
	kobject_put(&lim->kobj);
}

/* Global files. */

static ssize_t count_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%d\n", rl_named_count());
}

static ssize_t version_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%d\n", RL_ABI_VERSION);
}

static ssize_t features_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf,
			  "unlimited nonblock predict named sysfs priority fair-share cap concurrency refund catchup\n");
}

static struct kobj_attribute rl_attr_count = __ATTR_RO(count);
static struct kobj_attribute rl_attr_version = __ATTR_RO(version);
static struct kobj_attribute rl_attr_features = __ATTR_RO(features);

static struct attribute *rl_root_attrs[] = {
	&rl_attr_count.attr,
	&rl_attr_version.attr,
	&rl_attr_features.attr,
	NULL,
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
