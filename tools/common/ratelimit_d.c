// SPDX-License-Identifier: GPL-2.0-only
/*
 * ratelimit_d.c - the reader of ratelimit.d(5) files that rlctl and
 * rlsyncd share: the lexical rules, files and directories, and the
 * "FILE:LINE: what is wrong" reports (ratelimit_d.h).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE	/* asprintf() */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ratelimit_d.h"

void rld_init(struct rld *r)
{
	memset(r, 0, sizeof(*r));
	r->err = stderr;
	r->prefix = "";
}

void rld_free(struct rld *r)
{
	size_t i;

	for (i = 0; i < r->nfiles; i++)
		free(r->files[i]);
	free(r->files);
	r->files = NULL;
	r->nfiles = 0;
	r->file = NULL;
}

void rld_verror(struct rld *r, const char *file, unsigned int line,
		const char *fmt, va_list ap)
{
	if (line)
		fprintf(r->err, "%s%s:%u: ", r->prefix, file, line);
	else
		fprintf(r->err, "%s%s: ", r->prefix, file);
	vfprintf(r->err, fmt, ap);
	fputc('\n', r->err);
	r->errors++;
}

void rld_error(struct rld *r, const char *file, unsigned int line,
	       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rld_verror(r, file, line, fmt, ap);
	va_end(ap);
}

char *rld_trim(char *p)
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

char *rld_global(char *header)
{
	if (strncmp(header, "global", 6) || !isspace((unsigned char)header[6]))
		return NULL;
	return rld_trim(header + 6);
}

/* A [HEADER] line, trimmed. */
static int header_line(struct rld *r, char *line)
{
	char *p = strchr(line, ']');
	int ret;

	if (p && !p[1]) {
		*p = '\0';
		ret = r->header(r, rld_trim(line + 1));
		r->mine = ret > 0;
		return ret < 0 ? ret : 0;
	}
	ret = r->header(r, NULL);
	r->mine = false;
	rld_error(r, r->file, r->line,
		  "expected [NAME] alone on the line, not '%s'", line);
	return ret < 0 ? ret : 0;
}

static int parse_line(struct rld *r, char *line)
{
	char *p;

	p = strchr(line, '#');
	if (p)
		*p = '\0';
	line = rld_trim(line);
	if (!*line)
		return 0;
	if (*line == '[')
		return header_line(r, line);
	p = strchr(line, '=');
	if (!p) {
		if (r->strict || r->mine)
			rld_error(r, r->file, r->line,
				  "expected KEY = VALUE or [NAME], not '%s'",
				  line);
		return 0;
	}
	*p = '\0';
	if (!r->mine)
		return 0;
	return r->setting(r, rld_trim(line), rld_trim(p + 1));
}

/* A copy of @file that lives as long as @r's names. */
static const char *keep_name(struct rld *r, const char *file)
{
	char **files, *copy;

	files = realloc(r->files, (r->nfiles + 1) * sizeof(*files));
	if (!files)
		return NULL;
	r->files = files;
	copy = strdup(file);
	if (copy)
		r->files[r->nfiles++] = copy;
	return copy;
}

int rld_parse(struct rld *r, const char *file, FILE *in)
{
	size_t cap = 0;
	char *line = NULL;
	ssize_t n;
	int ret = 0;

	r->file = keep_name(r, file);
	if (!r->file)
		return -ENOMEM;
	r->line = 0;
	r->mine = r->strict;
	while (!ret && (n = getline(&line, &cap, in)) > 0) {
		r->line++;
		if (strlen(line) != (size_t)n) {
			if (r->strict || r->mine)
				rld_error(r, r->file, r->line,
					  "NUL byte in the line");
			continue;
		}
		ret = parse_line(r, line);
	}
	if (!ret && ferror(in))
		rld_error(r, r->file, 0, "read error: %s", strerror(errno));
	if (!ret && r->end)
		r->end(r);
	free(line);
	return ret;
}

static int load_file(struct rld *r, const char *path)
{
	FILE *f = fopen(path, "re");
	int ret;

	if (!f) {
		rld_error(r, path, 0, "%s", strerror(errno));
		return 0;
	}
	ret = rld_parse(r, path, f);
	fclose(f);
	return ret;
}

static int is_conf(const struct dirent *d)
{
	size_t len = strlen(d->d_name), slen = strlen(RLD_SUFFIX);

	return d->d_name[0] != '.' && len > slen &&
	       !strcmp(d->d_name + len - slen, RLD_SUFFIX);
}

/* Byte order, whatever the locale. */
static int byte_order(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int load_dir(struct rld *r, const char *dir)
{
	size_t len = strlen(dir);
	const char *sep = len && dir[len - 1] == '/' ? "" : "/";
	struct dirent **ents;
	struct stat st;
	char *path;
	int i, n, ret = 0;

	n = scandir(dir, &ents, is_conf, byte_order);
	if (n < 0) {
		rld_error(r, dir, 0, "%s", strerror(errno));
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (!ret && asprintf(&path, "%s%s%s", dir, sep,
				     ents[i]->d_name) < 0)
			ret = -ENOMEM;
		if (!ret) {
			if (stat(path, &st))
				rld_error(r, path, 0, "%s", strerror(errno));
			else if (S_ISREG(st.st_mode))
				ret = load_file(r, path);
			free(path);
		}
		free(ents[i]);
	}
	free(ents);
	return ret;
}

int rld_load(struct rld *r, const char *path)
{
	struct stat st;

	if (stat(path, &st)) {
		rld_error(r, path, 0, "%s", strerror(errno));
		return 0;
	}
	if (S_ISDIR(st.st_mode))
		return load_dir(r, path);
	return load_file(r, path);
}
