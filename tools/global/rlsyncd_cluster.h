/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlsyncd_cluster.h - Redis Cluster (rlsyncd_cluster.c): the slot map
 * read from a seed node, the resources routed to the primary owning
 * their slot (the CRC16 of the hash tag {RESOURCE}, as Redis computes
 * it).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLSYNCD_CLUSTER_H
#define RLSYNCD_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>

#include "rlsyncd_conf.h"
#include "rlsyncd_conn.h"

/* The slot of @key. */
unsigned int rls_cluster_slot(const char *key);
/*
 * The slot of resource @res, that of its keys rl:{RES}:... (with or
 * without a cluster: the resources of one slot share rl_lease_many calls).
 */
unsigned int rls_cluster_res_slot(const char *res);
/* The connection to the primary owning @s's resource, shared. */
struct rls_redis *rls_cluster_connect(const struct rls_spec *s,
				      double timeout_ms, bool say);
/* A MOVED or ASK was seen: read the slot maps again before routing. */
void rls_cluster_stale(void);
/* " HOST:PORT" of a MOVED or ASK into @node's host and port, and @addr. */
int rls_cluster_parse_node(const char *v, struct rls_conn *node, char *addr,
			   size_t len);
/*
 * Whether @r is still the primary owning @s's resource (the slot map read
 * again if a redirection was seen): false when the link must reconnect.
 */
bool rls_cluster_owns(struct rls_redis *r, const struct rls_spec *s);
/*
 * The primaries of @s's cluster (the map read if new or stale, with
 * @timeout_ms, a message if @say): their number, or -EIO; *@libs: the
 * function library was found on all of them since they last changed
 * (rls_cluster_set_libs()).
 */
int rls_cluster_nodes(const struct rls_spec *s, double timeout_ms, bool say,
		      bool *libs);
/* Primary @i of them as a connection of @s's credentials; HOST:PORT in @addr. */
void rls_cluster_node(const struct rls_spec *s, unsigned int i,
		      struct rls_conn *c, char *addr, size_t len);
void rls_cluster_set_libs(const struct rls_spec *s, bool libs);

#endif /* RLSYNCD_CLUSTER_H */
