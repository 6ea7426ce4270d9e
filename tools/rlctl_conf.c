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

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define FAIRNESS_MAX	1000000
#define ID_MAX		(UINT32_MAX - 1)	/* (uid_t)-1 means "none" */
#define RATE_HINT	"RATE[/PERIOD][:BURST] such as 100/s, 10MiB/s or 1/1h, or unlimited"
#define RANGE_HINT	"a period of 1ns .. 1d, burst x period up to 2^63 ns"
#define NAME_HINT	"1 to 63 of A-Z a-z 0-9 . _ -, not starting with '.'"

static const char *const key_names[RLCONF_NKEYS] = {
	[RLCONF_RATE] = "rate",
	[RLCONF_BURST] = "burst",
	[RLCONF_CONCURRENCY] = "concurrency",
	[RLCONF_FAIRNESS] = "fairness",
	[RLCONF_CATCHUP] = "catchup",
	[RLCONF_BACKLOG] = "backlog",
	[RLCONF_UNLIMITED] = "unlimited",
	[RLCONF_MODE] = "mode",
	[RLCONF_OWNER] = "owner",
	[RLCONF_GROUP] = "group",
};

/* Where the parser of one file is. */
struct rlconf_state {
	struct rlconf *c;
	const char *file;
	unsigned int line;
	long cur;		/* index of the open section, or -1 */
	bool skip;		/* in a section whose header was bad, or rlsyncd's */
	unsigned int errors;	/* c->errors when the section began */
	bool rate_burst;	/* the rate carried ":BURST" */
	__u64 burst_rate;	/* ... that burst */
	__u64 burst_key;	/* the burst key's value */
	bool rate_unlimited;	/* rate = unlimited */
	int unlimited;		/* the unlimited key: -1 none, 0, 1 */
};

const char *rlconf_key_name(enum rlconf_key key)
{
	return key < RLCONF_NKEYS ? key_names[key] : "?";
}

void rlconf_init(struct rlconf *c)
{
	memset(c, 0, sizeof(*c));
	c->err = stderr;
	c->passwd = "/etc/passwd";
	c->group = "/etc/group";
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

static void verror(struct rlconf *c, const char *file, unsigned int line,
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
	verror(c, file, line, fmt, ap);
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

/* An error at the current line. */
static void __attribute__((format(printf, 2, 3)))
err_at(struct rlconf_state *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(s->c, s->file, s->line, fmt, ap);
	va_end(ap);
}

static struct rlconf_limiter *current(struct rlconf_state *s)
{
	return s->cur < 0 ? NULL : &s->c->lim[s->cur];
}

/* Plain decimal, no sign or blank, at most @max. */
static bool parse_dec(const char *v, uint64_t max, uint64_t *val)
{
	uint64_t n = 0;
	const char *p;

	if (!*v)
		return false;
	for (p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		if (__builtin_mul_overflow(n, 10, &n) ||
		    __builtin_add_overflow(n, (uint64_t)(*p - '0'), &n))
			return false;
	}
	if (n > max)
		return false;
	*val = n;
	return true;
}

static bool parse_mode(const char *v, uint32_t *mode)
{
	uint32_t n = 0;
	const char *p;

	if (!*v)
		return false;
	for (p = v; *p; p++) {
		if (*p < '0' || *p > '7')
			return false;
		n = n * 8 + (uint32_t)(*p - '0');
		if (n > 0777)
			return false;
	}
	*mode = n;
	return true;
}

static int parse_bool(const char *v)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcmp(v, yes[i]))
			return 1;
		if (!strcmp(v, no[i]))
			return 0;
	}
	return -1;
}

/*
 * The id (third field) of the entry @name of a passwd(5) or group(5)
 * file: 0, -ENOENT when there is none, or the -errno of opening @path.
 */
static int db_lookup(const char *path, const char *name, uint32_t *id)
{
	size_t len = strlen(name), cap = 0;
	char *line = NULL, *p, *end;
	int ret = -ENOENT;
	uint64_t val;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, name, len) || line[len] != ':')
			continue;
		p = strchr(line + len + 1, ':');	/* past the password */
		if (!p)
			continue;
		end = strchr(++p, ':');
		if (!end)
			continue;
		*end = '\0';
		if (parse_dec(p, ID_MAX, &val)) {
			*id = (uint32_t)val;
			ret = 0;
			break;
		}
	}
	free(line);
	fclose(f);
	return ret;
}

/* owner or group: a number, or a name of the user or group database. */
static void set_id(struct rlconf_state *s, struct rlconf_limiter *l,
		   enum rlconf_key key, const char *v)
{
	bool user = key == RLCONF_OWNER;
	const char *db = user ? s->c->passwd : s->c->group;
	const char *what = user ? "user" : "group";
	uint64_t num;
	uint32_t id = 0;
	int ret;

	if (parse_dec(v, ID_MAX, &num)) {
		id = (uint32_t)num;
	} else {
		ret = strchr(v, ':') ? -ENOENT : db_lookup(db, v, &id);
		if (ret == -ENOENT)
			err_at(s, "unknown %s '%s' (not in %s)", what, v, db);
		else if (ret)
			err_at(s, "unknown %s '%s' (cannot read %s: %s)", what, v,
			       db, strerror(-ret));
		if (ret)
			return;
	}
	if (user)
		l->uid = id;
	else
		l->gid = id;
}

static void set_amount(struct rlconf_state *s, enum rlconf_key key,
		       const char *v, __u64 *val)
{
	uint64_t n;
	int ret = rl_parse_amount(v, &n);

	if (!ret)
		*val = n;
	else if (ret == -ERANGE)
		err_at(s, "%s '%s' out of range", key_names[key], v);
	else if (ret)
		err_at(s, "invalid %s '%s' (a count such as 50, 10k or 64KiB)",
		       key_names[key], v);
}

static void set_rate(struct rlconf_state *s, struct rlconf_limiter *l,
		     const char *v)
{
	struct rl_config cfg;
	int ret;

	ret = rl_parse_rate(v, &cfg);
	if (ret == -ERANGE) {
		err_at(s, "rate '%s' out of range (" RANGE_HINT ")", v);
		return;
	}
	if (ret) {
		err_at(s, "invalid rate '%s' (" RATE_HINT ")", v);
		return;
	}
	l->cfg.rate = cfg.rate;
	l->cfg.period_ns = cfg.period_ns;
	s->rate_unlimited = cfg.flags & RL_CONFIG_UNLIMITED;
	s->rate_burst = !!strchr(v, ':');
	s->burst_rate = cfg.burst;
}

static void set_key(struct rlconf_state *s, struct rlconf_limiter *l,
		    enum rlconf_key key, const char *v)
{
	uint64_t val;

	switch (key) {
	case RLCONF_RATE:
		set_rate(s, l, v);
		break;
	case RLCONF_BURST:
		set_amount(s, key, v, &s->burst_key);
		break;
	case RLCONF_CONCURRENCY:
		set_amount(s, key, v, &l->cfg.concurrency);
		break;
	case RLCONF_BACKLOG:
		set_amount(s, key, v, &l->cfg.backlog);
		break;
	case RLCONF_FAIRNESS:
		if (parse_dec(v, FAIRNESS_MAX, &val))
			l->cfg.fairness = (uint32_t)val;
		else
			err_at(s, "invalid fairness '%s' (0 .. %u)", v,
			       FAIRNESS_MAX);
		break;
	case RLCONF_CATCHUP:
		if (parse_dec(v, RL_CATCHUP_MAX, &val) &&
		    (!val || val >= RL_CATCHUP_STRICT))
			l->cfg.catchup = (uint32_t)val;
		else
			err_at(s, "invalid catchup '%s' (per-mille, %u .. %u, or 0)",
			       v, RL_CATCHUP_STRICT, RL_CATCHUP_MAX);
		break;
	case RLCONF_UNLIMITED:
		s->unlimited = parse_bool(v);
		if (s->unlimited < 0)
			err_at(s, "invalid unlimited '%s' (yes or no)", v);
		break;
	case RLCONF_MODE:
		if (!parse_mode(v, &l->mode))
			err_at(s, "invalid mode '%s' (octal, 0 .. 0777)", v);
		break;
	case RLCONF_OWNER:
	case RLCONF_GROUP:
		set_id(s, l, key, v);
		break;
	case RLCONF_NKEYS:
		break;
	}
}

/* The checks that take several keys of a section whose keys are valid. */
static void check_section(struct rlconf_state *s, struct rlconf_limiter *l)
{
	struct rl_config *cfg = &l->cfg;
	unsigned int bl = l->key_line[RLCONF_BURST];
	const char *f = s->file;
	uint64_t product;

	if (s->rate_burst && bl) {
		rlconf_error(s->c, f, bl, "burst given twice: here and in the rate at line %u",
			     l->key_line[RLCONF_RATE]);
		return;
	}
	cfg->burst = s->rate_burst ? s->burst_rate : s->burst_key;
	if (!bl)
		bl = l->key_line[RLCONF_RATE];
	if (s->rate_unlimited && s->unlimited == 0) {
		rlconf_error(s->c, f, l->key_line[RLCONF_UNLIMITED],
			     "unlimited = no contradicts rate = unlimited at line %u",
			     l->key_line[RLCONF_RATE]);
		return;
	}
	if (s->rate_unlimited || s->unlimited == 1)
		cfg->flags |= RL_CONFIG_UNLIMITED;
	/* A semaphore grants a request for several permits in one piece. */
	if ((cfg->flags & RL_CONFIG_UNLIMITED) && cfg->concurrency &&
	    !cfg->burst) {
		cfg->burst = cfg->concurrency;
		if (cfg->burst > RL_BURST_PERIOD_MAX / cfg->period_ns)
			cfg->burst = RL_BURST_PERIOD_MAX / cfg->period_ns;
	}
	if (__builtin_mul_overflow(cfg->burst, cfg->period_ns, &product) ||
	    product > RL_BURST_PERIOD_MAX) {
		rlconf_error(s->c, f, bl,
			     "burst %llu x period %llu ns exceeds 2^63",
			     (unsigned long long)cfg->burst,
			     (unsigned long long)cfg->period_ns);
		return;
	}
	if (cfg->burst && (cfg->backlog / 1000 > cfg->burst ||
			   (cfg->backlog / 1000 == cfg->burst &&
			    cfg->backlog % 1000)))
		rlconf_error(s->c, f, l->key_line[RLCONF_BACKLOG],
			     "backlog %llu exceeds 1000 x burst (%llu)",
			     (unsigned long long)cfg->backlog,
			     (unsigned long long)cfg->burst);
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
		check_section(s, l);
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
	for (k = 0; k < RLCONF_NKEYS; k++)
		if (!strcmp(key, key_names[k]))
			break;
	if (k == RLCONF_NKEYS) {
		err_at(s, "unknown key '%s'", key);
	} else if (l->key_line[k]) {
		err_at(s, "duplicate key '%s' (first at line %u)", key,
		       l->key_line[k]);
	} else {
		l->key_line[k] = s->line;
		if (*val)
			set_key(s, l, k, val);
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
