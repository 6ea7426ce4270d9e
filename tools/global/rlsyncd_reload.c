// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_reload.c - SIGHUP: the configuration files read again and
 * applied as a whole, or not at all. Links whose limiter, resource, Redis
 * and mode are unchanged keep running (their lease, their connection);
 * the others are opened, checked as at start-up, and only when all of
 * them are good are the removed links closed and the resources
 * configured again. A bad new configuration keeps the running one.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "rlsyncd"
#include "tool.h"
#include "rlsyncd_reload.h"
#include "rlsyncd_link.h"
#include "rlsyncd_redis.h"
#include "rlsyncd_conn.h"
#include "rlsyncd_conf.h"

/* The running link that @s continues, or NULL: a new link. */
static struct rls_link *same_link(const struct rls_spec *s,
				  struct rls_link *old, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (old[i].fd >= 0 && !strcmp(old[i].spec.name, s->name) &&
		    !strcmp(old[i].spec.resource, s->resource) &&
		    !strcmp(old[i].spec.redis, s->redis) &&
		    !memcmp(&old[i].spec.conn, &s->conn, sizeof(s->conn)) &&
		    !memcmp(&old[i].spec.ha, &s->ha, sizeof(s->ha)) &&
		    old[i].spec.batch == s->batch)
			return &old[i];
	}
	return NULL;
}

/* A new link: Redis, its library, its resource, then its limiter. */
static int open_new(struct rls_link *l, const char *lua)
{
	int ret;

	if (l->spec.conn.cluster && rls_redis_cluster_library(&l->spec, lua, false))
		return -EIO;
	l->redis = rls_redis_connect(&l->spec, RLS_START_TIMEOUT_MS, true);
	if (!l->redis)
		return -EIO;
	ret = rls_redis_library(l->redis, lua);
	if (!ret && !l->spec.configure) {
		ret = rls_redis_exists(l->redis, l->spec.resource);
		if (ret == 0)
			fprintf(stderr, PROG ": %s: unknown resource %s at redis %s\n",
				l->spec.name, l->spec.resource, l->spec.redis);
		ret = ret > 0 ? 0 : -ENOENT;
	}
	return ret ? ret : rls_link_open(l);
}

/* Undo the new links of @nl (those not in @old). */
static void drop_new(struct rls_link *nl, unsigned int m, const bool *kept,
		     const char *host)
{
	unsigned int i;

	for (i = 0; i < m; i++) {
		if (kept[i])
			continue;
		rls_link_close(&nl[i], host);
		rls_redis_free(nl[i].redis);
	}
}

/* Build the links of @specs into @nl, reusing those of @old. */
static int build(const struct rls_spec *specs, unsigned int m,
		 struct rls_link *old, unsigned int n, struct rls_link *nl,
		 bool *kept, const char *lua)
{
	struct rls_link *o;
	unsigned int i;

	for (i = 0; i < m; i++)
		nl[i].fd = -1;
	for (i = 0; i < m; i++) {
		o = same_link(&specs[i], old, n);
		kept[i] = o;
		if (o) {
			nl[i] = *o;
			o->fd = -1;	/* moved */
			o->redis = NULL;
		} else {
			memset(&nl[i], 0, sizeof(nl[i]));
			nl[i].fd = -1;
		}
		nl[i].spec = specs[i];
		if (!o && open_new(&nl[i], lua))
			return -EINVAL;
	}
	return 0;
}

/* Put the moved links back into @old after a failure. */
static void restore(struct rls_link *nl, unsigned int m, const bool *kept,
		    struct rls_link *old, unsigned int n)
{
	unsigned int i, j;

	for (i = 0; i < m; i++) {
		for (j = 0; kept[i] && j < n; j++) {
			if (old[j].fd < 0 && !old[j].redis &&
			    !strcmp(old[j].spec.name, nl[i].spec.name)) {
				struct rls_spec s = old[j].spec;

				old[j] = nl[i];
				old[j].spec = s;
				break;
			}
		}
	}
}

int rls_reload(const char *path, const struct rls_spec *defaults,
	       const char *host, const char *lua, struct rls_link **links,
	       unsigned int *n)
{
	struct rls_spec *specs = NULL;
	struct rls_link *nl = NULL;
	unsigned int i, m = 0;
	bool *kept = NULL;
	int ret;

	ret = rls_conf_load(path, defaults, &specs, &m);
	if (!ret && m) {
		nl = calloc(m, sizeof(*nl));
		kept = calloc(m, sizeof(*kept));
		ret = nl && kept ? 0 : -ENOMEM;
	}
	if (!ret && m)
		ret = build(specs, m, *links, *n, nl, kept, lua);
	for (i = 0; !ret && i < m; i++)
		if (nl[i].spec.configure &&
		    rls_redis_config(nl[i].redis, &nl[i].spec, host))
			ret = -EIO;
	if (ret || !m) {
		if (nl) {
			drop_new(nl, m, kept, host);
			restore(nl, m, kept, *links, *n);
		}
		fprintf(stderr, PROG ": reload: %s: %s; keeping the running configuration\n",
			path, m ? "not applied" : "no [global NAME] section");
		free(nl);
		free(kept);
		free(specs);
		return -EINVAL;
	}
	for (i = 0; i < *n; i++) {	/* the links that are gone */
		rls_link_close(&(*links)[i], host);
		rls_redis_free((*links)[i].redis);
	}
	free(*links);
	for (i = 0; i < m; i++)
		rls_redis_timeout(nl[i].redis, rls_rpc_ms(&nl[i].spec));
	*links = nl;
	*n = m;
	printf(PROG ": reloaded %s: %u links\n", path, m);
	fflush(stdout);
	free(kept);
	free(specs);
	return 0;
}
