// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_show.c - rlctl show and list: a limiter's settings, statistics,
 * wait percentiles, the counts of its keys (keyed) and clients, or one
 * line per limiter; text or JSON.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libratelimit.h"
#include "rlctl.h"
#include "sysfile.h"

/* A line of client_list: "PID COMM GRANTED HELD PRIORITY WEIGHT CAP". */
struct client {
	uint64_t pid, granted, held, priority, weight, cap;
	const char *comm;
	bool full;		/* the last four fields are there */
};

/*
 * Split @line in place. COMM may hold spaces: PID is the first word and
 * the numbers are the last ones. Lines of an older module have GRANTED
 * only. Returns false for a line that is neither.
 */
static bool parse_client(char *line, struct client *c)
{
	uint64_t *nums[] = { &c->granted, &c->held, &c->priority,
			     &c->weight, &c->cap };
	char *words[8], *sp;
	int n = 0, i, k;

	memset(c, 0, sizeof(*c));
	sp = strchr(line, ' ');
	if (!sp)
		return false;
	*sp = '\0';
	if (sysfile_parse_u64(line, 10, &c->pid))
		return false;
	c->comm = sp + 1;
	/* Up to five numbers from the end, leaving COMM non-empty. */
	while (n < 5 && (sp = strrchr(c->comm, ' ')) && sp != c->comm) {
		words[n++] = sp + 1;
		*sp = '\0';
	}
	k = n == 5 ? 5 : 1;
	if (n < k)
		return false;
	/* Give the words beyond GRANTED back to COMM for an old line. */
	for (i = n - 1; i >= k; i--)
		words[i][-1] = ' ';
	for (i = 0; i < k; i++)
		if (sysfile_parse_u64(words[k - 1 - i], 10, nums[i]))
			return false;
	c->full = k == 5;
	return true;
}

/* The clients of @list (modified in place) into a new array. */
static struct client *parse_clients(char *list, size_t *n, uint64_t *total)
{
	struct client *cl = NULL, *ncl, c;
	char *line, *save = NULL;
	size_t cap = 0;

	*n = 0;
	*total = 0;
	for (line = strtok_r(list, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!parse_client(line, &c))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			ncl = realloc(cl, cap * sizeof(*cl));
			if (!ncl)
				break;
			cl = ncl;
		}
		cl[(*n)++] = c;
		*total += c.granted;
	}
	return cl;
}

static double share_pct(uint64_t granted, uint64_t total)
{
	return total ? granted * 100.0 / total : 0;
}

static void show_clients_text(const struct client *cl, size_t n,
			      uint64_t total)
{
	char cap[24];
	size_t i;

	printf("%-8s %-16s %12s %7s %8s %-7s %6s %10s\n", "PID", "COMM",
	       "GRANTED", "SHARE", "HELD", "PRIO", "WEIGHT", "CAP");
	for (i = 0; i < n; i++) {
		printf("%-8llu %-16s %12llu %6.1f%%",
		       (unsigned long long)cl[i].pid, cl[i].comm,
		       (unsigned long long)cl[i].granted,
		       share_pct(cl[i].granted, total));
		if (!cl[i].full) {
			printf("\n");
			continue;
		}
		if (cl[i].cap)
			snprintf(cap, sizeof(cap), "%llu",
				 (unsigned long long)cl[i].cap);
		else
			snprintf(cap, sizeof(cap), "-");
		printf(" %8llu %-7s %6llu %10s\n",
		       (unsigned long long)cl[i].held,
		       tool_prio_name(cl[i].priority, "default"),
		       (unsigned long long)cl[i].weight, cap);
	}
}

static void show_clients_json(const struct client *cl, size_t n,
			      uint64_t total)
{
	size_t i;

	putchar('[');
	for (i = 0; i < n; i++) {
		printf("%s{\"pid\":%llu,\"comm\":", i ? "," : "",
		       (unsigned long long)cl[i].pid);
		json_string(cl[i].comm);
		printf(",\"granted\":%llu,\"share_pct\":%.2f",
		       (unsigned long long)cl[i].granted,
		       share_pct(cl[i].granted, total));
		if (cl[i].full)
			printf(",\"held\":%llu,\"priority\":\"%s\",\"weight\":%llu,\"cap\":%llu",
			       (unsigned long long)cl[i].held,
			       tool_prio_name(cl[i].priority, "default"),
			       (unsigned long long)cl[i].weight,
			       (unsigned long long)cl[i].cap);
		putchar('}');
	}
	putchar(']');
}

static const unsigned int percentiles[] = { 50, 90, 99 };

/*
 * Upper bound of the @pct-th percentile wait: the top of the bucket
 * (FLOOR .. 2 x FLOOR) that holds it; 0 for the bucket of no wait.
 */
static uint64_t hist_pct(const struct hist *h, unsigned int pct)
{
	uint64_t rank = (h->total * pct + 99) / 100, sum = 0;
	size_t i;

	if (!rank)
		rank = 1;
	for (i = 0; i < h->n; i++) {
		sum += h->count[i];
		if (sum >= rank)
			break;
	}
	if (i == h->n)
		i--;
	return h->floor[i] * 2;
}

static void show_hist_text(const struct hist *h)
{
	char b[32];
	size_t i;

	if (!h->total) {
		printf("%-14s -\n", "wait p50/90/99");
		return;
	}
	printf("%-14s", "wait p50/90/99");
	for (i = 0; i < ARRAY_SIZE(percentiles); i++)
		printf("%s <= %s", i ? "," : "",
		       tool_fmt_ns(b, sizeof(b), hist_pct(h, percentiles[i])));
	printf("  (of %llu waits)\n", (unsigned long long)h->total);
}

static void show_hist_json(const struct hist *h)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(percentiles); i++) {
		if (h->total)
			printf(",\"wait_p%u_ns\":%llu", percentiles[i],
			       (unsigned long long)hist_pct(h, percentiles[i]));
		else
			printf(",\"wait_p%u_ns\":null", percentiles[i]);
	}
	printf(",\"wait_histogram\":[");
	for (i = 0; i < h->n; i++)
		printf("%s{\"floor_ns\":%llu,\"count\":%llu}", i ? "," : "",
		       (unsigned long long)h->floor[i],
		       (unsigned long long)h->count[i]);
	putchar(']');
}

/* A keyed limiter's keys: the lines of show, or its JSON member. */
static void show_keys_text(const struct keys_info *k)
{
	printf("%-14s %llu\n", "keys_live", (unsigned long long)k->keys);
	printf("%-14s %llu\n", "keys_max", (unsigned long long)k->keys_max);
	printf("%-14s %llu\n", "keys_created", (unsigned long long)k->created);
	printf("%-14s %llu\n", "keys_evicted", (unsigned long long)k->evicted);
	printf("%-14s %llu\n", "keys_refused", (unsigned long long)k->refused);
	printf("%-14s %llu\n", "keys_waiters", (unsigned long long)k->waiters);
}

static void show_keys_json(const struct keys_info *k)
{
	printf(",\"key_family\":{\"keys\":%llu,\"keys_max\":%llu",
	       (unsigned long long)k->keys, (unsigned long long)k->keys_max);
	printf(",\"created\":%llu,\"evicted\":%llu",
	       (unsigned long long)k->created, (unsigned long long)k->evicted);
	printf(",\"refused\":%llu,\"waiters\":%llu}",
	       (unsigned long long)k->refused, (unsigned long long)k->waiters);
}

/* The common fields of show and list, as JSON members (no braces). */
static void json_members(const char *name, const struct info *info,
			 bool all)
{
	char spec[RL_RATE_STRLEN];
	struct rl_config cfg;
	struct attr a;
	size_t i;

	info_config(info, &cfg);
	rl_format_rate(&cfg, spec, sizeof(spec));
	printf("\"name\":");
	json_string(name);
	printf(",\"spec\":");
	json_string(spec);
	printf(",\"target_per_s\":");
	if (info->key[RLK_UNLIMITED])
		printf("null");
	else
		json_rate(target_rate(info));
	for (i = 0; i < nattrs(); i++) {
		a = attr_at(i);
		if ((!all && !(a.flags & A_LIST)) ||
		    (info->missing & (1ULL << i)))
			continue;
		if (!strcmp(a.key, "mode"))
			printf(",\"mode\":\"%04llo\"",
			       (unsigned long long)info->mode);
		else
			printf(",\"%s\":%llu", a.key,
			       (unsigned long long)*FIELD(info, &a));
	}
}

/*
 * What the value @val of attribute @i means, after it, into @buf: "" for
 * most (struct rlk's least and note).
 */
static const char *attr_note(size_t i, uint64_t val, char *buf, size_t len)
{
	const struct rlk *k = i < rlctl_nkeys ? &rlctl_keys[i] : NULL;

	if (k && k->least && val <= k->min)
		snprintf(buf, len, " (%s)", k->least);
	else if (k && k->note)
		snprintf(buf, len, " %s", k->note);
	else
		*buf = '\0';
	return buf;
}

static void show_text(const char *name, const struct info *info,
		      const struct hist *h)
{
	char spec[RL_RATE_STRLEN], b1[64], b2[32];
	struct rl_config cfg;
	double target = target_rate(info);
	struct attr a;
	uint64_t val;
	size_t i;

	info_config(info, &cfg);
	rl_format_rate(&cfg, spec, sizeof(spec));
	printf("%-14s %s\n", "name", name);
	if (target < 0)
		printf("%-14s %s\n", "limiter", spec);
	else
		printf("%-14s %s (%s)\n", "limiter", spec,
		       target > 0 ? fmt_rate_unit(b1, sizeof(b1), target) :
		       "paused");
	for (i = 0; i < nattrs(); i++) {
		if (info->missing & (1ULL << i))
			continue;
		a = attr_at(i);
		val = *FIELD(info, &a);
		if (!strcmp(a.key, "mode"))
			printf("%-14s %04llo\n", "mode",
			       (unsigned long long)val);
		else
			printf("%-14s %llu%s\n", a.key,
			       (unsigned long long)val,
			       attr_note(i, val, b1, sizeof(b1)));
	}
	printf("%-14s mean %s, max %s\n", "wait",
	       tool_fmt_ns(b1, sizeof(b1), info->waited ?
		      (double)info->wait_ns_total / info->waited : 0),
	       tool_fmt_ns(b2, sizeof(b2), info->wait_ns_max));
	if (h)
		show_hist_text(h);
}

/*
 * The keys of @name into @k if it is keyed: true when read, false when
 * not keyed (or said why not); *@gone when it disappeared meanwhile.
 */
static bool show_load_keys(const char *name, const struct info *info,
			   struct keys_info *k, bool *gone)
{
	int ret;

	*gone = false;
	if (!info_keyed(info))
		return false;
	ret = load_keys(name, k);
	if (ret == -ENOENT && check_limiter(name))
		*gone = true;
	else if (ret)
		fail("cannot read the keys of '%s': %s", name, strerror(-ret));
	return !ret;
}

int cmd_show(int argc, char **argv)
{
	char *clients, *htext;
	struct client *cl = NULL;
	struct keys_info keys;
	uint64_t total = 0;
	const char *name;
	struct info info;
	bool keyed, gone;
	struct hist h;
	size_t n = 0;
	int ret, hret;

	ret = check_operands("show", argc - 1, argv + 1, 1,
			     (const char *const[]){ "NAME" });
	if (ret)
		return ret;
	name = argv[1];
	ret = check_name(name);
	if (!ret)
		ret = limiter_info(name, &info);
	if (ret)
		return ret;
	keyed = show_load_keys(name, &info, &keys, &gone);
	if (gone)
		return 1;	/* said so */
	clients = read_text(name, "client_list", &ret);
	htext = read_text(name, "wait_histogram", &hret);
	if ((!clients && ret == -ENOENT && check_limiter(name)) ||
	    (!htext && hret == -ENOENT && check_limiter(name))) {
		free(clients);
		free(htext);
		return 1;	/* gone meanwhile: said so */
	}
	if (htext)
		parse_hist(htext, &h);
	if (clients)
		cl = parse_clients(clients, &n, &total);

	if (json) {
		printf("{");
		json_members(name, &info, true);
		if (htext)
			show_hist_json(&h);
		if (keyed)
			show_keys_json(&keys);
		if (clients) {
			printf(",\"client_list\":");
			show_clients_json(cl, n, total);
		}
		show_global(name);
		printf("}\n");
	} else {
		show_text(name, &info, htext ? &h : NULL);
		if (keyed)
			show_keys_text(&keys);
		show_global(name);
		if (clients) {
			printf("\n");
			show_clients_text(cl, n, total);
		}
	}
	free(cl);
	free(clients);
	free(htext);
	return 0;
}

int cmd_list(int argc, char **argv)
{
	char spec[RL_RATE_STRLEN];
	struct dirent **ents;
	struct rl_config cfg;
	struct info info;
	int i, n, ret, shown = 0;

	ret = check_operands("list", argc - 1, argv + 1, 0, NULL);
	if (ret)
		return ret;
	n = scan_limiters(&ents);
	if (n < 0)
		return 1;
	if (json)
		printf("[");
	for (i = 0; i < n; i++) {
		/* Gone since scandir(), or not a limiter: skip it. */
		ret = load_info(ents[i]->d_name, &info);
		if (ret == -ENOENT || ret == -ENOTDIR)
			continue;
		if (ret) {
			fail("cannot read the attributes of '%s': %s",
			     ents[i]->d_name, strerror(-ret));
			continue;
		}
		if (json) {
			printf("%s{", shown ? "," : "");
			json_members(ents[i]->d_name, &info, false);
			printf("}");
		} else {
			info_config(&info, &cfg);
			rl_format_rate(&cfg, spec, sizeof(spec));
			printf("%-24s %-24s waiters=%llu clients=%llu",
			       ents[i]->d_name, spec,
			       (unsigned long long)info.waiters,
			       (unsigned long long)info.clients);
			if (info.key[RLK_CONCURRENCY])
				printf(" held=%llu/%llu",
				       (unsigned long long)info.held,
				       (unsigned long long)info.key[RLK_CONCURRENCY]);
			printf("\n");
		}
		shown++;
	}
	if (json)
		printf("]\n");
	for (i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return 0;
}
