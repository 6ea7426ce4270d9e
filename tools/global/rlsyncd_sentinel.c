// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_sentinel.c - the primary of a link that names Redis Sentinel
 * (sentinels = HOST:PORT, ...; master-name = NAME): the sentinels are
 * asked in turn, from the one that answered last, with SENTINEL
 * get-master-addr-by-name; rlsyncd_redis.c then connects to the address
 * named and checks with ROLE that it is the primary.
 *
 * A failover is followed by connecting again: rls_redis_broken() is true
 * after a connection loss or a READONLY reply (the old primary demoted),
 * and every reconnection asks the sentinels. Meanwhile the link backs off
 * and the kernel's lease fallback holds the limit (rlsyncd_link.c).
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

static void addr_of(const struct rls_ha *ha, unsigned int i, char *buf,
		    size_t len)
{
	if (!ha->port[i])
		snprintf(buf, len, "unix:%s", ha->host[i]);
	else if (strchr(ha->host[i], ':'))
		snprintf(buf, len, "[%s]:%u", ha->host[i], ha->port[i]);
	else
		snprintf(buf, len, "%s:%u", ha->host[i], ha->port[i]);
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
		addr_of(ha, i, addr, sizeof(addr));
		memset(&sc, 0, sizeof(sc));
		snprintf(sc.host, sizeof(sc.host), "%s", ha->host[i]);
		sc.port = ha->port[i];
		snprintf(sc.pass, sizeof(sc.pass), "%s", ha->pass);
		r = rls_redis_open(s, &sc, addr, timeout_ms, false);
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
