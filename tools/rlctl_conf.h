/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlctl_conf.h - the declarative files of "rlctl apply" (ratelimit.d(5)).
 *
 * The parser is pure: it reads files and the user and group databases
 * (NSS: getpwnam_r(3), getgrnam_r(3)), never the device, so that the host
 * unit tests can run it. Every problem is reported as "FILE:LINE: what
 * is wrong" by the reader of the files, struct rlconf.rd (rld_error(),
 * on rd.err, counted in rd.errors); parsing goes on to report them all.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLCTL_CONF_H
#define RLCTL_CONF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "libratelimit.h"
#include "ratelimit_d.h"
#include "rlctl_keys.h"
#include "tool.h"

#define RLCONF_DEFAULT_MODE	TOOL_DEFAULT_MODE

/*
 * The keys of a section. Below RLK_MAX, the index of a tunable of
 * rlctl_keys[] (every one but those of kind RLK_IN_SPEC, which the rate
 * carries); the other indices are no key. Then the keys that are not
 * tunables.
 */
enum rlconf_key {
	RLCONF_RATE = RLK_RATE,
	RLCONF_BURST = RLK_BURST,
	RLCONF_UNLIMITED = RLK_UNLIMITED,
	RLCONF_MODE = RLK_MAX,
	RLCONF_OWNER,
	RLCONF_GROUP,
	RLCONF_NKEYS
};

/**
 * struct rlconf_limiter - one [NAME] section
 * @name:     the limiter's name, valid per rl_name_valid()
 * @file:     the file it is in (owned by struct rlconf's reader)
 * @line:     line of the [NAME] header
 * @key_line: line of each key, 0 for a key the section does not give
 * @cfg:      the limits: what struct rl_attach.config gets on creation
 * @mode:     permission bits, RLCONF_DEFAULT_MODE unless given
 * @uid:      owner, when key_line[RLCONF_OWNER]
 * @gid:      group, when key_line[RLCONF_GROUP]
 */
struct rlconf_limiter {
	char name[RL_NAME_MAX];
	const char *file;
	unsigned int line;
	unsigned int key_line[RLCONF_NKEYS];
	struct rl_config cfg;
	uint32_t mode;
	uint32_t uid;
	uint32_t gid;
};

struct rlconf_state;

/**
 * struct rlconf - the limiters of a set of files
 * @lim:    the sections in the order read
 * @n:      their number
 * @cap:    allocated entries of @lim
 * @rd:     the reader of the files: their names, the problems reported
 *          (rd.errors) and where (rd.err, stderr after rlconf_init())
 * @state:  the parser's, while it reads
 */
struct rlconf {
	struct rlconf_limiter *lim;
	size_t n;
	size_t cap;
	struct rld rd;
	struct rlconf_state *state;
};

void rlconf_init(struct rlconf *c);
void rlconf_free(struct rlconf *c);

/* The name of a key as written in a file, "?" for an index that is none. */
const char *rlconf_key_name(enum rlconf_key key);

/* The key named @name, or RLCONF_NKEYS. */
enum rlconf_key rlconf_key_find(const char *name);

/*
 * Read the sections of @in, a file named @file (rld_parse()). Returns 0,
 * or -ENOMEM (then @c is still consistent); problems in the text are
 * reported.
 */
int rlconf_parse(struct rlconf *c, const char *file, FILE *in);

/* Read @path, a file or a directory (rld_load()). Returns 0 or -ENOMEM. */
int rlconf_load(struct rlconf *c, const char *path);

/* The section named @name, or NULL. */
const struct rlconf_limiter *rlconf_find(const struct rlconf *c,
					 const char *name);

#endif /* RLCTL_CONF_H */
