// SPDX-License-Identifier: GPL-2.0-only
/*
 * sysfs of the ratelimit module: /sys/kernel/ratelimit/ with global
 * files, and one directory per named limiter, owned by the limiter's
 * owner (Documentation/ABI/testing/sysfs-kernel-ratelimit). A limiter's
 * directory holds the tunables (one file per row of rl_tunables), the
 * statistics and demand, the lease, the clients, the owner and mode, and
 * the limiter's place in a tree.
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

/*
 * Tunables: one file per row of rl_tunables, made by rl_sysfs_init(); one
 * show and one store, told apart by the row.
 */

struct rl_param_attr {
	struct kobj_attribute kattr;
	const struct rl_tunable *t;
};

static struct rl_param_attr *rl_param_attrs;
static struct attribute **rl_param_attr_list;

static ssize_t rl_param_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	struct rl_param_attr *pa = container_of(attr, struct rl_param_attr,
						kattr);
	struct rl_params p;

	rl_limiter_get_params(rl_kobj_limiter(kobj), &p);
	return sysfs_emit(buf, "%llu\n", rl_tunable_get(pa->t, &p));
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
	ret = rl_limiter_set_param(rl_kobj_limiter(kobj), pa->t, val);
	return ret ?: count;
}

/* Make the files of the tunables, for rl_param_group. */
static int rl_param_attrs_init(void)
{
	struct rl_param_attr *pa;
	unsigned int i, n = 0;

	while (rl_tunables[n].name)
		n++;
	rl_param_attrs = kcalloc(n, sizeof(*rl_param_attrs), GFP_KERNEL);
	if (!rl_param_attrs)
		return -ENOMEM;
	rl_param_attr_list = kcalloc(n + 1, sizeof(*rl_param_attr_list),
				     GFP_KERNEL);
	if (!rl_param_attr_list)
		goto err_free_attrs;
	for (i = 0; i < n; i++) {
		pa = &rl_param_attrs[i];
		pa->t = &rl_tunables[i];
		sysfs_attr_init(&pa->kattr.attr);
		pa->kattr.attr.name = pa->t->name;
		pa->kattr.attr.mode = pa->t->mode;
		pa->kattr.show = rl_param_show;
		pa->kattr.store = rl_param_store;
		rl_param_attr_list[i] = &pa->kattr.attr;
	}
	return 0;

err_free_attrs:
	kfree(rl_param_attrs);
	return -ENOMEM;
}

static void rl_param_attrs_exit(void)
{
	kfree(rl_param_attr_list);
	kfree(rl_param_attrs);
}

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

/* Demand, as in struct rl_demand, and the lease (limiter.c). */

static ssize_t rl_demand_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	struct rl_stat_attr *sa = container_of(attr, struct rl_stat_attr,
					       kattr);
	struct rl_demand d = {};

	rl_limiter_get_demand(rl_kobj_limiter(kobj), &d);
	return sysfs_emit(buf, "%llu\n", *(u64 *)((char *)&d + sa->offset));
}

#define RL_DEMAND_ATTR(_name)						\
static struct rl_stat_attr rl_attr_##_name = {				\
	.kattr = {							\
		.attr = { .name = #_name, .mode = 0444 },		\
		.show = rl_demand_show,					\
	},								\
	.offset = offsetof(struct rl_demand, _name),			\
}

RL_DEMAND_ATTR(asked);
RL_DEMAND_ATTR(refused);
RL_DEMAND_ATTR(queued);
RL_DEMAND_ATTR(busy_ns);

/* "none", or "REMAINING_NS HOLDER_PID". */
static ssize_t lease_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	u64 left;
	pid_t pid;

	if (!rl_limiter_get_lease(rl_kobj_limiter(kobj), &left, &pid))
		return sysfs_emit(buf, "none\n");
	return sysfs_emit(buf, "%llu %d\n", left, pid);
}

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
	u64 hist[RL_HIST_BUCKETS];
	int i, len = 0;

	rl_limiter_get_hist(rl_kobj_limiter(kobj), hist);
	for (i = 0; i < RL_HIST_BUCKETS; i++)
		if (hist[i])
			len += sysfs_emit_at(buf, len, "%llu %llu\n",
					     i ? 1ULL << (i - 1) : 0, hist[i]);
	return len;
}

/* Owner, group and mode change under the registry lock (named.c). */
static ssize_t owner_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	kuid_t uid = READ_ONCE(rl_kobj_limiter(kobj)->uid);

	return sysfs_emit(buf, "%u\n", from_kuid_munged(&init_user_ns, uid));
}

static ssize_t group_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	kgid_t gid = READ_ONCE(rl_kobj_limiter(kobj)->gid);

	return sysfs_emit(buf, "%u\n", from_kgid_munged(&init_user_ns, gid));
}

static ssize_t mode_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%04o\n",
			  READ_ONCE(rl_kobj_limiter(kobj)->mode));
}

static ssize_t persistent_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	/*
	 * No registry lock: removing the name holds it while waiting for
	 * sysfs readers to leave.
	 */
	return sysfs_emit(buf, "%d\n",
			  READ_ONCE(rl_kobj_limiter(kobj)->persistent));
}

/* A limiter's place in its tree (rl_tree_show()). */

static ssize_t parent_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	return rl_tree_show(rl_kobj_limiter(kobj), RL_TREE_SHOW_PARENT, buf);
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

static ssize_t weight_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	return rl_tree_show(rl_kobj_limiter(kobj), RL_TREE_SHOW_WEIGHT, buf);
}

/* A new weight, 1..RL_WEIGHT_MAX, under the same parent. */
static ssize_t weight_store(struct kobject *kobj, struct kobj_attribute *attr,
			    const char *buf, size_t count)
{
	u32 weight;
	int ret;

	/* Digits only, as for the tunables. */
	if (!isdigit(buf[0]) || kstrtou32(buf, 10, &weight) || !weight ||
	    weight > RL_WEIGHT_MAX)
		return -EINVAL;
	ret = rl_named_set_parent_sysfs(rl_kobj_limiter(kobj), NULL, weight);
	return ret ?: count;
}

static ssize_t children_show(struct kobject *kobj,
			     struct kobj_attribute *attr, char *buf)
{
	return rl_tree_show(rl_kobj_limiter(kobj), RL_TREE_SHOW_CHILDREN,
			    buf);
}

static struct kobj_attribute rl_attr_parent = __ATTR_RW(parent);
static struct kobj_attribute rl_attr_weight = __ATTR_RW(weight);
static struct kobj_attribute rl_attr_children = __ATTR_RO(children);
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
static struct kobj_attribute rl_attr_lease = __ATTR_RO(lease);

static struct attribute *rl_limiter_attrs[] = {
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
	&rl_attr_asked.kattr.attr,
	&rl_attr_refused.kattr.attr,
	&rl_attr_queued.kattr.attr,
	&rl_attr_busy_ns.kattr.attr,
	&rl_attr_lease.attr,
	&rl_attr_parent.attr,
	&rl_attr_weight.attr,
	&rl_attr_children.attr,
	NULL,
};

static const struct attribute_group rl_limiter_group = {
	.attrs = rl_limiter_attrs,
};

/* .attrs set by rl_sysfs_init(), before any directory exists. */
static struct attribute_group rl_param_group;

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

/*
 * The files of a limiter belong to its owner, who may tune it; asked when
 * the directory is made, under the registry lock.
 */
static void rl_kobj_get_ownership(rl_ownership_const struct kobject *kobj,
				  kuid_t *uid, kgid_t *gid)
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
 * rl_sysfs_add() - create /sys/kernel/ratelimit/<name>
 * @lim: a new named limiter, its identity set
 *
 * The directory takes a reference to @lim, dropped when it is released
 * after rl_sysfs_del().
 *
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
	ret = kobject_init_and_add(&dir->kobj, &rl_ktype, rl_root, "%s",
				   lim->name);
	if (ret)
		goto err_put_kobj;
	return dir;

err_put_kobj:
	/* Its release drops the reference and frees @dir. */
	kobject_put(&dir->kobj);
	return ERR_PTR(ret);
}

/**
 * rl_sysfs_del() - remove /sys/kernel/ratelimit/<name>
 * @dir: the directory, from rl_sysfs_add()
 *
 * Returns once no sysfs callback of the directory runs any more; drops the
 * caller's reference to @dir, which may free the limiter.
 */
void rl_sysfs_del(struct rl_dir *dir)
{
	kobject_del(&dir->kobj);
	kobject_put(&dir->kobj);
}

/**
 * rl_sysfs_chown() - give a limiter's directory and files to a new owner
 * @dir: the directory, from rl_sysfs_add()
 * @uid: its new owner
 * @gid: its new group
 *
 * Called under the registry lock, which keeps @dir in sysfs; changing the
 * owner of the files waits for no sysfs callback.
 *
 * Return: 0 or a negative errno (-ENOMEM), perhaps with some files
 * changed: the caller changes them back.
 */
int rl_sysfs_chown(struct rl_dir *dir, kuid_t uid, kgid_t gid)
{
	return sysfs_change_owner(&dir->kobj, uid, gid);
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

/*
 * The features of this version, in the order the line has always had;
 * a tunable's word not among them (rl_tunables[].feature) follows them.
 */
static const char *const rl_feature_words[] = {
	"unlimited", "nonblock", "predict", "named", "sysfs", "priority",
	"fair-share", "cap", "concurrency", "refund", "catchup",
};

static bool rl_feature_listed(const char *word, const struct rl_tunable *upto)
{
	const struct rl_tunable *t;

	if (match_string(rl_feature_words, ARRAY_SIZE(rl_feature_words),
			 word) >= 0)
		return true;
	for (t = rl_tunables; t < upto; t++)
		if (t->feature && !strcmp(t->feature, word))
			return true;
	return false;
}

static ssize_t features_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	const struct rl_tunable *t;
	int len = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(rl_feature_words); i++)
		len += sysfs_emit_at(buf, len, "%s%s", i ? " " : "",
				     rl_feature_words[i]);
	for (t = rl_tunables; t->name; t++)
		if (t->feature && !rl_feature_listed(t->feature, t))
			len += sysfs_emit_at(buf, len, " %s", t->feature);
	if (rl_uring_features() & RL_FEATURE_URING_CMD)
		len += sysfs_emit_at(buf, len, " io_uring");
	return len + sysfs_emit_at(buf, len, "\n");
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

	ret = rl_param_attrs_init();
	if (ret)
		return ret;
	/* Before any directory exists: rl_limiter_groups is complete now. */
	rl_param_group.attrs = rl_param_attr_list;
	rl_root = kobject_create_and_add("ratelimit", kernel_kobj);
	if (!rl_root) {
		ret = -ENOMEM;
		goto err_files;
	}
	ret = sysfs_create_group(rl_root, &rl_root_group);
	if (ret)
		goto err_put_root;
	return 0;

err_put_root:
	kobject_put(rl_root);
err_files:
	rl_param_attrs_exit();
	return ret;
}

/**
 * rl_sysfs_exit() - remove /sys/kernel/ratelimit, once empty
 */
void rl_sysfs_exit(void)
{
	sysfs_remove_group(rl_root, &rl_root_group);
	kobject_put(rl_root);
	rl_param_attrs_exit();
}
