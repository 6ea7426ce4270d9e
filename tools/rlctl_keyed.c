// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_keyed.c - rlctl key: one key's state in a keyed limiter
 * (RL_IOC_GET_KEY through an fd attached to it), which reading does not
 * create:
 *
 *   rlctl key NAME KEY [--hex]
 *
 * KEY is taken as its bytes, or with --hex as hexadecimal digits, two per
 * byte (an IPv4 address 10.0.0.1 is 0a000001): 1 to RL_KEY_MAX bytes.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "libratelimit.h"
#include "rlctl.h"

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* KEY into @key (RL_KEY_MAX bytes), its length into @len: 0 or the exit. */
static int parse_key(const char *arg, bool hex, unsigned char *key,
		     size_t *len)
{
	size_t n = strlen(arg), i;
	int hi, lo;

	if (!hex) {
		if (!n || n > RL_KEY_MAX)
			return usage("invalid key '%s' (1 to %d bytes)", arg,
				     RL_KEY_MAX);
		memcpy(key, arg, n);
		*len = n;
		return 0;
	}
	if (!n || n % 2 || n / 2 > RL_KEY_MAX)
		return usage("invalid key '%s' (2 to %d hexadecimal digits, two a byte)",
			     arg, 2 * RL_KEY_MAX);
	for (i = 0; i < n / 2; i++) {
		hi = hex_digit(arg[2 * i]);
		lo = hex_digit(arg[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return usage("invalid key '%s' (not hexadecimal)", arg);
		key[i] = (unsigned char)(hi << 4 | lo);
	}
	*len = n / 2;
	return 0;
}

/* Time until @full_ns from @now, or 0 when it is past. */
static uint64_t full_in(uint64_t full_ns, uint64_t now)
{
	return full_ns > now ? full_ns - now : 0;
}

static void print_key(const char *name, const char *arg,
		      const struct rl_key_state *st, uint64_t burst)
{
	uint64_t in = full_in(st->full_ns, rl_now_ns());
	char b[32];

	if (json) {
		printf("{\"name\":");
		json_string(name);
		printf(",\"key\":");
		json_string(arg);
		printf(",\"available\":%llu,\"burst\":%llu",
		       (unsigned long long)st->available,
		       (unsigned long long)burst);
		printf(",\"full_ns\":%llu,\"full_in_ns\":%llu",
		       (unsigned long long)st->full_ns, (unsigned long long)in);
		printf(",\"waiters\":%llu,\"kept\":%s}\n",
		       (unsigned long long)st->waiters,
		       st->kept ? "true" : "false");
		return;
	}
	printf("%-14s %s\n", "name", name);
	printf("%-14s %s\n", "key", arg);
	printf("%-14s %llu of %llu\n", "available",
	       (unsigned long long)st->available, (unsigned long long)burst);
	if (st->full_ns && in)
		printf("%-14s in %s\n", "full", tool_fmt_ns(b, sizeof(b), in));
	else
		printf("%-14s now\n", "full");
	printf("%-14s %llu\n", "waiters", (unsigned long long)st->waiters);
	printf("%-14s %s\n", "kept", st->kept ? "yes" : "no (full, no state)");
}

/* Read key @key (@len bytes) of limiter @name and print it: the exit status. */
static int show_key(const char *name, const char *arg,
		    const unsigned char *key, size_t len)
{
	struct rl_key_state st;
	struct rl_config cfg;
	int fd, ret;

	ret = check_limiter(name);
	if (ret)
		return ret;
	fd = rl_open_named(name, 0, 0, NULL);
	if (fd < 0)
		return name_error(name, fd);
	ret = rl_get_key(fd, key, len, &st);
	if (!ret)
		ret = rl_get_config(fd, &cfg);
	rl_close(fd);
	if (ret == -EINVAL)
		return fail("'%s' is not a keyed limiter", name);
	if (ret == -ENOTTY)
		return fail("the loaded module has no keyed limiters");
	if (ret)
		return name_error(name, ret);
	print_key(name, arg, &st, cfg.burst);
	return 0;
}

int cmd_key(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "hex", no_argument, NULL, 'x' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned char key[RL_KEY_MAX];
	bool hex = false;
	size_t len = 0;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt != 'x')
			return tool_try_help(EXIT_USAGE);
		hex = true;
	}
	ret = check_operands("key", argc - optind, argv + optind, 2,
			     (const char *const[]){ "NAME", "KEY" });
	if (!ret)
		ret = check_name(argv[optind]);
	if (!ret)
		ret = parse_key(argv[optind + 1], hex, key, &len);
	if (ret)
		return ret;
	return show_key(argv[optind], argv[optind + 1], key, len);
}
