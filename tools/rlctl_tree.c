// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlctl_tree.c - trees of limiters: the --parent, --weight and --root
 * options of create and set (RL_IOC_SET_PARENT), and rlctl tree, which
 * draws the trees from sysfs with each level's rate, achieved rate and
 * share of its parent's achieved rate.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libratelimit.h"
#include "rlctl.h"
#include "sysfile.h"

/* Most limiters rlctl tree draws (the module's default max_named). */
#define TREE_MAX	1024

/* One error line for a failed move of @name; the exit status. */
static int parent_error(const char *name, const struct tree_opts *t,
			int err)
{
	switch (err) {
	case -ELOOP:
		return fail("cannot put '%s' under '%s': it is in its subtree",
			    name, t->parent);
	case -EMLINK:
		return fail("cannot put '%s' under '%s': more than %d levels above a limiter",
			    name, t->parent, RL_DEPTH_MAX);
	case -EINVAL:
		return fail("cannot move '%s': invalid weight %lu or name",
			    name, (unsigned long)t->weight);
	case -ENOENT:
		return t->parent ? name_error(t->parent, err) :
				   name_error(name, err);
	default:
		return name_error(name, err);
	}
}

/**
 * tree_apply() - apply --parent, --weight or --root to a limiter
 * @fd:   an fd attached to it, or -1 to attach one
 * @name: the limiter
 * @t:    the options; nothing to do unless t->set
 *
 * Return: 0 or the exit status, after saying why.
 */
int tree_apply(int fd, const char *name, const struct tree_opts *t)
{
	int own = -1, ret;

	if (!t->set)
		return 0;
	if (fd < 0) {
		own = rl_open_named(name, 0, 0, NULL);
		if (own < 0)
			return name_error(name, own);
		fd = own;
	}
	ret = rl_set_parent(fd, t->root ? NULL : t->parent, t->weight);
	if (own >= 0)
		rl_close(own);
	return ret ? parent_error(name, t, ret) : 0;
}

/**
 * tree_option() - take one of --parent NAME, --weight W and --root
 * @argc: arguments left
 * @argv: at the option
 * @t:    what they set
 *
 * Return: how many arguments it took (0: not one of them), or -1 after a
 * usage error.
 */
int tree_option(int argc, char **argv, struct tree_opts *t)
{
	uint64_t w;

	if (!strcmp(argv[0], "--root")) {
		t->root = true;
		t->set = true;
		return 1;
	}
	if (strcmp(argv[0], "--parent") && strcmp(argv[0], "--weight"))
		return 0;
	if (argc < 2) {
		usage("%s: missing value", argv[0]);
		return -1;
	}
	if (!strcmp(argv[0], "--parent")) {
		if (check_name(argv[1]))
			return -1;
		t->parent = argv[1];
	} else {
		if (sysfile_parse_u64(argv[1], 10, &w) || !w ||
		    w > RL_WEIGHT_MAX) {
			usage("invalid weight '%s' (1 to %d)", argv[1],
			      RL_WEIGHT_MAX);
			return -1;
		}
		t->weight = (uint32_t)w;
	}
	t->set = true;
	return 2;
}

/**
 * tree_options() - take the tree options out of a command line
 * @argc: in: arguments; out: those left
 * @argv: they are moved down over the ones taken
 * @t:    what they set
 *
 * Return: 0, or the exit status of a usage error.
 */
int tree_options(int *argc, char **argv, struct tree_opts *t)
{
	int i, n = 0, took;

	for (i = 0; i < *argc; i += took) {
		took = i ? tree_option(*argc - i, argv + i, t) : 0;
		if (took < 0)
			return EXIT_USAGE;
		if (!took) {
			argv[n++] = argv[i];
			took = 1;
		}
	}
	if (t->root && t->parent)
		return usage("--root and --parent exclude each other");
	if (!t->root && !t->parent && t->set)
		return usage("--weight needs --parent");
	*argc = n;
	return 0;
}

/* A limiter as rlctl tree draws it. */
struct node {
	char name[RL_NAME_MAX];
	char parent[RL_NAME_MAX];
	double target;
	uint64_t weight;
	uint64_t g0, g1;
	double rate;
	int drawn;
};

/* @key of @name, a decimal u64, or 0. */
static uint64_t read_u64(const char *name, const char *key)
{
	uint64_t v = 0;
	char *text;
	int err;

	text = read_text(name, key, &err);
	if (text)
		sysfile_parse_u64(text, 10, &v);
	free(text);
	return v;
}

static void load_node(struct node *n, const char *name)
{
	struct info info;
	char *text;
	int err;

	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", name);
	text = read_text(name, "parent", &err);
	if (text) {
		text[strcspn(text, "\n")] = '\0';
		snprintf(n->parent, sizeof(n->parent), "%s", text);
	}
	free(text);
	n->weight = read_u64(name, "weight");
	n->target = load_info(name, &info) ? 0 : target_rate(&info);
	n->g0 = read_u64(name, "granted");
}

static void draw(struct node *nodes, int count, struct node *n, int depth,
		 double parent_rate)
{
	char t[32], r[32];
	int i;

	n->drawn = 1;
	printf("%*s%-*s rate %-10s achieved %-10s", 2 * depth, "",
	       30 - 2 * depth, n->name, fmt_target(t, sizeof(t), n->target),
	       fmt_num(r, sizeof(r), n->rate));
	if (depth)
		printf(" weight %-4llu share %5.1f%%",
		       (unsigned long long)n->weight,
		       parent_rate > 0 ? 100 * n->rate / parent_rate : 0.0);
	printf("\n");
	for (i = 0; i < count; i++)
		if (!nodes[i].drawn && !strcmp(nodes[i].parent, n->name))
			draw(nodes, count, &nodes[i], depth + 1, n->rate);
}

static void draw_json(struct node *nodes, int count)
{
	int i;

	printf("[");
	for (i = 0; i < count; i++) {
		printf("%s{\"name\":", i ? "," : "");
		json_string(nodes[i].name);
		printf(",\"parent\":");
		json_string(nodes[i].parent);
		printf(",\"weight\":%llu,\"target\":",
		       (unsigned long long)nodes[i].weight);
		json_rate(nodes[i].target);
		printf(",\"achieved\":");
		json_rate(nodes[i].rate);
		printf("}");
	}
	printf("]\n");
}

/* rlctl tree [-i SECONDS]: achieved rates over one interval. */
int cmd_tree(int argc, char **argv)
{
	struct dirent **ents;
	struct node *nodes;
	double secs = 1;
	struct timespec ts;
	int i, n;

	if (argc == 3 && !strcmp(argv[1], "-i")) {
		secs = strtod(argv[2], NULL);
		if (!(secs > 0 && secs <= 3600))
			return usage("invalid interval '%s'", argv[2]);
	} else if (argc != 1) {
		return usage("tree: usage: rlctl tree [-i SECONDS]");
	}
	n = scan_limiters(&ents);
	if (n < 0)
		return 1;
	nodes = calloc(n ? n : 1, sizeof(*nodes));
	if (!nodes)
		return fail("out of memory");
	for (i = 0; i < n && i < TREE_MAX; i++)
		load_node(&nodes[i], ents[i]->d_name);
	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	for (i = 0; i < n && i < TREE_MAX; i++) {
		nodes[i].g1 = read_u64(nodes[i].name, "granted");
		nodes[i].rate = (nodes[i].g1 - nodes[i].g0) / secs;
		free(ents[i]);
	}
	for (; i < n; i++)
		free(ents[i]);
	free(ents);
	n = n < TREE_MAX ? n : TREE_MAX;
	if (json)
		draw_json(nodes, n);
	for (i = 0; i < n && !json; i++)
		if (!nodes[i].parent[0])
			draw(nodes, n, &nodes[i], 0, 0);
	free(nodes);
	return 0;
}
