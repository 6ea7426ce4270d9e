// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fast.c - acquires without a system call (RL_FEATURE_FAST): the
 * reservation page of an fd, mapped once, from which rl_acquire(),
 * rl_try_acquire() and rl_acquire_timeout() take tokens with a
 * compare-and-swap before they make the ioctl.
 *
 * The page of each fd is found in a table indexed by the fd: two levels of
 * RL_FAST_CHUNK slots, allocated as fds are mapped and kept for the
 * process's life, read without a lock. A slot's @page is 0 (not ours: the
 * ioctl only), RL_FAST_OURS (opened by rl_open(), so rl_set_config() and
 * rl_attach() map it when they succeed) or the address of the page.
 *
 * A mapping does not keep the fd's file (ratelimit(4)): close(2) ends the
 * client as rl_close() does, and the page left mapped is empty. What tells
 * the library that an fd number may now name another file is the page's
 * @closes, which the kernel counts up at every close of an fd of its file:
 * the slot keeps the value seen when the page was mapped, and a take that
 * finds another maps the number again first (rl_fast_repair()), or gives
 * the page up if the number is no longer a mappable limiter's.
 *
 * No page is ever unmapped while another thread may be reading it: the
 * address a slot had stays the slot's (@addr), replaced in one system call
 * by the next page (mremap()) or by an empty anonymous page when given up
 * (rl_fast_retire()). So a take racing a close(2), dup2() or rl_close() of
 * its fd reads the old page or the new one, never a hole.
 *
 * Both calls may fail for want of memory after the kernel took the old
 * mapping away (mremap() and MAP_FIXED unmap first). The address is then
 * no longer known to be the library's: the process may map anything
 * there next. So the slot forgets it (@addr 0) and the library never maps
 * over it again; takes go to the ioctl from before the call. Only a take
 * that read the page before that, and is still reading it when such a
 * call fails, can find a hole: the one race user space cannot close.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
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

/* What the process knows of one fd number's page. */
struct rl_fast_slot {
	uintptr_t page;		/* 0, RL_FAST_OURS or the page: read without the lock */
	uint64_t closes;	/* the page's closes when it was mapped */
	uintptr_t addr;		/* the address kept for this number, or 0; the lock */
};

static struct rl_fast_slot *rl_fast_table[RL_FAST_CHUNKS];
int rli_fast_any;
/* Serialises allocating chunks and mapping, repairing and giving up pages. */
static pthread_mutex_t rl_fast_lock = PTHREAD_MUTEX_INITIALIZER;

/* The slot of @fd, or NULL if its chunk is not there (or @fd is out of range). */
static inline struct rl_fast_slot *rl_fast_find(int fd)
{
	struct rl_fast_slot *chunk;

	if ((unsigned int)fd >= RL_FAST_CHUNK * RL_FAST_CHUNKS)
		return NULL;
	chunk = __atomic_load_n(&rl_fast_table[(unsigned int)fd / RL_FAST_CHUNK],
				__ATOMIC_ACQUIRE);
	return chunk ? &chunk[(unsigned int)fd % RL_FAST_CHUNK] : NULL;
}

/* The slot of @fd, allocating its chunk if @make; NULL if there is none. */
static struct rl_fast_slot *rl_fast_slot(int fd, int make)
{
	struct rl_fast_slot *chunk, *s = rl_fast_find(fd);
	unsigned int i = (unsigned int)fd / RL_FAST_CHUNK;

	if (s || !make || (unsigned int)fd >= RL_FAST_CHUNK * RL_FAST_CHUNKS)
		return s;
	pthread_mutex_lock(&rl_fast_lock);
	chunk = rl_fast_table[i];
	if (!chunk) {
		chunk = calloc(RL_FAST_CHUNK, sizeof(*chunk));
		if (chunk)
			__atomic_store_n(&rl_fast_table[i], chunk, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&rl_fast_lock);
	return chunk ? &chunk[(unsigned int)fd % RL_FAST_CHUNK] : NULL;
}

static uintptr_t rl_fast_get(int fd)
{
	struct rl_fast_slot *s = rl_fast_find(fd);

	return s ? __atomic_load_n(&s->page, __ATOMIC_ACQUIRE) : 0;
}

static uint64_t rl_fast_closes(uintptr_t page)
{
	return __atomic_load_n(&((struct rl_fast *)page)->closes, __ATOMIC_ACQUIRE);
}

/* Is @s's page still the one of its fd number, as far as the process knows? */
static int rl_fast_current(struct rl_fast_slot *s, uintptr_t page)
{
	return rl_fast_closes(page) == __atomic_load_n(&s->closes, __ATOMIC_RELAXED);
}

/* Automatic mapping, unless RATELIMIT_FAST=0 is in the environment. */
static int rl_fast_auto(void)
{
	const char *v = getenv("RATELIMIT_FAST");

	return !v || strcmp(v, "0");
}

/*
 * Give up @s's page, setting its state to @state: an empty anonymous page
 * takes its place at the same address, for takes still reading it. If
 * none can be put there (no memory), the slot forgets the address.
 */
static void rl_fast_retire(struct rl_fast_slot *s, uintptr_t state)
{
	uintptr_t old = s->page;
	void *p;

	__atomic_store_n(&s->page, state, __ATOMIC_RELEASE);
	if (old <= RL_FAST_OURS || !s->addr)
		return;
	p = mmap((void *)s->addr, RL_FAST_SIZE, PROT_READ,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		s->addr = 0;
}

/* Map @fd's page at @s's address (or a new one); the lock held. */
static int rl_fast_place(int fd, struct rl_fast_slot *s)
{
	void *page, *moved;

	page = mmap(NULL, RL_FAST_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (page == MAP_FAILED)
		return -errno;
	if (s->addr) {
		/* Takes go to the ioctl while the address may be a hole. */
		if (s->page > RL_FAST_OURS)
			__atomic_store_n(&s->page, 0, __ATOMIC_RELEASE);
		moved = mremap(page, RL_FAST_SIZE, RL_FAST_SIZE,
			       MREMAP_MAYMOVE | MREMAP_FIXED, (void *)s->addr);
		if (moved == MAP_FAILED) {
			int ret = -errno;

			munmap(page, RL_FAST_SIZE);
			s->addr = 0;
			return ret;
		}
		page = moved;
	}
	s->addr = (uintptr_t)page;
	__atomic_store_n(&s->closes, rl_fast_closes(s->addr), __ATOMIC_RELAXED);
	__atomic_store_n(&s->page, s->addr, __ATOMIC_RELEASE);
	__atomic_store_n(&rli_fast_any, 1, __ATOMIC_RELAXED);
	return 0;
}

void rli_fast_opened(int fd)
{
	struct rl_fast_slot *s;
	int saved = errno;

	s = rl_fast_slot(fd, rl_fast_auto());
	if (!s)
		return;
	/* A page still there is the one of an fd of this number closed with close(2). */
	pthread_mutex_lock(&rl_fast_lock);
	rl_fast_retire(s, rl_fast_auto() ? RL_FAST_OURS : 0);
	pthread_mutex_unlock(&rl_fast_lock);
	errno = saved;
}

void rli_fast_configured(int fd)
{
	if (rl_fast_get(fd) == RL_FAST_OURS)
		rl_fast_map(fd);
}

int rl_fast_map(int fd)
{
	struct rl_fast_slot *s = rl_fast_slot(fd, 1);
	int saved = errno, ret = 0;
	uintptr_t page;

	if (fd < 0)
		return -EBADF;
	if (!s)
		return -ENOMEM;
	pthread_mutex_lock(&rl_fast_lock);
	page = s->page;
	if (page <= RL_FAST_OURS || !rl_fast_current(s, page))
		ret = rl_fast_place(fd, s);
	/* A page of another file than @fd's now is given up. */
	if (ret && page > RL_FAST_OURS)
		rl_fast_retire(s, 0);
	pthread_mutex_unlock(&rl_fast_lock);
	errno = saved;
	return ret;
}

int rl_fast_unmap(int fd)
{
	struct rl_fast_slot *s = rl_fast_find(fd);
	int saved = errno, ret = -ENOENT;

	if (fd < 0)
		return -EBADF;
	if (!s)
		return ret;
	pthread_mutex_lock(&rl_fast_lock);
	if (s->page > RL_FAST_OURS)
		ret = 0;
	rl_fast_retire(s, 0);
	pthread_mutex_unlock(&rl_fast_lock);
	errno = saved;
	return ret;
}

int rli_fast_mapped(int fd)
{
	return rl_fast_get(fd) > RL_FAST_OURS;
}

/*
 * An fd of @fd's number was closed since @s's page was mapped: map the
 * number again (the same page if it is the same file), or give the page
 * up. Return the page to take from now, or 0. Out of line: the takes that
 * need none pay nothing for it.
 */
__attribute__((noinline, cold))
static uintptr_t rl_fast_repair(int fd, struct rl_fast_slot *s)
{
	int saved = errno;
	uintptr_t page;

	pthread_mutex_lock(&rl_fast_lock);
	page = s->page;
	if (page > RL_FAST_OURS && !rl_fast_current(s, page) && rl_fast_place(fd, s))
		rl_fast_retire(s, 0);
	page = s->page;
	pthread_mutex_unlock(&rl_fast_lock);
	errno = saved;
	return page > RL_FAST_OURS ? page : 0;
}

int rl_fast_take(int fd, uint64_t count)
{
	struct rl_fast_slot *s = rl_fast_find(fd);
	struct rl_fast *f;
	uintptr_t page;
	uint64_t t;

	if (!s || !count)
		return 0;
	page = __atomic_load_n(&s->page, __ATOMIC_ACQUIRE);
	if (page <= RL_FAST_OURS)
		return 0;
	if (__builtin_expect(!rl_fast_current(s, page), 0)) {
		page = rl_fast_repair(fd, s);
		if (!page)
			return 0;
	}
	f = (struct rl_fast *)page;
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
