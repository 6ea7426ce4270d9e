/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tool_run.h - run one of the tools (build/tools/NAME) from a host unit
 * test and collect its exit status, stdout and stderr. Shared by
 * tools_usage_test.c and rlctl_output_test.c (each one program).
 *
 * The tools are taken from ../tools beside the test program's directory
 * (build/tools), or from RL_TOOLS_DIR.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RL_TOOL_RUN_H
#define RL_TOOL_RUN_H

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ARGS	10
#define OUT_MAX		32768
#define PATH_LEN	4096

struct run {
	int status;		/* exit status, or -1 */
	char out[OUT_MAX];	/* stdout */
	char err[OUT_MAX];	/* stderr */
};

static const char *tools_dir(char *buf, size_t len)
{
	const char *env = getenv("RL_TOOLS_DIR");
	char self[PATH_LEN];
	ssize_t n;

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return buf;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return NULL;
	self[n] = '\0';
	snprintf(buf, len, "%s/../tools", dirname(self));
	return buf;
}

/* All of @fd into @buf, NUL-terminated; 0 or -1. */
static int slurp(int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len - 1) {
		n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (!n)
			break;
		got += n;
	}
	buf[got] = '\0';
	return 0;
}

/*
 * Run @tool with @args, stdin from /dev/null, in the C locale, with
 * RLCTL_SYSFS set to @sysfs (to a path that does not exist if NULL) and
 * the tree's library (../lib beside the tools) first on the library path,
 * for tools linked against libratelimit.so.1 (TOOLS_LINK=shared). With
 * @clean, in an environment of LC_ALL=C and RLCTL_SYSFS alone: no
 * library path, as a user runs build/tools/NAME (the Makefile links an
 * rpath of $ORIGIN/../lib). The output fits the pipes (a few lines), so
 * it is read once the tool ended.
 */
static int run_tool_env(const char *tool, const char *const *args,
			const char *sysfs, int clean, struct run *r)
{
	char dir[PATH_LEN], path[PATH_LEN + 64], lib[PATH_LEN + 64];
	const char *argv[MAX_ARGS + 2];
	int out[2], err[2], i, st;
	pid_t pid;

	if (!tools_dir(dir, sizeof(dir)))
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, tool);
	snprintf(lib, sizeof(lib), "%s/../lib", dir);
	if (access(path, X_OK))
		return -1;
	argv[0] = tool;
	for (i = 0; i < MAX_ARGS && args[i]; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		int null = open("/dev/null", O_RDONLY);

		if (null < 0 || dup2(null, 0) < 0 || dup2(out[1], 1) < 0 ||
		    dup2(err[1], 2) < 0)
			_exit(99);
		if (clean && clearenv())
			_exit(97);
		setenv("LC_ALL", "C", 1);
		setenv("RLCTL_SYSFS", sysfs ?: "/nonexistent/rl-tools-test", 1);
		if (!clean)
			setenv("LD_LIBRARY_PATH", lib, 1);
		execv(path, (char *const *)argv);
		_exit(98);
	}
	close(out[1]);
	close(err[1]);
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	if (slurp(out[0], r->out, sizeof(r->out)) ||
	    slurp(err[0], r->err, sizeof(r->err)))
		return -1;
	close(out[0]);
	close(err[0]);
	return 0;
}

static int run_tool(const char *tool, const char *const *args,
		    const char *sysfs, struct run *r)
{
	return run_tool_env(tool, args, sysfs, 0, r);
}

#endif /* RL_TOOL_RUN_H */
