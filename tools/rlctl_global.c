// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_global.c - "rlctl show NAME" and "rlctl export": the limiter's
 * link to a global resource, from the state file rlsyncd(8) writes at
 * each refresh, /run/rlsyncd/NAME (KEY=VALUE lines; rlsyncd_link.c).
 * No file: no link.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rlctl.h"

/* Where rlsyncd writes; RLCTL_RLSYNCD_DIR overrides it (tests). */
#define STATE_DIR	"/run/rlsyncd"
#define STATE_KEYS	32

struct state {
	char key[STATE_KEYS][32];
	char val[STATE_KEYS][128];
	unsigned int n;
};

static const char *state_dir(void)
{
	const char *dir = getenv("RLCTL_RLSYNCD_DIR");

	return dir ? dir : STATE_DIR;
}

static int load_state(const char *name, struct state *st)
{
	char path[512], line[200], *eq;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", state_dir(), name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	st->n = 0;
	while (st->n < STATE_KEYS && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		snprintf(st->key[st->n], sizeof(st->key[0]), "%.31s", line);
		snprintf(st->val[st->n], sizeof(st->val[0]), "%.127s", eq + 1);
		st->n++;
	}
	fclose(f);
	return 0;
}

static const char *get(const struct state *st, const char *key)
{
	unsigned int i;

	for (i = 0; i < st->n; i++)
		if (!strcmp(st->key[i], key))
			return st->val[i];
	return "";
}

static double num(const struct state *st, const char *key)
{
	return strtod(get(st, key), NULL);
}

/* Seconds left of the lease (< 0: ended); *@none without one. */
static double lease_left(const struct state *st, bool *none)
{
	double exp = num(st, "expires_ns");

	*none = exp <= 0;
	return (exp - (double)rl_now_ns()) / 1e9;
}

static bool agent_alive(const struct state *st)
{
	int pid = atoi(get(st, "pid"));

	return pid > 0 && (!kill(pid, 0) || errno == EPERM);
}

static void text_lease(const struct state *st)
{
	bool none;
	double left = lease_left(st, &none);

	printf("%-14s %.3f/s (wants %.3f/s)\n", "has", num(st, "has"),
	       num(st, "wants"));
	if (none)
		printf("%-14s none yet\n", "lease");
	else if (left > 0)
		printf("%-14s ends in %.3f s (%s)\n", "lease", left,
		       atoi(get(st, "kernel_lease")) ? "kernel falls back itself" :
		       "agent falls back");
	else
		printf("%-14s ended %.3f s ago\n", "lease", -left);
	printf("%-14s %s\n", "safe", get(st, "safe"));
}

/* The connection's figures (agents that write them): one line. */
static void text_conn(const struct state *st)
{
	if (!*get(st, "errors"))
		return;
	printf("%-14s %s (round trip %.3f ms, %s errors, %s grants short of WAIT)\n",
	       "primary", *get(st, "primary") ? get(st, "primary") : "none",
	       num(st, "rtt_ms"), get(st, "errors"), get(st, "wait_short"));
}

static void show_text(const struct state *st)
{
	printf("%-14s %s (%s mode, redis %s%s, rlsyncd pid %s%s)\n", "global",
	       get(st, "resource"), get(st, "mode"), get(st, "redis"),
	       atoi(get(st, "redis_up")) ? "" : " unreachable", get(st, "pid"),
	       agent_alive(st) ? "" : ", not running");
	text_conn(st);
	if (!strcmp(get(st, "mode"), "batch"))
		printf("%-14s %s tokens, wants %.3f/s; taken %s, given back %s, %s round trips\n",
		       "batch", get(st, "batch"), num(st, "wants"),
		       get(st, "taken"), get(st, "given"), get(st, "calls"));
	else
		text_lease(st);
}

static void json_key(const char *key, const char *val)
{
	printf(",\"%s\":", key);
	json_string(val);
}

static void show_json(const struct state *st)
{
	bool none;
	double left = lease_left(st, &none);

	printf(",\"global\":{\"resource\":");
	json_string(get(st, "resource"));
	json_key("mode", get(st, "mode"));
	json_key("redis", get(st, "redis"));
	printf(",\"redis_up\":%s,\"agent_pid\":%d,\"agent_running\":%s,\"wants_per_s\":%.3f",
	       atoi(get(st, "redis_up")) ? "true" : "false",
	       atoi(get(st, "pid")), agent_alive(st) ? "true" : "false",
	       num(st, "wants"));
	if (*get(st, "errors")) {
		json_key("primary", get(st, "primary"));
		printf(",\"rtt_ms\":%.3f,\"redis_errors\":%.0f,\"wait_short\":%.0f",
		       num(st, "rtt_ms"), num(st, "errors"), num(st, "wait_short"));
	}
	if (!strcmp(get(st, "mode"), "batch")) {
		printf(",\"batch\":%.3f,\"taken\":%.0f,\"given\":%.0f,\"round_trips\":%.0f}",
		       num(st, "batch"), num(st, "taken"), num(st, "given"),
		       num(st, "calls"));
		return;
	}
	printf(",\"has_per_s\":%.3f,\"kernel_lease\":%s",
	       num(st, "has"), atoi(get(st, "kernel_lease")) ? "true" : "false");
	json_key("safe", get(st, "safe"));
	if (none)
		printf(",\"lease_left_s\":null}");
	else
		printf(",\"lease_left_s\":%.3f}", left);
}

void show_global(const char *name)
{
	struct state st;

	if (load_state(name, &st))
		return;
	if (json)
		show_json(&st);
	else
		show_text(&st);
}

/*
 * The families of "rlctl export": what one number of a link's state is.
 * @key: its key in the state file ("" for one computed); @mode: "lease"
 * or "batch" when only that mode has it, else NULL.
 */
struct gfamily {
	const char *name;
	const char *type;
	const char *help;
	const char *key;
	const char *mode;
	double scale;
};

static const struct gfamily gfamilies[] = {
	{ "ratelimit_global_share_tokens_per_second", "gauge",
	  "Lease mode: the share of the global rate the limiter runs at.",
	  "has", "lease", 1 },
	{ "ratelimit_global_wants_tokens_per_second", "gauge",
	  "The demand the agent reported to Redis last.", "wants", NULL, 1 },
	{ "ratelimit_global_lease_left_seconds", "gauge",
	  "Lease mode: time left of the lease (negative: ended), agent's clock.",
	  "", "lease", 1 },
	{ "ratelimit_global_batch_tokens", "gauge",
	  "Batch mode: tokens asked of Redis per round trip now.", "batch",
	  "batch", 1 },
	{ "ratelimit_global_taken_tokens_total", "counter",
	  "Batch mode: tokens Redis granted to this agent.", "taken", "batch", 1 },
	{ "ratelimit_global_redis_up", "gauge",
	  "1 while the agent reaches Redis (the primary, with Sentinel).",
	  "redis_up", NULL, 1 },
	{ "ratelimit_global_redis_errors_total", "counter",
	  "Failed Redis calls and connections of the link.", "errors", NULL, 1 },
	{ "ratelimit_global_redis_rtt_seconds", "gauge",
	  "The last round trip to Redis that succeeded (0: none yet).",
	  "rtt_ms", NULL, 0.001 },
	{ "ratelimit_global_wait_short_total", "counter",
	  "Grants that WAIT found acknowledged by fewer than wait-replicas replicas.",
	  "wait_short", NULL, 1 },
};

/* The links of @names that have a state file, loaded; how many. */
static size_t load_links(const char *const *names, size_t n,
			 struct state *st, bool *has)
{
	size_t i, got = 0;

	for (i = 0; i < n; i++) {
		has[i] = !load_state(names[i], &st[i]);
		got += has[i];
	}
	return got;
}

static void put_info(FILE *f, const char *const *names, size_t n,
		     const struct state *st, const bool *has)
{
	static const char *const labels[] = { "resource", "mode", "redis",
					      "primary" };
	size_t i, k;

	fprintf(f, "# HELP ratelimit_global_info %s\n# TYPE ratelimit_global_info gauge\n",
		"The link to a global resource (rlsyncd): resource, mode, redis (or the sentinels' master), current primary; 1 while its agent runs.");
	for (i = 0; i < n; i++) {
		if (!has[i])
			continue;
		fputs("ratelimit_global_info", f);
		prom_label(f, names[i]);
		for (k = 0; k < ARRAY_SIZE(labels); k++) {
			fprintf(f, ",%s=\"", labels[k]);
			prom_value(f, get(&st[i], labels[k]));
			fputc('"', f);
		}
		fprintf(f, "} %d\n", agent_alive(&st[i]));
	}
}

static void put_gfamily(FILE *f, const struct gfamily *fam,
			const char *const *names, size_t n,
			const struct state *st, const bool *has)
{
	bool none;
	double v;
	size_t i;

	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help,
		fam->name, fam->type);
	for (i = 0; i < n; i++) {
		if (!has[i] || (fam->mode && strcmp(get(&st[i], "mode"), fam->mode)))
			continue;
		if (*fam->key) {
			if (!*get(&st[i], fam->key))
				continue;	/* an older agent */
			v = num(&st[i], fam->key) * fam->scale;
		} else {
			v = lease_left(&st[i], &none);
			if (none)
				continue;
		}
		fputs(fam->name, f);
		prom_label(f, names[i]);
		/* counters whole; state files keep 3 decimals (rtt: µs) */
		fprintf(f, v == (double)(int64_t)v ? "} %.0f\n" : "} %.9g\n", v);
	}
}

void export_global(FILE *f, const char *const *names, size_t n)
{
	struct state *st;
	struct stat sb;
	bool *has;
	size_t i;

	if (!n || stat(state_dir(), &sb) || !S_ISDIR(sb.st_mode))
		return;
	st = calloc(n, sizeof(*st));
	has = calloc(n, sizeof(*has));
	if (st && has && load_links(names, n, st, has)) {
		put_info(f, names, n, st, has);
		for (i = 0; i < ARRAY_SIZE(gfamilies); i++)
			put_gfamily(f, &gfamilies[i], names, n, st, has);
	}
	free(st);
	free(has);
}
