// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_conf_keys.c - the keys of the files of "rlctl apply"
 * (ratelimit.d(5)) and their values: each one checked as it is read, then
 * those that depend on each other once a section ends.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlctl_conf.h"
#include "rlctl_conf_parse.h"
#include "sysfile.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define ID_MAX		(UINT32_MAX - 1)	/* (uid_t)-1 means "none" */
#define RATE_HINT	"RATE[/PERIOD][:BURST] such as 100/s, 10MiB/s or 1/1h, or unlimited"
#define RANGE_HINT	"a period of 1ns .. 1d, burst x period up to 2^63 ns"

/* The keys that are not tunables. */
static const char *const key_names[RLCONF_NKEYS - RLCONF_MODE] = {
	[RLCONF_MODE - RLCONF_MODE] = "mode",
	[RLCONF_OWNER - RLCONF_MODE] = "owner",
	[RLCONF_GROUP - RLCONF_MODE] = "group",
};

/* The tunable of key @key, or NULL. */
static const struct rlk *key_tunable(enum rlconf_key key)
{
	if (key >= rlctl_nkeys || rlctl_keys[key].kind == RLK_IN_SPEC)
		return NULL;
	return &rlctl_keys[key];
}

const char *rlconf_key_name(enum rlconf_key key)
{
	const struct rlk *k = key_tunable(key);

	if (k)
		return k->name;
	if (key >= RLCONF_MODE && key < RLCONF_NKEYS)
		return key_names[key - RLCONF_MODE];
	return "?";
}

enum rlconf_key rlconf_key_find(const char *name)
{
	const struct rlk *k = rlk_find(name, strlen(name));
	enum rlconf_key key;

	if (k && key_tunable(k - rlctl_keys))
		return k - rlctl_keys;
	for (key = RLCONF_MODE; key < RLCONF_NKEYS; key++)
		if (!strcmp(name, key_names[key - RLCONF_MODE]))
			return key;
	return RLCONF_NKEYS;
}

/*
 * Plain decimal, no sign or blank, at most @max (values come trimmed: no
 * newline either).
 */
static bool parse_dec(const char *v, uint64_t max, uint64_t *val)
{
	uint64_t n;

	if (sysfile_parse_u64(v, 10, &n) || n > max)
		return false;
	*val = n;
	return true;
}

/* Octal permission bits, at most 0777. */
static bool parse_mode(const char *v, uint32_t *mode)
{
	uint64_t n;

	if (sysfile_parse_u64(v, 8, &n) || n > 0777)
		return false;
	*mode = (uint32_t)n;
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

/* Not found, as getpwnam_r(3) and getgrnam_r(3) may say it. */
static bool not_found(int err)
{
	return !err || err == ENOENT || err == ESRCH || err == EBADF ||
	       err == EPERM;
}

/*
 * The id of the user (@user) or group @name, from the system's databases
 * through NSS (getpwnam_r(3), getgrnam_r(3)): /etc/passwd and /etc/group,
 * or LDAP, SSSD, systemd-homed as nsswitch.conf(5) says. 0, -ENOENT when
 * there is none, or another -errno.
 */
static int id_lookup(bool user, const char *name, uint32_t *id)
{
	struct passwd pw, *pwp = NULL;
	struct group gr, *grp = NULL;
	size_t cap = 1024;
	char *buf = NULL, *more;
	int err;

	for (;;) {
		more = realloc(buf, cap);
		if (!more) {
			err = ENOMEM;
			break;
		}
		buf = more;
		if (user)
			err = getpwnam_r(name, &pw, buf, cap, &pwp);
		else
			err = getgrnam_r(name, &gr, buf, cap, &grp);
		if (err != ERANGE || cap >= 1 << 20)
			break;
		cap *= 2;
	}
	free(buf);
	if (pwp || grp) {
		*id = pwp ? pwp->pw_uid : grp->gr_gid;
		return 0;
	}
	return not_found(err) ? -ENOENT : -err;
}

/* owner or group: a number, or a name of the user or group database. */
static void set_id(struct rlconf_state *s, struct rlconf_limiter *l,
		   enum rlconf_key key, const char *v)
{
	bool user = key == RLCONF_OWNER;
	const char *what = user ? "user" : "group";
	uint64_t num;
	uint32_t id = 0;
	int ret;

	if (parse_dec(v, ID_MAX, &num)) {
		id = (uint32_t)num;
	} else {
		ret = strchr(v, ':') ? -ENOENT : id_lookup(user, v, &id);
		if (!ret && id > ID_MAX)
			ret = -ENOENT;	/* (uid_t)-1 is none */
		if (ret == -ENOENT)
			err_at(s, "unknown %s '%s'", what, v);
		else if (ret)
			err_at(s, "unknown %s '%s' (cannot look it up: %s)",
			       what, v, strerror(-ret));
		if (ret)
			return;
	}
	if (user)
		l->uid = id;
	else
		l->gid = id;
}

/* A count into @val, or an error reported: whether it was one. */
static bool set_amount(struct rlconf_state *s, enum rlconf_key key,
		       const char *v, __u64 *val)
{
	uint64_t n;
	int ret = rl_parse_amount(v, &n);

	if (!ret)
		*val = n;
	else if (ret == -ERANGE)
		err_at(s, "%s '%s' out of range", rlconf_key_name(key), v);
	else if (ret)
		err_at(s, "invalid %s '%s' (a count such as 50, 10k or 64KiB)",
		       rlconf_key_name(key), v);
	return !ret;
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

/*
 * A tunable of kind RLK_AMOUNT or RLK_U64 other than burst, or a flag
 * other than unlimited (yes or no).
 */
static void set_tunable(struct rlconf_state *s, struct rlconf_limiter *l,
			enum rlconf_key key, const char *v)
{
	const struct rlk *k = key_tunable(key);
	char hint[64];
	uint64_t val;
	__u64 count;
	int flag;

	if (!k)
		return;
	if (k->kind == RLK_FLAG) {
		flag = parse_bool(v);
		if (flag < 0)
			err_at(s, "invalid %s '%s' (yes or no)", k->name, v);
		else
			rlk_put(k, &l->cfg, flag);
	} else if (k->kind == RLK_AMOUNT) {
		if (set_amount(s, key, v, &count))
			rlk_put(k, &l->cfg, count);
	} else if (!rlk_parse_u64(k, v, &val)) {
		rlk_put(k, &l->cfg, val);
	} else {
		err_at(s, "invalid %s '%s'%s", k->name, v,
		       rlk_hint(k, hint, sizeof(hint)));
	}
}

void rlconf_set_key(struct rlconf_state *s, struct rlconf_limiter *l,
		    enum rlconf_key key, const char *v)
{
	switch (key) {
	case RLCONF_RATE:
		set_rate(s, l, v);
		break;
	case RLCONF_BURST:
		set_amount(s, key, v, &s->burst_key);
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
	default:
		set_tunable(s, l, key, v);
	}
}

void rlconf_check_section(struct rlconf_state *s, struct rlconf_limiter *l)
{
	struct rl_config *cfg = &l->cfg;
	unsigned int bl = l->key_line[RLCONF_BURST];
	struct rld *r = &s->c->rd;
	const char *f = l->file;
	uint64_t product;

	if (s->rate_burst && bl) {
		rld_error(r, f, bl, "burst given twice: here and in the rate at line %u",
			  l->key_line[RLCONF_RATE]);
		return;
	}
	cfg->burst = s->rate_burst ? s->burst_rate : s->burst_key;
	if (!bl)
		bl = l->key_line[RLCONF_RATE];
	if (s->rate_unlimited && s->unlimited == 0) {
		rld_error(r, f, l->key_line[RLCONF_UNLIMITED],
			  "unlimited = no contradicts rate = unlimited at line %u",
			  l->key_line[RLCONF_RATE]);
		return;
	}
	if (s->rate_unlimited || s->unlimited == 1)
		cfg->flags |= RL_CONFIG_UNLIMITED;
	if (l->key_line[RLK_KEYS] && !(cfg->flags & RL_CONFIG_KEYED)) {
		rld_error(r, f, l->key_line[RLK_KEYS],
			  "keys without keyed = yes: only a keyed limiter has keys");
		return;
	}
	/* A semaphore grants a request for several permits in one piece. */
	if ((cfg->flags & RL_CONFIG_UNLIMITED) && cfg->concurrency &&
	    !cfg->burst) {
		cfg->burst = cfg->concurrency;
		if (cfg->burst > RL_BURST_PERIOD_MAX / cfg->period_ns)
			cfg->burst = RL_BURST_PERIOD_MAX / cfg->period_ns;
	}
	if (__builtin_mul_overflow(cfg->burst, cfg->period_ns, &product) ||
	    product > RL_BURST_PERIOD_MAX) {
		rld_error(r, f, bl,
			  "burst %llu x period %llu ns exceeds 2^63",
			  (unsigned long long)cfg->burst,
			  (unsigned long long)cfg->period_ns);
		return;
	}
	if (cfg->burst && (cfg->backlog / 1000 > cfg->burst ||
			   (cfg->backlog / 1000 == cfg->burst &&
			    cfg->backlog % 1000)))
		rld_error(r, f, l->key_line[RLK_BACKLOG],
			  "backlog %llu exceeds 1000 x burst (%llu)",
			  (unsigned long long)cfg->backlog,
			  (unsigned long long)cfg->burst);
}
