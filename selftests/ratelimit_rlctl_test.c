// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of rlctl (/tools/rlctl in the guest) against the module:
 * create, set, show, list, watch and rm do what they say to the limiter
 * (checked in sysfs and through an fd), exit 0, 1 (error) or 2 (usage)
 * with a one-line error on stderr and nothing changed on failure. create
 * makes a persistent limiter, --transient one gone as rlctl exits; every
 * tool that creates a limiter (rlctl create and apply, rlpace, rlpipe,
 * rlrun) gives it mode 0644 by default.
 *
 * A keyed limiter: create --keyed, show and export with the counts of its
 * keys, key with one key's state, set and apply of keyed and keys.
 *
 * The --json and export outputs are also printed as "@@rl json|prom TAG
 * HEX" lines, which the host's runner (selftests/vm/run.sh) decodes and
 * parses with real parsers (output_check.py); here they are checked for
 * what must be in them.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "libratelimit.h"
#include "ratelimit_rlctl.h"

static const struct ks_cred other = { 4244, 4244, 0, { 0 } };

FIXTURE(rlctl) {
	char dir[64];
	char name[RL_NAME_MAX];
};

FIXTURE_SETUP(rlctl)
{
	if (access(RLCTL, X_OK))
		SKIP(return, "no " RLCTL);
	make_dir(self->dir, sizeof(self->dir));
	ASSERT_NE(0, self->dir[0]);
	snprintf(self->name, sizeof(self->name), "rlctl-%d", getpid());
}

FIXTURE_TEARDOWN(rlctl)
{
	ks_unl_name(self->name);
	remove_dir(self->dir);
}

/* Count the lines of @s. */
static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/*
 * An error: exit @status, one line on stderr starting "rlctl: " and naming
 * @what (a usage error adds the line that points to --help), no stdout.
 */
static void expect_error(struct __test_metadata *_metadata,
			 const struct run *r, int status, const char *what)
{
	int ok = r->status == status && !strncmp(r->err, "rlctl: ", 7) &&
		 strstr(r->err, what) &&
		 lines(r->err) == (status == 2 ? 2 : 1) && !r->out[0];

	EXPECT_TRUE(ok) show(_metadata, r);
}

/* Hand @r's stdout to the host runner's @kind parser, tagged @tag. */
static void host_parse(const char *kind, const char *tag, const struct run *r)
{
	const unsigned char *c;

	printf("@@rl %s %s ", kind, tag);
	for (c = (const unsigned char *)r->out; *c; c++)
		printf("%02x", *c);
	printf("\n");
	fflush(stdout);
}

static int create(struct run *r, const char *dir, const char *name)
{
	return rlctl(r, NULL, dir, "create", name, "200/s", "--burst", "10",
		     "--mode", "0640", "--persist", "--concurrency", "3",
		     NULL);
}

TEST_F(rlctl, create_show_list_rm)
{
	struct run r;

	ASSERT_EQ(0, create(&r, self->dir, self->name));
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ("", r.err);
	EXPECT_EQ(200, sysfs_u64(self->name, "rate"));
	EXPECT_EQ(NS_PER_SEC, sysfs_u64(self->name, "period_ns"));
	EXPECT_EQ(10, sysfs_u64(self->name, "burst"));
	EXPECT_EQ(3, sysfs_u64(self->name, "concurrency"));
	EXPECT_EQ(1, sysfs_u64(self->name, "persistent"));

	/* Creating it again fails and changes nothing. */
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "create", self->name, "5/s",
			   "--persist", NULL));
	expect_error(_metadata, &r, 1, self->name);
	EXPECT_EQ(200, sysfs_u64(self->name, "rate"));

	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "show", self->name, NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_NE(NULL, strstr(r.out, self->name));
	EXPECT_NE(NULL, strstr(r.out, "200"));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "list", NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_NE(NULL, strstr(r.out, self->name));

	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "rm", self->name, NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_EQ(0, sysfs_exists(self->name));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "rm", self->name, NULL));
	expect_error(_metadata, &r, 1, self->name);
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "show", self->name, NULL));
	expect_error(_metadata, &r, 1, self->name);
}

TEST_F(rlctl, set_changes_only_what_it_names)
{
	struct rl_config c;
	struct run r;
	int fd;

	ASSERT_EQ(0, create(&r, self->dir, self->name));
	ASSERT_EQ(0, r.status);
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "set", self->name,
			   "rate=50/s", "burst=5", NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ("", r.err);
	fd = ks_open_att(self->name, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ(50, c.rate);
	EXPECT_EQ(NS_PER_SEC, c.period_ns);
	EXPECT_EQ(5, c.burst);
	EXPECT_EQ(3, c.concurrency);
	close(fd);

	/* Bad keys and values: usage or error, and nothing changed. */
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "set", self->name,
			   "burst=7", "bogus=1", NULL));
	expect_error(_metadata, &r, 2, "bogus");
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "set", self->name,
			   "rate=fast", NULL));
	expect_error(_metadata, &r, 2, "fast");
	EXPECT_EQ(5, sysfs_u64(self->name, "burst"));
	EXPECT_EQ(50, sysfs_u64(self->name, "rate"));

	/* Mode 0640 of root: another user may not tune it. */
	ASSERT_EQ(0, rlctl(&r, &other, self->dir, "set", self->name,
			   "rate=1/s", NULL));
	expect_error(_metadata, &r, 1, "ermission denied");
	EXPECT_EQ(50, sysfs_u64(self->name, "rate"));
	/* Nor remove it. */
	ASSERT_EQ(0, rlctl(&r, &other, self->dir, "rm", self->name, NULL));
	EXPECT_EQ(1, r.status);
	EXPECT_EQ(1, sysfs_exists(self->name));
}

TEST_F(rlctl, usage_errors)
{
	struct run r;

	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, NULL));
	EXPECT_EQ(2, r.status);
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "frobnicate", NULL));
	expect_error(_metadata, &r, 2, "frobnicate");
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "create", self->name, NULL));
	expect_error(_metadata, &r, 2, "create");
	EXPECT_EQ(0, sysfs_exists(self->name));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "create", self->name,
			   "200/s", "--burst", "x", NULL));
	expect_error(_metadata, &r, 2, "x");
	EXPECT_EQ(0, sysfs_exists(self->name));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "create", "bad/name",
			   "1/s", NULL));
	EXPECT_NE(0, r.status);
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "--help", NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_NE(NULL, strstr(r.out, "usage: rlctl"));
	EXPECT_STREQ("", r.err);
}

/* A limiter's sysfs mode, "0644", into @buf; "" if it cannot be read. */
static const char *mode_of(const char *name, char *buf, size_t len)
{
	int i;

	/*
	 * A directory shows in sysfs a moment before its files: a tool
	 * that has just made the limiter may be seen in between.
	 */
	for (i = 0; i < 500; i++) {
		if (!sysfs_read(name, "mode", buf, len))
			return buf;
		usleep(10000);
	}
	buf[0] = '\0';
	return buf;
}

/*
 * Wait (10 ms steps, up to @ms) until /sys/kernel/ratelimit/@name
 * exists (@want 1) or not (@want 0), while @pid (if not 0) runs: 0 when
 * it does, -1 if not in time or @pid ended first.
 */
static int wait_name(const char *name, int want, pid_t pid, int ms)
{
	int i;

	for (i = 0; i < ms / 10; i++) {
		if (sysfs_exists(name) == want)
			return 0;
		if (pid && waitpid(pid, NULL, WNOHANG) == pid)
			return -1;
		usleep(10000);
	}
	return -1;
}

TEST_F(rlctl, create_persists_by_default)
{
	char mode[16];
	struct run r;

	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "create", self->name, "100/s",
			   NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ("", r.err);
	EXPECT_STREQ("", r.out);
	/* rlctl has exited: the limiter is still there, no client. */
	ASSERT_EQ(1, sysfs_exists(self->name));
	EXPECT_EQ(1, sysfs_u64(self->name, "persistent"));
	EXPECT_EQ(0, sysfs_u64(self->name, "clients"));
	EXPECT_EQ(100, sysfs_u64(self->name, "rate"));
	EXPECT_STREQ("0644", mode_of(self->name, mode, sizeof(mode)));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "rm", self->name, NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_EQ(0, sysfs_exists(self->name));

	/* --persist, the old way to ask for it, still works. */
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "create", self->name, "100/s",
			   "--persist", NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_EQ(1, sysfs_u64(self->name, "persistent"));
}

TEST_F(rlctl, create_transient_goes_with_rlctl)
{
	struct run r;

	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "create", self->name, "100/s",
			   "--transient", NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ("", r.err);
	/* Its only fd was rlctl's: it went as rlctl exited. */
	EXPECT_EQ(0, wait_name(self->name, 0, 0, 10000));
	EXPECT_EQ(0, sysfs_exists(self->name));
	/* The last of --persist and --transient wins. */
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "create", self->name, "100/s",
			   "--transient", "--persist", NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_EQ(1, sysfs_exists(self->name));
	/* A refused one is refused all the same: the check it is good for. */
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "create", self->name, "5/s",
			   "--transient", NULL));
	expect_error(_metadata, &r, 1, "exists");
}

/*
 * Start /tools/@argv[0] with @argv, its stdin a pipe whose write end is
 * *@in (so that it waits for input), its output in @dir: its pid, or -1.
 */
static pid_t start_tool(const char *dir, const char *const *argv, int *in)
{
	char path[64], out[256];
	int p[2];
	pid_t pid;

	snprintf(path, sizeof(path), "/tools/%s", argv[0]);
	snprintf(out, sizeof(out), "%s/bg.out", dir);
	if (pipe(p))
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || dup2(p[0], 0) < 0 || dup2(fd, 1) < 0 ||
		    dup2(fd, 2) < 0)
			_exit(126);
		close(p[1]);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		return -1;
	}
	*in = p[1];
	return pid;
}

/*
 * The limiters that rlpace, rlpipe and rlrun create, while they run
 * (each waits: rlpace for tokens at 1/s, rlpipe for input, rlrun for
 * cat), and those of rlctl apply: mode 0644, as rlctl create's.
 */
TEST_F(rlctl, every_tool_creates_mode_0644)
{
	const char *const rlpace[] = { "rlpace", "-N", self->name, "-r", "1/s",
				       "-n", "1000", "-q", NULL };
	const char *const rlpipe[] = { "rlpipe", "-n", self->name, "-r",
				       "1MiB/s", NULL };
	const char *const rlrun[] = { "rlrun", "-n", self->name, "-C", "2",
				      "--", "cat", NULL };
	const char *const *tools[] = { rlpace, rlpipe, rlrun };
	char mode[16], conf[128], log[256];
	struct run r;
	size_t i;
	pid_t pid;
	FILE *f;
	int in;

	for (i = 0; i < ARRAY_SIZE(tools); i++) {
		snprintf(conf, sizeof(conf), "/tools/%s", tools[i][0]);
		if (access(conf, X_OK))
			SKIP(return, "no %s", conf);
		pid = start_tool(self->dir, tools[i], &in);
		ASSERT_LT(0, pid);
		if (wait_name(self->name, 1, pid, 20000)) {
			snprintf(log, sizeof(log), "%s/bg.out", self->dir);
			slurp(log, r.err);
			TH_LOG("%s made no limiter: %s", tools[i][0], r.err);
		}
		EXPECT_EQ(1, sysfs_exists(self->name));
		EXPECT_STREQ("0644", mode_of(self->name, mode, sizeof(mode)))
			TH_LOG("%s", tools[i][0]);
		EXPECT_EQ(0, sysfs_u64(self->name, "persistent"));
		kill(pid, SIGTERM);
		close(in);
		waitpid(pid, NULL, 0);
		/* Not persistent: it goes with the tool. */
		EXPECT_EQ(0, wait_name(self->name, 0, 0, 10000))
			TH_LOG("%s left %s", tools[i][0], self->name);
		ks_unl_name(self->name);
	}

	/* A ratelimit.d file without a mode. */
	snprintf(conf, sizeof(conf), "%s/t.conf", self->dir);
	f = fopen(conf, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "[%s]\nrate = 10/s\n", self->name);
	ASSERT_EQ(0, fclose(f));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "apply", conf, NULL));
	EXPECT_EQ(0, r.status) show(_metadata, &r);
	EXPECT_STREQ("0644", mode_of(self->name, mode, sizeof(mode)));
}

TEST_F(rlctl, watch_prints_count_samples)
{
	struct run r;

	ASSERT_EQ(0, create(&r, self->dir, self->name));
	ASSERT_EQ(0, r.status);
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "watch", self->name, "-i",
			   "0.1", "-n", "3", NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ("", r.err);
	/* A header and one line a sample. */
	EXPECT_LE(3, lines(r.out));
	EXPECT_GE(4, lines(r.out));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "--json", "watch",
			   self->name, "-i", "0.1", "-n", "2", NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_EQ(2, lines(r.out));
	host_parse("json", "watch", &r);
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "watch", "no-such-limiter",
			   "-n", "1", NULL));
	expect_error(_metadata, &r, 1, "no-such-limiter");
}

TEST_F(rlctl, json_show_and_list)
{
	char member[RL_NAME_MAX + 16];
	struct run r;

	ASSERT_EQ(0, create(&r, self->dir, self->name));
	ASSERT_EQ(0, r.status);
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "--json", "show", self->name,
			   NULL));
	EXPECT_EQ(0, r.status);
	snprintf(member, sizeof(member), "\"name\":\"%s\"", self->name);
	EXPECT_NE(NULL, strstr(r.out, member)) show(_metadata, &r);
	EXPECT_EQ('{', r.out[0]);
	host_parse("json", "show", &r);
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "--json", "list", NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_NE(NULL, strstr(r.out, member)) show(_metadata, &r);
	EXPECT_EQ('[', r.out[0]);
	host_parse("json", "list", &r);
}

/* rlctl export: the limiter's counters and waits in Prometheus' format. */
TEST_F(rlctl, export_prometheus)
{
	char path[128], line[RL_NAME_MAX + 64], text[OUT_MAX];
	struct rl_acquire a;
	struct run r;
	int fd;

	fd = ks_open_att(self->name, RL_ATTACH_CREATE, 0600, 50, NS_PER_SEC,
			 1);
	ASSERT_LE(0, fd);
	/* The second waits about 20 ms: the histogram has a wait. */
	ASSERT_EQ(0, ks_acq(fd, 1, RL_DEADLINE_NONE, 0, &a));
	ASSERT_EQ(0, ks_acq(fd, 1, RL_DEADLINE_NONE, 0, &a));
	/* Full again (1 token, 20 ms) and so unchanged: two exports agree. */
	sleep_ms(50);
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "export", self->name, NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ("", r.err);
	snprintf(line, sizeof(line),
		 "\nratelimit_granted_tokens_total{limiter=\"%s\"} 2\n",
		 self->name);
	EXPECT_NE(NULL, strstr(r.out, line)) show(_metadata, &r);
	snprintf(line, sizeof(line),
		 "\nratelimit_wait_seconds_count{limiter=\"%s\"} 1\n",
		 self->name);
	EXPECT_NE(NULL, strstr(r.out, line)) show(_metadata, &r);
	EXPECT_NE(NULL, strstr(r.out, "# TYPE ratelimit_wait_seconds histogram\n"));
	host_parse("prom", "one", &r);

	/* -o: the same, in a file written whole; all limiters by default. */
	snprintf(path, sizeof(path), "%s/ratelimit.prom", self->dir);
	snprintf(text, sizeof(text), "%s", r.out);
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "export", "-o", path,
			   self->name, NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ("", r.out);
	slurp(path, r.out);
	EXPECT_STREQ(text, r.out);
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "export", NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_NE(NULL, strstr(r.out, line));
	host_parse("prom", "all", &r);
	close(fd);

	/* Gone with its fd: an error, and nothing written. */
	unlink(path);
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "export", "-o", path,
			   self->name, NULL));
	expect_error(_metadata, &r, 1, self->name);
	EXPECT_NE(0, access(path, F_OK));
}

/*
 * The number after "@key" and its padding at the start of a line of @out
 * (show's and key's "KEY   VALUE" lines), or POISON64.
 */
static __u64 out_value(const char *out, const char *key)
{
	size_t len = strlen(key);
	const char *p = out;

	while (p && (strncmp(p, key, len) || p[len] != ' ')) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (!p)
		return POISON64;
	for (p += len; *p == ' '; p++)
		continue;
	return strtoull(p, NULL, 10);
}

/*
 * The configuration of named limiter @name, through an fd attached to it
 * (sysfs_u64() knows the keys of config of every limiter only).
 */
static struct rl_config named_config(const char *name)
{
	struct rl_config c;
	int fd = rl_open_named(name, 0, 0, NULL);

	memset(&c, POISON_BYTE, sizeof(c));
	if (fd >= 0) {
		rl_get_config(fd, &c);
		rl_close(fd);
	}
	return c;
}

/* @text into a new file @path: 0 or -1. */
static int put_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fputs(text, f) < 0;
	return fclose(f) || ret ? -1 : 0;
}

/*
 * A keyed limiter: burst 5, at most 100 keys with state, and a token per
 * 1000 s, so that no key refills (and is dropped) during a test.
 */
static int create_keyed(struct run *r, const char *dir, const char *name)
{
	return rlctl(r, NULL, dir, "create", name, "1/1000s:5", "--keyed",
		     "--keys", "100", NULL);
}

TEST_F(rlctl, create_keyed_show_key)
{
	char member[RL_NAME_MAX + 16];
	struct run r;
	int fd;

	ASSERT_EQ(0, create_keyed(&r, self->dir, self->name));
	ASSERT_EQ(0, r.status) show(_metadata, &r);
	EXPECT_EQ((__u32)RL_CONFIG_KEYED, named_config(self->name).flags);
	EXPECT_EQ(100, named_config(self->name).keys);
	EXPECT_EQ(5, sysfs_u64(self->name, "burst"));
	fd = rl_open_named(self->name, 0, 0, NULL);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, rl_acquire_key(fd, "alice", 5, 3));
	ASSERT_EQ(0, rl_acquire_key(fd, "\x0a\x00\x00\x01", 4, 5));

	/* show: the counts of its keys. */
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "show", self->name, NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_EQ(2, out_value(r.out, "keys_live")) show(_metadata, &r);
	EXPECT_EQ(100, out_value(r.out, "keys_max"));
	EXPECT_EQ(2, out_value(r.out, "keys_created"));
	EXPECT_EQ(0, out_value(r.out, "keys_evicted"));
	EXPECT_EQ(0, out_value(r.out, "keys_refused"));
	EXPECT_EQ(0, out_value(r.out, "keys_waiters"));
	EXPECT_EQ(1, out_value(r.out, "keyed"));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "--json", "show", self->name,
			   NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_NE(NULL, strstr(r.out, "\"key_family\":{\"keys\":2,\"keys_max\":100,"))
		show(_metadata, &r);
	host_parse("json", "show-keyed", &r);

	/* key: one key, as bytes or in hex; another never seen, full. */
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "key", self->name, "alice",
			   NULL));
	EXPECT_EQ(0, r.status) show(_metadata, &r);
	EXPECT_EQ(2, out_value(r.out, "available"));
	EXPECT_NE(NULL, strstr(r.out, "\nkept           yes\n"));
	EXPECT_NE(NULL, strstr(r.out, "\nfull           in "));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "key", "--hex", self->name,
			   "0a000001", NULL));
	EXPECT_EQ(0, r.status) show(_metadata, &r);
	EXPECT_EQ(0, out_value(r.out, "available"));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "key", self->name, "bob",
			   NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_EQ(5, out_value(r.out, "available"));
	EXPECT_NE(NULL, strstr(r.out, "\nfull           now\n"));
	EXPECT_NE(NULL, strstr(r.out, "\nkept           no"));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "--json", "key", self->name,
			   "alice", NULL));
	EXPECT_EQ(0, r.status);
	snprintf(member, sizeof(member), "\"name\":\"%s\"", self->name);
	EXPECT_NE(NULL, strstr(r.out, member)) show(_metadata, &r);
	EXPECT_NE(NULL, strstr(r.out, "\"key\":\"alice\",\"available\":2,\"burst\":5,"));
	EXPECT_NE(NULL, strstr(r.out, "\"kept\":true}"));
	host_parse("json", "key", &r);
	/* Reading made no key. */
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "show", self->name, NULL));
	EXPECT_EQ(2, out_value(r.out, "keys_created"));

	/* keys changes live; keyed never does. */
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "set", self->name, "keys=200",
			   NULL));
	EXPECT_EQ(0, r.status) show(_metadata, &r);
	EXPECT_EQ(200, named_config(self->name).keys);
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "set", self->name, "keyed=0",
			   NULL));
	expect_error(_metadata, &r, 1, "fixed when a limiter is created");
	EXPECT_EQ((__u32)RL_CONFIG_KEYED, named_config(self->name).flags);
	close(fd);
}

TEST_F(rlctl, keyed_errors)
{
	struct run r;

	/* What a keyed limiter cannot be: nothing is created. */
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "create", self->name,
			   "unlimited", "--keyed", NULL));
	expect_error(_metadata, &r, 1, "invalid configuration");
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "create", self->name, "10/s",
			   "--keyed", "--concurrency", "2", NULL));
	expect_error(_metadata, &r, 1, "invalid configuration");
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "create", self->name, "10/s",
			   "--keys", "5", NULL));
	expect_error(_metadata, &r, 2, "--keys needs --keyed");
	EXPECT_EQ(0, sysfs_exists(self->name));

	/* key of a plain limiter, of none, and a bad key. */
	ASSERT_EQ(0, create(&r, self->dir, self->name));
	ASSERT_EQ(0, r.status);
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "key", self->name, "k", NULL));
	expect_error(_metadata, &r, 1, "not a keyed limiter");
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "key", "no-such-limiter", "k",
			   NULL));
	expect_error(_metadata, &r, 1, "no-such-limiter");
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "key", "--hex", self->name,
			   "0g", NULL));
	expect_error(_metadata, &r, 2, "not hexadecimal");
	/* A plain limiter shows no keys. */
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "show", self->name, NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_EQ(NULL, strstr(r.out, "keys_live"));
}

/* export: the families of keys for keyed limiters only, one sample each. */
TEST_F(rlctl, export_keyed)
{
	char plain[RL_NAME_MAX], line[RL_NAME_MAX + 64];
	struct run r;
	int fd;

	snprintf(plain, sizeof(plain), "rlctl-plain-%d", getpid());
	ASSERT_EQ(0, create_keyed(&r, self->dir, self->name));
	ASSERT_EQ(0, r.status);
	fd = rl_open_named(self->name, 0, 0, NULL);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, rl_acquire_key(fd, "a", 1, 1));
	ASSERT_EQ(0, rl_acquire_key(fd, "b", 1, 1));
	ASSERT_EQ(0, rl_acquire_key(fd, "c", 1, 1));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "export", self->name, NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ("", r.err);
	snprintf(line, sizeof(line), "\nratelimit_keys{limiter=\"%s\"} 3\n",
		 self->name);
	EXPECT_NE(NULL, strstr(r.out, line)) show(_metadata, &r);
	snprintf(line, sizeof(line), "\nratelimit_keys_max{limiter=\"%s\"} 100\n",
		 self->name);
	EXPECT_NE(NULL, strstr(r.out, line));
	snprintf(line, sizeof(line),
		 "\nratelimit_keys_created_total{limiter=\"%s\"} 3\n",
		 self->name);
	EXPECT_NE(NULL, strstr(r.out, line));
	snprintf(line, sizeof(line),
		 "\nratelimit_keys_evicted_total{limiter=\"%s\"} 0\n",
		 self->name);
	EXPECT_NE(NULL, strstr(r.out, line));
	snprintf(line, sizeof(line),
		 "\nratelimit_keys_refused_total{limiter=\"%s\"} 0\n",
		 self->name);
	EXPECT_NE(NULL, strstr(r.out, line));
	EXPECT_NE(NULL, strstr(r.out, "# TYPE ratelimit_keys_refused_total counter\n"));
	/* Never a series per key. */
	EXPECT_EQ(NULL, strstr(r.out, "key=\""));
	host_parse("prom", "keyed", &r);

	/* A plain limiter alone: no family of keys at all. */
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "create", plain, "10/s", NULL));
	ASSERT_EQ(0, r.status);
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "export", plain, NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_EQ(NULL, strstr(r.out, "ratelimit_keys")) show(_metadata, &r);
	/* Both: the keyed one's samples only. */
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "export", plain, self->name,
			   NULL));
	EXPECT_EQ(0, r.status);
	snprintf(line, sizeof(line), "ratelimit_keys{limiter=\"%s\"}", plain);
	EXPECT_EQ(NULL, strstr(r.out, line));
	host_parse("prom", "keyed-and-plain", &r);
	ks_unl_name(plain);
	close(fd);
}

/* A file of ratelimit.d(5) with a keyed limiter, applied and changed. */
TEST_F(rlctl, apply_keyed)
{
	char conf[128], text[512], plain[RL_NAME_MAX];
	struct run r;

	snprintf(plain, sizeof(plain), "rlctl-plain-%d", getpid());
	snprintf(conf, sizeof(conf), "%s/keyed.conf", self->dir);
	/* A plain section first: the keyed one is checked apart. */
	snprintf(text, sizeof(text),
		 "[%s]\nrate = 20/s\n\n[%s]\nrate = 10/s:5\nkeyed = yes\nkeys = 50\n",
		 plain, self->name);
	ASSERT_EQ(0, put_text(conf, text));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "apply", conf, NULL));
	EXPECT_EQ(0, r.status) show(_metadata, &r);
	EXPECT_NE(NULL, strstr(r.out, "keyed yes, keys 50"));
	EXPECT_EQ((__u32)RL_CONFIG_KEYED, named_config(self->name).flags);
	EXPECT_EQ(50, named_config(self->name).keys);
	EXPECT_EQ(5, sysfs_u64(self->name, "burst"));
	EXPECT_EQ(0U, named_config(plain).flags);
	/* Again: nothing to change. */
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "apply", conf, NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_NE(NULL, strstr(r.out, "nothing to change")) show(_metadata, &r);

	/* keys changes in place. */
	snprintf(text, sizeof(text),
		 "[%s]\nrate = 20/s\n\n[%s]\nrate = 10/s:5\nkeyed = on\nkeys = 60\n",
		 plain, self->name);
	ASSERT_EQ(0, put_text(conf, text));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "apply", conf, NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_NE(NULL, strstr(r.out, "keys 50 -> 60")) show(_metadata, &r);
	EXPECT_EQ(60, named_config(self->name).keys);

	/* keyed does not: an error at its line, nothing applied. */
	snprintf(text, sizeof(text),
		 "[%s]\nrate = 30/s\n\n[%s]\nrate = 10/s:5\nkeyed = no\n",
		 plain, self->name);
	ASSERT_EQ(0, put_text(conf, text));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "apply", conf, NULL));
	EXPECT_EQ(1, r.status);
	EXPECT_NE(NULL, strstr(r.err, "keyed.conf:6: cannot make")) show(_metadata, &r);
	EXPECT_NE(NULL, strstr(r.err, "nothing applied"));
	EXPECT_EQ((__u32)RL_CONFIG_KEYED, named_config(self->name).flags);
	EXPECT_EQ(20, sysfs_u64(plain, "rate"));
	/* keys without keyed: refused as the file is read. */
	snprintf(text, sizeof(text), "[%s]\nrate = 10/s\nkeys = 5\n", plain);
	ASSERT_EQ(0, put_text(conf, text));
	ASSERT_EQ(0, rlctl(&r, NULL, self->dir, "apply", conf, NULL));
	EXPECT_EQ(1, r.status);
	EXPECT_NE(NULL, strstr(r.err, "keyed.conf:3: keys without keyed = yes"))
		show(_metadata, &r);
	ks_unl_name(plain);
}

TEST_HARNESS_MAIN
