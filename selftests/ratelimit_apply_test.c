// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of "rlctl apply" (/tools/rlctl in the guest) against the
 * module: it creates what the files declare, a second run changes nothing
 * and says so, a changed rate goes live through SET_CONFIG with a waiter
 * asleep (and the waiter is served), a bad file is reported as FILE:LINE
 * and nothing at all is applied, --prune removes only the persistent
 * limiters no file declares, --dry-run changes nothing, owner, group and
 * mode change in place while a client keeps its fd, and a concurrency
 * going between 0 and non-zero under attached clients is refused before
 * anything changes.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_rlctl.h"

#define NOTHING		"rlctl: apply: nothing to change\n"
#define CONC_BUSY	"cannot change the concurrency of '%s' from 0 to 2 while 1 client is attached: they would hold a permit for every token and never give it back; stop it, or remove it (rlctl rm %s) and apply again"

#define NAME(buf, tag) \
	snprintf(buf, sizeof(buf), "rla-%d-%s", getpid(), tag)

/* Write @dir/@file from a format: 0 or -1. */
static int __attribute__((format(printf, 3, 4)))
conf(const char *dir, const char *file, const char *fmt, ...)
{
	char path[256];
	va_list ap;
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "w");
	if (!f)
		return -1;
	va_start(ap, fmt);
	ret = vfprintf(f, fmt, ap) < 0;
	va_end(ap);
	return fclose(f) || ret ? -1 : 0;
}

#define EXPECT_SYSFS(name, file, val) \
	EXPECT_EQ((__u64)(val), sysfs_u64(name, file))

static void expect_mode(struct __test_metadata *_metadata, const char *name,
			const char *mode)
{
	char buf[32];

	ASSERT_EQ(0, sysfs_read(name, "mode", buf, sizeof(buf)));
	EXPECT_STREQ(mode, buf);
}

TEST(creates_then_nothing_to_change)
{
	char dir[64], a[48], b[48], want[1024];
	struct run r;

	if (access(RLCTL, X_OK))
		SKIP(return, "no " RLCTL);
	make_dir(dir, sizeof(dir));
	ASSERT_NE(0, dir[0]);
	NAME(a, "a");
	NAME(b, "b");
	ASSERT_EQ(0, conf(dir, "10-a.conf",
			  "# the API\n[%s]\nrate = 100/s\nburst = 10\n"
			  "concurrency = 4\nfairness = 5\ncatchup = 2000\n"
			  "backlog = 3k\nmode = 0640\n", a));
	ASSERT_EQ(0, conf(dir, "20-b.conf",
			  "[%s]  # a semaphore\n  rate=unlimited\n"
			  "concurrency = 3\nmode = 666\nowner = 1234\n"
			  "group = 4321\n", b));
	ASSERT_EQ(0, conf(dir, "README", "not a [section]\n"));
	ASSERT_EQ(0, conf(dir, ".hidden.conf", "junk\n"));

	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	snprintf(want, sizeof(want),
		 "created %s: rate 100/s, burst 10, concurrency 4, fairness 5, catchup 2000, backlog 3000, mode 0640, owner 0, group 0\n"
		 "created %s: rate 0/s, unlimited yes, burst 3, concurrency 3, mode 0666, owner 1234, group 4321\n",
		 a, b);
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ(want, r.out);
	EXPECT_STREQ("", r.err);
	if (r.status)
		show(_metadata, &r);

	/* Persistent: rlctl is gone, the limiters are not. */
	EXPECT_SYSFS(a, "rate", 100);
	EXPECT_SYSFS(a, "period_ns", NS_PER_SEC);
	EXPECT_SYSFS(a, "burst", 10);
	EXPECT_SYSFS(a, "unlimited", 0);
	EXPECT_SYSFS(a, "concurrency", 4);
	EXPECT_SYSFS(a, "fairness", 5);
	EXPECT_SYSFS(a, "catchup", 2000);
	EXPECT_SYSFS(a, "backlog", 3000);
	EXPECT_SYSFS(a, "persistent", 1);
	EXPECT_SYSFS(a, "owner", 0);
	expect_mode(_metadata, a, "0640");
	EXPECT_SYSFS(b, "unlimited", 1);
	EXPECT_SYSFS(b, "burst", 3);
	EXPECT_SYSFS(b, "concurrency", 3);
	EXPECT_SYSFS(b, "persistent", 1);
	EXPECT_SYSFS(b, "owner", 1234);
	EXPECT_SYSFS(b, "group", 4321);
	expect_mode(_metadata, b, "0666");

	/* Idempotent, and says so; so does a dry run. */
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ(NOTHING, r.out);
	EXPECT_STREQ("", r.err);
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", "--dry-run", dir, NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ(NOTHING, r.out);

	EXPECT_EQ(0, ks_unl_name(a));
	EXPECT_EQ(0, ks_unl_name(b));
	remove_dir(dir);
}

TEST(rate_change_keeps_the_waiter)
{
	char dir[64], name[48], want[256];
	struct rl_acquire acq;
	struct waiter w;
	struct run r;
	int fd;

	if (access(RLCTL, X_OK))
		SKIP(return, "no " RLCTL);
	make_dir(dir, sizeof(dir));
	ASSERT_NE(0, dir[0]);
	NAME(name, "w");
	ASSERT_EQ(0, conf(dir, "w.conf", "[%s]\nrate = 1/1h\nburst = 1\n",
			  name));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	ASSERT_EQ(0, r.status)
		show(_metadata, &r);

	/* Take the one token; a waiter then sleeps for the next hour. */
	fd = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 1, RL_DEADLINE_NONE, RL_ACQUIRE_NONBLOCK,
			    &acq));
	ASSERT_EQ(0, waiter_start(&w, fd, 1, now_ns() + 120 * NS_PER_SEC, 0));
	ASSERT_EQ(0, ks_wait_waiters(fd, 1, 10000));

	ASSERT_EQ(0, conf(dir, "w.conf", "[%s]\nrate = 1000/s\nburst = 1\n",
			  name));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	snprintf(want, sizeof(want), "changed %s: rate 1/h -> 1000/s\n",
		 name);
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ(want, r.out);
	EXPECT_STREQ("", r.err);

	/* The sleeper is served under the new rate, long before the hour. */
	ASSERT_EQ(0, waiter_join(&w, 60000));
	EXPECT_EQ(0, w.ret);
	EXPECT_SYSFS(name, "rate", 1000);
	EXPECT_SYSFS(name, "period_ns", NS_PER_SEC);
	EXPECT_SYSFS(name, "waiters", 0);
	EXPECT_SYSFS(name, "waited", 1);
	EXPECT_SYSFS(name, "timeouts", 0);

	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	EXPECT_STREQ(NOTHING, r.out);
	close(fd);
	EXPECT_EQ(0, ks_unl_name(name));
	remove_dir(dir);
}

TEST(bad_file_applies_nothing)
{
	char dir[64], x[48], y[48], z[48], want[2048];
	struct run r;

	if (access(RLCTL, X_OK))
		SKIP(return, "no " RLCTL);
	make_dir(dir, sizeof(dir));
	ASSERT_NE(0, dir[0]);
	NAME(x, "x");
	NAME(y, "y");
	NAME(z, "z");
	ASSERT_EQ(0, conf(dir, "a.conf", "[%s]\nrate = 10/s\n", x));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	ASSERT_EQ(0, r.status)
		show(_metadata, &r);

	/* A valid change and a valid creation, next to a broken file. */
	ASSERT_EQ(0, conf(dir, "a.conf", "[%s]\nrate = 20/s\n\n[%s]\nrate = 5/s\n",
			  x, y));
	ASSERT_EQ(0, conf(dir, "b.conf",
			  "[%s]\nrate = 1/s\nspeed = 1\nburst = lots\n"
			  "owner = no-such-user\n[%s]\nrate = 1/s\n"
			  "[%s-2]\nrate = 100/x\n", z, x, z));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	snprintf(want, sizeof(want),
		 "%s/b.conf:3: unknown key 'speed'\n"
		 "%s/b.conf:4: invalid burst 'lots' (a count such as 50, 10k or 64KiB)\n"
		 "%s/b.conf:5: unknown user 'no-such-user'\n"
		 "%s/b.conf:6: duplicate limiter '%s' (first at %s/a.conf:1)\n"
		 "%s/b.conf:9: invalid rate '100/x' (RATE[/PERIOD][:BURST] such as 100/s, 10MiB/s or 1/1h, or unlimited)\n"
		 "rlctl: apply: 5 errors: nothing applied\n",
		 dir, dir, dir, dir, x, dir, dir);
	EXPECT_EQ(1, r.status);
	EXPECT_STREQ("", r.out);
	EXPECT_STREQ(want, r.err);

	EXPECT_SYSFS(x, "rate", 10);
	EXPECT_EQ(0, sysfs_exists(y));
	EXPECT_EQ(0, sysfs_exists(z));

	/* A file given by name is read whatever its name; missing: an error. */
	ASSERT_EQ(0, conf(dir, "c.txt", "[%s]\nrate = 7/s\n", y));
	snprintf(want, sizeof(want), "%s/c.txt", dir);
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", want, "/nonexistent", NULL));
	EXPECT_EQ(1, r.status);
	EXPECT_STREQ("", r.out);
	EXPECT_STREQ("/nonexistent: No such file or directory\n"
		     "rlctl: apply: 1 error: nothing applied\n", r.err);
	EXPECT_EQ(0, sysfs_exists(y));

	EXPECT_EQ(0, ks_unl_name(x));
	remove_dir(dir);
}

TEST(module_refusal_applies_nothing)
{
	char dir[64], x[48], y[48], want[512];
	struct run r;

	if (access(RLCTL, X_OK))
		SKIP(return, "no " RLCTL);
	make_dir(dir, sizeof(dir));
	ASSERT_NE(0, dir[0]);
	NAME(x, "x");
	NAME(y, "y");
	/* Fine for the parser; the default burst of 1/s (1) is too small. */
	ASSERT_EQ(0, conf(dir, "a.conf",
			  "[%s]\nrate = 5/s\n[%s]\nrate = 1/s\nbacklog = 2000\n",
			  x, y));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	snprintf(want, sizeof(want),
		 "%s/a.conf:3: the module refuses the limits of [%s]\n"
		 "rlctl: apply: 1 error: nothing applied\n", dir, y);
	EXPECT_EQ(1, r.status);
	EXPECT_STREQ("", r.out);
	EXPECT_STREQ(want, r.err);
	EXPECT_EQ(0, sysfs_exists(x));
	EXPECT_EQ(0, sysfs_exists(y));
	remove_dir(dir);
}

TEST(owner_group_mode_in_place)
{
	char dir[64], x[48], y[48], want[2048];
	struct rl_acquire acq;
	struct run r;
	int fd, i;

	if (access(RLCTL, X_OK))
		SKIP(return, "no " RLCTL);
	make_dir(dir, sizeof(dir));
	ASSERT_NE(0, dir[0]);
	NAME(x, "x");
	NAME(y, "y");
	ASSERT_EQ(0, conf(dir, "a.conf",
			  "[%s]\nrate = 10/s\nowner = 1234\ngroup = 4321\n", x));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	ASSERT_EQ(0, r.status)
		show(_metadata, &r);
	/* A client, attached all along. */
	fd = ks_open_att(x, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &acq));

	ASSERT_EQ(0, conf(dir, "a.conf",
			  "[%s]\nrate = 1000/s\nowner = 1235\ngroup = 4322\n"
			  "mode = 0600\n[%s]\nrate = 1/s\n", x, y));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", "--dry-run", dir, NULL));
	snprintf(want, sizeof(want),
		 "would change %s: rate 10/s -> 1000/s, burst 1 -> 100, mode 0644 -> 0600, owner 1234 -> 1235, group 4321 -> 4322\n"
		 "would create %s: rate 1/s, burst 1, mode 0644, owner 0, group 0\n",
		 x, y);
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ(want, r.out);
	EXPECT_STREQ("", r.err);
	EXPECT_SYSFS(x, "owner", 1234);
	expect_mode(_metadata, x, "0644");

	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	snprintf(want, sizeof(want),
		 "changed %s: rate 10/s -> 1000/s, burst 1 -> 100, mode 0644 -> 0600, owner 1234 -> 1235, group 4321 -> 4322\n"
		 "created %s: rate 1/s, burst 1, mode 0644, owner 0, group 0\n",
		 x, y);
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ(want, r.out);
	EXPECT_STREQ("", r.err);
	EXPECT_SYSFS(x, "rate", 1000);
	EXPECT_SYSFS(x, "owner", 1235);
	EXPECT_SYSFS(x, "group", 4322);
	expect_mode(_metadata, x, "0600");
	EXPECT_SYSFS(x, "clients", 1);
	/* The client goes on, on the same limiter. */
	for (i = 0; i < 10; i++)
		EXPECT_EQ(0, ks_acq(fd, 1, now_ns() + 10 * NS_PER_SEC, 0,
				    &acq));
	EXPECT_SYSFS(x, "granted", 11);

	/* Only the mode now. */
	ASSERT_EQ(0, conf(dir, "a.conf",
			  "[%s]\nrate = 1000/s\nowner = 1235\ngroup = 4322\n"
			  "mode = 0640\n[%s]\nrate = 1/s\n", x, y));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	snprintf(want, sizeof(want), "changed %s: mode 0600 -> 0640\n", x);
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ(want, r.out);
	expect_mode(_metadata, x, "0640");
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	EXPECT_STREQ(NOTHING, r.out);
	close(fd);
	EXPECT_EQ(0, ks_unl_name(y));

	/* Nor does apply adopt a limiter that a program created. */
	EXPECT_EQ(0, ks_unl_name(x));
	fd = ks_open_att(x, RL_ATTACH_CREATE, 0644, 20, NS_PER_SEC, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, conf(dir, "a.conf", "[%s]\nrate = 20/s\n", x));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	snprintf(want, sizeof(want),
		 "%s/a.conf:1: '%s' exists but is not persistent (a program created it; it ends with its last client): remove it (rlctl rm %s) or let it end, and apply again\n"
		 "rlctl: apply: 1 error: nothing applied\n", dir, x, x);
	EXPECT_EQ(1, r.status);
	EXPECT_STREQ(want, r.err);
	close(fd);
	EXPECT_EQ(0, sysfs_exists(x));
	remove_dir(dir);
}

/*
 * Issue 24's hang: adding a concurrency limit to a live rate-only limiter
 * would make every attached client hold permits it never gives back. apply
 * refuses the whole run, says why and what to do, and changes nothing; the
 * client goes on. Alone, the same file applies.
 */
TEST(concurrency_switch_refused_with_clients)
{
	char dir[64], c[48], d[48], want[2048];
	struct rl_acquire acq;
	struct run r;
	int fd, i;

	if (access(RLCTL, X_OK))
		SKIP(return, "no " RLCTL);
	make_dir(dir, sizeof(dir));
	ASSERT_NE(0, dir[0]);
	NAME(c, "c");
	NAME(d, "d");
	ASSERT_EQ(0, conf(dir, "c.conf", "[%s]\nrate = 1000/s\n", c));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	ASSERT_EQ(0, r.status)
		show(_metadata, &r);
	fd = ks_open_att(c, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd);

	ASSERT_EQ(0, conf(dir, "c.conf",
			  "[%s]\nrate = 1000/s\nconcurrency = 2\nmode = 0640\n"
			  "[%s]\nrate = 1/s\n", c, d));
	snprintf(want, sizeof(want),
		 "%s/c.conf:3: " CONC_BUSY "\n"
		 "rlctl: apply: 1 error: nothing applied\n", dir, c, c);
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", "--dry-run", dir, NULL));
	EXPECT_EQ(1, r.status);
	EXPECT_STREQ("", r.out);
	EXPECT_STREQ(want, r.err);
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	EXPECT_EQ(1, r.status);
	EXPECT_STREQ("", r.out);
	EXPECT_STREQ(want, r.err);
	/* Nothing changed, nothing created; the client goes on. */
	EXPECT_SYSFS(c, "concurrency", 0);
	expect_mode(_metadata, c, "0644");
	EXPECT_EQ(0, sysfs_exists(d));
	for (i = 0; i < 5; i++)
		EXPECT_EQ(0, ks_acq(fd, 1, now_ns() + 10 * NS_PER_SEC, 0,
				    &acq));
	EXPECT_SYSFS(c, "held", 0);

	/* The client gone, the same file applies. */
	close(fd);
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	snprintf(want, sizeof(want),
		 "changed %s: concurrency 0 -> 2, mode 0644 -> 0640\n"
		 "created %s: rate 1/s, burst 1, mode 0644, owner 0, group 0\n",
		 c, d);
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ(want, r.out);
	EXPECT_STREQ("", r.err);
	EXPECT_SYSFS(c, "concurrency", 2);
	EXPECT_EQ(0, ks_unl_name(c));
	EXPECT_EQ(0, ks_unl_name(d));
	remove_dir(dir);
}

TEST(prune_removes_only_undeclared)
{
	char dir[64], p1[48], p2[48], p3[48], np[48], line[128];
	struct run r;
	int fd_np, fd;

	if (access(RLCTL, X_OK))
		SKIP(return, "no " RLCTL);
	make_dir(dir, sizeof(dir));
	ASSERT_NE(0, dir[0]);
	NAME(p1, "p1");
	NAME(p2, "p2");
	NAME(p3, "p3");
	NAME(np, "np");
	ASSERT_EQ(0, conf(dir, "p.conf", "[%s]\nrate = 1/s\n[%s]\nrate = 2/s\n",
			  p1, p2));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	ASSERT_EQ(0, r.status)
		show(_metadata, &r);
	/* One persistent limiter made by hand, one alive through its fd. */
	fd = ks_open_att(p3, RL_ATTACH_CREATE | RL_ATTACH_PERSIST, 0644, 3,
			 NS_PER_SEC, 0);
	ASSERT_LE(0, fd);
	close(fd);
	fd_np = ks_open_att(np, RL_ATTACH_CREATE, 0644, 4, NS_PER_SEC, 0);
	ASSERT_LE(0, fd_np);

	ASSERT_EQ(0, conf(dir, "p.conf", "[%s]\nrate = 1/s\n", p1));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ(NOTHING, r.out);
	EXPECT_EQ(1, sysfs_exists(p2));

	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", "--dry-run", "--prune",
			   dir, NULL));
	EXPECT_EQ(0, r.status);
	snprintf(line, sizeof(line), "would remove %s\n", p2);
	EXPECT_NE(NULL, strstr(r.out, line));
	snprintf(line, sizeof(line), "would remove %s\n", p3);
	EXPECT_NE(NULL, strstr(r.out, line));
	EXPECT_EQ(NULL, strstr(r.out, p1));
	EXPECT_EQ(NULL, strstr(r.out, np));
	EXPECT_EQ(1, sysfs_exists(p2));
	EXPECT_EQ(1, sysfs_exists(p3));

	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, "--prune", NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ("", r.err);
	snprintf(line, sizeof(line), "removed %s\n", p2);
	EXPECT_NE(NULL, strstr(r.out, line));
	snprintf(line, sizeof(line), "removed %s\n", p3);
	EXPECT_NE(NULL, strstr(r.out, line));
	EXPECT_EQ(NULL, strstr(r.out, p1));
	EXPECT_EQ(NULL, strstr(r.out, np));
	EXPECT_EQ(1, sysfs_exists(p1));
	EXPECT_EQ(0, sysfs_exists(p2));
	EXPECT_EQ(0, sysfs_exists(p3));
	EXPECT_EQ(1, sysfs_exists(np));

	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", "--prune", dir, NULL));
	EXPECT_STREQ(NOTHING, r.out);
	EXPECT_EQ(1, sysfs_exists(p1));

	close(fd_np);
	EXPECT_EQ(0, ks_unl_name(p1));
	remove_dir(dir);
}

TEST(dry_run_changes_nothing)
{
	char dir[64], e1[48], e2[48], want[512];
	struct run r;

	if (access(RLCTL, X_OK))
		SKIP(return, "no " RLCTL);
	make_dir(dir, sizeof(dir));
	ASSERT_NE(0, dir[0]);
	NAME(e1, "e1");
	NAME(e2, "e2");
	ASSERT_EQ(0, conf(dir, "e.conf", "[%s]\nrate = 10/s\n", e1));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	ASSERT_EQ(0, r.status)
		show(_metadata, &r);

	ASSERT_EQ(0, conf(dir, "e.conf",
			  "[%s]\nrate = 20/s:4\nconcurrency = 2\n[%s]\nrate = 5/s\n",
			  e1, e2));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", "--dry-run", dir, NULL));
	snprintf(want, sizeof(want),
		 "would change %s: rate 10/s -> 20/s, burst 1 -> 4, concurrency 0 -> 2\n"
		 "would create %s: rate 5/s, burst 1, mode 0644, owner 0, group 0\n",
		 e1, e2);
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ(want, r.out);
	EXPECT_STREQ("", r.err);
	EXPECT_SYSFS(e1, "rate", 10);
	EXPECT_SYSFS(e1, "burst", 1);
	EXPECT_SYSFS(e1, "concurrency", 0);
	EXPECT_EQ(0, sysfs_exists(e2));

	/* The real run does what the dry run said. */
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	snprintf(want, sizeof(want),
		 "changed %s: rate 10/s -> 20/s, burst 1 -> 4, concurrency 0 -> 2\n"
		 "created %s: rate 5/s, burst 1, mode 0644, owner 0, group 0\n",
		 e1, e2);
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ(want, r.out);
	EXPECT_SYSFS(e1, "rate", 20);
	EXPECT_SYSFS(e1, "burst", 4);
	EXPECT_SYSFS(e1, "concurrency", 2);
	EXPECT_SYSFS(e2, "rate", 5);

	EXPECT_EQ(0, ks_unl_name(e1));
	EXPECT_EQ(0, ks_unl_name(e2));
	remove_dir(dir);
}

TEST(no_files_is_no_error)
{
	char dir[64];
	struct run r;

	if (access(RLCTL, X_OK))
		SKIP(return, "no " RLCTL);
	make_dir(dir, sizeof(dir));
	ASSERT_NE(0, dir[0]);
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ(NOTHING, r.out);
	EXPECT_STREQ("", r.err);
	/* No path at all, or a bad option: usage errors. */
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", NULL));
	EXPECT_EQ(2, r.status);
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", "--force", dir, NULL));
	EXPECT_EQ(2, r.status);
	remove_dir(dir);
}

/*
 * Names of owners and groups come from the user and group databases
 * (NSS): here a user and a group added to the guest's /etc/passwd and
 * /etc/group, which a static rlctl reads through glibc's built-in files.
 */
TEST(owner_and_group_by_name)
{
	char dir[64], name[48], want[256];
	struct run r;

	if (access(RLCTL, X_OK))
		SKIP(return, "no " RLCTL);
	if (!access("/etc/passwd", F_OK) || !access("/etc/group", F_OK))
		SKIP(return, "a guest of our own, without /etc/passwd, needed");
	if (mkdir("/etc", 0755) && errno != EEXIST)
		SKIP(return, "cannot make /etc");
	ASSERT_EQ(0, conf("/etc", "passwd", "root:x:0:0::/root:/bin/sh\n"
			  "rlapply:x:2345:2346::/:/bin/false\n"));
	ASSERT_EQ(0, conf("/etc", "group", "root:x:0:\nrlapplyg:x:2347:\n"));
	make_dir(dir, sizeof(dir));
	ASSERT_NE(0, dir[0]);
	NAME(name, "o");
	ASSERT_EQ(0, conf(dir, "o.conf",
			  "[%s]\nrate = 1/s\nowner = rlapply\ngroup = rlapplyg\n",
			  name));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	snprintf(want, sizeof(want),
		 "created %s: rate 1/s, burst 1, mode 0644, owner 2345, group 2347\n",
		 name);
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ(want, r.out);
	EXPECT_SYSFS(name, "owner", 2345);
	EXPECT_SYSFS(name, "group", 2347);
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	EXPECT_STREQ(NOTHING, r.out);
	unlink("/etc/passwd");
	unlink("/etc/group");
	EXPECT_EQ(0, ks_unl_name(name));
	remove_dir(dir);
}

/*
 * A user may apply files about its own limiters; what takes root or the
 * write permission is refused before anything changes.
 */
TEST(non_root_user)
{
	const struct ks_cred user = { .uid = 3456, .gid = 3456 };
	char dir[64], mine[48], root[48], other[48], want[1024];
	struct run r;

	if (access(RLCTL, X_OK))
		SKIP(return, "no " RLCTL);
	if (geteuid())
		SKIP(return, "needs root to become another user");
	make_dir(dir, sizeof(dir));
	ASSERT_NE(0, dir[0]);
	NAME(mine, "mine");
	NAME(root, "root");
	NAME(other, "other");
	ASSERT_EQ(0, conf(dir, "r.conf", "[%s]\nrate = 10/s\n", root));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	ASSERT_EQ(0, r.status)
		show(_metadata, &r);

	/* Its own limiter: created with its ids; root's left alone. */
	ASSERT_EQ(0, conf(dir, "r.conf", "[%s]\nrate = 10/s\n[%s]\nrate = 1/s\n",
			  root, mine));
	ASSERT_EQ(0, rlctl(&r, &user, dir, "apply", "--prune", dir, NULL));
	snprintf(want, sizeof(want),
		 "created %s: rate 1/s, burst 1, mode 0644, owner 3456, group 3456\n",
		 mine);
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ(want, r.out);
	EXPECT_STREQ("", r.err);
	EXPECT_SYSFS(mine, "owner", 3456);

	/* --prune takes only its own: nothing of root's here. */
	ASSERT_EQ(0, conf(dir, "r.conf", "[%s]\nrate = 10/s\n", mine));
	ASSERT_EQ(0, rlctl(&r, &user, dir, "apply", "--prune", "--dry-run",
			   dir, NULL));
	EXPECT_EQ(0, r.status);
	snprintf(want, sizeof(want), "would change %s: rate 1/s -> 10/s\n",
		 mine);
	EXPECT_STREQ(want, r.out);

	/* Its own limiter's mode changes in place. */
	ASSERT_EQ(0, conf(dir, "r.conf", "[%s]\nrate = 1/s\nmode = 0640\n",
			  mine));
	ASSERT_EQ(0, rlctl(&r, &user, dir, "apply", dir, NULL));
	snprintf(want, sizeof(want), "changed %s: mode 0644 -> 0640\n", mine);
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ(want, r.out);
	EXPECT_STREQ("", r.err);
	expect_mode(_metadata, mine, "0640");

	/* Root's limiter (mode 0644) is not its to change or to give away. */
	ASSERT_EQ(0, conf(dir, "r.conf",
			  "[%s]\nrate = 20/s\n[%s]\nrate = 1/s\nmode = 0640\n"
			  "[%s]\nrate = 1/s\nowner = 0\n", root, mine, other));
	ASSERT_EQ(0, rlctl(&r, &user, dir, "apply", dir, NULL));
	snprintf(want, sizeof(want),
		 "%s/r.conf:1: cannot change '%s': permission denied (owner 0, group 0, mode 0644)\n"
		 "%s/r.conf:8: cannot create '%s' with this owner and group: that takes root\n"
		 "rlctl: apply: 2 errors: nothing applied\n",
		 dir, root, dir, other);
	EXPECT_EQ(1, r.status);
	EXPECT_STREQ("", r.out);
	EXPECT_STREQ(want, r.err);
	ASSERT_EQ(0, conf(dir, "r.conf", "[%s]\nrate = 10/s\nmode = 0666\n",
			  root));
	ASSERT_EQ(0, rlctl(&r, &user, dir, "apply", dir, NULL));
	snprintf(want, sizeof(want),
		 "%s/r.conf:3: cannot change the mode of '%s' from 0644 to 0666: only its owner (uid 0) or root may\n"
		 "rlctl: apply: 1 error: nothing applied\n", dir, root);
	EXPECT_EQ(1, r.status);
	EXPECT_STREQ("", r.out);
	EXPECT_STREQ(want, r.err);
	EXPECT_SYSFS(root, "rate", 10);
	EXPECT_EQ(0, sysfs_exists(other));

	EXPECT_EQ(0, ks_unl_name(mine));
	EXPECT_EQ(0, ks_unl_name(root));
	remove_dir(dir);
}

/* rlctl set: owner, group and mode in place; concurrency's EBUSY said. */
TEST(set_perm_and_concurrency_busy)
{
	char dir[64], name[48], want[512];
	struct rl_acquire acq;
	struct run r;
	int fd;

	if (access(RLCTL, X_OK))
		SKIP(return, "no " RLCTL);
	make_dir(dir, sizeof(dir));
	ASSERT_NE(0, dir[0]);
	NAME(name, "set");
	ASSERT_EQ(0, conf(dir, "s.conf", "[%s]\nrate = 100/s\n", name));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "apply", dir, NULL));
	ASSERT_EQ(0, r.status)
		show(_metadata, &r);
	fd = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd);

	ASSERT_EQ(0, rlctl(&r, NULL, dir, "set", name, "--mode", "0640",
			   "--owner", "1234", "--group", "4321", NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_STREQ("", r.err);
	expect_mode(_metadata, name, "0640");
	EXPECT_SYSFS(name, "owner", 1234);
	EXPECT_SYSFS(name, "group", 4321);
	EXPECT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &acq));
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "set", name, "--mode", "0800",
			   NULL));
	EXPECT_EQ(2, r.status);
	expect_mode(_metadata, name, "0640");

	ASSERT_EQ(0, rlctl(&r, NULL, dir, "set", name, "concurrency=2",
			   NULL));
	snprintf(want, sizeof(want),
		 "rlctl: cannot set concurrency=2 on '%s': clients are attached, and it cannot go between 0 and non-zero under them: stop them, or rm it and create it again\n",
		 name);
	EXPECT_EQ(1, r.status);
	EXPECT_STREQ(want, r.err);
	EXPECT_SYSFS(name, "concurrency", 0);
	EXPECT_EQ(0, ks_acq(fd, 1, now_ns() + 10 * NS_PER_SEC, 0, &acq));
	close(fd);
	ASSERT_EQ(0, rlctl(&r, NULL, dir, "set", name, "concurrency=2",
			   NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_SYSFS(name, "concurrency", 2);
	EXPECT_EQ(0, ks_unl_name(name));
	remove_dir(dir);
}

TEST_HARNESS_MAIN
