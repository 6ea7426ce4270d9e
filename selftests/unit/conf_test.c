// SPDX-License-Identifier: GPL-2.0-only
/*
 * conf_test.c - host test of tools/rlctl_conf.c, the parser of the files
 * of "rlctl apply" (ratelimit.d(5)): what a good file gives, and that
 * every kind of bad file is reported as "FILE:LINE: what is wrong".
 *
 * Prints TAP: "1..N", then "ok N - what" or "not ok N - what" per case.
 * Exits 1 when any case fails.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE	/* open_memstream(), fmemopen() */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rlctl_conf.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define SEC		1000000000ULL
#define NO_RATE		"has no rate (rate = RATE/PERIOD, or unlimited)"
#define BAD_RATE	"(RATE[/PERIOD][:BURST] such as 100/s, 10MiB/s or 1/1h, or unlimited)"
#define BAD_COUNT	"(a count such as 50, 10k or 64KiB)"
#define BAD_RANGE	"(a period of 1ns .. 1d, burst x period up to 2^63 ns)"
#define BAD_NAME	"(1 to 63 of A-Z a-z 0-9 . _ -, not starting with '.')"

/* A file and every line the parser must print for it. */
struct bad_case {
	const char *text;
	const char *errors;
};

static const struct bad_case bad[] = {
	{ "[a]\nrate = 1/s\nfoo = 1\n", "t.conf:3: unknown key 'foo'\n" },
	{ "[a]\nrate = 100/x\n",
	  "t.conf:2: invalid rate '100/x' " BAD_RATE "\n" },
	{ "[a]\nrate = 10 /s\n",
	  "t.conf:2: invalid rate '10 /s' " BAD_RATE "\n" },
	{ "[a]\nrate = 1/25h\n",
	  "t.conf:2: rate '1/25h' out of range " BAD_RANGE "\n" },
	{ "[a]\nburst = 5\n", "t.conf:1: [a] " NO_RATE "\n" },
	{ "# nothing\n[a]\n\n", "t.conf:2: [a] " NO_RATE "\n" },
	{ "[a]\n[b]\nrate = 1/s\n", "t.conf:1: [a] " NO_RATE "\n" },
	{ "rate = 1/s\n",
	  "t.conf:1: 'rate' outside a section: start one with [NAME]\n" },
	{ "[a]\nrate = 1/s\nrate = 2/s\n",
	  "t.conf:3: duplicate key 'rate' (first at line 2)\n" },
	{ "[a]\nrate = 1/s\n\n[a]\nrate = 1/s\n",
	  "t.conf:4: duplicate limiter 'a' (first at t.conf:1)\n" },
	{ "[.a]\nrate = 1/s\n",
	  "t.conf:1: invalid limiter name '.a' " BAD_NAME "\n" },
	{ "[count]\nrate = 1/s\n",
	  "t.conf:1: invalid limiter name 'count' " BAD_NAME "\n" },
	{ "[a/b]\n", "t.conf:1: invalid limiter name 'a/b' " BAD_NAME "\n" },
	{ "[]\n", "t.conf:1: invalid limiter name '' " BAD_NAME "\n" },
	{ "[a\nrate = 1/s\n",
	  "t.conf:1: expected [NAME] alone on the line, not '[a'\n" },
	{ "[a] x\n",
	  "t.conf:1: expected [NAME] alone on the line, not '[a] x'\n" },
	{ "[a]\nrate 1/s\n",
	  "t.conf:2: expected KEY = VALUE or [NAME], not 'rate 1/s'\n"
	  "t.conf:1: [a] " NO_RATE "\n" },
	{ "[a]\nrate =   # none\n",
	  "t.conf:2: rate has no value\n" },
	{ "[a]\nrate = 1/s:5\nburst = 3\n",
	  "t.conf:3: burst given twice: here and in the rate at line 2\n" },
	{ "[a]\nrate = 1/s\nburst = x\n",
	  "t.conf:3: invalid burst 'x' " BAD_COUNT "\n" },
	{ "[a]\nrate = 1/s\nburst = 99999999999999999999\n",
	  "t.conf:3: burst '99999999999999999999' out of range\n" },
	{ "[a]\nrate = 1/s\nconcurrency = -1\n",
	  "t.conf:3: invalid concurrency '-1' " BAD_COUNT "\n" },
	{ "[a]\nrate = 1/s\nbacklog = 1/s\n",
	  "t.conf:3: invalid backlog '1/s' " BAD_COUNT "\n" },
	{ "[a]\nrate = 1/s\nfairness = 1000001\n",
	  "t.conf:3: invalid fairness '1000001' (0 .. 1000000)\n" },
	{ "[a]\nrate = 1/s\ncatchup = 999\n",
	  "t.conf:3: invalid catchup '999' (per-mille, 1000 .. 100000, or 0)\n" },
	{ "[a]\nrate = 1/s\ncatchup = 100001\n",
	  "t.conf:3: invalid catchup '100001' (per-mille, 1000 .. 100000, or 0)\n" },
	{ "[a]\nrate = 1/s\nbacklog = 10k\nburst = 5\n",
	  "t.conf:3: backlog 10000 exceeds 1000 x burst (5)\n" },
	{ "[a]\nrate = 1/ns\nburst = 9223372036854775809\n",
	  "t.conf:3: burst 9223372036854775809 x period 1 ns exceeds 2^63\n" },
	{ "[a]\nrate = unlimited\nunlimited = no\n",
	  "t.conf:3: unlimited = no contradicts rate = unlimited at line 2\n" },
	{ "[a]\nrate = 1/s\nunlimited = maybe\n",
	  "t.conf:3: invalid unlimited 'maybe' (yes or no)\n" },
	{ "[a]\nrate = 1/s\nkeyed = maybe\n",
	  "t.conf:3: invalid keyed 'maybe' (yes or no)\n" },
	{ "[a]\nrate = 1/s\nkeys = 10\n",
	  "t.conf:3: keys without keyed = yes: only a keyed limiter has keys\n" },
	{ "[a]\nrate = 1/s\nkeyed = no\nkeys = 10\n",
	  "t.conf:4: keys without keyed = yes: only a keyed limiter has keys\n" },
	{ "[a]\nrate = 1/s\nmode = 0999\n",
	  "t.conf:3: invalid mode '0999' (octal, 0 .. 0777)\n" },
	{ "[a]\nrate = 1/s\nmode = 1000\n",
	  "t.conf:3: invalid mode '1000' (octal, 0 .. 0777)\n" },
	{ "[a]\nrate = 1/s\nmode = rw\n",
	  "t.conf:3: invalid mode 'rw' (octal, 0 .. 0777)\n" },
	{ "[a]\nrate = 1/s\nowner = nosuch\n",
	  "t.conf:3: unknown user 'nosuch'\n" },
	{ "[a]\nrate = 1/s\nowner = 4294967295\n",
	  "t.conf:3: unknown user '4294967295'\n" },
	{ "[a]\nrate = 1/s\nowner = rl:x\n",
	  "t.conf:3: unknown user 'rl:x'\n" },
	{ "[a]\nrate = 1/s\ngroup = nosuch\n",
	  "t.conf:3: unknown group 'nosuch'\n" },
	{ "[a]\nfoo = 1\nbar = 2\n",
	  "t.conf:2: unknown key 'foo'\nt.conf:3: unknown key 'bar'\n"
	  "t.conf:1: [a] " NO_RATE "\n" },
	/* Keys under a bad header are not reported once more. */
	{ "[a b]\nrate = 1/s\nfoo = 1\n[c]\nrate = 1/x\n",
	  "t.conf:1: invalid limiter name 'a b' " BAD_NAME "\n"
	  "t.conf:5: invalid rate '1/x' " BAD_RATE "\n" },
};

#define N_OTHER		21	/* cases besides bad[] */

static int test_num;
static int failures;
static char dir[32];
/* A user and a group of the system's databases (NSS), not root if any. */
static char owner_name[64], group_name[64];
static uint32_t owner_id, group_id;

static void report(bool ok, const char *what, const char *arg)
{
	test_num++;
	if (!ok)
		failures++;
	printf("%sok %d - %s", ok ? "" : "not ", test_num, what);
	if (arg) {
		printf(" '");
		for (; *arg; arg++) {
			if (*arg == '\n')
				printf("\\n");
			else
				putchar(*arg);
		}
		putchar('\'');
	}
	putchar('\n');
}

/* A parser whose errors go to a buffer. */
struct run {
	struct rlconf c;
	char *errors;
	size_t len;
};

static void run_start(struct run *r)
{
	rlconf_init(&r->c);
	r->errors = NULL;
	r->c.rd.err = open_memstream(&r->errors, &r->len);
	if (!r->c.rd.err)
		exit(2);
}

static void run_end(struct run *r)
{
	fclose(r->c.rd.err);
	r->c.rd.err = NULL;
}

static void run_free(struct run *r)
{
	rlconf_free(&r->c);
	free(r->errors);
}

/* Parse @len bytes of @text as the file "t.conf". */
static void run_text(struct run *r, const char *text, size_t len)
{
	FILE *in;

	run_start(r);
	in = fmemopen((void *)text, len, "r");
	if (!in || rlconf_parse(&r->c, "t.conf", in))
		exit(2);
	fclose(in);
	run_end(r);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f))
		exit(2);
}

static void test_bad(const struct bad_case *b)
{
	const char *want = b->errors;
	struct run r;
	size_t lines = 0;
	const char *p;
	bool ok;

	for (p = want; *p; p++)
		lines += *p == '\n';
	run_text(&r, b->text, strlen(b->text));
	ok = !strcmp(r.errors, want) && r.c.rd.errors == lines;
	if (!ok)
		printf("# got %u errors:\n# %s", r.c.rd.errors, r.errors);
	report(ok, "reject", b->text);
	run_free(&r);
}

static bool same_cfg(const struct rl_config *a, const struct rl_config *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static void test_full(void)
{
	static const char fmt[] =
		"# a comment\n"
		"\n"
		"  [api]  # the API\n"
		"rate=10MiB/s\r\n"
		"\tburst = 1MiB\n"
		"concurrency = 8\n"
		"fairness = 5\n"
		"catchup = 1500\n"
		"backlog = 2k\n"
		"unlimited = no\n"
		"mode = 640\n"
		"owner = %s\n"
		"group = %s\n"
		"[slow]\n"
		"rate = 1/1h\n";
	const struct rl_config want = {
		.rate = 10 << 20, .period_ns = SEC, .burst = 1 << 20,
		.concurrency = 8, .fairness = 5, .catchup = 1500,
		.backlog = 2000,
	};
	const struct rl_config slow = { .rate = 1, .period_ns = 3600 * SEC };
	char text[sizeof(fmt) + sizeof(owner_name) + sizeof(group_name)];
	const struct rlconf_limiter *l, *s;
	struct run r;
	bool ok;
	int k;

	snprintf(text, sizeof(text), fmt, owner_name, group_name);
	run_text(&r, text, strlen(text));
	l = rlconf_find(&r.c, "api");
	s = rlconf_find(&r.c, "slow");
	ok = r.c.rd.errors == 0 && !*r.errors && r.c.n == 2 && l && s &&
	     !rlconf_find(&r.c, "none");
	report(ok, "a good file: no errors, two sections", NULL);
	if (!ok) {
		printf("# %s", r.errors);
		run_free(&r);
		return;
	}
	report(same_cfg(&l->cfg, &want), "every limit key", NULL);
	report(l->mode == 0640 && l->uid == owner_id && l->gid == group_id &&
	       l->key_line[RLCONF_OWNER] == 12 &&
	       l->key_line[RLCONF_GROUP] == 13,
	       "mode, owner and group by name", NULL);
	report(!strcmp(l->file, "t.conf") && l->line == 3 &&
	       l->key_line[RLCONF_RATE] == 4 && l->key_line[RLCONF_BURST] == 5,
	       "file and lines", NULL);
	ok = same_cfg(&s->cfg, &slow) && s->mode == RLCONF_DEFAULT_MODE &&
	     s->line == 14;
	for (k = 0; k < RLCONF_NKEYS; k++)
		ok &= (k == RLCONF_RATE) == (s->key_line[k] != 0);
	report(ok, "defaults: burst 0 (the module's), mode 0644, no owner",
	       NULL);
	run_free(&r);
}

/* A few small files and what their section must hold. */
static void test_good(const char *text, const struct rl_config *want,
		      uint32_t mode, uint32_t uid, uint32_t gid)
{
	struct run r;
	bool ok;

	run_text(&r, text, strlen(text));
	ok = r.c.rd.errors == 0 && r.c.n == 1 &&
	     same_cfg(&r.c.lim[0].cfg, want) && r.c.lim[0].mode == mode &&
	     r.c.lim[0].uid == uid && r.c.lim[0].gid == gid;
	if (!ok)
		printf("# %s", r.errors ? r.errors : "");
	report(ok, "parse", text);
	run_free(&r);
}

static void test_goods(void)
{
	const struct rl_config rate_burst = {
		.rate = 100, .period_ns = SEC, .burst = 20,
	};
	const struct rl_config sem = {
		.period_ns = SEC, .burst = 3, .concurrency = 3,
		.flags = RL_CONFIG_UNLIMITED,
	};
	const struct rl_config sem_burst = {
		.period_ns = SEC, .burst = 1, .concurrency = 3,
		.flags = RL_CONFIG_UNLIMITED,
	};
	const struct rl_config unl = {
		.rate = 100, .period_ns = SEC, .burst = 4, .concurrency = 4,
		.flags = RL_CONFIG_UNLIMITED,
	};
	const struct rl_config big = {
		.period_ns = SEC, .burst = 1000000, .concurrency = 1000000,
		.flags = RL_CONFIG_UNLIMITED,
	};
	const struct rl_config keyed = {
		.rate = 10, .period_ns = SEC, .burst = 5,
		.flags = RL_CONFIG_KEYED, .keys = 100000,
	};
	const struct rl_config keyed_dflt = {
		.rate = 10, .period_ns = SEC, .flags = RL_CONFIG_KEYED,
	};
	const struct rl_config day = {
		.period_ns = 86400 * SEC, .burst = 106751,
		.concurrency = 1ULL << 40, .flags = RL_CONFIG_UNLIMITED,
	};

	test_good("[a]\nrate = 100/s:20\n", &rate_burst, 0644, 0, 0);
	test_good("[a]\nrate = 100\nburst = 20\n", &rate_burst, 0644, 0, 0);
	test_good("[a]\nrate = unlimited\nconcurrency = 3\n", &sem, 0644,
		  0, 0);
	test_good("[a]\nrate = unlimited\nconcurrency = 3\nburst = 1\n",
		  &sem_burst, 0644, 0, 0);
	test_good("[a]\nrate = 100/s\nunlimited = yes\nconcurrency = 4\n",
		  &unl, 0644, 0, 0);
	test_good("[a]\nrate = unlimited\nconcurrency = 1M\nmode = 0\n"
		  "owner = 0\ngroup = 4294967294\n", &big, 0, 0, 4294967294U);
	/* rlsyncd's [global NAME] sections are skipped, keys and all. */
	test_good("[a]\nrate = 100/s:20\n[global a]\nrate = 5000/s\n"
		  "lease = 10s\n", &rate_burst, 0644, 0, 0);
	test_good("[global a]\nredis = unix:/x\n[ a ]\nrate = 100/s:20\n",
		  &rate_burst, 0644, 0, 0);
	/* A keyed family, with its cap on keys or the module's default. */
	test_good("[a]\nrate = 10/s:5\nkeyed = yes\nkeys = 100k\n", &keyed,
		  0644, 0, 0);
	test_good("[a]\nrate = 10/s\nkeyed = on\n", &keyed_dflt, 0644, 0, 0);
	/* The semaphore's burst, cut to what a one-day period allows. */
	test_good("[a]\nrate = 0/d\nunlimited = 1\nconcurrency = 1Ti\n",
		  &day, 0644, 0, 0);
}

static void test_nul(void)
{
	static const char text[] = "[a]\nrate = 1/s\0x\n";
	struct run r;

	run_text(&r, text, sizeof(text) - 1);
	report(r.c.rd.errors == 2 &&
	       !strcmp(r.errors, "t.conf:2: NUL byte in the line\n"
		       "t.conf:1: [a] " NO_RATE "\n"),
	       "a NUL byte: the line is not read", NULL);
	run_free(&r);
}

/* A directory: its *.conf files in byte order, each error with its path. */
static void test_dir(void)
{
	char d[128], sub[160], path[192], want[1024];
	struct run r;
	bool ok;

	snprintf(d, sizeof(d), "%s/ratelimit.d", dir);
	snprintf(sub, sizeof(sub), "%s/empty.d", dir);
	if (mkdir(d, 0755) || mkdir(sub, 0755))
		exit(2);

	run_start(&r);
	ok = !rlconf_load(&r.c, sub);
	run_end(&r);
	report(ok && r.c.rd.errors == 0 && r.c.n == 0 && !*r.errors,
	       "an empty directory: nothing, no error", NULL);
	run_free(&r);

#define FILE_IN(name, text) do {					\
		snprintf(path, sizeof(path), "%s/%s", d, name);		\
		write_file(path, text);					\
	} while (0)
	FILE_IN("b.conf", "[b]\nrate = 2/s\n");
	FILE_IN("a.conf", "[a]\nrate = 1/s\n");
	FILE_IN("B.conf", "[B]\nrate = 3/s\n");
	FILE_IN(".hidden.conf", "junk\n");
	FILE_IN("notes.txt", "junk\n");
	FILE_IN("a.conf~", "junk\n");
	snprintf(path, sizeof(path), "%s/dir.conf", d);
	if (mkdir(path, 0755))
		exit(2);

	run_start(&r);
	ok = !rlconf_load(&r.c, d);
	run_end(&r);
	ok = ok && r.c.rd.errors == 0 && r.c.n == 3 &&
	     !strcmp(r.c.lim[0].name, "B") && !strcmp(r.c.lim[1].name, "a") &&
	     !strcmp(r.c.lim[2].name, "b");
	snprintf(path, sizeof(path), "%s/b.conf", d);
	report(ok && !strcmp(r.c.lim[2].file, path),
	       "a directory: *.conf in byte order, no dot files, no others",
	       NULL);
	run_free(&r);

	FILE_IN("c.conf", "[c]\nrate = 1/x\n[a]\nrate = 1/s\n");
	run_start(&r);
	ok = !rlconf_load(&r.c, d);
	snprintf(path, sizeof(path), "%s/nothere", dir);
	ok = ok && !rlconf_load(&r.c, path);
	run_end(&r);
	snprintf(want, sizeof(want),
		 "%s/c.conf:2: invalid rate '1/x' " BAD_RATE "\n"
		 "%s/c.conf:3: duplicate limiter 'a' (first at %s/a.conf:1)\n"
		 "%s/nothere: No such file or directory\n", d, d, d, dir);
	ok = ok && r.c.rd.errors == 3 && !strcmp(r.errors, want);
	if (!ok)
		printf("# %s", r.errors);
	report(ok, "errors across files and paths, each with its file",
	       NULL);
	run_free(&r);
#undef FILE_IN
}

/* The example the packages ship (run from the top of the tree). */
static void test_example(void)
{
	struct run r;
	bool ok;

	run_start(&r);
	ok = !rlconf_load(&r.c, "dist/example.conf");
	run_end(&r);
	ok = ok && r.c.rd.errors == 0 && r.c.n == 4 &&
	     rlconf_find(&r.c, "example");
	if (!ok)
		printf("# %s", r.errors);
	report(ok, "the shipped example, dist/example.conf", NULL);
	run_free(&r);
}

static void cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		printf("# cannot remove %s\n", dir);
}

static void pick_ids(void)
{
	struct passwd *pw;
	struct group *gr;

	snprintf(owner_name, sizeof(owner_name), "root");
	snprintf(group_name, sizeof(group_name), "root");
	while ((pw = getpwent())) {
		if (pw->pw_uid && strlen(pw->pw_name) < sizeof(owner_name)) {
			snprintf(owner_name, sizeof(owner_name), "%s", pw->pw_name);
			owner_id = pw->pw_uid;
			break;
		}
	}
	endpwent();
	while ((gr = getgrent())) {
		if (gr->gr_gid && strlen(gr->gr_name) < sizeof(group_name)) {
			snprintf(group_name, sizeof(group_name), "%s", gr->gr_name);
			group_id = gr->gr_gid;
			break;
		}
	}
	endgrent();
	printf("# owner %s (%u), group %s (%u)\n", owner_name, owner_id,
	       group_name, group_id);
}

int main(void)
{
	size_t i;

	strcpy(dir, "/tmp/rlconf_test.XXXXXX");
	if (!mkdtemp(dir))
		return 2;
	atexit(cleanup);
	pick_ids();

	printf("1..%zu\n", ARRAY_SIZE(bad) + N_OTHER);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		test_bad(&bad[i]);
	test_full();
	test_goods();
	test_nul();
	test_dir();
	test_example();
	if (test_num != (int)(ARRAY_SIZE(bad) + N_OTHER)) {
		printf("# ran %d cases\n", test_num);
		failures++;
	}
	return failures ? 1 : 0;
}
