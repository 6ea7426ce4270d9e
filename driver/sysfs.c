// SPDX-License-Identifier: GPL-2.0-only
/*
 * /sys/kernel/ratelimit/: global files, and one directory of five files per
 * named limiter; formats: Documentation/ABI/testing/sysfs-kernel-ratelimit.
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
#include "keys.h"
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
int rl_sysfs_chown(struct rl_dir *dir, kuid_t uid, kgid_t gid)
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
