// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_conf.c - the [NAME] sections of the files of "rlctl apply"
 * (ratelimit.d(5)), read by the reader rlsyncd shares
 * (tools/common/ratelimit_d.c), which says the lexical rules. A
 * [global NAME] section is rlsyncd(8)'s and is skipped whole. Keys and
 * their values are those of enum rlconf_key, checked in rlctl_conf_keys.c
 * as far as a file alone can tell; what depends on the running module is
 * the business of rlctl_apply.c.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rlctl_conf.h"
#include "rlctl_conf_parse.h"

#define NAME_HINT	"1 to 63 of A-Z a-z 0-9 . _ -, not starting with '.'"

const struct rlconf_limiter *rlconf_find(const struct rlconf *c,
					 const char *name)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (!strcmp(c->lim[i].name, name))
			return &c->lim[i];
	return NULL;
}

/* The end of the open section, if any. */
static void finish_section(struct rlconf_state *s)
{
	struct rlconf_limiter *l = current(s);

	if (!l)
		return;
	if (!l->key_line[RLCONF_RATE])
		rld_error(&s->c->rd, l->file, l->line,
			  "[%s] has no rate (rate = RATE/PERIOD, or unlimited)",
			  l->name);
	else if (s->c->rd.errors == s->errors)
		rlconf_check_section(s, l);
	s->cur = -1;
}

/* [NAME]: 1, 0 for a section not rlctl's or a bad one, or -ENOMEM. */
static int on_header(struct rld *r, char *name)
{
	struct rlconf_state *s = rlconf_of(r)->state;
	const struct rlconf_limiter *prev;
	struct rlconf_limiter *l;
	struct rlconf *c = s->c;
	size_t cap;

	finish_section(s);
	/* a bad header (reported), or [global NAME]: rlsyncd's */
	if (!name || rld_global(name))
		return 0;
	if (!rl_name_valid(name)) {
		err_at(s, "invalid limiter name '%s' (" NAME_HINT ")", name);
		return 0;
	}
	prev = rlconf_find(c, name);
	if (prev)
		err_at(s, "duplicate limiter '%s' (first at %s:%u)", name,
		       prev->file, prev->line);
	if (c->n == c->cap) {
		cap = c->cap ? c->cap * 2 : 16;
		l = realloc(c->lim, cap * sizeof(*l));
		if (!l)
			return -ENOMEM;
		c->lim = l;
		c->cap = cap;
	}
	l = &c->lim[c->n];
	memset(l, 0, sizeof(*l));
	strcpy(l->name, name);	/* rl_name_valid(): it fits */
	l->file = r->file;
	l->line = r->line;
	l->mode = RLCONF_DEFAULT_MODE;
	s->cur = (long)c->n++;
	s->errors = c->rd.errors;
	s->rate_burst = false;
	s->burst_key = 0;
	s->rate_unlimited = false;
	s->unlimited = -1;
	return 1;
}

/* KEY = VALUE in a section of rlctl's, or before the first header. */
static int on_setting(struct rld *r, char *key, char *val)
{
	struct rlconf_state *s = rlconf_of(r)->state;
	struct rlconf_limiter *l = current(s);
	unsigned int k;

	if (!l) {
		err_at(s, "'%s' outside a section: start one with [NAME]", key);
		return 0;
	}
	k = rlconf_key_find(key);
	if (k == RLCONF_NKEYS) {
		err_at(s, "unknown key '%s'", key);
	} else if (l->key_line[k]) {
		err_at(s, "duplicate key '%s' (first at line %u)", key,
		       l->key_line[k]);
	} else {
		l->key_line[k] = r->line;
		if (*val)
			rlconf_set_key(s, l, k, val);
		else
			err_at(s, "%s has no value", key);
	}
	return 0;
}

static void on_end(struct rld *r)
{
	finish_section(rlconf_of(r)->state);
}

void rlconf_init(struct rlconf *c)
{
	memset(c, 0, sizeof(*c));
	rld_init(&c->rd);
	c->rd.strict = true;
	c->rd.header = on_header;
	c->rd.setting = on_setting;
	c->rd.end = on_end;
}

void rlconf_free(struct rlconf *c)
{
	rld_free(&c->rd);
	free(c->lim);
	c->lim = NULL;
	c->n = 0;
	c->cap = 0;
}

int rlconf_parse(struct rlconf *c, const char *file, FILE *in)
{
	struct rlconf_state s = { .c = c, .cur = -1 };
	int ret;

	c->state = &s;
	ret = rld_parse(&c->rd, file, in);
	c->state = NULL;
	return ret;
}

int rlconf_load(struct rlconf *c, const char *path)
{
	struct rlconf_state s = { .c = c, .cur = -1 };
	int ret;

	c->state = &s;
	ret = rld_load(&c->rd, path);
	c->state = NULL;
	return ret;
}
