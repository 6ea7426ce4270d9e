// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_apply_perm.c - "rlctl set NAME --mode MODE --owner UID --group
 * GID": the owner, group and mode of a live limiter, changed in place
 * (RL_IOC_SET_PERM), as "rlctl apply" changes them for a file.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "rlctl.h"
#include "sysfile.h"
#include "tool.h"

/* @v as a number in @base, at most @max: 0, or -1 after a usage error. */
static int perm_number(const char *opt, const char *v, int base, uint64_t max,
		       uint32_t *out)
{
	uint64_t n;

	if (sysfile_parse_u64(v, base, &n) || n > max) {
		usage("%s: invalid value '%s' (%s)", opt, v,
		      base == 8 ? "octal, 0 to 0777" : "a number");
		return -1;
	}
	*out = (uint32_t)n;
	return 0;
}

static const struct {
	const char *opt;
	uint32_t flag;
} perm_opts_list[] = {
	{ "--mode", RL_PERM_MODE },
	{ "--owner", RL_PERM_UID },
	{ "--group", RL_PERM_GID },
};

/* The index of option @arg in perm_opts_list, or -1. */
static int perm_which(const char *arg)
{
	size_t j;

	for (j = 0; j < ARRAY_SIZE(perm_opts_list); j++)
		if (!strcmp(arg, perm_opts_list[j].opt))
			return (int)j;
	return -1;
}

/* The value of option @arg (@w, from perm_which()) into @p; 0 or -1. */
static int perm_value(struct perm_opts *p, int w, const char *arg,
		      const char *v)
{
	uint32_t flag = perm_opts_list[w].flag;

	p->flags |= flag;
	if (flag == RL_PERM_MODE)
		return perm_number(arg, v, 8, 0777, &p->mode);
	return perm_number(arg, v, 10, UINT32_MAX - 1,
			   flag == RL_PERM_UID ? &p->uid : &p->gid);
}

/**
 * perm_options() - take --mode MODE, --owner UID and --group GID out of
 *                  the arguments
 * @argc: arguments; set to those left
 * @argv: the arguments, argv[0] the command; the others move down
 * @p:    what they set (p->flags: RL_PERM_*)
 *
 * Return: 0, or the exit status of a usage error.
 */
int perm_options(int *argc, char **argv, struct perm_opts *p)
{
	int i, n = 0, w;

	for (i = 0; i < *argc; i++) {
		w = i ? perm_which(argv[i]) : -1;
		if (w < 0) {
			argv[n++] = argv[i];
			continue;
		}
		if (i + 1 >= *argc)
			return usage("%s: missing value", argv[i]);
		if (perm_value(p, w, argv[i], argv[i + 1]))
			return EXIT_USAGE;
		i++;
	}
	*argc = n;
	return 0;
}

#define PERM_DENIED \
	"only its owner may change its mode, or its group to one of its own; another owner takes root"

/**
 * perm_apply() - change the owner, group and mode of limiter @name
 * @name: the limiter
 * @p:    from perm_options(); nothing to do without flags
 *
 * Return: 0 or the exit status, after saying why.
 */
int perm_apply(const char *name, const struct perm_opts *p)
{
	int fd, ret;

	if (!p->flags)
		return 0;
	fd = rl_open_named(name, 0, 0, NULL);
	if (fd < 0)
		return name_error(name, fd);
	ret = rl_set_perm(fd, p->uid, p->gid, p->mode, p->flags);
	rl_close(fd);
	switch (ret) {
	case 0:
		return 0;
	case -EPERM:
		return fail("cannot change the owner, group or mode of '%s': %s",
			    name, PERM_DENIED);
	case -ENOTTY:
		return fail("the loaded module cannot change owner, group or mode in place");
	case -EINVAL:
		return fail("cannot change the owner, group or mode of '%s': invalid id",
			    name);
	default:
		return name_error(name, ret);
	}
}
