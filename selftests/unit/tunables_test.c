// SPDX-License-Identifier: GPL-2.0-only
/*
 * tunables_test.c - host test of rlctl's table of tunables
 * (tools/rlctl_keys.c), made from the driver's (driver/tunables.h): its
 * rows are the driver's, with bounds that fit the fields and defaults in
 * bounds; the names of enum rlk_id point at their rows; and the table's
 * helpers.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#include "rlctl_keys.h"

/* A row of the driver's table, as its macro gives it. */
struct drow {
	const char *name;
	size_t config, config_size;
	uint32_t flag;
	uint64_t min, max, dflt;
	const char *feature;
};

static const struct drow drows[] = {
#define RL_TUNABLE(_name, _param, _config, _flag, _min, _max, _dflt, _feat) \
	{ #_name, offsetof(struct rl_config, _config),			\
	  sizeof(((struct rl_config *)0)->_config), _flag, _min, _max,	\
	  _dflt, _feat },
#include "../../driver/tunables.h"
#undef RL_TUNABLE
};

TEST(same_rows)
{
	const struct drow *d;
	const struct rlk *k;
	size_t i;

	ASSERT_EQ(ARRAY_SIZE(drows), rlctl_nkeys);
	for (i = 0; i < rlctl_nkeys; i++) {
		d = &drows[i];
		k = &rlctl_keys[i];
		EXPECT_STREQ(d->name, k->name);
		EXPECT_EQ(d->config, k->off);
		EXPECT_EQ(d->config_size, k->size);
		EXPECT_EQ(d->min, k->min) TH_LOG("min of %s", k->name);
		EXPECT_EQ(d->max, k->max) TH_LOG("max of %s", k->name);
		EXPECT_EQ(d->dflt, k->dflt) TH_LOG("dflt of %s", k->name);
		EXPECT_EQ(d->flag, k->flag) TH_LOG("flag of %s", k->name);
		EXPECT_EQ(!!d->flag, k->kind == RLK_FLAG)
			TH_LOG("%s: a flag is written yes or no", k->name);
		EXPECT_STREQ(d->feature ? d->feature : "",
			     k->feature ? k->feature : "")
			TH_LOG("feature of %s", k->name);
	}
}

/* What the driver's table says of every row holds. */
TEST(rows_in_bounds)
{
	const struct rlk *k;
	size_t i;

	for (i = 0; i < rlctl_nkeys; i++) {
		k = &rlctl_keys[i];
		EXPECT_LE(k->min, k->max) TH_LOG("bounds of %s", k->name);
		if (k->size == sizeof(uint32_t) && !k->flag)
			EXPECT_LE(k->max, UINT32_MAX)
				TH_LOG("%s: max fits its field", k->name);
		if (k->flag)
			EXPECT_EQ(1, k->max) TH_LOG("%s: a flag", k->name);
		if (k->dflt && k->dflt != RLK_DERIVED) {
			EXPECT_GE(k->dflt, k->min) TH_LOG("dflt of %s", k->name);
			EXPECT_LE(k->dflt, k->max) TH_LOG("dflt of %s", k->name);
		}
		EXPECT_EQ(k->no_zero, !k->dflt && k->min > 0)
			TH_LOG("%s: 0 is refused when it asks for nothing",
			       k->name);
	}
	/* The bounds are the uapi header's. */
	EXPECT_EQ(RL_PERIOD_MAX_NS, rlctl_keys[RLK_PERIOD_NS].max);
	EXPECT_EQ(RL_FAIRNESS_MAX, rlctl_keys[RLK_FAIRNESS].max);
	EXPECT_EQ(RL_FAIRNESS_DEFAULT, rlctl_keys[RLK_FAIRNESS].dflt);
	EXPECT_EQ(RL_CATCHUP_STRICT, rlctl_keys[RLK_CATCHUP].min);
	EXPECT_EQ(RL_CATCHUP_MAX, rlctl_keys[RLK_CATCHUP].max);
	EXPECT_EQ(RLK_DERIVED, rlctl_keys[RLK_BURST].dflt);
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
		{ RLK_KEYED, "keyed" },
		{ RLK_KEYS, "keys" },
		{ RLK_FAIR_PER_USER, "fair_per_user" },
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
	EXPECT_EQ(RL_CONFIG_UNLIMITED | RL_CONFIG_FED | RL_CONFIG_KEYED |
		  RL_CONFIG_FAIR_PER_USER | 1U << 31, cfg.flags);
	EXPECT_EQ(5, cfg.concurrency);
	EXPECT_EQ(6, cfg.fairness);
	EXPECT_EQ(7, cfg.catchup);
	EXPECT_EQ(8, cfg.backlog);
	EXPECT_EQ(11, cfg.keys);
	for (i = 0; i < rlctl_nkeys; i++)
		EXPECT_EQ(rlctl_keys[i].flag ? 1 : i + 1,
			  rlk_get(&rlctl_keys[i], &cfg));
	rlk_put(&rlctl_keys[RLK_UNLIMITED], &cfg, 0);
	rlk_put(&rlctl_keys[RLK_FED], &cfg, 0);
	rlk_put(&rlctl_keys[RLK_KEYED], &cfg, 0);
	rlk_put(&rlctl_keys[RLK_FAIR_PER_USER], &cfg, 0);
	EXPECT_EQ(1U << 31, cfg.flags);
}

TEST_HARNESS_MAIN
