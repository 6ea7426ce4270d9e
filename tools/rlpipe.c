// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlpipe - copy standard input to standard output at a rate taken from a
 * /dev/ratelimit limiter, one token per byte.
 *
 * Before each write rlpipe acquires as many tokens as the write has bytes
 * (the kernel serves requests above the burst in chunks). Pipes attached
 * to one named limiter share its bandwidth: the kernel queues their fds
 * fairly, so each gets an equal share while all are busy.
 *
 * On a limiter with a concurrency limit the bytes also count against it
 * while being written, and are released after each write.
 *
 * Exit status: 0 at the end of the input, 1 on errors (the output closed
 * early included), 2 on usage errors.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libratelimit.h"

#include "tool.h"

TOOL_NAME("rlpipe");

#define DEFAULT_BUF	(64 * 1024)
#define MAX_BUF		(64ULL << 20)

struct progress {
	uint64_t start;		/* rl_now_ns() at the start */
	uint64_t last;		/* time of the last line */
	uint64_t last_bytes;	/* bytes at the last line */
	uint64_t bytes;		/* bytes written */
	uint64_t wait_ns;	/* time slept in acquires */
};

static void print_usage(void)
{
	fprintf(stdout,
		"usage: rlpipe (-n NAME | -r RATESPEC | -n NAME -r RATESPEC) [-p] [-b BUFSIZE]\n"
		"  -r RATESPEC  bytes per period, e.g. 1MiB/s, 100k/s:16KiB\n"
		"  -n NAME      take the bytes from the named limiter NAME, shared\n"
		"               with other pipes; with -r, create it (mode 0644,\n"
		"               not persistent) if missing\n"
		"  -b BUFSIZE   bytes per read and write (default the smaller of\n"
		"               64KiB and the burst)\n"
		"  -p           progress on stderr about once a second, and a summary\n"
		"  -h, --help   show this help\n"
		"  --version    print the version\n"
		"Copies stdin to stdout; exit 0 at the end of the input, 1 on errors,\n"
		"2 on usage errors.\n");
}

/* "512 B", "1.5 KiB", "12.3 MiB", "1.02 GiB". */
static const char *fmt_bytes(char *buf, size_t len, double v)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int i = 0;

	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, i ? "%.2f %s" : "%.0f %s", v, units[i]);
	return buf;
}

static void report(struct progress *p, uint64_t now, bool final)
{
	double secs = (now - p->start) / 1e9;
	double dt = (now - p->last) / 1e9;
	char b1[32], b2[32], b3[32];

	if (final) {
		fprintf(stderr, "rlpipe: %s (%llu bytes) in %.3f s, %s/s, waited %.3f s\n",
			fmt_bytes(b1, sizeof(b1), p->bytes),
			(unsigned long long)p->bytes, secs,
			fmt_bytes(b2, sizeof(b2), secs > 0 ? p->bytes / secs : 0),
			p->wait_ns / 1e9);
		return;
	}
	fprintf(stderr, "rlpipe: %8.1f s %12s %12s/s (average %s/s)\n", secs,
		fmt_bytes(b1, sizeof(b1), p->bytes),
		fmt_bytes(b2, sizeof(b2),
			  dt > 0 ? (p->bytes - p->last_bytes) / dt : 0),
		fmt_bytes(b3, sizeof(b3), secs > 0 ? p->bytes / secs : 0));
	p->last = now;
	p->last_bytes = p->bytes;
}

static int open_limiter(const char *name, const char *spec,
			const struct rl_config *cfg)
{
	int fd, ret;

	fd = rl_open(0);
	if (fd == -ENOENT || fd == -ENODEV || fd == -ENXIO)
		return -tool_fail(1, "cannot open %s: is the module loaded?",
				  RL_DEVICE_PATH);
	if (fd < 0)
		return -tool_fail(1, "cannot open %s: %s", RL_DEVICE_PATH,
				  strerror(-fd));
	if (!name) {
		ret = rl_set_config(fd, cfg);
		if (ret)
			return -tool_fail(1, "cannot set rate '%s': %s", spec,
					  strerror(-ret));
		return fd;
	}
	ret = rl_attach(fd, name, spec ? RL_ATTACH_CREATE : 0,
			TOOL_DEFAULT_MODE,
			spec ? cfg : NULL);
	if (ret == -ENOENT)
		return -tool_fail(1, "no limiter named '%s' (-r creates it)", name);
	if (ret == -EACCES)
		return -tool_fail(1, "permission denied for '%s'", name);
	if (ret == -ENOTTY)
		return -tool_fail(1, "the loaded module has no named limiters");
	if (ret)
		return -tool_fail(1, "cannot attach to '%s': %s", name,
				  strerror(-ret));
	return fd;
}

/*
 * Write all of @buf. A short write goes on from where it stopped; on an
 * error the tokens of the bytes not written go back to the limiter.
 */
static int write_all(const char *buf, size_t len, int lfd)
{
	ssize_t n;
	int err;

	while (len) {
		n = write(STDOUT_FILENO, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			rl_refund(lfd, len);	/* best effort */
			return -err;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

static int copy(int lfd, char *buf, size_t size, bool show)
{
	struct progress p = { 0 };
	struct rl_acquire req;
	uint64_t now;
	ssize_t n;
	int ret = 0;

	p.start = rl_now_ns();
	p.last = p.start;
	for (;;) {
		n = read(STDIN_FILENO, buf, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = tool_fail(1, "read error: %s", strerror(errno));
			break;
		}
		if (!n)
			break;
		memset(&req, 0, sizeof(req));
		req.count = (uint64_t)n;
		req.deadline_ns = RL_DEADLINE_NONE;
		do
			ret = rl_acquire_ex(lfd, &req);
		while (ret == -EINTR);
		if (ret) {
			ret = tool_fail(1, "cannot take %zd bytes: %s", n,
					strerror(-ret));
			break;
		}
		p.wait_ns += req.wait_ns;
		ret = write_all(buf, (size_t)n, lfd);
		/*
		 * On a limiter with a concurrency limit the bytes are permits
		 * held until written: give them back. Elsewhere this fails
		 * harmlessly (nothing held).
		 */
		rl_release(lfd, (uint64_t)n);
		if (ret == -EPIPE) {	/* the reader is gone: no noise */
			ret = 1;
			break;
		}
		if (ret) {
			ret = tool_fail(1, "write error: %s", strerror(-ret));
			break;
		}
		p.bytes += (uint64_t)n;
		now = rl_now_ns();
		if (show && now - p.last >= NSEC_PER_SEC)
			report(&p, now, false);
	}
	if (show)
		report(&p, rl_now_ns(), true);
	return ret;
}

/* The command line. */
struct args {
	const char *name;	/* -n, or NULL */
	const char *spec;	/* -r, or NULL */
	uint64_t size;		/* -b, 0 for the default */
	bool show;		/* -p */
	struct rl_config cfg;	/* of -r */
};

/* The command line into @a: -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		TOOL_HELP_OPTION,
		TOOL_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "n:r:b:ph", opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			if (!rl_name_valid(optarg))
				return tool_usage(EXIT_USAGE, "invalid name '%s'",
						  optarg);
			a->name = optarg;
			break;
		case 'r':
			a->spec = optarg;
			break;
		case 'b':
			if (rl_parse_amount(optarg, &a->size) || !a->size ||
			    a->size > MAX_BUF)
				return tool_usage(EXIT_USAGE,
						  "invalid buffer size '%s' (1 .. 64MiB)",
						  optarg);
			break;
		case 'p':
			a->show = true;
			break;
		case 'h':
			print_usage();
			return 0;
		case TOOL_OPT_VERSION:
			return tool_version();
		default:	/* getopt said what */
			return tool_try_help(EXIT_USAGE);
		}
	}
	if (!a->name && !a->spec)
		return tool_usage(EXIT_USAGE, "missing -r RATESPEC or -n NAME");
	if (optind != argc)
		return tool_usage(EXIT_USAGE, "unexpected argument '%s'",
				  argv[optind]);
	if (a->spec && rl_parse_rate(a->spec, &a->cfg))
		return tool_usage(EXIT_USAGE, "invalid rate spec '%s'", a->spec);
	if (a->spec && !a->name && !(a->cfg.flags & RL_CONFIG_UNLIMITED) &&
	    !a->cfg.rate)
		return tool_usage(EXIT_USAGE,
				  "rate 0 would never let a byte through");
	return -1;
}

int main(int argc, char **argv)
{
	struct args a = { 0 };
	struct rl_config cfg;
	uint64_t size;
	int fd, ret;
	char *buf;

	argv[0] = (char *)tool_name;	/* for getopt's messages */
	ret = parse_args(argc, argv, &a);
	if (ret >= 0)
		return ret;

	/* The reader going away is an error to handle, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	fd = open_limiter(a.name, a.spec, &a.cfg);
	if (fd < 0)
		return -fd;
	ret = rl_get_config(fd, &cfg);
	if (ret)
		return tool_fail(1, "cannot read the configuration: %s",
				 strerror(-ret));
	size = a.size;
	if (!size) {
		/* Whole bursts at most: smoother than one big chunked grant. */
		size = DEFAULT_BUF;
		if (!(cfg.flags & RL_CONFIG_UNLIMITED) && cfg.burst &&
		    cfg.burst < size)
			size = cfg.burst;
	}
	/* A write larger than the concurrency could never be granted. */
	if (cfg.concurrency && size > cfg.concurrency)
		size = cfg.concurrency;
	buf = malloc(size);
	if (!buf)
		return tool_fail(1, "cannot allocate %llu bytes",
				 (unsigned long long)size);
	ret = copy(fd, buf, size, a.show);
	free(buf);
	rl_close(fd);
	return ret;
}
