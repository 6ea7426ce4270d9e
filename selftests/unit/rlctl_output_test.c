// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_output_test.c - host test of what rlctl show, list and watch
 * print, text and --json, against a fake sysfs tree (RLCTL_SYSFS) made
 * in a temporary directory: no module is needed.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#include "tool_run.h"

#define SEC		1000000000ULL
#define FFFD3		"\\ufffd\\ufffd\\ufffd"

/* The lines of stat every limiter has, all 0 in a fake one but mode. */
static const char *const plain_attrs[] = {
	"owner", "group", "persistent",
	"clients", "granted", "requests", "immediate", "waited",
	"wait_ns_total", "wait_ns_max", "timeouts", "interrupted",
	"rejected", "waiters", "available", "held",
};

static int put_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_LEN];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ret = fputs(text, f) < 0;
	return fclose(f) || ret ? -1 : 0;
}

/*
 * Limiter @name under @root: @rate per @period_ns, clients and wait
 * histogram as given (the files' whole text), every other attribute 0
 * but mode 0644.
 */
static int fake_limiter(const char *root, const char *name, uint64_t rate,
			uint64_t period_ns, const char *clients,
			const char *hist)
{
	char dir[PATH_LEN], text[1024];
	size_t i;
	int len = 0;

	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	if (mkdir(dir, 0755))
		return -1;
	for (i = 0; i < ARRAY_SIZE(plain_attrs); i++)
		len += snprintf(text + len, sizeof(text) - len, "%s 0\n",
				plain_attrs[i]);
	snprintf(text + len, sizeof(text) - len, "mode 0644\n");
	if (put_file(dir, "stat", text))
		return -1;
	snprintf(text, sizeof(text),
		 "rate %llu\nperiod_ns %llu\nburst 0\nunlimited 0\nconcurrency 0\nweight 1\n",
		 (unsigned long long)rate, (unsigned long long)period_ns);
	if (put_file(dir, "config", text))
		return -1;
	return put_file(dir, "client_list", clients) ||
	       put_file(dir, "wait_histogram", hist) ? -1 : 0;
}

/* The whole of a small file @path into @buf: 0 or -1. */
static int file_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	return fclose(f) ? -1 : 0;
}

static int rm_one(const char *path, const struct stat *sb, int type,
		  struct FTW *ftw)
{
	return remove(path);
}

FIXTURE(tree) {
	char root[64];
	struct run r;
};

FIXTURE_SETUP(tree)
{
	snprintf(self->root, sizeof(self->root), "/tmp/rlctl-output.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->root));
}

FIXTURE_TEARDOWN(tree)
{
	nftw(self->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Run rlctl with @args on the fake tree: status 0, nothing on stderr. */
static void run_rlctl(struct __test_metadata *_metadata, const char *root,
		      const char *const *args, struct run *r)
{
	memset(r, 0, sizeof(*r));
	ASSERT_EQ(0, run_tool("rlctl", args, root, r));
	if (r->status || r->err[0])
		TH_LOG("%s %s: status %d, stderr \"%s\"", "rlctl", args[0],
		       r->status, r->err);
	ASSERT_EQ(0, r->status);
	ASSERT_STREQ("", r->err);
}

/* @want is in @out; @out in the log when not. */
static void expect_has(struct __test_metadata *_metadata, const char *out,
		       const char *want)
{
	if (!strstr(out, want))
		TH_LOG("no %s in: %s", want, out);
	EXPECT_NE(NULL, strstr(out, want));
}

#define EXPECT_HAS(out, want)	expect_has(_metadata, out, want)

/*
 * A comm is JSON as valid UTF-8: a UTF-8 comm as it is, escapes for '"',
 * '\' and control characters, \ufffd for each byte that is not UTF-8.
 */
TEST_F(tree, json_comm_utf8)
{
	static const char *const args[] = { "--json", "show", "api", NULL };
	static const char clients[] =
		"101 caf\xc3\xa9 5 0 0 1 0\n"
		"102 \xe2\x82\xac \xf0\x9f\x98\x80 1 0 0 1 0\n"
		"103 a\xff\x62 1 0 0 1 0\n"
		"104 cut\xe2\x82 1 0 0 1 0\n"
		"105 \xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80 1 0 0 1 0\n"
		"106 q\"\\\x01\x7f 1 0 0 1 0\n";

	ASSERT_EQ(0, fake_limiter(self->root, "api", 1, SEC, clients, ""));
	run_rlctl(_metadata, self->root, args, &self->r);
	EXPECT_HAS(self->r.out, "\"comm\":\"caf\xc3\xa9\"");
	EXPECT_HAS(self->r.out, "\"comm\":\"\xe2\x82\xac \xf0\x9f\x98\x80\"");
	EXPECT_HAS(self->r.out, "\"comm\":\"a\\ufffdb\"");
	EXPECT_HAS(self->r.out, "\"comm\":\"cut\\ufffd\\ufffd\"");
	/* Overlong '/', a surrogate, beyond U+10FFFF: a U+FFFD per byte. */
	EXPECT_HAS(self->r.out, "\"comm\":\"" FFFD3 FFFD3 FFFD3 "\"");
	EXPECT_HAS(self->r.out, "\"comm\":\"q\\\"\\\\\\u0001\\u007f\"");
}

/*
 * 1/h, 1/day and 10^9/s read right: in show's text in a unit of time
 * that gets whole tokens, in watch's text to 4 significant digits, in
 * JSON with the digits of the rate (not "0.000").
 */
TEST_F(tree, rates_small_and_large)
{
	static const char *const list[] = { "--json", "list", NULL };
	static const char *const show_h[] = { "show", "hour", NULL };
	static const char *const show_d[] = { "show", "day", NULL };
	static const char *const show_f[] = { "show", "fast", NULL };
	static const char *const show_m[] = { "show", "min", NULL };
	static const char *const show_e[] = { "show", "edge", NULL };
	static const char *const watch[] = { "watch", "hour", "-i", "0.001",
					     "-n", "1", NULL };
	static const char *const watch_j[] = { "--json", "watch", "day", "-i",
					       "0.001", "-n", "1", NULL };

	ASSERT_EQ(0, fake_limiter(self->root, "hour", 1, 3600 * SEC, "", ""));
	ASSERT_EQ(0, fake_limiter(self->root, "day", 1, 86400 * SEC, "", ""));
	ASSERT_EQ(0, fake_limiter(self->root, "fast", SEC, SEC, "", ""));
	ASSERT_EQ(0, fake_limiter(self->root, "min", 1, 90 * SEC, "", ""));
	ASSERT_EQ(0, fake_limiter(self->root, "edge", 99999, 10 * SEC, "", ""));

	run_rlctl(_metadata, self->root, list, &self->r);
	EXPECT_HAS(self->r.out, "\"spec\":\"1/h\",\"target_per_s\":0.0002777777778,");
	EXPECT_HAS(self->r.out, "\"spec\":\"1/24h\",\"target_per_s\":1.157407407e-05,");
	EXPECT_HAS(self->r.out, "\"target_per_s\":1000000000,");
	EXPECT_HAS(self->r.out, "\"spec\":\"1/90s\",\"target_per_s\":0.01111111111,");

	run_rlctl(_metadata, self->root, show_h, &self->r);
	EXPECT_HAS(self->r.out, "\nlimiter        1/h (1 tokens/h)\n");
	run_rlctl(_metadata, self->root, show_d, &self->r);
	EXPECT_HAS(self->r.out, "\nlimiter        1/24h (1 tokens/day)\n");
	run_rlctl(_metadata, self->root, show_f, &self->r);
	EXPECT_HAS(self->r.out,
		   "\nlimiter        1000000000/s (1000000000 tokens/s)\n");
	run_rlctl(_metadata, self->root, show_m, &self->r);
	EXPECT_HAS(self->r.out, "\nlimiter        1/90s (40 tokens/h)\n");
	/* 9999.9/s: rounds up to a whole number, not to "1e+04". */
	run_rlctl(_metadata, self->root, show_e, &self->r);
	EXPECT_HAS(self->r.out, "\nlimiter        99999/10s (10000 tokens/s)\n");

	run_rlctl(_metadata, self->root, watch, &self->r);
	EXPECT_HAS(self->r.out, "      0.0002778              0        0            -\n");
	run_rlctl(_metadata, self->root, watch_j, &self->r);
	EXPECT_HAS(self->r.out,
		   ",\"target_per_s\":1.157407407e-05,\"achieved_per_s\":0,");
}

/* Percentiles of short waits: in ns, not "<= 0.000 ms". */
TEST_F(tree, wait_percentiles_short)
{
	static const char *const zero[] = { "show", "zero", NULL };
	static const char *const mixed[] = { "show", "mixed", NULL };

	ASSERT_EQ(0, fake_limiter(self->root, "zero", 1, SEC, "",
				  "0 7\n1 0\n2 0\n"));
	ASSERT_EQ(0, fake_limiter(self->root, "mixed", 1, SEC, "",
				  "0 50\n1 40\n2048 9\n2097152 1\n"));

	run_rlctl(_metadata, self->root, zero, &self->r);
	EXPECT_HAS(self->r.out,
		   "\nwait p50/90/99 <= 0 ns, <= 0 ns, <= 0 ns  (of 7 waits)\n");
	run_rlctl(_metadata, self->root, mixed, &self->r);
	EXPECT_HAS(self->r.out,
		   "\nwait p50/90/99 <= 0 ns, <= 2 ns, <= 4.1 us  (of 100 waits)\n");
}

/*
 * Every sample of rlctl export follows the HELP and TYPE lines of its
 * family; the histogram's buckets are cumulative, ending at the count.
 */
static void expect_families(struct __test_metadata *_metadata, char *out)
{
	char family[128] = "", label[128] = "", *line, *save = NULL, *sp;
	unsigned long long v, last = 0;
	int help = 0;

	for (line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "# HELP ", 7)) {
			sp = strchr(line + 7, ' ');
			ASSERT_NE(NULL, sp);
			snprintf(family, sizeof(family), "%.*s",
				 (int)(sp - line - 7), line + 7);
			help = 1;
			last = 0;
			continue;
		}
		if (!strncmp(line, "# TYPE ", 7)) {
			EXPECT_EQ(1, help);
			EXPECT_EQ(0, strncmp(line + 7, family, strlen(family)));
			help = 2;
			continue;
		}
		EXPECT_EQ(2, help) TH_LOG("no HELP and TYPE before %s", line);
		EXPECT_EQ(0, strncmp(line, family, strlen(family)))
			TH_LOG("%s is not of %s", line, family);
		sp = strchr(line, '{');
		EXPECT_TRUE(sp && !strncmp(sp, "{limiter=\"", 10))
			TH_LOG("%s has no limiter label", line);
		if (!sp || !strstr(line, "_bucket{"))
			continue;
		/* Cumulative within the buckets of one limiter. */
		if (strncmp(label, sp, strcspn(sp, ",")) ||
		    strlen(label) != strcspn(sp, ",")) {
			snprintf(label, sizeof(label), "%.*s",
				 (int)strcspn(sp, ","), sp);
			last = 0;
		}
		sp = strrchr(line, ' ');
		ASSERT_NE(NULL, sp);
		v = strtoull(sp + 1, NULL, 10);
		EXPECT_LE(last, v) TH_LOG("%s: not cumulative", line);
		last = v;
	}
}

/* rlctl export: the Prometheus text format, to stdout or a file. */
TEST_F(tree, export_prometheus)
{
	static const char *const all[] = { "export", NULL };
	static const char hist[] = "0 3\n1024 2\n4096 7\n2097152 1\n";
	static char path[PATH_LEN];
	static const char *const to_file[] = { "export", "-o", path, "api",
					       NULL };
	char text[OUT_MAX];
	static const char *const one[] = { "export", "api", NULL };

	ASSERT_EQ(0, fake_limiter(self->root, "api", 1, SEC, "", hist));
	ASSERT_EQ(0, fake_limiter(self->root, "x.y-z", 5, 2 * SEC, "", ""));
	run_rlctl(_metadata, self->root, all, &self->r);
	EXPECT_HAS(self->r.out, "# TYPE ratelimit_wait_seconds histogram\n");
	EXPECT_HAS(self->r.out,
		   "\nratelimit_rate_tokens_per_second{limiter=\"x.y-z\"} 2.5\n");
	EXPECT_HAS(self->r.out,
		   "\nratelimit_granted_tokens_total{limiter=\"api\"} 0\n");
	/* 1024 ns: the bucket of 1024-2047 ns is not in it, 4096-8191 is. */
	EXPECT_HAS(self->r.out,
		   "\nratelimit_wait_seconds_bucket{limiter=\"api\",le=\"1.024e-06\"} 3\n");
	EXPECT_HAS(self->r.out,
		   "\nratelimit_wait_seconds_bucket{limiter=\"api\",le=\"6.5536e-05\"} 12\n");
	EXPECT_HAS(self->r.out,
		   "\nratelimit_wait_seconds_bucket{limiter=\"api\",le=\"+Inf\"} 13\n");
	EXPECT_HAS(self->r.out,
		   "\nratelimit_wait_seconds_count{limiter=\"api\"} 13\n");
	expect_families(_metadata, self->r.out);

	/* -o: the same text, in a file written whole. */
	snprintf(path, sizeof(path), "%s/api.prom", self->root);
	run_rlctl(_metadata, self->root, to_file, &self->r);
	EXPECT_STREQ("", self->r.out);
	run_rlctl(_metadata, self->root, one, &self->r);
	ASSERT_EQ(0, file_text(path, text, sizeof(text)));
	EXPECT_STREQ(self->r.out, text);
}

/* A missing limiter is an error, and -o then writes nothing. */
TEST_F(tree, export_errors)
{
	static char path[PATH_LEN];
	static const char *const missing[] = { "export", "-o", path, "api",
					       "gone", NULL };
	static const char *const bad_opt[] = { "export", "-x", NULL };
	static const char *const bad_name[] = { "export", "a/b", NULL };

	ASSERT_EQ(0, fake_limiter(self->root, "api", 1, SEC, "", ""));
	snprintf(path, sizeof(path), "%s/out.prom", self->root);
	ASSERT_EQ(0, run_tool("rlctl", missing, self->root, &self->r));
	EXPECT_EQ(1, self->r.status);
	EXPECT_STREQ("rlctl: no limiter named 'gone'\n", self->r.err);
	EXPECT_NE(0, access(path, F_OK));
	ASSERT_EQ(0, run_tool("rlctl", bad_opt, self->root, &self->r));
	EXPECT_EQ(2, self->r.status);
	ASSERT_EQ(0, run_tool("rlctl", bad_name, self->root, &self->r));
	EXPECT_EQ(2, self->r.status);
	EXPECT_HAS(self->r.err, "invalid name 'a/b'");
}

/*
 * A keyed limiter: show prints the counts of its file keys, export their
 * families, one sample per keyed limiter (none for a plain one, and no
 * family when no limiter is keyed).
 */
TEST_F(tree, keyed_show_export)
{
	static const char *const show_args[] = { "show", "ips", NULL };
	static const char *const json_args[] = { "--json", "show", "ips", NULL };
	static const char *const all[] = { "export", NULL };
	static const char *const plain_only[] = { "export", "api", NULL };
	char dir[PATH_LEN];

	ASSERT_EQ(0, fake_limiter(self->root, "api", 1, SEC, "", ""));
	ASSERT_EQ(0, fake_limiter(self->root, "ips", 10, SEC, "", ""));
	snprintf(dir, sizeof(dir), "%s/ips", self->root);
	ASSERT_EQ(0, put_file(dir, "config",
			      "rate 10\nperiod_ns 1000000000\nburst 20\nunlimited 0\n"
			      "keyed 1\nkeys 100000\nweight 1\n"));
	ASSERT_EQ(0, put_file(dir, "keys",
			      "keys 12\nkeys_max 100000\ncreated 40\nevicted 28\n"
			      "refused 3\nwaiters 2\n"));
	run_rlctl(_metadata, self->root, show_args, &self->r);
	EXPECT_HAS(self->r.out, "\nkeyed          1\n");
	EXPECT_HAS(self->r.out, "\nkeys           100000\n");
	EXPECT_HAS(self->r.out, "\nkeys_live      12\nkeys_max       100000\n"
		   "keys_created   40\nkeys_evicted   28\nkeys_refused   3\n"
		   "keys_waiters   2\n");
	run_rlctl(_metadata, self->root, json_args, &self->r);
	EXPECT_HAS(self->r.out, ",\"key_family\":{\"keys\":12,\"keys_max\":100000,");
	EXPECT_HAS(self->r.out, ",\"created\":40,\"evicted\":28,\"refused\":3,\"waiters\":2}");

	run_rlctl(_metadata, self->root, all, &self->r);
	EXPECT_HAS(self->r.out, "# TYPE ratelimit_keys gauge\n"
		   "ratelimit_keys{limiter=\"ips\"} 12\n# HELP");
	EXPECT_HAS(self->r.out, "\nratelimit_keys_max{limiter=\"ips\"} 100000\n");
	EXPECT_HAS(self->r.out, "# TYPE ratelimit_keys_created_total counter\n"
		   "ratelimit_keys_created_total{limiter=\"ips\"} 40\n");
	EXPECT_HAS(self->r.out, "\nratelimit_keys_evicted_total{limiter=\"ips\"} 28\n");
	EXPECT_HAS(self->r.out, "\nratelimit_keys_refused_total{limiter=\"ips\"} 3\n");
	EXPECT_EQ(NULL, strstr(self->r.out, "ratelimit_keys{limiter=\"api\"}"));
	expect_families(_metadata, self->r.out);
	run_rlctl(_metadata, self->root, plain_only, &self->r);
	EXPECT_EQ(NULL, strstr(self->r.out, "ratelimit_keys"));
}

/* A directory of files per value (a module of before stat): one line says so. */
TEST_F(tree, old_module)
{
	static const char *const args[] = { "show", "old", NULL };
	char dir[PATH_LEN];

	snprintf(dir, sizeof(dir), "%s/old", self->root);
	ASSERT_EQ(0, mkdir(dir, 0755));
	ASSERT_EQ(0, put_file(dir, "rate", "5\n"));
	ASSERT_EQ(0, run_tool("rlctl", args, self->root, &self->r));
	EXPECT_EQ(1, self->r.status);
	EXPECT_HAS(self->r.err, "/old has no file stat: the loaded module is older than rlctl");
	EXPECT_HAS(self->r.err, " (reload it)\n");
	EXPECT_STREQ("", self->r.out);
}

/*
 * A limiter that rlsyncd(8) links: show prints its state file
 * (RLCTL_RLSYNCD_DIR), text and JSON; without one, nothing of it.
 */
TEST_F(tree, global_link)
{
	static const char *const text[] = { "show", "api", NULL };
	static const char *const jsn[] = { "--json", "show", "api", NULL };
	char dir[PATH_LEN], state[256];

	ASSERT_EQ(0, fake_limiter(self->root, "api", 100, SEC, "", ""));
	snprintf(dir, sizeof(dir), "%s/rlsyncd", self->root);
	ASSERT_EQ(0, mkdir(dir, 0755));
	ASSERT_EQ(0, setenv("RLCTL_RLSYNCD_DIR", dir, 1));
	run_rlctl(_metadata, self->root, text, &self->r);
	EXPECT_EQ(NULL, strstr(self->r.out, "global"));
	snprintf(state, sizeof(state),
		 "pid=%d\nresource=partner\nredis=10.0.0.5:6379\nmode=lease\n"
		 "has=2226.000\ngranted=2226.000\nexpires_ns=1\nkernel_lease=1\n"
		 "safe=100.000/s\nwants=5000.000\nredis_up=1\n", (int)getpid());
	ASSERT_EQ(0, put_file(dir, "api", state));
	run_rlctl(_metadata, self->root, text, &self->r);
	EXPECT_HAS(self->r.out,
		   "global         partner (lease mode, redis 10.0.0.5:6379, rlsyncd pid");
	EXPECT_HAS(self->r.out, "has            2226.000/s (wants 5000.000/s)");
	EXPECT_HAS(self->r.out, "lease          ended");
	EXPECT_HAS(self->r.out, "safe           100.000/s");
	run_rlctl(_metadata, self->root, jsn, &self->r);
	EXPECT_HAS(self->r.out, ",\"global\":{\"resource\":\"partner\",\"mode\":\"lease\"");
	EXPECT_HAS(self->r.out, "\"agent_running\":true,\"wants_per_s\":5000.000");
	EXPECT_HAS(self->r.out,
		   "\"has_per_s\":2226.000,\"kernel_lease\":true,\"safe\":\"100.000/s\"");
	EXPECT_HAS(self->r.out, "}}\n");
	ASSERT_EQ(0, put_file(dir, "api", "pid=1\nresource=api\nredis=unix:/r\n"
			      "mode=batch\nbatch=300.000\ntaken=12345\ngiven=10\n"
			      "calls=41\nwants=3000.000\nredis_up=0\n"));
	run_rlctl(_metadata, self->root, text, &self->r);
	EXPECT_HAS(self->r.out, "(batch mode, redis unix:/r unreachable");
	EXPECT_HAS(self->r.out, "batch          300.000 tokens, wants 3000.000/s; ");
	EXPECT_HAS(self->r.out, "taken 12345, given back 10, 41 round trips");
	EXPECT_EQ(NULL, strstr(self->r.out, "primary"));
	/* an agent that writes its connection's figures */
	ASSERT_EQ(0, put_file(dir, "api", "pid=1\nresource=api\nredis=sentinel master rlm\n"
			      "mode=batch\nbatch=300.000\ntaken=12345\ngiven=10\n"
			      "calls=41\nwants=3000.000\nredis_up=1\nerrors=7\n"
			      "rtt_ms=0.412\nwait_short=2\nprimary=10.0.0.6:6379\n"));
	run_rlctl(_metadata, self->root, text, &self->r);
	EXPECT_HAS(self->r.out,
		   "primary        10.0.0.6:6379 (round trip 0.412 ms, 7 errors, 2 grants short of WAIT)\n");
	run_rlctl(_metadata, self->root, jsn, &self->r);
	EXPECT_HAS(self->r.out,
		   ",\"primary\":\"10.0.0.6:6379\",\"rtt_ms\":0.412,\"redis_errors\":7,\"wait_short\":2,");
	unsetenv("RLCTL_RLSYNCD_DIR");
}

/*
 * rlctl export with rlsyncd's state files: the ratelimit_global_*
 * families for the linked limiters exported, lease and batch mode;
 * none without the state directory, and none in it without a link.
 */
TEST_F(tree, export_global)
{
	static const char *const all[] = { "export", NULL };
	static const char *const one[] = { "export", "api", NULL };
	char dir[PATH_LEN], state[512], out[OUT_MAX];

	ASSERT_EQ(0, fake_limiter(self->root, "api", 100, SEC, "", ""));
	ASSERT_EQ(0, fake_limiter(self->root, "b", 100, SEC, "", ""));
	snprintf(dir, sizeof(dir), "%s/rlsyncd", self->root);
	ASSERT_EQ(0, setenv("RLCTL_RLSYNCD_DIR", dir, 1));
	run_rlctl(_metadata, self->root, all, &self->r);
	EXPECT_EQ(NULL, strstr(self->r.out, "ratelimit_global"));
	ASSERT_EQ(0, mkdir(dir, 0755));
	run_rlctl(_metadata, self->root, all, &self->r);
	EXPECT_EQ(NULL, strstr(self->r.out, "ratelimit_global"));
	snprintf(state, sizeof(state),
		 "pid=%d\nresource=partner\nredis=sentinel master rlm\nmode=lease\n"
		 "has=2226.000\ngranted=2226.000\nexpires_ns=1\nkernel_lease=1\n"
		 "safe=pessimistic\nwants=5000.000\nredis_up=1\nerrors=3\n"
		 "rtt_ms=0.412\nwait_short=2\nprimary=10.0.0.6:6379\n",
		 (int)getpid());
	ASSERT_EQ(0, put_file(dir, "api", state));
	ASSERT_EQ(0, put_file(dir, "b", "pid=0\nresource=b\nredis=unix:/r\n"
			      "mode=batch\nbatch=300.000\ntaken=12345\ngiven=10\n"
			      "calls=41\nwants=3000.000\nredis_up=0\nerrors=7\n"
			      "rtt_ms=0.000\nwait_short=0\nprimary=\n"));
	run_rlctl(_metadata, self->root, all, &self->r);
	EXPECT_HAS(self->r.out,
		   "# TYPE ratelimit_global_info gauge\nratelimit_global_info{limiter=\"api\",resource=\"partner\",mode=\"lease\",redis=\"sentinel master rlm\",primary=\"10.0.0.6:6379\"} 1\n");
	EXPECT_HAS(self->r.out,
		   "\nratelimit_global_info{limiter=\"b\",resource=\"b\",mode=\"batch\",redis=\"unix:/r\",primary=\"\"} 0\n");
	EXPECT_HAS(self->r.out,
		   "\nratelimit_global_share_tokens_per_second{limiter=\"api\"} 2226\n");
	EXPECT_EQ(NULL, strstr(self->r.out,
			       "ratelimit_global_share_tokens_per_second{limiter=\"b\"}"));
	EXPECT_HAS(self->r.out, "\nratelimit_global_wants_tokens_per_second{limiter=\"b\"} 3000\n");
	EXPECT_HAS(self->r.out, "\nratelimit_global_lease_left_seconds{limiter=\"api\"} -");
	EXPECT_HAS(self->r.out, "\nratelimit_global_batch_tokens{limiter=\"b\"} 300\n");
	EXPECT_HAS(self->r.out, "\nratelimit_global_taken_tokens_total{limiter=\"b\"} 12345\n");
	EXPECT_HAS(self->r.out, "\nratelimit_global_redis_up{limiter=\"api\"} 1\n");
	EXPECT_HAS(self->r.out, "\nratelimit_global_redis_errors_total{limiter=\"b\"} 7\n");
	EXPECT_HAS(self->r.out, "\nratelimit_global_redis_rtt_seconds{limiter=\"api\"} 0.000412\n");
	EXPECT_HAS(self->r.out, "\nratelimit_global_wait_short_total{limiter=\"api\"} 2\n");
	snprintf(out, sizeof(out), "%s", self->r.out);
	expect_families(_metadata, out);
	/* only the limiters exported */
	run_rlctl(_metadata, self->root, one, &self->r);
	EXPECT_HAS(self->r.out, "\nratelimit_global_redis_up{limiter=\"api\"} 1\n");
	EXPECT_EQ(NULL, strstr(self->r.out, "{limiter=\"b\"}"));
	unsetenv("RLCTL_RLSYNCD_DIR");
}

TEST_HARNESS_MAIN
