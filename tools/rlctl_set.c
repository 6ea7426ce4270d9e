// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_set.c - rlctl create, rm and set: what a limiter is made with
 * (the ioctls) and changed to (its sysfs files).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ratelimit.h"
#include "rlctl.h"
#include "sysfile.h"

#define DEFAULT_MODE	0644
#define MAX_WRITES	16

struct write {
	const char *key;
	uint64_t val;
	int err;
};

static const char *const set_keys[] = {
	"rate", "period_ns", "burst", "unlimited",
	"concurrency", "fairness", "catchup", "backlog",
};

enum {
	K_RATE, K_PERIOD, K_BURST, K_UNLIMITED,
	K_CONCURRENCY, K_FAIRNESS, K_CATCHUP, K_BACKLOG, K_NR
};

struct change {
	bool has[K_NR];
	uint64_t val[K_NR];
};

static void change_set(struct change *c, int key, uint64_t val)
{
	c->has[key] = true;
	c->val[key] = val;
}

/* The value of one of the keys after rate; 0 or an exit code. */
static int parse_value(int key, const char *v, struct change *c)
{
	uint64_t val;

	switch (key) {
	case K_CONCURRENCY:
		if (rl_parse_amount(v, &val))
			return usage("invalid concurrency '%s'", v);
		break;
	case K_FAIRNESS:
		if (sysfile_parse_u64(v, 10, &val) || val > 1000000)
			return usage("invalid fairness '%s' (0 .. 1000000)", v);
		break;
	case K_CATCHUP:
		if (sysfile_parse_u64(v, 10, &val) ||
		    (val && (val < RL_CATCHUP_STRICT || val > RL_CATCHUP_MAX)))
			return usage("invalid catchup '%s' (per-mille, %u .. %u, or 0)",
				     v, RL_CATCHUP_STRICT, RL_CATCHUP_MAX);
		break;
	case K_BACKLOG:
		if (rl_parse_amount(v, &val))
			return usage("invalid backlog '%s'", v);
		break;
	default:
		return usage("internal error: key %d", key);
	}
	change_set(c, key, val);
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

/* What create was asked for, besides NAME and RATESPEC. */
struct create {
	const char *burst;	/* --burst, or NULL */
	uint32_t flags;		/* RL_ATTACH_* */
	uint64_t mode;
	struct change c;	/* --concurrency, --fairness, ... */
};

/* create's options into @cr; 0 or an exit code. */
static int create_options(int argc, char **argv, struct create *cr)
{
	static const struct option opts[] = {
		{ "burst", required_argument, NULL, 'b' },
		{ "mode", required_argument, NULL, 'm' },
		{ "persist", no_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "concurrency", required_argument, NULL, 'c' },
		{ "fairness", required_argument, NULL, 'f' },
		{ "catchup", required_argument, NULL, 'u' },
		{ "backlog", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'b':
			cr->burst = optarg;
			break;
		case 'm':
			if (sysfile_parse_u64(optarg, 8, &cr->mode) ||
			    cr->mode > 0777)
				return usage("invalid mode '%s'", optarg);
			break;
		case 'p':
			cr->flags |= RL_ATTACH_PERSIST;
			break;
		case 'j':
			json = true;
			break;
		case 'c':
		case 'f':
		case 'u':
		case 'l':
			ret = parse_value(opt == 'c' ? K_CONCURRENCY :
					  opt == 'f' ? K_FAIRNESS :
					  opt == 'u' ? K_CATCHUP : K_BACKLOG,
					  optarg, &cr->c);
			if (ret)
				return ret;
			break;
		default:	/* getopt said what */
			return tool_try_help(EXIT_USAGE);
		}
	}
	return 0;
}

/* @cfg of RATESPEC @spec and the options; 0 or an exit code. */
static int create_config(const char *spec, const struct create *cr,
			 struct rl_config *cfg)
{
	uint64_t val;

	if (rl_parse_rate(spec, cfg))
		return usage("invalid rate spec '%s'", spec);
	if (cr->burst) {
		if (rl_parse_amount(cr->burst, &val))
			return usage("invalid burst '%s'", cr->burst);
		cfg->burst = val;
	}
	cfg->concurrency = cr->c.val[K_CONCURRENCY];
	cfg->fairness = (uint32_t)cr->c.val[K_FAIRNESS];
	cfg->catchup = (uint32_t)cr->c.val[K_CATCHUP];
	cfg->backlog = cr->c.val[K_BACKLOG];
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
	struct create cr = {
		.flags = RL_ATTACH_CREATE | RL_ATTACH_EXCL,
		.mode = DEFAULT_MODE,
	};
	const char *name, *spec;
	struct rl_config cfg;
	int fd, ret;

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
	if (ret == -EINVAL)
		return fail("cannot create '%s': invalid configuration '%s'%s",
			    name, spec, cr.burst || cr.c.has[K_CONCURRENCY] ||
			    cr.c.has[K_FAIRNESS] || cr.c.has[K_CATCHUP] ||
			    cr.c.has[K_BACKLOG] ? " with those options" : "");
	if (ret)
		return name_error(name, ret);
	if (!(cr.flags & RL_ATTACH_PERSIST))
		fprintf(stderr,
			"rlctl: note: '%s' is not persistent: it dies as rlctl exits (use --persist)\n",
			name);
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

/* One KEY=VALUE argument into @c; 0 or an exit code. */
static int parse_setting(const char *arg, struct change *c)
{
	const char *eq = strchr(arg, '='), *v;
	struct rl_config cfg;
	size_t klen;
	uint64_t val;
	int key;

	if (!eq)
		return usage("expected KEY=VALUE, not '%s'", arg);
	klen = eq - arg;
	v = eq + 1;
	for (key = 0; key < K_NR; key++)
		if (strlen(set_keys[key]) == klen &&
		    !strncmp(arg, set_keys[key], klen))
			break;
	switch (key) {
	case K_RATE:
		if (!strcmp(v, "unlimited")) {
			change_set(c, K_UNLIMITED, 1);
		} else if (strpbrk(v, "/:")) {
			if (rl_parse_rate(v, &cfg))
				return usage("invalid rate spec '%s'", v);
			change_set(c, K_RATE, cfg.rate);
			change_set(c, K_PERIOD, cfg.period_ns);
			if (strchr(v, ':'))
				change_set(c, K_BURST, cfg.burst);
			change_set(c, K_UNLIMITED, 0);
		} else {
			if (rl_parse_amount(v, &val))
				return usage("invalid rate '%s'", v);
			change_set(c, K_RATE, val);
		}
		return 0;
	case K_PERIOD:
		if (sysfile_parse_u64(v, 10, &val) || !val || val > RL_PERIOD_MAX_NS)
			return usage("invalid period_ns '%s' (1 .. %llu)", v,
				     (unsigned long long)RL_PERIOD_MAX_NS);
		change_set(c, K_PERIOD, val);
		return 0;
	case K_BURST:
		if (rl_parse_amount(v, &val))
			return usage("invalid burst '%s'", v);
		change_set(c, K_BURST, val);
		return 0;
	case K_UNLIMITED:
		if (strcmp(v, "0") && strcmp(v, "1"))
			return usage("invalid unlimited '%s' (0 or 1)", v);
		change_set(c, K_UNLIMITED, *v == '1');
		return 0;
	case K_NR:
		return usage("unknown key '%.*s'", (int)klen, arg);
	default:
		return parse_value(key, v, c);
	}
}

static void add_write(struct write *w, int *n, const struct change *c, int key)
{
	if (!c->has[key])
		return;
	w[*n].key = set_keys[key];
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
	bool period_first = c->has[K_PERIOD] && c->val[K_PERIOD] > cur->period_ns;
	int n = 0;

	if (c->has[K_UNLIMITED] && c->val[K_UNLIMITED])
		add_write(w, &n, c, K_UNLIMITED);
	if (period_first)
		add_write(w, &n, c, K_PERIOD);
	add_write(w, &n, c, K_RATE);
	if (!period_first)
		add_write(w, &n, c, K_PERIOD);
	add_write(w, &n, c, K_BURST);
	add_write(w, &n, c, K_CONCURRENCY);
	add_write(w, &n, c, K_FAIRNESS);
	add_write(w, &n, c, K_CATCHUP);
	add_write(w, &n, c, K_BACKLOG);
	if (c->has[K_UNLIMITED] && !c->val[K_UNLIMITED])
		add_write(w, &n, c, K_UNLIMITED);
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

/* The exit status of set when the write @failed failed on @name. */
static int set_error(const char *name, const struct write *failed)
{
	if (failed->err == -ENOENT && !check_limiter(name))
		return fail("cannot set %s on '%s': the loaded module has no such setting",
			    failed->key, name);
	if (failed->err == -ENOENT)
		return 1;	/* check_limiter() said why */
	if (failed->err == -EACCES || failed->err == -EPERM)
		return name_error(name, failed->err);
	return fail("cannot set %s=%llu on '%s': %s", failed->key,
		    (unsigned long long)failed->val, name,
		    strerror(-failed->err));
}

int cmd_set(int argc, char **argv)
{
	struct write w[MAX_WRITES], *failed;
	struct change c = { 0 };
	uint64_t period, burst, product;
	const char *name;
	struct info cur;
	int i, ret;

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
	period = c.has[K_PERIOD] ? c.val[K_PERIOD] : cur.period_ns;
	burst = c.has[K_BURST] ? c.val[K_BURST] : cur.burst;
	if (__builtin_mul_overflow(burst, period, &product) ||
	    product > RL_BURST_PERIOD_MAX)
		return fail("cannot set '%s': burst %llu x period_ns %llu exceeds %llu",
			    name, (unsigned long long)burst,
			    (unsigned long long)period,
			    (unsigned long long)RL_BURST_PERIOD_MAX);

	failed = do_writes(name, w, plan_writes(&c, &cur, w));
	return failed ? set_error(name, failed) : 0;
}
