// SPDX-License-Identifier: GPL-2.0-only
/*
 * ratelimit_d_test.c - host test of the reader of ratelimit.d(5) files
 * that rlctl and rlsyncd share (tools/common/ratelimit_d.c): what it
 * passes on of a file, as rlctl (strict: the whole file is its) and as
 * rlsyncd reads it (only its [global NAME] sections), and what it
 * reports as "FILE:LINE: what is wrong". conf_test.c tests rlctl's
 * sections on top of it.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE	/* open_memstream(), fmemopen() */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#include "ratelimit_d.h"

/* A reader that writes what it is given to @log, one line each. */
struct rec {
	struct rld rd;
	bool global;	/* own the [global NAME] sections, as rlsyncd */
	char *log, *errs;
	size_t loglen, errlen;
	FILE *out;
};

static struct rec *rec_of(struct rld *r)
{
	return (struct rec *)((char *)r - offsetof(struct rec, rd));
}

static int on_header(struct rld *r, char *name)
{
	struct rec *x = rec_of(r);
	char *g = name ? rld_global(name) : NULL;

	fprintf(x->out, "%u [%s]\n", r->line, name ? name : "(bad)");
	return x->global ? !!g : name && !g;
}

static int on_setting(struct rld *r, char *key, char *value)
{
	fprintf(rec_of(r)->out, "%u %s=%s\n", r->line, key, value);
	return 0;
}

static void on_end(struct rld *r)
{
	fprintf(rec_of(r)->out, "end %s\n", r->file);
}

static void rec_start(struct rec *x, bool global)
{
	memset(x, 0, sizeof(*x));
	rld_init(&x->rd);
	x->global = global;
	x->rd.strict = !global;
	x->rd.prefix = global ? "rlsyncd: " : "";
	x->rd.header = on_header;
	x->rd.setting = on_setting;
	x->rd.end = on_end;
	x->out = open_memstream(&x->log, &x->loglen);
	x->rd.err = open_memstream(&x->errs, &x->errlen);
}

static void rec_stop(struct rec *x)
{
	fclose(x->out);
	fclose(x->rd.err);
}

static void rec_free(struct rec *x)
{
	rld_free(&x->rd);
	free(x->log);
	free(x->errs);
}

static void parse(struct rec *x, bool global, const char *text, size_t len)
{
	FILE *in = fmemopen((void *)text, len, "r");

	rec_start(x, global);
	if (!in || rld_parse(&x->rd, "t.conf", in))
		abort();
	fclose(in);
	rec_stop(x);
}

static const char text[] =
	"a = 1\n"
	"[web]  # rlctl's\n"
	"rate = 10/s\n"
	"junk\n"
	"\t[ global  web ]\n"
	"rate=100/s \t\r\n"
	"bad line\n"
	"[oops\n"
	"x = 1\n"
	"[global db]\n"
	"redis =\n";

TEST(as_rlctl)
{
	struct rec x;

	parse(&x, false, text, sizeof(text) - 1);
	EXPECT_STREQ("1 a=1\n2 [web]\n3 rate=10/s\n5 [global  web]\n"
		     "8 [(bad)]\n10 [global db]\nend t.conf\n", x.log);
	EXPECT_STREQ("t.conf:4: expected KEY = VALUE or [NAME], not 'junk'\n"
		     "t.conf:7: expected KEY = VALUE or [NAME], not 'bad line'\n"
		     "t.conf:8: expected [NAME] alone on the line, not '[oops'\n",
		     x.errs);
	EXPECT_EQ(3, x.rd.errors);
	rec_free(&x);
}

TEST(as_rlsyncd)
{
	struct rec x;

	parse(&x, true, text, sizeof(text) - 1);
	EXPECT_STREQ("2 [web]\n5 [global  web]\n6 rate=100/s\n8 [(bad)]\n"
		     "10 [global db]\n11 redis=\nend t.conf\n", x.log);
	EXPECT_STREQ("rlsyncd: t.conf:7: expected KEY = VALUE or [NAME], not 'bad line'\n"
		     "rlsyncd: t.conf:8: expected [NAME] alone on the line, not '[oops'\n",
		     x.errs);
	EXPECT_EQ(2, x.rd.errors);
	rec_free(&x);
}

TEST(global_names)
{
	char a[] = "global  db ", b[] = "globaldb", c[] = "global\tx";

	EXPECT_STREQ("db", rld_global(a));
	EXPECT_EQ(NULL, rld_global(b));
	EXPECT_STREQ("x", rld_global(c));
}

TEST(nul_byte)
{
	static const char t[] = "[global a]\nk = v\0w\nk2 = v2\n";
	struct rec x;

	parse(&x, true, t, sizeof(t) - 1);
	EXPECT_STREQ("1 [global a]\n3 k2=v2\nend t.conf\n", x.log);
	EXPECT_STREQ("rlsyncd: t.conf:2: NUL byte in the line\n", x.errs);
	rec_free(&x);
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		abort();
}

/* *.conf files in byte order, others skipped; paths as given. */
TEST(directory)
{
	char dir[] = "/tmp/rld_test.XXXXXX", path[64], want[512], cmd[64];
	struct rec x;

	ASSERT_NE(NULL, mkdtemp(dir));
	put(dir, "b.conf", "[global b]\n");
	put(dir, "a.conf", "[global a]\n");
	put(dir, "B.conf", "[global B]\n");
	put(dir, ".hidden.conf", "[global h]\n");
	put(dir, "c.conf.orig", "[global c]\n");
	snprintf(path, sizeof(path), "%s/d.conf", dir);
	ASSERT_EQ(0, mkdir(path, 0755));
	snprintf(path, sizeof(path), "%s/e.conf", dir);
	ASSERT_EQ(0, symlink("nowhere", path));
	snprintf(path, sizeof(path), "%s/", dir);
	rec_start(&x, true);
	EXPECT_EQ(0, rld_load(&x.rd, path));
	snprintf(path, sizeof(path), "%s/none", dir);
	EXPECT_EQ(0, rld_load(&x.rd, path));
	rec_stop(&x);
	snprintf(want, sizeof(want),
		 "1 [global B]\nend %s/B.conf\n1 [global a]\nend %s/a.conf\n"
		 "1 [global b]\nend %s/b.conf\n", dir, dir, dir);
	EXPECT_STREQ(want, x.log);
	snprintf(want, sizeof(want),
		 "rlsyncd: %s/e.conf: No such file or directory\n"
		 "rlsyncd: %s/none: No such file or directory\n", dir, dir);
	EXPECT_STREQ(want, x.errs);
	EXPECT_EQ(2, x.rd.errors);
	rec_free(&x);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	EXPECT_EQ(0, system(cmd));
}

TEST_HARNESS_MAIN
