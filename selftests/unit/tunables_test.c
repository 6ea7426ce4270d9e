// SPDX-License-Identifier: GPL-2.0-only
/*
 * tunables_test.c - host test that rlctl's table of tunables
 * (tools/rlctl_keys.c) follows the driver's (driver/tunables.c): the same
 * rows in the same order, with the same bounds, the same "0 asks for",
 * the same flag of rl_config.flags and the same feature word; that the
 * names of enum rlk_id point at their rows; and the table's helpers.
 *
 * The driver's table is read from its source, found beside this file's
 * (as compiled, from the top of the tree) or under $RL_SRCDIR. Its bounds
 * are names of the uapi header or numbers; a name this test does not
 * know fails it, to be added to known[] below.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#include "rlctl_keys.h"

#define SRC	"driver/tunables.c"
#define MAX_ROWS	32

/* A row of rl_tunables[], as written. */
struct drow {
	char name[64];
	char min[64], max[64], dflt[64], feature[64];
	bool flag, default_fn;
};

/* The bounds the driver's rows name, with their values. */
static const struct {
	const char *name;
	uint64_t val;
} known[] = {
	{ "U64_MAX", UINT64_MAX },
	{ "RL_PERIOD_MAX_NS", RL_PERIOD_MAX_NS },
	{ "RL_TOKENS_FAIRNESS_MAX", RL_FAIRNESS_MAX },	/* main.c asserts */
	{ "RL_FAIRNESS_DEFAULT", RL_FAIRNESS_DEFAULT },
	{ "RL_CATCHUP_STRICT", RL_CATCHUP_STRICT },
	{ "RL_CATCHUP_MAX", RL_CATCHUP_MAX },
};

/* @text's value, 0 for "" (a field not given); false if unknown. */
static bool value(const char *text, uint64_t *val)
{
	char *end;
	size_t i;

	if (!*text) {
		*val = 0;
		return true;
	}
	for (i = 0; i < ARRAY_SIZE(known); i++) {
		if (!strcmp(text, known[i].name)) {
			*val = known[i].val;
			return true;
		}
	}
	*val = strtoull(text, &end, 0);
	return end != text && !*end;
}

/* The value of ".@field = VALUE," on @line into @out (quotes dropped). */
static void field(const char *line, const char *field, char *out, size_t len)
{
	char pat[32];
	const char *p;
	size_t n;

	snprintf(pat, sizeof(pat), ".%s = ", field);
	p = strstr(line, pat);
	if (!p)
		return;
	p += strlen(pat);
	if (*p == '"')
		p++;
	n = strcspn(p, "\",");
	if (n >= len)
		n = len - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

static FILE *open_source(void)
{
	const char *dir = getenv("RL_SRCDIR");
	char path[4096];

	if (dir)
		snprintf(path, sizeof(path), "%s/%s", dir, SRC);
	else
		snprintf(path, sizeof(path), "%.*s../../%s",
			 (int)(strrchr(__FILE__, '/') + 1 - __FILE__),
			 __FILE__, SRC);
	return fopen(path, "re");
}

/* The rows of rl_tunables[]: how many, or -1. */
static int read_driver(struct drow *rows)
{
	char line[512];
	bool in = false;
	int n = -1;
	FILE *f;

	f = open_source();
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "rl_tunables[] = {")) {
			in = true;
			n = 0;
		} else if (in && !strcmp(line, "\t{}\n")) {
			in = false;	/* the row that ends it */
			break;
		} else if (in && !strcmp(line, "\t{\n") && n < MAX_ROWS) {
			memset(&rows[n++], 0, sizeof(*rows));
		} else if (in && n > 0) {
			struct drow *r = &rows[n - 1];

			field(line, "name", r->name, sizeof(r->name));
			field(line, "min", r->min, sizeof(r->min));
			field(line, "max", r->max, sizeof(r->max));
			field(line, "dflt", r->dflt, sizeof(r->dflt));
			field(line, "feature", r->feature, sizeof(r->feature));
			r->flag |= !!strstr(line, ".config_flag = ");
			r->default_fn |= !!strstr(line, ".default_fn = ");
		}
	}
	fclose(f);
	return in ? -1 : n;
}

TEST(same_rows)
{
	struct drow d[MAX_ROWS];
	uint64_t min, max, dflt;
	const struct rlk *k;
	int i, n;

	n = read_driver(d);
	ASSERT_GT(n, 0) TH_LOG("cannot read the rows of %s", SRC);
	ASSERT_EQ((size_t)n, rlctl_nkeys);
	for (i = 0; i < n; i++) {
		k = &rlctl_keys[i];
		EXPECT_STREQ(d[i].name, k->name);
		ASSERT_TRUE(value(d[i].min, &min)) TH_LOG("min %s", d[i].min);
		ASSERT_TRUE(value(d[i].max, &max)) TH_LOG("max %s", d[i].max);
		ASSERT_TRUE(value(d[i].dflt, &dflt))
			TH_LOG("dflt %s", d[i].dflt);
		EXPECT_EQ(min, k->min) TH_LOG("min of %s", k->name);
		EXPECT_EQ(max, k->max) TH_LOG("max of %s", k->name);
		if (d[i].default_fn) {
			EXPECT_EQ(RLK_DERIVED, k->dflt)
				TH_LOG("%s's 0 asks for a value computed",
				       k->name);
		} else if (!k->no_zero) {
			EXPECT_EQ(dflt, k->dflt)
				TH_LOG("what 0 asks for in %s", k->name);
		}
		EXPECT_EQ(d[i].flag, k->kind == RLK_FLAG)
			TH_LOG("%s: a flag in one table only", k->name);
		EXPECT_STREQ(d[i].feature, k->feature ? k->feature : "")
			TH_LOG("feature of %s", k->name);
	}
}

/* The rows code names by enum rlk_id are where it says. */
TEST(named_rows)
{
	static const struct {
		enum rlk_id id;
		const char *name;
	} named[] = {
		{ RLK_RATE, "rate" },
		{ RLK_PERIOD_NS, "period_ns" },
		{ RLK_BURST, "burst" },
		{ RLK_UNLIMITED, "unlimited" },
		{ RLK_CONCURRENCY, "concurrency" },
		{ RLK_FAIRNESS, "fairness" },
		{ RLK_CATCHUP, "catchup" },
		{ RLK_BACKLOG, "backlog" },
		{ RLK_FED, "fed" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(named); i++) {
		ASSERT_LT((size_t)named[i].id, rlctl_nkeys);
		EXPECT_STREQ(named[i].name, rlctl_keys[named[i].id].name);
	}
}

/* The bounds as "rlctl set" and ratelimit.d(5) read them. */
TEST(parse_bounds)
{
	const struct rlk *k = rlk_find("catchup", strlen("catchup"));
	char buf[64];
	uint64_t val = 7;

	ASSERT_NE(NULL, k);
	EXPECT_EQ(0, rlk_parse_u64(k, "0", &val));
	EXPECT_EQ(0, val);
	EXPECT_EQ(-EINVAL, rlk_parse_u64(k, "999", &val));
	EXPECT_EQ(0, rlk_parse_u64(k, "100000", &val));
	EXPECT_EQ(-EINVAL, rlk_parse_u64(k, "100001", &val));
	EXPECT_STREQ(" (per-mille, 1000 .. 100000, or 0)",
		     rlk_hint(k, buf, sizeof(buf)));
	k = rlk_find("period_ns=5", strlen("period_ns"));
	ASSERT_NE(NULL, k);
	EXPECT_EQ(-EINVAL, rlk_parse_u64(k, "0", &val));
	EXPECT_STREQ(" (1 .. 86400000000000)", rlk_hint(k, buf, sizeof(buf)));
	k = rlk_find("fairness", strlen("fairness"));
	ASSERT_NE(NULL, k);
	EXPECT_STREQ(" (0 .. 1000000)", rlk_hint(k, buf, sizeof(buf)));
	EXPECT_EQ(NULL, rlk_find("rat", 3));
}

/* rl_config's fields and flag bits through the table. */
TEST(config_fields)
{
	struct rl_config cfg = { .flags = 1U << 31 };
	size_t i;

	for (i = 0; i < rlctl_nkeys; i++)
		rlk_put(&rlctl_keys[i], &cfg, rlctl_keys[i].flag ? 1 : i + 1);
	EXPECT_EQ(1, cfg.rate);
	EXPECT_EQ(2, cfg.period_ns);
	EXPECT_EQ(3, cfg.burst);
	EXPECT_EQ(RL_CONFIG_UNLIMITED | RL_CONFIG_FED | 1U << 31, cfg.flags);
	EXPECT_EQ(5, cfg.concurrency);
	EXPECT_EQ(6, cfg.fairness);
	EXPECT_EQ(7, cfg.catchup);
	EXPECT_EQ(8, cfg.backlog);
	for (i = 0; i < rlctl_nkeys; i++)
		EXPECT_EQ(rlctl_keys[i].flag ? 1 : i + 1,
			  rlk_get(&rlctl_keys[i], &cfg));
	rlk_put(&rlctl_keys[RLK_UNLIMITED], &cfg, 0);
	rlk_put(&rlctl_keys[RLK_FED], &cfg, 0);
	EXPECT_EQ(1U << 31, cfg.flags);
}

TEST_HARNESS_MAIN
