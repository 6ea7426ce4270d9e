// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_conf.c - the [global NAME] sections of ratelimit.d(5) files.
 *
 * The files are rlctl's: "rlctl apply" reads the [NAME] sections and
 * skips the [global NAME] ones; rlsyncd reads these and skips the rest.
 * The lexical rules are the same (comments, spaces, KEY = VALUE).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PROG "rlsyncd"
#include "tool.h"
#include "rlsyncd.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define RLS_DEF_LEASE_MS	10000.0
#define RLS_DEF_REFRESH_MS	1000.0
#define RLS_DEF_HOLD_MS		10000.0

void rls_spec_init(struct rls_spec *s, const char *name,
		   const struct rls_spec *from)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->resource, sizeof(s->resource), "%s", name);
	if (from) {
		memcpy(s->redis, from->redis, sizeof(s->redis));
		s->conn = from->conn;
	} else {
		snprintf(s->redis, sizeof(s->redis), "127.0.0.1:6379");
		snprintf(s->conn.host, sizeof(s->conn.host), "127.0.0.1");
		s->conn.port = 6379;
	}
	snprintf(s->algorithm, sizeof(s->algorithm), "fair");
	s->file = "command line";
	s->lease_ms = RLS_DEF_LEASE_MS;
	s->refresh_ms = RLS_DEF_REFRESH_MS;
	s->hold_ms = RLS_DEF_HOLD_MS;
	s->weight = 1;
}

int rls_parse_tps(const char *v, double *tps)
{
	struct rl_config cfg;

	if (!strcmp(v, "0")) {
		*tps = 0;
		return 0;
	}
	if (rl_parse_rate(v, &cfg) || (cfg.flags & RL_CONFIG_UNLIMITED))
		return -EINVAL;
	*tps = (double)cfg.rate * 1e9 / (double)cfg.period_ns;
	return 0;
}

int rls_parse_ms(const char *v, double *ms)
{
	static const struct { const char *unit; double ms; } units[] = {
		{ "ms", 1 }, { "s", 1e3 }, { "m", 6e4 }, { "h", 3.6e6 },
	};
	char *end;
	double n;
	size_t i;

	errno = 0;
	n = strtod(v, &end);
	if (errno || end == v || !(n >= 0) || !isdigit((unsigned char)*v))
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		if (!strcmp(end, units[i].unit)) {
			*ms = n * units[i].ms;
			return 0;
		}
	}
	return -EINVAL;
}

/* "rlsyncd: FILE:LINE: [global NAME]: message", or "rlsyncd: NAME: ...". */
static int __attribute__((format(printf, 2, 3)))
spec_err(const struct rls_spec *s, const char *fmt, ...)
{
	va_list ap;

	if (s->line)
		fprintf(stderr, PROG ": %s:%u: [global %s]: ", s->file, s->line,
			s->name);
	else
		fprintf(stderr, PROG ": %s: ", s->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -EINVAL;
}

/* Say @msg in *@why: -EINVAL. */
static int bad(const char **why, const char *msg)
{
	*why = msg;
	return -EINVAL;
}

/* A decimal number 0..@max, digits only; -1 if not. */
static long strict_num(const char *v, size_t len, long max)
{
	long n = 0;
	size_t i;

	if (!len || len > 10)
		return -1;
	for (i = 0; i < len; i++) {
		if (!isdigit((unsigned char)v[i]))
			return -1;
		n = n * 10 + (v[i] - '0');
	}
	return n <= max ? n : -1;
}

/* HOST[:PORT] or [IPV6][:PORT] of length @len into @c. */
static int host_port(const char *v, size_t len, struct rls_conn *c,
		     const char **why)
{
	const char *end = v + len, *colon = NULL, *h = v, *hend;
	long port = 6379;

	if (*v == '[') {
		h = v + 1;
		hend = memchr(v, ']', len);
		if (!hend)
			return bad(why, "no ']' after an IPv6 address");
		if (hend + 1 < end && hend[1] != ':')
			return bad(why, "junk after ']'");
		if (hend + 1 < end)
			colon = hend + 1;
	} else {
		colon = memchr(v, ':', len);
		if (colon && memchr(colon + 1, ':', end - colon - 1))
			return bad(why, "an IPv6 address goes in brackets: [::1]:6379");
		hend = colon ? colon : end;
	}
	if (hend == h)
		return bad(why, "no host");
	if ((size_t)(hend - h) >= sizeof(c->host))
		return bad(why, "host name too long");
	if (colon) {
		port = strict_num(colon + 1, end - colon - 1, 65535);
		if (port < 1)
			return bad(why, "the port must be a number 1..65535");
	}
	memcpy(c->host, h, hend - h);
	c->host[hend - h] = '\0';
	c->port = (unsigned int)port;
	return 0;
}

/* A socket's path into @c. */
static int unix_path(const char *path, struct rls_conn *c, const char **why)
{
	if (!*path)
		return bad(why, "no socket path");
	if (strlen(path) > 107)
		return bad(why, "a socket path longer than 107 bytes");
	snprintf(c->host, sizeof(c->host), "%s", path);
	c->port = 0;
	return 0;
}

/* redis://[USER@]HOST[:PORT][/DB], after the scheme. */
static int redis_url(const char *v, struct rls_conn *c, const char **why)
{
	const char *slash = strchr(v, '/'), *at;
	size_t len = slash ? (size_t)(slash - v) : strlen(v);
	long db = -1;

	at = memchr(v, '@', len);
	if (at && memchr(v, ':', at - v))
		return bad(why, "a password in the URL is refused: give password-file =");
	if (at && (at == v || (size_t)(at - v) >= sizeof(c->user)))
		return bad(why, "a bad user name before '@'");
	if (slash) {
		db = strict_num(slash + 1, strlen(slash + 1), 1000000);
		if (db < 0)
			return bad(why, "the database after '/' must be a number");
	}
	if (at) {
		if (host_port(at + 1, len - (at + 1 - v), c, why))
			return -EINVAL;
		memcpy(c->user, v, at - v);
		c->user[at - v] = '\0';
	} else if (host_port(v, len, c, why)) {
		return -EINVAL;
	}
	if (db >= 0)
		c->db = (unsigned int)db;
	return 0;
}

int rls_conn_parse(const char *v, struct rls_conn *c, const char **why)
{
	struct rls_conn n = *c;
	int ret;

	*why = "bad address";
	if (!strncmp(v, "rediss://", 9))
		return bad(why, "TLS (rediss://) is not supported yet");
	if (!strncmp(v, "unix://", 7))
		ret = unix_path(v + 7, &n, why);
	else if (!strncmp(v, "unix:", 5))
		ret = unix_path(v + 5, &n, why);
	else if (!strncmp(v, "redis://", 8))
		ret = redis_url(v + 8, &n, why);
	else if (strstr(v, "://"))
		ret = bad(why, "unknown scheme (redis:// or unix:)");
	else if (strchr(v, '@') || strchr(v, '/'))
		ret = bad(why, "a user or a database needs a redis:// URL");
	else
		ret = host_port(v, strlen(v), &n, why);
	if (!ret)
		*c = n;
	return ret;
}

/*
 * The password in @path, its first line; "%d/NAME" is NAME in systemd's
 * $CREDENTIALS_DIRECTORY (LoadCredential=).
 */
static int read_password(struct rls_spec *s, const char *path)
{
	char file[4096], buf[RLS_PASS_MAX + 1];
	const char *dir = getenv("CREDENTIALS_DIRECTORY");
	size_t len;
	FILE *in;

	if (!strncmp(path, "%d/", 3)) {
		if (!dir || !*dir)
			return spec_err(s, "password-file %s: %s", path,
					"$CREDENTIALS_DIRECTORY is not set (LoadCredential=)");
		snprintf(file, sizeof(file), "%s/%s", dir, path + 3);
	} else {
		snprintf(file, sizeof(file), "%s", path);
	}
	in = fopen(file, "re");
	if (!in)
		return spec_err(s, "password-file %s: %s", file, strerror(errno));
	len = fgets(buf, sizeof(buf), in) ? strcspn(buf, "\r\n") : 0;
	fclose(in);
	if (!len)
		return spec_err(s, "password-file %s: empty", file);
	if (len >= RLS_PASS_MAX)
		return spec_err(s, "password-file %s: longer than %d bytes", file,
				RLS_PASS_MAX - 1);
	memcpy(s->conn.pass, buf, len);
	s->conn.pass[len] = '\0';
	memset(buf, 0, sizeof(buf));
	return 0;
}

/* The connection's keys; -ENOENT for others, -EINVAL after a message. */
static int set_conn(struct rls_spec *s, const char *key, const char *v)
{
	const char *why;
	long db;

	if (!strcmp(key, "redis")) {
		if (strlen(v) >= sizeof(s->redis))
			return spec_err(s, "bad redis: longer than %d bytes",
					RLS_ADDR_MAX - 1);
		if (rls_conn_parse(v, &s->conn, &why)) {
			/* never echo what may hold a password */
			if (strchr(v, '@'))
				return spec_err(s, "bad redis URL: %s", why);
			return spec_err(s, "bad redis '%s': %s", v, why);
		}
		snprintf(s->redis, sizeof(s->redis), "%s", v);
		return 0;
	}
	if (!strcmp(key, "username")) {
		if (!*v || strlen(v) >= sizeof(s->conn.user) || strpbrk(v, " \t"))
			return spec_err(s, "bad username '%s'", v);
		snprintf(s->conn.user, sizeof(s->conn.user), "%s", v);
		return 0;
	}
	if (!strcmp(key, "password-file"))
		return read_password(s, v);
	if (!strcmp(key, "password"))
		return spec_err(s, "no password key: give password-file =");
	if (!strcmp(key, "db")) {
		db = strict_num(v, strlen(v), 1000000);
		if (db < 0)
			return spec_err(s, "bad db '%s': a number", v);
		s->conn.db = (unsigned int)db;
		return 0;
	}
	return -ENOENT;
}

static int set_safe(struct rls_spec *s, const char *v)
{
	if (!strcmp(v, "pessimistic")) {
		s->safe = RLS_PESSIMISTIC;
	} else if (!strcmp(v, "optimistic")) {
		s->safe = RLS_OPTIMISTIC;
	} else {
		s->safe = RLS_SAFE;
		return rls_parse_tps(v, &s->safe_rate);
	}
	return 0;
}

static int set_name(char *dst, const char *v)
{
	if (!rl_name_valid(v))
		return -EINVAL;
	snprintf(dst, RL_NAME_MAX, "%s", v);
	return 0;
}

static int set_word(struct rls_spec *s, const char *key, const char *v)
{
	if (!strcmp(key, "mode")) {
		s->batch = !strcmp(v, "batch");
		return s->batch || !strcmp(v, "lease") ? 0 : -EINVAL;
	}
	if (!strcmp(key, "algorithm")) {
		if (strcmp(v, "fair") && strcmp(v, "proportional") &&
		    strcmp(v, "static"))
			return -EINVAL;
		snprintf(s->algorithm, sizeof(s->algorithm), "%s", v);
		return 0;
	}
	if (!strcmp(key, "resource"))
		return set_name(s->resource, v);
	if (!strcmp(key, "safe"))
		return set_safe(s, v);
	return -ENOENT;
}

static int parse_weight(const char *v, double *w)
{
	char *end;

	errno = 0;
	*w = strtod(v, &end);
	if (errno || end == v || *end || !(*w > 0) || *w > RL_WEIGHT_MAX)
		return -EINVAL;
	return 0;
}

/* The keys whose values are numbers; -ENOENT for others. */
static int set_number(struct rls_spec *s, const char *key, const char *v)
{
	if (!strcmp(key, "rate")) {
		s->configure = true;
		return rls_parse_tps(v, &s->capacity);
	}
	if (!strcmp(key, "static"))
		return rls_parse_tps(v, &s->static_rate);
	if (!strcmp(key, "lease"))
		return rls_parse_ms(v, &s->lease_ms);
	if (!strcmp(key, "refresh"))
		return rls_parse_ms(v, &s->refresh_ms);
	if (!strcmp(key, "hold"))
		return rls_parse_ms(v, &s->hold_ms);
	if (!strcmp(key, "weight"))
		return parse_weight(v, &s->weight);
	return -ENOENT;
}

/* Redis Cluster (helper batch): cluster = yes|no. */
static int set_cluster(struct rls_spec *s, const char *key, const char *v)
{
	if (strcmp(key, "cluster"))
		return -ENOENT;
	if (!strcmp(v, "yes"))
		s->conn.cluster = true;
	else if (!strcmp(v, "no"))
		s->conn.cluster = false;
	else
		return spec_err(s, "bad cluster '%s': yes or no", v);
	return 0;
}

int rls_spec_set(struct rls_spec *s, const char *key, const char *v)
{
	int ret = set_conn(s, key, v);

	if (ret == -ENOENT)
		ret = set_cluster(s, key, v);

	if (ret != -ENOENT)
		return ret ? -EINVAL : 0;
	ret = set_word(s, key, v);
	if (ret == -ENOENT)
		ret = set_number(s, key, v);
	if (ret == -ENOENT)
		spec_err(s, "unknown key '%s'", key);
	else if (ret)
		spec_err(s, "bad %s '%s'", key, v);
	return ret ? -EINVAL : 0;
}

int rls_spec_check(const struct rls_spec *s)
{
	if (s->conn.user[0] && !s->conn.pass[0])
		return spec_err(s, "username %s without password-file", s->conn.user);
	if (s->conn.cluster && s->conn.db)
		return spec_err(s, "cluster = yes with db %u: a Redis Cluster has only database 0",
				s->conn.db);
	if (s->lease_ms < 100)
		return spec_err(s, "a lease shorter than 100ms");
	if (s->refresh_ms < 10 || s->refresh_ms > s->lease_ms / 2)
		return spec_err(s, "refresh must be 10ms .. half the lease");
	if (s->configure && s->capacity <= 0)
		return spec_err(s, "a global rate of 0 admits nothing; give a rate above 0");
	if (!strcmp(s->algorithm, "static") && s->configure &&
	    s->static_rate <= 0)
		return spec_err(s, "algorithm static needs static = RATE");
	if (s->safe == RLS_SAFE && s->configure &&
	    s->safe_rate > s->capacity)
		return spec_err(s, "the safe rate exceeds the global rate");
	return 0;
}

/* The state of reading one file. */
struct conf_state {
	const char *file;
	unsigned int line;
	const struct rls_spec *defaults;
	struct rls_spec **specs;
	unsigned int *n;
	struct rls_spec *cur;	/* the open [global NAME] section, or NULL */
	int errors;
};

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

static void end_section(struct conf_state *st)
{
	if (st->cur && rls_spec_check(st->cur))
		st->errors++;
	st->cur = NULL;
}

static int new_section(struct conf_state *st, const char *name)
{
	struct rls_spec *s;
	unsigned int i;

	if (!rl_name_valid(name)) {
		fprintf(stderr, PROG ": %s:%u: bad limiter name '%s'\n",
			st->file, st->line, name);
		st->errors++;
		return 0;
	}
	for (i = 0; i < *st->n; i++) {
		if (!strcmp((*st->specs)[i].name, name)) {
			fprintf(stderr, PROG ": %s:%u: [global %s] again (first at %s:%u)\n",
				st->file, st->line, name, (*st->specs)[i].file,
				(*st->specs)[i].line);
			st->errors++;
			return 0;
		}
	}
	s = realloc(*st->specs, (*st->n + 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	*st->specs = s;
	st->cur = &s[(*st->n)++];
	rls_spec_init(st->cur, name, st->defaults);
	st->cur->file = st->file;
	st->cur->line = st->line;
	return 0;
}

static int header(struct conf_state *st, char *line)
{
	char *end = strchr(line, ']');

	end_section(st);
	if (!end || end[1]) {
		fprintf(stderr, PROG ": %s:%u: expected [NAME] alone on the line\n",
			st->file, st->line);
		st->errors++;
		return 0;
	}
	*end = '\0';
	line = trim(line + 1);
	if (strncmp(line, "global", 6) || !isspace((unsigned char)line[6]))
		return 0;	/* rlctl's */
	return new_section(st, trim(line + 6));
}

static int conf_line(struct conf_state *st, char *line)
{
	char *p = strchr(line, '#'), *key;

	if (p)
		*p = '\0';
	line = trim(line);
	if (*line == '[')
		return header(st, line);
	if (!*line || !st->cur)
		return 0;
	p = strchr(line, '=');
	if (!p) {
		fprintf(stderr, PROG ": %s:%u: expected KEY = VALUE, not '%s'\n",
			st->file, st->line, line);
		st->errors++;
		return 0;
	}
	*p = '\0';
	key = trim(line);
	st->cur->line = st->line;
	if (rls_spec_set(st->cur, key, trim(p + 1)))
		st->errors++;
	return 0;
}

static int conf_file(struct conf_state *st, const char *path)
{
	char *line = NULL, *name = strdup(path);
	size_t cap = 0;
	FILE *in;
	int ret = 0;

	in = name ? fopen(path, "re") : NULL;
	if (!in) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		free(name);
		return name ? 1 : -ENOMEM;
	}
	st->file = name;	/* kept: the specs point at it */
	st->line = 0;
	while (!ret && getline(&line, &cap, in) > 0) {
		st->line++;
		ret = conf_line(st, line);
	}
	if (!ret)
		end_section(st);
	free(line);
	fclose(in);
	return ret;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int conf_filter(const struct dirent *d)
{
	size_t len = strlen(d->d_name);

	return d->d_name[0] != '.' && len > 5 &&
	       !strcmp(d->d_name + len - 5, ".conf");
}

static int conf_dir(struct conf_state *st, const char *path)
{
	struct dirent **ents;
	char file[4096];
	struct stat sb;
	int i, n, ret = 0;

	n = scandir(path, &ents, conf_filter, by_name);
	if (n < 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return 1;
	}
	for (i = 0; i < n; i++) {
		snprintf(file, sizeof(file), "%s/%s", path, ents[i]->d_name);
		if (ret >= 0 && !stat(file, &sb) && S_ISREG(sb.st_mode))
			ret = conf_file(st, file);
		free(ents[i]);
	}
	free(ents);
	return ret;
}

int rls_conf_load(const char *path, const struct rls_spec *defaults,
		  struct rls_spec **specs, unsigned int *n)
{
	struct conf_state st = { .defaults = defaults, .specs = specs, .n = n };
	struct stat sb;
	int ret;

	if (!stat(path, &sb) && S_ISDIR(sb.st_mode))
		ret = conf_dir(&st, path);
	else
		ret = conf_file(&st, path);
	return ret < 0 ? ret : ret + st.errors;
}
