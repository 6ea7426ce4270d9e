/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Running /tools/rlctl from a selftest in the guest: its exit status and
 * what it wrote, kept in a scratch directory, and its log on failure.
 * Include after kselftest_harness.h.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RL_SELFTEST_RLCTL_H
#define RL_SELFTEST_RLCTL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "ratelimit_util.h"

#define RLCTL		"/tools/rlctl"
#define OUT_MAX		8192

/* What a run of rlctl printed, and its exit status. */
struct run {
	int status;
	char out[OUT_MAX];
	char err[OUT_MAX];
};

/* A scratch directory for the files of a test; "" if none was made. */
static inline void make_dir(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/rlt.XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0755))
		dir[0] = '\0';
}

static inline void remove_dir(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (dir[0] && system(cmd))
		fprintf(stderr, "cannot remove %s\n", dir);
}

static inline void slurp(const char *path, char *buf)
{
	if (file_read(path, buf, OUT_MAX))
		snprintf(buf, OUT_MAX, "(cannot read %s)", path);
	else if (buf[0])
		strcat(buf, "\n");	/* file_read() took the last one */
}

/*
 * Run the program @path with @argv, as @cred (NULL: as we are), its
 * output kept in @dir. -1 if it did not run.
 */
static inline int run_prog(struct run *r, const struct ks_cred *cred,
			   const char *dir, const char *path,
			   const char *const *argv)
{
	char out[256], err[256];
	int status;
	pid_t pid;

	snprintf(out, sizeof(out), "%s/stdout", dir);
	snprintf(err, sizeof(err), "%s/stderr", dir);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		if (!freopen(out, "w", stdout) || !freopen(err, "w", stderr) ||
		    (cred && ks_become(cred)))
			_exit(126);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	r->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	slurp(out, r->out);
	slurp(err, r->err);
	return 0;
}

/*
 * Run /tools/rlctl with the NULL-terminated arguments after @dir, as
 * @cred (NULL: as we are), its output kept in @dir. -1 if it did not run.
 */
static inline int rlctl(struct run *r, const struct ks_cred *cred,
			const char *dir, ...)
{
	const char *argv[16];
	int n = 0;
	va_list ap;

	argv[n++] = "rlctl";
	va_start(ap, dir);
	while (n < 15 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	return run_prog(r, cred, dir, RLCTL, argv);
}

/* Print what rlctl said, for the log of a failed test. */
static inline void show(struct __test_metadata *_metadata,
			const struct run *r)
{
	TH_LOG("status %d\nstdout:\n%sstderr:\n%s", r->status, r->out,
	       r->err);
}

#endif /* RL_SELFTEST_RLCTL_H */
