// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * batch.c - opt-in batched reservations: take tokens from the kernel a
 * batch at a time and hand them out locally, so that most acquires make no
 * system call. Unused tokens go back with RL_IOC_REFUND.
 *
 * While the bucket holds a whole batch, one ioctl serves batch acquires.
 * When it does not (the limiter is what paces the caller), a batch would
 * make the caller wait for tokens it does not need yet, so the wrapper
 * asks only for what is missing and backs off from trying batches
 * (exponentially, up to one try per batch acquires) until one succeeds.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <string.h>

#include "rl_internal.h"

int rl_batch_open(struct rl_batch *b, int fd, uint64_t batch)
{
	struct rl_config cfg;
	int ret;

	if (!b || !batch)
		return -EINVAL;
	ret = rl_get_config(fd, &cfg);
	if (ret)
		return ret;
	memset(b, 0, sizeof(*b));
	b->fd = fd;
	b->unlimited = !!(cfg.flags & RL_CONFIG_UNLIMITED);
	/* A non-blocking acquire never takes more than the burst. */
	b->batch = b->unlimited || batch <= cfg.burst ? batch : cfg.burst;
	return 0;
}

/* Reserve a whole batch if the bucket holds it now. */
static int rl_batch_try(struct rl_batch *b)
{
	int ret;

	if (b->skip) {
		b->skip--;
		return -EAGAIN;
	}
	b->syscalls++;
	ret = rl_try_acquire(b->fd, b->batch, NULL);
	if (!ret) {
		b->backoff = 0;
		b->taken += b->batch;
		b->local += b->batch;
	} else if (ret == -EAGAIN) {
		b->backoff = b->backoff ? b->backoff * 2 : 1;
		if (b->backoff > b->batch)
			b->backoff = b->batch;
		b->skip = b->backoff;
	}
	return ret;
}

int rl_batch_acquire(struct rl_batch *b, uint64_t count)
{
	uint64_t need;
	int ret;

	if (!b || !count)
		return -EINVAL;
	if (b->local < count) {
		need = count - b->local;
		ret = need < b->batch ? rl_batch_try(b) : -EAGAIN;
		if (ret == -EAGAIN) {
			/* Wait only for what is missing. */
			b->syscalls++;
			ret = rl_acquire(b->fd, need);
			if (!ret) {
				b->taken += need;
				b->local += need;
			}
		}
		if (ret)
			return ret;
	}
	b->local -= count;
	b->handed += count;
	return 0;
}

int rl_batch_flush(struct rl_batch *b)
{
	int ret = 0;

	if (!b)
		return -EINVAL;
	/* An unlimited limiter takes nothing from its bucket: no refund. */
	if (b->local && !b->unlimited) {
		b->syscalls++;
		ret = rl_refund(b->fd, b->local);
		if (!ret)
			b->refunded += b->local;
	}
	if (!ret)
		b->local = 0;
	return ret;
}

int rl_batch_close(struct rl_batch *b)
{
	int ret = rl_batch_flush(b);

	if (b)
		b->local = 0;
	return ret;
}
