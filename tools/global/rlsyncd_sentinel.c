// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_sentinel.c - the primary of a link that names Redis Sentinel
 * (sentinels = HOST:PORT, ...; master-name = NAME): the sentinels are
 * asked in turn, from the one that answered last, with SENTINEL
 * get-master-addr-by-name; rls_sentinel_connect() then connects to the
 * address named and checks with ROLE that it is the primary.
 *
 * A failover is followed by connecting again: rls_redis_broken() is true
 * after a connection loss, a READONLY reply (the old primary demoted) or
 * a NOREPLICAS one (min-replicas-to-write), and every reconnection asks
 * the sentinels: at once, then every 100 ms while the link's lease runs,
 * so that a promotion within the lease is followed before it ends; after
 * it the link backs off and the kernel's lease fallback holds the limit
 * (retry_ns(), rlsyncd_link.c) until a +switch-master event (below). A primary cut off from the
 * sentinels but not from this host answers on: its links ask the
 * sentinels whether it is still theirs (sentinel_follow(),
 * rlsyncd_link.c), once a second while WAIT finds grants short, and every
 * half lease. And a subscription to the sentinels' +switch-master events
 * (struct watch, read at each turn of the main loop, without waiting:
 * rls_sentinel_switched()) moves the links to a new primary as soon as a
 * sentinel names it: a switchover with the old primary alive costs no
 * more than a failover.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#define PROG "rlsyncd"
#include "rlsyncd_sentinel.h"
#include "rlsyncd_conn.h"
#include "rlsyncd_conf.h"

/* The sentinel that answered last: asked first next time. */
static unsigned int first;

#define NS_PER_SEC	1000000000ULL

/**
 * struct watch - the subscriptions to +switch-master of one set of
 * sentinels and master name, shared by the links that name them
 * @ha:       those sentinels (the key)
 * @r:        per sentinel, its subscribed connection (NULL: none now)
 * @tried_ns: the last try to open one (one a second, one sentinel each)
 * @turn:     the sentinel to try next
 * @switches: the switches of @ha's master seen
 * @primary:  the primary the last one named, HOST:PORT
 */
struct watch {
	struct rls_ha ha;
	struct rls_redis *r[RLS_SENTINELS_MAX];
	uint64_t tried_ns;
	unsigned int turn;
	unsigned int switches;
	char primary[RLS_ADDR_MAX + 16];
	struct watch *next;
};

static struct watch *watches;

const char *rls_sentinel_label(const struct rls_spec *s, char *buf,
			       size_t len)
{
	snprintf(buf, len, "sentinel master %s", s->ha.master);
	return buf;
}

/*
 * SENTINEL get-master-addr-by-name @master, on a sentinel: 0 with @c's
 * host and port set, -ENOENT when the sentinel does not know @master,
 * -EIO (rls_redis_error() says why).
 */
static int master_addr(struct rls_redis *r, const char *master,
		       struct rls_conn *c)
{
	const char *argv[3] = { "SENTINEL", "get-master-addr-by-name", master };
	redisReply *rep = rls_redis_send(r, 3, argv, NULL) ? NULL : rls_redis_recv(r);
	long port;
	int ret = -EIO;

	if (!rep) {
		rls_redis_fail(r, "SENTINEL: %s", rls_redis_error(r));
	} else if (rep->type == REDIS_REPLY_NIL) {
		rls_redis_fail(r, "no master named '%s'", master);
		ret = -ENOENT;
	} else if (rep->type == REDIS_REPLY_ERROR) {
		rls_redis_explain(r, "SENTINEL get-master-addr-by-name", rep);
	} else if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
		   !rep->element[0]->str || !rep->element[1]->str ||
		   strlen(rep->element[0]->str) >= sizeof(c->host)) {
		rls_redis_fail(r, "SENTINEL get-master-addr-by-name: an unexpected reply");
	} else {
		port = strtol(rep->element[1]->str, NULL, 10);
		if (port > 0 && port <= 65535) {
			snprintf(c->host, sizeof(c->host), "%s",
				 rep->element[0]->str);
			c->port = (unsigned int)port;
			ret = 0;
		} else {
			rls_redis_fail(r, "SENTINEL named port '%s'", rep->element[1]->str);
		}
	}
	freeReplyObject(rep);
	return ret;
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
		ret = master_addr(r, ha->master, c);
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

struct rls_redis *rls_sentinel_connect(const struct rls_spec *s,
				       double timeout_ms, bool say)
{
	char label[RLS_ADDR_MAX + RLS_ID_MAX + 32], err[RLS_ERR_MAX];
	struct rls_conn c = s->conn;
	struct rls_redis *r;

	if (rls_sentinel_primary(s, timeout_ms, &c, err, sizeof(err))) {
		rls_redis_set_error("%s", err);
		if (say)
			fprintf(stderr, PROG ": %s: %s\n",
				rls_sentinel_label(s, label, sizeof(label)),
				err);
		return NULL;
	}
	r = rls_redis_connect_conn(&c, rls_conn_label(&c, label, sizeof(label)),
				   timeout_ms, say);
	if (r && rls_redis_is_primary(r)) {
		rls_redis_set_error("%s", rls_redis_error(r));
		rls_redis_free(r);
		r = NULL;
	}
	/* the link's line names the sentinels: name the primary too */
	if (!r)
		rls_redis_set_error("primary %.120s: %.260s", label,
				    rls_redis_error(NULL));
	return r;
}

/* The watch of @s's sentinels, made if new; NULL without memory. */
static struct watch *watch_of(const struct rls_spec *s)
{
	struct watch *w;

	for (w = watches; w; w = w->next) {
		if (!memcmp(&w->ha, &s->ha, sizeof(s->ha)))
			return w;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->ha = s->ha;
	w->next = watches;
	watches = w;
	return w;
}

/* Subscribe on the next sentinel of @w without one, if any. */
static void watch_open(struct watch *w, double timeout_ms)
{
	char addr[RLS_ADDR_MAX + 16];
	struct rls_redis *r;
	struct rls_conn sc;
	unsigned int k, i;

	for (k = 0; k < w->ha.n; k++) {
		i = (w->turn + k) % w->ha.n;
		if (!w->r[i])
			break;
	}
	if (k == w->ha.n)
		return;
	w->turn = i + 1;
	memset(&sc, 0, sizeof(sc));
	snprintf(sc.host, sizeof(sc.host), "%s", w->ha.host[i]);
	sc.port = w->ha.port[i];
	snprintf(sc.pass, sizeof(sc.pass), "%s", w->ha.pass);
	r = rls_redis_connect_conn(&sc, rls_conn_label(&sc, addr, sizeof(addr)),
				   timeout_ms, false);
	if (r && rls_redis_subscribe(r, "+switch-master")) {
		rls_redis_free(r);
		r = NULL;
	}
	w->r[i] = r;
}

/*
 * The messages of @w's subscriptions: "MASTER OLD-IP OLD-PORT NEW-IP
 * NEW-PORT" (each sentinel publishes its own when it switches); a broken
 * connection is dropped, to be opened again.
 */
static void watch_read(struct watch *w)
{
	char msg[RLS_ID_MAX + 2 * RLS_ADDR_MAX + 32], *f[5], *save;
	struct rls_conn c;
	unsigned int i, k;
	int ret;

	for (i = 0; i < w->ha.n; i++) {
		while (w->r[i] && (ret = rls_redis_message(w->r[i], msg, sizeof(msg)))) {
			if (ret < 0) {
				rls_redis_free(w->r[i]);
				w->r[i] = NULL;
				break;
			}
			f[0] = strtok_r(msg, " ", &save);
			for (k = 1; k < 5; k++)
				f[k] = f[k - 1] ? strtok_r(NULL, " ", &save) : NULL;
			if (!f[4] || strcmp(f[0], w->ha.master) ||
			    strlen(f[3]) >= sizeof(c.host))
				continue;
			memset(&c, 0, sizeof(c));
			snprintf(c.host, sizeof(c.host), "%s", f[3]);
			c.port = (unsigned int)strtoul(f[4], NULL, 10);
			rls_conn_label(&c, w->primary, sizeof(w->primary));
			w->switches++;
		}
	}
}

bool rls_sentinel_switched(const struct rls_spec *s, uint64_t now,
			   unsigned int *seen, const char **primary)
{
	struct watch *w = watch_of(s);

	if (!w)
		return false;
	if (now - w->tried_ns >= NS_PER_SEC) {
		w->tried_ns = now;
		watch_open(w, rls_rpc_ms(s));
	}
	watch_read(w);
	if (*seen == w->switches)
		return false;
	*seen = w->switches;
	*primary = w->primary;
	return true;
}
