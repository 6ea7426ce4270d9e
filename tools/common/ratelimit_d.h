/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ratelimit_d.h - the reader of ratelimit.d(5) files that rlctl and
 * rlsyncd share (ratelimit_d.c): files and directories of *.conf, lines,
 * comments, blanks, [HEADER]s and KEY = VALUE settings, and problems
 * reported as "FILE:LINE: what is wrong".
 *
 *   file    := { line "\n" }
 *   line    := [ header | setting ] [ "#" comment ]
 *   header  := "[" NAME "]" | "[" "global" NAME "]"
 *   setting := KEY "=" VALUE
 *
 * Blanks around the parts do not matter; "#" starts a comment anywhere
 * (no value holds one). The [NAME] sections are "rlctl apply"'s
 * (rlctl_conf.c), the [global NAME] ones rlsyncd's
 * (tools/global/rlsyncd_conf.c): what the keys mean is theirs.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RL_RATELIMIT_D_H
#define RL_RATELIMIT_D_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define RLD_SUFFIX	".conf"

/**
 * struct rld - a reader of ratelimit.d files
 * @err:     where problems are reported (stderr after rld_init())
 * @prefix:  what starts each report ("" after rld_init(), or "PROG: ")
 * @strict:  the caller owns the whole file: it gets the settings before
 *           the first header, and malformed lines are reported in every
 *           section; otherwise only in the sections it owns
 * @header:  a [HEADER], its text between the brackets trimmed; NULL for a
 *           malformed one (reported already). Returns 1 if the section is
 *           the caller's, 0 if not (its settings are not passed on), or
 *           -ENOMEM to stop
 * @setting: KEY = VALUE in a section of the caller's, both trimmed (the
 *           value may be empty). Returns 0 or -ENOMEM
 * @end:     the end of a file, NULL or called after its last line
 * @file:    the file being read (a copy, which lives until rld_free())
 * @line:    the line being read, from 1
 * @errors:  problems reported so far (rld_error())
 * @files:   the names that @file pointed at
 * @nfiles:  their number
 * @mine:    the lines read now are the caller's
 */
struct rld {
	FILE *err;
	const char *prefix;
	bool strict;
	int (*header)(struct rld *r, char *name);
	int (*setting)(struct rld *r, char *key, char *value);
	void (*end)(struct rld *r);
	const char *file;
	unsigned int line;
	unsigned int errors;
	char **files;
	size_t nfiles;
	bool mine;
};

void rld_init(struct rld *r);
/* Frees the copies of the file names: after the last use of @file. */
void rld_free(struct rld *r);

/*
 * Report a problem as "PREFIXFILE:LINE: message" (just "PREFIXFILE:
 * message" for line 0) and count it.
 */
void rld_error(struct rld *r, const char *file, unsigned int line,
	       const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void rld_verror(struct rld *r, const char *file, unsigned int line,
		const char *fmt, va_list ap);

/*
 * Read @in, a file named @file. Returns 0, or the -errno a callback
 * returned; problems in the text are reported.
 */
int rld_parse(struct rld *r, const char *file, FILE *in);

/*
 * Read @path: a file, or a directory whose "*.conf" regular files (not
 * starting with '.') are read in the byte order of their names. A
 * directory without such files adds nothing and is no error; a missing
 * path is. Returns 0 or -ENOMEM.
 */
int rld_load(struct rld *r, const char *path);

/* The NAME of a header "global NAME", or NULL for another header. */
char *rld_global(char *header);

/* @p without its leading and trailing blanks, cut in place. */
char *rld_trim(char *p);

#endif /* RL_RATELIMIT_D_H */
