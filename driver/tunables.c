// SPDX-License-Identifier: GPL-2.0-only
/*
 * The tunables of a limiter, in one table: what struct rl_config carries,
 * what "0" asks for, the bounds, the sysfs file of a named limiter and the
 * feature word. RL_IOC_SET_CONFIG and RL_IOC_GET_CONFIG (main.c), the
 * sysfs files (sysfs.c) and sysfs's features line all walk it.
 *
 * Adding a tunable: a field in struct rl_config (uapi) and in struct
 * rl_params (tokens.h), a row below, and rl_params_check() if it bounds
 * other fields; then its description in ratelimit(4) and the sysfs ABI
 * file, and its key in rlctl's table.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/stddef.h>

#include "ratelimit.h"

static u64 rl_burst_default(const struct rl_params *p)
{
	return rl_default_burst(p->rate, p->period);
}

/*
 * Every bound fits the field of struct rl_params and of struct rl_config,
 * so a value in bounds is stored whole. A default may depend on the rows
 * before it. In the order of the files in the sysfs ABI document.
 */
const struct rl_tunable rl_tunables[] = {
	{
		.name = "rate",
		.param = offsetof(struct rl_params, rate),
		.param_size = sizeof_field(struct rl_params, rate),
		.config = offsetof(struct rl_config, rate),
		.config_size = sizeof_field(struct rl_config, rate),
		.mode = 0644,
		.max = U64_MAX,
	},
	{
		.name = "period_ns",
		.param = offsetof(struct rl_params, period),
		.param_size = sizeof_field(struct rl_params, period),
		.config = offsetof(struct rl_config, period_ns),
		.config_size = sizeof_field(struct rl_config, period_ns),
		.mode = 0644,
		.min = 1,
		.max = RL_PERIOD_MAX_NS,
	},
	{
		.name = "burst",
		.param = offsetof(struct rl_params, burst),
		.param_size = sizeof_field(struct rl_params, burst),
		.config = offsetof(struct rl_config, burst),
		.config_size = sizeof_field(struct rl_config, burst),
		.mode = 0644,
		.min = 1,
		.max = U64_MAX,
		.default_fn = rl_burst_default,
	},
	{
		.name = "unlimited",
		.param = offsetof(struct rl_params, unlimited),
		.param_size = sizeof_field(struct rl_params, unlimited),
		.config = offsetof(struct rl_config, flags),
		.config_size = sizeof_field(struct rl_config, flags),
		.mode = 0644,
		.config_flag = RL_CONFIG_UNLIMITED,
		.max = 1,
		.feature = "unlimited",
	},
	{
		.name = "concurrency",
		.param = offsetof(struct rl_params, concurrency),
		.param_size = sizeof_field(struct rl_params, concurrency),
		.config = offsetof(struct rl_config, concurrency),
		.config_size = sizeof_field(struct rl_config, concurrency),
		.mode = 0644,
		.max = U64_MAX,
		.feature = "concurrency",
	},
	{
		.name = "fairness",
		.param = offsetof(struct rl_params, fairness),
		.param_size = sizeof_field(struct rl_params, fairness),
		.config = offsetof(struct rl_config, fairness),
		.config_size = sizeof_field(struct rl_config, fairness),
		.mode = 0644,
		.min = 1,
		.max = RL_TOKENS_FAIRNESS_MAX,
		.dflt = RL_FAIRNESS_DEFAULT,
		.feature = "priority",
	},
	{
		.name = "catchup",
		.param = offsetof(struct rl_params, catchup),
		.param_size = sizeof_field(struct rl_params, catchup),
		.config = offsetof(struct rl_config, catchup),
		.config_size = sizeof_field(struct rl_config, catchup),
		.mode = 0644,
		.min = RL_CATCHUP_STRICT,
		.max = RL_CATCHUP_MAX,
		.dflt = RL_CATCHUP_STRICT,
		.feature = "catchup",
	},
	{
		.name = "backlog",
		.param = offsetof(struct rl_params, backlog),
		.param_size = sizeof_field(struct rl_params, backlog),
		.config = offsetof(struct rl_config, backlog),
		.config_size = sizeof_field(struct rl_config, backlog),
		.mode = 0644,
		.max = U64_MAX,
		.feature = "catchup",
	},
	{
		.name = "fed",
		.param = offsetof(struct rl_params, fed),
		.param_size = sizeof_field(struct rl_params, fed),
		.config = offsetof(struct rl_config, flags),
		.config_size = sizeof_field(struct rl_config, flags),
		.mode = 0644,
		.config_flag = RL_CONFIG_FED,
		.max = 1,
		.feature = "global",
	},
	{}
};

static u64 rl_field_read(const void *base, size_t off, size_t size)
{
	const void *p = base + off;

	switch (size) {
	case sizeof(u8):
		return *(const u8 *)p;
	case sizeof(u32):
		return *(const u32 *)p;
	default:
		return *(const u64 *)p;
	}
}

static void rl_field_write(void *base, size_t off, size_t size, u64 val)
{
	void *p = base + off;

	switch (size) {
	case sizeof(u8):
		*(u8 *)p = val;
		break;
	case sizeof(u32):
		*(u32 *)p = val;
		break;
	default:
		*(u64 *)p = val;
	}
}

/**
 * rl_tunable_get() - read a tunable
 * @t: a row of rl_tunables
 * @p: limits
 *
 * Return: its value in @p.
 */
u64 rl_tunable_get(const struct rl_tunable *t, const struct rl_params *p)
{
	return rl_field_read(p, t->param, t->param_size);
}

/**
 * rl_tunable_set() - set a tunable, alone
 * @t:   a row of rl_tunables
 * @p:   limits to change, with the fields before @t's in the table set
 * @val: the value, 0 asking for the default where @t has one
 *
 * Checks @t's bounds only: rl_params_check() checks @p as a whole.
 *
 * Return: 0, or -EINVAL with @p unchanged.
 */
int rl_tunable_set(const struct rl_tunable *t, struct rl_params *p, u64 val)
{
	if (!val && t->default_fn)
		val = t->default_fn(p);
	else if (!val)
		val = t->dflt;
	if (val < t->min || val > t->max)
		return -EINVAL;
	rl_field_write(p, t->param, t->param_size, val);
	return 0;
}

/**
 * rl_params_from_config() - the limits a configuration asks for
 * @cfg: the configuration, its flags and reserved fields already checked
 * @p:   filled with the limits
 *
 * Return: 0, or -EINVAL if they are out of bounds.
 */
int rl_params_from_config(const struct rl_config *cfg, struct rl_params *p)
{
	const struct rl_tunable *t;
	u64 val;
	int ret;

	*p = (struct rl_params){};
	for (t = rl_tunables; t->name; t++) {
		val = rl_field_read(cfg, t->config, t->config_size);
		if (t->config_flag)
			val = !!(val & t->config_flag);
		ret = rl_tunable_set(t, p, val);
		if (ret)
			return ret;
	}
	return rl_params_check(p);
}

/**
 * rl_params_to_config() - describe limits as a configuration
 * @p:   limits
 * @cfg: a zeroed configuration, filled
 */
void rl_params_to_config(const struct rl_params *p, struct rl_config *cfg)
{
	const struct rl_tunable *t;
	u64 val, old;

	for (t = rl_tunables; t->name; t++) {
		val = rl_tunable_get(t, p);
		if (t->config_flag) {
			old = rl_field_read(cfg, t->config, t->config_size);
			val = val ? old | t->config_flag : old;
		}
		rl_field_write(cfg, t->config, t->config_size, val);
	}
}
