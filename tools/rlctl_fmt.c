// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_fmt.c - how rlctl prints: JSON strings, numbers, rates, and the
 * Prometheus labels of rlctl export.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <stdint.h>
#include <stdio.h>

#include "libratelimit.h"
#include "rlctl.h"

/*
 * The length of the valid UTF-8 sequence at @p (1 to 4), or 0 when @p
 * does not start one: a stray continuation byte, an overlong form, a
 * surrogate, a code point beyond U+10FFFF or a truncated sequence.
 */
static int utf8_len(const unsigned char *p)
{
	unsigned int lo = 0x80, hi = 0xbf;
	int n, i;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	/* The second byte's range rules out overlongs, surrogates, > 10FFFF. */
	if (p[0] == 0xe0)
		lo = 0xa0;
	else if (p[0] == 0xed)
		hi = 0x9f;
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

/*
 * @s as a JSON string: valid UTF-8 is copied as it is; '"', '\\' and the
 * control characters (below 0x20, and DEL) are escaped; each byte that
 * is not part of valid UTF-8 (a comm cut inside a character, a name in
 * another encoding) becomes \ufffd, the replacement character.
 */
void json_string(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int n;

	putchar('"');
	while (*p) {
		n = utf8_len(p);
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", stdout);
		else if (*p == '\t')
			fputs("\\t", stdout);
		else if (*p < 0x20 || *p == 0x7f)
			printf("\\u%04x", *p);
		else if (!n)
			fputs("\\ufffd", stdout);
		else
			fwrite(p, 1, n, stdout);
		p += n ? n : 1;
	}
	putchar('"');
}

/*
 * A rate or any positive number to 4 significant digits, without an
 * exponent from 1e-4 up: "0.0002778", "2.5", "1235"; whole from 1e4 to
 * 1e15: "10000", "1000000000".
 */
const char *fmt_num(char *buf, size_t len, double x)
{
	/* 9999.5 and up would round to "1e+04" under %.4g. */
	if ((x >= 9999.5 && x < 1e15) || x == 0)
		snprintf(buf, len, "%.0f", x);
	else
		snprintf(buf, len, "%.4g", x);
	return buf;
}

/* Tokens per second as text: "unlimited", "paused" or the number. */
const char *fmt_target(char *buf, size_t len, double target)
{
	if (target < 0)
		snprintf(buf, len, "unlimited");
	else if (target == 0)
		snprintf(buf, len, "paused");
	else
		fmt_num(buf, len, target);
	return buf;
}

/*
 * A positive rate of @per_s tokens per second in the largest unit of
 * time that gets at least one token, or per day: "2.5 tokens/s",
 * "30 tokens/min", "1 tokens/h", "1 tokens/day".
 */
const char *fmt_rate_unit(char *buf, size_t len, double per_s)
{
	static const struct {
		const char *name;
		double secs;
	} units[] = { { "s", 1 }, { "min", 60 }, { "h", 3600 }, { "day", 86400 } };
	char num[32];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(units) - 1; i++)
		if (per_s * units[i].secs >= 1)
			break;
	snprintf(buf, len, "%s tokens/%s",
		 fmt_num(num, sizeof(num), per_s * units[i].secs), units[i].name);
	return buf;
}

/*
 * A rate as a JSON number, with the significant digits of a double that
 * matter: 0.0002777777778 (1/h), 1000000000 (10^9/s).
 */
void json_rate(double per_s)
{
	printf("%.10g", per_s);
}

/* A label's value with backslash, double quote and newline escaped. */
void prom_value(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

/* The label set's start, {limiter="NAME" (the caller closes it). */
void prom_label(FILE *f, const char *name)
{
	fputs("{limiter=\"", f);
	prom_value(f, name);
	fputs("\"", f);
}
