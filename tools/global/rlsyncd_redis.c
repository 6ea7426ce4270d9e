// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_redis.c - rlsyncd's calls into the Redis Function library
 * tools/global/ratelimit.lua, over connections of rlsyncd_conn.c (socket
 * or TLS, with hiredis's protocol code): blocking calls bounded by a
 * timeout. Every command goes through rls_send() and rls_recv(). Links
 * with the same address share one connection, on which the lease
 * renewals of all of them are pipelined: N commands queued with
 * rls_send(), then N replies read with rls_recv(), one round trip.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#define PROG "rlsyncd"
#include "tool.h"
#include "rlsyncd.h"

#define RLS_LIB_MAX	(1 << 20)

/*
 * @conn: what it was made for, the key links share it by
 * @refs: the links that hold it
 * @lib:  the function library was found (or loaded) on it
 */
struct rls_redis {
	struct rls_io *io;
	char addr[RLS_ADDR_MAX];
	char user[RLS_ID_MAX];
	bool say;
	bool stale;	/* READONLY: no longer the primary, connect again */
	unsigned int wait_replicas;	/* WAIT after each grant (0: none) */
	double wait_ms;
	unsigned int short_acks;	/* grants WAIT found short, unread */
	int online;		/* replicas online, from ROLE (-1: unknown) */
	unsigned int wait_now;	/* replicas WAITed for in this round trip */
	unsigned int inflight;	/* grants sent, their replies unread */
	bool role_queued;	/* ROLE queued before them */
	bool subscribed;	/* SUBSCRIBE sent: messages only, not shared */
	char err[RLS_ERR_MAX];	/* the last error, without "redis ADDR: " */
	struct rls_conn conn;	/* what it was opened with: the pool's key */
	unsigned int refs;	/* links and callers holding it */
	bool lib;		/* the function library is known to be there */
	double timeout_ms;	/* the wait for a reply */
	struct rls_redis *next;	/* in pool */
};

/* The connections open, shared by the links of one address. */
static struct rls_redis *pool;

static bool starts(const char *s, const char *with)
{
	return !strncmp(s, with, strlen(with));
}

/* Keep the message as the last error (it may quote it); print it if asked. */
static void __attribute__((format(printf, 2, 3)))
fail(struct rls_redis *r, const char *fmt, ...)
{
	char buf[RLS_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	memcpy(r->err, buf, sizeof(r->err));
	if (r->say)
		fprintf(stderr, PROG ": redis %s: %s\n", r->addr, r->err);
}

/*
 * Queue one command (argv/argvlen as redisCommandArgv; @argvlen NULL:
 * strings); nothing is sent yet. 0, or -EIO with r->err set and the
 * connection stale: the replies of a pipeline would lose their order.
 */
static int rls_send(struct rls_redis *r, int argc, const char **argv,
		    const size_t *argvlen)
{
	if (!rls_io_queue(r->io, argc, argv, argvlen))
		return 0;
	snprintf(r->err, sizeof(r->err), "%s", rls_io_error(r->io));
	/* what was queued before it has no caller to read its reply */
	r->stale = true;
	return -EIO;
}

/*
 * Send what is queued, then read the next reply (NULL with r->err set on
 * error; the caller frees it with freeReplyObject). A READONLY error
 * reply means the server is a replica now (a failover), NOREPLICAS that
 * it lost its replicas (min-replicas-to-write; cut off from the
 * sentinels?): the connection is stale, and the next one asks the
 * sentinels again.
 */
static redisReply *rls_recv(struct rls_redis *r)
{
	redisReply *rep = rls_io_reply(r->io);

	if (!rep) {
		snprintf(r->err, sizeof(r->err), "%s", rls_io_error(r->io));
		return NULL;
	}
	if (rep->type == REDIS_REPLY_ERROR && rep->str &&
	    (starts(rep->str, "READONLY") || starts(rep->str, "NOREPLICAS")))
		r->stale = true;
	return rep;
}

/* One command and its reply. */
static redisReply *call(struct rls_redis *r, int argc, const char **argv,
			const size_t *argvlen)
{
	return rls_send(r, argc, argv, argvlen) ? NULL : rls_recv(r);
}

/* The error of the last connection that failed. */
static char connect_err[RLS_ERR_MAX];

const char *rls_redis_error(const struct rls_redis *r)
{
	return r ? r->err : connect_err;
}

/*
 * What error @e of @cmd means, one line in @buf: the errors of
 * authentication and ACLs explained, others as Redis says them.
 */
static const char *meaning(const struct rls_redis *r, const char *cmd,
			   const char *e, char *buf, size_t len)
{
	if (starts(e, "WRONGPASS") || starts(e, "ERR invalid password") ||
	    starts(e, "ERR invalid username-password"))
		snprintf(buf, len, "%s: wrong username or password (%s)", cmd, e);
	else if (starts(e, "NOAUTH"))
		snprintf(buf, len, "%s: the server needs a password: give password-file = (%s)",
			 cmd, e);
	else if (starts(e, "NOPERM"))
		snprintf(buf, len, "%s: denied by the ACL of user %s; %s (%s)", cmd,
			 r->user[0] ? r->user : "default",
			 "rlsyncd(8) gives the ACL it needs", e);
	else if (starts(e, "ERR AUTH") && strstr(e, "without any password"))
		snprintf(buf, len, "%s: a password was given but the server has none (%s)",
			 cmd, e);
	else
		snprintf(buf, len, "%s: %s", cmd, e);
	return buf;
}

static void explain(struct rls_redis *r, const char *cmd, const redisReply *rep)
{
	char buf[400];

	fail(r, "%s", meaning(r, cmd, rep->str ? rep->str : "error", buf,
			      sizeof(buf)));
}

/* The reply @rep of @cmd (freed): 0 if not an error, else -EIO. */
static int handshake_reply(struct rls_redis *r, const char *cmd,
			   redisReply *rep)
{
	int ret = -EIO;

	if (!rep)
		fail(r, "%s: %s", cmd, r->err);
	else if (rep->type == REDIS_REPLY_ERROR)
		explain(r, cmd, rep);
	else
		ret = 0;
	freeReplyObject(rep);
	return ret;
}

/* AUTH and SELECT as @c asks, after each connect. */
static int handshake(struct rls_redis *r, const struct rls_conn *c)
{
	/* AUTH user password, or AUTH password (requirepass) */
	const char *auth[3] = { "AUTH", c->user[0] ? c->user : c->pass, c->pass };
	char db[16];
	const char *select[2] = { "SELECT", db };

	if (c->pass[0] &&
	    handshake_reply(r, "AUTH", call(r, c->user[0] ? 3 : 2, auth, NULL)))
		return -EIO;
	snprintf(db, sizeof(db), "%u", c->db);
	if (c->db && handshake_reply(r, "SELECT", call(r, 2, select, NULL)))
		return -EIO;
	return 0;
}

/* A connection to @c open and usable, shared: one more holder. */
static struct rls_redis *shared(const struct rls_conn *c)
{
	struct rls_redis *r;

	for (r = pool; r; r = r->next) {
		if (!rls_redis_broken(r) && !r->subscribed &&
		    !memcmp(&r->conn, c, sizeof(*c))) {
			r->refs++;
			return r;
		}
	}
	return NULL;
}

struct rls_redis *rls_redis_connect_conn(const struct rls_conn *c,
					 const char *addr, double timeout_ms,
					 bool say)
{
	struct rls_redis *r = shared(c);
	char err[RLS_ERR_MAX];

	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	snprintf(r->addr, sizeof(r->addr), "%s", addr);
	snprintf(r->user, sizeof(r->user), "%s", c->user);
	r->say = say;
	r->conn = *c;
	r->refs = 1;
	r->timeout_ms = timeout_ms;
	r->online = -1;
	r->io = rls_io_open(c, timeout_ms, err, sizeof(err));
	if (!r->io) {
		fail(r, "%s", err);
	} else if (!handshake(r, c)) {
		r->next = pool;
		pool = r;
		return r;
	}
	snprintf(connect_err, sizeof(connect_err), "%s", r->err);
	rls_redis_free(r);
	return NULL;
}

/*
 * The replicas online in a primary's ROLE reply @rep (its third element
 * lists them: those in sync, or syncing, are left out); -1 if not a
 * primary's.
 */
static int role_online(const redisReply *rep)
{
	if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements < 3 ||
	    !rep->element[0]->str || strcmp(rep->element[0]->str, "master") ||
	    rep->element[2]->type != REDIS_REPLY_ARRAY)
		return -1;
	return (int)rep->element[2]->elements;
}

/* ROLE: 0 if @r's server is a primary, else -EIO after a message. */
static int is_primary(struct rls_redis *r)
{
	const char *argv[1] = { "ROLE" };
	redisReply *rep = rls_send(r, 1, argv, NULL) ? NULL : rls_recv(r);
	int ret = -EIO;

	if (!rep)
		fail(r, "ROLE: %s", r->err);
	else if (rep->type == REDIS_REPLY_ERROR)
		explain(r, "ROLE", rep);
	else if (rep->type != REDIS_REPLY_ARRAY || !rep->elements ||
		 !rep->element[0]->str)
		fail(r, "ROLE: an unexpected reply");
	else if (strcmp(rep->element[0]->str, "master"))
		fail(r,
		     "ROLE says %s, not master: the sentinels named a server that is no primary (a failover under way?)",
		     rep->element[0]->str);
	else
		ret = 0;
	r->online = role_online(rep);
	freeReplyObject(rep);
	return ret;
}

struct rls_redis *rls_redis_connect(const struct rls_spec *s,
				    double timeout_ms, bool say)
{
	struct rls_conn c = s->conn;
	char label[RLS_ADDR_MAX + RLS_ID_MAX + 32];
	struct rls_redis *r;

	if (s->conn.cluster)
		return rls_cluster_connect(s, timeout_ms, say);
	if (!s->ha.n) {
		r = rls_redis_connect_conn(&c, s->redis, timeout_ms, say);
		goto wait;
	}
	if (rls_sentinel_primary(s, timeout_ms, &c, connect_err,
				 sizeof(connect_err))) {
		if (say)
			fprintf(stderr, PROG ": %s: %s\n",
				rls_sentinel_label(s, label, sizeof(label)),
				connect_err);
		return NULL;
	}
	r = rls_redis_connect_conn(&c, rls_conn_label(&c, label, sizeof(label)),
				   timeout_ms, say);
	if (r && is_primary(r)) {
		snprintf(connect_err, sizeof(connect_err), "%s", r->err);
		rls_redis_free(r);
		r = NULL;
	}
	if (!r) {
		/* the link's line names the sentinels: name the primary too */
		char why[sizeof(connect_err)];

		snprintf(why, sizeof(why), "%s", connect_err);
		snprintf(connect_err, sizeof(connect_err), "primary %.120s: %.260s",
			 label, why);
		return NULL;
	}
wait:
	if (r) {
		r->wait_replicas = s->ha.wait_replicas;
		r->wait_ms = s->ha.wait_ms;
	}
	return r;
}

int rls_redis_master_addr(struct rls_redis *r, const char *master,
			  struct rls_conn *c)
{
	const char *argv[3] = { "SENTINEL", "get-master-addr-by-name", master };
	redisReply *rep = rls_send(r, 3, argv, NULL) ? NULL : rls_recv(r);
	long port;
	int ret = -EIO;

	if (!rep) {
		fail(r, "SENTINEL: %s", r->err);
	} else if (rep->type == REDIS_REPLY_NIL) {
		fail(r, "no master named '%s'", master);
		ret = -ENOENT;
	} else if (rep->type == REDIS_REPLY_ERROR) {
		explain(r, "SENTINEL get-master-addr-by-name", rep);
	} else if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
		   !rep->element[0]->str || !rep->element[1]->str ||
		   strlen(rep->element[0]->str) >= sizeof(c->host)) {
		fail(r, "SENTINEL get-master-addr-by-name: an unexpected reply");
	} else {
		port = strtol(rep->element[1]->str, NULL, 10);
		if (port > 0 && port <= 65535) {
			snprintf(c->host, sizeof(c->host), "%s",
				 rep->element[0]->str);
			c->port = (unsigned int)port;
			ret = 0;
		} else {
			fail(r, "SENTINEL named port '%s'", rep->element[1]->str);
		}
	}
	freeReplyObject(rep);
	return ret;
}

void rls_redis_stale(struct rls_redis *r)
{
	if (r)
		r->stale = true;
}

int rls_redis_subscribe(struct rls_redis *r, const char *channel)
{
	const char *argv[2] = { "SUBSCRIBE", channel };
	redisReply *rep;
	int ret = -EIO;

	if (r->refs > 1)
		return -EBUSY;
	r->subscribed = true;
	rep = call(r, 2, argv, NULL);
	if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 3 &&
	    rep->element[0]->str && !strcmp(rep->element[0]->str, "subscribe"))
		ret = 0;
	else if (rep && rep->type == REDIS_REPLY_ERROR)
		explain(r, "SUBSCRIBE", rep);
	else
		fail(r, "SUBSCRIBE: %s", rep ? "an unexpected reply" : r->err);
	freeReplyObject(rep);
	return ret;
}

int rls_redis_message(struct rls_redis *r, char *buf, size_t len)
{
	redisReply *rep;

	while ((rep = rls_io_poll(r->io))) {
		if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 3 &&
		    rep->element[0]->str && rep->element[2]->str &&
		    !strcmp(rep->element[0]->str, "message")) {
			snprintf(buf, len, "%s", rep->element[2]->str);
			freeReplyObject(rep);
			return 1;
		}
		freeReplyObject(rep);
	}
	if (!rls_io_broken(r->io))
		return 0;
	snprintf(r->err, sizeof(r->err), "%s", rls_io_error(r->io));
	return -EIO;
}

const char *rls_redis_addr(const struct rls_redis *r)
{
	return r ? r->addr : "";
}

unsigned int rls_redis_short_acks(struct rls_redis *r)
{
	unsigned int n = r ? r->short_acks : 0;

	if (r)
		r->short_acks = 0;
	return n;
}

void rls_redis_timeout(struct rls_redis *r, double timeout_ms)
{
	if (r) {
		rls_io_timeout(r->io, timeout_ms);
		r->timeout_ms = timeout_ms;
	}
}

void rls_redis_free(struct rls_redis *r)
{
	struct rls_redis **p;

	if (!r || --r->refs)
		return;
	for (p = &pool; *p; p = &(*p)->next) {
		if (*p == r) {
			*p = r->next;
			break;
		}
	}
	rls_io_close(r->io);
	free(r);
}

const struct rls_conn *rls_redis_conn(const struct rls_redis *r)
{
	return r ? &r->conn : NULL;
}

bool rls_redis_broken(const struct rls_redis *r)
{
	return !r || rls_io_broken(r->io) || r->stale;
}

/* The first grant of a primary that WAIT found short: one line. */
static void wait_said(const struct rls_redis *r, const redisReply *w,
		      long long acks)
{
	const char *why = r->err;

	if (w)
		why = w->str ? w->str : "an unexpected reply";
	fprintf(stderr, PROG ": redis %s: ", r->addr);
	if (!r->wait_now)
		fprintf(stderr, "WAIT: %d of %u replicas online (ROLE): grants not waited for",
			r->online, r->wait_replicas);
	else if (acks < 0)
		fprintf(stderr, "WAIT after a grant: %s", why);
	else
		fprintf(stderr, "WAIT: %lld of %u replicas acknowledged a grant within %.0f ms",
			acks, r->wait_replicas, r->wait_ms);
	fputs(" (grants stand; counted as wait_short)\n", stderr);
}

/*
 * After a grant (@rep, FCALL's reply): WAIT's reply, queued behind it
 * unless no replica was online. Fewer acknowledgements than
 * wait-replicas, or no reply: the grant stands, and is counted
 * (rls_redis_short_acks()); the first of a primary is said.
 */
static void wait_reply(struct rls_redis *r, const redisReply *rep)
{
	redisReply *w = r->wait_now ? rls_recv(r) : NULL;
	long long acks = w && w->type == REDIS_REPLY_INTEGER ? w->integer :
			 r->wait_now ? -1 : 0;

	/* said once per primary, not per connection: it may reconnect often */
	static char said[RLS_ADDR_MAX];

	if (rep && rep->type != REDIS_REPLY_ERROR &&
	    acks < (long long)r->wait_replicas) {
		r->short_acks++;
		if (strcmp(said, r->addr))
			wait_said(r, w, acks);
		snprintf(said, sizeof(said), "%s", r->addr);
	}
	freeReplyObject(w);
}

/*
 * Before the first grant of a round trip, with wait-replicas: how many
 * replicas its WAITs ask for (those ROLE found online last time, at most
 * wait-replicas: WAIT for a replica that is not there would hold every
 * grant for the whole timeout), and ROLE queued to count them again for
 * the next round trip. 0 or -EIO.
 */
static int send_role(struct rls_redis *r)
{
	const char *argv[1] = { "ROLE" };

	if (!r->wait_replicas || r->inflight)
		return 0;
	r->wait_now = r->wait_replicas;
	if (r->online >= 0 && (unsigned int)r->online < r->wait_now)
		r->wait_now = (unsigned int)r->online;
	if (rls_send(r, 1, argv, NULL))
		return -EIO;
	r->role_queued = true;
	return 0;
}

/* ROLE's reply, read before the first grant's: the replicas online. */
static void role_reply(struct rls_redis *r)
{
	redisReply *rep;

	if (!r->role_queued)
		return;
	r->role_queued = false;
	rep = rls_recv(r);
	/* an ACL without +role: WAIT for wait-replicas, as before */
	r->online = role_online(rep);
	freeReplyObject(rep);
}

/* A grant's command: ROLE before it if first, WAIT behind it; 0 or -EIO. */
static int grant_send(struct rls_redis *r, int argc, const char **argv)
{
	char n_rep[16], ms[24];
	const char *wait[3] = { "WAIT", n_rep, ms };

	if (send_role(r) || rls_send(r, argc, argv, NULL))
		return -EIO;
	if (!r->wait_replicas)
		return 0;
	r->inflight++;
	if (!r->wait_now)
		return 0;
	snprintf(n_rep, sizeof(n_rep), "%u", r->wait_now);
	snprintf(ms, sizeof(ms), "%.0f", r->wait_ms < 1 ? 1 : r->wait_ms);
	return rls_send(r, 3, wait, NULL);
}

/* A grant's reply (NULL on error), with ROLE's before and WAIT's after. */
static redisReply *grant_recv(struct rls_redis *r)
{
	redisReply *rep;

	role_reply(r);
	rep = rls_recv(r);
	if (!r->wait_replicas)
		return rep;
	if (rep || !rls_redis_broken(r))
		wait_reply(r, rep);
	if (r->inflight)
		r->inflight--;
	return rep;
}

/* The arguments of an FCALL. */
struct fcall_args {
	char keys[4][RL_NAME_MAX + 16];
	const char *argv[24];
	int n;
};

/*
 * FCALL @fn on resource @res with @argc string arguments, into @a; rl_lease
 * with the three keys it uses (not the bucket of batch mode, which does
 * not exist in lease mode: with it, a node importing the resource's slot
 * would answer TRYAGAIN instead of serving the call after ASKING).
 */
static void fcall_build(struct fcall_args *a, const char *fn, const char *res,
			int argc, const char *const *args)
{
	int i, nkeys = strcmp(fn, "rl_lease") ? 4 : 3;

	snprintf(a->keys[0], sizeof(a->keys[0]), "rl:{%s}:cfg", res);
	snprintf(a->keys[1], sizeof(a->keys[1]), "rl:{%s}:epoch", res);
	snprintf(a->keys[2], sizeof(a->keys[2]), "rl:{%s}:members", res);
	snprintf(a->keys[3], sizeof(a->keys[3]), "rl:{%s}:bucket", res);
	a->n = 0;
	a->argv[a->n++] = "FCALL";
	a->argv[a->n++] = fn;
	a->argv[a->n++] = nkeys == 3 ? "3" : "4";
	for (i = 0; i < nkeys; i++)
		a->argv[a->n++] = a->keys[i];
	for (i = 0; i < argc && a->n < 24; i++)
		a->argv[a->n++] = args[i];
}

static bool is_err(redisReply *rep, const char *code)
{
	return rep && rep->type == REDIS_REPLY_ERROR && rep->str &&
	       !strncmp(rep->str, code, strlen(code));
}

/*
 * Redis Cluster: @rep (freed) is "MOVED SLOT HOST:PORT" or "ASK SLOT
 * HOST:PORT": the slot map is read again before the next routing, and the
 * FCALL @a is sent once to the node named (after ASKING for ASK). The
 * reply there, or @rep itself if not a redirection.
 */
static redisReply *redirect(struct rls_redis *r, redisReply *rep,
			    struct fcall_args *a)
{
	const char *argv[1] = { "ASKING" };
	bool ask = is_err(rep, "ASK ");
	struct rls_conn node = r->conn;
	struct rls_redis *to;
	char addr[RLS_ADDR_MAX];
	redisReply *again;

	if (!r->conn.cluster || (!ask && !is_err(rep, "MOVED ")))
		return rep;
	rls_cluster_stale();
	if (rls_cluster_parse_node(strrchr(rep->str, ' '), &node, addr,
				   sizeof(addr)))
		return rep;
	to = rls_redis_connect_conn(&node, addr, r->timeout_ms, false);
	if (!to)
		return rep;
	if (to->lib || !rls_cluster_lua ||
	    !rls_redis_library(to, rls_cluster_lua)) {
		if ((!ask || !rls_send(to, 1, argv, NULL)) &&
		    !rls_send(to, a->n, a->argv, NULL)) {
			if (ask)
				freeReplyObject(rls_recv(to));
			again = rls_recv(to);
			if (again) {
				freeReplyObject(rep);
				rep = again;
			}
		}
	}
	rls_redis_free(to);
	return rep;
}

/*
 * FCALL @fn on resource @res with @argc string arguments, its reply (NULL
 * with r->err set); with @grant (a call that takes or leases tokens) and
 * wait-replicas, WAIT pipelined behind it.
 */
static redisReply *fcall_wait(struct rls_redis *r, const char *fn,
			      const char *res, int argc,
			      const char *const *args, bool grant)
{
	struct fcall_args a;
	redisReply *rep;

	fcall_build(&a, fn, res, argc, args);
	if (!grant)
		rep = rls_send(r, a.n, a.argv, NULL) ? NULL : rls_recv(r);
	else
		rep = grant_send(r, a.n, a.argv) ? NULL : grant_recv(r);
	return redirect(r, rep, &a);
}

static redisReply *fcall(struct rls_redis *r, const char *fn, const char *res,
			 int argc, const char *const *args)
{
	return fcall_wait(r, fn, res, argc, args, false);
}

/*
 * The message of an error reply of FCALL, without Redis's " script: ..."
 * tail; errors of authentication and ACLs explained.
 */
static const char *reply_err(const struct rls_redis *r, redisReply *rep,
			     char *buf, size_t len)
{
	char e[256], *tail;

	snprintf(e, sizeof(e), "%s", rep->str ? rep->str : "error");
	tail = strstr(e, " script:");
	if (tail)
		*tail = '\0';
	if (starts(e, "NOPERM") || starts(e, "NOAUTH") || starts(e, "WRONGPASS"))
		return meaning(r, "FCALL", e, buf, len);
	snprintf(buf, len, "%s", e);
	return buf;
}

/*
 * Has Redis the function library? 1 or 0 (a read: FUNCTION LIST), or
 * -EIO after a message.
 */
static int has_library(struct rls_redis *r)
{
	const char *argv[4] = { "FUNCTION", "LIST", "LIBRARYNAME", "ratelimit" };
	redisReply *rep;
	int ret;

	rep = call(r, 4, argv, NULL);
	if (!rep)
		fail(r, "FUNCTION LIST: %s", r->err);
	else if (rep->type == REDIS_REPLY_ERROR && rep->str &&
		 (starts(rep->str, "ERR unknown command") ||
		  starts(rep->str, "ERR Unknown subcommand")))
		fail(r, "FUNCTION LIST: Redis 7.0 or later needed (%s)",
		     rep->str);
	else if (rep->type == REDIS_REPLY_ERROR)
		explain(r, "FUNCTION LIST", rep);
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		freeReplyObject(rep);
		return -EIO;
	}
	ret = rep->type == REDIS_REPLY_ARRAY && rep->elements > 0;
	freeReplyObject(rep);
	return ret;
}

/* The library's text from @lua into @text: its length, 0 after a message. */
static size_t read_library(struct rls_redis *r, const char *lua, char *text,
			   size_t size)
{
	size_t len;
	FILE *in;

	in = fopen(lua, "re");
	len = in ? fread(text, 1, size - 1, in) : 0;
	if (in)
		fclose(in);
	if (!len)
		fail(r, "lacks the library; %s: cannot read it", lua);
	return len;
}

int rls_redis_library_check(struct rls_redis *r, const char *lua)
{
	static char text[RLS_LIB_MAX];
	int ret = has_library(r);

	if (ret)
		return ret < 0 ? ret : 0;
	if (!read_library(r, lua, text, sizeof(text)))
		return -ENOENT;
	printf(PROG ": redis %s lacks the library; the agent would load %s\n",
	       r->addr, lua);
	return 0;
}

int rls_redis_library(struct rls_redis *r, const char *lua)
{
	static char text[RLS_LIB_MAX];
	const char *argv[4] = { "FUNCTION", "LOAD", "REPLACE", text };
	size_t argvlen[4] = { 8, 4, 7 };
	redisReply *rep;
	int ret;

	if (r->lib)
		return 0;
	ret = has_library(r);
	if (ret) {
		r->lib = ret > 0;
		return ret < 0 ? ret : 0;
	}
	argvlen[3] = read_library(r, lua, text, sizeof(text));
	if (!argvlen[3])
		return -ENOENT;
	rep = call(r, 4, argv, argvlen);
	if (!rep)
		fail(r, "FUNCTION LOAD %s: %s", lua, r->err);
	else if (rep->type == REDIS_REPLY_ERROR)
		explain(r, "FUNCTION LOAD", rep);
	if (!rep || rep->type == REDIS_REPLY_ERROR) {
		freeReplyObject(rep);
		return -EIO;
	}
	freeReplyObject(rep);
	r->lib = true;
	return 0;
}

static void fmt(char *buf, size_t len, double v)
{
	snprintf(buf, len, "%.6f", v);
}

int rls_redis_cluster_slots(struct rls_redis *r,
			    void (*add)(void *arg, unsigned int lo,
					unsigned int hi, const char *host,
					unsigned int port),
			    void *arg)
{
	const char *argv[2] = { "CLUSTER", "SLOTS" };
	redisReply *rep = call(r, 2, argv, NULL), *e, *node;
	size_t i;

	if (!rep || rep->type != REDIS_REPLY_ARRAY) {
		if (rep && rep->type == REDIS_REPLY_ERROR)
			explain(r, "CLUSTER SLOTS", rep);
		else
			fail(r, "CLUSTER SLOTS: %s", rep ? "not an array" : r->err);
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
		add(arg, (unsigned int)e->element[0]->integer,
		    (unsigned int)e->element[1]->integer, node->element[0]->str,
		    (unsigned int)node->element[1]->integer);
	}
	freeReplyObject(rep);
	return 0;
}

int rls_redis_config(struct rls_redis *r, const struct rls_spec *s,
		     const char *host)
{
	char a[6][32], err[256];
	const char *args[9] = {
		host, s->batch ? "batch" : "lease", a[0], s->algorithm,
		a[1], a[2], a[3], a[4], a[5],
	};
	redisReply *rep;
	int ret = 0;

	fmt(a[0], sizeof(a[0]), s->capacity);
	fmt(a[1], sizeof(a[1]), s->lease_ms);
	fmt(a[2], sizeof(a[2]), s->refresh_ms);
	fmt(a[3], sizeof(a[3]), s->hold_ms);
	fmt(a[4], sizeof(a[4]), s->static_rate);
	fmt(a[5], sizeof(a[5]), s->capacity);
	rep = fcall(r, "rl_config", s->resource, 9, args);
	if (!rep || rep->type != REDIS_REPLY_ARRAY) {
		fprintf(stderr, PROG ": redis %s: configuring resource %s: %s\n",
			r->addr, s->resource,
			rep ? reply_err(r, rep, err, sizeof(err)) : r->err);
		ret = rep ? -EINVAL : -EIO;
	} else if (rep->elements == 2 && rep->element[1]->integer && rls_verbose) {
		printf("rlsyncd: resource %s configured (version %lld)\n",
		       s->resource, rep->element[0]->integer);
	}
	freeReplyObject(rep);
	return ret;
}

int rls_redis_exists(struct rls_redis *r, const char *res)
{
	redisReply *rep = fcall(r, "rl_info", res, 0, NULL);
	char err[256];
	int ret = 1;

	if (is_err(rep, "RLNOCONF")) {
		ret = 0;
	} else if (!rep || rep->type != REDIS_REPLY_ARRAY) {
		fprintf(stderr, PROG ": redis %s: resource %s: %s\n", r->addr,
			res, rep ? reply_err(r, rep, err, sizeof(err)) : r->err);
		ret = -EIO;
	}
	freeReplyObject(rep);
	return ret;
}

static double num_of(const redisReply *e)
{
	if (e->type == REDIS_REPLY_INTEGER)
		return (double)e->integer;
	return e->str ? strtod(e->str, NULL) : 0;
}

/* The arguments of rl_lease, into @a. */
static void lease_args(struct fcall_args *a, const char *res, const char *host,
		       const double in[4], char num[4][32])
{
	const char *args[5] = { host, num[0], num[1], num[2], num[3] };
	int i;

	for (i = 0; i < 4; i++)
		fmt(num[i], sizeof(num[i]), in[i]);
	fcall_build(a, "rl_lease", res, 5, args);
}

int rls_redis_lease_send(struct rls_redis *r, const char *res,
			 const char *host, const double in[4])
{
	struct fcall_args a;
	char num[4][32];

	lease_args(&a, res, host, in, num);
	return grant_send(r, a.n, a.argv);
}

int rls_redis_lease_recv(struct rls_redis *r, const char *res,
			 const char *host, const double in[4],
			 struct rls_lease *out, char *err, unsigned int errlen)
{
	redisReply *rep = grant_recv(r);
	struct fcall_args a;
	char num[4][32];
	int ret = 0;

	if (is_err(rep, "MOVED ") || is_err(rep, "ASK ")) {
		lease_args(&a, res, host, in, num);
		rep = redirect(r, rep, &a);
	}

	if (is_err(rep, "RLNOCONF"))
		ret = -ENOENT;
	else if (is_err(rep, "CLUSTERDOWN") || is_err(rep, "TRYAGAIN") ||
		 is_err(rep, "LOADING") || is_err(rep, "MASTERDOWN"))
		ret = -EAGAIN;
	else if (rep && rep->type == REDIS_REPLY_ERROR &&
		 strstr(rep->str, "not found"))
		ret = -ENOEXEC;
	else if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements < 9)
		ret = -EIO;
	if (ret) {
		if (rep)
			reply_err(r, rep, err, errlen);
		else
			snprintf(err, errlen, "%s", r->err);
		if (ret == -ENOEXEC)	/* looked for again */
			r->lib = false;
		freeReplyObject(rep);
		return ret;
	}
	out->has = num_of(rep->element[0]);
	out->floor = num_of(rep->element[1]);
	out->lease_ms = num_of(rep->element[2]);
	out->refresh_ms = num_of(rep->element[3]);
	out->hold_ms = num_of(rep->element[4]);
	out->learning = num_of(rep->element[5]) != 0;
	freeReplyObject(rep);
	return 0;
}

int rls_redis_lease(struct rls_redis *r, const char *res, const char *host,
		    const double in[4], struct rls_lease *out, char *err,
		    unsigned int errlen)
{
	if (rls_redis_lease_send(r, res, host, in)) {
		snprintf(err, errlen, "%s", r->err);
		return -EIO;
	}
	return rls_redis_lease_recv(r, res, host, in, out, err, errlen);
}

void rls_redis_leave(struct rls_redis *r, const char *res, const char *host)
{
	const char *args[1] = { host };

	if (!rls_redis_broken(r))
		freeReplyObject(fcall(r, "rl_leave", res, 1, args));
}

int rls_redis_take(struct rls_redis *r, const char *res, uint64_t n,
		   uint64_t *got, double *wait_ms, char *err, unsigned int errlen)
{
	char a[32];
	const char *args[2] = { a, "0" };
	redisReply *rep;
	int ret;

	snprintf(a, sizeof(a), "%llu", (unsigned long long)n);
	rep = fcall_wait(r, "rl_take", res, 2, args, true);
	if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements < 2) {
		ret = is_err(rep, "RLNOCONF") ? -ENOENT : -EIO;
		if (rep)
			reply_err(r, rep, err, errlen);
		else
			snprintf(err, errlen, "%s", r->err);
		freeReplyObject(rep);
		return ret;
	}
	*got = (uint64_t)num_of(rep->element[0]);
	*wait_ms = num_of(rep->element[1]);
	freeReplyObject(rep);
	return 0;
}

int64_t rls_redis_give(struct rls_redis *r, const char *res, uint64_t n)
{
	char a[32];
	const char *args[1] = { a };
	redisReply *rep;
	int64_t back = -EIO;

	if (rls_redis_broken(r))
		return -EIO;
	snprintf(a, sizeof(a), "%llu", (unsigned long long)n);
	rep = fcall(r, "rl_give", res, 1, args);
	if (rep && rep->type == REDIS_REPLY_INTEGER)
		back = rep->integer;
	freeReplyObject(rep);
	return back;
}
