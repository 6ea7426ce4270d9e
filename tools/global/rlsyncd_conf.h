/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlsyncd_conf.h - what a link is asked (rlsyncd_conf.c): a [global NAME]
 * section of a ratelimit.d(5) file or a command line as a struct
 * rls_spec, with its Redis server (struct rls_conn) and its sentinels
 * (struct rls_ha). It includes no other header of rlsyncd's.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLSYNCD_CONF_H
#define RLSYNCD_CONF_H

#include <stdbool.h>

#include "libratelimit.h"

#define RLS_ADDR_MAX	256
#define RLS_ID_MAX	128
#define RLS_PASS_MAX	512
#define RLS_PATH_MAX	512

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

/*
 * Whether @v may name a global resource: a limiter's name, or one after
 * a hash tag, "{TAG}REST" (TAG a limiter's name, REST of a name's
 * characters, maybe empty): the resources of one TAG have their keys
 * rl:{{TAG}REST}:* in one hash slot (Redis hashes what is between the
 * first braces, "{TAG"), so their renewals go in one call (rl_lease_many).
 */
bool rls_resource_valid(const char *v);

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

/* -v: print each change of a share. */
extern bool rls_verbose;

#endif /* RLSYNCD_CONF_H */
