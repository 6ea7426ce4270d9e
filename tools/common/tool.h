/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tool.h - what the tools share (tools/common/tool.c, linked into each
 * of rlctl, rlpace, rlpipe, rlrun and rlbench): their error messages,
 * --version, and the formats and tables more than one of them prints.
 *
 * An error is one line on stderr, "PROG: what went wrong". An error in
 * the command line adds a second line, "Try 'PROG --help' for more
 * information.", rather than the whole usage, which only -h and --help
 * print (on stdout). getopt() and getopt_long() print their own one-line
 * errors under argv[0]: a tool sets argv[0] to tool_name first, so that
 * they name it the same way whatever path ran it.
 *
 * --version prints "PROG VERSION" on stdout (tool_version()); VERSION is
 * the project's, RL_VERSION, which the Makefile defines.
 *
 * Each tool defines tool_name, its name, once (TOOL_NAME()).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RL_TOOL_H
#define RL_TOOL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define NSEC_PER_SEC	1000000000ULL

/*
 * The exit status of a bad command line (an unknown option, a missing
 * operand, a bad value), the same in every tool: rlctl, rlpace, rlpipe,
 * rlrun and rlsyncd.
 */
#define EXIT_USAGE	2

/*
 * The permission bits of a named limiter that a tool creates unless told
 * otherwise (ratelimit(4)): everyone may attach and acquire, only the
 * owner (and root) reconfigure. rlctl create, ratelimit.d files, rlpace,
 * rlpipe and rlrun; the Python package has the same default.
 */
#define TOOL_DEFAULT_MODE	0644

/* The tool's name, in its messages: TOOL_NAME("rlctl"); in its main file. */
extern const char tool_name[];
#define TOOL_NAME(name)	const char tool_name[] = name

/* "PROG: " @fmt "\n" on stderr. */
void tool_vmsg(const char *fmt, va_list ap);

/* An error other than of the command line: its line; returns @status. */
int __attribute__((format(printf, 2, 3)))
tool_fail(int status, const char *fmt, ...);

/* The line after a usage error's own (the tool's or getopt's): @status. */
int tool_try_help(int status);

/* A usage error: its line and the --help line; returns @status. */
int __attribute__((format(printf, 2, 3)))
tool_usage(int status, const char *fmt, ...);

/* getopt_long()'s value for --version, which has no short form. */
#define TOOL_OPT_VERSION	0x100
#define TOOL_VERSION_OPTION \
	{ "version", no_argument, NULL, TOOL_OPT_VERSION }

/* --version: "PROG VERSION" on stdout; the exit status, 0. */
int tool_version(void);

/*
 * -h and --help (@print_usage prints the usage on stdout) or --version, as
 * getopt_long() returned it in @opt: the exit status, 0; -1 for any other
 * option. A tool's options: { TOOL_HELP_OPTION, TOOL_VERSION_OPTION, ... }.
 */
int tool_std_option(int opt, void (*print_usage)(void));
#define TOOL_HELP_OPTION	{ "help", no_argument, NULL, 'h' }

/* Human duration into @buf: "850 ns", "12.3 us", "4.56 ms", "2.001 s". */
const char *tool_fmt_ns(char *buf, size_t len, double ns);

/*
 * The name of priority @prio (RL_PRIO_LOW .. RL_PRIO_USER: "low", "mid",
 * "high", "user"); @unset for 0, the priority of an fd that set none;
 * "?" for any other.
 */
const char *tool_prio_name(uint64_t prio, const char *unset);

/* qsort() order of uint64_t. */
int tool_cmp_u64(const void *a, const void *b);

#endif /* RL_TOOL_H */
