// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_set.c - rlctl create, rm and set: what a limiter is made with
 * (the ioctls) and changed to (its sysfs files).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "libratelimit.h"
#include "rlctl.h"
#include "rlctl_keys.h"
#include "sysfile.h"

#define MAX_WRITES	16

struct write {
	const char *key;
	uint64_t val;
	int err;
};

/* Values of the rows of rlctl_keys[], by index. */
struct change {
	bool has[RLK_MAX];
	uint64_t val[RLK_MAX];
};

static void change_set(struct change *c, int key, uint64_t val)
{
	c->has[key] = true;
	c->val[key] = val;
}

/*
 * The value of a tunable of kind RLK_IN_SPEC, RLK_AMOUNT or RLK_U64; 0 or
 * an exit code.
 */
static int parse_value(const struct rlk *k, const char *v, struct change *c)
{
	char hint[64];
	uint64_t val;

	if (k->kind == RLK_AMOUNT) {
		if (rl_parse_amount(v, &val))
			return usage("invalid %s '%s'", k->name, v);
	} else if (rlk_parse_u64(k, v, &val)) {
		return usage("invalid %s '%s'%s", k->name, v,
			     rlk_hint(k, hint, sizeof(hint)));
	}
	change_set(c, k - rlctl_keys, val);
	return 0;
}

static int open_device(void)
{
	int fd = rl_open(0);

	if (fd == -ENOENT || fd == -ENODEV || fd == -ENXIO)
		fail("module not loaded (no %s)", RL_DEVICE_PATH);
	else if (fd < 0)
		fail("cannot open %s: %s", RL_DEVICE_PATH, strerror(-fd));
	return fd;
}

/* Does the module behind @fd have keyed limiters? */
static bool keyed_supported(int fd)
{
	struct rl_features f;

	return !rl_get_features(fd, &f) && (f.flags & RL_FEATURE_KEYED);
}

/* What create was asked for, besides NAME and RATESPEC. */
struct create {
	const char *burst;	/* --burst, or NULL */
	uint32_t flags;		/* RL_ATTACH_* */
	uint64_t mode;
	struct change c;	/* --concurrency, --fairness, ... */
};

/* getopt_long()'s value for the option of rlctl_keys[i]: OPT_KEY + i. */
#define OPT_KEY		256

/* create's options that are no tunable's value. */
#define CREATE_FIXED	6

/*
 * create's options into @opts: --mode, --persist, --transient, --json,
 * --keyed, --fair-per-user, then one for each tunable of kind RLK_AMOUNT or RLK_U64, in
 * the order of the table.
 */
static void create_opts(struct option *opts)
{
	static const struct option fixed[CREATE_FIXED] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "persist", no_argument, NULL, 'p' },
		{ "transient", no_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "keyed", no_argument, NULL, 'k' },
		{ "fair-per-user", no_argument, NULL, 'u' },
	};
	size_t i, n = ARRAY_SIZE(fixed);

	memcpy(opts, fixed, sizeof(fixed));
	for (i = 0; i < rlctl_nkeys; i++) {
		if (rlctl_keys[i].kind != RLK_AMOUNT &&
		    rlctl_keys[i].kind != RLK_U64)
			continue;
		opts[n++] = (struct option){ rlctl_keys[i].name,
					     required_argument, NULL,
					     OPT_KEY + (int)i };
	}
	opts[n] = (struct option){ NULL, 0, NULL, 0 };
}

/* The option of a tunable; --burst is parsed with RATESPEC. */
static int create_key_option(int opt, struct create *cr)
{
	const struct rlk *k = &rlctl_keys[opt - OPT_KEY];

	if (k == &rlctl_keys[RLK_BURST]) {
		cr->burst = optarg;
		return 0;
	}
	return parse_value(k, optarg, &cr->c);
}

/* create's options into @cr; 0 or an exit code. */
static int create_options(int argc, char **argv, struct create *cr)
{
	struct option opts[CREATE_FIXED + RLK_MAX + 1];
	int opt, ret;

	create_opts(opts);
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt >= OPT_KEY) {
			ret = create_key_option(opt, cr);
			if (ret)
				return ret;
			continue;
		}
		switch (opt) {
		case 'm':
			if (sysfile_parse_u64(optarg, 8, &cr->mode) ||
			    cr->mode > 0777)
				return usage("invalid mode '%s'", optarg);
			break;
		case 'p':	/* the default; kept for older scripts */
			cr->flags |= RL_ATTACH_PERSIST;
			break;
		case 't':
			cr->flags &= ~RL_ATTACH_PERSIST;
			break;
		case 'j':
			json = true;
			break;
		case 'k':
			change_set(&cr->c, RLK_KEYED, 1);
			break;
		case 'u':
			change_set(&cr->c, RLK_FAIR_PER_USER, 1);
			break;
		default:	/* getopt said what */
			return tool_try_help(EXIT_USAGE);
		}
	}
	if (cr->c.has[RLK_KEYS] && !cr->c.has[RLK_KEYED])
		return usage("create: --keys needs --keyed");
	return 0;
}

/* @cfg of RATESPEC @spec and the options; 0 or an exit code. */
static int create_config(const char *spec, const struct create *cr,
			 struct rl_config *cfg)
{
	uint64_t val;
	size_t i;

	if (rl_parse_rate(spec, cfg))
		return usage("invalid rate spec '%s'", spec);
	if (cr->burst) {
		if (rl_parse_amount(cr->burst, &val))
			return usage("invalid burst '%s'", cr->burst);
		cfg->burst = val;
	}
	for (i = 0; i < rlctl_nkeys; i++)
		if (cr->c.has[i])
			rlk_put(&rlctl_keys[i], cfg, cr->c.val[i]);
	/* A semaphore grants a request for several permits in one piece. */
	if ((cfg->flags & RL_CONFIG_UNLIMITED) && cfg->concurrency &&
	    !cr->burst) {
		cfg->burst = cfg->concurrency;
		if (cfg->burst > RL_BURST_PERIOD_MAX / cfg->period_ns)
			cfg->burst = RL_BURST_PERIOD_MAX / cfg->period_ns;
	}
	return 0;
}

int cmd_create(int argc, char **argv)
{
	/* Persistent: it outlives rlctl, until rlctl rm (or a reboot). */
	struct create cr = {
		.flags = RL_ATTACH_CREATE | RL_ATTACH_EXCL | RL_ATTACH_PERSIST,
		.mode = TOOL_DEFAULT_MODE,
	};
	const char *name, *spec;
	struct tree_opts t = { 0 };
	struct rl_config cfg;
	bool options;
	size_t i;
	int fd, ret;

	ret = tree_options(&argc, argv, &t);
	if (t.root)
		return usage("create: --root is the default");
	if (!ret)
		ret = create_options(argc, argv, &cr);
	if (!ret)
		ret = check_operands("create", argc - optind, argv + optind, 2,
				     (const char *const[]){ "NAME", "RATESPEC" });
	if (ret)
		return ret;
	name = argv[optind];
	spec = argv[optind + 1];
	ret = check_name(name);
	if (!ret)
		ret = create_config(spec, &cr, &cfg);
	if (ret)
		return ret;

	fd = open_device();
	if (fd < 0)
		return 1;
	ret = rl_attach(fd, name, cr.flags, (uint32_t)cr.mode, &cfg);
	for (options = cr.burst, i = 0; i < rlctl_nkeys; i++)
		options |= cr.c.has[i];
	if (ret == -EINVAL && (cfg.flags & RL_CONFIG_KEYED) && !keyed_supported(fd))
		ret = fail("cannot create '%s': the loaded module has no keyed limiters",
			   name);
	else if (ret == -EINVAL)
		ret = fail("cannot create '%s': invalid configuration '%s'%s",
			   name, spec, options ? " with those options" : "");
	else if (ret == -EPERM && cfg.keys > RL_KEYS_USER_MAX)
		ret = fail("cannot create '%s': more than %u keys takes CAP_SYS_RESOURCE",
			   name, RL_KEYS_USER_MAX);
	else if (ret)
		ret = name_error(name, ret);
	if (ret) {
		rl_close(fd);
		return ret;
	}
	ret = tree_apply(fd, name, &t);
	if (ret) {
		/* Not left behind, half made. */
		rl_unlink(fd, name);
		rl_close(fd);
		return ret;
	}
	/* --transient: it goes with this, its only fd. */
	rl_close(fd);
	return 0;
}

int cmd_rm(int argc, char **argv)
{
	int fd, ret;

	ret = check_operands("rm", argc - 1, argv + 1, 1,
			     (const char *const[]){ "NAME" });
	if (!ret)
		ret = check_name(argv[1]);
	if (ret)
		return ret;
	fd = open_device();
	if (fd < 0)
		return 1;
	ret = rl_unlink(fd, argv[1]);
	rl_close(fd);
	return ret ? name_error(argv[1], ret) : 0;
}

/* The IPC namespace of a pid, or of a path (/proc/PID/ns/ipc, a bind mount): an fd or -1. */
static int open_ipc_ns(const char *target)
{
	char path[64];
	int fd;

	if (target[0] && strspn(target, "0123456789") == strlen(target)) {
		snprintf(path, sizeof(path), "/proc/%s/ns/ipc", target);
		target = path;
	}
	fd = open(target, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail("%s: %s", target, strerror(errno));
	return fd;
}

static int share_error(const char *name, int err, bool revoke)
{
	switch (err) {
	case -EEXIST:
		return fail("that namespace has a limiter named '%s' already", name);
	case -ENOENT:
		return revoke ? fail("'%s' is not shared with that namespace", name) :
				name_error(name, err);
	case -EPERM:
		return fail("sharing '%s' takes CAP_SYS_ADMIN", name);
	case -EINVAL:
		return fail("'%s' is no host's limiter, or that is not a container's IPC namespace",
			    name);
	default:
		return name_error(name, err);
	}
}

int cmd_share(int argc, char **argv)
{
	bool revoke = argc == 4 && !strcmp(argv[3], "--revoke");
	int fd, nsfd, ret;

	ret = check_operands("share", argc - 1 - revoke, argv + 1, 2,
			     (const char *const[]){ "NAME", "PID" });
	if (!ret)
		ret = check_name(argv[1]);
	if (ret)
		return ret;
	nsfd = open_ipc_ns(argv[2]);
	if (nsfd < 0)
		return 1;
	fd = open_device();
	if (fd < 0) {
		close(nsfd);
		return 1;
	}
	ret = rl_attach(fd, argv[1], 0, 0, NULL);
	if (ret) {
		ret = name_error(argv[1], ret);
		goto out;
	}
	ret = rl_share(fd, nsfd, revoke ? RL_SHARE_REVOKE : 0);
	if (ret)
		ret = share_error(argv[1], ret, revoke);
out:
	rl_close(fd);
	close(nsfd);
	return ret;
}

/* rate=VALUE: a rate spec, "unlimited" or a number of tokens. */
static int parse_rate(const char *v, struct change *c)
{
	struct rl_config cfg;
	uint64_t val;

	if (!strcmp(v, "unlimited")) {
		change_set(c, RLK_UNLIMITED, 1);
	} else if (strpbrk(v, "/:")) {
		if (rl_parse_rate(v, &cfg))
			return usage("invalid rate spec '%s'", v);
		change_set(c, RLK_RATE, cfg.rate);
		change_set(c, RLK_PERIOD_NS, cfg.period_ns);
		if (strchr(v, ':'))
			change_set(c, RLK_BURST, cfg.burst);
		change_set(c, RLK_UNLIMITED, 0);
	} else {
		if (rl_parse_amount(v, &val))
			return usage("invalid rate '%s'", v);
		change_set(c, RLK_RATE, val);
	}
	return 0;
}

/* One KEY=VALUE argument into @c; 0 or an exit code. */
static int parse_setting(const char *arg, struct change *c)
{
	const char *eq = strchr(arg, '='), *v;
	const struct rlk *k;
	size_t klen;

	if (!eq)
		return usage("expected KEY=VALUE, not '%s'", arg);
	klen = eq - arg;
	v = eq + 1;
	k = rlk_find(arg, klen);
	if (!k)
		return usage("unknown key '%.*s'", (int)klen, arg);
	switch (k->kind) {
	case RLK_SPEC:
		return parse_rate(v, c);
	case RLK_FLAG:
		if (strcmp(v, "0") && strcmp(v, "1"))
			return usage("invalid %s '%s' (0 or 1)", k->name, v);
		change_set(c, k - rlctl_keys, *v == '1');
		return 0;
	default:
		return parse_value(k, v, c);
	}
}

static void add_write(struct write *w, int *n, const struct change *c, int key)
{
	if (!c->has[key])
		return;
	w[*n].key = rlctl_keys[key].name;
	w[*n].val = c->val[key];
	w[*n].err = 0;
	(*n)++;
}

/*
 * The order of the writes keeps the rate in between at most the larger of
 * the old and new one: a longer period goes in before the rate, a shorter
 * one after it; "unlimited" goes first when set and last when cleared.
 */
static int plan_writes(const struct change *c, const struct info *cur,
		       struct write *w)
{
	bool period_first = c->has[RLK_PERIOD_NS] &&
			    c->val[RLK_PERIOD_NS] > cur->key[RLK_PERIOD_NS];
	bool set_unlimited = c->has[RLK_UNLIMITED] && c->val[RLK_UNLIMITED];
	int key, n = 0;

	if (set_unlimited)
		add_write(w, &n, c, RLK_UNLIMITED);
	if (period_first)
		add_write(w, &n, c, RLK_PERIOD_NS);
	add_write(w, &n, c, RLK_RATE);
	if (!period_first)
		add_write(w, &n, c, RLK_PERIOD_NS);
	for (key = 0; key < (int)rlctl_nkeys; key++)
		if (key != RLK_RATE && key != RLK_PERIOD_NS &&
		    key != RLK_UNLIMITED)
			add_write(w, &n, c, key);
	if (!set_unlimited)
		add_write(w, &n, c, RLK_UNLIMITED);
	return n;
}

/*
 * The @n writes of @w to limiter @name. Each file is validated on its own
 * against the others' current values, so a write may fail only until
 * another one went in: retry the failed ones while any write succeeds.
 * Returns the write that failed in the end, or NULL.
 */
static struct write *do_writes(const char *name, struct write *w, int n)
{
	struct write *failed = NULL;
	int i, left = n;
	bool progress;

	do {
		progress = false;
		for (i = 0; i < n && !failed; i++) {
			if (!w[i].key)
				continue;
			w[i].err = write_attr(name, w[i].key, w[i].val);
			if (!w[i].err) {
				w[i].key = NULL;
				left--;
				progress = true;
			} else if (w[i].err != -EINVAL) {
				failed = &w[i];
			}
		}
	} while (left && progress && !failed);
	for (i = 0; i < n && !failed; i++)
		if (w[i].key)
			failed = &w[i];
	return failed;
}

#define SET_BUSY \
	"clients are attached, and it cannot go between 0 and non-zero under them: stop them, or rm it and create it again"

#define SET_KEYED \
	"cannot set keyed on '%s': it is fixed when a limiter is created (rm it and create it again)"

/* The exit status of set when the write @failed failed on @name. */
static int set_error(const char *name, const struct write *failed)
{
	if (failed->err == -ENOENT && !check_limiter(name))
		return fail("cannot set %s on '%s': the loaded module has no such setting",
			    failed->key, name);
	if (failed->err == -ENOENT)
		return 1;	/* check_limiter() said why */
	if (failed->err == -EINVAL &&
	    !strcmp(failed->key, rlctl_keys[RLK_KEYED].name))
		return fail(SET_KEYED, name);
	if (failed->err == -EACCES || failed->err == -EPERM)
		return name_error(name, failed->err);
	if (failed->err == -EBUSY)	/* concurrency, ratelimit(4) */
		return fail("cannot set %s=%llu on '%s': %s", failed->key,
			    (unsigned long long)failed->val, name, SET_BUSY);
	return fail("cannot set %s=%llu on '%s': %s", failed->key,
		    (unsigned long long)failed->val, name,
		    strerror(-failed->err));
}

int cmd_set(int argc, char **argv)
{
	struct write w[MAX_WRITES], *failed;
	struct tree_opts t = { 0 };
	struct perm_opts p = { 0 };
	struct change c = { 0 };
	uint64_t period, burst, product;
	const char *name;
	struct info cur;
	int i, ret;

	ret = tree_options(&argc, argv, &t) ?: perm_options(&argc, argv, &p);
	if (ret)
		return ret;
	if ((t.set || p.flags) && argc == 2)
		return check_name(argv[1]) ?: perm_apply(argv[1], &p) ?:
		       tree_apply(-1, argv[1], &t);
	if (argc < 3)
		return usage("set: missing %s", argc < 2 ? "NAME" : "KEY=VALUE");
	name = argv[1];
	ret = check_name(name);
	for (i = 2; i < argc && !ret; i++)
		ret = parse_setting(argv[i], &c);
	if (!ret)
		ret = limiter_info(name, &cur);
	if (ret)
		return ret;

	/* What the kernel would refuse in the end, refused up front. */
	period = c.has[RLK_PERIOD_NS] ? c.val[RLK_PERIOD_NS] :
		 cur.key[RLK_PERIOD_NS];
	burst = c.has[RLK_BURST] ? c.val[RLK_BURST] : cur.key[RLK_BURST];
	if (__builtin_mul_overflow(burst, period, &product) ||
	    product > RL_BURST_PERIOD_MAX)
		return fail("cannot set '%s': burst %llu x period_ns %llu exceeds %llu",
			    name, (unsigned long long)burst,
			    (unsigned long long)period,
			    (unsigned long long)RL_BURST_PERIOD_MAX);

	failed = do_writes(name, w, plan_writes(&c, &cur, w));
	if (failed)
		return set_error(name, failed);
	return perm_apply(name, &p) ?: tree_apply(-1, name, &t);
}
