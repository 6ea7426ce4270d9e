// SPDX-License-Identifier: GPL-2.0-only
/*
 * cycle.c - section cycle: a permit given back and taken again, as
 * ACQUIRE+RELEASE (two syscalls), as one RL_IOC_CYCLE, and as a POSIX
 * semaphore's sem_wait+sem_post (no syscall), with the no-op ioctl.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>

#include "bench.h"

void bench_cycle(void)
{
	static const enum kind ks[] = { K_NOOP, K_CONC, K_CYCLE, K_SEM };
	struct rl_config cfg = { .period_ns = NSEC_PER_SEC, .burst = 1,
				 .flags = RL_CONFIG_UNLIMITED,
				 .concurrency = 4 };
	size_t n[NKINDS] = { 0 }, per = scaled(100000, ROUND * 10);
	uint64_t *s[NKINDS] = { 0 };
	double p50[NKINDS];
	struct ctx c = { 0 };
	unsigned int i;

	per -= per % ROUND;
	c.fdu = open_private(0, 1, RL_CONFIG_UNLIMITED);
	c.fdc = open_private(0, 1, 0);
	if (rl_set_config(c.fdc, &cfg))
		die("concurrency config", EINVAL);
	mkdir("/dev/shm", 01777);
	sem_unlink("/rlbench-cycle");
	c.sem = sem_open("/rlbench-cycle", O_CREAT, 0600, 4);
	if (c.sem == SEM_FAILED)
		die("sem_open", errno);
	for (i = 0; i < ARRAY_SIZE(ks); i++) {
		n[ks[i]] = per;
		s[ks[i]] = xcalloc(per, sizeof(uint64_t));
	}
	printf("cycle: %zu timed calls of each kind, interleaved\n", per);
	sample_kinds(&c, n, s);
	for (i = 0; i < ARRAY_SIZE(ks); i++)
		p50[ks[i]] = pct(s[ks[i]], per, 50);
	row("cycle", "CYCLE(release 1, acquire 1) p50", p50[K_CYCLE], "ns",
	    "ACQUIRE(1)+RELEASE(1) p50", p50[K_CONC], "<= 0.6x",
	    at_most(p50[K_CYCLE] / p50[K_CONC], 0.6));
	row("cycle", "CYCLE(release 1, acquire 1) p50", p50[K_CYCLE], "ns",
	    "sem_wait+sem_post p50", p50[K_SEM], NULL, V_INFO);
	row("cycle", "ACQUIRE(1)+RELEASE(1) p50", p50[K_CONC], "ns",
	    "sem_wait+sem_post p50", p50[K_SEM], NULL, V_INFO);
	row("cycle", "CYCLE(release 1, acquire 1) p50", p50[K_CYCLE], "ns",
	    "no-op ioctl p50", p50[K_NOOP], NULL, V_INFO);
	for (i = 0; i < NKINDS; i++)
		free(s[i]);
	sem_close(c.sem);
	sem_unlink("/rlbench-cycle");
	rl_close(c.fdu);
	rl_close(c.fdc);
}
