// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * keyed.c - keyed limiters, a token bucket per key (RL_IOC_ACQUIRE_KEY,
 * RL_IOC_SUBMIT_KEY, RL_IOC_GET_KEY, RL_IOC_GET_KEYS). A key's length is checked here, so
 * that a bad one costs no system call.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "rl_internal.h"

static_assert(sizeof(struct rl_key_acquire) == 160, "struct rl_key_acquire size");
static_assert(sizeof(struct rl_key_state) == 128, "struct rl_key_state size");
static_assert(sizeof(struct rl_keys_stats) == 128, "struct rl_keys_stats size");
static_assert(sizeof(struct rl_key_queued) == 176, "struct rl_key_queued size");

static int rl_key_len_valid(const void *key, size_t len)
{
	return key && len && len <= RL_KEY_MAX;
}

/*
 * The request for @count tokens of @key by @deadline_ns with @flags, made;
 * *@ready_ns set where the kernel wrote a ready time: -EAGAIN, -ETIMEDOUT
 * and -ENOSPC.
 */
static int rl_key_request(int fd, const void *key, size_t len, uint64_t count,
			  uint64_t deadline_ns, uint32_t flags,
			  uint64_t *ready_ns)
{
	struct rl_key_acquire req;
	int ret;

	if (!rl_key_len_valid(key, len))
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	req.acquire.count = count;
	req.acquire.deadline_ns = deadline_ns;
	req.acquire.flags = flags;
	req.key_len = (__u32)len;
	memcpy(req.key, key, len);
	ret = rl_sys_ioctl(fd, RL_IOC_ACQUIRE_KEY, &req);
	if (ready_ns && (ret == -EAGAIN || ret == -ETIMEDOUT || ret == -ENOSPC))
		*ready_ns = req.acquire.ready_ns;
	return ret;
}

int rl_acquire_key(int fd, const void *key, size_t len, uint64_t count)
{
	return rl_key_request(fd, key, len, count, RL_DEADLINE_NONE, 0, NULL);
}

int rl_try_acquire_key(int fd, const void *key, size_t len, uint64_t count,
		       uint64_t *ready_ns)
{
	return rl_key_request(fd, key, len, count, RL_DEADLINE_NONE,
			      RL_ACQUIRE_NONBLOCK, ready_ns);
}

int rl_acquire_key_timeout(int fd, const void *key, size_t len,
			   uint64_t count, uint64_t timeout_ns,
			   uint64_t *ready_ns)
{
	return rl_key_request(fd, key, len, count, rli_deadline(timeout_ns), 0,
			      ready_ns);
}

int rl_acquire_key_ex(int fd, struct rl_key_acquire *req)
{
	if (!req || !req->key_len || req->key_len > RL_KEY_MAX)
		return -EINVAL;
	return rl_sys_ioctl(fd, RL_IOC_ACQUIRE_KEY, req);
}

int rl_submit_key(int fd, struct rl_key_queued *kq)
{
	if (!kq || !kq->key_len || kq->key_len > RL_KEY_MAX)
		return -EINVAL;
	return rl_sys_ioctl(fd, RL_IOC_SUBMIT_KEY, kq);
}

int rl_get_key(int fd, const void *key, size_t len, struct rl_key_state *st)
{
	struct rl_key_state req;
	int ret;

	if (!st || !rl_key_len_valid(key, len))
		return -EINVAL;
	/* @key may be @st's own: the request is built apart. */
	memset(&req, 0, sizeof(req));
	req.key_len = (__u32)len;
	memcpy(req.key, key, len);
	ret = rl_sys_ioctl(fd, RL_IOC_GET_KEY, &req);
	if (!ret)
		*st = req;
	return ret;
}

int rl_get_keys(int fd, struct rl_keys_stats *st)
{
	if (!st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	return rl_sys_ioctl(fd, RL_IOC_GET_KEYS, st);
}
