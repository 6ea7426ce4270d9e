// SPDX-License-Identifier: GPL-2.0-only
/*
 * abi_dump - what a C compiler makes of uapi/linux/ratelimit_dev.h and
 * lib/libratelimit.h: the
 * size and field offsets of every struct, the ioctl numbers and the
 * constants, one "kind name value" line each; and the rows of the
 * driver's table of tunables (driver/tunables.h), "tunable NAME FIELD
 * FLAG". For test_abi.py to compare with the Python package's ctypes
 * Structures, constants and Config.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <stddef.h>
#include <stdio.h>

#include <libratelimit.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* The rows of the driver's table of tunables. */
static const struct {
	const char *name, *config;
	unsigned long flag;
} rows[] = {
#define RL_TUNABLE(_name, _param, _config, _flag, _min, _max, _dflt, _feat) \
	{ #_name, #_config, _flag },
#include "../../driver/tunables.h"
#undef RL_TUNABLE
};

#define SIZE(s)		printf("sizeof %s %zu\n", #s, sizeof(struct s))
#define OFF(s, f)	printf("offsetof %s.%s %zu\n", #s, #f, \
			       offsetof(struct s, f))
#define IOC(n)		printf("ioctl %s %lu\n", #n, (unsigned long)(n))

/*
 * Every field of the structs the Python package declares in
 * python/kratelimit/_lib.py: the test wants each of its fields here.
 */
static void structs(void)
{
	SIZE(rl_config);
	OFF(rl_config, rate); OFF(rl_config, period_ns); OFF(rl_config, burst);
	OFF(rl_config, flags); OFF(rl_config, catchup);
	OFF(rl_config, concurrency); OFF(rl_config, backlog);
	OFF(rl_config, fairness); OFF(rl_config, reserved0);
	OFF(rl_config, keys);
	SIZE(rl_acquire);
	OFF(rl_acquire, count); OFF(rl_acquire, deadline_ns);
	OFF(rl_acquire, flags); OFF(rl_acquire, priority);
	OFF(rl_acquire, wait_ns); OFF(rl_acquire, ready_ns);
	OFF(rl_acquire, lag_ns); OFF(rl_acquire, reserved);
	SIZE(rl_stats);
	OFF(rl_stats, flags); OFF(rl_stats, reserved0); OFF(rl_stats, granted);
	OFF(rl_stats, requests); OFF(rl_stats, immediate);
	OFF(rl_stats, waited); OFF(rl_stats, wait_ns_total);
	OFF(rl_stats, wait_ns_max); OFF(rl_stats, timeouts);
	OFF(rl_stats, interrupted); OFF(rl_stats, rejected);
	OFF(rl_stats, waiters); OFF(rl_stats, available); OFF(rl_stats, held);
	OFF(rl_stats, clients); OFF(rl_stats, backlog);
	OFF(rl_stats, refunded);
	SIZE(rl_client_config);
	OFF(rl_client_config, priority); OFF(rl_client_config, weight);
	OFF(rl_client_config, cap); OFF(rl_client_config, flags);
	OFF(rl_client_config, reserved0); OFF(rl_client_config, held);
	OFF(rl_client_config, granted); OFF(rl_client_config, reserved);
	SIZE(rl_features);
	OFF(rl_features, version); OFF(rl_features, flags);
	OFF(rl_features, ioctls); OFF(rl_features, config_flags);
	OFF(rl_features, acquire_flags); OFF(rl_features, attach_flags);
	OFF(rl_features, reserved);
	SIZE(rl_lease);
	OFF(rl_lease, expires_ns); OFF(rl_lease, flags);
	OFF(rl_lease, reserved0); OFF(rl_lease, config);
	OFF(rl_lease, fallback); OFF(rl_lease, reserved);
	SIZE(rl_demand);
	OFF(rl_demand, flags); OFF(rl_demand, reserved0); OFF(rl_demand, asked);
	OFF(rl_demand, refused); OFF(rl_demand, queued);
	OFF(rl_demand, busy_ns); OFF(rl_demand, now_ns);
	OFF(rl_demand, reserved);
	SIZE(rl_parent);
	OFF(rl_parent, name_ptr); OFF(rl_parent, weight);
	OFF(rl_parent, flags); OFF(rl_parent, depth);
	OFF(rl_parent, children); OFF(rl_parent, reserved);
	SIZE(rl_cycle);
	OFF(rl_cycle, release); OFF(rl_cycle, flags);
	OFF(rl_cycle, reserved0); OFF(rl_cycle, acquire);
	OFF(rl_cycle, reserved);
#ifdef RL_IOC_SUBMIT
	SIZE(rl_queued);
	OFF(rl_queued, ticket); OFF(rl_queued, count);
	OFF(rl_queued, deadline_ns); OFF(rl_queued, flags);
	OFF(rl_queued, priority); OFF(rl_queued, result);
	OFF(rl_queued, reserved0); OFF(rl_queued, wait_ns);
	OFF(rl_queued, ready_ns); OFF(rl_queued, lag_ns);
	OFF(rl_queued, user_data); OFF(rl_queued, reserved);
#endif
#ifdef RL_IOC_ACQUIRE_KEY
	SIZE(rl_key_acquire);
	OFF(rl_key_acquire, acquire); OFF(rl_key_acquire, key_len);
	OFF(rl_key_acquire, flags); OFF(rl_key_acquire, reserved);
	OFF(rl_key_acquire, key);
	SIZE(rl_key_state);
	OFF(rl_key_state, key_len); OFF(rl_key_state, flags);
	OFF(rl_key_state, key); OFF(rl_key_state, available);
	OFF(rl_key_state, full_ns); OFF(rl_key_state, waiters);
	OFF(rl_key_state, kept); OFF(rl_key_state, reserved0);
	OFF(rl_key_state, reserved);
	SIZE(rl_keys_stats);
	OFF(rl_keys_stats, flags); OFF(rl_keys_stats, reserved0);
	OFF(rl_keys_stats, keys); OFF(rl_keys_stats, keys_max);
	OFF(rl_keys_stats, created); OFF(rl_keys_stats, evicted);
	OFF(rl_keys_stats, refused); OFF(rl_keys_stats, waiters);
	OFF(rl_keys_stats, reserved);
#endif
#ifdef RL_IOC_SUBMIT_KEY
	SIZE(rl_key_queued);
	OFF(rl_key_queued, queued); OFF(rl_key_queued, key_len);
	OFF(rl_key_queued, flags); OFF(rl_key_queued, reserved);
	OFF(rl_key_queued, key);
#endif
}

static void ioctls(void)
{
	IOC(RL_IOC_GET_FEATURES); IOC(RL_IOC_SET_CONFIG);
	IOC(RL_IOC_GET_CONFIG); IOC(RL_IOC_ACQUIRE); IOC(RL_IOC_GET_STATS);
	IOC(RL_IOC_ATTACH); IOC(RL_IOC_UNLINK); IOC(RL_IOC_RELEASE);
	IOC(RL_IOC_REFUND); IOC(RL_IOC_SET_CLIENT); IOC(RL_IOC_GET_CLIENT);
	IOC(RL_IOC_DEPOSIT); IOC(RL_IOC_SET_LEASE); IOC(RL_IOC_GET_DEMAND);
	IOC(RL_IOC_SET_PARENT); IOC(RL_IOC_GET_PARENT); IOC(RL_IOC_CYCLE);
	IOC(RL_IOC_SET_PERM);
#ifdef RL_IOC_SUBMIT
	IOC(RL_IOC_SUBMIT); IOC(RL_IOC_COLLECT); IOC(RL_IOC_CANCEL);
#endif
#ifdef RL_IOC_ACQUIRE_KEY
	IOC(RL_IOC_ACQUIRE_KEY); IOC(RL_IOC_GET_KEY); IOC(RL_IOC_GET_KEYS);
#endif
#ifdef RL_IOC_SUBMIT_KEY
	IOC(RL_IOC_SUBMIT_KEY);
#endif
}

static void constants(void)
{
	printf("const ABI_VERSION %d\n", RL_ABI_VERSION);
	printf("const DEADLINE_NONE %llu\n",
	       (unsigned long long)RL_DEADLINE_NONE);
	printf("const NAME_MAX %d\n", RL_NAME_MAX);
	printf("const CONFIG_UNLIMITED %lu\n", (unsigned long)RL_CONFIG_UNLIMITED);
	printf("const ACQUIRE_NONBLOCK %lu\n", (unsigned long)RL_ACQUIRE_NONBLOCK);
	printf("const ACQUIRE_PREDICT %lu\n", (unsigned long)RL_ACQUIRE_PREDICT);
	printf("const ATTACH_CREATE %lu\n", (unsigned long)RL_ATTACH_CREATE);
	printf("const ATTACH_EXCL %lu\n", (unsigned long)RL_ATTACH_EXCL);
	printf("const ATTACH_PERSIST %lu\n", (unsigned long)RL_ATTACH_PERSIST);
	printf("const PRIO_LOW %d\n", RL_PRIO_LOW);
	printf("const PRIO_MID %d\n", RL_PRIO_MID);
	printf("const PRIO_HIGH %d\n", RL_PRIO_HIGH);
	printf("const PRIO_USER %d\n", RL_PRIO_USER);
	printf("const PRIO_DEFAULT %d\n", RL_PRIO_DEFAULT);
	printf("const CONFIG_FED %lu\n", (unsigned long)RL_CONFIG_FED);
	printf("const PERIOD_MAX_NS %llu\n", (unsigned long long)RL_PERIOD_MAX_NS);
	printf("const BURST_PERIOD_MAX %llu\n",
	       (unsigned long long)RL_BURST_PERIOD_MAX);
	printf("const CATCHUP_STRICT %d\n", RL_CATCHUP_STRICT);
	printf("const CATCHUP_MAX %d\n", RL_CATCHUP_MAX);
	printf("const FAIRNESS_DEFAULT %d\n", RL_FAIRNESS_DEFAULT);
	printf("const FAIRNESS_MAX %d\n", RL_FAIRNESS_MAX);
	printf("const WEIGHT_MAX %d\n", RL_WEIGHT_MAX);
	printf("const DEPTH_MAX %d\n", RL_DEPTH_MAX);
	printf("const RATE_STRLEN %d\n", RL_RATE_STRLEN);
	printf("const PERM_UID %lu\n", (unsigned long)RL_PERM_UID);
	printf("const PERM_GID %lu\n", (unsigned long)RL_PERM_GID);
	printf("const PERM_MODE %lu\n", (unsigned long)RL_PERM_MODE);
	printf("const FEATURE_URING_CMD %lu\n",
	       (unsigned long)RL_FEATURE_URING_CMD);
#ifdef RL_IOC_SUBMIT
	printf("const FEATURE_QUEUED %lu\n", (unsigned long)RL_FEATURE_QUEUED);
	printf("const QUEUED_MAX %d\n", RL_QUEUED_MAX);
#endif
#ifdef RL_FEATURE_FAST
	printf("const FEATURE_FAST %lu\n", (unsigned long)RL_FEATURE_FAST);
#endif
#ifdef RL_FEATURE_KEYED
	printf("const CONFIG_KEYED %lu\n", (unsigned long)RL_CONFIG_KEYED);
	printf("const CONFIG_FAIR_PER_USER %lu\n", (unsigned long)RL_CONFIG_FAIR_PER_USER);
	printf("const FEATURE_KEYED %lu\n", (unsigned long)RL_FEATURE_KEYED);
	printf("const KEY_MAX %d\n", RL_KEY_MAX);
	printf("const KEYS_DEFAULT %d\n", RL_KEYS_DEFAULT);
	printf("const KEYS_USER_MAX %u\n", RL_KEYS_USER_MAX);
	printf("const KEYS_MAX %u\n", RL_KEYS_MAX);
	printf("const KEY_RATE_MAX %llu\n",
	       (unsigned long long)RL_KEY_RATE_MAX);
	/* the full numbers: the package makes these ioctls itself when
	 * the library has no keyed calls */
	printf("const IOC_ACQUIRE_KEY %lu\n", (unsigned long)RL_IOC_ACQUIRE_KEY);
	printf("const IOC_GET_KEY %lu\n", (unsigned long)RL_IOC_GET_KEY);
	printf("const IOC_GET_KEYS %lu\n", (unsigned long)RL_IOC_GET_KEYS);
#endif
}

static void table(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(rows); i++)
		printf("tunable %s %s %lu\n", rows[i].name, rows[i].config,
		       rows[i].flag);
}

int main(void)
{
	structs();
	ioctls();
	constants();
	table();
	return 0;
}
