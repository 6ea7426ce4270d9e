// SPDX-License-Identifier: GPL-2.0-only
/*
 * rl_tunables[], made from the table in tunables.h, and its walks.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/bits.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/stddef.h>

#include "ratelimit.h"

static u64 rl_burst_default(const struct rl_params *p)
{
	return rl_default_burst(p->rate, p->period);
}

/* A row per tunable, a line each of sysfs config; ends with a NULL name. */
const struct rl_tunable rl_tunables[] = {
#define RL_TUNABLE(_name, _param, _config, _flag, _min, _max, _dflt, _feat) \
	{								\
		.name = #_name,						\
		.param = offsetof(struct rl_params, _param),		\
		.param_size = sizeof_field(struct rl_params, _param),	\
		.config = offsetof(struct rl_config, _config),		\
		.config_size = sizeof_field(struct rl_config, _config),	\
		.config_flag = _flag,					\
		.min = _min,						\
		.max = _max,						\
		.dflt = (_dflt) == RL_TUNABLE_BURST_DEFAULT ? 0 : (_dflt), \
		.default_fn = (_dflt) == RL_TUNABLE_BURST_DEFAULT ?	\
			      rl_burst_default : NULL,			\
		.feature = _feat,					\
	},
#include "tunables.h"
#undef RL_TUNABLE
	{}
};

static u64 rl_field_read(const void *base, size_t off, size_t size)
{
	const void *p = base + off;

	if (size == sizeof(u8))
		return *(const u8 *)p;
	return size == sizeof(u32) ? *(const u32 *)p : *(const u64 *)p;
}

static void rl_field_write(void *base, size_t off, size_t size, u64 val)
{
	void *p = base + off;

	if (size == sizeof(u8))
		*(u8 *)p = val;
	else if (size == sizeof(u32))
		*(u32 *)p = val;
	else
		*(u64 *)p = val;
}

/**
 * rl_tunable_get() - read a tunable
 * @t: a row of rl_tunables
 * @p: limits
 * Return: its value in @p.
 */
u64 rl_tunable_get(const struct rl_tunable *t, const struct rl_params *p)
{
	return rl_field_read(p, t->param, t->param_size);
}

/**
 * rl_tunable_set() - set a tunable, checking its bounds only (not rl_params_check())
 * @t:   a row of rl_tunables
 * @p:   limits to change, with the fields before @t's in the table set
 * @val: the value, 0 asking for the default where @t has one
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
 * rl_tunables_set() - set some tunables, in the table's order, and check the result
 * @p:     limits to change
 * @vals:  new values by row of rl_tunables, 0 asking for the default
 * @given: bit i set for each row i to change
 * Return: 0, or -EINVAL (rl_tunable_set(), rl_params_check()), @p then undefined.
 */
int rl_tunables_set(struct rl_params *p, const u64 *vals, unsigned long given)
{
	const struct rl_tunable *t;
	int ret;

	for (t = rl_tunables; t->name; t++) {
		if (!(given & BIT(t - rl_tunables)))
			continue;
		ret = rl_tunable_set(t, p, vals[t - rl_tunables]);
		if (ret)
			return ret;
	}
	return rl_params_check(p);
}

/**
 * rl_params_from_config() - the limits a configuration asks for
 * @cfg: the configuration, its flags and reserved fields already checked
 * @p:   filled with the limits
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
