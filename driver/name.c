// SPDX-License-Identifier: GPL-2.0-only
/*
 * What a limiter's name may be (uapi/linux/ratelimit_dev.h, "Named
 * limiters"), and names read from user space: an ioctl's pointer or a
 * sysfs write.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/ctype.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "named.h"
#include "ratelimit.h"

/* Names of the global files in /sys/kernel/ratelimit/. */
static const char *const rl_reserved_names[] = {
	"count", "version", "features",
};

static bool rl_name_valid(const char *name)
{
	const char *c;

	if (!*name || *name == '.' ||
	    match_string(rl_reserved_names, ARRAY_SIZE(rl_reserved_names),
			 name) >= 0)
		return false;
	for (c = name; *c; c++)
		if (!(isascii(*c) && isalnum(*c)) && *c != '.' && *c != '_' &&
		    *c != '-')
			return false;
	return true;
}

/**
 * rl_name_from_user() - copy in and check a limiter name
 * @name: buffer of RL_NAME_MAX bytes
 * @uptr: user pointer to the NUL-terminated name
 *
 * Return: 0, -EFAULT, or -EINVAL for a name too long, with a character
 * outside [A-Za-z0-9._-], a leading '.', or reserved for a global sysfs
 * file.
 */
int rl_name_from_user(char *name, u64 uptr)
{
	long len;

	len = strncpy_from_user(name, u64_to_user_ptr(uptr), RL_NAME_MAX);
	if (len < 0)
		return len;
	if (len == RL_NAME_MAX || !rl_name_valid(name))
		return -EINVAL;
	return 0;
}

/**
 * rl_name_from_sysfs() - copy in and check a limiter name written to sysfs
 * @name:  buffer of RL_NAME_MAX bytes
 * @buf:   the written text, one trailing newline allowed
 * @count: its length
 *
 * Return: 0, with "" in @name for an empty write, or -EINVAL for a name
 * rl_name_from_user() refuses.
 */
int rl_name_from_sysfs(char *name, const char *buf, size_t count)
{
	if (count && buf[count - 1] == '\n')
		count--;
	if (count >= RL_NAME_MAX || memchr(buf, '\0', count))
		return -EINVAL;
	memcpy(name, buf, count);
	name[count] = '\0';
	return !count || rl_name_valid(name) ? 0 : -EINVAL;
}
