/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlsyncd.h - the parts of rlsyncd(8), the agent that links local named
 * limiters to global resources kept in Redis (Documentation/global.md).
 *
 * Its files, from the top down: calls run down this list, never up
 * (Documentation/rlsyncd.md says what each owns).
 *
 *   rlsyncd.c          command line, start-up checks, the main loop
 *   rlsyncd_reload.c   SIGHUP: the configuration read again
 *   rlsyncd_link.c     one link (struct rls_link): demand; lease mode (the
 *                      lease, the limiter); batch mode (batches fed to it)
 *   rlsyncd_state.c    the state file of a link (/run/rlsyncd/NAME)
 *   rlsyncd_redis.c    the calls into tools/global/ratelimit.lua; a link's
 *                      primary connected to
 *   rlsyncd_cluster.c  Redis Cluster: the slot map, routing per primary
 *   rlsyncd_sentinel.c Redis Sentinel: the primary they name, their events
 *   rlsyncd_conn.c     a connection (struct rls_redis): a socket, TLS,
 *                      hiredis's reader and encoder, AUTH, shared, WAIT
 *   rlsyncd_kernel.c   the module's lease, demand and deposit calls
 *   rlsyncd_conf.c     the [global NAME] sections of ratelimit.d(5) files
 *
 * Errors are one line on stderr, "rlsyncd: what went wrong".
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLSYNCD_H
#define RLSYNCD_H

#include <stdbool.h>
#include <stdint.h>

#include "libratelimit.h"

#define RLS_ADDR_MAX	256
#define RLS_ID_MAX	128
#define RLS_PASS_MAX	512
#define RLS_PATH_MAX	512
#define RLS_ERR_MAX	400

/**
 * struct rls_conn - how to reach one Redis server (rlsyncd(8), ADDRESSES)
 * @host:  a host name or an IP address (no brackets); with @port 0 the
 *         path of a unix socket
 * @port:  1..65535, or 0 for a unix socket
 * @user:  the ACL user to AUTH as ("": AUTH with the password alone)
 * @pass:  the password, read from password-file ("": no AUTH)
 * @db:    the database to SELECT (0: none sent)
 * @tls:   a rediss:// URL: TLS over the TCP connection
 * @tls_ca:   tls-ca-file, the CAs to verify the server with ("": the
 *            system's)
 * @tls_cert: tls-cert-file, this client's certificate ("": none)
 * @tls_key:  tls-key-file, its key ("": in @tls_cert)
 * @tls_name: tls-server-name, the name sent (SNI) and verified ("":
 *            @host)
 * @tls_noverify: tls-verify = no: the server's certificate is not checked
 * @cluster: a node of a Redis Cluster (cluster = yes): with a spec, the
 *         seed the slot map is read from
 */
struct rls_conn {
	char host[RLS_ADDR_MAX];
	unsigned int port;
	char user[RLS_ID_MAX];
	char pass[RLS_PASS_MAX];
	unsigned int db;
	bool tls;
	char tls_ca[RLS_PATH_MAX];
	char tls_cert[RLS_PATH_MAX];
	char tls_key[RLS_PATH_MAX];
	char tls_name[RLS_ADDR_MAX];
	bool tls_noverify;
	bool cluster;
};

#define RLS_SENTINELS_MAX	8
/* WAIT's timeout when wait-replicas is given alone. */
#define RLS_DEF_WAIT_MS		50.0

/**
 * struct rls_ha - Redis Sentinel and WAIT (rlsyncd(8), Sentinel)
 * @n:        sentinels (0: none; redis = names the server)
 * @host:     their host names or addresses (port 0: a unix socket's path)
 * @port:     their ports
 * @master:   the master name they monitor
 * @pass:     their password, from sentinel-password-file ("": no AUTH)
 * @wait_replicas: replicas that must acknowledge each grant (WAIT; 0: no WAIT)
 * @wait_ms:  WAIT's timeout
 */
struct rls_ha {
	unsigned int n;
	char host[RLS_SENTINELS_MAX][RLS_ADDR_MAX];
	unsigned int port[RLS_SENTINELS_MAX];
	char master[RLS_ID_MAX];
	char pass[RLS_PASS_MAX];
	unsigned int wait_replicas;
	double wait_ms;
};

enum rls_safe {
	RLS_PESSIMISTIC,	/* after the lease: 0 */
	RLS_SAFE,		/* after the lease: the reserved floor */
	RLS_OPTIMISTIC,		/* after the lease: the last share */
};

/**
 * struct rls_spec - what a [global NAME] section or a command line asks
 * @name:      the local named limiter
 * @resource:  the global resource (default: @name)
 * @redis:     the address as given, for messages (never a password)
 * @conn:      that address parsed, with username, password and db
 * @ha:        the sentinels that name the primary instead, and WAIT
 * @file:      where it was declared, for messages ("command line")
 * @line:      its line there
 * @configure: a rate was given: this agent configures the resource
 * @capacity:  global tokens per second, with @configure
 * @batch:     batch mode (else lease mode)
 * @algorithm: "fair", "proportional" or "static"
 * @static_rate: per-host share of the static algorithm, tokens per second
 * @lease_ms:  lease length
 * @refresh_ms: refresh interval
 * @hold_ms:   how long a floor stays reserved after the lease
 * @safe:      what the limiter runs at after the lease
 * @safe_rate: with RLS_SAFE, the floor asked for, tokens per second
 * @weight:    weight in the fair share
 */
struct rls_spec {
	char name[RL_NAME_MAX];
	char resource[RL_NAME_MAX];
	char redis[RLS_ADDR_MAX];
	struct rls_conn conn;
	struct rls_ha ha;
	const char *file;
	unsigned int line;
	bool configure;
	double capacity;
	bool batch;
	char algorithm[16];
	double static_rate;
	double lease_ms;
	double refresh_ms;
	double hold_ms;
	enum rls_safe safe;
	double safe_rate;
	double weight;
};

/*
 * The defaults of a spec for limiter @name, with the connection of @from
 * (address, username, password, db) if not NULL.
 */
void rls_spec_init(struct rls_spec *s, const char *name,
		   const struct rls_spec *from);

/*
 * Parse a Redis address (HOST[:PORT], [IPV6][:PORT], unix:PATH,
 * redis://[USER@]HOST[:PORT][/DB], rediss://...) into @c; 0, or -EINVAL with *@why
 * saying what is wrong.
 */
int rls_conn_parse(const char *v, struct rls_conn *c, const char **why);
/* HOST:PORT, [IPV6]:PORT or unix:PATH of @c into @buf (rlsyncd_conn.c). */
const char *rls_conn_label(const struct rls_conn *c, char *buf, size_t len);

/*
 * Whether @v may name a global resource: a limiter's name, or one after
 * a hash tag, "{TAG}REST" (TAG a limiter's name, REST of a name's
 * characters, maybe empty): the resources of one TAG have their keys
 * rl:{{TAG}REST}:* in one hash slot (Redis hashes what is between the
 * first braces, "{TAG"), so their renewals go in one call (rl_lease_many).
 */
bool rls_resource_valid(const char *v);

/* "RATE/PERIOD" as tokens per second; "0" is 0. Returns 0 or -EINVAL. */
int rls_parse_tps(const char *v, double *tps);

/* "500ms", "10s", "1m", "1h" as milliseconds. Returns 0 or -EINVAL. */
int rls_parse_ms(const char *v, double *ms);

/* Set @key of @s to @v; 0, or -EINVAL after a message naming its line. */
int rls_spec_set(struct rls_spec *s, const char *key, const char *v);

/* The wait for a reply while running: half the refresh, at most 1 s. */
double rls_rpc_ms(const struct rls_spec *s);

/* The checks across keys; 0, or -EINVAL after a message. */
int rls_spec_check(const struct rls_spec *s);

/*
 * Read the [global NAME] sections of @path (a file, or a directory of
 * *.conf files as rlctl apply reads it) into *@specs (grown, *@n
 * counted); other sections are rlctl's. Returns the number of problems
 * reported, or -ENOMEM.
 */
int rls_conf_load(const char *path, const struct rls_spec *defaults,
		  struct rls_spec **specs, unsigned int *n);

/*
 * A connection to a Redis server (rlsyncd_conn.c): a socket, TLS, AUTH
 * and SELECT as its struct rls_conn asks, shared by all that ask for the
 * same one while it works: each rls_redis_connect_conn() (or
 * rls_redis_connect()) is matched by one rls_redis_free(). Commands
 * queued with rls_redis_send() go out at the next rls_redis_recv(),
 * which reads one reply (a pipeline). Errors are one line, kept as
 * rls_redis_error() and printed too if the connection was opened with
 * @say; after an error of the connection itself (not an error reply) it
 * is broken for good.
 */
struct rls_redis;
struct redisReply;

/* Connect to the server @c (@addr for messages), each step in @timeout_ms. */
struct rls_redis *rls_redis_connect_conn(const struct rls_conn *c,
					 const char *addr, double timeout_ms,
					 bool say);
void rls_redis_free(struct rls_redis *r);
/*
 * Queue one command (argv/argvlen as redisCommandArgv; @argvlen NULL:
 * strings); 0, or -EIO with the connection stale (the replies of a
 * pipeline would lose their order).
 */
int rls_redis_send(struct rls_redis *r, int argc, const char **argv,
		   const size_t *argvlen);
/*
 * Send what is queued, read the next reply (NULL on error; the caller
 * frees it). READONLY or NOREPLICAS makes the connection stale.
 */
struct redisReply *rls_redis_recv(struct rls_redis *r);
/* One command and its reply. */
struct redisReply *rls_redis_call(struct rls_redis *r, int argc,
				  const char **argv, const size_t *argvlen);
/*
 * A grant's command (one that takes or leases tokens): with WAIT set
 * (rls_redis_set_wait()), ROLE before the first of a round trip and WAIT
 * behind each; and its reply, with theirs. Grants that WAIT found short
 * are counted (rls_redis_short_acks()).
 */
int rls_redis_grant_send(struct rls_redis *r, int argc, const char **argv);
struct redisReply *rls_redis_grant_recv(struct rls_redis *r);
/* WAIT for @replicas within @ms after each grant (0: no WAIT). */
void rls_redis_set_wait(struct rls_redis *r, unsigned int replicas, double ms);
/*
 * Grants that WAIT found short of wait-replicas acknowledgements (or
 * whose WAIT reply was lost) since the last call; the count restarts.
 */
unsigned int rls_redis_short_acks(struct rls_redis *r);
/* ROLE: 0 if @r's server is a primary, else -EIO after a message. */
int rls_redis_is_primary(struct rls_redis *r);

/* Keep a message as @r's last error; print it if @r says. */
void __attribute__((format(printf, 2, 3)))
rls_redis_fail(struct rls_redis *r, const char *fmt, ...);
/* The same for the error reply @rep of @cmd, explained. */
void rls_redis_explain(struct rls_redis *r, const char *cmd,
		       const struct redisReply *rep);
/*
 * The message of an error reply @rep of FCALL into @buf, without Redis's
 * " script: ..." tail; errors of authentication and ACLs explained.
 */
const char *rls_redis_reply_error(const struct rls_redis *r,
				  const struct redisReply *rep, char *buf,
				  size_t len);
/*
 * The last error of @r, one line without "redis ADDR: "; with @r NULL,
 * that of the last connection that failed.
 */
const char *rls_redis_error(const struct rls_redis *r);
/* Set that of the last connection that failed, for a refusal above. */
void __attribute__((format(printf, 1, 2)))
rls_redis_set_error(const char *fmt, ...);

/* The address of @r's server, as its messages name it. */
const char *rls_redis_addr(const struct rls_redis *r);
/* The node @r is connected to (NULL for NULL). */
const struct rls_conn *rls_redis_conn(const struct rls_redis *r);
/* The wait for each later reply; and what it is. */
void rls_redis_timeout(struct rls_redis *r, double timeout_ms);
double rls_redis_timeout_ms(const struct rls_redis *r);
/* Whether the connection broke (then free it and connect again). */
bool rls_redis_broken(const struct rls_redis *r);
/* Make @r stale: the next refresh connects again (and asks the sentinels). */
void rls_redis_stale(struct rls_redis *r);
/* Whether the function library is known to be on @r's server; set it. */
bool rls_redis_lib(const struct rls_redis *r);
void rls_redis_set_lib(struct rls_redis *r, bool lib);
/*
 * Whether the library on @r's server lacks rl_lease_many (an older one):
 * renewals go one resource a call there, for a minute after it was found
 * so (then a call of several tries again: the operator may have loaded
 * the new one); set it (cleared when rlsyncd loads the library itself).
 */
bool rls_redis_single(const struct rls_redis *r);
void rls_redis_set_single(struct rls_redis *r, bool single);
/*
 * SUBSCRIBE @channel on @r, which must be its caller's alone (it is
 * shared with nobody from then on); 0, or -EIO (-EBUSY: shared).
 */
int rls_redis_subscribe(struct rls_redis *r, const char *channel);
/*
 * The next message published to @r's subscription, if one came, into
 * @buf, without waiting: 1, 0 (none), or -EIO (the connection broke).
 */
int rls_redis_message(struct rls_redis *r, char *buf, size_t len);

/* The wait at start-up and reload, when nothing runs yet: generous. */
#define RLS_START_TIMEOUT_MS	3000.0

/*
 * Redis Cluster (rlsyncd_cluster.c): the slot map read from a seed node,
 * the resources routed to the primary owning their slot (the CRC16 of
 * the hash tag {RESOURCE}, as Redis computes it).
 */
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

/*
 * Redis Sentinel (rlsyncd_sentinel.c): the primary of @s's sentinels into
 * @c (the connection of @s with the host and port they name): the
 * sentinels asked in turn. 0, or -EIO with one line in @err (never
 * printed here).
 */
int rls_sentinel_primary(const struct rls_spec *s, double timeout_ms,
			 struct rls_conn *c, char *err, size_t errlen);
/*
 * The connection to that primary, shared, once ROLE says it is one; NULL
 * after a message if @say (rls_redis_error(NULL) says why).
 */
struct rls_redis *rls_sentinel_connect(const struct rls_spec *s,
				       double timeout_ms, bool say);
/* "sentinel master NAME", for messages, into @buf. */
const char *rls_sentinel_label(const struct rls_spec *s, char *buf,
			       size_t len);
/*
 * @s's sentinels' +switch-master events, from a subscription to each
 * (opened, one sentinel a second, and read, without waiting): whether one
 * named a new primary of @s's master since *@seen (then updated), and
 * that primary in *@primary (HOST:PORT).
 */
bool rls_sentinel_switched(const struct rls_spec *s, uint64_t now,
			   unsigned int *seen, const char **primary);

/*
 * The calls into tools/global/ratelimit.lua (rlsyncd_redis.c).
 *
 * Connect to @s's Redis with @timeout_ms (the primary of its sentinels,
 * or of its resource's slot in a cluster), shared. NULL after a message
 * if @say. Later errors of the library calls below are printed too if
 * @say.
 */
struct rls_redis *rls_redis_connect(const struct rls_spec *s,
				    double timeout_ms, bool say);

/* Load the function library from @lua if Redis lacks it; 0 or -errno. */
int rls_redis_library(struct rls_redis *r, const char *lua);
/*
 * --check: what rls_redis_library() would do, with reads only (FUNCTION
 * LIST, and @lua if Redis lacks the library); 0 or -errno.
 */
int rls_redis_library_check(struct rls_redis *r, const char *lua);
/*
 * The same on every primary of @s's cluster (each checked only, with
 * @check); 0 or -errno after a message.
 */
int rls_redis_cluster_library(const struct rls_spec *s, const char *lua,
			      bool check);

/* rl_config with @s; 0, or -EINVAL/-EIO after a message. */
int rls_redis_config(struct rls_redis *r, const struct rls_spec *s,
		     const char *host);

/* Whether @res is configured: 1, 0 (unknown), or -EIO after a message. */
int rls_redis_exists(struct rls_redis *r, const char *res);

/**
 * struct rls_lease - a reply of rl_lease
 * @has:     the share, tokens per second
 * @floor:   the reserved floor
 * @lease_ms, @refresh_ms, @hold_ms: durations from the call
 * @learning: Redis is in its learning period
 */
struct rls_lease {
	double has;
	double floor;
	double lease_ms;
	double refresh_ms;
	double hold_ms;
	bool learning;
};

/* Resources renewed in one call at most (rl_lease_many). */
#define RLS_GROUP_MAX	128

/**
 * struct rls_renewal - one resource's lease renewal, in a call of its own
 * (rl_lease) or in one of several resources of one hash slot
 * (rl_lease_many)
 * @res: the resource
 * @in:  what it reports: wants, has (the rate run at now), weight, floor
 * @ret: 0, -ENOENT when Redis does not know @res (state lost or never
 *       configured), -ENOEXEC when it lacks the library, -EAGAIN when it
 *       cannot serve it for a while (a failover or migration under way:
 *       CLUSTERDOWN, TRYAGAIN, LOADING, MASTERDOWN), -EIO (connection or
 *       other error), or, in a call of several, -EXDEV when Redis could
 *       not serve them as one call (MOVED, ASK, TRYAGAIN, a library
 *       without rl_lease_many): renew it alone (rls_redis_lease())
 * @out: the lease, when @ret is 0
 * @err: what went wrong, when @ret is not 0
 */
struct rls_renewal {
	const char *res;
	double in[4];
	int ret;
	struct rls_lease out;
	char err[256];
};

/*
 * The renewals @rn (@k, 1 to RLS_GROUP_MAX, of one hash slot when more
 * than one) for @host, in one call (rl_lease for one, rl_lease_many for
 * more): queued by rls_redis_lease_send() (0 or -EIO), their replies read
 * by rls_redis_lease_recv() (into each @rn's @ret, @out and @err), in the
 * order the calls were queued, so that the calls of many slots go in
 * one round trip on one connection.
 */
int rls_redis_lease_send(struct rls_redis *r, const char *host,
			 struct rls_renewal *const *rn, unsigned int k);
void rls_redis_lease_recv(struct rls_redis *r, const char *host,
			  struct rls_renewal *const *rn, unsigned int k);
/* One renewal alone, sent and read; a MOVED or ASK followed once. */
void rls_redis_lease(struct rls_redis *r, const char *host,
		     struct rls_renewal *rn);

/* rl_leave for @host; errors ignored. */
void rls_redis_leave(struct rls_redis *r, const char *res, const char *host);

/*
 * rl_take: up to @n tokens of the batch bucket into *@got, and in
 * *@wait_ms when @n more would be there; 0 or -errno (@err).
 */
int rls_redis_take(struct rls_redis *r, const char *res, uint64_t n,
		   uint64_t *got, double *wait_ms, char *err,
		   unsigned int errlen);

/* rl_give: @n unused tokens back; those taken back, or -EIO. */
int64_t rls_redis_give(struct rls_redis *r, const char *res, uint64_t n);

/* What the module offers (rls_k_features()). */
#define RLS_K_LEASE	1U	/* RL_IOC_SET_LEASE */
#define RLS_K_DEMAND	2U	/* RL_IOC_GET_DEMAND */
#define RLS_K_DEPOSIT	4U	/* RL_IOC_DEPOSIT and RL_CONFIG_FED */

/**
 * struct rls_demand - RL_IOC_GET_DEMAND's figures
 * @asked:   tokens asked since creation
 * @refused: tokens refused (-EAGAIN, -ETIMEDOUT)
 * @queued:  tokens waiting now
 * @busy_ns: time with at least one sleeper
 * @now_ns:  when they were read
 */
struct rls_demand {
	uint64_t asked;
	uint64_t refused;
	uint64_t queued;
	uint64_t busy_ns;
	uint64_t now_ns;
};

/*
 * Can this process open the device (/dev/ratelimit)? 0, or -errno after
 * one line saying why (the module not loaded, no permission). Always 0
 * in rlsyncd-fake.
 */
int rls_k_device(void);
/* The RLS_K_* the module behind @fd supports; 0 for an older module. */
unsigned int rls_k_features(int fd);
/* RL_CONFIG_FED, or 0 when built without it. */
uint64_t rls_k_fed_flag(void);
/* RL_IOC_SET_LEASE: @cfg until @until (0: now), then @fallback; -errno. */
int rls_k_lease(int fd, const struct rl_config *cfg,
		const struct rl_config *fallback, uint64_t until);
/* RL_IOC_GET_DEMAND; 0 or -errno (-ENOTTY: an older module). */
int rls_k_demand(int fd, struct rls_demand *d);
/* RL_IOC_DEPOSIT of @count; what did not fit in *@excess; -errno. */
int rls_k_deposit(int fd, uint64_t count, uint64_t *excess);

#ifdef RLS_FAKE
/*
 * rlsyncd-fake: the simulated limiter's (selftests/global/fake_kernel.c)
 * demand (asked, refused, queued, busy_ns, now_ns) and deposit, when fed.
 */
unsigned int fake_k_features(void);
int fake_k_demand(int fd, uint64_t d[5]);
int fake_k_deposit(int fd, uint64_t count, uint64_t *excess);
#endif

/**
 * struct rls_batch - batch mode's figures
 * @batch:    tokens asked of Redis per round trip now
 * @taken:    tokens Redis granted, in all
 * @given:    tokens given back (excess, and what was left on exit)
 * @calls:    Redis round trips that took tokens
 * @ready_ns: when Redis will hold the next batch (rl_take's wait)
 */
struct rls_batch {
	double batch;
	uint64_t taken;
	uint64_t given;
	uint64_t calls;
	uint64_t ready_ns;
};

/**
 * struct rls_link - one local limiter linked to a global resource
 * @spec:    what it was asked
 * @fd:      the local named limiter's fd
 * @redis:   its connection, NULL while broken
 * @base:    the limiter's configuration apart from the rate
 * @running: rate the local limiter runs at, tokens per second
 * @lease:   the last lease
 * @exp_ns, @mexp_ns: end of the lease and of the floor, local clock
 * @next_ns: next refresh
 * @last_ns: when the stats were read last
 * @last:    those stats
 * @dlast:   the demand read last (with RLS_K_DEMAND)
 * @dpeek, @peek, @peek_ns: the same for the look at the demand between
 *           renewals (a demand shift renews early)
 * @shift:   the demand such a look found, to report (-1: none)
 * @sent_ns: when the last renewal was sent
 * @wants:   the demand reported last, tokens per second
 * @wants_ns: when link_demand() measured @wants (0: never)
 * @kernel:  RLS_K_* the module offers
 * @leased:  a kernel lease is set on the limiter
 * @b:       batch mode's figures
 * @down:    Redis unreachable since the last success (said once)
 * @fails:   failed refreshes in a row (the retry backs off)
 * @errors:  failed Redis calls and connections, in all
 * @rtt_ms:  the last round trip to Redis that succeeded (0: none yet)
 * @wait_short: grants WAIT found short of wait-replicas, in all
 * @asked_ns: when the sentinels were last asked if the primary moved
 * @switches: the sentinels' +switch-master events seen (rls_sentinel_switched())
 * @due:     renewed in this round trip (rls_links_refresh())
 */
struct rls_link {
	struct rls_spec spec;
	int fd;
	struct rls_redis *redis;
	struct rl_config base;
	double running;
	struct rls_lease lease;
	uint64_t exp_ns;
	uint64_t mexp_ns;
	uint64_t next_ns;
	uint64_t last_ns;
	struct rl_stats last;
	struct rls_demand dlast;
	struct rls_demand dpeek;
	struct rl_stats peek;
	uint64_t peek_ns;
	double shift;
	uint64_t sent_ns;
	double wants;
	uint64_t wants_ns;
	unsigned int kernel;
	bool leased;
	struct rls_batch b;
	bool down;
	unsigned int fails;
	uint64_t errors;
	double rtt_ms;
	uint64_t wait_short;
	uint64_t asked_ns;
	unsigned int switches;
	bool due;
};

/* Write @l's state file in rls_state_dir; remove it. */
void rls_state_write(const struct rls_link *l);
void rls_state_remove(const struct rls_link *l);
extern const char *rls_state_dir;

/* Open the local limiter of @l (created if missing); 0 or -errno. */
int rls_link_open(struct rls_link *l);

/*
 * The refreshes due of @links (@n), for @host; reconnects with @lua. The
 * lease renewals of the links on one connection go in one pipelined
 * round trip, with those of its links due within 0.6 of their refresh
 * interval. Returns when the next one is due.
 */
uint64_t rls_links_refresh(struct rls_link *links, unsigned int n,
			   const char *host, const char *lua);

/*
 * Apply what the lease allows at @now (expiry, floor, 0), or rather two
 * call timeouts later: the next call to Redis may block that long.
 */
void rls_link_expire(struct rls_link *l, uint64_t now);

/* Pause the local limiter and give the lease back (on exit). */
void rls_link_close(struct rls_link *l, const char *host);

/*
 * SIGHUP: read @path again and apply it whole into *@links (*@n), or
 * keep them (one line says so); 0 or -EINVAL.
 */
int rls_reload(const char *path, const struct rls_spec *defaults,
	       const char *host, const char *lua, struct rls_link **links, unsigned int *n);

/* -v: print each change of a share (rlsyncd_conf.c). */
extern bool rls_verbose;

#endif /* RLSYNCD_H */
