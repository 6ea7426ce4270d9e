// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_apply.c - "rlctl apply": make the named limiters of the running
 * module match declarative files (ratelimit.d(5)).
 *
 * Three steps, and nothing changes before the third:
 *  1. read every file (rlctl_conf.c); any problem stops here;
 *  2. plan: each section's configuration goes through a private limiter
 *     of our own (SET_CONFIG, GET_CONFIG), which has the module check it
 *     and fill in its defaults, and is compared with the limiter of that
 *     name, read through an fd attached to it (GET_CONFIG) and its sysfs
 *     directory (owner, group, mode, persistent). A limiter that is not
 *     persistent (a program's) is an error, and so is a change the
 *     caller may not make, or a concurrency going between 0 and non-zero
 *     while clients are attached (the module would refuse it: EBUSY);
 *  3. remove (--prune), reconfigure (RL_IOC_SET_CONFIG through an fd
 *     attached to the name: atomic, waiters and tokens kept; owner, group
 *     and mode with RL_IOC_SET_PERM, in place) and create
 *     (RL_IOC_ATTACH with CREATE | EXCL | PERSIST, as the owner and group
 *     of the file), printing one line per change.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rlctl.h"
#include "rlctl_apply_run.h"
#include "rlctl_conf.h"
#include "sysfile.h"
#include "tool.h"

#define CAP_SYS_ADMIN_BIT	21
#define MAY_WRITE_BITS	2

/* One rlctl apply: the files read, the plan made (items), how to run it. */
struct apply {
	struct rlconf conf;
	const char *sysfs;
	bool dry_run;
	bool prune;
	bool admin;		/* CAP_SYS_ADMIN: the module lets us do all */
	int check_fd;		/* our private limiter, for the checks */
	int keyed_fd;		/* the same for keyed sections, or -1 */
	struct item *items;
	size_t n;
	size_t cap;
};

/* --- what the module has -------------------------------------------- */

/* A line of limiter @name's sysfs stat, in @base; -errno on failure. */
static int read_attr(const struct apply *a, const char *name,
		     const char *key, int base, unsigned long long *val)
{
	char path[PATH_MAX], buf[64], *text;
	uint64_t v = 0;
	int ret;

	if (snprintf(path, sizeof(path), "%s/%s/stat", a->sysfs, name) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	text = sysfile_read_all(path, &ret);
	if (!text)
		return ret;
	ret = sysfile_key(text, key, buf, sizeof(buf));
	free(text);
	if (!ret)
		ret = sysfile_parse_u64(buf, base, &v) ? -EIO : 0;
	if (!ret)
		*val = v;
	return ret;
}

static int read_owner(const struct apply *a, const char *name,
		      struct owner *o)
{
	int ret;

	ret = read_attr(a, name, "owner", 10, &o->uid);
	if (!ret)
		ret = read_attr(a, name, "group", 10, &o->gid);
	if (!ret)
		ret = read_attr(a, name, "mode", 8, &o->mode);
	if (!ret)
		ret = read_attr(a, name, "persistent", 10, &o->persistent);
	return ret;
}

/* Whether the effective capabilities hold CAP_SYS_ADMIN. */
static bool is_admin(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	unsigned long long caps;
	char line[256];
	bool found = false;

	if (!f)
		return geteuid() == 0;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &caps) == 1;
	fclose(f);
	return found ? (caps >> CAP_SYS_ADMIN_BIT) & 1 : geteuid() == 0;
}

static bool in_group(unsigned long long gid)
{
	gid_t *groups;
	bool found;
	int i, n;

	if (gid == getegid())
		return true;
	n = getgroups(0, NULL);
	if (n <= 0)
		return false;
	groups = calloc(n, sizeof(*groups));
	if (!groups)
		return false;
	n = getgroups(n, groups);
	for (i = 0, found = false; i < n && !found; i++)
		found = groups[i] == gid;
	free(groups);
	return found;
}

/* The module's rule for reconfiguring through an attached fd. */
static bool may_write(const struct apply *a, const struct owner *o)
{
	unsigned long long mode = o->mode;

	if (a->admin)
		return true;
	if (o->uid == geteuid())
		mode >>= 6;
	else if (in_group(o->gid))
		mode >>= 3;
	return (mode & MAY_WRITE_BITS) == MAY_WRITE_BITS;
}

/* --- the plan ------------------------------------------------------- */

static unsigned int key_line(const struct rlconf_limiter *l,
			     enum rlconf_key key)
{
	return l->key_line[key] ? l->key_line[key] : l->line;
}

#define LERR(a, l, line, ...) \
	rld_error(&(a)->conf.rd, (l)->file, (line), __VA_ARGS__)

static int add_item(struct apply *a, const struct item *it)
{
	struct item *items;
	size_t cap;

	if (a->n == a->cap) {
		cap = a->cap ? a->cap * 2 : 16;
		items = realloc(a->items, cap * sizeof(*items));
		if (!items)
			return -ENOMEM;
		a->items = items;
		a->cap = cap;
	}
	a->items[a->n++] = *it;
	return 0;
}

/*
 * What the module would keep of the section's limits; false if refused.
 * A limiter is keyed or not from its creation on: keyed sections are
 * checked on a private limiter of their own.
 */
static bool check_config(struct apply *a, const struct rlconf_limiter *l,
			 struct rl_config *want)
{
	bool keyed = l->cfg.flags & RL_CONFIG_KEYED;
	int fd = a->check_fd, ret;

	if (keyed && a->keyed_fd < 0)
		a->keyed_fd = rl_open(0);
	if (keyed)
		fd = a->keyed_fd;
	*want = l->cfg;
	ret = fd < 0 ? fd : rl_set_config(fd, want);
	if (!ret)
		ret = rl_get_config(fd, want);
	if (ret == -EINVAL)
		LERR(a, l, l->line, "the module refuses the limits of [%s]",
		     l->name);
	else if (ret)
		LERR(a, l, l->line, "cannot check the limits of [%s]: %s",
		     l->name, strerror(-ret));
	return !ret;
}

/*
 * The owner, group and mode the section declares and the limiter lacks go
 * to it->perm, to be set in place (RL_IOC_SET_PERM), as chmod(2) and
 * chown(2) would allow the caller; a limiter that a program created (not
 * persistent) is not apply's to adopt.
 */
static bool check_owner(struct apply *a, const struct rlconf_limiter *l,
			const struct owner *o, struct item *it)
{
	unsigned int errors = a->conf.rd.errors;
	bool owner = a->admin || o->uid == geteuid();

	if (!o->persistent)
		LERR(a, l, l->line,
		     "'%s' exists but is not persistent (a program created it; it ends with its last client): remove it (rlctl rm %s) or let it end, and apply again",
		     l->name, l->name);
	if (o->mode != l->mode) {
		it->perm |= RL_PERM_MODE;
		if (!owner)
			LERR(a, l, key_line(l, RLCONF_MODE),
			     "cannot change the mode of '%s' from %04llo to %04o: only its owner (uid %llu) or root may",
			     l->name, o->mode, l->mode, o->uid);
	}
	if (l->key_line[RLCONF_OWNER] && o->uid != l->uid) {
		it->perm |= RL_PERM_UID;
		if (!a->admin)
			LERR(a, l, key_line(l, RLCONF_OWNER),
			     "cannot change the owner of '%s' from %llu to %u: that takes root",
			     l->name, o->uid, l->uid);
	}
	if (l->key_line[RLCONF_GROUP] && o->gid != l->gid) {
		it->perm |= RL_PERM_GID;
		if (!a->admin && !(owner && in_group(l->gid)))
			LERR(a, l, key_line(l, RLCONF_GROUP),
			     "cannot change the group of '%s' from %llu to %u: only root, or its owner for a group of its own, may",
			     l->name, o->gid, l->gid);
	}
	it->owner = *o;
	return a->conf.rd.errors == errors;
}

/*
 * Clients of limiter @name and of the limiters under it (sysfs "clients"
 * and "children"), or -errno.
 */
static long long count_clients(const struct apply *a, const char *name,
			       int depth)
{
	unsigned long long n;
	char path[PATH_MAX], *kids, *kid, *save;
	long long sum, sub;
	int ret;

	ret = read_attr(a, name, "clients", 10, &n);
	if (ret)
		return ret;
	sum = (long long)n;
	if (depth >= RL_DEPTH_MAX ||
	    snprintf(path, sizeof(path), "%s/%s/children", a->sysfs, name) >=
	    (int)sizeof(path))
		return sum;
	kids = sysfile_read_all(path, &ret);
	if (!kids)	/* a module without trees */
		return ret == -ENOENT ? sum : ret;
	for (kid = strtok_r(kids, "\n", &save); kid && sum >= 0;
	     kid = strtok_r(NULL, "\n", &save)) {
		sub = count_clients(a, kid, depth + 1);
		sum = sub < 0 ? sub : sum + sub;
	}
	free(kids);
	return sum;
}

/*
 * Concurrency may not go between 0 and non-zero while other clients are
 * attached (ratelimit(4)): their acquires would hold permits they never
 * give back, or give back permits they do not hold. The module refuses
 * it (EBUSY); say so now, with what to do, before anything changes.
 */
static bool check_concurrency(struct apply *a, const struct rlconf_limiter *l,
			      const struct item *it)
{
	unsigned int line = key_line(l, (enum rlconf_key)RLK_CONCURRENCY);
	long long n;

	if (!it->have.concurrency == !it->want.concurrency)
		return true;
	n = count_clients(a, l->name, 0);
	if (n < 0) {
		LERR(a, l, line, "cannot count the clients of '%s': %s",
		     l->name, strerror((int)-n));
		return false;
	}
	if (!n)
		return true;
	LERR(a, l, line,
	     "cannot change the concurrency of '%s' from %llu to %llu while %lld client%s attached: %s; stop %s, or remove it (rlctl rm %s) and apply again",
	     l->name, (unsigned long long)it->have.concurrency,
	     (unsigned long long)it->want.concurrency, n,
	     n == 1 ? " is" : "s are",
	     it->want.concurrency ?
	     "they would hold a permit for every token and never give it back" :
	     "they would give back permits they no longer hold",
	     n == 1 ? "it" : "them", l->name);
	return false;
}

static int plan_create(struct apply *a, const struct rlconf_limiter *l,
		       struct item *it)
{
	bool ok = become_owner(l);

	become_self();
	if (!ok) {
		LERR(a, l, key_line(l, l->key_line[RLCONF_OWNER] ?
				    RLCONF_OWNER : RLCONF_GROUP),
		     "cannot create '%s' with this owner and group: that takes root",
		     l->name);
		return 0;
	}
	it->what = A_CREATE;
	return add_item(a, it);
}

/* Compare section @l with the module; add the change it needs, if any. */
static int plan_limiter(struct apply *a, const struct rlconf_limiter *l)
{
	struct item it = { .lim = l };
	struct owner o;
	int fd, ret;

	if (!check_config(a, l, &it.want))
		return 0;
	fd = rl_open(0);
	if (fd < 0) {
		LERR(a, l, l->line, "cannot open %s: %s", RL_DEVICE_PATH,
		     strerror(-fd));
		return 0;
	}
	ret = rl_attach(fd, l->name, 0, 0, NULL);
	if (!ret)
		ret = rl_get_config(fd, &it.have);
	rl_close(fd);
	if (ret == -ENOENT)
		return plan_create(a, l, &it);
	if (!ret)
		ret = read_owner(a, l->name, &o);
	if (ret) {
		LERR(a, l, l->line, "cannot read the limiter '%s': %s",
		     l->name, ret == -EACCES ? "permission denied" :
		     strerror(-ret));
		return 0;
	}
	if (!check_owner(a, l, &o, &it))
		return 0;
	if ((it.have.flags ^ it.want.flags) & RL_CONFIG_KEYED) {
		LERR(a, l, key_line(l, (enum rlconf_key)RLK_KEYED),
		     "cannot make '%s' %skeyed: a limiter is keyed or not from its creation on; remove it (rlctl rm %s) and apply again",
		     l->name, it.want.flags & RL_CONFIG_KEYED ? "" : "not ",
		     l->name);
		return 0;
	}
	if (!memcmp(&it.have, &it.want, sizeof(it.want))) {
		if (!it.perm)
			return 0;
		it.what = A_CHANGE;
		return add_item(a, &it);
	}
	if (!check_concurrency(a, l, &it))
		return 0;
	if (!may_write(a, &o)) {
		LERR(a, l, l->line,
		     "cannot change '%s': permission denied (owner %llu, group %llu, mode %04llo)",
		     l->name, o.uid, o.gid, o.mode);
		return 0;
	}
	it.what = A_CHANGE;
	return add_item(a, &it);
}

/*
 * --prune: the persistent limiters that no file declares and that the
 * caller may remove (its own; all of them with CAP_SYS_ADMIN).
 */
static int plan_prune(struct apply *a)
{
	struct item it = { .what = A_REMOVE };
	struct dirent **ents;
	struct owner o;
	int i, n, ret = 0;

	/* rlctl keeps the C locale: alphasort() is byte order */
	n = scandir(a->sysfs, &ents, is_limiter_dir, alphasort);
	/* A container's directory is there while it has a name. */
	if (n < 0 && errno == ENOENT && a->sysfs != sysfs_base)
		return 0;
	if (n < 0) {
		rld_error(&a->conf.rd, a->sysfs, 0, "%s", strerror(errno));
		return 0;
	}
	for (i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;

		if (!ret && !rlconf_find(&a->conf, name) &&
		    !read_owner(a, name, &o) && o.persistent &&
		    (a->admin || o.uid == geteuid())) {
			strcpy(it.removed, name);	/* rl_name_valid() */
			ret = add_item(a, &it);
		}
		free(ents[i]);
	}
	free(ents);
	return ret;
}

/* --- the command ---------------------------------------------------- */

static int nothing_applied(const struct apply *a)
{
	say("%u error%s: nothing applied", a->conf.rd.errors,
	    a->conf.rd.errors == 1 ? "" : "s");
	return 1;
}

static int apply(struct apply *a, int npaths, char **paths)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < (size_t)npaths && !ret; i++)
		ret = rlconf_load(&a->conf, paths[i]);
	if (ret)
		goto nomem;
	if (a->conf.rd.errors)
		return nothing_applied(a);

	a->sysfs = sysfs_root;
	a->admin = is_admin();
	a->check_fd = rl_open(0);
	if (a->check_fd == -ENOENT || a->check_fd == -ENODEV ||
	    a->check_fd == -ENXIO) {
		say("module not loaded (no %s)", RL_DEVICE_PATH);
		return 1;
	}
	if (a->check_fd < 0) {
		say("cannot open %s: %s", RL_DEVICE_PATH,
		    strerror(-a->check_fd));
		return 1;
	}
	for (i = 0; i < a->conf.n && !ret; i++)
		ret = plan_limiter(a, &a->conf.lim[i]);
	if (!ret && a->prune)
		ret = plan_prune(a);
	if (ret)
		goto nomem;
	if (a->conf.rd.errors)
		return nothing_applied(a);
	return run_plan(a->items, a->n, a->dry_run);
nomem:
	say("out of memory: nothing applied");
	return 1;
}

int cmd_apply(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "prune", no_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	struct apply a = { .check_fd = -1, .keyed_fd = -1 };
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			a.dry_run = true;
			break;
		case 'p':
			a.prune = true;
			break;
		default:	/* getopt said what */
			return tool_try_help(EXIT_USAGE);
		}
	}
	if (optind == argc)
		return tool_usage(EXIT_USAGE, "apply: missing PATH");
	rlconf_init(&a.conf);
	ret = apply(&a, argc - optind, argv + optind);
	if (a.check_fd >= 0)
		rl_close(a.check_fd);
	if (a.keyed_fd >= 0)
		rl_close(a.keyed_fd);
	free(a.items);
	rlconf_free(&a.conf);
	fflush(stdout);
	return ret;
}

