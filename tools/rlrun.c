// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlrun - run a command while holding permits of a named /dev/ratelimit
 * limiter, like flock(1) for a counting semaphore.
 *
 * rlrun attaches to the limiter, acquires the permits, then forks and
 * execs the command. The limiter fd stays open in rlrun, close-on-exec, so
 * the command never sees it; rlrun waits for the command and exits with
 * its status. The permits go back when rlrun closes the fd, also when it
 * is killed with SIGKILL: the kernel releases what a closed fd held.
 *
 * Exit status: the command's; 128 + N when a signal N killed it; 75
 * (EX_TEMPFAIL) when -w ran out; 2 (EXIT_USAGE, as every tool) for a bad
 * command line, before the command runs; 125 for other errors of rlrun
 * itself; 126 when the command cannot be executed, 127 when it is not
 * found.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libratelimit.h"

#include "tool.h"

TOOL_NAME("rlrun");

#define EXIT_TEMPFAIL	75	/* sysexits.h EX_TEMPFAIL */
#define EXIT_FAIL	125
#define EXIT_CANNOT_RUN	126
#define EXIT_NOT_FOUND	127

/* An error of rlrun, not of the command line: one line, status 125. */
#define fail(...)	tool_fail(EXIT_FAIL, __VA_ARGS__)

static pid_t child_pid;	/* of the command, for forward() */

static void print_usage(void)
{
	fprintf(stdout,
		"usage: rlrun -n NAME [-c COUNT] [-w TIMEOUT] [-C CONCURRENCY] [-P PRIORITY] [-v] -- CMD [ARG...]\n"
		"  -n NAME         named limiter to take the permits from\n"
		"  -c COUNT        permits to hold while CMD runs (default 1)\n"
		"  -w TIMEOUT      give up after TIMEOUT (seconds, or with a unit:\n"
		"                  ms, s, min, h) with exit status 75; 0 = do not wait\n"
		"  -C CONCURRENCY  create NAME if missing: a semaphore of CONCURRENCY\n"
		"                  permits (unlimited rate, mode 0644, not persistent)\n"
		"  -P PRIORITY     priority of the request: low, mid, high or user\n"
		"  -v              say on stderr when the permits are granted\n"
		"  -h, --help      show this help\n"
		"  --version       print the version\n"
		"Exit status: CMD's (128+N if killed by signal N), 75 on timeout,\n"
		"2 on usage errors (before CMD runs), 125 on other errors of rlrun,\n"
		"126/127 if CMD cannot be run / is not found.\n");
}

/* "1.5", "1.5s", "200ms", "2min", "1h" into ns; at most a day. */
static int parse_timeout(const char *arg, uint64_t *ns)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {
		{ "", 1e9 }, { "s", 1e9 }, { "ms", 1e6 }, { "us", 1e3 },
		{ "ns", 1 }, { "m", 60e9 }, { "min", 60e9 }, { "h", 3600e9 },
	};
	char *end;
	double v;
	size_t i;

	if (!(*arg >= '0' && *arg <= '9') && *arg != '.')
		return -EINVAL;
	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || !isfinite(v) || v < 0)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		v *= units[i].ns;
		if (v > 86400e9)
			return -ERANGE;
		*ns = (uint64_t)v;
		return 0;
	}
	return -EINVAL;
}

static int attach_limiter(const char *name, uint64_t concurrency)
{
	struct rl_config cfg = {
		.period_ns = NSEC_PER_SEC,
		.flags = RL_CONFIG_UNLIMITED,
		.concurrency = concurrency,
	};
	int fd, ret;

	/*
	 * A burst of the whole concurrency serves any request in one chunk:
	 * two requests holding part of their permits each must not wait for
	 * each other's rest.
	 */
	cfg.burst = concurrency;
	if (cfg.burst > RL_BURST_PERIOD_MAX / NSEC_PER_SEC)
		cfg.burst = RL_BURST_PERIOD_MAX / NSEC_PER_SEC;
	fd = rl_open(0);
	if (fd == -ENOENT || fd == -ENODEV || fd == -ENXIO)
		return -fail("cannot open %s: is the module loaded?",
			     RL_DEVICE_PATH);
	if (fd < 0)
		return -fail("cannot open %s: %s", RL_DEVICE_PATH,
			     strerror(-fd));
	ret = rl_attach(fd, name, concurrency ? RL_ATTACH_CREATE : 0,
			TOOL_DEFAULT_MODE,
			concurrency ? &cfg : NULL);
	if (!ret)
		return fd;
	rl_close(fd);
	switch (ret) {
	case -ENOENT:
		return -fail("no limiter named '%s' (-C creates it)", name);
	case -EACCES:
		return -fail("permission denied for '%s'", name);
	case -ENOTTY:
		return -fail("the loaded module has no named limiters");
	case -EINVAL:
		if (concurrency)
			return -fail("cannot create '%s' with concurrency %llu: invalid",
				     name, (unsigned long long)concurrency);
		break;
	}
	return -fail("cannot attach to '%s': %s", name, strerror(-ret));
}

/* Take the permits; 0 or an exit status. */
static int take_permits(int fd, const char *name, uint64_t count,
			uint64_t timeout, int prio, bool verbose)
{
	struct rl_acquire req = {
		.count = count,
		.deadline_ns = RL_DEADLINE_NONE,
		.priority = (uint32_t)prio,
	};
	uint64_t now = rl_now_ns();
	int ret;

	if (!timeout)
		req.flags = RL_ACQUIRE_NONBLOCK;
	else if (timeout != RL_DEADLINE_NONE)
		req.deadline_ns = now + timeout;
	do
		ret = rl_acquire_ex(fd, &req);
	while (ret == -EINTR);
	switch (ret) {
	case 0:
		if (verbose)
			fprintf(stderr, "rlrun: %llu of '%s' granted after %.3f ms\n",
				(unsigned long long)count, name,
				(rl_now_ns() - now) / 1e6);
		return 0;
	case -ETIMEDOUT:
	case -EAGAIN:
		if (verbose)
			fprintf(stderr, "rlrun: timed out waiting for %llu of '%s'\n",
				(unsigned long long)count, name);
		return EXIT_TEMPFAIL;
	case -EINVAL:
		return fail("cannot take %llu of '%s': more than it can ever grant%s",
			    (unsigned long long)count, name,
			    timeout ? "" : " at once");
	default:
		return fail("cannot take %llu of '%s': %s",
			    (unsigned long long)count, name, strerror(-ret));
	}
}

/* A SIGTERM or SIGHUP for rlrun goes to the command; rlrun keeps holding. */
static void forward(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

/*
 * Run @argv and wait for it. The command gets the signal dispositions
 * rlrun was started with (an ignored SIGINT of a background job stays
 * ignored).
 */
static int run_command(char **argv)
{
	static const int sigs[] = { SIGTERM, SIGHUP, SIGINT, SIGQUIT };
	struct sigaction fwd = { .sa_handler = forward };
	struct sigaction ign = { .sa_handler = SIG_IGN };
	struct sigaction saved[ARRAY_SIZE(sigs)];
	sigset_t block, old;
	int status, i, err;
	pid_t pid;

	sigemptyset(&block);
	for (i = 0; i < (int)ARRAY_SIZE(sigs); i++) {
		sigaction(sigs[i], NULL, &saved[i]);
		if (saved[i].sa_handler == SIG_IGN)
			continue;
		/*
		 * SIGTERM and SIGHUP go on to the command; like system(3),
		 * rlrun ignores Ctrl-C and Ctrl-\, which reach the command
		 * from the terminal anyway.
		 */
		sigaction(sigs[i], i < 2 ? &fwd : &ign, NULL);
		sigaddset(&block, sigs[i]);
	}
	sigprocmask(SIG_BLOCK, &block, &old);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err = errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		return fail("cannot fork: %s", strerror(err));
	}
	if (!pid) {
		for (i = 0; i < (int)ARRAY_SIZE(sigs); i++)
			sigaction(sigs[i], &saved[i], NULL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(argv[0], argv);
		err = errno;
		fprintf(stderr, "rlrun: cannot run '%s': %s\n", argv[0],
			strerror(err));
		_exit(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
	}
	child_pid = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return fail("cannot wait for '%s': %s", argv[0],
				    strerror(errno));
	}
	child_pid = 0;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* The command line before CMD. */
struct args {
	const char *name;	/* -n */
	uint64_t count;		/* -c */
	uint64_t concurrency;	/* -C, 0 for none */
	uint64_t timeout;	/* -w, RL_DEADLINE_NONE for none */
	int prio;		/* -P */
	bool verbose;		/* -v */
};

/*
 * One option @opt (with optarg) into @a: -1 to go on, or the exit
 * status.
 */
static int parse_option(int opt, struct args *a)
{
	switch (opt) {
	case 'n':
		if (!rl_name_valid(optarg))
			return tool_usage(EXIT_USAGE, "invalid name '%s'", optarg);
		a->name = optarg;
		return -1;
	case 'c':
		if (rl_parse_amount(optarg, &a->count) || !a->count)
			return tool_usage(EXIT_USAGE, "invalid count '%s'", optarg);
		return -1;
	case 'w':
		if (parse_timeout(optarg, &a->timeout))
			return tool_usage(EXIT_USAGE,
					  "invalid timeout '%s' (0 .. 1 day)",
					  optarg);
		return -1;
	case 'C':
		if (rl_parse_amount(optarg, &a->concurrency) || !a->concurrency)
			return tool_usage(EXIT_USAGE, "invalid concurrency '%s'",
					  optarg);
		return -1;
	case 'P':
		a->prio = rl_parse_priority(optarg);
		if (a->prio < 0)
			return tool_usage(EXIT_USAGE,
					  "invalid priority '%s' (low, mid, high, user)",
					  optarg);
		return -1;
	case 'v':
		a->verbose = true;
		return -1;
	default:	/* getopt said what */
		return tool_try_help(EXIT_USAGE);
	}
}

/* The command line into @a: -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		TOOL_HELP_OPTION,
		TOOL_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	int opt, ret;

	/* "+": options end at the command, which has its own. */
	while ((opt = getopt_long(argc, argv, "+n:c:w:C:P:vh", opts,
				  NULL)) != -1) {
		ret = tool_std_option(opt, print_usage);
		if (ret < 0)
			ret = parse_option(opt, a);
		if (ret >= 0)
			return ret;
	}
	if (!a->name)
		return tool_usage(EXIT_USAGE, "missing -n NAME");
	if (optind >= argc)
		return tool_usage(EXIT_USAGE, "missing the command to run");
	if (a->concurrency && a->count > a->concurrency)
		return tool_usage(EXIT_USAGE,
				  "%llu permits exceed the concurrency %llu",
				  (unsigned long long)a->count,
				  (unsigned long long)a->concurrency);
	return -1;
}

int main(int argc, char **argv)
{
	struct args a = {
		.count = 1,
		.timeout = RL_DEADLINE_NONE,
		.prio = RL_PRIO_DEFAULT,
	};
	int fd, ret;

	argv[0] = (char *)tool_name;	/* for getopt's messages */
	ret = parse_args(argc, argv, &a);
	if (ret >= 0)
		return ret;
	fd = attach_limiter(a.name, a.concurrency);
	if (fd < 0)
		return -fd;
	ret = take_permits(fd, a.name, a.count, a.timeout, a.prio, a.verbose);
	if (ret)
		return ret;
	ret = run_command(argv + optind);
	/* Closing the fd gives the permits back (exit would too). */
	rl_close(fd);
	return ret;
}
