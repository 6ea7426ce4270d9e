// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_conf.c - the [global NAME] sections of ratelimit.d(5) files.
 *
 * The files are rlctl's: "rlctl apply" reads the [NAME] sections and
 * skips the [global NAME] ones; rlsyncd reads these and skips the rest.
 * Both read them with the same reader (tools/common/ratelimit_d.c).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "rlsyncd"
#include "ratelimit_d.h"
#include "tool.h"
#include "rlsyncd_conf.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define RLS_DEF_LEASE_MS	10000.0
#define RLS_DEF_REFRESH_MS	1000.0
#define RLS_DEF_HOLD_MS		10000.0

bool rls_verbose;

void rls_spec_init(struct rls_spec *s, const char *name,
		   const struct rls_spec *from)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->resource, sizeof(s->resource), "%s", name);
	if (from) {
		memcpy(s->redis, from->redis, sizeof(s->redis));
		s->conn = from->conn;
		s->ha = from->ha;
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
	if (!from)
		s->ha.wait_ms = RLS_DEF_WAIT_MS;
}

/* "RATE/PERIOD" as tokens per second; "0" is 0. Returns 0 or -EINVAL. */
static int parse_tps(const char *v, double *tps)
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

/* "500ms", "10s", "1m", "1h" as milliseconds. Returns 0 or -EINVAL. */
static int parse_ms(const char *v, double *ms)
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

/* redis://[USER@]HOST[:PORT][/DB] (rediss://: TLS), after the scheme. */
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
	n.tls = !strncmp(v, "rediss://", 9);
	if (n.tls)
		ret = redis_url(v + 9, &n, why);
	else if (!strncmp(v, "unix://", 7))
		ret = unix_path(v + 7, &n, why);
	else if (!strncmp(v, "unix:", 5))
		ret = unix_path(v + 5, &n, why);
	else if (!strncmp(v, "redis://", 8))
		ret = redis_url(v + 8, &n, why);
	else if (strstr(v, "://"))
		ret = bad(why, "unknown scheme (redis://, rediss:// or unix:)");
	else if (strchr(v, '@') || strchr(v, '/'))
		ret = bad(why, "a user or a database needs a redis:// URL");
	else
		ret = host_port(v, strlen(v), &n, why);
	if (!ret)
		*c = n;
	return ret;
}

/*
 * The file @path of @key in @file (@size bytes): "%d/NAME" is NAME in
 * systemd's $CREDENTIALS_DIRECTORY (LoadCredential=).
 */
static int cred_path(struct rls_spec *s, const char *key, const char *path,
		     char *file, size_t size)
{
	const char *dir = getenv("CREDENTIALS_DIRECTORY");
	int len;

	if (!strncmp(path, "%d/", 3)) {
		if (!dir || !*dir)
			return spec_err(s, "%s %s: %s", key, path,
					"$CREDENTIALS_DIRECTORY is not set (LoadCredential=)");
		len = snprintf(file, size, "%s/%s", dir, path + 3);
	} else {
		len = snprintf(file, size, "%s", path);
	}
	if (!*path || len < 0 || (size_t)len >= size)
		return spec_err(s, "bad %s '%s': %s", key, path, *path ?
				"too long a path" : "no path");
	return 0;
}

/*
 * The password in @path, its first line, into @pass (RLS_PASS_MAX);
 * @key names it in messages.
 */
static int read_secret(struct rls_spec *s, const char *key, const char *path,
		       char *pass)
{
	char file[4096], buf[RLS_PASS_MAX + 1];
	size_t len;
	FILE *in;

	if (cred_path(s, key, path, file, sizeof(file)))
		return -EINVAL;
	in = fopen(file, "re");
	if (!in)
		return spec_err(s, "%s %s: %s", key, file, strerror(errno));
	len = fgets(buf, sizeof(buf), in) ? strcspn(buf, "\r\n") : 0;
	fclose(in);
	if (!len)
		return spec_err(s, "%s %s: empty", key, file);
	if (len >= RLS_PASS_MAX)
		return spec_err(s, "%s %s: longer than %d bytes", key, file,
				RLS_PASS_MAX - 1);
	memcpy(pass, buf, len);
	pass[len] = '\0';
	memset(buf, 0, sizeof(buf));
	return 0;
}

/* Key @key's value @v, a number 0..@max, into *@out; -EINVAL if not. */
static int set_num(struct rls_spec *s, const char *key, const char *v,
		   long max, unsigned int *out)
{
	long n = strict_num(v, strlen(v), max);

	if (n < 0)
		return spec_err(s, "bad %s '%s': a number 0..%ld", key, v, max);
	*out = (unsigned int)n;
	return 0;
}

/* Key @key's value @v, one word of 1..@size - 1 bytes, into @out. */
static int set_token(struct rls_spec *s, const char *key, const char *v,
		     char *out, size_t size)
{
	if (!*v || strlen(v) >= size || strpbrk(v, " \t"))
		return spec_err(s, "bad %s '%s'", key, v);
	snprintf(out, size, "%s", v);
	return 0;
}

/* The connection's keys; -ENOENT for others, -EINVAL after a message. */
static int set_conn(struct rls_spec *s, const char *key, const char *v)
{
	const char *why;

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
	if (!strcmp(key, "username"))
		return set_token(s, key, v, s->conn.user, sizeof(s->conn.user));
	if (!strcmp(key, "password-file"))
		return read_secret(s, key, v, s->conn.pass);
	if (!strcmp(key, "password"))
		return spec_err(s, "no password key: give password-file =");
	if (!strcmp(key, "db"))
		return set_num(s, key, v, 1000000, &s->conn.db);
	return -ENOENT;
}

/* TLS (rediss:// URLs): the files, the server's name, verification. */
static int tls_file(struct rls_spec *s, const char *key, const char *v,
		    char *dst)
{
	char file[RLS_PATH_MAX] = "";	/* zeroes: a reload memcmp()s conns */

	if (cred_path(s, key, v, file, sizeof(file)))
		return -EINVAL;
	if (access(file, R_OK))
		return spec_err(s, "%s %s: %s", key, file, strerror(errno));
	memcpy(dst, file, sizeof(file));
	return 0;
}

static int set_tls(struct rls_spec *s, const char *key, const char *v)
{
	struct rls_conn *c = &s->conn;

	if (!strcmp(key, "tls-ca-file"))
		return tls_file(s, key, v, c->tls_ca);
	if (!strcmp(key, "tls-cert-file"))
		return tls_file(s, key, v, c->tls_cert);
	if (!strcmp(key, "tls-key-file"))
		return tls_file(s, key, v, c->tls_key);
	if (!strcmp(key, "tls-server-name")) {
		if (!*v || strlen(v) >= sizeof(c->tls_name) || strpbrk(v, " \t/"))
			return spec_err(s, "bad tls-server-name '%s'", v);
		snprintf(c->tls_name, sizeof(c->tls_name), "%s", v);
		return 0;
	}
	if (!strcmp(key, "tls-verify")) {
		if (strcmp(v, "yes") && strcmp(v, "no"))
			return spec_err(s, "bad tls-verify '%s': yes or no", v);
		c->tls_noverify = !strcmp(v, "no");
		return 0;
	}
	return -ENOENT;
}

/* --- Sentinel and WAIT (rlsyncd_sentinel.c) --- */

/* One sentinel, HOST[:PORT] (default 26379), [IPV6][:PORT] or unix:PATH. */
static int add_sentinel(struct rls_spec *s, const char *v)
{
	struct rls_ha *ha = &s->ha;
	struct rls_conn c = { .port = 0 };
	const char *why;
	bool has_port;

	if (ha->n == RLS_SENTINELS_MAX)
		return spec_err(s, "sentinels: more than %d", RLS_SENTINELS_MAX);
	if (strstr(v, "://") && strncmp(v, "unix://", 7))
		return spec_err(s, "bad sentinel '%s': HOST:PORT or unix:PATH", v);
	if (rls_conn_parse(v, &c, &why))
		return spec_err(s, "bad sentinel '%s': %s", v, why);
	has_port = *v == '[' ? !!strstr(v, "]:") : !!strchr(v, ':');
	snprintf(ha->host[ha->n], sizeof(ha->host[0]), "%s", c.host);
	ha->port[ha->n++] = c.port && !has_port ? 26379 : c.port;
	return 0;
}

/* "HOST:PORT, HOST:PORT ...": the list replaces the last one. */
static int set_sentinels(struct rls_spec *s, const char *v)
{
	char buf[RLS_SENTINELS_MAX * RLS_ADDR_MAX], *item, *save = NULL;

	if (strlen(v) >= sizeof(buf))
		return spec_err(s, "sentinels: too long");
	snprintf(buf, sizeof(buf), "%s", v);
	s->ha.n = 0;
	for (item = strtok_r(buf, ", \t", &save); item;
	     item = strtok_r(NULL, ", \t", &save))
		if (add_sentinel(s, item))
			return -EINVAL;
	if (!s->ha.n)
		return spec_err(s, "sentinels: none given");
	return 0;
}

/* The keys of Sentinel and WAIT; -ENOENT for others. */
static int set_ha(struct rls_spec *s, const char *key, const char *v)
{
	if (!strcmp(key, "sentinels"))
		return set_sentinels(s, v);
	if (!strcmp(key, "master-name"))
		return set_token(s, key, v, s->ha.master, sizeof(s->ha.master));
	if (!strcmp(key, "sentinel-password-file"))
		return read_secret(s, key, v, s->ha.pass);
	if (!strcmp(key, "wait-replicas"))
		return set_num(s, key, v, 100, &s->ha.wait_replicas);
	if (!strcmp(key, "wait-timeout")) {
		if (parse_ms(v, &s->ha.wait_ms) || s->ha.wait_ms < 1)
			return spec_err(s, "bad wait-timeout '%s': 1ms or more", v);
		return 0;
	}
	return -ENOENT;
}

/* The checks of the TLS keys, and the warning of tls-verify = no. */
static int check_tls(const struct rls_spec *s)
{
	const struct rls_conn *c = &s->conn;
	const char *key = c->tls_ca[0] ? "tls-ca-file" :
			  c->tls_cert[0] ? "tls-cert-file" :
			  c->tls_key[0] ? "tls-key-file" :
			  c->tls_name[0] ? "tls-server-name" : NULL;

	if (!c->tls && key)
		return spec_err(s, "%s without a rediss:// URL", key);
	if (c->tls_key[0] && !c->tls_cert[0])
		return spec_err(s, "tls-key-file without tls-cert-file");
	if (c->tls && c->tls_noverify)	/* a warning, not an error */
		spec_err(s, "warning: tls-verify = no: %s",
			 "the server's certificate is not checked (anyone on the way can pose as it)");
	return 0;
}

static int set_safe(struct rls_spec *s, const char *v)
{
	if (!strcmp(v, "pessimistic")) {
		s->safe = RLS_PESSIMISTIC;
	} else if (!strcmp(v, "optimistic")) {
		s->safe = RLS_OPTIMISTIC;
	} else {
		s->safe = RLS_SAFE;
		return parse_tps(v, &s->safe_rate);
	}
	return 0;
}

bool rls_resource_valid(const char *v)
{
	static const char name_chars[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
	const char *close = v[0] == '{' ? strchr(v, '}') : NULL;
	char tag[RL_NAME_MAX];

	if (!close)
		return rl_name_valid(v);
	if (strlen(v) >= RL_NAME_MAX || close - v - 1 <= 0)
		return false;
	snprintf(tag, sizeof(tag), "%.*s", (int)(close - v - 1), v + 1);
	/* the rest of a name's characters, so "{api}.users" too */
	return rl_name_valid(tag) &&
	       strspn(close + 1, name_chars) == strlen(close + 1);
}

static int set_name(char *dst, const char *v)
{
	if (!rls_resource_valid(v))
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
		return parse_tps(v, &s->capacity);
	}
	if (!strcmp(key, "static"))
		return parse_tps(v, &s->static_rate);
	if (!strcmp(key, "lease"))
		return parse_ms(v, &s->lease_ms);
	if (!strcmp(key, "refresh"))
		return parse_ms(v, &s->refresh_ms);
	if (!strcmp(key, "hold"))
		return parse_ms(v, &s->hold_ms);
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
		ret = set_tls(s, key, v);
	if (ret == -ENOENT)
		ret = set_ha(s, key, v);
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

double rls_rpc_ms(const struct rls_spec *s)
{
	/*
	 * Batch mode: a reply given up on loses the tokens Redis took for
	 * it, and the module's leases do not depend on the agent's timing.
	 */
	if (s->batch)
		return 1000;
	return fmin(s->refresh_ms / 2, 1000);
}

int rls_spec_check(const struct rls_spec *s)
{
	if (s->conn.user[0] && !s->conn.pass[0])
		return spec_err(s, "username %s without password-file", s->conn.user);
	if (check_tls(s))
		return -EINVAL;
	if (s->ha.n && !s->ha.master[0])
		return spec_err(s, "sentinels without master-name");
	if (!s->ha.n && s->ha.master[0])
		return spec_err(s, "master-name without sentinels");
	if (s->ha.wait_replicas && s->ha.wait_ms > rls_rpc_ms(s) / 2)
		return spec_err(s,
				"wait-timeout %.0fms is over half the call's timeout (%.0fms: half the refresh, at most 1s)",
				s->ha.wait_ms, rls_rpc_ms(s));
	if (s->conn.cluster && s->conn.db)
		return spec_err(s, "cluster = yes with db %u: a Redis Cluster has only database 0",
				s->conn.db);
	if (s->conn.cluster && s->ha.n)
		return spec_err(s, "cluster = yes with sentinels: %s",
				"a Redis Cluster fails over by itself");
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

/* The state of reading the files. */
struct conf_state {
	struct rld rd;	/* the reader: file, line, problems */
	const struct rls_spec *defaults;
	struct rls_spec **specs;
	unsigned int *n;
	struct rls_spec *cur;	/* the open [global NAME] section, or NULL */
};

static struct conf_state *state_of(struct rld *r)
{
	return (struct conf_state *)((char *)r - offsetof(struct conf_state, rd));
}

static void end_section(struct rld *r)
{
	struct conf_state *st = state_of(r);

	if (st->cur && rls_spec_check(st->cur))
		r->errors++;
	st->cur = NULL;
}

static int new_section(struct conf_state *st, const char *name)
{
	struct rls_spec *s;
	unsigned int i;

	if (!rl_name_valid(name)) {
		rld_error(&st->rd, st->rd.file, st->rd.line,
			  "bad limiter name '%s'", name);
		return 0;
	}
	for (i = 0; i < *st->n; i++) {
		if (!strcmp((*st->specs)[i].name, name)) {
			rld_error(&st->rd, st->rd.file, st->rd.line,
				  "[global %s] again (first at %s:%u)", name,
				  (*st->specs)[i].file, (*st->specs)[i].line);
			return 0;
		}
	}
	s = realloc(*st->specs, (*st->n + 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	*st->specs = s;
	st->cur = &s[(*st->n)++];
	rls_spec_init(st->cur, name, st->defaults);
	st->cur->file = st->rd.file;
	st->cur->line = st->rd.line;
	return 1;
}

/* [global NAME]: 1 (rlsyncd's), or 0 for another header or a bad one. */
static int on_header(struct rld *r, char *header)
{
	char *name = header ? rld_global(header) : NULL;

	end_section(r);
	return name ? new_section(state_of(r), name) : 0;
}

static int on_setting(struct rld *r, char *key, char *value)
{
	struct conf_state *st = state_of(r);

	st->cur->line = r->line;
	if (rls_spec_set(st->cur, key, value))
		r->errors++;
	return 0;
}

/* The names of the files, which the specs point at, are kept for good. */
int rls_conf_load(const char *path, const struct rls_spec *defaults,
		  struct rls_spec **specs, unsigned int *n)
{
	struct conf_state st = { .defaults = defaults, .specs = specs, .n = n };
	int ret;

	rld_init(&st.rd);
	st.rd.prefix = PROG ": ";
	st.rd.header = on_header;
	st.rd.setting = on_setting;
	st.rd.end = end_section;
	ret = rld_load(&st.rd, path);
	free(st.rd.files);	/* not the names */
	return ret < 0 ? ret : (int)st.rd.errors;
}
