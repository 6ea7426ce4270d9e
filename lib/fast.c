// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fast.c - acquires without a system call (RL_FEATURE_FAST): the
 * reservation page of an fd, mapped once, from which rl_acquire(),
 * rl_try_acquire() and rl_acquire_timeout() take tokens with a
 * compare-and-swap before they make the ioctl.
 *
 * The page of each fd is found in a table indexed by the fd: two levels of
 * RL_FAST_CHUNK entries, allocated as fds are mapped and kept for the
 * process's life, read without a lock. An entry is 0 (not ours: the ioctl
 * only), RL_FAST_OURS (opened by rl_open(), so rl_set_config() and
 * rl_attach() map it when they succeed) or the address of the page. Only
 * rl_close() and rl_fast_unmap() forget a page: an fd closed with close(2)
 * keeps its file open through the mapping, and a new fd of the same number
 * would take that file's tokens.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rl_internal.h"

#define RL_FAST_CHUNK	1024
#define RL_FAST_CHUNKS	1024
#define RL_FAST_OURS	((uintptr_t)1)

static uintptr_t *rl_fast_table[RL_FAST_CHUNKS];
int rli_fast_any;
static pthread_mutex_t rl_fast_lock = PTHREAD_MUTEX_INITIALIZER;

/* The entry of @fd, allocating its chunk if @make; NULL if there is none. */
static uintptr_t *rl_fast_slot(int fd, int make)
{
	uintptr_t *chunk;
	unsigned int i;

	if (fd < 0 || fd >= RL_FAST_CHUNK * RL_FAST_CHUNKS)
		return NULL;
	i = (unsigned int)fd / RL_FAST_CHUNK;
	chunk = __atomic_load_n(&rl_fast_table[i], __ATOMIC_ACQUIRE);
	if (!chunk && make) {
		pthread_mutex_lock(&rl_fast_lock);
		chunk = rl_fast_table[i];
		if (!chunk) {
			chunk = calloc(RL_FAST_CHUNK, sizeof(*chunk));
			if (chunk)
				__atomic_store_n(&rl_fast_table[i], chunk, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&rl_fast_lock);
	}
	return chunk ? &chunk[(unsigned int)fd % RL_FAST_CHUNK] : NULL;
}

static uintptr_t rl_fast_get(int fd)
{
	uintptr_t *slot = rl_fast_slot(fd, 0);

	return slot ? __atomic_load_n(slot, __ATOMIC_ACQUIRE) : 0;
}

/* Automatic mapping, unless RATELIMIT_FAST=0 is in the environment. */
static int rl_fast_auto(void)
{
	const char *v = getenv("RATELIMIT_FAST");

	return !v || strcmp(v, "0");
}

void rli_fast_opened(int fd)
{
	uintptr_t *slot, old;

	if (!rl_fast_auto())
		return;
	slot = rl_fast_slot(fd, 1);
	if (!slot)
		return;
	/* The page of an fd of this number closed with close(2). */
	old = __atomic_exchange_n(slot, RL_FAST_OURS, __ATOMIC_ACQ_REL);
	if (old > RL_FAST_OURS)
		munmap((void *)old, RL_FAST_SIZE);
}

void rli_fast_configured(int fd)
{
	if (rl_fast_get(fd) == RL_FAST_OURS)
		rl_fast_map(fd);
}

int rl_fast_map(int fd)
{
	uintptr_t *slot = rl_fast_slot(fd, 1);
	int saved = errno;
	uintptr_t old;
	void *page;

	if (fd < 0)
		return -EBADF;
	if (!slot)
		return -ENOMEM;
	old = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (old > RL_FAST_OURS)
		return 0;
	page = mmap(NULL, RL_FAST_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (page == MAP_FAILED) {
		int ret = -errno;

		errno = saved;
		return ret;
	}
	/* Two threads mapping at once: the first one's page stays. */
	if (!__atomic_compare_exchange_n(slot, &old, (uintptr_t)page, 0,
					 __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
		munmap(page, RL_FAST_SIZE);
	__atomic_store_n(&rli_fast_any, 1, __ATOMIC_RELAXED);
	errno = saved;
	return 0;
}

int rl_fast_unmap(int fd)
{
	uintptr_t *slot = rl_fast_slot(fd, 0);
	int saved = errno;
	uintptr_t old;

	if (fd < 0)
		return -EBADF;
	old = slot ? __atomic_exchange_n(slot, 0, __ATOMIC_ACQ_REL) : 0;
	if (old > RL_FAST_OURS)
		munmap((void *)old, RL_FAST_SIZE);
	errno = saved;
	return old > RL_FAST_OURS ? 0 : -ENOENT;
}

int rli_fast_mapped(int fd)
{
	return rl_fast_get(fd) > RL_FAST_OURS;
}

int rl_fast_take(int fd, uint64_t count)
{
	uintptr_t e = rl_fast_get(fd);
	struct rl_fast *f;
	uint64_t t;

	if (e <= RL_FAST_OURS || !count)
		return 0;
	f = (struct rl_fast *)e;
	t = __atomic_load_n(&f->tokens, __ATOMIC_RELAXED);
	while (t >= count) {
		if (__atomic_compare_exchange_n(&f->tokens, &t, t - count, 1,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			__atomic_fetch_add(&f->acquires, 1, __ATOMIC_RELAXED);
			return 1;
		}
	}
	return 0;
}
