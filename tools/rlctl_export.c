// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl export - the named limiters' counters, gauges and wait histogram
 * in the Prometheus text exposition format (version 0.0.4), for
 * node-exporter's textfile collector or any scraper of such files:
 *
 *   rlctl export [-o FILE] [NAME...]
 *
 * Every family has its HELP and TYPE lines, then one sample per limiter,
 * labelled limiter="NAME"; the ratelimit_keys* families have one per
 * keyed limiter, the counts of its keys (never a sample per key). Where
 * rlsyncd(8) runs, the ratelimit_global_*
 * families follow: each link's state (rlctl_global.c). -o writes FILE whole or not at all (a
 * temporary file renamed over it), as the textfile collector needs.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libratelimit.h"
#include "rlctl.h"

/* What one limiter exports. */
struct limiter {
	const char *name;
	struct info info;
	struct hist hist;
	bool keyed;
	struct keys_info keys;	/* when @keyed */
};

/* A family of samples taken from one field of struct limiter. */
struct family {
	const char *name;
	const char *type;
	const char *help;
	size_t off;		/* of the field in struct limiter */
	const char *attr;	/* its sysfs file, skipped when missing */
	bool keyed;		/* for keyed limiters only */
};

#define F(n, t, field, h) \
	{ "ratelimit_" n, t, h, offsetof(struct limiter, info.field), #field, false }
/* The same for the tunable @id of rlctl_keys[], whose file is @attr. */
#define KF(n, t, id, attr, h) \
	{ "ratelimit_" n, t, h, offsetof(struct limiter, info.key[id]), attr, false }
/* A count of the keys of a keyed limiter (its file keys). */
#define KEYS(n, t, field, h) \
	{ "ratelimit_" n, t, h, offsetof(struct limiter, keys.field), NULL, true }

static const struct family families[] = {
	F("granted_tokens_total", "counter", granted, "Tokens granted."),
	F("requests_total", "counter", requests,
	  "Acquire calls that passed validation."),
	F("immediate_grants_total", "counter", immediate,
	  "Requests granted without sleeping."),
	F("waited_grants_total", "counter", waited,
	  "Requests granted after sleeping."),
	F("timeouts_total", "counter", timeouts,
	  "Requests that failed with ETIMEDOUT."),
	F("interrupted_total", "counter", interrupted,
	  "Requests ended by a signal."),
	F("rejected_total", "counter", rejected,
	  "Non-blocking requests refused with EAGAIN."),
	F("refunded_tokens_total", "counter", refunded,
	  "Tokens given back by RL_IOC_REFUND."),
	KF("burst_tokens", "gauge", RLK_BURST, "burst",
	   "Bucket depth: the most tokens that accumulate while idle."),
	KF("concurrency_limit", "gauge", RLK_CONCURRENCY, "concurrency",
	   "Most permits held at once, 0 for no limit."),
	F("available_tokens", "gauge", available, "Tokens in the bucket now."),
	F("waiters", "gauge", waiters, "Requests asleep now."),
	F("held_permits", "gauge", held, "Permits held now."),
	F("clients", "gauge", clients, "Open files attached."),
	KEYS("keys", "gauge", keys, "Keys with state now (keyed limiters)."),
	KEYS("keys_max", "gauge", keys_max,
	     "Most keys with state at once (keyed limiters)."),
	KEYS("keys_created_total", "counter", created,
	     "Keys given state (keyed limiters)."),
	KEYS("keys_evicted_total", "counter", evicted,
	     "Keys dropped, their buckets full (keyed limiters)."),
	KEYS("keys_refused_total", "counter", refused,
	     "Requests for a new key refused with ENOSPC at the cap (keyed limiters)."),
};

/* Upper bounds of the histogram's buckets, ns: powers of two (log2 data). */
static const unsigned int bucket_shift[] = {
	10, 13, 16, 19, 22, 25, 28, 31, 34, 37,
};

static void put_header(FILE *f, const char *name, const char *type,
		       const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Does limiter @l have family @fam's value? */
static bool has_value(const struct limiter *l, const struct family *fam)
{
	const char *attr = fam->attr;
	size_t i;

	if (fam->keyed)
		return l->keyed;
	for (i = 0; i < nattrs(); i++)
		if (!strcmp(attr_at(i).key, attr))
			return !(l->info.missing & (1ULL << i));
	return true;
}

static void put_family(FILE *f, const struct family *fam,
		       const struct limiter *l, size_t n)
{
	size_t i;

	/* No limiter keyed: no family of keys at all. */
	for (i = 0; fam->keyed && i < n && !l[i].keyed; i++)
		continue;
	if (fam->keyed && i == n)
		return;
	put_header(f, fam->name, fam->type, fam->help);
	for (i = 0; i < n; i++) {
		if (!has_value(&l[i], fam))
			continue;
		fputs(fam->name, f);
		prom_label(f, l[i].name);
		fprintf(f, "} %llu\n", (unsigned long long)
			*(const uint64_t *)((const char *)&l[i] + fam->off));
	}
}

static void put_rate(FILE *f, const struct limiter *l, size_t n)
{
	double rate;
	size_t i;

	put_header(f, "ratelimit_rate_tokens_per_second", "gauge",
		   "Tokens per second the limiter grants at most; +Inf when unlimited.");
	for (i = 0; i < n; i++) {
		rate = target_rate(&l[i].info);
		fputs("ratelimit_rate_tokens_per_second", f);
		prom_label(f, l[i].name);
		if (rate < 0)
			fputs("} +Inf\n", f);
		else
			fprintf(f, "} %.17g\n", rate);
	}
}

/* One limiter's histogram: cumulative counts at each bound, then +Inf. */
static void put_hist(FILE *f, const struct limiter *l)
{
	const char *m = "ratelimit_wait_seconds";
	uint64_t sum = 0;
	size_t b, i = 0;

	for (b = 0; b < ARRAY_SIZE(bucket_shift); b++) {
		/* Waits of FLOOR .. 2 FLOOR - 1 ns: all <= 2^shift or none. */
		while (i < l->hist.n &&
		       l->hist.floor[i] <= 1ULL << (bucket_shift[b] - 1))
			sum += l->hist.count[i++];
		fprintf(f, "%s_bucket", m);
		prom_label(f, l->name);
		fprintf(f, ",le=\"%.12g\"} %llu\n",
			(double)(1ULL << bucket_shift[b]) / 1e9, (unsigned long long)sum);
	}
	fprintf(f, "%s_bucket", m);
	prom_label(f, l->name);
	fprintf(f, ",le=\"+Inf\"} %llu\n", (unsigned long long)l->hist.total);
	fprintf(f, "%s_sum", m);
	prom_label(f, l->name);
	fprintf(f, "} %.9f\n", l->info.wait_ns_total / 1e9);
	fprintf(f, "%s_count", m);
	prom_label(f, l->name);
	fprintf(f, "} %llu\n", (unsigned long long)l->hist.total);
}

static void put_all(FILE *f, const struct limiter *l, size_t n)
{
	const char **names = calloc(n ? n : 1, sizeof(*names));
	size_t i;

	put_rate(f, l, n);
	for (i = 0; i < ARRAY_SIZE(families); i++)
		put_family(f, &families[i], l, n);
	put_header(f, "ratelimit_wait_seconds", "histogram",
		   "Time the granted requests slept.");
	for (i = 0; i < n; i++)
		put_hist(f, &l[i]);
	/* rlsyncd's links, when it runs here (rlctl_global.c) */
	for (i = 0; names && i < n; i++)
		names[i] = l[i].name;
	if (names)
		export_global(f, names, n);
	free(names);
}

/* Load limiter @name into @l; 0, 1 (said why) or -ENOENT (gone). */
static int load(struct limiter *l, const char *name)
{
	char *text;
	int ret;

	l->name = name;
	ret = load_info(name, &l->info);
	if (ret == -ENOENT || ret == -ENOTDIR)
		return -ENOENT;
	if (ret)
		return info_error(name, ret);
	text = read_text(name, "wait_histogram", &ret);
	if (!text && ret == -ENOENT)
		return -ENOENT;
	if (!text)
		return fail("cannot read the wait histogram of '%s': %s",
			    name, strerror(-ret));
	parse_hist(text, &l->hist);
	free(text);
	l->keyed = info_keyed(&l->info);
	ret = l->keyed ? load_keys(name, &l->keys) : 0;
	if (ret == -ENOENT)
		return -ENOENT;
	if (ret)
		return fail("cannot read the keys of '%s': %s", name,
			    strerror(-ret));
	return 0;
}

/* Write the export to @path whole, or not at all: 0 or 1. */
static int write_file(const char *path, const struct limiter *l, size_t n)
{
	char tmp[4096];
	FILE *f;
	int ret;

	if (snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()) >=
	    (int)sizeof(tmp))
		return fail("export: file name too long");
	f = fopen(tmp, "w");
	if (!f)
		return fail("cannot write %s: %s", tmp, strerror(errno));
	put_all(f, l, n);
	ret = ferror(f) | fflush(f) | fsync(fileno(f));
	if (fclose(f) || ret || rename(tmp, path)) {
		ret = errno;
		unlink(tmp);
		return fail("cannot write %s: %s", path, strerror(ret));
	}
	return 0;
}

/*
 * Load the limiters of @ents (all, from scan_limiters()) or else @names,
 * @n of them, into @l; how many into *@got. 0 or the exit status. One
 * of @ents gone since the scan is left out; one of @names is an error.
 */
static int load_each(struct limiter *l, int n, struct dirent **ents,
		     char **names, size_t *got)
{
	const char *name;
	int i, ret;

	*got = 0;
	for (i = 0; i < n; i++) {
		name = ents ? ents[i]->d_name : names[i];
		ret = load(&l[*got], name);
		if (!ret)
			(*got)++;
		else if (ret == -ENOENT && !ents)
			return name_error(name, ret);
		else if (ret != -ENOENT)
			return ret;
	}
	return 0;
}

static int output(const char *path, const struct limiter *l, size_t n)
{
	if (path)
		return write_file(path, l, n);
	put_all(stdout, l, n);
	if (fflush(stdout) || ferror(stdout))
		return fail("cannot write: %s", strerror(errno));
	return 0;
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	struct dirent **ents = NULL;
	const char *path = NULL;
	struct limiter *l;
	int c, i, n, ret;
	size_t got = 0;

	while ((c = getopt_long(argc, argv, "+o:", opts, NULL)) != -1) {
		if (c != 'o')
			return tool_try_help(EXIT_USAGE);
		path = optarg;
	}
	n = argc - optind;
	for (i = optind; i < argc; i++)
		if (check_name(argv[i]))
			return EXIT_USAGE;
	if (!n)
		n = scan_limiters(&ents);
	if (n < 0)
		return 1;
	l = calloc(n ? n : 1, sizeof(*l));
	ret = l ? load_each(l, n, ents, argv + optind, &got) :
		  fail("out of memory");
	if (!ret)
		ret = output(path, l, got);
	for (i = 0; ents && i < n; i++)
		free(ents[i]);
	free(ents);
	free(l);
	return ret;
}
