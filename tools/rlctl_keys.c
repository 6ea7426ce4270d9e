// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_keys.c - the tunables of a limiter as rlctl knows them: the
 * driver's table (driver/tunables.h, which says how to add one) with how
 * rlctl writes and shows each. "rlctl set" (keys, checks, order of the
 * writes), "rlctl create" (its options and struct rl_config), rlctl's
 * sysfs reader and "rlctl show", and the files of "rlctl apply" (keys,
 * checks, the plan it prints) walk it.
 *
 * Adding a tunable, besides its row in the driver's table and its
 * RLK_HOW_NAME below (and its entry in enum rlk_id if code names it):
 * the usage text of rlctl (rlctl.c) and dist/rlctl.bash-completion; a
 * metric in rlctl_export.c if it deserves one.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rlctl_keys.h"
#include "sysfile.h"
#include "tool.h"

/* A struct rl_config to take the sizes of its fields: never defined. */
extern const struct rl_config cfg_layout;

/*
 * How rlctl writes and shows each tunable (the fields of struct rlk that
 * the driver's table has not): a tunable without its RLK_HOW_NAME here
 * does not build.
 */
#define RLK_HOW_rate		.kind = RLK_SPEC, .attr = A_LIST
#define RLK_HOW_period_ns	.kind = RLK_IN_SPEC, .attr = A_LIST
#define RLK_HOW_burst		.kind = RLK_AMOUNT, .attr = A_LIST
#define RLK_HOW_unlimited	.kind = RLK_FLAG, .attr = A_LIST
#define RLK_HOW_concurrency	.kind = RLK_AMOUNT, .least = "none",	\
				.attr = A_LIST | A_OPT
#define RLK_HOW_fairness	.kind = RLK_U64, .attr = A_OPT
#define RLK_HOW_catchup		.kind = RLK_U64, .unit = "per-mille",	\
				.least = "strict",			\
				.note = "per-mille of the rate", .attr = A_OPT
#define RLK_HOW_backlog		.kind = RLK_AMOUNT, .attr = A_OPT
#define RLK_HOW_fed		.kind = RLK_FLAG, .attr = A_OPT
#define RLK_HOW_keyed		.kind = RLK_FLAG, .attr = A_OPT
#define RLK_HOW_keys		.kind = RLK_AMOUNT, .attr = A_OPT
#define RLK_HOW_fair_per_user	.kind = RLK_FLAG, .attr = A_OPT

/* The driver's table (driver/tunables.h), in its order. */
const struct rlk rlctl_keys[] = {
#define RL_TUNABLE(_name, _param, _config, _flag, _min, _max, _dflt, _feat) \
	{								\
		.name = #_name,						\
		.off = offsetof(struct rl_config, _config),		\
		.size = sizeof(cfg_layout._config),			\
		.flag = _flag,						\
		.min = _min,						\
		.max = _max,						\
		.no_zero = !(_dflt) && (_min) > 0,			\
		.dflt = _dflt,						\
		.feature = _feat,					\
		RLK_HOW_##_name						\
	},
#include "../driver/tunables.h"
#undef RL_TUNABLE
};

const size_t rlctl_nkeys = ARRAY_SIZE(rlctl_keys);

_Static_assert(ARRAY_SIZE(rlctl_keys) <= RLK_MAX,
	       "RLK_MAX too small for rlctl_keys[]");
_Static_assert(RLK_DERIVED == RL_TUNABLE_BURST_DEFAULT,
	       "the driver's mark of a default computed from other rows");

const struct rlk *rlk_find(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < rlctl_nkeys; i++)
		if (strlen(rlctl_keys[i].name) == len &&
		    !strncmp(name, rlctl_keys[i].name, len))
			return &rlctl_keys[i];
	return NULL;
}

uint64_t rlk_get(const struct rlk *k, const struct rl_config *cfg)
{
	const char *p = (const char *)cfg + k->off;
	uint64_t v64;
	uint32_t v32;

	if (k->size == sizeof(v32)) {
		memcpy(&v32, p, sizeof(v32));
		return k->flag ? !!(v32 & k->flag) : v32;
	}
	memcpy(&v64, p, sizeof(v64));
	return v64;
}

void rlk_put(const struct rlk *k, struct rl_config *cfg, uint64_t val)
{
	char *p = (char *)cfg + k->off;
	uint32_t v32;

	if (k->size != sizeof(v32)) {
		memcpy(p, &val, sizeof(val));
		return;
	}
	if (k->flag) {
		memcpy(&v32, p, sizeof(v32));
		val = val ? v32 | k->flag : v32 & ~k->flag;
	}
	v32 = (uint32_t)val;
	memcpy(p, &v32, sizeof(v32));
}

int rlk_parse_u64(const struct rlk *k, const char *v, uint64_t *val)
{
	uint64_t n;

	if (sysfile_parse_u64(v, 10, &n))
		return -EINVAL;
	if (n ? n < k->min || n > k->max : k->no_zero)
		return -EINVAL;
	*val = n;
	return 0;
}

const char *rlk_hint(const struct rlk *k, char *buf, size_t len)
{
	unsigned long long min = k->min, max = k->max;
	const char *unit = k->unit ? k->unit : "";
	const char *sep = k->unit ? ", " : "";

	if (k->no_zero)
		snprintf(buf, len, " (%s%s%llu .. %llu)", unit, sep, min, max);
	else if (min <= 1)
		snprintf(buf, len, " (%s%s0 .. %llu)", unit, sep, max);
	else
		snprintf(buf, len, " (%s%s%llu .. %llu, or 0)", unit, sep,
			 min, max);
	return buf;
}
