/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlctl_keys.h - the tunables of a limiter as rlctl knows them, in one
 * table (rlctl_keys.c): "rlctl set" and "rlctl create", rlctl's sysfs
 * reader and "rlctl show", and the files of "rlctl apply" all walk it.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLCTL_KEYS_H
#define RLCTL_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libratelimit.h"

/*
 * The rows of rlctl_keys[] that code names, in the table's order. A new
 * tunable needs an entry here only if code names it.
 */
enum rlk_id {
	RLK_RATE,
	RLK_PERIOD_NS,
	RLK_BURST,
	RLK_UNLIMITED,
	RLK_CONCURRENCY,
	RLK_FAIRNESS,
	RLK_CATCHUP,
	RLK_BACKLOG,
	RLK_FED,
	RLK_KEYED,
	RLK_KEYS,
	RLK_FAIR_PER_USER,
};

/* Room for the rows of rlctl_keys[] (rlctl_nkeys of them). */
#define RLK_MAX		16

/* How a value is written. */
enum rlk_kind {
	RLK_SPEC,	/* a rate spec (rl_parse_rate()) or an amount */
	RLK_IN_SPEC,	/* part of the rate spec; alone, a plain u64 */
	RLK_FLAG,	/* a bit of rl_config.flags: 0 or 1 (yes or no) */
	RLK_AMOUNT,	/* a count with suffixes (rl_parse_amount()) */
	RLK_U64,	/* a plain decimal u64 */
};

/* rlk.dflt of a tunable whose 0 asks for a value computed from others. */
#define RLK_DERIVED	UINT64_MAX

/**
 * struct rlk - a tunable of a limiter
 * @name:    its line of sysfs config, its key in "rlctl set" and in ratelimit.d(5)
 *           files, its option of "rlctl create" (kinds RLK_AMOUNT and
 *           RLK_U64)
 * @off:     offsetof() its field in struct rl_config
 * @size:    sizeof() that field: 4 or 8
 * @flag:    its bit of rl_config.flags (kind RLK_FLAG), else 0
 * @kind:    how its value is written
 * @min:     least value in force
 * @max:     largest value in force
 * @no_zero: 0 is refused, rather than asking for @dflt
 * @dflt:    what 0 asks for, or RLK_DERIVED
 * @unit:    what @min .. @max count, in error messages, or NULL
 * @least:   what a value of @min or less means in "rlctl show", or NULL
 * @note:    what "rlctl show" prints after a larger value, or NULL
 * @attr:    A_LIST and A_OPT (rlctl.h): in the JSON of "rlctl list";
 *           newer than named limiters, so a sysfs file that may be missing
 * @feature: its word in /sys/kernel/ratelimit/features, or NULL
 */
struct rlk {
	const char *name;
	size_t off;
	size_t size;
	uint32_t flag;
	enum rlk_kind kind;
	uint64_t min;
	uint64_t max;
	bool no_zero;
	uint64_t dflt;
	const char *unit;
	const char *least;
	const char *note;
	unsigned int attr;
	const char *feature;
};

#define A_LIST	1U	/* in the JSON of list */
#define A_OPT	2U	/* newer than named limiters: may be missing */

extern const struct rlk rlctl_keys[];
extern const size_t rlctl_nkeys;

/* The row named by @len bytes of @name, or NULL. */
const struct rlk *rlk_find(const char *name, size_t len);

/* Its value in @cfg; the value @val put in @cfg. */
uint64_t rlk_get(const struct rlk *k, const struct rl_config *cfg);
void rlk_put(const struct rlk *k, struct rl_config *cfg, uint64_t val);

/*
 * @v as a value of a tunable of kind RLK_IN_SPEC or RLK_U64: a plain
 * decimal, 0 unless @k->no_zero, else in @k's bounds. 0 or -EINVAL.
 */
int rlk_parse_u64(const struct rlk *k, const char *v, uint64_t *val);

/* " (what rlk_parse_u64() accepts)" into @buf. */
const char *rlk_hint(const struct rlk *k, char *buf, size_t len);

#endif /* RLCTL_KEYS_H */
