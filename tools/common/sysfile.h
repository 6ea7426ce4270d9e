/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sysfile.h - reading the small files of sysfs (/sys/kernel/ratelimit,
 * /sys/module/ratelimit, clocksource, tracing): whole, or as a number.
 *
 * Header-only, so that the selftests include it as the tools do; every
 * function returns 0 (or a length) or -errno, and leaves errno alone
 * only where it says so.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RL_SYSFILE_H
#define RL_SYSFILE_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/*
 * Up to @len - 1 bytes of @fd from where it is, then a NUL: the length
 * read (to the end of the file or of @buf), or -errno.
 */
static inline ssize_t sysfile_read_fd(int fd, char *buf, size_t len)
{
	size_t n = 0;
	ssize_t r;

	while (n + 1 < len) {
		r = read(fd, buf + n, len - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			break;
		n += r;
	}
	buf[n] = '\0';
	return n;
}

/* Up to @len - 1 bytes of @path, then a NUL: the length, or -errno. */
static inline ssize_t sysfile_read(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if (!len)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = sysfile_read_fd(fd, buf, len);
	close(fd);
	return n;
}

/*
 * The whole of @path in a new NUL-terminated buffer (free() it), or
 * NULL with -errno in *@err.
 */
static inline char *sysfile_read_all(const char *path, int *err)
{
	size_t len = 0, size = 4096;
	char *buf = NULL, *nbuf;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	do {
		nbuf = realloc(buf, size);
		if (!nbuf) {
			n = -ENOMEM;
			break;
		}
		buf = nbuf;
		n = sysfile_read_fd(fd, buf + len, size - len);
		if (n >= 0)
			len += n;
		size *= 2;
	} while (n >= 0 && len + 1 >= size / 2);
	close(fd);
	if (n < 0) {
		free(buf);
		*err = (int)n;
		return NULL;
	}
	return buf;
}

/*
 * @s as a number in @base (8 or 10): digits only, then nothing or a
 * newline (as sysfs prints them). 0, -EINVAL or -ERANGE.
 */
static inline int sysfile_parse_u64(const char *s, int base, uint64_t *val)
{
	uint64_t v = 0;
	const char *p = s;
	int d;

	for (; *p >= '0' && *p < '0' + base; p++) {
		d = *p - '0';
		if (__builtin_mul_overflow(v, (uint64_t)base, &v) ||
		    __builtin_add_overflow(v, (uint64_t)d, &v))
			return -ERANGE;
	}
	if (p == s || (*p && strcmp(p, "\n")))
		return -EINVAL;
	*val = v;
	return 0;
}

/*
 * In @text, lines "KEY VALUE" (a limiter's sysfs stat or config): the
 * VALUE of @key into @buf of @len bytes, without its newline. 0, or
 * -ENOENT when no line has @key.
 */
static inline int sysfile_key(const char *text, const char *key, char *buf,
			      size_t len)
{
	size_t klen = strlen(key), vlen;
	const char *line = text;

	while (*line) {
		vlen = strcspn(line, "\n");
		if (vlen > klen && !strncmp(line, key, klen) &&
		    line[klen] == ' ') {
			snprintf(buf, len, "%.*s", (int)(vlen - klen - 1),
				 line + klen + 1);
			return 0;
		}
		line += vlen + (line[vlen] == '\n');
	}
	return -ENOENT;
}

/*
 * The number in @path, in @base, into *@val (0 on errors): 0, -errno, or
 * -EIO if it is none.
 */
static inline int sysfile_read_u64(const char *path, int base, uint64_t *val)
{
	char buf[64];
	ssize_t n;

	*val = 0;
	n = sysfile_read(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return sysfile_parse_u64(buf, base, val) ? -EIO : 0;
}

#endif /* RL_SYSFILE_H */
