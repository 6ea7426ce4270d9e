// SPDX-License-Identifier: GPL-2.0-only
/*
 * sysfs of the ratelimit module: /sys/kernel/ratelimit/ with global
 * files, and one directory per named limiter, owned by the limiter's
 * owner (Documentation/ABI/testing/sysfs-kernel-ratelimit). The files of
 * a limiter's directory are in sysfs_files.c.
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
#include "ratelimit.h"
#include "sysfs.h"

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

	ret = rl_sysfs_files_init();
	if (ret)
		return ret;
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
	rl_sysfs_files_exit();
	return ret;
}

/**
 * rl_sysfs_exit() - remove /sys/kernel/ratelimit, once empty
 */
void rl_sysfs_exit(void)
{
	sysfs_remove_group(rl_root, &rl_root_group);
	kobject_put(rl_root);
	rl_sysfs_files_exit();
}
