// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl - create, tune, inspect and remove named /dev/ratelimit limiters.
 *
 * create and rm use the ioctls (RL_IOC_ATTACH, RL_IOC_UNLINK); set, show,
 * list and watch use /sys/kernel/ratelimit/ (RLCTL_SYSFS overrides the
 * path, for tests against a fake tree). apply, in rlctl_apply.c, makes the
 * limiters match declarative files (ratelimit.d(5)).
 *
 * Exit status: 0 ok, 1 error, 2 usage (bad command line, name, rate, key
 * or value).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ratelimit.h"
#include "rlctl.h"
#include "sysfile.h"
#include "tool.h"

TOOL_NAME("rlctl");

#define SYSFS_ROOT	"/sys/kernel/ratelimit"
#define DEFAULT_MODE	0644
#define MAX_WRITES	16

static const char *sysfs_root = SYSFS_ROOT;
static bool json;

/* The sysfs attributes of a limiter, all decimal u64 but mode (octal). */
struct info {
	uint64_t rate, period_ns, burst, unlimited;
	uint64_t concurrency, fairness, catchup, backlog;
	uint64_t granted, requests, immediate, waited;
	uint64_t wait_ns_total, wait_ns_max, timeouts, interrupted;
	uint64_t rejected, waiters, available;
	uint64_t held, backlog_tokens, refunded;
	uint64_t clients, owner, group, persistent, mode;
	uint64_t missing;	/* bit i: optional attrs[i] not there */
};

struct attr {
	const char *key;
	size_t off;
	unsigned int flags;
};

#define A_LIST	1U	/* in the JSON of list */
#define A_OPT	2U	/* newer than named limiters: may be missing */

#define ATTR(x, f)	{ #x, offsetof(struct info, x), f }
static const struct attr attrs[] = {
	ATTR(rate, A_LIST), ATTR(period_ns, A_LIST), ATTR(burst, A_LIST),
	ATTR(unlimited, A_LIST), ATTR(concurrency, A_LIST | A_OPT),
	ATTR(fairness, A_OPT), ATTR(catchup, A_OPT), ATTR(backlog, A_OPT),
	ATTR(owner, 0), ATTR(group, 0), ATTR(mode, 0), ATTR(persistent, 0),
	ATTR(clients, A_LIST), ATTR(granted, 0), ATTR(requests, 0),
	ATTR(immediate, 0), ATTR(waited, 0), ATTR(wait_ns_total, 0),
	ATTR(wait_ns_max, 0), ATTR(timeouts, 0), ATTR(interrupted, 0),
	ATTR(rejected, 0), ATTR(waiters, A_LIST), ATTR(available, 0),
	ATTR(held, A_LIST | A_OPT), ATTR(backlog_tokens, A_OPT),
	ATTR(refunded, A_OPT),
};

#define FIELD(i, a)	((uint64_t *)((char *)(i) + (a)->off))

static void print_usage(void)
{
	fprintf(stdout,
		"usage: rlctl [--json] COMMAND [ARGS]\n"
		"  create NAME RATESPEC [--burst N] [--mode OCTAL] [--persist]\n"
		"         [--concurrency N] [--fairness N] [--catchup PERMILLE] [--backlog N]\n"
		"                       create a named limiter (mode default 0644)\n"
		"  set NAME KEY=VALUE...  change it; keys: rate (a rate spec or a\n"
		"                       number), period_ns, burst, unlimited (0 or 1),\n"
		"                       concurrency, fairness, catchup, backlog\n"
		"  show NAME            configuration, statistics, wait percentiles\n"
		"                       and clients with their shares\n"
		"  list                 one line per limiter\n"
		"  rm NAME              remove the name\n"
		"  watch NAME [-i SECONDS] [-n COUNT]\n"
		"                       target and achieved rate every interval\n"
		"  apply [--dry-run] [--prune] PATH...\n"
		"                       make the limiters match the files (or the\n"
		"                       *.conf of directories), see ratelimit.d(5)\n"
		"  --json               JSON output (show, list, watch)\n"
		"  -h, --help           show this help\n"
		"  --version            print the version\n"
		"RLCTL_SYSFS in the environment replaces " SYSFS_ROOT ".\n");
}

/*
 * @cmd got the @n operands @ops and wants @want of them, named @names:
 * 0, or the usage error about the first missing or unexpected one.
 */
static int check_operands(const char *cmd, int n, char **ops, int want,
			  const char *const *names)
{
	if (n < want)
		return usage("%s: missing %s", cmd, names[n]);
	if (n > want)
		return usage("%s: unexpected argument '%s'", cmd, ops[want]);
	return 0;
}

/* One-line message for an error about limiter @name; returns the exit. */
static int name_error(const char *name, int err)
{
	switch (err) {
	case -ENOENT:
		return fail("no limiter named '%s'", name);
	case -EACCES:
	case -EPERM:
		return fail("permission denied for '%s'", name);
	case -EEXIST:
		return fail("limiter '%s' exists", name);
	case -ENOSPC:
		return fail("cannot create '%s': too many named limiters", name);
	case -EDQUOT:
		return fail("cannot create '%s': too many named limiters of this user",
			    name);
	case -ENOTTY:
		return fail("the loaded module has no named limiters");
	default:
		return fail("'%s': %s", name, strerror(-err));
	}
}

static int check_name(const char *name)
{
	if (!rl_name_valid(name))
		return usage("invalid name '%s'", name);
	return 0;
}

/* --- sysfs --------------------------------------------------------- */

static int attr_path(char *buf, size_t len, const char *name, const char *key)
{
	int n;

	if (key)
		n = snprintf(buf, len, "%s/%s/%s", sysfs_root, name, key);
	else
		n = snprintf(buf, len, "%s/%s", sysfs_root, name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int read_attr(const char *name, const char *key, uint64_t *val)
{
	char path[4096];
	int ret;

	ret = attr_path(path, sizeof(path), name, key);
	if (ret)
		return ret;
	return sysfile_read_u64(path, strcmp(key, "mode") ? 10 : 8, val);
}

static int write_attr(const char *name, const char *key, uint64_t val)
{
	char path[4096], text[32];
	ssize_t n;
	int fd, ret, len;

	ret = attr_path(path, sizeof(path), name, key);
	if (ret)
		return ret;
	len = snprintf(text, sizeof(text), "%llu\n", (unsigned long long)val);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	ret = n < 0 ? -errno : n == len ? 0 : -EIO;
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

/* The sysfs root and the limiter's directory exist: 0 or an exit code. */
static int check_limiter(const char *name)
{
	char path[4096];
	struct stat sb;

	if (stat(sysfs_root, &sb))
		return fail("module not loaded (no %s)", sysfs_root);
	if (attr_path(path, sizeof(path), name, NULL))
		return name_error(name, -ENAMETOOLONG);
	if (stat(path, &sb) || !S_ISDIR(sb.st_mode))
		return name_error(name, -ENOENT);
	return 0;
}

/* Every attribute of @name; -ENOENT when it disappeared meanwhile. */
static int load_info(const char *name, struct info *info)
{
	size_t i;
	int ret;

	memset(info, 0, sizeof(*info));
	for (i = 0; i < ARRAY_SIZE(attrs); i++) {
		ret = read_attr(name, attrs[i].key, FIELD(info, &attrs[i]));
		if (ret == -ENOENT && (attrs[i].flags & A_OPT))
			info->missing |= 1ULL << i;
		else if (ret)
			return ret;
	}
	return 0;
}

static int info_error(const char *name, int err)
{
	if (err == -ENOENT)
		return name_error(name, err);
	return fail("cannot read the attributes of '%s': %s", name,
		    strerror(-err));
}

static void info_config(const struct info *info, struct rl_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->rate = info->rate;
	cfg->period_ns = info->period_ns;
	cfg->burst = info->burst;
	cfg->flags = info->unlimited ? RL_CONFIG_UNLIMITED : 0;
}

/* Tokens per second; negative when unlimited. */
static double target_rate(const struct info *info)
{
	if (info->unlimited)
		return -1;
	return info->period_ns ? info->rate * 1e9 / info->period_ns : 0;
}

/* --- output helpers ------------------------------------------------ */

/*
 * The length of the valid UTF-8 sequence at @p (1 to 4), or 0 when @p
 * does not start one: a stray continuation byte, an overlong form, a
 * surrogate, a code point beyond U+10FFFF or a truncated sequence.
 */
static int utf8_len(const unsigned char *p)
{
	unsigned int lo = 0x80, hi = 0xbf;
	int n, i;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	/* The second byte's range rules out overlongs, surrogates, > 10FFFF. */
	if (p[0] == 0xe0)
		lo = 0xa0;
	else if (p[0] == 0xed)
		hi = 0x9f;
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

/*
 * @s as a JSON string: valid UTF-8 is copied as it is; '"', '\\' and the
 * control characters (below 0x20, and DEL) are escaped; each byte that
 * is not part of valid UTF-8 (a comm cut inside a character, a name in
 * another encoding) becomes \ufffd, the replacement character.
 */
static void json_string(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int n;

	putchar('"');
	while (*p) {
		n = utf8_len(p);
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", stdout);
		else if (*p == '\t')
			fputs("\\t", stdout);
		else if (*p < 0x20 || *p == 0x7f)
			printf("\\u%04x", *p);
		else if (!n)
			fputs("\\ufffd", stdout);
		else
			fwrite(p, 1, n, stdout);
		p += n ? n : 1;
	}
	putchar('"');
}

/*
 * A rate or any positive number to 4 significant digits, without an
 * exponent from 1e-4 up: "0.0002778", "2.5", "1235"; whole from 1e4 to
 * 1e15: "10000", "1000000000".
 */
static const char *fmt_num(char *buf, size_t len, double x)
{
	/* 9999.5 and up would round to "1e+04" under %.4g. */
	if ((x >= 9999.5 && x < 1e15) || x == 0)
		snprintf(buf, len, "%.0f", x);
	else
		snprintf(buf, len, "%.4g", x);
	return buf;
}

/* Tokens per second as text: "unlimited", "paused" or the number. */
static const char *fmt_target(char *buf, size_t len, double target)
{
	if (target < 0)
		snprintf(buf, len, "unlimited");
	else if (target == 0)
		snprintf(buf, len, "paused");
	else
		fmt_num(buf, len, target);
	return buf;
}

/*
 * A positive rate of @per_s tokens per second in the largest unit of
 * time that gets at least one token, or per day: "2.5 tokens/s",
 * "30 tokens/min", "1 tokens/h", "1 tokens/day".
 */
static const char *fmt_rate_unit(char *buf, size_t len, double per_s)
{
	static const struct {
		const char *name;
		double secs;
	} units[] = { { "s", 1 }, { "min", 60 }, { "h", 3600 }, { "day", 86400 } };
	char num[32];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(units) - 1; i++)
		if (per_s * units[i].secs >= 1)
			break;
	snprintf(buf, len, "%s tokens/%s",
		 fmt_num(num, sizeof(num), per_s * units[i].secs), units[i].name);
	return buf;
}

/*
 * A rate as a JSON number, with the significant digits of a double that
 * matter: 0.0002777777778 (1/h), 1000000000 (10^9/s).
 */
static void json_rate(double per_s)
{
	printf("%.10g", per_s);
}

/* --- settings ----------------------------------------------------- */

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

/* --- create, rm ---------------------------------------------------- */

static int open_device(void)
{
	int fd = rl_open(0);

	if (fd == -ENOENT || fd == -ENODEV || fd == -ENXIO)
		fail("module not loaded (no %s)", RL_DEVICE_PATH);
	else if (fd < 0)
		fail("cannot open %s: %s", RL_DEVICE_PATH, strerror(-fd));
	return fd;
}

static int cmd_create(int argc, char **argv)
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
	const char *burst = NULL, *name, *spec;
	uint32_t flags = RL_ATTACH_CREATE | RL_ATTACH_EXCL;
	uint64_t mode = DEFAULT_MODE, val;
	struct change c = { 0 };
	struct rl_config cfg;
	int opt, fd, ret;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'b':
			burst = optarg;
			break;
		case 'm':
			if (sysfile_parse_u64(optarg, 8, &mode) || mode > 0777)
				return usage("invalid mode '%s'", optarg);
			break;
		case 'p':
			flags |= RL_ATTACH_PERSIST;
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
					  optarg, &c);
			if (ret)
				return ret;
			break;
		default:	/* getopt said what */
			return tool_try_help(EXIT_USAGE);
		}
	}
	ret = check_operands("create", argc - optind, argv + optind, 2,
			     (const char *const[]){ "NAME", "RATESPEC" });
	if (ret)
		return ret;
	name = argv[optind];
	spec = argv[optind + 1];
	ret = check_name(name);
	if (ret)
		return ret;
	if (rl_parse_rate(spec, &cfg))
		return usage("invalid rate spec '%s'", spec);
	if (burst) {
		if (rl_parse_amount(burst, &val))
			return usage("invalid burst '%s'", burst);
		cfg.burst = val;
	}
	cfg.concurrency = c.val[K_CONCURRENCY];
	cfg.fairness = (uint32_t)c.val[K_FAIRNESS];
	cfg.catchup = (uint32_t)c.val[K_CATCHUP];
	cfg.backlog = c.val[K_BACKLOG];
	/* A semaphore grants a request for several permits in one piece. */
	if ((cfg.flags & RL_CONFIG_UNLIMITED) && cfg.concurrency && !burst) {
		cfg.burst = cfg.concurrency;
		if (cfg.burst > RL_BURST_PERIOD_MAX / cfg.period_ns)
			cfg.burst = RL_BURST_PERIOD_MAX / cfg.period_ns;
	}

	fd = open_device();
	if (fd < 0)
		return 1;
	ret = rl_attach(fd, name, flags, (uint32_t)mode, &cfg);
	if (ret == -EINVAL)
		return fail("cannot create '%s': invalid configuration '%s'%s",
			    name, spec, burst || c.has[K_CONCURRENCY] ||
			    c.has[K_FAIRNESS] || c.has[K_CATCHUP] ||
			    c.has[K_BACKLOG] ? " with those options" : "");
	if (ret)
		return name_error(name, ret);
	if (!(flags & RL_ATTACH_PERSIST))
		fprintf(stderr,
			"rlctl: note: '%s' is not persistent: it dies as rlctl exits (use --persist)\n",
			name);
	rl_close(fd);
	return 0;
}

static int cmd_rm(int argc, char **argv)
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

/* --- set ----------------------------------------------------------- */

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

static int cmd_set(int argc, char **argv)
{
	struct write w[MAX_WRITES], *failed = NULL;
	struct change c = { 0 };
	uint64_t period, burst, product;
	const char *name;
	struct info cur;
	int i, n, left, ret;
	bool progress;

	if (argc < 3)
		return usage("set: missing %s", argc < 2 ? "NAME" : "KEY=VALUE");
	name = argv[1];
	ret = check_name(name);
	if (ret)
		return ret;
	for (i = 2; i < argc; i++) {
		ret = parse_setting(argv[i], &c);
		if (ret)
			return ret;
	}
	ret = check_limiter(name);
	if (ret)
		return ret;
	ret = load_info(name, &cur);
	if (ret)
		return info_error(name, ret);

	/* What the kernel would refuse in the end, refused up front. */
	period = c.has[K_PERIOD] ? c.val[K_PERIOD] : cur.period_ns;
	burst = c.has[K_BURST] ? c.val[K_BURST] : cur.burst;
	if (__builtin_mul_overflow(burst, period, &product) ||
	    product > RL_BURST_PERIOD_MAX)
		return fail("cannot set '%s': burst %llu x period_ns %llu exceeds %llu",
			    name, (unsigned long long)burst,
			    (unsigned long long)period,
			    (unsigned long long)RL_BURST_PERIOD_MAX);

	/*
	 * Each file is validated on its own against the others' current
	 * values, so a write may fail only until another one went in: retry
	 * the failed ones while any write succeeds.
	 */
	n = plan_writes(&c, &cur, w);
	left = n;
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
	if (!failed)
		return 0;
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

/* --- show, list ---------------------------------------------------- */

/* A line of client_list: "PID COMM GRANTED HELD PRIORITY WEIGHT CAP". */
struct client {
	uint64_t pid, granted, held, priority, weight, cap;
	const char *comm;
	bool full;		/* the last four fields are there */
};

/*
 * Split @line in place. COMM may hold spaces: PID is the first word and
 * the numbers are the last ones. Lines of an older module have GRANTED
 * only. Returns false for a line that is neither.
 */
static bool parse_client(char *line, struct client *c)
{
	uint64_t *nums[] = { &c->granted, &c->held, &c->priority,
			     &c->weight, &c->cap };
	char *words[8], *sp;
	int n = 0, i, k;

	memset(c, 0, sizeof(*c));
	sp = strchr(line, ' ');
	if (!sp)
		return false;
	*sp = '\0';
	if (sysfile_parse_u64(line, 10, &c->pid))
		return false;
	c->comm = sp + 1;
	/* Up to five numbers from the end, leaving COMM non-empty. */
	while (n < 5 && (sp = strrchr(c->comm, ' ')) && sp != c->comm) {
		words[n++] = sp + 1;
		*sp = '\0';
	}
	k = n == 5 ? 5 : 1;
	if (n < k)
		return false;
	/* Give the words beyond GRANTED back to COMM for an old line. */
	for (i = n - 1; i >= k; i--)
		words[i][-1] = ' ';
	for (i = 0; i < k; i++)
		if (sysfile_parse_u64(words[k - 1 - i], 10, nums[i]))
			return false;
	c->full = k == 5;
	return true;
}

/* The clients of @list (modified in place) into a new array. */
static struct client *parse_clients(char *list, size_t *n, uint64_t *total)
{
	struct client *cl = NULL, *ncl, c;
	char *line, *save = NULL;
	size_t cap = 0;

	*n = 0;
	*total = 0;
	for (line = strtok_r(list, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!parse_client(line, &c))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			ncl = realloc(cl, cap * sizeof(*cl));
			if (!ncl)
				break;
			cl = ncl;
		}
		cl[(*n)++] = c;
		*total += c.granted;
	}
	return cl;
}

static double share_pct(uint64_t granted, uint64_t total)
{
	return total ? granted * 100.0 / total : 0;
}

static void show_clients_text(const struct client *cl, size_t n,
			      uint64_t total)
{
	char cap[24];
	size_t i;

	printf("%-8s %-16s %12s %7s %8s %-7s %6s %10s\n", "PID", "COMM",
	       "GRANTED", "SHARE", "HELD", "PRIO", "WEIGHT", "CAP");
	for (i = 0; i < n; i++) {
		printf("%-8llu %-16s %12llu %6.1f%%",
		       (unsigned long long)cl[i].pid, cl[i].comm,
		       (unsigned long long)cl[i].granted,
		       share_pct(cl[i].granted, total));
		if (!cl[i].full) {
			printf("\n");
			continue;
		}
		if (cl[i].cap)
			snprintf(cap, sizeof(cap), "%llu",
				 (unsigned long long)cl[i].cap);
		else
			snprintf(cap, sizeof(cap), "-");
		printf(" %8llu %-7s %6llu %10s\n",
		       (unsigned long long)cl[i].held,
		       tool_prio_name(cl[i].priority, "default"),
		       (unsigned long long)cl[i].weight, cap);
	}
}

static void show_clients_json(const struct client *cl, size_t n,
			      uint64_t total)
{
	size_t i;

	putchar('[');
	for (i = 0; i < n; i++) {
		printf("%s{\"pid\":%llu,\"comm\":", i ? "," : "",
		       (unsigned long long)cl[i].pid);
		json_string(cl[i].comm);
		printf(",\"granted\":%llu,\"share_pct\":%.2f",
		       (unsigned long long)cl[i].granted,
		       share_pct(cl[i].granted, total));
		if (cl[i].full)
			printf(",\"held\":%llu,\"priority\":\"%s\",\"weight\":%llu,\"cap\":%llu",
			       (unsigned long long)cl[i].held,
			       tool_prio_name(cl[i].priority, "default"),
			       (unsigned long long)cl[i].weight,
			       (unsigned long long)cl[i].cap);
		putchar('}');
	}
	putchar(']');
}

/* wait_histogram: lines "FLOOR_NS COUNT", log2 buckets of the waits. */
#define HIST_MAX	65

struct hist {
	size_t n;
	uint64_t floor[HIST_MAX], count[HIST_MAX], total;
};

static const unsigned int percentiles[] = { 50, 90, 99 };

static void parse_hist(char *text, struct hist *h)
{
	char *line, *save = NULL, *sp;
	uint64_t f, c;

	memset(h, 0, sizeof(*h));
	for (line = strtok_r(text, "\n", &save); line && h->n < HIST_MAX;
	     line = strtok_r(NULL, "\n", &save)) {
		sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		if (sysfile_parse_u64(line, 10, &f) || sysfile_parse_u64(sp + 1, 10, &c))
			continue;
		h->floor[h->n] = f;
		h->count[h->n++] = c;
		h->total += c;
	}
}

/*
 * Upper bound of the @pct-th percentile wait: the top of the bucket
 * (FLOOR .. 2 x FLOOR) that holds it; 0 for the bucket of no wait.
 */
static uint64_t hist_pct(const struct hist *h, unsigned int pct)
{
	uint64_t rank = (h->total * pct + 99) / 100, sum = 0;
	size_t i;

	if (!rank)
		rank = 1;
	for (i = 0; i < h->n; i++) {
		sum += h->count[i];
		if (sum >= rank)
			break;
	}
	if (i == h->n)
		i--;
	return h->floor[i] * 2;
}

static void show_hist_text(const struct hist *h)
{
	char b[32];
	size_t i;

	if (!h->total) {
		printf("%-14s -\n", "wait p50/90/99");
		return;
	}
	printf("%-14s", "wait p50/90/99");
	for (i = 0; i < ARRAY_SIZE(percentiles); i++)
		printf("%s <= %s", i ? "," : "",
		       tool_fmt_ns(b, sizeof(b), hist_pct(h, percentiles[i])));
	printf("  (of %llu waits)\n", (unsigned long long)h->total);
}

static void show_hist_json(const struct hist *h)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(percentiles); i++) {
		if (h->total)
			printf(",\"wait_p%u_ns\":%llu", percentiles[i],
			       (unsigned long long)hist_pct(h, percentiles[i]));
		else
			printf(",\"wait_p%u_ns\":null", percentiles[i]);
	}
	printf(",\"wait_histogram\":[");
	for (i = 0; i < h->n; i++)
		printf("%s{\"floor_ns\":%llu,\"count\":%llu}", i ? "," : "",
		       (unsigned long long)h->floor[i],
		       (unsigned long long)h->count[i]);
	putchar(']');
}

/* The common fields of show and list, as JSON members (no braces). */
static void json_members(const char *name, const struct info *info,
			 bool all)
{
	char spec[RL_RATE_STRLEN];
	struct rl_config cfg;
	size_t i;

	info_config(info, &cfg);
	rl_format_rate(&cfg, spec, sizeof(spec));
	printf("\"name\":");
	json_string(name);
	printf(",\"spec\":");
	json_string(spec);
	printf(",\"target_per_s\":");
	if (info->unlimited)
		printf("null");
	else
		json_rate(target_rate(info));
	for (i = 0; i < ARRAY_SIZE(attrs); i++) {
		if ((!all && !(attrs[i].flags & A_LIST)) ||
		    (info->missing & (1ULL << i)))
			continue;
		if (!strcmp(attrs[i].key, "mode"))
			printf(",\"mode\":\"%04llo\"",
			       (unsigned long long)info->mode);
		else
			printf(",\"%s\":%llu", attrs[i].key,
			       (unsigned long long)*FIELD(info, &attrs[i]));
	}
}

/* What a setting means, after its value; "" for most. */
static const char *attr_note(const char *key, uint64_t val)
{
	if (!strcmp(key, "concurrency") && !val)
		return " (none)";
	if (!strcmp(key, "catchup") && val <= RL_CATCHUP_STRICT)
		return " (strict)";
	if (!strcmp(key, "catchup"))
		return " per-mille of the rate";
	return "";
}

static void show_text(const char *name, const struct info *info,
		      const struct hist *h)
{
	char spec[RL_RATE_STRLEN], b1[64], b2[32];
	struct rl_config cfg;
	double target = target_rate(info);
	uint64_t val;
	size_t i;

	info_config(info, &cfg);
	rl_format_rate(&cfg, spec, sizeof(spec));
	printf("%-14s %s\n", "name", name);
	if (target < 0)
		printf("%-14s %s\n", "limiter", spec);
	else
		printf("%-14s %s (%s)\n", "limiter", spec,
		       target > 0 ? fmt_rate_unit(b1, sizeof(b1), target) :
		       "paused");
	for (i = 0; i < ARRAY_SIZE(attrs); i++) {
		if (info->missing & (1ULL << i))
			continue;
		val = *FIELD(info, &attrs[i]);
		if (!strcmp(attrs[i].key, "mode"))
			printf("%-14s %04llo\n", "mode",
			       (unsigned long long)val);
		else
			printf("%-14s %llu%s\n", attrs[i].key,
			       (unsigned long long)val,
			       attr_note(attrs[i].key, val));
	}
	printf("%-14s mean %s, max %s\n", "wait",
	       tool_fmt_ns(b1, sizeof(b1), info->waited ?
		      (double)info->wait_ns_total / info->waited : 0),
	       tool_fmt_ns(b2, sizeof(b2), info->wait_ns_max));
	if (h)
		show_hist_text(h);
}

/* A sysfs file of @name as text; NULL (and *err) when unreadable. */
static char *read_text(const char *name, const char *key, int *err)
{
	char path[4096];

	*err = attr_path(path, sizeof(path), name, key);
	return *err ? NULL : sysfile_read_all(path, err);
}

static int cmd_show(int argc, char **argv)
{
	char *clients, *htext;
	struct client *cl = NULL;
	uint64_t total = 0;
	const char *name;
	struct info info;
	struct hist h;
	size_t n = 0;
	int ret, hret;

	ret = check_operands("show", argc - 1, argv + 1, 1,
			     (const char *const[]){ "NAME" });
	if (ret)
		return ret;
	name = argv[1];
	ret = check_name(name);
	if (!ret)
		ret = check_limiter(name);
	if (ret)
		return ret;
	ret = load_info(name, &info);
	if (ret)
		return info_error(name, ret);
	clients = read_text(name, "client_list", &ret);
	htext = read_text(name, "wait_histogram", &hret);
	if ((!clients && ret == -ENOENT && check_limiter(name)) ||
	    (!htext && hret == -ENOENT && check_limiter(name))) {
		free(clients);
		free(htext);
		return 1;	/* gone meanwhile: said so */
	}
	if (htext)
		parse_hist(htext, &h);
	if (clients)
		cl = parse_clients(clients, &n, &total);

	if (json) {
		printf("{");
		json_members(name, &info, true);
		if (htext)
			show_hist_json(&h);
		if (clients) {
			printf(",\"client_list\":");
			show_clients_json(cl, n, total);
		}
		printf("}\n");
	} else {
		show_text(name, &info, htext ? &h : NULL);
		if (clients) {
			printf("\n");
			show_clients_text(cl, n, total);
		}
	}
	free(cl);
	free(clients);
	free(htext);
	return 0;
}

static int is_limiter_dir(const struct dirent *d)
{
	return rl_name_valid(d->d_name) &&
	       (d->d_type == DT_DIR || d->d_type == DT_UNKNOWN);
}

static int cmd_list(int argc, char **argv)
{
	char spec[RL_RATE_STRLEN];
	struct dirent **ents;
	struct rl_config cfg;
	struct info info;
	int i, n, ret, shown = 0;

	ret = check_operands("list", argc - 1, argv + 1, 0, NULL);
	if (ret)
		return ret;
	n = scandir(sysfs_root, &ents, is_limiter_dir, alphasort);
	if (n < 0 && errno == ENOENT)
		return fail("module not loaded (no %s)", sysfs_root);
	if (n < 0)
		return fail("cannot read %s: %s", sysfs_root, strerror(errno));
	if (json)
		printf("[");
	for (i = 0; i < n; i++) {
		/* Gone since scandir(), or not a limiter: skip it. */
		ret = load_info(ents[i]->d_name, &info);
		if (ret == -ENOENT || ret == -ENOTDIR)
			continue;
		if (ret) {
			fail("cannot read the attributes of '%s': %s",
			     ents[i]->d_name, strerror(-ret));
			continue;
		}
		if (json) {
			printf("%s{", shown ? "," : "");
			json_members(ents[i]->d_name, &info, false);
			printf("}");
		} else {
			info_config(&info, &cfg);
			rl_format_rate(&cfg, spec, sizeof(spec));
			printf("%-24s %-24s waiters=%llu clients=%llu",
			       ents[i]->d_name, spec,
			       (unsigned long long)info.waiters,
			       (unsigned long long)info.clients);
			if (info.concurrency)
				printf(" held=%llu/%llu",
				       (unsigned long long)info.held,
				       (unsigned long long)info.concurrency);
			printf("\n");
		}
		shown++;
	}
	if (json)
		printf("]\n");
	for (i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return 0;
}

/* --- watch --------------------------------------------------------- */

static void sleep_until(uint64_t t)
{
	struct timespec ts = {
		.tv_sec = t / NSEC_PER_SEC,
		.tv_nsec = t % NSEC_PER_SEC,
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

static void watch_line(const struct info *prev, const struct info *cur,
		       uint64_t dt, double since)
{
	uint64_t granted = cur->granted > prev->granted ?
			   cur->granted - prev->granted : 0;
	uint64_t waited = cur->waited > prev->waited ?
			  cur->waited - prev->waited : 0;
	uint64_t wait_ns = cur->wait_ns_total > prev->wait_ns_total ?
			   cur->wait_ns_total - prev->wait_ns_total : 0;
	double achieved = dt ? granted * 1e9 / dt : 0;
	double mean = waited ? (double)wait_ns / waited : 0;
	double target = target_rate(cur);
	char b1[32], b2[32], b3[32];

	if (json) {
		printf("{\"time_s\":%.3f,\"target_per_s\":", since);
		if (target < 0)
			printf("null");
		else
			json_rate(target);
		printf(",\"achieved_per_s\":");
		json_rate(achieved);
		printf(",\"granted\":%llu", (unsigned long long)granted);
		printf(",\"waiters\":%llu,\"waited\":%llu,\"mean_wait_ns\":%.0f}\n",
		       (unsigned long long)cur->waiters,
		       (unsigned long long)waited, mean);
	} else {
		printf("%9.3f %14s %14s %8llu %12s\n", since,
		       fmt_target(b1, sizeof(b1), target),
		       fmt_num(b3, sizeof(b3), achieved),
		       (unsigned long long)cur->waiters,
		       waited ? tool_fmt_ns(b2, sizeof(b2), mean) : "-");
	}
	fflush(stdout);
}

static int cmd_watch(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t count = 0, interval, start, t, tprev, i;
	struct info prev, cur;
	double secs = 1;
	const char *name;
	char *end;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "i:n:", opts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			errno = 0;
			secs = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(secs) ||
			    secs < 0.001 || secs > 86400)
				return usage("invalid interval '%s' (0.001 .. 86400 s)",
					     optarg);
			break;
		case 'n':
			if (sysfile_parse_u64(optarg, 10, &count) || !count)
				return usage("invalid count '%s'", optarg);
			break;
		case 'j':
			json = true;
			break;
		default:	/* getopt said what */
			return tool_try_help(EXIT_USAGE);
		}
	}
	ret = check_operands("watch", argc - optind, argv + optind, 1,
			     (const char *const[]){ "NAME" });
	if (ret)
		return ret;
	name = argv[optind];
	ret = check_name(name);
	if (!ret)
		ret = check_limiter(name);
	if (ret)
		return ret;
	ret = load_info(name, &prev);
	if (ret)
		return info_error(name, ret);
	interval = (uint64_t)(secs * 1e9);
	start = rl_now_ns();
	tprev = start;
	if (!json)
		printf("%9s %14s %14s %8s %12s\n", "TIME", "TARGET/s",
		       "ACHIEVED/s", "WAITERS", "MEAN_WAIT");
	for (i = 1; !count || i <= count; i++) {
		sleep_until(start + i * interval);
		ret = load_info(name, &cur);
		t = rl_now_ns();
		if (ret)
			return info_error(name, ret);
		watch_line(&prev, &cur, t - tprev, (t - start) / 1e9);
		prev = cur;
		tprev = t;
	}
	return 0;
}

/* --- main ---------------------------------------------------------- */

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "create", cmd_create },
	{ "set", cmd_set },
	{ "show", cmd_show },
	{ "list", cmd_list },
	{ "ls", cmd_list },
	{ "rm", cmd_rm },
	{ "watch", cmd_watch },
	{ "apply", cmd_apply },
};

/* Drop "--json" from the operands of commands without options. */
static int take_json(int argc, char **argv)
{
	int i, n = 0;

	for (i = 0; i < argc; i++) {
		if (i && !strcmp(argv[i], "--json"))
			json = true;
		else
			argv[n++] = argv[i];
	}
	return n;
}

int main(int argc, char **argv)
{
	const char *env = getenv("RLCTL_SYSFS");
	char *cmd;
	size_t c;
	int i;

	if (env && *env)
		sysfs_root = env;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			print_usage();
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			return tool_version();
		} else {
			return usage("unknown option '%s'", argv[i]);
		}
	}
	if (i == argc)
		return usage("missing command");
	cmd = argv[i];
	if (!strcmp(cmd, "help")) {
		print_usage();
		return 0;
	}
	for (c = 0; c < ARRAY_SIZE(commands); c++) {
		if (strcmp(cmd, commands[c].name))
			continue;
		argc -= i;
		argv += i;
		argv[0] = (char *)tool_name;	/* for getopt's messages */
		if (commands[c].fn != cmd_create && commands[c].fn != cmd_watch)
			argc = take_json(argc, argv);
		return commands[c].fn(argc, argv);
	}
	return usage("unknown command '%s'", cmd);
}
