// SPDX-License-Identifier: GPL-2.0-only
/*
 * tools_usage_test.c - host test of the command lines of rlctl, rlpace,
 * rlpipe and rlrun: a usage error (an unknown option, a missing operand,
 * a bad value) prints one line saying what is wrong and "Try 'TOOL
 * --help' for more information." on stderr, nothing on stdout, and exits
 * with status 2 (EXIT_USAGE) in every tool, as their man pages say; -h
 * and --help print the whole usage on stdout and exit 0; --version prints
 * "TOOL VERSION" and exits 0, also run as a user runs build/tools/NAME,
 * without a library path. rlsyncd's, which needs libhiredis to build, are
 * tested by selftests/global/rlsyncd.sh (make check-global-redis).
 *
 * Every case is refused before the tool opens /dev/ratelimit or reads
 * sysfs, so no module is needed (RLCTL_SYSFS points nowhere, in case).
 * The tools are taken from ../tools beside this program's directory
 * (build/tools), or from RL_TOOLS_DIR.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#include "tool_run.h"

/*
 * One command line of @tool and what it must print: @msg, the whole
 * first line of stderr, or NULL for getopt's own message (its wording is
 * the C library's: only "TOOL: " at its start is checked).
 */
struct usage_case {
	const char *args[MAX_ARGS];
	const char *msg;
};

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* "a b c" of @args, for the log. */
static const char *args_str(const char *const *args, char *buf, size_t len)
{
	size_t used = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < MAX_ARGS && args[i] && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%s", i ? " " : "",
				 args[i]);
	return buf;
}

/*
 * Each case of @cases: exit @status, nothing on stdout, on stderr exactly
 * two lines, the error and the --help line.
 */
static void check_usage_errors(struct __test_metadata *_metadata,
			       const char *tool, int status,
			       const struct usage_case *cases, size_t n)
{
	char prefix[32], try_line[96], first[OUT_MAX], cmd[256];
	struct run *r = malloc(sizeof(*r));
	const char *nl;
	size_t i;
	int ret;

	ASSERT_NE(NULL, r);
	snprintf(prefix, sizeof(prefix), "%s: ", tool);
	snprintf(try_line, sizeof(try_line),
		 "Try '%s --help' for more information.\n", tool);
	for (i = 0; i < n; i++) {
		args_str(cases[i].args, cmd, sizeof(cmd));
		memset(r, 0, sizeof(*r));
		ret = run_tool(tool, cases[i].args, NULL, r);
		if (ret)
			TH_LOG("cannot run %s (make tools first)", tool);
		ASSERT_EQ(0, ret);
		if (r->status != status || r->out[0] ||
		    count_lines(r->err) != 2)
			TH_LOG("%s %s: status %d, stdout \"%s\", stderr \"%s\"",
			       tool, cmd, r->status, r->out, r->err);
		EXPECT_EQ(status, r->status);
		EXPECT_STREQ("", r->out);
		EXPECT_EQ(2, count_lines(r->err));
		nl = strchr(r->err, '\n');
		if (!nl)
			continue;
		snprintf(first, sizeof(first), "%.*s", (int)(nl - r->err),
			 r->err);
		/* getopt's own words: only the "TOOL: " at their start. */
		if (!cases[i].msg && strlen(first) > strlen(prefix))
			first[strlen(prefix)] = '\0';
		EXPECT_STREQ(cases[i].msg ?: prefix, first);
		EXPECT_STREQ(try_line, nl + 1);
	}
	free(r);
}

/* -h, --help (and @more, if not NULL): the usage on stdout, status 0. */
static void check_help(struct __test_metadata *_metadata, const char *tool,
		       const char *more)
{
	static const char *const opts[] = { "-h", "--help" };
	struct run *r = malloc(sizeof(*r));
	char start[32];
	size_t i;

	ASSERT_NE(NULL, r);
	snprintf(start, sizeof(start), "usage: %s ", tool);
	for (i = 0; i < ARRAY_SIZE(opts) + !!more; i++) {
		const char *args[MAX_ARGS] = {
			i < ARRAY_SIZE(opts) ? opts[i] : more
		};

		memset(r, 0, sizeof(*r));
		ASSERT_EQ(0, run_tool(tool, args, NULL, r));
		if (r->status || r->err[0])
			TH_LOG("%s %s: status %d, stderr \"%s\"", tool, args[0],
			       r->status, r->err);
		EXPECT_EQ(0, r->status);
		EXPECT_STREQ("", r->err);
		EXPECT_EQ(0, strncmp(r->out, start, strlen(start)));
		EXPECT_LT(5, count_lines(r->out));
	}
	free(r);
}

TEST(rlrun_usage_errors)
{
	static const struct usage_case cases[] = {
		{ { NULL }, "rlrun: missing -n NAME" },
		{ { "--", "true" }, "rlrun: missing -n NAME" },
		{ { "-n", "x" }, "rlrun: missing the command to run" },
		{ { "-n", "x", "--" }, "rlrun: missing the command to run" },
		{ { "-x" }, NULL },
		{ { "-n" }, NULL },
		{ { "--bogus" }, NULL },
		{ { "--help=1" }, NULL },
		{ { "--version=1" }, NULL },
		{ { "-n", "a/b", "--", "true" }, "rlrun: invalid name 'a/b'" },
		{ { "-n", "x", "-c", "0", "--", "true" },
		  "rlrun: invalid count '0'" },
		{ { "-n", "x", "-w", "soon", "--", "true" },
		  "rlrun: invalid timeout 'soon' (0 .. 1 day)" },
		{ { "-n", "x", "-C", "0", "--", "true" },
		  "rlrun: invalid concurrency '0'" },
		{ { "-n", "x", "-P", "top", "--", "true" },
		  "rlrun: invalid priority 'top' (low, mid, high, user)" },
		{ { "-n", "x", "-C", "2", "-c", "3", "--", "true" },
		  "rlrun: 3 permits exceed the concurrency 2" },
	};

	check_usage_errors(_metadata, "rlrun", 2, cases, ARRAY_SIZE(cases));
}

TEST(rlpipe_usage_errors)
{
	static const struct usage_case cases[] = {
		{ { NULL }, "rlpipe: missing -r RATESPEC or -n NAME" },
		{ { "-p" }, "rlpipe: missing -r RATESPEC or -n NAME" },
		{ { "-r", "1/s", "extra" }, "rlpipe: unexpected argument 'extra'" },
		{ { "-z" }, NULL },
		{ { "--version=1" }, NULL },
		{ { "-r" }, NULL },
		{ { "--bogus" }, NULL },
		{ { "-n", "a/b" }, "rlpipe: invalid name 'a/b'" },
		{ { "-r", "bogus" }, "rlpipe: invalid rate spec 'bogus'" },
		{ { "-r", "0/s" }, "rlpipe: rate 0 would never let a byte through" },
		{ { "-r", "1/s", "-b", "0" },
		  "rlpipe: invalid buffer size '0' (1 .. 64MiB)" },
	};

	check_usage_errors(_metadata, "rlpipe", 2, cases, ARRAY_SIZE(cases));
}

TEST(rlpace_usage_errors)
{
	static const struct usage_case cases[] = {
		{ { NULL }, "rlpace: missing -r RATESPEC or -N NAME" },
		{ { "-q" }, "rlpace: missing -r RATESPEC or -N NAME" },
		{ { "-r", "1/s", "extra" }, "rlpace: unexpected argument 'extra'" },
		{ { "-z" }, NULL },
		{ { "--version=1" }, NULL },
		{ { "-n" }, NULL },
		{ { "--bogus" }, NULL },
		{ { "-N", "a/b" }, "rlpace: invalid name 'a/b'" },
		{ { "-r", "bogus" },
		  "rlpace: invalid rate spec 'bogus': Invalid argument" },
		{ { "-r", "0/s" },
		  "rlpace: rate 0 pauses the limiter; nothing would be granted" },
		{ { "-r", "1/s", "-n", "0" }, "rlpace: invalid count '0'" },
		{ { "-r", "1/s", "-s", "0" }, "rlpace: invalid size '0'" },
		{ { "-r", "1/s", "-t", "0" },
		  "rlpace: invalid thread count '0' (1 .. 1024)" },
		{ { "-r", "1/s", "-P", "top" },
		  "rlpace: invalid priority 'top' (low, mid, high, user)" },
		{ { "-r", "1/s", "-W", "1001" },
		  "rlpace: invalid weight '1001' (1 .. 1000)" },
		{ { "-r", "1/s", "-n", "100M" },
		  "rlpace: too many acquires (100000000); use a larger -s" },
	};

	check_usage_errors(_metadata, "rlpace", 2, cases, ARRAY_SIZE(cases));
}

/* A key one byte longer than RL_KEY_MAX. */
#define KEY65 "0123456789012345678901234567890123456789012345678901234567890123X"

TEST(rlctl_usage_errors)
{
	static const struct usage_case cases[] = {
		{ { NULL }, "rlctl: missing command" },
		{ { "--json" }, "rlctl: missing command" },
		{ { "-x" }, "rlctl: unknown option '-x'" },
		{ { "--version=1" }, "rlctl: unknown option '--version=1'" },
		{ { "bogus" }, "rlctl: unknown command 'bogus'" },
		{ { "create" }, "rlctl: create: missing NAME" },
		{ { "create", "x" }, "rlctl: create: missing RATESPEC" },
		{ { "create", "x", "1/s", "y" },
		  "rlctl: create: unexpected argument 'y'" },
		{ { "create", "--nope", "x", "1/s" }, NULL },
		{ { "create", "x", "1/s", "--burst" }, NULL },
		{ { "create", "x", "1/s", "--persist=1" }, NULL },
		{ { "create", "x", "1/s", "--transient=1" }, NULL },
		{ { "create", "x", "1/s", "--transient", "extra" },
		  "rlctl: create: unexpected argument 'extra'" },
		{ { "create", "a/b", "1/s" }, "rlctl: invalid name 'a/b'" },
		{ { "create", "x", "bogus" }, "rlctl: invalid rate spec 'bogus'" },
		{ { "create", "x", "1/s", "--mode", "999" },
		  "rlctl: invalid mode '999'" },
		{ { "rm" }, "rlctl: rm: missing NAME" },
		{ { "rm", "a", "b" }, "rlctl: rm: unexpected argument 'b'" },
		{ { "rm", "a/b" }, "rlctl: invalid name 'a/b'" },
		{ { "set" }, "rlctl: set: missing NAME" },
		{ { "set", "x" }, "rlctl: set: missing KEY=VALUE" },
		{ { "set", "x", "foo=1" }, "rlctl: unknown key 'foo'" },
		{ { "set", "x", "rate" }, "rlctl: expected KEY=VALUE, not 'rate'" },
		{ { "set", "x", "unlimited=2" },
		  "rlctl: invalid unlimited '2' (0 or 1)" },
		{ { "show" }, "rlctl: show: missing NAME" },
		{ { "show", "a", "b" }, "rlctl: show: unexpected argument 'b'" },
		{ { "list", "x" }, "rlctl: list: unexpected argument 'x'" },
		{ { "ls", "x" }, "rlctl: list: unexpected argument 'x'" },
		{ { "watch" }, "rlctl: watch: missing NAME" },
		{ { "watch", "x", "y" }, "rlctl: watch: unexpected argument 'y'" },
		{ { "watch", "x", "-i", "0" },
		  "rlctl: invalid interval '0' (0.001 .. 86400 s)" },
		{ { "watch", "x", "-i" }, NULL },
		{ { "apply" }, "rlctl: apply: missing PATH" },
		{ { "apply", "--dry-run" }, "rlctl: apply: missing PATH" },
		{ { "apply", "--bogus", "x" }, NULL },
		{ { "export", "-o" }, NULL },
		{ { "export", "a/b" }, "rlctl: invalid name 'a/b'" },
		{ { "tree", "-i" }, "rlctl: tree: usage: rlctl tree [-i SECONDS]" },
		{ { "create", "x", "1/s", "--keys", "10" },
		  "rlctl: create: --keys needs --keyed" },
		{ { "create", "x", "1/s", "--keyed=1" }, NULL },
		{ { "key" }, "rlctl: key: missing NAME" },
		{ { "key", "x" }, "rlctl: key: missing KEY" },
		{ { "key", "x", "k", "y" }, "rlctl: key: unexpected argument 'y'" },
		{ { "key", "a/b", "k" }, "rlctl: invalid name 'a/b'" },
		{ { "key", "x", "--bogus", "k" }, NULL },
		{ { "key", "x", "" }, "rlctl: invalid key '' (1 to 64 bytes)" },
		{ { "key", "x", KEY65 }, "rlctl: invalid key '" KEY65 "' (1 to 64 bytes)" },
		{ { "key", "--hex", "x", "abc" },
		  "rlctl: invalid key 'abc' (2 to 128 hexadecimal digits, two a byte)" },
		{ { "key", "--hex", "x", "zz" },
		  "rlctl: invalid key 'zz' (not hexadecimal)" },
	};

	check_usage_errors(_metadata, "rlctl", 2, cases, ARRAY_SIZE(cases));
}

TEST(help_on_stdout)
{
	check_help(_metadata, "rlrun", NULL);
	check_help(_metadata, "rlpipe", NULL);
	check_help(_metadata, "rlpace", NULL);
	check_help(_metadata, "rlctl", "help");
}

/*
 * --version: "TOOL VERSION" on stdout, VERSION the Makefile's, status 0;
 * with @clean, without a library path (run_tool_env()).
 */
static void check_version(struct __test_metadata *_metadata, int clean)
{
	static const char *const tools[] = { "rlctl", "rlrun", "rlpipe",
					     "rlpace" };
	static const char *const args[MAX_ARGS] = { "--version" };
	struct run *r = malloc(sizeof(*r));
	char want[64];
	size_t i;

	ASSERT_NE(NULL, r);
	ASSERT_NE(0, strlen(RL_VERSION));
	for (i = 0; i < ARRAY_SIZE(tools); i++) {
		memset(r, 0, sizeof(*r));
		ASSERT_EQ(0, run_tool_env(tools[i], args, NULL, clean, r));
		snprintf(want, sizeof(want), "%s %s\n", tools[i], RL_VERSION);
		if (r->status || r->err[0] || strcmp(want, r->out))
			TH_LOG("%s --version: status %d, stdout \"%s\", stderr \"%s\"",
			       tools[i], r->status, r->out, r->err);
		EXPECT_EQ(0, r->status);
		EXPECT_STREQ(want, r->out);
		EXPECT_STREQ("", r->err);
	}
	free(r);
}

TEST(version_on_stdout)
{
	check_version(_metadata, 0);
}

/*
 * The tools run from the tree as make builds them, with no library path:
 * a shared build (make tools) finds build/lib/libratelimit.so.1 through
 * its rpath, $ORIGIN/../lib; a static one (the QEMU rig's) needs none.
 */
TEST(run_from_tree_without_library_path)
{
	check_version(_metadata, 1);
}

TEST_HARNESS_MAIN
