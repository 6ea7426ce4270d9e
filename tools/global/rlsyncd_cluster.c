// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_cluster.c - Redis Cluster (cluster = yes): the slot map of the
 * cluster read from the seed node given as redis = (CLUSTER SLOTS), each
 * resource routed to the primary owning the slot of its hash tag {R}, so
 * that the links of one primary share its connection and its pipelined
 * round trip. A MOVED or ASK reply (rlsyncd_redis.c follows it once)
 * marks the maps stale: they are read again before the next routing, and
 * links whose slot moved reconnect to the new owner. A primary that does
 * not answer marks them stale too: a link of its slots reads them again
 * at each try (every 100 ms while its lease runs) until they name the
 * replica promoted in its place. The function library is loaded on every
 * primary (rls_redis_cluster_library(), rlsyncd_redis.c).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#define PROG "rlsyncd"
#include "tool.h"
#include "rlsyncd_cluster.h"
#include "rlsyncd_conn.h"
#include "rlsyncd_conf.h"

#define SLOTS		16384
#define NODES_MAX	64
#define NS_PER_MS	1000000ULL
/* A stale map is read again at most this often. */
#define REREAD_MS	50

struct node {
	char host[RLS_ADDR_MAX];
	unsigned int port;
};

/*
 * The slot map of the cluster reached through @seed.
 * @owner: per slot, 1 + the index in @nodes of its primary (0: none)
 * @libs:  the library was checked on every primary of this map
 */
struct cmap {
	struct rls_conn seed;
	struct node nodes[NODES_MAX];
	unsigned int n;
	unsigned char owner[SLOTS];
	bool read, stale, libs;
	uint64_t read_ns;
	struct cmap *next;
};

static struct cmap *maps;

/*
 * CRC16 of Redis Cluster's key hashing (CCITT/XMODEM: polynomial 0x1021,
 * initial value 0, no reflection), bit by bit.
 */
static unsigned int crc16(const char *p, size_t len)
{
	unsigned int crc = 0;
	int bit;

	while (len--) {
		crc ^= (unsigned int)(unsigned char)*p++ << 8;
		for (bit = 0; bit < 8; bit++)
			crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
		crc &= 0xffff;
	}
	return crc;
}

/* The slot of @key: of what is between its first { and the next }, if not empty. */
unsigned int rls_cluster_slot(const char *key)
{
	const char *open = strchr(key, '{'), *close;

	if (open) {
		close = strchr(open + 1, '}');
		if (close && close > open + 1)
			return crc16(open + 1, (size_t)(close - open - 1)) % SLOTS;
	}
	return crc16(key, strlen(key)) % SLOTS;
}

unsigned int rls_cluster_res_slot(const char *res)
{
	char key[RL_NAME_MAX + 16];

	snprintf(key, sizeof(key), "rl:{%s}:cfg", res);
	return rls_cluster_slot(key);
}

/* The slot of @s's resource. */
static unsigned int res_slot(const struct rls_spec *s)
{
	return rls_cluster_res_slot(s->resource);
}

void rls_cluster_stale(void)
{
	struct cmap *m;

	for (m = maps; m; m = m->next)
		m->stale = true;
}

int rls_cluster_parse_node(const char *v, struct rls_conn *node, char *addr,
			   size_t len)
{
	const char *colon;
	char *end;
	long port;

	if (!v)
		return -EINVAL;
	while (*v == ' ')
		v++;
	colon = strrchr(v, ':');
	if (!colon || colon == v || (size_t)(colon - v) >= sizeof(node->host))
		return -EINVAL;
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 1 || port > 65535)
		return -EINVAL;
	snprintf(node->host, sizeof(node->host), "%.*s", (int)(colon - v), v);
	node->port = (unsigned int)port;
	snprintf(addr, len, "%s", v);
	return 0;
}

/* One range of CLUSTER SLOTS into the map @m. */
static void add_range(struct cmap *m, unsigned int lo, unsigned int hi,
		      const char *host, unsigned int port)
{
	unsigned int i;

	for (i = 0; i < m->n; i++) {
		if (m->nodes[i].port == port && !strcmp(m->nodes[i].host, host))
			break;
	}
	if (i == m->n) {
		if (m->n == NODES_MAX || strlen(host) >= RLS_ADDR_MAX)
			return;
		snprintf(m->nodes[i].host, RLS_ADDR_MAX, "%s", host);
		m->nodes[i].port = port;
		m->n++;
	}
	for (; lo <= hi && lo < SLOTS; lo++)
		m->owner[lo] = (unsigned char)(i + 1);
}

/* CLUSTER SLOTS on @r into @m, each range with its primary; 0 or -EIO. */
static int read_slots(struct rls_redis *r, struct cmap *m)
{
	const char *argv[2] = { "CLUSTER", "SLOTS" };
	redisReply *rep = rls_redis_call(r, 2, argv, NULL), *e, *node;
	size_t i;

	if (!rep || rep->type != REDIS_REPLY_ARRAY) {
		if (rep && rep->type == REDIS_REPLY_ERROR)
			rls_redis_explain(r, "CLUSTER SLOTS", rep);
		else
			rls_redis_fail(r, "CLUSTER SLOTS: %s",
				       rep ? "not an array" : rls_redis_error(r));
		freeReplyObject(rep);
		return -EIO;
	}
	for (i = 0; i < rep->elements; i++) {
		e = rep->element[i];
		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3)
			continue;
		node = e->element[2];
		if (node->type != REDIS_REPLY_ARRAY || node->elements < 2 ||
		    node->element[0]->type != REDIS_REPLY_STRING)
			continue;
		add_range(m, (unsigned int)e->element[0]->integer,
			  (unsigned int)e->element[1]->integer,
			  node->element[0]->str,
			  (unsigned int)node->element[1]->integer);
	}
	freeReplyObject(rep);
	return 0;
}

/* @m's node @i as a connection of @s's credentials; "HOST:PORT" in @addr. */
static void node_conn(const struct cmap *m, unsigned int i,
		      const struct rls_spec *s, struct rls_conn *c, char *addr,
		      size_t len)
{
	*c = s->conn;
	snprintf(c->host, sizeof(c->host), "%s", m->nodes[i].host);
	c->port = m->nodes[i].port;
	snprintf(addr, len, strchr(c->host, ':') ? "[%s]:%u" : "%s:%u",
		 c->host, c->port);
}

/* Read @m from the seed, else from a node it knew; 0 or -EIO. */
static int read_map(struct cmap *m, const struct rls_spec *s,
		    double timeout_ms, bool say)
{
	struct cmap old = *m;
	struct rls_redis *r;
	char addr[RLS_ADDR_MAX];
	struct rls_conn c;
	unsigned int i;
	int ret = -EIO;

	for (i = 0; ret && i <= old.n; i++) {
		if (i == 0) {
			c = s->conn;
			snprintf(addr, sizeof(addr), "%s", s->redis);
		} else {
			node_conn(&old, i - 1, s, &c, addr, sizeof(addr));
		}
		r = rls_redis_connect_conn(&c, addr, timeout_ms, say && i == 0);
		if (!r)
			continue;
		m->n = 0;
		memset(m->owner, 0, sizeof(m->owner));
		ret = read_slots(r, m);
		rls_redis_free(r);
	}
	m->read_ns = rl_now_ns();
	if (ret) {
		memcpy(m->nodes, old.nodes, sizeof(m->nodes));
		memcpy(m->owner, old.owner, sizeof(m->owner));
		m->n = old.n;
		return ret;
	}
	m->read = true;
	m->stale = false;
	if (m->n != old.n || memcmp(m->nodes, old.nodes, sizeof(m->nodes)))
		m->libs = false;
	return 0;
}

/* The map of @s's cluster, NULL if none was made yet. */
static struct cmap *find_map(const struct rls_spec *s)
{
	struct cmap *m;

	for (m = maps; m; m = m->next) {
		if (!memcmp(&m->seed, &s->conn, sizeof(s->conn)))
			break;
	}
	return m;
}

/* The map of @s's cluster, read if new or stale; NULL without one. */
static struct cmap *map_of(const struct rls_spec *s, double timeout_ms,
			   bool say)
{
	struct cmap *m = find_map(s);

	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m)
			return NULL;
		m->seed = s->conn;
		m->next = maps;
		maps = m;
	}
	if ((!m->read || (m->stale && rl_now_ns() - m->read_ns >=
			  REREAD_MS * NS_PER_MS)) &&
	    read_map(m, s, timeout_ms, say) && !m->read)
		return NULL;
	return m;
}

struct rls_redis *rls_cluster_connect(const struct rls_spec *s,
				      double timeout_ms, bool say)
{
	struct cmap *m = map_of(s, timeout_ms, say);
	char addr[RLS_ADDR_MAX];
	struct rls_redis *r;
	struct rls_conn c;
	unsigned int o;

	if (!m)
		return NULL;
	o = m->owner[res_slot(s)];
	if (!o) {
		if (say)
			fprintf(stderr, PROG ": redis %s: %s %u of resource %s\n",
				s->redis, "no primary serves the slot",
				res_slot(s), s->resource);
		return NULL;
	}
	node_conn(m, o - 1, s, &c, addr, sizeof(addr));
	r = rls_redis_connect_conn(&c, addr, timeout_ms, say);
	if (!r)	/* a primary down: maybe failed over, read the map again */
		m->stale = true;
	return r;
}

bool rls_cluster_owns(struct rls_redis *r, const struct rls_spec *s)
{
	const struct rls_conn *c = rls_redis_conn(r);
	struct cmap *m;
	unsigned int o;

	if (!s->conn.cluster || !c)
		return true;
	m = map_of(s, rls_rpc_ms(s), false);
	if (!m)
		return true;
	o = m->owner[res_slot(s)];
	return !o || (m->nodes[o - 1].port == c->port &&
		      !strcmp(m->nodes[o - 1].host, c->host));
}

int rls_cluster_nodes(const struct rls_spec *s, double timeout_ms, bool say,
		      bool *libs)
{
	struct cmap *m = map_of(s, timeout_ms, say);

	if (!m)
		return -EIO;
	*libs = m->libs;
	return (int)m->n;
}

void rls_cluster_node(const struct rls_spec *s, unsigned int i,
		      struct rls_conn *c, char *addr, size_t len)
{
	node_conn(find_map(s), i, s, c, addr, len);
}

void rls_cluster_set_libs(const struct rls_spec *s, bool libs)
{
	struct cmap *m = find_map(s);

	if (m)
		m->libs = libs;
}
