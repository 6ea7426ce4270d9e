// SPDX-License-Identifier: GPL-2.0-only
/*
 * /sys/kernel/ratelimit/: global files, and one directory per named limiter
 * owned by its owner; formats: Documentation/ABI/testing/sysfs-kernel-ratelimit.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/ctype.h>
#include <linux/kobject.h>
#include <linux/kstrtox.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "compat.h"
#include "named.h"
#include "limiter.h"
#include "ratelimit.h"
#include "sysfs.h"
#include "tree.h"

/* /sys/kernel/ratelimit/<name> */
struct rl_dir {
	struct kobject kobj;		/* the directory; its release frees this */
	struct rl_limiter *lim;		/* the named limiter shown; a reference */
};

static inline struct rl_limiter *rl_kobj_limiter(struct kobject *kobj)
{
	return container_of(kobj, struct rl_dir, kobj)->lim;
}

/* A file of a limiter's directory; @arg tells files of one show apart. */
struct rl_attr {
	struct kobj_attribute kattr;
	size_t arg;
};

static size_t rl_attr_arg(struct kobj_attribute *attr)
{
	return container_of(attr, struct rl_attr, kattr)->arg;
}

#define RL_ATTR(_name, _mode, _show, _store, _arg)			\
static struct rl_attr rl_attr_##_name = {				\
	.kattr = __ATTR(_name, _mode, _show, _store),			\
	.arg = _arg,							\
}

#define RL_ATTR_RO(_name)	RL_ATTR(_name, 0444, _name##_show, NULL, 0)
#define RL_A(_name)		(&rl_attr_##_name.kattr.attr)
/* A u64 field of struct rl_stats (stat) or struct rl_demand (demand). */
#define RL_U64_ATTR(_name, _kind, _field)				\
	RL_ATTR(_name, 0444, rl_##_kind##_show, NULL, offsetof(struct rl_##_kind, _field))

/* The tunables: one file per row of tunables.h, told apart by the row. */
enum {
#define RL_TUNABLE(_name, ...)	RL_ROW_##_name,
#include "tunables.h"
#undef RL_TUNABLE
};

static ssize_t rl_param_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct rl_params p;

	rl_limiter_get_params(rl_kobj_limiter(kobj), &p);
	return sysfs_emit(buf, "%llu\n", rl_tunable_get(&rl_tunables[rl_attr_arg(attr)], &p));
}

static ssize_t rl_param_store(struct kobject *kobj, struct kobj_attribute *attr,
			      const char *buf, size_t count)
{
	u64 val;
	int ret;

	/* Digits only, as the ABI says: kstrtou64() would take a '+'. */
	if (!isdigit(buf[0]) || kstrtou64(buf, 10, &val))
		return -EINVAL;
	ret = rl_limiter_set_param(rl_kobj_limiter(kobj), &rl_tunables[rl_attr_arg(attr)], val);
	return ret ?: count;
}

/* Mode 0000 here: each file has its row's (rl_param_mode()). */
static struct rl_attr rl_param_files[] = {
#define RL_TUNABLE(_name, ...)						\
	[RL_ROW_##_name] = {						\
		.kattr = __ATTR(_name, 0000, rl_param_show, rl_param_store),	\
		.arg = RL_ROW_##_name,					\
	},
#include "tunables.h"
#undef RL_TUNABLE
};

static struct attribute *rl_param_attrs[] = {
#define RL_TUNABLE(_name, ...)	(&rl_param_files[RL_ROW_##_name].kattr.attr),
#include "tunables.h"
#undef RL_TUNABLE
	NULL,
};

static umode_t rl_param_mode(struct kobject *kobj, struct attribute *attr, int i)
{
	return rl_tunables[i].mode;
}

static const struct attribute_group rl_param_group = {
	.attrs = rl_param_attrs,
	.is_visible = rl_param_mode,
};

static ssize_t rl_stats_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct rl_stats st = {};

	rl_limiter_get_stats(rl_kobj_limiter(kobj), &st);
	return sysfs_emit(buf, "%llu\n", *(u64 *)((char *)&st + rl_attr_arg(attr)));
}

static ssize_t rl_demand_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct rl_demand d = {};

	rl_limiter_get_demand(rl_kobj_limiter(kobj), &d);
	return sysfs_emit(buf, "%llu\n", *(u64 *)((char *)&d + rl_attr_arg(attr)));
}

RL_U64_ATTR(granted, stats, granted);
RL_U64_ATTR(requests, stats, requests);
RL_U64_ATTR(immediate, stats, immediate);
RL_U64_ATTR(waited, stats, waited);
RL_U64_ATTR(wait_ns_total, stats, wait_ns_total);
RL_U64_ATTR(wait_ns_max, stats, wait_ns_max);
RL_U64_ATTR(timeouts, stats, timeouts);
RL_U64_ATTR(interrupted, stats, interrupted);
RL_U64_ATTR(rejected, stats, rejected);
RL_U64_ATTR(waiters, stats, waiters);
RL_U64_ATTR(available, stats, available);
RL_U64_ATTR(held, stats, held);
RL_U64_ATTR(refunded, stats, refunded);
RL_U64_ATTR(backlog_tokens, stats, backlog);
RL_U64_ATTR(asked, demand, asked);
RL_U64_ATTR(refused, demand, refused);
RL_U64_ATTR(queued, demand, queued);
RL_U64_ATTR(busy_ns, demand, busy_ns);

static ssize_t lease_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	u64 left;
	pid_t pid;

	if (!rl_limiter_get_lease(rl_kobj_limiter(kobj), &left, &pid))
		return sysfs_emit(buf, "none\n");
	return sysfs_emit(buf, "%llu %d\n", left, pid);
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

enum { RL_SHOW_CLIENTS, RL_SHOW_OWNER, RL_SHOW_GROUP, RL_SHOW_MODE, RL_SHOW_PERSISTENT };

/*
 * One number of the limiter. Owner, group, mode and persistent change under
 * the registry lock, not taken here: removing the name holds it while
 * waiting for sysfs readers.
 */
static ssize_t rl_field_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	struct rl_limiter *lim = rl_kobj_limiter(kobj);

	switch (rl_attr_arg(attr)) {
	case RL_SHOW_CLIENTS:
		return sysfs_emit(buf, "%llu\n", READ_ONCE(lim->nclients));
	case RL_SHOW_OWNER:
		return sysfs_emit(buf, "%u\n",
				  from_kuid_munged(&init_user_ns, READ_ONCE(lim->uid)));
	case RL_SHOW_GROUP:
		return sysfs_emit(buf, "%u\n",
				  from_kgid_munged(&init_user_ns, READ_ONCE(lim->gid)));
	case RL_SHOW_MODE:
		return sysfs_emit(buf, "%04o\n", READ_ONCE(lim->mode));
	default:
		return sysfs_emit(buf, "%d\n", READ_ONCE(lim->persistent));
	}
}

/* parent, weight and children: a limiter's place in its tree. */
static ssize_t rl_tree_attr_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return rl_tree_show(rl_kobj_limiter(kobj), rl_attr_arg(attr), buf);
}

/* A name moves the limiter under that one, keeping its weight; "" to a root. */
static ssize_t parent_store(struct kobject *kobj, struct kobj_attribute *attr,
			    const char *buf, size_t count)
{
	char name[RL_NAME_MAX];
	int ret;

	ret = rl_name_from_sysfs(name, buf, count);
	if (!ret)
		ret = rl_named_set_parent_sysfs(rl_kobj_limiter(kobj), name, 0);
	return ret ?: count;
}

/* A new weight, 1..RL_WEIGHT_MAX, digits only, under the same parent. */
static ssize_t weight_store(struct kobject *kobj, struct kobj_attribute *attr,
			    const char *buf, size_t count)
{
	u32 weight;
	int ret;

	if (!isdigit(buf[0]) || kstrtou32(buf, 10, &weight) || !weight || weight > RL_WEIGHT_MAX)
		return -EINVAL;
	ret = rl_named_set_parent_sysfs(rl_kobj_limiter(kobj), NULL, weight);
	return ret ?: count;
}

RL_ATTR(parent, 0644, rl_tree_attr_show, parent_store, RL_TREE_SHOW_PARENT);
RL_ATTR(weight, 0644, rl_tree_attr_show, weight_store, RL_TREE_SHOW_WEIGHT);
RL_ATTR(children, 0444, rl_tree_attr_show, NULL, RL_TREE_SHOW_CHILDREN);
RL_ATTR(clients, 0444, rl_field_show, NULL, RL_SHOW_CLIENTS);
RL_ATTR(owner, 0444, rl_field_show, NULL, RL_SHOW_OWNER);
RL_ATTR(group, 0444, rl_field_show, NULL, RL_SHOW_GROUP);
RL_ATTR(mode, 0444, rl_field_show, NULL, RL_SHOW_MODE);
RL_ATTR(persistent, 0444, rl_field_show, NULL, RL_SHOW_PERSISTENT);
RL_ATTR_RO(client_list);
RL_ATTR_RO(wait_histogram);
RL_ATTR_RO(lease);

static struct attribute *rl_limiter_attrs[] = {
	RL_A(granted), RL_A(requests), RL_A(immediate), RL_A(waited),
	RL_A(wait_ns_total), RL_A(wait_ns_max), RL_A(timeouts), RL_A(interrupted),
	RL_A(rejected), RL_A(waiters), RL_A(available), RL_A(held), RL_A(refunded),
	RL_A(backlog_tokens), RL_A(wait_histogram), RL_A(clients), RL_A(client_list),
	RL_A(owner), RL_A(group), RL_A(mode), RL_A(persistent),
	RL_A(asked), RL_A(refused), RL_A(queued), RL_A(busy_ns), RL_A(lease),
	RL_A(parent), RL_A(weight), RL_A(children),
	NULL,
};

static const struct attribute_group rl_limiter_group = {
	.attrs = rl_limiter_attrs,
};

static const struct attribute_group *rl_limiter_groups[] = {
	&rl_param_group,
	&rl_limiter_group,
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

/* The files of a limiter belong to its owner; asked under the registry lock. */
static void rl_kobj_get_ownership(rl_ownership_const struct kobject *kobj, kuid_t *uid, kgid_t *gid)
{
	const struct rl_dir *dir = container_of(kobj, struct rl_dir, kobj);

	*uid = dir->lim->uid;
	*gid = dir->lim->gid;
}

static const struct kobj_type rl_ktype = {
	.release = rl_kobj_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = rl_limiter_groups,
	.get_ownership = rl_kobj_get_ownership,
};

/**
 * rl_sysfs_add() - create /sys/kernel/ratelimit/<name>, holding a reference to @lim
 * @lim: a new named limiter, its identity set
 * Return: the directory, or an ERR_PTR() with @lim untouched.
 */
struct rl_dir *rl_sysfs_add(struct rl_limiter *lim)
{
	struct rl_dir *dir;
	int ret;

	dir = kzalloc(sizeof(*dir), GFP_KERNEL_ACCOUNT);
	if (!dir)
		return ERR_PTR(-ENOMEM);
	rl_limiter_get(lim);
	dir->lim = lim;
	ret = kobject_init_and_add(&dir->kobj, &rl_ktype, rl_root, "%s", lim->name);
	if (!ret)
		return dir;
	/* Its release drops the reference and frees @dir. */
	kobject_put(&dir->kobj);
	return ERR_PTR(ret);
}

/**
 * rl_sysfs_del() - remove /sys/kernel/ratelimit/<name>
 * @dir: the directory, from rl_sysfs_add()
 *
 * Returns once no sysfs callback of @dir runs; drops its reference, which
 * may free the limiter.
 */
void rl_sysfs_del(struct rl_dir *dir)
{
	kobject_del(&dir->kobj);
	kobject_put(&dir->kobj);
}

/**
 * rl_sysfs_chown() - give a limiter's directory and files to a new owner
 * @dir: the directory, kept by the registry lock held
 * @uid: its new owner
 * @gid: its new group
 * Return: 0 or -ENOMEM, perhaps with some files changed: the caller changes
 * them back.
 */
int rl_sysfs_chown(struct rl_dir *dir, kuid_t uid, kgid_t gid)
{
	return sysfs_change_owner(&dir->kobj, uid, gid);
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
