/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlsyncd_kernel.h - the module's calls for global limits
 * (rlsyncd_kernel.c): a kernel lease, a limiter's demand, a deposit.
 * It includes no other header of rlsyncd's.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLSYNCD_KERNEL_H
#define RLSYNCD_KERNEL_H

#include <stdint.h>

#include "libratelimit.h"

/* What the module offers (rls_k_features()). */
#define RLS_K_LEASE	1U	/* RL_IOC_SET_LEASE */
#define RLS_K_DEMAND	2U	/* RL_IOC_GET_DEMAND */
#define RLS_K_DEPOSIT	4U	/* RL_IOC_DEPOSIT and RL_CONFIG_FED */

/**
 * struct rls_demand - RL_IOC_GET_DEMAND's figures
 * @asked:   tokens asked since creation
 * @refused: tokens refused (-EAGAIN, -ETIMEDOUT)
 * @queued:  tokens waiting now
 * @busy_ns: time with at least one sleeper
 * @now_ns:  when they were read
 */
struct rls_demand {
	uint64_t asked;
	uint64_t refused;
	uint64_t queued;
	uint64_t busy_ns;
	uint64_t now_ns;
};

/*
 * Can this process open the device (/dev/ratelimit)? 0, or -errno after
 * one line saying why (the module not loaded, no permission). Always 0
 * in rlsyncd-fake.
 */
int rls_k_device(void);
/* The RLS_K_* the module behind @fd supports; 0 for an older module. */
unsigned int rls_k_features(int fd);
/* RL_CONFIG_FED, or 0 when built without it. */
uint64_t rls_k_fed_flag(void);
/* RL_IOC_SET_LEASE: @cfg until @until (0: now), then @fallback; -errno. */
int rls_k_lease(int fd, const struct rl_config *cfg,
		const struct rl_config *fallback, uint64_t until);
/* RL_IOC_GET_DEMAND; 0 or -errno (-ENOTTY: an older module). */
int rls_k_demand(int fd, struct rls_demand *d);
/* RL_IOC_DEPOSIT of @count; what did not fit in *@excess; -errno. */
int rls_k_deposit(int fd, uint64_t count, uint64_t *excess);

#ifdef RLS_FAKE
/*
 * rlsyncd-fake: the simulated limiter's (selftests/global/fake_kernel.c)
 * demand (asked, refused, queued, busy_ns, now_ns) and deposit, when fed.
 */
unsigned int fake_k_features(void);
int fake_k_demand(int fd, uint64_t d[5]);
int fake_k_deposit(int fd, uint64_t count, uint64_t *excess);
#endif

#endif /* RLSYNCD_KERNEL_H */
