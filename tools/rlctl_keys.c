// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_keys.c - the tunables of a limiter, in one table: in the order of
 * the driver's rl_tunables[] (driver/tunables.c) and of the sysfs files.
 * "rlctl set" (keys, checks, order of the writes), "rlctl create" (its
 * options and struct rl_config), rlctl's sysfs reader and "rlctl show",
 * and the files of "rlctl apply" (keys, checks, the plan it prints) walk
 * it.
 *
 * Adding a tunable, besides its row here (at the index of its row in
 * the driver's table, and in enum rlk_id if code names it): its field in
 * struct rl_config (uapi/linux/ratelimit_dev.h) and its row in
 * driver/tunables.c; its description in Documentation/man/ratelimit.4,
 * in the sysfs ABI file Documentation/ABI/testing/sysfs-kernel-ratelimit,
 * in Documentation/man/ratelimit.d.5 and Documentation/man/rlctl.8; the
 * usage text of rlctl (rlctl.c) and dist/rlctl.bash-completion; a metric
 * in rlctl_export.c if it deserves one. selftests/unit/tunables_test.c
 * checks this table against the driver's.
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

/* In the order of rl_tunables[], with the same bounds. */
const struct rlk rlctl_keys[] = {
	{
		.name = "rate",
		.off = offsetof(struct rl_config, rate),
		.size = sizeof(cfg_layout.rate),
		.kind = RLK_SPEC,
		.max = UINT64_MAX,
		.attr = A_LIST,
	},
	{
		.name = "period_ns",
		.off = offsetof(struct rl_config, period_ns),
		.size = sizeof(cfg_layout.period_ns),
		.kind = RLK_IN_SPEC,
		.min = 1,
		.max = RL_PERIOD_MAX_NS,
		.no_zero = true,
		.attr = A_LIST,
	},
	{
		.name = "burst",
		.off = offsetof(struct rl_config, burst),
		.size = sizeof(cfg_layout.burst),
		.kind = RLK_AMOUNT,
		.min = 1,
		.max = UINT64_MAX,
		.dflt = RLK_DERIVED,
		.attr = A_LIST,
	},
	{
		.name = "unlimited",
		.off = offsetof(struct rl_config, flags),
		.size = sizeof(cfg_layout.flags),
		.flag = RL_CONFIG_UNLIMITED,
		.kind = RLK_FLAG,
		.max = 1,
		.attr = A_LIST,
		.feature = "unlimited",
	},
	{
		.name = "concurrency",
		.off = offsetof(struct rl_config, concurrency),
		.size = sizeof(cfg_layout.concurrency),
		.kind = RLK_AMOUNT,
		.max = UINT64_MAX,
		.least = "none",
		.attr = A_LIST | A_OPT,
		.feature = "concurrency",
	},
	{
		.name = "fairness",
		.off = offsetof(struct rl_config, fairness),
		.size = sizeof(cfg_layout.fairness),
		.kind = RLK_U64,
		.min = 1,
		.max = RL_FAIRNESS_MAX,
		.dflt = RL_FAIRNESS_DEFAULT,
		.attr = A_OPT,
		.feature = "priority",
	},
	{
		.name = "catchup",
		.off = offsetof(struct rl_config, catchup),
		.size = sizeof(cfg_layout.catchup),
		.kind = RLK_U64,
		.min = RL_CATCHUP_STRICT,
		.max = RL_CATCHUP_MAX,
		.dflt = RL_CATCHUP_STRICT,
		.unit = "per-mille",
		.least = "strict",
		.note = "per-mille of the rate",
		.attr = A_OPT,
		.feature = "catchup",
	},
	{
		.name = "backlog",
		.off = offsetof(struct rl_config, backlog),
		.size = sizeof(cfg_layout.backlog),
		.kind = RLK_AMOUNT,
		.max = UINT64_MAX,
		.attr = A_OPT,
		.feature = "catchup",
	},
	{
		.name = "fed",
		.off = offsetof(struct rl_config, flags),
		.size = sizeof(cfg_layout.flags),
		.flag = RL_CONFIG_FED,
		.kind = RLK_FLAG,
		.max = 1,
		.attr = A_OPT,
		.feature = "global",
	},
};

const size_t rlctl_nkeys = ARRAY_SIZE(rlctl_keys);

_Static_assert(ARRAY_SIZE(rlctl_keys) <= RLK_MAX,
	       "RLK_MAX too small for rlctl_keys[]");

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
