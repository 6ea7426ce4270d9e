/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The one table of a limiter's tunables. The driver's rl_tunables[]
 * (tunables.c), rlctl's rlctl_keys[] (tools/rlctl_keys.c) and the Python
 * package's ABI test (python/tests/abi_dump.c) each define RL_TUNABLE() and
 * include this file, hence no include guard. Bounds: the uapi header's.
 *
 *   RL_TUNABLE(name, param, config, flag, min, max, dflt, feature)
 *
 * @name:    its line of sysfs config, its key in "rlctl set" and ratelimit.d(5)
 * @param:   its field in struct rl_params (bucket.h)
 * @config:  its field in struct rl_config (uapi/linux/ratelimit_dev.h)
 * @flag:    the bit of rl_config.flags that it is, or 0 for a field
 * @min:     least value in force
 * @max:     largest value in force
 * @dflt:    what a 0 written asks for (0 with @min above 0: 0 is refused);
 *           RL_TUNABLE_BURST_DEFAULT: rl_default_burst() (bucket.c)
 * @feature: its word in /sys/kernel/ratelimit/features, or NULL
 *
 * Every bound fits both fields. A default may depend on the rows before
 * it: rl_params_from_config() (tunables.c) and "rlctl set" go in order.
 *
 * Adding one: fields in struct rl_config and struct rl_params, a row here,
 * rl_params_check() (bucket.c) if it bounds others, rlctl's RLK_HOW_NAME
 * (tools/rlctl_keys.c), Config in python/kratelimit/_values.py; and docs:
 * ratelimit(4), ratelimit.d(5), rlctl(8) and the sysfs ABI file.
 */
#ifndef RL_TUNABLE_BURST_DEFAULT
#define RL_TUNABLE_BURST_DEFAULT	(~0ULL)
#define RL_TUNABLE_ANY			(~0ULL)	/* no bound but the field's */
#endif

RL_TUNABLE(rate, rate, rate, 0,
	   0, RL_TUNABLE_ANY, 0, NULL)
RL_TUNABLE(period_ns, period, period_ns, 0,
	   1, RL_PERIOD_MAX_NS, 0, NULL)
RL_TUNABLE(burst, burst, burst, 0,
	   1, RL_TUNABLE_ANY, RL_TUNABLE_BURST_DEFAULT, NULL)
RL_TUNABLE(unlimited, unlimited, flags, RL_CONFIG_UNLIMITED,
	   0, 1, 0, "unlimited")
RL_TUNABLE(concurrency, concurrency, concurrency, 0,
	   0, RL_TUNABLE_ANY, 0, "concurrency")
RL_TUNABLE(fairness, fairness, fairness, 0,
	   1, RL_FAIRNESS_MAX, RL_FAIRNESS_DEFAULT, "priority")
RL_TUNABLE(catchup, catchup, catchup, 0,
	   RL_CATCHUP_STRICT, RL_CATCHUP_MAX, RL_CATCHUP_STRICT, "catchup")
RL_TUNABLE(backlog, backlog, backlog, 0,
	   0, RL_TUNABLE_ANY, 0, "catchup")
RL_TUNABLE(fed, fed, flags, RL_CONFIG_FED,
	   0, 1, 0, "global")
RL_TUNABLE(keyed, keyed, flags, RL_CONFIG_KEYED,
	   0, 1, 0, "keyed")
RL_TUNABLE(keys, keys, keys, 0,
	   0, RL_KEYS_MAX, 0, "keyed")
RL_TUNABLE(fair_per_user, fair_per_user, flags, RL_CONFIG_FAIR_PER_USER,
	   0, 1, 0, "fair-per-user")
