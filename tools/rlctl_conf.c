// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_conf.c - the parser of the files of "rlctl apply" (ratelimit.d(5)).
 *
 *   file    := { line "\n" }
 *   line    := [ header | setting ] [ "#" comment ]
 *   header  := "[" NAME "]" | "[" "global" NAME "]"
 *   setting := KEY "=" VALUE
 *
 * Blanks around the parts do not matter; "#" starts a comment anywhere
 * (no value holds one). A [global NAME] section is rlsyncd(8)'s and is
 * skipped whole. Keys and their values are those of
 * enum rlconf_key, checked here as far as a file alone can tell; what
 * depends on the running module is the business of rlctl_apply.c.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE	/* asprintf() */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rlctl_conf.h"
#include "rlctl_conf_parse.h"

#define NAME_HINT	"1 to 63 of A-Z a-z 0-9 . _ -, not starting with '.'"

void rlconf_init(struct rlconf *c)
{
	memset(c, 0, sizeof(*c));
	c->err = stderr;
}

void rlconf_free(struct rlconf *c)
{
	size_t i;

	for (i = 0; i < c->nfiles; i++)
		free(c->files[i]);
	free(c->files);
	free(c->lim);
	c->files = NULL;
	c->lim = NULL;
	c->nfiles = 0;
	c->n = 0;
	c->cap = 0;
}

void rlconf_verror(struct rlconf *c, const char *file, unsigned int line,
		   const char *fmt, va_list ap)
{
	if (line)
		fprintf(c->err, "%s:%u: ", file, line);
	else
		fprintf(c->err, "%s: ", file);
	vfprintf(c->err, fmt, ap);
	fputc('\n', c->err);
	c->errors++;
}

void rlconf_error(struct rlconf *c, const char *file, unsigned int line,
		  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rlconf_verror(c, file, line, fmt, ap);
	va_end(ap);
}

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
		rlconf_error(s->c, s->file, l->line,
			     "[%s] has no rate (rate = RATE/PERIOD, or unlimited)",
			     l->name);
	else if (s->c->errors == s->errors)
		rlconf_check_section(s, l);
	s->cur = -1;
}

static int start_section(struct rlconf_state *s, const char *name)
{
	const struct rlconf_limiter *prev;
	struct rlconf_limiter *l;
	struct rlconf *c = s->c;
	size_t cap;

	finish_section(s);
	s->skip = true;
	/* [global NAME]: rlsyncd's (rlsyncd(8)), skipped whole */
	if (!strncmp(name, "global", 6) && isspace((unsigned char)name[6]))
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
	l->file = s->file;
	l->line = s->line;
	l->mode = RLCONF_DEFAULT_MODE;
	s->cur = (long)c->n++;
	s->skip = false;
	s->errors = c->errors;
	s->rate_burst = false;
	s->burst_key = 0;
	s->rate_unlimited = false;
	s->unlimited = -1;
	return 0;
}

static char *trim(char *p)
{
	char *end;

	while (isspace((unsigned char)*p))
		p++;
	end = p + strlen(p);
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	*end = '\0';
	return p;
}

static int parse_line(struct rlconf_state *s, char *line)
{
	struct rlconf_limiter *l = current(s);
	char *p, *key, *val;
	unsigned int k;

	p = strchr(line, '#');
	if (p)
		*p = '\0';
	line = trim(line);
	if (!*line)
		return 0;
	if (*line == '[') {
		p = strchr(line, ']');
		if (p && !p[1]) {
			*p = '\0';
			return start_section(s, trim(line + 1));
		}
		finish_section(s);
		s->skip = true;
		err_at(s, "expected [NAME] alone on the line, not '%s'", line);
		return 0;
	}
	p = strchr(line, '=');
	if (!p) {
		err_at(s, "expected KEY = VALUE or [NAME], not '%s'", line);
		return 0;
	}
	*p = '\0';
	key = trim(line);
	val = trim(p + 1);
	if (s->skip)
		return 0;
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
		l->key_line[k] = s->line;
		if (*val)
			rlconf_set_key(s, l, k, val);
		else
			err_at(s, "%s has no value", key);
	}
	return 0;
}

/* A copy of @file that lives as long as @c. */
static const char *keep_name(struct rlconf *c, const char *file)
{
	char **files, *copy;

	files = realloc(c->files, (c->nfiles + 1) * sizeof(*files));
	if (!files)
		return NULL;
	c->files = files;
	copy = strdup(file);
	if (copy)
		c->files[c->nfiles++] = copy;
	return copy;
}

int rlconf_parse(struct rlconf *c, const char *file, FILE *in)
{
	struct rlconf_state s = { .c = c, .cur = -1 };
	size_t cap = 0;
	char *line = NULL;
	ssize_t n;
	int ret = 0;

	s.file = keep_name(c, file);
	if (!s.file)
		return -ENOMEM;
	while (!ret && (n = getline(&line, &cap, in)) > 0) {
		s.line++;
		if (strlen(line) != (size_t)n) {
			err_at(&s, "NUL byte in the line");
			continue;
		}
		ret = parse_line(&s, line);
	}
	if (!ret && ferror(in))
		rlconf_error(c, s.file, 0, "read error: %s", strerror(errno));
	if (!ret)
		finish_section(&s);
	free(line);
	return ret;
}

static int load_file(struct rlconf *c, const char *path)
{
	FILE *f = fopen(path, "re");
	int ret;

	if (!f) {
		rlconf_error(c, path, 0, "%s", strerror(errno));
		return 0;
	}
	ret = rlconf_parse(c, path, f);
	fclose(f);
	return ret;
}

static int is_conf(const struct dirent *d)
{
	size_t len = strlen(d->d_name), slen = strlen(RLCONF_SUFFIX);

	return d->d_name[0] != '.' && len > slen &&
	       !strcmp(d->d_name + len - slen, RLCONF_SUFFIX);
}

/* Byte order, whatever the locale. */
static int byte_order(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int load_dir(struct rlconf *c, const char *dir)
{
	size_t len = strlen(dir);
	const char *sep = len && dir[len - 1] == '/' ? "" : "/";
	struct dirent **ents;
	struct stat st;
	char *path;
	int i, n, ret = 0;

	n = scandir(dir, &ents, is_conf, byte_order);
	if (n < 0) {
		rlconf_error(c, dir, 0, "%s", strerror(errno));
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (!ret && asprintf(&path, "%s%s%s", dir, sep,
				     ents[i]->d_name) < 0)
			ret = -ENOMEM;
		if (!ret) {
			if (stat(path, &st))
				rlconf_error(c, path, 0, "%s", strerror(errno));
			else if (S_ISREG(st.st_mode))
				ret = load_file(c, path);
			free(path);
		}
		free(ents[i]);
	}
	free(ents);
	return ret;
}

int rlconf_load(struct rlconf *c, const char *path)
{
	struct stat st;

	if (stat(path, &st)) {
		rlconf_error(c, path, 0, "%s", strerror(errno));
		return 0;
	}
	if (S_ISDIR(st.st_mode))
		return load_dir(c, path);
	return load_file(c, path);
}

