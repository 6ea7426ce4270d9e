// SPDX-License-Identifier: GPL-2.0-only
/*
 * redis.c - peer 3: Redis with a token-bucket Lua script (a RESP client).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "bench.h"

/*
 * KEYS[1] = bucket; ARGV = rate (tokens/s), burst, tokens wanted. Takes
 * the tokens and returns 0, or returns the microseconds until they are
 * there (the client sleeps and asks again), as Redisson-style limiters do.
 */
static const char redis_lua[] =
	"local rate = tonumber(ARGV[1])\n"
	"local burst = tonumber(ARGV[2])\n"
	"local n = tonumber(ARGV[3])\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local v = redis.call('HMGET', KEYS[1], 'tokens', 'ts')\n"
	"local tokens = tonumber(v[1])\n"
	"local ts = tonumber(v[2])\n"
	"if tokens == nil then tokens = burst ts = now end\n"
	"tokens = math.min(burst, tokens + (now - ts) * rate / 1000000)\n"
	"local wait = 0\n"
	"if tokens >= n then tokens = tokens - n\n"
	"else wait = math.ceil((n - tokens) * 1000000 / rate) end\n"
	"redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', now)\n"
	"return wait";

static int redis_send(struct redis *r, int argc, const char *const *argv)
{
	char out[8192];
	size_t n = 0, off = 0;
	ssize_t w;
	int i;

	n += snprintf(out + n, sizeof(out) - n, "*%d\r\n", argc);
	for (i = 0; i < argc && n < sizeof(out); i++)
		n += snprintf(out + n, sizeof(out) - n, "$%zu\r\n%s\r\n",
			      strlen(argv[i]), argv[i]);
	if (n >= sizeof(out))
		return -E2BIG;
	while (off < n) {
		w = write(r->fd, out + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -EIO;
		off += (size_t)w;
	}
	return 0;
}

/* Read until @r->buf holds a full reply: a line, plus a bulk body. */
static int redis_reply(struct redis *r, long long *ival, char *s, size_t slen)
{
	char *eol, *body;
	long long blen;
	ssize_t got;

	r->len = 0;
	for (;;) {
		eol = r->len ? memmem(r->buf, r->len, "\r\n", 2) : NULL;
		if (eol && r->buf[0] != '$')
			break;
		if (eol) {
			blen = atoll(r->buf + 1);
			body = eol + 2;
			if (blen < 0 || (size_t)(body - r->buf) + blen + 2 <= r->len)
				break;
		}
		if (r->len == sizeof(r->buf) - 1)
			return -EPROTO;
		got = read(r->fd, r->buf + r->len, sizeof(r->buf) - 1 - r->len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -EIO;
		r->len += (size_t)got;
	}
	r->buf[r->len] = '\0';
	switch (r->buf[0]) {
	case ':':
		if (ival)
			*ival = atoll(r->buf + 1);
		return 0;
	case '+':
		return 0;
	case '$':
		if (s) {
			blen = atoll(r->buf + 1);
			if (blen < 0 || (size_t)blen >= slen)
				return -EPROTO;
			memcpy(s, eol + 2, (size_t)blen);
			s[blen] = '\0';
		}
		return 0;
	default:
		fprintf(stderr, "rlbench: redis: %.*s\n", (int)(eol - r->buf),
			r->buf);
		return -EPROTO;
	}
}

int redis_connect(struct redis *r)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	const char *const load[] = { "SCRIPT", "LOAD", redis_lua };
	int one = 1, ret;

	memset(r, 0, sizeof(*r));
	sa.sin_port = htons(opt_redis_port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	r->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (r->fd < 0)
		return -errno;
	if (connect(r->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		close(r->fd);
		return ret;
	}
	setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ret = redis_send(r, 3, load);
	if (!ret)
		ret = redis_reply(r, NULL, r->sha, sizeof(r->sha));
	if (ret)
		close(r->fd);
	return ret;
}

/* One EVALSHA: 0 when granted, else the wait in us (> 0), or -errno. */
long long redis_take(struct redis *r, const char *key, uint64_t rate,
		     uint64_t burst, uint64_t n)
{
	char a1[24], a2[24], a3[24];
	const char *const argv[] = { "EVALSHA", r->sha, "1", key, a1, a2, a3 };
	long long wait = -1;
	int ret;

	snprintf(a1, sizeof(a1), "%llu", (unsigned long long)rate);
	snprintf(a2, sizeof(a2), "%llu", (unsigned long long)burst);
	snprintf(a3, sizeof(a3), "%llu", (unsigned long long)n);
	ret = redis_send(r, 7, argv);
	if (!ret)
		ret = redis_reply(r, &wait, NULL, 0);
	return ret ? ret : wait;
}

/* Acquire @n, sleeping as the script says; returns round trips or -errno. */
long long redis_acquire(struct redis *r, const char *key,
			uint64_t rate, uint64_t burst, uint64_t n)
{
	long long w, trips = 0;

	for (;;) {
		w = redis_take(r, key, rate, burst, n);
		trips++;
		if (w <= 0)
			return w < 0 ? w : trips;
		sleep_ns((uint64_t)w * 1000);
	}
}

/* SCRIPT LOAD of @script: its SHA1 into @sha. 0 or -errno. */
int redis_load(struct redis *r, const char *script, char *sha, size_t len)
{
	const char *const argv[] = { "SCRIPT", "LOAD", script };
	int ret = redis_send(r, 3, argv);

	return ret ? ret : redis_reply(r, NULL, sha, len);
}

/* A command whose reply is an integer: it, or -errno. */
long long redis_call_int(struct redis *r, int argc, const char *const *argv)
{
	long long v = -EPROTO;
	int ret = redis_send(r, argc, argv);

	if (!ret)
		ret = redis_reply(r, &v, NULL, 0);
	return ret ? ret : v;
}

/* A command whose reply is a status or a bulk string (into @s, if not NULL). */
int redis_call_str(struct redis *r, int argc, const char *const *argv, char *s, size_t len)
{
	int ret = redis_send(r, argc, argv);

	return ret ? ret : redis_reply(r, NULL, s, len);
}

int redis_ping(struct redis *r)
{
	const char *const argv[] = { "PING" };
	int ret = redis_send(r, 1, argv);

	return ret ? ret : redis_reply(r, NULL, NULL, 0);
}

void redis_del(struct redis *r, const char *key)
{
	const char *const argv[] = { "DEL", key };

	if (!redis_send(r, 2, argv))
		redis_reply(r, NULL, NULL, 0);
}

/*
 * Run on CPU 0, where bench.sh starts redis-server: under QEMU TCG a
 * wake-up across vCPUs costs a timer tick, which would swamp Redis's
 * loopback round trips. Pinning gives Redis its best case.
 */
void pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

bool redis_available(void)
{
	struct redis r;

	if (redis_connect(&r))
		return false;
	close(r.fd);
	return true;
}
