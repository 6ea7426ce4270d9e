/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlctl_conf_parse.h - between the two files of rlctl's parser of
 * ratelimit.d(5): rlctl_conf.c (sections) and rlctl_conf_keys.c (keys
 * and values).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLCTL_CONF_PARSE_H
#define RLCTL_CONF_PARSE_H

#include <stdarg.h>
#include <stdbool.h>

#include "rlctl_conf.h"

/* Where the parser is (the file and line: c->rd's). */
struct rlconf_state {
	struct rlconf *c;
	long cur;		/* index of the open section, or -1 */
	unsigned int errors;	/* c->rd.errors when the section began */
	bool rate_burst;	/* the rate carried ":BURST" */
	__u64 burst_rate;	/* ... that burst */
	__u64 burst_key;	/* the burst key's value */
	bool rate_unlimited;	/* rate = unlimited */
	int unlimited;		/* the unlimited key: -1 none, 0, 1 */
};

/* The struct rlconf of its reader. */
static inline struct rlconf *rlconf_of(struct rld *r)
{
	return (struct rlconf *)((char *)r - offsetof(struct rlconf, rd));
}

/* An error at the current line. */
static inline void __attribute__((format(printf, 2, 3)))
err_at(struct rlconf_state *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rld_verror(&s->c->rd, s->c->rd.file, s->c->rd.line, fmt, ap);
	va_end(ap);
}

/* The open section, or NULL. */
static inline struct rlconf_limiter *current(struct rlconf_state *s)
{
	return s->cur < 0 ? NULL : &s->c->lim[s->cur];
}

/* @key = @v in the open section @l: checked, then set or reported. */
void rlconf_set_key(struct rlconf_state *s, struct rlconf_limiter *l,
		    enum rlconf_key key, const char *v);

/* The checks that take several keys of a section whose keys are valid. */
void rlconf_check_section(struct rlconf_state *s, struct rlconf_limiter *l);

#endif /* RLCTL_CONF_PARSE_H */
