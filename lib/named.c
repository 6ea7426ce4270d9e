// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * named.c - named limiters: attaching to one, removing a name.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "rl_internal.h"

static_assert(sizeof(struct rl_attach) == 112, "struct rl_attach size");
static_assert(sizeof(struct rl_unlink) == 32, "struct rl_unlink size");

#define NSEC_PER_SEC	1000000000ULL

int rl_name_valid(const char *name)
{
	size_t i;

	if (!name || !name[0] || name[0] == '.')
		return 0;
	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (i >= RL_NAME_MAX - 1)
			return 0;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return 0;
	}
	/* The global files of /sys/kernel/ratelimit/ take these names. */
	return strcmp(name, "count") && strcmp(name, "version") &&
	       strcmp(name, "features");
}

int rl_attach(int fd, const char *name, uint32_t flags, uint32_t mode,
	      const struct rl_config *cfg)
{
	struct rl_attach req;
	int ret;

	if (!name)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	req.name_ptr = (__u64)(uintptr_t)name;
	req.flags = flags;
	req.mode = mode;
	if (cfg) {
		req.config = *cfg;
	} else {
		/*
		 * The kernel validates the configuration even when the
		 * limiter exists: a paused one-second limiter passes.
		 */
		req.config.period_ns = NSEC_PER_SEC;
	}
	ret = rl_sys_ioctl(fd, RL_IOC_ATTACH, &req);
	if (!ret)
		rli_fast_configured(fd);
	return ret;
}

int rl_open_named(const char *name, uint32_t flags, uint32_t mode,
		  const struct rl_config *cfg)
{
	int fd, ret;

	if (!name)
		return -EINVAL;
	fd = rl_open(0);
	if (fd < 0)
		return fd;
	ret = rl_attach(fd, name, flags, mode, cfg);
	if (ret) {
		rl_close(fd);
		return ret;
	}
	return fd;
}

int rl_unlink(int fd, const char *name)
{
	struct rl_unlink req;
	int tmp = -1, ret;

	if (!name)
		return -EINVAL;
	if (fd < 0) {
		tmp = rl_open(0);
		if (tmp < 0)
			return tmp;
		fd = tmp;
	}
	memset(&req, 0, sizeof(req));
	req.name_ptr = (__u64)(uintptr_t)name;
	ret = rl_sys_ioctl(fd, RL_IOC_UNLINK, &req);
	if (tmp >= 0)
		rl_close(tmp);
	return ret;
}

int rl_set_perm(int fd, uint32_t uid, uint32_t gid, uint32_t mode,
		uint32_t flags)
{
	struct rl_perm req;

	memset(&req, 0, sizeof(req));
	req.uid = uid;
	req.gid = gid;
	req.mode = mode;
	req.flags = flags;
	return rl_sys_ioctl(fd, RL_IOC_SET_PERM, &req);
}

int rl_share(int fd, int ns_fd, uint32_t flags)
{
	struct rl_share req;

	memset(&req, 0, sizeof(req));
	req.ns_fd = ns_fd;
	req.flags = flags;
	return rl_sys_ioctl(fd, RL_IOC_SHARE, &req);
}
