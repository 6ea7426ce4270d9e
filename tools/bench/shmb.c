// SPDX-License-Identifier: GPL-2.0-only
/*
 * shmb.c - peer 1, what a user would write instead of the kernel service: a
 * token bucket in a shared memory file.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "bench.h"

struct shmb *shmb_create(const char *path, uint64_t rate,
			 uint64_t burst)
{
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	struct shmb *b;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(*b)))
		die(path, errno);
	b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (b == MAP_FAILED)
		die("mmap shm bucket", errno);
	close(fd);
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&b->lock, &ma);
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cond, &ca);
	b->rate = rate;
	b->burst = burst;
	b->tokens = burst;
	b->stamp = rl_now_ns();
	return b;
}

void shmb_destroy(struct shmb *b, const char *path)
{
	munmap(b, sizeof(*b));
	unlink(path);
}

static void shmb_refill(struct shmb *b, uint64_t now)
{
	unsigned __int128 add;

	if (now <= b->stamp)
		return;
	add = (unsigned __int128)(now - b->stamp) * b->rate + b->units;
	b->stamp = now;
	b->units = (uint64_t)(add % NSEC_PER_SEC);
	add /= NSEC_PER_SEC;
	if (add >= b->burst - b->tokens) {
		b->tokens = b->burst;
		b->units = 0;
	} else {
		b->tokens += (uint64_t)add;
	}
}

void shmb_acquire(struct shmb *b, uint64_t n)
{
	uint64_t now, missing, when;
	struct timespec ts;

	pthread_mutex_lock(&b->lock);
	for (;;) {
		now = rl_now_ns();
		shmb_refill(b, now);
		if (b->tokens >= n) {
			b->tokens -= n;
			break;
		}
		missing = (n - b->tokens) * NSEC_PER_SEC - b->units;
		when = now + (missing + b->rate - 1) / b->rate;
		ts.tv_sec = when / NSEC_PER_SEC;
		ts.tv_nsec = when % NSEC_PER_SEC;
		pthread_cond_timedwait(&b->cond, &b->lock, &ts);
	}
	pthread_mutex_unlock(&b->lock);
}

/* Empty it, as drain() does a kernel bucket. */
uint64_t shmb_drain(struct shmb *b)
{
	uint64_t got;

	pthread_mutex_lock(&b->lock);
	shmb_refill(b, rl_now_ns());
	got = b->tokens;
	b->tokens = 0;
	pthread_mutex_unlock(&b->lock);
	return got;
}
