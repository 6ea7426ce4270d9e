// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ratespec.c - parsing and printing rate specifications.
 *
 *   spec   := "unlimited" | amount [ "/" period ] [ ":" amount ]
 *   amount := digits [ "k" | "K" | "M" | "G" | "T" ] [ "i" ] [ "B" ]
 *   period := [ digits ] ( "ns" | "us" | "ms" | "s" | "m" | "min" | "h" | "d" )
 *
 * "k" and friends multiply by 1000, "Ki" and friends by 1024; "B" (bytes)
 * is cosmetic. No whitespace, signs or locale; the whole string must match.
 * Syntax errors win over range errors, so "99999999999999999999/x" is
 * -EINVAL.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "rl_internal.h"

#define NSEC_PER_SEC	1000000000ULL

struct rl_scan {
	const char *p;		/* next character */
	bool range;		/* a value overflowed or is out of bounds */
};

struct rl_unit {
	const char *name;
	__u64 ns;
};

/* Longest names first where one is a prefix of another ("ms", "min", "m"). */
static const struct rl_unit rl_units[] = {
	{ "ns", 1ULL },
	{ "us", 1000ULL },
	{ "ms", 1000000ULL },
	{ "min", 60ULL * NSEC_PER_SEC },
	{ "s", NSEC_PER_SEC },
	{ "m", 60ULL * NSEC_PER_SEC },
	{ "h", 3600ULL * NSEC_PER_SEC },
	{ "d", 86400ULL * NSEC_PER_SEC },
};

/* Units rl_format_rate() prints, largest first. */
static const struct rl_unit rl_print_units[] = {
	{ "h", 3600ULL * NSEC_PER_SEC },
	{ "min", 60ULL * NSEC_PER_SEC },
	{ "s", NSEC_PER_SEC },
	{ "ms", 1000000ULL },
	{ "us", 1000ULL },
	{ "ns", 1ULL },
};

static void rl_mul(struct rl_scan *s, __u64 *val, __u64 factor)
{
	if (__builtin_mul_overflow(*val, factor, val))
		s->range = true;
}

/* One or more decimal digits; false when there is none. */
static bool rl_scan_digits(struct rl_scan *s, __u64 *val)
{
	const char *start = s->p;

	*val = 0;
	while (*s->p >= '0' && *s->p <= '9') {
		rl_mul(s, val, 10);
		if (__builtin_add_overflow(*val, (__u64)(*s->p - '0'), val))
			s->range = true;
		s->p++;
	}
	return s->p != start;
}

static bool rl_scan_amount(struct rl_scan *s, __u64 *val)
{
	__u64 base = 1000, mult = 1;
	int power;

	if (!rl_scan_digits(s, val))
		return false;
	switch (*s->p) {
	case 'k':
	case 'K':
		power = 1;
		break;
	case 'M':
		power = 2;
		break;
	case 'G':
		power = 3;
		break;
	case 'T':
		power = 4;
		break;
	default:
		power = 0;
		break;
	}
	if (power) {
		s->p++;
		if (*s->p == 'i') {
			base = 1024;
			s->p++;
		}
		while (power--)
			mult *= base;
		rl_mul(s, val, mult);
	}
	if (*s->p == 'B')
		s->p++;
	return true;
}

static bool rl_scan_period(struct rl_scan *s, __u64 *ns)
{
	size_t i, len;

	if (!rl_scan_digits(s, ns))
		*ns = 1;
	for (i = 0; i < ARRAY_SIZE(rl_units); i++) {
		len = strlen(rl_units[i].name);
		if (!strncmp(s->p, rl_units[i].name, len)) {
			s->p += len;
			rl_mul(s, ns, rl_units[i].ns);
			if (!*ns || *ns > RL_PERIOD_MAX_NS)
				s->range = true;
			return true;
		}
	}
	return false;
}

int rl_parse_rate(const char *spec, struct rl_config *cfg)
{
	struct rl_config c = { .period_ns = NSEC_PER_SEC };
	struct rl_scan s = { .p = spec };
	__u64 product;

	if (!spec || !cfg)
		return -EINVAL;
	if (!strcmp(spec, "unlimited")) {
		c.flags = RL_CONFIG_UNLIMITED;
		goto done;
	}
	if (!rl_scan_amount(&s, &c.rate))
		return -EINVAL;
	if (*s.p == '/') {
		s.p++;
		if (!rl_scan_period(&s, &c.period_ns))
			return -EINVAL;
	}
	if (*s.p == ':') {
		s.p++;
		if (!rl_scan_amount(&s, &c.burst))
			return -EINVAL;
	}
	if (*s.p)
		return -EINVAL;
	if (s.range)
		return -ERANGE;
	if (__builtin_mul_overflow(c.burst, c.period_ns, &product) ||
	    product > RL_BURST_PERIOD_MAX)
		return -ERANGE;
done:
	*cfg = c;
	return 0;
}

/* Decimal digits of @val at @buf, no NUL; returns their number. */
static size_t rl_put_u64(char *buf, __u64 val)
{
	char tmp[20];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + val % 10);
		val /= 10;
	} while (val);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	return n;
}

static size_t rl_put_str(char *buf, const char *str)
{
	size_t n = strlen(str);

	memcpy(buf, str, n);
	return n;
}

static size_t rl_put_period(char *buf, __u64 ns)
{
	const struct rl_unit *u = rl_print_units;
	size_t n = 0;

	if (!ns)	/* invalid, but print it so that it parses back as such */
		return rl_put_str(buf, "0ns");
	while (ns % u->ns)
		u++;
	if (ns != u->ns)
		n = rl_put_u64(buf, ns / u->ns);
	return n + rl_put_str(buf + n, u->name);
}

int rl_format_rate(const struct rl_config *cfg, char *buf, size_t len)
{
	char tmp[RL_RATE_STRLEN];	/* at most 20 + 1 + 22 + 1 + 20 */
	size_t n = 0;

	if (!cfg || !buf)
		return -EINVAL;
	if (cfg->flags & RL_CONFIG_UNLIMITED) {
		n = rl_put_str(tmp, "unlimited");
	} else {
		n = rl_put_u64(tmp, cfg->rate);
		tmp[n++] = '/';
		n += rl_put_period(tmp + n, cfg->period_ns);
		if (cfg->burst) {
			tmp[n++] = ':';
			n += rl_put_u64(tmp + n, cfg->burst);
		}
	}
	if (n >= len)
		return -ENOSPC;
	memcpy(buf, tmp, n);
	buf[n] = '\0';
	return (int)n;
}

int rl_parse_amount(const char *arg, uint64_t *val)
{
	struct rl_config cfg;
	int ret;

	if (!arg || !val || strpbrk(arg, "/:"))
		return -EINVAL;
	ret = rl_parse_rate(arg, &cfg);
	if (ret)
		return ret;
	if (cfg.flags & RL_CONFIG_UNLIMITED)
		return -EINVAL;
	*val = cfg.rate;
	return 0;
}

int rl_parse_priority(const char *arg)
{
	static const char *const names[] = { "low", "mid", "high", "user" };
	int i;

	if (!arg)
		return -EINVAL;
	for (i = 0; i < 4; i++)
		if (!strcmp(arg, names[i]) || (arg[0] == '1' + i && !arg[1]))
			return RL_PRIO_LOW + i;
	return -EINVAL;
}
