/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlctl.h - what the files of rlctl share: rlctl.c (the command line),
 * rlctl_sysfs.c (the limiters' sysfs files), rlctl_fmt.c (output),
 * rlctl_set.c (create, rm, set), rlctl_show.c (show, list),
 * rlctl_watch.c (watch), rlctl_export.c (export), rlctl_apply.c and
 * rlctl_conf.c (apply), rlctl_keyed.c (key); rlctl_keys.c, the table of
 * tunables they share.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLCTL_H
#define RLCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "libratelimit.h"
#include "rlctl_keys.h"
#include "tool.h"

#define SYSFS_ROOT	"/sys/kernel/ratelimit"

/* rlctl's errors: 1, or EXIT_USAGE for the command line (tool.h). */
#define fail(...)	tool_fail(1, __VA_ARGS__)
#define usage(...)	tool_usage(EXIT_USAGE, __VA_ARGS__)

/* --json: JSON output (show, list, watch). */
extern bool json;

/*
 * The directory of the names of this process's IPC namespace:
 * /sys/kernel/ratelimit on the host, /sys/kernel/ratelimit/ipc:INUM in a
 * container; or RLCTL_SYSFS from the environment.
 */
extern const char *sysfs_root;
/* /sys/kernel/ratelimit, there while the module is loaded; or RLCTL_SYSFS. */
extern const char *sysfs_base;

/* The sysfs attributes of a limiter, all decimal u64 but mode (octal). */
struct info {
	uint64_t key[RLK_MAX];	/* the tunables, by row of rlctl_keys[] */
	uint64_t granted, requests, immediate, waited;
	uint64_t wait_ns_total, wait_ns_max, timeouts, interrupted;
	uint64_t rejected, waiters, available;
	uint64_t held, backlog_tokens, refunded;
	uint64_t clients, owner, group, persistent, mode;
	uint64_t missing;	/* bit i: optional attrs[i] not there */
};

/* A file of struct info; flags A_LIST and A_OPT (rlctl_keys.h). */
struct attr {
	const char *key;
	size_t off;
	unsigned int flags;
};

/*
 * The files of struct info, in the order show prints them: the tunables
 * (rlctl_keys[]), then the others. attr_at(i) for i < nattrs().
 */
size_t nattrs(void);
struct attr attr_at(size_t i);

#define FIELD(i, a)	((uint64_t *)((char *)(i) + (a)->off))

/* rlctl.c: the checks of the command line; 0 or the exit status. */
int check_operands(const char *cmd, int n, char **ops, int want,
		   const char *const *names);
int check_name(const char *name);
/* One line about an error (-errno) for limiter @name; the exit status. */
int name_error(const char *name, int err);

/* rlctl_sysfs.c: the files of limiter @name (see there). */
int write_attr(const char *name, const char *key, uint64_t val);
int check_limiter(const char *name);
int load_info(const char *name, struct info *info);
int info_error(const char *name, int err);
int limiter_info(const char *name, struct info *info);
void info_config(const struct info *info, struct rl_config *cfg);
double target_rate(const struct info *info);
char *read_text(const char *name, const char *key, int *err);

/*
 * The file keys of a keyed limiter: lines "KEY N", the counts of
 * RL_IOC_GET_KEYS (struct rl_keys_stats), never a key.
 */
struct keys_info {
	uint64_t keys, keys_max, created, evicted, refused, waiters;
};

/*
 * rlctl_sysfs.c: the file keys of @name into @k: 0, -ENOENT when @name
 * or the file is missing (a limiter that is not keyed has none), or
 * another -errno.
 */
int load_keys(const char *name, struct keys_info *k);
/* rlctl_sysfs.c: is @info a keyed limiter's? */
bool info_keyed(const struct info *info);

/* wait_histogram: lines "FLOOR_NS COUNT", log2 buckets of the waits. */
#define HIST_MAX	65

struct hist {
	size_t n;
	uint64_t floor[HIST_MAX], count[HIST_MAX], total;
};

/* rlctl_sysfs.c: @text, a wait_histogram, into @h (@text is cut up). */
void parse_hist(char *text, struct hist *h);

/*
 * rlctl_sysfs.c: the limiters' directories, by name (free each and the
 * array), with the links to the host's limiters shared into this
 * container: how many, or -1 after saying why.
 */
struct dirent;
int scan_limiters(struct dirent ***ents);
/* rlctl_sysfs.c: scandir()'s filter of the limiters' directories. */
int is_limiter_dir(const struct dirent *d);

/* rlctl_fmt.c: output (see there). */
void json_string(const char *s);

/*
 * "rlctl show": NAME's link to a global resource, from rlsyncd's state
 * file (rlctl_global.c); a JSON member with --json, nothing without one.
 */
void show_global(const char *name);
/*
 * "rlctl export": the links of the limiters @names (@n) to global
 * resources, from rlsyncd's state files, as Prometheus families
 * (rlctl_global.c); nothing when the state directory does not exist or
 * none of them has a file.
 */
void export_global(FILE *f, const char *const *names, size_t n);
/* rlctl_fmt.c: {limiter="NAME" escaped; the caller closes the set. */
void prom_label(FILE *f, const char *name);
/* rlctl_fmt.c: a label value, escaped, without its quotes. */
void prom_value(FILE *f, const char *v);
/* rlctl_fmt.c: numbers and rates as rlctl prints them. */
void json_rate(double per_s);
const char *fmt_num(char *buf, size_t len, double x);
const char *fmt_target(char *buf, size_t len, double target);
const char *fmt_rate_unit(char *buf, size_t len, double per_s);

/*
 * The commands: argv[0] is the program, the command's options and
 * operands follow. Each returns the exit status: 0, 1 for errors, 2
 * (EXIT_USAGE) for a bad command line.
 */
int cmd_create(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_share(int argc, char **argv);
int cmd_set(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_watch(int argc, char **argv);
/* rlctl export [-o FILE] [NAME...] (rlctl_export.c) */
int cmd_export(int argc, char **argv);
/* rlctl apply [--dry-run] [--prune] PATH... (rlctl_apply.c) */
int cmd_apply(int argc, char **argv);
/* rlctl key NAME KEY [--hex] (rlctl_keyed.c) */
int cmd_key(int argc, char **argv);

/* rlctl_tree.c: --parent NAME, --weight W, --root of create and set. */
struct tree_opts {
	bool set;		/* one of them was given */
	bool root;		/* --root */
	const char *parent;	/* --parent */
	uint32_t weight;	/* --weight, 0 for 1 */
};

int tree_option(int argc, char **argv, struct tree_opts *t);
int tree_options(int *argc, char **argv, struct tree_opts *t);
int tree_apply(int fd, const char *name, const struct tree_opts *t);

/* rlctl set's --mode, --owner and --group (rlctl_apply_perm.c) */
struct perm_opts {
	uint32_t flags;		/* RL_PERM_* of the options given */
	uint32_t uid, gid, mode;
};

int perm_options(int *argc, char **argv, struct perm_opts *p);
int perm_apply(const char *name, const struct perm_opts *p);
/* rlctl tree [-i SECONDS] (rlctl_tree.c) */
int cmd_tree(int argc, char **argv);

#endif /* RLCTL_H */
