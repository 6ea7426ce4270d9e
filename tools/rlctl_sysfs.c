// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_sysfs.c - the limiters' files under /sys/kernel/ratelimit (or
 * RLCTL_SYSFS): reading, writing, and what they say together. A
 * limiter's directory has five files: stat and config, of lines
 * "KEY VALUE" (config: the tunables, weight and parent), and children,
 * client_list and wait_histogram; a keyed limiter's has a sixth, keys,
 * of lines "KEY VALUE" too (the counts of its keys).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libratelimit.h"
#include "rlctl.h"
#include "sysfile.h"

const char *sysfs_root = SYSFS_ROOT;
const char *sysfs_base = SYSFS_ROOT;

#define ATTR(x, f)	{ #x, offsetof(struct info, x), f }
/* The files after the tunables. */
static const struct attr attrs[] = {
	ATTR(owner, 0), ATTR(group, 0), ATTR(mode, 0), ATTR(persistent, 0),
	ATTR(clients, A_LIST), ATTR(granted, 0), ATTR(requests, 0),
	ATTR(immediate, 0), ATTR(waited, 0), ATTR(wait_ns_total, 0),
	ATTR(wait_ns_max, 0), ATTR(timeouts, 0), ATTR(interrupted, 0),
	ATTR(rejected, 0), ATTR(waiters, A_LIST), ATTR(available, 0),
	ATTR(held, A_LIST | A_OPT), ATTR(backlog_tokens, A_OPT),
	ATTR(refunded, A_OPT),
};

size_t nattrs(void)
{
	return rlctl_nkeys + ARRAY_SIZE(attrs);
}

struct attr attr_at(size_t i)
{
	if (i >= rlctl_nkeys)
		return attrs[i - rlctl_nkeys];
	return (struct attr){
		.key = rlctl_keys[i].name,
		.off = offsetof(struct info, key) + i * sizeof(uint64_t),
		.flags = rlctl_keys[i].attr,
	};
}

static int attr_path(char *buf, size_t len, const char *name, const char *key)
{
	int n;

	if (key)
		n = snprintf(buf, len, "%s/%s/%s", sysfs_root, name, key);
	else
		n = snprintf(buf, len, "%s/%s", sysfs_root, name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Is @key a line of config (else of stat, or a file)? */
static bool config_key(const char *key)
{
	size_t i;

	for (i = 0; i < rlctl_nkeys; i++)
		if (!strcmp(key, rlctl_keys[i].name))
			return true;
	return !strcmp(key, "weight") || !strcmp(key, "parent");
}

static bool file_key(const char *key)
{
	static const char *const files[] = {
		"stat", "config", "children", "client_list", "wait_histogram",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(files); i++)
		if (!strcmp(key, files[i]))
			return true;
	return false;
}

/* The value of @key in file stat or config of @name into @buf; 0 or -errno. */
static int read_key(const char *name, const char *key, char *buf, size_t len)
{
	char path[4096], *text;
	int ret;

	ret = attr_path(path, sizeof(path), name,
			config_key(key) ? "config" : "stat");
	if (ret)
		return ret;
	text = sysfile_read_all(path, &ret);
	if (!text)
		return ret;
	ret = sysfile_key(text, key, buf, len);
	free(text);
	/* A root's config has no parent line. */
	if (ret == -ENOENT && !strcmp(key, "parent")) {
		buf[0] = '\0';
		ret = 0;
	}
	return ret;
}

/* The line "@key @val" to config: the tunables, weight. */
int write_attr(const char *name, const char *key, uint64_t val)
{
	char path[4096], text[96];
	ssize_t n;
	int fd, ret, len;

	ret = attr_path(path, sizeof(path), name, "config");
	if (ret)
		return ret;
	len = snprintf(text, sizeof(text), "%s %llu\n", key,
		       (unsigned long long)val);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	ret = n < 0 ? -errno : n == len ? 0 : -EIO;
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

/* The sysfs root and the limiter's directory exist: 0 or an exit code. */
int check_limiter(const char *name)
{
	char path[4096];
	struct stat sb;

	if (stat(sysfs_base, &sb))
		return fail("module not loaded (no %s)", sysfs_base);
	if (attr_path(path, sizeof(path), name, NULL))
		return name_error(name, -ENAMETOOLONG);
	if (stat(path, &sb) || !S_ISDIR(sb.st_mode))
		return name_error(name, -ENOENT);
	/* A module of before stat and config has a file per value. */
	if (attr_path(path, sizeof(path), name, "stat") || !stat(path, &sb) ||
	    errno != ENOENT)
		return 0;
	if (attr_path(path, sizeof(path), name, NULL) || stat(path, &sb))
		return name_error(name, -ENOENT);
	return fail("%s/%s has no file stat: the loaded module is older than rlctl (reload it)",
		    sysfs_root, name);
}

/* Every attribute of @name, from stat and config; -ENOENT when it disappeared meanwhile. */
int load_info(const char *name, struct info *info)
{
	static const char *const files[] = { "stat", "config" };
	char path[4096], *text[2] = { NULL, NULL }, buf[64];
	struct attr a;
	size_t i;
	int ret = 0;

	memset(info, 0, sizeof(*info));
	for (i = 0; i < 2 && !ret; i++) {
		ret = attr_path(path, sizeof(path), name, files[i]);
		if (!ret)
			text[i] = sysfile_read_all(path, &ret);
	}
	for (i = 0; i < nattrs() && !ret; i++) {
		a = attr_at(i);
		ret = sysfile_key(text[config_key(a.key)], a.key, buf,
				  sizeof(buf));
		if (!ret && sysfile_parse_u64(buf, strcmp(a.key, "mode") ? 10 : 8,
					      FIELD(info, &a)))
			ret = -EIO;
		if (ret == -ENOENT && (a.flags & A_OPT)) {
			info->missing |= 1ULL << i;
			ret = 0;
		}
	}
	free(text[0]);
	free(text[1]);
	return ret;
}

int info_error(const char *name, int err)
{
	if (err == -ENOENT)
		return name_error(name, err);
	return fail("cannot read the attributes of '%s': %s", name,
		    strerror(-err));
}

/* check_limiter(), then load_info() into @info: 0 or the exit status. */
int limiter_info(const char *name, struct info *info)
{
	int ret;

	ret = check_limiter(name);
	if (ret)
		return ret;
	ret = load_info(name, info);
	return ret ? info_error(name, ret) : 0;
}

bool info_keyed(const struct info *info)
{
	return !(info->missing & (1ULL << RLK_KEYED)) &&
	       info->key[RLK_KEYED];
}

int load_keys(const char *name, struct keys_info *k)
{
	static const struct {
		const char *key;
		size_t off;
	} lines[] = {
		{ "keys", offsetof(struct keys_info, keys) },
		{ "keys_max", offsetof(struct keys_info, keys_max) },
		{ "created", offsetof(struct keys_info, created) },
		{ "evicted", offsetof(struct keys_info, evicted) },
		{ "refused", offsetof(struct keys_info, refused) },
		{ "waiters", offsetof(struct keys_info, waiters) },
	};
	char path[4096], buf[64], *text;
	size_t i;
	int ret;

	memset(k, 0, sizeof(*k));
	ret = attr_path(path, sizeof(path), name, "keys");
	if (ret)
		return ret;
	text = sysfile_read_all(path, &ret);
	if (!text)
		return ret;
	for (i = 0; i < ARRAY_SIZE(lines) && !ret; i++) {
		ret = sysfile_key(text, lines[i].key, buf, sizeof(buf));
		if (!ret && sysfile_parse_u64(buf, 10, (uint64_t *)((char *)k +
					      lines[i].off)))
			ret = -EIO;
	}
	free(text);
	return ret;
}

void info_config(const struct info *info, struct rl_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->rate = info->key[RLK_RATE];
	cfg->period_ns = info->key[RLK_PERIOD_NS];
	cfg->burst = info->key[RLK_BURST];
	cfg->flags = info->key[RLK_UNLIMITED] ? RL_CONFIG_UNLIMITED : 0;
}

/* Tokens per second; negative when unlimited. */
double target_rate(const struct info *info)
{
	uint64_t period = info->key[RLK_PERIOD_NS];

	if (info->key[RLK_UNLIMITED])
		return -1;
	return period ? info->key[RLK_RATE] * 1e9 / period : 0;
}

/*
 * A file of @name as text, or the value of a key of stat or config with
 * a newline; NULL (and *err) when unreadable.
 */
char *read_text(const char *name, const char *key, int *err)
{
	char path[4096], buf[256], *text;

	if (!file_key(key)) {
		*err = read_key(name, key, buf, sizeof(buf));
		if (*err)
			return NULL;
		text = malloc(strlen(buf) + 2);
		if (!text) {
			*err = -ENOMEM;
			return NULL;
		}
		sprintf(text, "%s\n", buf);
		return text;
	}
	*err = attr_path(path, sizeof(path), name, key);
	return *err ? NULL : sysfile_read_all(path, err);
}

void parse_hist(char *text, struct hist *h)
{
	char *line, *save = NULL, *sp;
	uint64_t f, c;

	memset(h, 0, sizeof(*h));
	for (line = strtok_r(text, "\n", &save); line && h->n < HIST_MAX;
	     line = strtok_r(NULL, "\n", &save)) {
		sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		if (sysfile_parse_u64(line, 10, &f) || sysfile_parse_u64(sp + 1, 10, &c))
			continue;
		h->floor[h->n] = f;
		h->count[h->n++] = c;
		h->total += c;
	}
}

int is_limiter_dir(const struct dirent *d)
{
	return rl_name_valid(d->d_name) &&
	       (d->d_type == DT_DIR || d->d_type == DT_UNKNOWN);
}

/* A limiter's directory, or in a container a link to a host's shared with it. */
static int is_limiter(const struct dirent *d)
{
	return is_limiter_dir(d) || (rl_name_valid(d->d_name) && d->d_type == DT_LNK);
}

int scan_limiters(struct dirent ***ents)
{
	int n = scandir(sysfs_root, ents, is_limiter, alphasort);
	struct stat sb;

	/* A container's directory is there while it has a name. */
	if (n < 0 && errno == ENOENT && sysfs_root != sysfs_base && !stat(sysfs_base, &sb)) {
		*ents = NULL;
		return 0;
	}
	if (n < 0 && errno == ENOENT)
		fail("module not loaded (no %s)", sysfs_base);
	else if (n < 0)
		fail("cannot read %s: %s", sysfs_root, strerror(errno));
	return n < 0 ? -1 : n;
}
