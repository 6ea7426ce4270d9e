/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tool.h - the error messages of the tools, shared by rlctl, rlpace,
 * rlpipe and rlrun (each one .c file, built on its own).
 *
 * An error is one line on stderr, "PROG: what went wrong". An error in
 * the command line adds a second line, "Try 'PROG --help' for more
 * information.", rather than the whole usage, which only -h and --help
 * print (on stdout). getopt() and getopt_long() print their own one-line
 * errors under argv[0]: a tool sets argv[0] to PROG first, so that they
 * name it the same way whatever path ran it.
 *
 * --version prints "PROG VERSION" on stdout (tool_version()); VERSION is
 * the project's, RL_VERSION, which the Makefile defines.
 *
 * A tool defines PROG, its name as a string literal, before including
 * this header.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RL_TOOL_H
#define RL_TOOL_H

#include <stdarg.h>
#include <stdio.h>

#ifndef PROG
#error "tool.h: define PROG, the name of the tool, first"
#endif
#ifndef RL_VERSION
#error "tool.h: build with -DRL_VERSION='\"VERSION\"' (the Makefile does)"
#endif

/* "PROG: " @fmt "\n" on stderr. */
static inline void tool_vmsg(const char *fmt, va_list ap)
{
	fputs(PROG ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/* The line after a usage error's own (the tool's or getopt's): @status. */
static inline int tool_try_help(int status)
{
	fputs("Try '" PROG " --help' for more information.\n", stderr);
	return status;
}

/* A usage error: its line and the --help line; returns @status. */
static inline int __attribute__((format(printf, 2, 3)))
tool_usage(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tool_vmsg(fmt, ap);
	va_end(ap);
	return tool_try_help(status);
}

/* getopt_long()'s value for --version, which has no short form. */
#define TOOL_OPT_VERSION	0x100
#define TOOL_VERSION_OPTION \
	{ "version", no_argument, NULL, TOOL_OPT_VERSION }

/* --version: "PROG VERSION" on stdout; the exit status, 0. */
static inline int tool_version(void)
{
	fputs(PROG " " RL_VERSION "\n", stdout);
	return 0;
}

#endif /* RL_TOOL_H */
