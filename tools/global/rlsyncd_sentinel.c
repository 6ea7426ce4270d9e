// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_sentinel.c - the primary of a link that names Redis Sentinel
 * (sentinels = HOST:PORT, ...; master-name = NAME): the sentinels are
 * asked in turn, from the one that answered last, with SENTINEL
 * get-master-addr-by-name; rlsyncd_redis.c then connects to the address
 * named and checks with ROLE that it is the primary.
 *
 * A failover is followed by connecting again: rls_redis_broken() is true
 * after a connection loss, a READONLY reply (the old primary demoted) or
 * a NOREPLICAS one (min-replicas-to-write), and every reconnection asks
 * the sentinels: at once, then every 100 ms while the link's lease runs,
 * so that a promotion within the lease is followed before it ends; after
 * it the link backs off and the kernel's lease fallback holds the limit
 * (rls_link_retry_ns(), rlsyncd_link.c). A primary cut off from the
 * sentinels but not from this host answers on: rls_sentinel_follow()
 * asks the sentinels whether it is still theirs, once a second while
 * WAIT finds grants short, and every half lease.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define PROG "rlsyncd"
#include "rlsyncd.h"

/* The sentinel that answered last: asked first next time. */
static unsigned int first;

const char *rls_conn_label(const struct rls_conn *c, char *buf, size_t len)
{
	if (!c->port)
		snprintf(buf, len, "unix:%s", c->host);
	else if (strchr(c->host, ':'))
		snprintf(buf, len, "[%s]:%u", c->host, c->port);
	else
		snprintf(buf, len, "%s:%u", c->host, c->port);
	return buf;
}

const char *rls_sentinel_label(const struct rls_spec *s, char *buf,
			       size_t len)
{
	snprintf(buf, len, "sentinel master %s", s->ha.master);
	return buf;
}

int rls_sentinel_primary(const struct rls_spec *s, double timeout_ms,
			 struct rls_conn *c, char *err, size_t errlen)
{
	const struct rls_ha *ha = &s->ha;
	unsigned int i, k, unknown = 0;
	char addr[RLS_ADDR_MAX + 16], last[400] = "";
	struct rls_conn sc;
	struct rls_redis *r;
	int ret;

	for (k = 0; k < ha->n; k++) {
		i = (first + k) % ha->n;
		memset(&sc, 0, sizeof(sc));
		snprintf(sc.host, sizeof(sc.host), "%s", ha->host[i]);
		sc.port = ha->port[i];
		snprintf(sc.pass, sizeof(sc.pass), "%s", ha->pass);
		rls_conn_label(&sc, addr, sizeof(addr));
		r = rls_redis_connect_conn(&sc, addr, timeout_ms, false);
		if (!r) {
			snprintf(last, sizeof(last), "%s: %s", addr,
				 rls_redis_error(NULL));
			continue;
		}
		ret = rls_redis_master_addr(r, ha->master, c);
		if (ret)
			snprintf(last, sizeof(last), "%s: %s", addr,
				 rls_redis_error(r));
		rls_redis_free(r);
		if (!ret) {
			first = i;
			return 0;
		}
		unknown += ret == -ENOENT;
	}
	if (unknown == ha->n)
		snprintf(err, errlen, "no sentinel knows master name '%s' (%u asked)",
			 ha->master, ha->n);
	else
		snprintf(err, errlen, "no sentinel named a primary (%u asked; last: %s)",
			 ha->n, last);
	return -EIO;
}

void rls_sentinel_follow(struct rls_link *l, unsigned int short_acks)
{
	char err[400], now_at[RLS_ADDR_MAX + 16], who[RLS_ID_MAX + 32];
	uint64_t now = rl_now_ns(), every;
	struct rls_conn c = l->spec.conn;

	if (!l->spec.ha.n || rls_redis_broken(l->redis))
		return;
	every = short_acks ? 1000000000ULL :
		(uint64_t)(l->spec.lease_ms / 2 * 1000000.0);
	if (now - l->asked_ns < every)
		return;
	l->asked_ns = now;
	/* sentinels away: keep the primary, which still answers */
	if (rls_sentinel_primary(&l->spec, rls_rpc_ms(&l->spec), &c, err,
				 sizeof(err)))
		return;
	rls_conn_label(&c, now_at, sizeof(now_at));
	if (!strcmp(now_at, rls_redis_addr(l->redis)))
		return;
	fprintf(stderr, PROG ": %s: %s: the primary is %s now, not %s: connecting to it\n",
		l->spec.name, rls_sentinel_label(&l->spec, who, sizeof(who)),
		now_at, rls_redis_addr(l->redis));
	rls_redis_stale(l->redis);
	l->next_ns = now;
}
