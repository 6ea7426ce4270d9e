// SPDX-License-Identifier: GPL-2.0-only
/*
 * tool.c - what the tools share: messages, --version, formats (tool.h).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <stdarg.h>
#include <stdio.h>

#include "libratelimit.h"
#include "tool.h"

#ifndef RL_VERSION
#error "tool.c: build with -DRL_VERSION='\"VERSION\"' (the Makefile does)"
#endif

void tool_vmsg(const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", tool_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int tool_fail(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tool_vmsg(fmt, ap);
	va_end(ap);
	return status;
}

int tool_try_help(int status)
{
	fprintf(stderr, "Try '%s --help' for more information.\n", tool_name);
	return status;
}

int tool_usage(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tool_vmsg(fmt, ap);
	va_end(ap);
	return tool_try_help(status);
}

int tool_version(void)
{
	printf("%s %s\n", tool_name, RL_VERSION);
	return 0;
}

int tool_std_option(int opt, void (*print_usage)(void))
{
	if (opt == 'h') {
		print_usage();
		return 0;
	}
	if (opt == TOOL_OPT_VERSION)
		return tool_version();
	return -1;
}

const char *tool_fmt_ns(char *buf, size_t len, double ns)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.3f s", ns / 1e9);
	return buf;
}

const char *tool_prio_name(uint64_t prio, const char *unset)
{
	static const char *const names[] = {
		[RL_PRIO_LOW] = "low", [RL_PRIO_MID] = "mid",
		[RL_PRIO_HIGH] = "high", [RL_PRIO_USER] = "user",
	};

	if (!prio)
		return unset;
	return prio < ARRAY_SIZE(names) && names[prio] ? names[prio] : "?";
}

int tool_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}
