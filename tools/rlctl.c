// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl - create, tune, inspect and remove named /dev/ratelimit limiters.
 *
 * create and rm use the ioctls (RL_IOC_ATTACH, RL_IOC_UNLINK); set, show,
 * list and watch use /sys/kernel/ratelimit/ (RLCTL_SYSFS overrides the
 * path, for tests against a fake tree). apply, in rlctl_apply.c, makes the
 * limiters match declarative files (ratelimit.d(5)). This file reads the
 * command line; each group of commands has a file of its own (rlctl.h).
 *
 * Exit status: 0 ok, 1 error, 2 usage (bad command line, name, rate, key
 * or value).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "libratelimit.h"
#include "rlctl.h"
#include "tool.h"

TOOL_NAME("rlctl");

bool json;

static void print_usage(void)
{
	fprintf(stdout,
		"usage: rlctl [--json] COMMAND [ARGS]\n"
		"  create NAME RATESPEC [--burst N] [--mode OCTAL] [--transient]\n"
		"         [--concurrency N] [--fairness N] [--catchup PERMILLE] [--backlog N]\n"
		"         [--keyed [--keys N]] [--fair-per-user]\n"
		"         [--parent NAME [--weight W]]\n"
		"                       create a named limiter that stays until rm\n"
		"                       (mode default 0644); --transient: one that\n"
		"                       goes as rlctl exits; --keyed: a bucket per\n"
		"                       key, at most N keys with state (rlctl key);\n"
		"                       --fair-per-user: fair shares per user, not\n"
		"                       per fd\n"
		"  set NAME KEY=VALUE...  change it; keys: rate (a rate spec or a\n"
		"                       number), period_ns, burst, unlimited (0 or 1),\n"
		"                       concurrency, fairness, catchup, backlog,\n"
		"                       fed (0 or 1), keys (keyed only),\n"
		"                       fair_per_user (0 or 1)\n"
		"  set NAME --parent PARENT [--weight W] | --root\n"
		"                       move it under PARENT, or make it a root\n"
		"  set NAME [--mode OCTAL] [--owner UID] [--group GID]\n"
		"                       change its mode, owner, group in place\n"
		"  tree [-i SECONDS]    the trees of limiters: rate, achieved rate\n"
		"                       and share of the parent's, per level\n"
		"  show NAME            configuration, statistics, wait percentiles,\n"
		"                       keys (keyed) and clients with their shares\n"
		"  key NAME KEY [--hex] one key's state in a keyed limiter: tokens,\n"
		"                       when full, waiters; KEY as bytes or in hex\n"
		"  list                 one line per limiter\n"
		"  rm NAME              remove the name\n"
		"  share NAME PID|PATH [--revoke]\n"
		"                       give the host's limiter NAME to the IPC\n"
		"                       namespace of PID (a container's), or take\n"
		"                       it back\n"
		"  watch NAME [-i SECONDS] [-n COUNT]\n"
		"                       target and achieved rate every interval\n"
		"  apply [--dry-run] [--prune] PATH...\n"
		"                       make the limiters match the files (or the\n"
		"                       *.conf of directories), see ratelimit.d(5)\n"
		"  export [-o FILE] [NAME...]\n"
		"                       counters, gauges and the wait histogram of\n"
		"                       the limiters (all by default) for Prometheus\n"
		"  --json               JSON output (show, list, watch, key)\n"
		"  -h, --help           show this help\n"
		"  --version            print the version\n"
		"RLCTL_SYSFS in the environment replaces " SYSFS_ROOT ".\n");
}

/*
 * @cmd got the @n operands @ops and wants @want of them, named @names:
 * 0, or the usage error about the first missing or unexpected one.
 */
int check_operands(const char *cmd, int n, char **ops, int want,
		   const char *const *names)
{
	if (n < want)
		return usage("%s: missing %s", cmd, names[n]);
	if (n > want)
		return usage("%s: unexpected argument '%s'", cmd, ops[want]);
	return 0;
}

/* One-line message for an error about limiter @name; returns the exit. */
int name_error(const char *name, int err)
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

int check_name(const char *name)
{
	if (!rl_name_valid(name))
		return usage("invalid name '%s'", name);
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
	{ "share", cmd_share },
	{ "watch", cmd_watch },
	{ "apply", cmd_apply },
	{ "export", cmd_export },
	{ "tree", cmd_tree },
	{ "key", cmd_key },
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

/* Inode number of the host's IPC namespace (PROC_IPC_INIT_INO). */
#define HOST_IPC_INUM	0xEFFFFFFFU

/* Set sysfs_root and sysfs_base from RLCTL_SYSFS (@env) or the namespace. */
static void set_sysfs_root(const char *env)
{
	static char root[sizeof(SYSFS_ROOT "/ipc:") + 10];
	struct stat st;

	if (env && *env) {
		sysfs_root = env;
		sysfs_base = env;
		return;
	}
	if (stat("/proc/self/ns/ipc", &st) || st.st_ino == HOST_IPC_INUM)
		return;
	snprintf(root, sizeof(root), SYSFS_ROOT "/ipc:%lu", (unsigned long)st.st_ino);
	sysfs_root = root;
}

int main(int argc, char **argv)
{
	char *cmd;
	size_t c;
	int i;

	set_sysfs_root(getenv("RLCTL_SYSFS"));
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
		if (commands[c].fn != cmd_create && commands[c].fn != cmd_watch &&
		    commands[c].fn != cmd_export)
			argc = take_json(argc, argv);
		return commands[c].fn(argc, argv);
	}
	return usage("unknown command '%s'", cmd);
}

