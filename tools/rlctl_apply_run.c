// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_apply_run.c - the third step of "rlctl apply" (rlctl_apply.c):
 * make the planned changes, removals first, and print one line for each.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include "rlctl.h"
#include "rlctl_apply_run.h"
#include "rlctl_conf.h"

static void fmt_rate(const struct rl_config *cfg, char *buf, size_t len)
{
	struct rl_config r = {
		.rate = cfg->rate,
		.period_ns = cfg->period_ns,
	};

	if (rl_format_rate(&r, buf, len) < 0)
		snprintf(buf, len, "?");
}

static void field(bool *first, const char *key, const char *from,
		  const char *to)
{
	printf("%s %s ", *first ? ":" : ",", key);
	if (from)
		printf("%s -> ", from);
	fputs(to, stdout);
	*first = false;
}

static void field_u64(bool *first, const char *key, const uint64_t *from,
		      uint64_t to)
{
	char f[24], t[24];

	snprintf(t, sizeof(t), "%llu", (unsigned long long)to);
	if (from)
		snprintf(f, sizeof(f), "%llu", (unsigned long long)*from);
	field(first, key, from ? f : NULL, t);
}

/* Flag @k of @want, when it differs from @have's, or is set without @have. */
static void print_flag(bool *first, const struct rlk *k,
		       const struct rl_config *have,
		       const struct rl_config *want)
{
	uint64_t to = rlk_get(k, want);

	if (have ? rlk_get(k, have) == to : !to)
		return;
	field(first, k->name, have ? (to ? "no" : "yes") : NULL,
	      to ? "yes" : "no");
}

/*
 * The limits of @want: the fields that differ from @have when @have is
 * given, else rate and burst and the others not at what 0 asks for
 * (burst's, derived, never is).
 */
static void print_config(const struct rl_config *have,
			 const struct rl_config *want, bool *first)
{
	bool hu = have && (have->flags & RL_CONFIG_UNLIMITED);
	bool wu = want->flags & RL_CONFIG_UNLIMITED;
	char f[RL_RATE_STRLEN], t[RL_RATE_STRLEN];
	const struct rlk *k;
	uint64_t from, to;
	size_t i;

	fmt_rate(want, t, sizeof(t));
	if (have)
		fmt_rate(have, f, sizeof(f));
	if (!have || strcmp(f, t))
		field(first, "rate", have ? f : NULL, t);
	if (have ? hu != wu : wu)
		field(first, "unlimited", have ? (hu ? "yes" : "no") : NULL,
		      wu ? "yes" : "no");
	for (i = 0; i < rlctl_nkeys; i++) {
		k = &rlctl_keys[i];
		if (k->kind == RLK_FLAG && k != &rlctl_keys[RLK_UNLIMITED]) {
			print_flag(first, k, have, want);
			continue;
		}
		if (k->kind != RLK_AMOUNT && k->kind != RLK_U64)
			continue;
		from = have ? rlk_get(k, have) : 0;
		to = rlk_get(k, want);
		if (have ? from == to : to == k->dflt)
			continue;
		field_u64(first, k->name, have ? &from : NULL, to);
	}
}

/* The owner, group and mode that RL_IOC_SET_PERM changes. */
static void print_perm(const struct item *it, bool *first)
{
	const struct rlconf_limiter *l = it->lim;
	char f[8], t[8];

	if (it->perm & RL_PERM_MODE) {
		snprintf(f, sizeof(f), "%04llo", it->owner.mode);
		snprintf(t, sizeof(t), "%04o", l->mode);
		field(first, "mode", f, t);
	}
	if (it->perm & RL_PERM_UID)
		field_u64(first, "owner",
			  &(uint64_t){ it->owner.uid }, l->uid);
	if (it->perm & RL_PERM_GID)
		field_u64(first, "group",
			  &(uint64_t){ it->owner.gid }, l->gid);
}

static const char *item_name(const struct item *it)
{
	return it->lim ? it->lim->name : it->removed;
}

static void print_item(const struct item *it, bool dry_run)
{
	static const char *const done[A_NR] = {
		"removed", "changed", "created" };
	static const char *const would[A_NR] = {
		"would remove", "would change", "would create" };
	const struct rlconf_limiter *l = it->lim;
	bool first = true;
	char mode[8];

	printf("%s %s", (dry_run ? would : done)[it->what], item_name(it));
	if (it->what == A_CHANGE) {
		print_config(&it->have, &it->want, &first);
		print_perm(it, &first);
	}
	if (it->what == A_CREATE) {
		print_config(NULL, &it->want, &first);
		snprintf(mode, sizeof(mode), "%04o", l->mode);
		field(&first, "mode", NULL, mode);
		field_u64(&first, "owner", NULL, l->key_line[RLCONF_OWNER] ?
			  l->uid : geteuid());
		field_u64(&first, "group", NULL, l->key_line[RLCONF_GROUP] ?
			  l->gid : getegid());
	}
	putchar('\n');
}

#define WHY_BUSY \
	"clients attached meanwhile, and the concurrency would go between 0 and non-zero: stop them, or remove it and apply again"
#define WHY_NOTTY \
	"the module cannot change owner, group or mode in place (too old): remove it and apply again"

static const char *why(int err)
{
	switch (err) {
	case -EACCES:
	case -EPERM:
		return "permission denied";
	case -EEXIST:
		return "it exists (created meanwhile)";
	case -ENOENT:
		return "it no longer exists";
	case -ENOSPC:
		return "too many named limiters";
	case -EDQUOT:
		return "too many named limiters of this owner";
	case -EBUSY:
		return WHY_BUSY;
	case -ENOTTY:
		return WHY_NOTTY;
	default:
		return strerror(-err);
	}
}

/*
 * Take the file system ids that a limiter created now gets as owner and
 * group: those of the section, when it says. False when not allowed;
 * become_self() undoes it in any case.
 */
bool become_owner(const struct rlconf_limiter *l)
{
	bool ok = true;

	if (l->key_line[RLCONF_GROUP]) {
		setfsgid(l->gid);
		ok = (uint32_t)setfsgid(-1) == l->gid;
	}
	if (ok && l->key_line[RLCONF_OWNER]) {
		setfsuid(l->uid);
		ok = (uint32_t)setfsuid(-1) == l->uid;
	}
	return ok;
}

void become_self(void)
{
	setfsuid(geteuid());
	setfsgid(getegid());
}

static int run_item(const struct item *it)
{
	const struct rlconf_limiter *l = it->lim;
	int fd, ret;

	if (it->what == A_REMOVE)
		return rl_unlink(-1, it->removed);
	fd = rl_open(0);
	if (fd < 0)
		return fd;
	if (it->what == A_CHANGE) {
		ret = rl_attach(fd, l->name, 0, 0, NULL);
		if (!ret && memcmp(&it->have, &it->want, sizeof(it->want)))
			ret = rl_set_config(fd, &it->want);
		if (!ret && it->perm)
			ret = rl_set_perm(fd, l->uid, l->gid, l->mode,
					  it->perm);
	} else if (become_owner(l)) {
		ret = rl_attach(fd, l->name, RL_ATTACH_CREATE |
				RL_ATTACH_EXCL | RL_ATTACH_PERSIST, l->mode,
				&it->want);
	} else {
		ret = -EPERM;
	}
	become_self();
	rl_close(fd);
	return ret;
}

int run_plan(const struct item *items, size_t n, bool dry_run)
{
	static const char *const verb[A_NR] = { "remove", "change", "create" };
	size_t i, done = 0;
	int what, ret;

	for (what = 0; what < A_NR; what++) {
		for (i = 0; i < n; i++) {
			if (items[i].what != (enum action)what)
				continue;
			ret = dry_run ? 0 : run_item(&items[i]);
			if (ret) {
				fflush(stdout);
				say("cannot %s '%s': %s", verb[what],
				    item_name(&items[i]), why(ret));
				say("stopped: %zu of %zu changes made (printed above)",
				    done, n);
				return 1;
			}
			print_item(&items[i], dry_run);
			done++;
		}
	}
	if (!n)
		printf("rlctl: apply: nothing to change\n");
	return 0;
}

