// SPDX-License-Identifier: GPL-2.0-only
/*
 * ratespec_test.c - host test of rl_parse_rate() and rl_format_rate().
 *
 * Prints TAP: "1..N", then "ok N - what" or "not ok N - what" per case.
 * Exits 1 when any case fails.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "libratelimit.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define SEC		1000000000ULL
#define U64_MAX_STR	"18446744073709551615"

struct good_case {
	const char *spec;
	__u64 rate, period_ns, burst;
	__u32 flags;
};

static const struct good_case good[] = {
	{ "12000/s", 12000, SEC, 0, 0 },
	{ "10MiB/s", 10ULL << 20, SEC, 0, 0 },
	{ "1/10s", 1, 10 * SEC, 0, 0 },
	{ "500/100ms", 500, 100000000, 0, 0 },
	{ "100/s:20", 100, SEC, 20, 0 },
	{ "0/s", 0, SEC, 0, 0 },
	{ "unlimited", 0, SEC, 0, RL_CONFIG_UNLIMITED },
	{ "500", 500, SEC, 0, 0 },
	{ "12k", 12000, SEC, 0, 0 },
	{ "12K", 12000, SEC, 0, 0 },
	{ "3Ki", 3072, SEC, 0, 0 },
	{ "2M/min", 2000000, 60 * SEC, 0, 0 },
	{ "1G/h", 1000000000, 3600 * SEC, 0, 0 },
	{ "1T/d", 1000000000000ULL, 86400 * SEC, 0, 0 },
	{ "1Ti", 1ULL << 40, SEC, 0, 0 },
	{ "5Gi/2m", 5ULL << 30, 120 * SEC, 0, 0 },
	{ "7B/ns", 7, 1, 0, 0 },
	{ "1kB/us", 1000, 1000, 0, 0 },
	{ "100:20", 100, SEC, 20, 0 },
	{ "1MiB/s:64KiB", 1 << 20, SEC, 64 << 10, 0 },
	{ "1/24h", 1, 86400 * SEC, 0, 0 },
	{ "1/86400000000000ns", 1, 86400 * SEC, 0, 0 },
	{ U64_MAX_STR "/s", UINT64_MAX, SEC, 0, 0 },
	{ "1/ns:9223372036854775808", 1, 1, 1ULL << 63, 0 },
	{ "1/d:106751", 1, 86400 * SEC, 106751, 0 },
	{ "007/s", 7, SEC, 0, 0 },
};

struct bad_case {
	const char *spec;
	int err;
};

static const struct bad_case bad[] = {
	{ "", -EINVAL },
	{ "/s", -EINVAL },
	{ "k", -EINVAL },
	{ "100/", -EINVAL },
	{ "100/10", -EINVAL },
	{ "100:", -EINVAL },
	{ "100/s:", -EINVAL },
	{ " 100/s", -EINVAL },
	{ "100/s ", -EINVAL },
	{ "+100/s", -EINVAL },
	{ "-1/s", -EINVAL },
	{ "0x10/s", -EINVAL },
	{ "1.5k/s", -EINVAL },
	{ "100/sec", -EINVAL },
	{ "100/S", -EINVAL },
	{ "100/s:20/s", -EINVAL },
	{ "10m/s", -EINVAL },
	{ "10iB/s", -EINVAL },
	{ "10MiBB/s", -EINVAL },
	{ "Unlimited", -EINVAL },
	{ "unlimited:5", -EINVAL },
	{ "100/s\n", -EINVAL },
	{ "99999999999999999999/x", -EINVAL },
	{ "18446744073709551616/s", -ERANGE },
	{ "18446744073709551616", -ERANGE },
	{ "17Ei/s", -EINVAL },
	{ "16777216Ti/s", -ERANGE },
	{ "18446745T/s", -ERANGE },
	{ "1/0s", -ERANGE },
	{ "1/0ns", -ERANGE },
	{ "1/86400000000001ns", -ERANGE },
	{ "1/25h", -ERANGE },
	{ "1/2d", -ERANGE },
	{ "1/" U64_MAX_STR "h", -ERANGE },
	{ "1/ns:9223372036854775809", -ERANGE },
	{ "1/d:106752", -ERANGE },
	{ "1/s:" U64_MAX_STR, -ERANGE },
};

struct format_case {
	struct rl_config cfg;
	const char *text;
};

static const struct format_case fmt[] = {
	{ { .rate = 12000, .period_ns = SEC, .burst = 1200 }, "12000/s:1200" },
	{ { .rate = 1, .period_ns = 10 * SEC }, "1/10s" },
	{ { .rate = 500, .period_ns = 100000000 }, "500/100ms" },
	{ { .rate = 10ULL << 20, .period_ns = SEC }, "10485760/s" },
	{ { .rate = 0, .period_ns = SEC }, "0/s" },
	{ { .rate = 3, .period_ns = 60 * SEC }, "3/min" },
	{ { .rate = 3, .period_ns = 90 * SEC }, "3/90s" },
	{ { .rate = 3, .period_ns = 120 * SEC }, "3/2min" },
	{ { .rate = 3, .period_ns = 86400 * SEC }, "3/24h" },
	{ { .rate = 3, .period_ns = 1500 }, "3/1500ns" },
	{ { .rate = 3, .period_ns = 1 }, "3/ns" },
	{ { .rate = 3, .period_ns = 2000 }, "3/2us" },
	{ { .rate = 9, .period_ns = SEC, .burst = 7,
	    .flags = RL_CONFIG_UNLIMITED }, "unlimited" },
	{ { .rate = UINT64_MAX, .period_ns = UINT64_MAX, .burst = UINT64_MAX },
	  U64_MAX_STR "/" U64_MAX_STR "ns:" U64_MAX_STR },
};

/* Configurations that must survive format -> parse unchanged. */
static const struct rl_config trip[] = {
	{ .rate = 12000, .period_ns = SEC, .burst = 1200 },
	{ .rate = UINT64_MAX, .period_ns = 1, .burst = 1ULL << 63 },
	{ .rate = 1, .period_ns = RL_PERIOD_MAX_NS, .burst = 106751 },
	{ .rate = 77, .period_ns = 123456789 },
	{ .rate = 5, .period_ns = 7 * 60 * SEC, .burst = 1 },
	{ .rate = 0, .period_ns = 3 * 3600 * SEC },
	{ .period_ns = SEC, .flags = RL_CONFIG_UNLIMITED },
};

#define N_MISC	8

static int test_num;
static int failures;

/* One TAP line; @arg, if any, is quoted with control characters escaped. */
static void report(bool ok, const char *what, const char *arg)
{
	test_num++;
	if (!ok)
		failures++;
	printf("%sok %d - %s", ok ? "" : "not ", test_num, what);
	if (arg) {
		printf(" '");
		for (; *arg; arg++) {
			if (*arg == '\n')
				printf("\\n");
			else
				putchar(*arg);
		}
		putchar('\'');
	}
	putchar('\n');
}

static bool same_config(const struct rl_config *a, const struct rl_config *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static void test_good(const struct good_case *g)
{
	struct rl_config want = {
		.rate = g->rate, .period_ns = g->period_ns,
		.burst = g->burst, .flags = g->flags,
	};
	struct rl_config cfg;
	int ret;

	memset(&cfg, 0xa5, sizeof(cfg));
	ret = rl_parse_rate(g->spec, &cfg);
	if (ret)
		printf("# got %d\n", ret);
	report(!ret && same_config(&cfg, &want), "parse", g->spec);
}

static void test_bad(const struct bad_case *b)
{
	struct rl_config cfg, orig;
	int ret;

	memset(&cfg, 0xa5, sizeof(cfg));
	orig = cfg;
	ret = rl_parse_rate(b->spec, &cfg);
	if (ret != b->err)
		printf("# got %d, want %d\n", ret, b->err);
	report(ret == b->err && same_config(&cfg, &orig), "reject", b->spec);
}

static void test_format(const struct format_case *f)
{
	char buf[RL_RATE_STRLEN];
	int ret;

	ret = rl_format_rate(&f->cfg, buf, sizeof(buf));
	if (ret < 0 || strcmp(buf, f->text))
		printf("# got %d '%s'\n", ret, ret < 0 ? "" : buf);
	report(ret == (int)strlen(f->text) && !strcmp(buf, f->text),
	       "format", f->text);
}

static void test_trip(const struct rl_config *c)
{
	char buf[RL_RATE_STRLEN];
	struct rl_config back;
	bool ok;

	ok = rl_format_rate(c, buf, sizeof(buf)) > 0 &&
	     !rl_parse_rate(buf, &back) && same_config(c, &back);
	report(ok, "round trip", buf);
}

static void test_misc(void)
{
	struct rl_config cfg = { .rate = 12000, .period_ns = SEC };
	char buf[RL_RATE_STRLEN];
	int ret;

	ret = rl_format_rate(&cfg, buf, 8);	/* "12000/s" needs 8 */
	report(ret == 7 && !strcmp(buf, "12000/s"), "format fits exactly",
	       NULL);
	memset(buf, 'x', sizeof(buf));
	ret = rl_format_rate(&cfg, buf, 7);
	report(ret == -ENOSPC && buf[0] == 'x', "format -ENOSPC, buffer untouched",
	       NULL);
	report(rl_format_rate(NULL, buf, sizeof(buf)) == -EINVAL &&
	       rl_format_rate(&cfg, NULL, 0) == -EINVAL,
	       "format NULL arguments give -EINVAL", NULL);
	report(rl_parse_rate(NULL, &cfg) == -EINVAL &&
	       rl_parse_rate("1/s", NULL) == -EINVAL,
	       "parse NULL arguments give -EINVAL", NULL);
	errno = 4242;
	rl_parse_rate("1/0s", &cfg);
	rl_parse_rate("x", &cfg);
	rl_format_rate(&cfg, buf, 1);
	report(errno == 4242, "errno untouched", NULL);
	ret = rl_parse_rate("1/ns:" U64_MAX_STR, &cfg);
	report(ret == -ERANGE, "burst * period overflow", NULL);
}

/* The two helpers the tools share. */
static void test_amount_priority(void)
{
	uint64_t v = 7;

	report(!rl_parse_amount("64KiB", &v) && v == 65536 &&
	       rl_parse_amount("1/s", &v) == -EINVAL &&
	       rl_parse_amount("unlimited", &v) == -EINVAL &&
	       rl_parse_amount("x", &v) == -EINVAL && v == 65536,
	       "rl_parse_amount", NULL);
	report(rl_parse_priority("low") == RL_PRIO_LOW &&
	       rl_parse_priority("user") == RL_PRIO_USER &&
	       rl_parse_priority("3") == RL_PRIO_HIGH &&
	       rl_parse_priority("5") == -EINVAL &&
	       rl_parse_priority("") == -EINVAL,
	       "rl_parse_priority", NULL);
}

int main(void)
{
	size_t i;

	printf("1..%zu\n", ARRAY_SIZE(good) + ARRAY_SIZE(bad) +
	       ARRAY_SIZE(fmt) + ARRAY_SIZE(trip) + N_MISC);
	for (i = 0; i < ARRAY_SIZE(good); i++)
		test_good(&good[i]);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		test_bad(&bad[i]);
	for (i = 0; i < ARRAY_SIZE(fmt); i++)
		test_format(&fmt[i]);
	for (i = 0; i < ARRAY_SIZE(trip); i++)
		test_trip(&trip[i]);
	test_misc();
	test_amount_priority();
	if (test_num != (int)(ARRAY_SIZE(good) + ARRAY_SIZE(bad) +
			      ARRAY_SIZE(fmt) + ARRAY_SIZE(trip) + N_MISC))
		failures++;
	return failures ? 1 : 0;
}
