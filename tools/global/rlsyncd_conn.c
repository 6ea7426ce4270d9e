// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd_conn.c - one connection to a Redis server: a TCP (IPv4, IPv6)
 * or unix socket of our own, TLS over it with OpenSSL for rediss://
 * URLs, and hiredis for the protocol alone: redisFormatCommandArgv()
 * encodes the commands, a redisReader parses the replies. (Debian 12's
 * hiredis 0.14 has no TLS.)
 *
 * The socket is non-blocking; every wait is a poll() bounded by the
 * timeout: one for the connect, one for the TLS handshake, one for each
 * reply. A read is tried before poll(), so that what OpenSSL already holds
 * (SSL_pending) is never left waiting for the socket.
 *
 * Errors are one line saying what is likely wrong: a TLS port spoken to
 * in plain text and the reverse, a certificate that does not verify and
 * why, a client certificate the server asks for.
 *
 * That transport (struct rls_io) is this file's own. What the other files
 * hold is a struct rls_redis over it: AUTH and SELECT after each connect,
 * shared by all that ask for the same address (a pool), commands queued
 * and their replies read in order (rls_redis_send(), rls_redis_recv(): N
 * commands queued, then N replies read, one round trip), the server's
 * errors explained, a failover seen (READONLY, NOREPLICAS: stale), and
 * with wait-replicas a WAIT behind each grant.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#define PROG "rlsyncd"
#include "tool.h"
#include "rlsyncd_conn.h"
#include "rlsyncd_conf.h"

/* What a TLS port spoken to in plain text, or the reverse, looks like. */
#define HINT_TLS_PORT	" (a TLS port? give a rediss:// URL)"
#define HINT_PLAIN_PORT	" (a plain-text port? rediss:// needs the server's tls-port)"
/* What a connection closed after the handshake and before a reply may be. */
#define HINT_CERT_WANTED	\
	" (does the server want a client certificate? give tls-cert-file and tls-key-file)"
#define HINT_CERT_REFUSED	" (does the server refuse the certificate of tls-cert-file?)"

/* The first bytes of a TLS record: an alert, a handshake. */
#define TLS_ALERT	0x15
#define TLS_HANDSHAKE	0x16

#define VERIFY_FAILED	"TLS: certificate verification failed"

struct rls_io {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
	redisReader *reader;
	char *out;		/* the commands queued, not sent yet */
	size_t outlen;
	double timeout_ms;
	bool broken;
	bool got;		/* a byte was received */
	bool cert;		/* a client certificate was sent */
	char err[RLS_ERR_MAX];
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * The message of @fmt and @ap into @err (RLS_ERR_MAX bytes), through a
 * copy: it may quote @err.
 */
static void err_vset(char *err, const char *fmt, va_list ap)
{
	char buf[RLS_ERR_MAX];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	memcpy(err, buf, sizeof(buf));
}

/*
 * Keep the message as the error of @io: -EIO. @broken: the connection is
 * broken, no more I/O on it.
 */
static int __attribute__((format(printf, 3, 4)))
io_error(struct rls_io *io, bool broken, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(io->err, fmt, ap);
	va_end(ap);
	if (broken)
		io->broken = true;
	return -EIO;
}

/* Keep the message as the error of @io: -EIO. */
#define io_fail(io, ...)	io_error(io, false, __VA_ARGS__)
/* The error of a broken connection: -EIO, and no more I/O on it. */
#define io_break(io, ...)	io_error(io, true, __VA_ARGS__)

/*
 * Wait until @fd is ready for @events or @deadline (CLOCK_MONOTONIC ms)
 * passes: 0, -ETIMEDOUT, or -errno.
 */
static int wait_fd(int fd, short events, double deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	double left;
	int n;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)left + 1);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* A connect() in progress on @fd: 0 once done, else -errno. */
static int finish_connect(int fd, double deadline)
{
	socklen_t len = sizeof(int);
	int ret, e = 0;

	ret = wait_fd(fd, POLLOUT, deadline);
	if (ret)
		return ret;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len))
		return -errno;
	return -e;
}

/* A socket of @family connected to @sa: its fd, or -errno. */
static int dial(int family, const struct sockaddr *sa, socklen_t salen,
		double deadline)
{
	int one = 1, fd, ret = 0;

	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, sa, salen))
		ret = errno == EINPROGRESS || errno == EAGAIN ?
		      finish_connect(fd, deadline) : -errno;
	if (ret) {
		close(fd);
		return ret;
	}
	if (family != AF_UNIX)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* The first address of @c's host that answers. */
static int dial_tcp(struct rls_io *io, const struct rls_conn *c,
		    double deadline)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
	}, *res, *a;
	char port[8];
	int ret;

	snprintf(port, sizeof(port), "%u", c->port);
	ret = getaddrinfo(c->host, port, &hints, &res);
	if (ret)
		return io_fail(io, "cannot connect: %s",
			       ret == EAI_SYSTEM ? strerror(errno) : gai_strerror(ret));
	ret = -EADDRNOTAVAIL;
	for (a = res; a; a = a->ai_next) {
		ret = dial(a->ai_family, a->ai_addr, a->ai_addrlen, deadline);
		if (ret >= 0)
			break;
	}
	freeaddrinfo(res);
	if (ret < 0)
		return io_fail(io, "cannot connect: %s", strerror(-ret));
	io->fd = ret;
	return 0;
}

static int dial_unix(struct rls_io *io, const struct rls_conn *c,
		     double deadline)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int ret;

	/* rls_conn_parse() refused a longer path */
	memcpy(sun.sun_path, c->host, strnlen(c->host, sizeof(sun.sun_path) - 1));
	ret = dial(AF_UNIX, (const struct sockaddr *)&sun, sizeof(sun), deadline);
	if (ret < 0)
		return io_fail(io, "cannot connect: %s", strerror(-ret));
	io->fd = ret;
	return 0;
}

/* OpenSSL's reason for the last error, or @dflt. */
static const char *ssl_reason(const char *dflt)
{
	const char *why = ERR_reason_error_string(ERR_peek_last_error());

	return why ? why : dflt;
}

/* The CAs, the client's certificate and key, verification on or off. */
static int tls_context(struct rls_io *io, const struct rls_conn *c)
{
	const char *key = c->tls_key[0] ? c->tls_key : c->tls_cert;

	io->ctx = SSL_CTX_new(TLS_client_method());
	if (!io->ctx)
		return io_fail(io, "TLS: %s", ssl_reason("out of memory"));
	SSL_CTX_set_min_proto_version(io->ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(io->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
			 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (c->tls_ca[0] &&
	    SSL_CTX_load_verify_locations(io->ctx, c->tls_ca, NULL) != 1)
		return io_fail(io, "TLS: tls-ca-file %s: %s", c->tls_ca,
			       ssl_reason("cannot load it"));
	if (!c->tls_ca[0] && SSL_CTX_set_default_verify_paths(io->ctx) != 1)
		return io_fail(io, "TLS: the system's CAs: %s",
			       ssl_reason("cannot load them"));
	if (c->tls_cert[0] &&
	    SSL_CTX_use_certificate_chain_file(io->ctx, c->tls_cert) != 1)
		return io_fail(io, "TLS: tls-cert-file %s: %s", c->tls_cert,
			       ssl_reason("cannot load it"));
	if (c->tls_cert[0] &&
	    (SSL_CTX_use_PrivateKey_file(io->ctx, key, SSL_FILETYPE_PEM) != 1 ||
	     SSL_CTX_check_private_key(io->ctx) != 1))
		return io_fail(io, "TLS: tls-key-file %s: %s", key,
			       ssl_reason("not the key of tls-cert-file"));
	SSL_CTX_set_verify(io->ctx, c->tls_noverify ? SSL_VERIFY_NONE :
			   SSL_VERIFY_PEER, NULL);
	return 0;
}

/* The name to send (SNI, not for an IP address) and to verify. */
static int tls_name(struct rls_io *io, const struct rls_conn *c)
{
	const char *name = c->tls_name[0] ? c->tls_name : c->host;
	X509_VERIFY_PARAM *p = SSL_get0_param(io->ssl);
	unsigned char ip[16];
	bool is_ip = inet_pton(AF_INET, name, ip) == 1 ||
		     inet_pton(AF_INET6, name, ip) == 1;

	if (!is_ip && SSL_set_tlsext_host_name(io->ssl, name) != 1)
		return io_fail(io, "TLS: server name %s: %s", name,
			       ssl_reason("refused"));
	if (c->tls_noverify)
		return 0;
	X509_VERIFY_PARAM_set_hostflags(p, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	if (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(p, name) != 1 :
	    X509_VERIFY_PARAM_set1_host(p, name, 0) != 1)
		return io_fail(io, "TLS: server name %s: %s", name,
			       ssl_reason("refused"));
	return 0;
}

/* Why the handshake failed, from OpenSSL's state after SSL_connect. */
static int tls_failed(struct rls_io *io, const struct rls_conn *c, int err)
{
	const char *name = c->tls_name[0] ? c->tls_name : c->host;
	long v = SSL_get_verify_result(io->ssl);
	unsigned long e = ERR_peek_last_error();
	int why = ERR_GET_REASON(e);

	if (!c->tls_noverify && v != X509_V_OK) {
		if (v == X509_V_ERR_HOSTNAME_MISMATCH ||
		    v == X509_V_ERR_IP_ADDRESS_MISMATCH)
			return io_fail(io, "%s: %s: it is not for %s (tls-server-name =)",
				       VERIFY_FAILED, X509_verify_cert_error_string(v), name);
		if (v == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN ||
		    v == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT ||
		    v == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
		    v == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT)
			return io_fail(io, "%s: %s (the server's CA is not in %s%s)",
				       VERIFY_FAILED, X509_verify_cert_error_string(v),
				       c->tls_ca[0] ? "tls-ca-file " : "the system's CAs",
				       c->tls_ca);
		return io_fail(io, "%s: %s", VERIFY_FAILED,
			       X509_verify_cert_error_string(v));
	}
	if (err == SSL_ERROR_SYSCALL && !e)
		return io_fail(io, "TLS handshake failed: %s%s", errno ?
			       strerror(errno) : "the server closed the connection",
			       HINT_PLAIN_PORT);
	if (ERR_GET_LIB(e) == ERR_LIB_SSL &&
	    (why == SSL_R_WRONG_VERSION_NUMBER ||
	     why == SSL_R_PACKET_LENGTH_TOO_LONG ||
	     why == SSL_R_UNEXPECTED_EOF_WHILE_READING))
		return io_fail(io, "TLS handshake failed: %s%s",
			       ssl_reason("?"), HINT_PLAIN_PORT);
	return io_fail(io, "TLS handshake failed: %s", ssl_reason("unknown error"));
}

/* TLS over the connected socket: the handshake, bounded by @deadline. */
static int tls_start(struct rls_io *io, const struct rls_conn *c,
		     double deadline)
{
	int ret, err;

	ERR_clear_error();
	if (tls_context(io, c))
		return -EIO;
	io->ssl = SSL_new(io->ctx);
	if (!io->ssl || SSL_set_fd(io->ssl, io->fd) != 1)
		return io_fail(io, "TLS: %s", ssl_reason("out of memory"));
	if (tls_name(io, c))
		return -EIO;
	for (;;) {
		errno = 0;
		ret = SSL_connect(io->ssl);
		if (ret == 1)
			return 0;
		err = SSL_get_error(io->ssl, ret);
		if (err == SSL_ERROR_WANT_READ)
			ret = wait_fd(io->fd, POLLIN, deadline);
		else if (err == SSL_ERROR_WANT_WRITE)
			ret = wait_fd(io->fd, POLLOUT, deadline);
		else
			return tls_failed(io, c, err);
		if (ret == -ETIMEDOUT)
			return io_fail(io, "TLS handshake: no answer in %.0f ms%s",
				       io->timeout_ms, HINT_PLAIN_PORT);
		if (ret)
			return io_fail(io, "TLS handshake: %s", strerror(-ret));
	}
}

static void rls_io_close(struct rls_io *io)
{
	if (!io)
		return;
	if (io->ssl) {
		if (!io->broken && SSL_is_init_finished(io->ssl))
			SSL_shutdown(io->ssl);	/* close_notify, not waited for */
		SSL_free(io->ssl);
	}
	SSL_CTX_free(io->ctx);
	if (io->fd >= 0)
		close(io->fd);
	if (io->reader)
		redisReaderFree(io->reader);
	free(io->out);
	free(io);
}

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

/*
 * Connect to @c (TCP, unix socket, TLS as @c asks), each step bounded
 * by @timeout_ms, which then bounds each reply too. NULL with the error
 * in @err (@errlen bytes).
 */
static struct rls_io *rls_io_open(const struct rls_conn *c, double timeout_ms,
				  char *err, size_t errlen)
{
	struct rls_io *io = calloc(1, sizeof(*io));
	int ret;

	if (!io) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	io->fd = -1;
	io->timeout_ms = timeout_ms;
	io->reader = redisReaderCreate();
	if (!io->reader)
		ret = io_fail(io, "out of memory");
	else if (c->port)
		ret = dial_tcp(io, c, now_ms() + timeout_ms);
	else
		ret = dial_unix(io, c, now_ms() + timeout_ms);
	io->cert = c->tls && c->tls_cert[0];
	if (!ret && c->tls)
		ret = tls_start(io, c, now_ms() + timeout_ms);
	if (!ret)
		return io;
	snprintf(err, errlen, "%s", io->err);
	rls_io_close(io);
	return NULL;
}

static void rls_io_timeout(struct rls_io *io, double timeout_ms)
{
	if (io)
		io->timeout_ms = timeout_ms;
}

static bool rls_io_broken(const struct rls_io *io)
{
	return !io || io->broken;
}

static const char *rls_io_error(const struct rls_io *io)
{
	return io->err;
}

/* Queue one command; 0, or -ENOMEM. */
static int rls_io_queue(struct rls_io *io, int argc, const char **argv,
			const size_t *argvlen)
{
	char *cmd, *out;
	int len;

	len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
	if (len < 0)
		return io_fail(io, "out of memory");
	out = realloc(io->out, io->outlen + (size_t)len);
	if (!out) {
		redisFreeCommand(cmd);
		return io_fail(io, "out of memory");
	}
	memcpy(out + io->outlen, cmd, (size_t)len);
	redisFreeCommand(cmd);
	io->out = out;
	io->outlen += (size_t)len;
	return 0;
}

/*
 * Why TLS I/O failed (@err of SSL_get_error): a server that refuses our
 * certificate, or the lack of one, says so in an alert after the
 * handshake (TLS 1.3), at the first read.
 */
static int tls_io_failed(struct rls_io *io, int err)
{
	unsigned long e = ERR_peek_last_error();
	int why = ERR_GET_REASON(e);
	bool ssl = ERR_GET_LIB(e) == ERR_LIB_SSL;
	/* closed before a reply: the alert may be lost to a reset */
	const char *hint = io->got ? "" : io->cert ? HINT_CERT_REFUSED :
			   HINT_CERT_WANTED;

	if (err == SSL_ERROR_ZERO_RETURN ||
	    (err == SSL_ERROR_SYSCALL && !e && !errno) ||
	    (ssl && why == SSL_R_UNEXPECTED_EOF_WHILE_READING))
		return io_break(io, "the server closed the connection%s", hint);
	if (err == SSL_ERROR_SYSCALL && !e)
		return io_break(io, "connection lost: %s%s", strerror(errno),
				errno == ECONNRESET ? hint : "");
	if (ssl && (why == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
		    why == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE) && !io->got)
		return io_break(io, "TLS: the server wants a client certificate: %s (%s)",
				ssl_reason("?"), "give tls-cert-file and tls-key-file");
	if (ssl && (why == SSL_R_TLSV1_ALERT_UNKNOWN_CA ||
		    why == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE ||
		    why == SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED ||
		    why == SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN))
		return io_break(io, "TLS: the server refuses the certificate of tls-cert-file: %s",
				ssl_reason("?"));
	return io_break(io, "TLS: %s", ssl_reason("unknown error"));
}

/*
 * Move bytes (@write: the queue out, else replies in) once; 1 if some
 * moved, 0 if the socket must be waited for (@events set), or -EIO.
 */
static int io_once(struct rls_io *io, bool write, short *events)
{
	char buf[16384];
	ssize_t n;
	int err;

	errno = 0;
	ERR_clear_error();
	if (io->ssl)
		n = write ? SSL_write(io->ssl, io->out, (int)io->outlen) :
			    SSL_read(io->ssl, buf, sizeof(buf));
	else
		n = write ? send(io->fd, io->out, io->outlen, MSG_NOSIGNAL) :
			    recv(io->fd, buf, sizeof(buf), 0);
	if (n > 0 && write) {
		io->outlen -= (size_t)n;
		memmove(io->out, io->out + n, io->outlen);
		memset(io->out + io->outlen, 0, (size_t)n);	/* AUTH's password */
		return 1;
	}
	if (n > 0) {
		if (!io->got && !io->ssl &&
		    (buf[0] == TLS_ALERT || buf[0] == TLS_HANDSHAKE))
			return io_break(io, "the server answered in TLS%s",
					HINT_TLS_PORT);
		io->got = true;
		redisReaderFeed(io->reader, buf, (size_t)n);
		return 1;
	}
	if (io->ssl) {
		err = SSL_get_error(io->ssl, (int)n);
		if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
			*events = err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
			return 0;
		}
		return tls_io_failed(io, err);
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		*events = write ? POLLOUT : POLLIN;
		return 0;
	}
	/* a TLS port closes, or resets, a connection that speaks plain text */
	if (n == 0)
		return io_break(io, "the server closed the connection%s",
				io->got ? "" : HINT_TLS_PORT);
	return io_break(io, "connection lost: %s%s", strerror(errno),
			io->got || errno != ECONNRESET ? "" : HINT_TLS_PORT);
}

/* Send the queue, or read until a reply is whole; bounded by the timeout. */
static int io_move(struct rls_io *io, bool write, redisReply **rep)
{
	double deadline = now_ms() + io->timeout_ms;
	short events;
	void *r = NULL;
	int ret;

	while (write ? io->outlen > 0 : !r) {
		if (!write && redisReaderGetReply(io->reader, &r) != REDIS_OK)
			return io_break(io, "%s", io->reader->errstr);
		if (!write && r)
			break;
		ret = io_once(io, write, &events);
		if (ret < 0)
			return ret;
		if (ret)
			continue;
		ret = wait_fd(io->fd, events, deadline);
		if (ret == -ETIMEDOUT)
			return io_break(io, "%s in %.0f ms", write ?
					"cannot send" : "no reply", io->timeout_ms);
		if (ret)
			return io_break(io, "connection lost: %s", strerror(-ret));
	}
	if (rep)
		*rep = r;
	return 0;
}

/*
 * The next reply if it is already there, or what the socket holds makes
 * it whole, without waiting; NULL if none (or on error: rls_io_broken()).
 */
static redisReply *rls_io_poll(struct rls_io *io)
{
	short events;
	void *r = NULL;

	while (!io->broken) {
		if (redisReaderGetReply(io->reader, &r) != REDIS_OK) {
			io_break(io, "%s", io->reader->errstr);
			return NULL;
		}
		if (r || io_once(io, false, &events) <= 0)
			return r;
	}
	return NULL;
}

/* Send what is queued, read the next reply; NULL on error. */
static redisReply *rls_io_reply(struct rls_io *io)
{
	redisReply *rep = NULL;

	if (io->broken || io_move(io, true, NULL) || io_move(io, false, &rep))
		return NULL;
	return rep;
}

/*
 * struct rls_redis - a connection as the other files hold it
 * @conn: what it was made for, the key links share it by
 * @refs: the links that hold it
 * @lib:  the function library was found (or loaded) on it
 * @single_ms: when that library was found without rl_lease_many (an
 *         older one: one resource a call for a minute)
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
	double single_ms;	/* rl_lease_many not found then (0: never) */
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
void rls_redis_fail(struct rls_redis *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(r->err, fmt, ap);
	va_end(ap);
	if (r->say)
		fprintf(stderr, PROG ": redis %s: %s\n", r->addr, r->err);
}

/*
 * Queue one command (argv/argvlen as redisCommandArgv; @argvlen NULL:
 * strings); nothing is sent yet. 0, or -EIO with r->err set and the
 * connection stale: the replies of a pipeline would lose their order.
 */
int rls_redis_send(struct rls_redis *r, int argc, const char **argv,
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
redisReply *rls_redis_recv(struct rls_redis *r)
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
redisReply *rls_redis_call(struct rls_redis *r, int argc, const char **argv,
			   const size_t *argvlen)
{
	return rls_redis_send(r, argc, argv, argvlen) ? NULL : rls_redis_recv(r);
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

void rls_redis_explain(struct rls_redis *r, const char *cmd,
		       const redisReply *rep)
{
	char buf[400];

	rls_redis_fail(r, "%s", meaning(r, cmd, rep->str ? rep->str : "error",
					buf, sizeof(buf)));
}

const char *rls_redis_reply_error(const struct rls_redis *r,
				  const redisReply *rep, char *buf, size_t len)
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

/* The reply @rep of @cmd (freed): 0 if not an error, else -EIO. */
static int handshake_reply(struct rls_redis *r, const char *cmd,
			   redisReply *rep)
{
	int ret = -EIO;

	if (!rep)
		rls_redis_fail(r, "%s: %s", cmd, r->err);
	else if (rep->type == REDIS_REPLY_ERROR)
		rls_redis_explain(r, cmd, rep);
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
	    handshake_reply(r, "AUTH", rls_redis_call(r, c->user[0] ? 3 : 2, auth, NULL)))
		return -EIO;
	snprintf(db, sizeof(db), "%u", c->db);
	if (c->db && handshake_reply(r, "SELECT", rls_redis_call(r, 2, select, NULL)))
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
		rls_redis_fail(r, "%s", err);
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
int rls_redis_is_primary(struct rls_redis *r)
{
	const char *argv[1] = { "ROLE" };
	redisReply *rep = rls_redis_send(r, 1, argv, NULL) ? NULL : rls_redis_recv(r);
	int ret = -EIO;

	if (!rep)
		rls_redis_fail(r, "ROLE: %s", r->err);
	else if (rep->type == REDIS_REPLY_ERROR)
		rls_redis_explain(r, "ROLE", rep);
	else if (rep->type != REDIS_REPLY_ARRAY || !rep->elements ||
		 !rep->element[0]->str)
		rls_redis_fail(r, "ROLE: an unexpected reply");
	else if (strcmp(rep->element[0]->str, "master"))
		rls_redis_fail(r,
			       "ROLE says %s, not master: the sentinels named a server that is no primary (a failover under way?)",
			       rep->element[0]->str);
	else
		ret = 0;
	r->online = role_online(rep);
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
	rep = rls_redis_call(r, 2, argv, NULL);
	if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 3 &&
	    rep->element[0]->str && !strcmp(rep->element[0]->str, "subscribe"))
		ret = 0;
	else if (rep && rep->type == REDIS_REPLY_ERROR)
		rls_redis_explain(r, "SUBSCRIBE", rep);
	else
		rls_redis_fail(r, "SUBSCRIBE: %s", rep ? "an unexpected reply" : r->err);
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
	redisReply *w = r->wait_now ? rls_redis_recv(r) : NULL;
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
	if (rls_redis_send(r, 1, argv, NULL))
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
	rep = rls_redis_recv(r);
	/* an ACL without +role: WAIT for wait-replicas, as before */
	r->online = role_online(rep);
	freeReplyObject(rep);
}

/* A grant's command: ROLE before it if first, WAIT behind it; 0 or -EIO. */
int rls_redis_grant_send(struct rls_redis *r, int argc, const char **argv)
{
	char n_rep[16], ms[24];
	const char *wait[3] = { "WAIT", n_rep, ms };

	if (send_role(r) || rls_redis_send(r, argc, argv, NULL))
		return -EIO;
	if (!r->wait_replicas)
		return 0;
	r->inflight++;
	if (!r->wait_now)
		return 0;
	snprintf(n_rep, sizeof(n_rep), "%u", r->wait_now);
	snprintf(ms, sizeof(ms), "%.0f", r->wait_ms < 1 ? 1 : r->wait_ms);
	return rls_redis_send(r, 3, wait, NULL);
}

/* A grant's reply (NULL on error), with ROLE's before and WAIT's after. */
redisReply *rls_redis_grant_recv(struct rls_redis *r)
{
	redisReply *rep;

	role_reply(r);
	rep = rls_redis_recv(r);
	if (!r->wait_replicas)
		return rep;
	if (rep || !rls_redis_broken(r))
		wait_reply(r, rep);
	if (r->inflight)
		r->inflight--;
	return rep;
}

void rls_redis_set_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(connect_err, fmt, ap);
	va_end(ap);
}

double rls_redis_timeout_ms(const struct rls_redis *r)
{
	return r->timeout_ms;
}

void rls_redis_set_wait(struct rls_redis *r, unsigned int replicas, double ms)
{
	r->wait_replicas = replicas;
	r->wait_ms = ms;
}

bool rls_redis_lib(const struct rls_redis *r)
{
	return r->lib;
}

void rls_redis_set_lib(struct rls_redis *r, bool lib)
{
	r->lib = lib;
}

/* A library found without rl_lease_many is looked at again this late. */
#define SINGLE_MS	60000.0

bool rls_redis_single(const struct rls_redis *r)
{
	return r && r->single_ms && now_ms() - r->single_ms < SINGLE_MS;
}

void rls_redis_set_single(struct rls_redis *r, bool single)
{
	r->single_ms = single ? now_ms() : 0;
}
