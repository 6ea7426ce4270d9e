// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_global.c - "rlctl show NAME": the limiter's link to a global
 * resource, from the state file rlsyncd(8) writes at each refresh,
 * /run/rlsyncd/NAME (KEY=VALUE lines; rlsyncd_state.c). No file: no link.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlctl.h"

/* Where rlsyncd writes; RLCTL_RLSYNCD_DIR overrides it (tests). */
#define STATE_DIR	"/run/rlsyncd"
#define STATE_KEYS	16

struct state {
	char key[STATE_KEYS][32];
	char val[STATE_KEYS][128];
	unsigned int n;
};

static int load_state(const char *name, struct state *st)
{
	const char *dir = getenv("RLCTL_RLSYNCD_DIR");
	char path[512], line[200], *eq;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : STATE_DIR, name);
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

static void show_text(const struct state *st)
{
	printf("%-14s %s (%s mode, redis %s%s, rlsyncd pid %s%s)\n", "global",
	       get(st, "resource"), get(st, "mode"), get(st, "redis"),
	       atoi(get(st, "redis_up")) ? "" : " unreachable", get(st, "pid"),
	       agent_alive(st) ? "" : ", not running");
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
