// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlpace - take tokens from a /dev/ratelimit limiter, private or named, and
 * report how well the kernel kept the pace.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libratelimit.h"
#include "tool.h"

TOOL_NAME("rlpace");

#define MAX_THREADS	1024
#define MAX_ACQUIRES	(16U << 20)	/* 128 MiB of recorded waits */

struct pace {
	int fd;
	const char *name;		/* named limiter, or NULL */
	uint64_t start_tokens;		/* in the bucket at the start */
	uint64_t count;			/* tokens to take in all */
	uint64_t size;			/* tokens per acquire */
	uint64_t acquires;		/* number of acquires */
	atomic_uint_fast64_t next;	/* next acquire to issue */
	atomic_int err;			/* first error, -errno */
	uint64_t *waits;		/* wait_ns of each acquire */
	struct rl_client_config client;	/* -P and -W */
	bool set_client;
};

static void print_usage(void)
{
	fprintf(stdout,
		"usage: rlpace [-N NAME] -r RATESPEC [-n COUNT] [-s SIZE] [-t THREADS]\n"
		"              [-P PRIORITY] [-W WEIGHT] [-q]\n"
		"       rlpace -N NAME [-n COUNT] [-s SIZE] [-t THREADS] [-P PRIORITY]\n"
		"              [-W WEIGHT] [-q]\n"
		"  -r RATESPEC  limiter to create, e.g. 12000/s, 10MiB/s:1MiB, 1/10s\n"
		"  -N NAME      use the named limiter NAME; with -r, create it\n"
		"               (mode 0644, not persistent) if missing\n"
		"  -n COUNT     tokens to take in all (default 100)\n"
		"  -s SIZE      tokens per acquire (default 1)\n"
		"  -t THREADS   threads acquiring concurrently (default 1)\n"
		"  -P PRIORITY  priority of the fd: low, mid (default), high, user\n"
		"  -W WEIGHT    fair-share weight of the fd, 1 .. 1000 (default 1)\n"
		"  -q           print one summary line only\n"
		"  -h, --help   show this help\n"
		"  --version    print the version\n"
		"Exit status: 0 when every acquire was granted, 1 on errors, 2 on\n"
		"usage errors.\n");
}

static void *worker(void *arg)
{
	struct pace *p = arg;
	struct rl_acquire req;
	uint64_t i;
	int ret;

	while (!atomic_load(&p->err)) {
		i = atomic_fetch_add(&p->next, 1);
		if (i >= p->acquires)
			break;
		memset(&req, 0, sizeof(req));
		req.count = p->count - i * p->size;
		if (req.count > p->size)
			req.count = p->size;
		req.deadline_ns = RL_DEADLINE_NONE;
		ret = rl_acquire_ex(p->fd, &req);
		if (ret) {
			int zero = 0;

			atomic_compare_exchange_strong(&p->err, &zero, ret);
			break;
		}
		p->waits[i] = req.wait_ns;
	}
	return NULL;
}

static int run(struct pace *p, unsigned int threads)
{
	pthread_t tid[MAX_THREADS];
	unsigned int i, n;
	int ret = 0;

	for (n = 0; n < threads; n++) {
		ret = -pthread_create(&tid[n], NULL, worker, p);
		if (ret)
			break;
	}
	if (ret) {	/* let the started threads finish the work */
		fprintf(stderr, "rlpace: only %u threads: %s\n", n,
			strerror(-ret));
		if (!n)
			return ret;
	}
	for (i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	return atomic_load(&p->err);
}

/* The lines of the report about time: elapsed, grants and waits. */
static void report_waits(const struct pace *p, uint64_t elapsed,
			 const struct rl_stats *st)
{
	uint64_t n = p->acquires;
	char b1[32], b2[32];

	printf("elapsed       %s\n", tool_fmt_ns(b1, sizeof(b1), elapsed));
	printf("tokens        %llu in %llu acquires of up to %llu\n",
	       (unsigned long long)p->count, (unsigned long long)n,
	       (unsigned long long)p->size);
	printf("grants        %llu immediate, %llu waited\n",
	       (unsigned long long)st->immediate,
	       (unsigned long long)st->waited);
	printf("kernel wait   mean %s, max %s\n",
	       tool_fmt_ns(b1, sizeof(b1), st->waited ?
			   (double)st->wait_ns_total / st->waited : 0),
	       tool_fmt_ns(b2, sizeof(b2), st->wait_ns_max));
	printf("acquire wait  p50 %s, p99 %s\n",
	       tool_fmt_ns(b1, sizeof(b1), p->waits[(n - 1) * 50 / 100]),
	       tool_fmt_ns(b2, sizeof(b2), p->waits[(n - 1) * 99 / 100]));
}

static void report(const struct pace *p, const struct rl_config *cfg,
		   uint64_t elapsed, const struct rl_stats *st, bool quiet)
{
	char spec[RL_RATE_STRLEN];
	bool unlimited = cfg->flags & RL_CONFIG_UNLIMITED;
	double target = unlimited ? 0 : cfg->rate * 1e9 / cfg->period_ns;
	double achieved = elapsed ? p->count * 1e9 / elapsed : 0;
	double ratio = target > 0 ? achieved / target : 0;
	/*
	 * The tokens in the bucket at the start (all of a new limiter's
	 * burst) came at once: the rest is what the rate paced.
	 */
	uint64_t paced = p->count > p->start_tokens ?
			 p->count - p->start_tokens : 0;
	double steady = elapsed ? paced * 1e9 / elapsed : 0;
	double bound = p->start_tokens + target * elapsed / 1e9;

	rl_format_rate(cfg, spec, sizeof(spec));
	if (quiet) {
		printf("spec=%s target=%.1f achieved=%.1f ratio=%.3f steady=%.1f elapsed_ns=%llu",
		       spec, target, achieved, ratio, steady,
		       (unsigned long long)elapsed);
		printf("%s%s", p->name ? " name=" : "", p->name ? p->name : "");
		if (p->set_client)
			printf(" priority=%s weight=%u",
			       tool_prio_name(p->client.priority, "mid"),
			       p->client.weight ? p->client.weight : 1);
		printf("\n");
		return;
	}
	if (p->name)
		printf("limiter       %s, named '%s'\n", spec, p->name);
	else
		printf("limiter       %s\n", spec);
	if (p->set_client)
		printf("client        priority %s, weight %u\n",
		       tool_prio_name(p->client.priority, "mid"),
		       p->client.weight ? p->client.weight : 1);
	if (unlimited)
		printf("target rate   unlimited\n");
	else
		printf("target rate   %.1f tokens/s\n", target);
	printf("achieved rate %.1f tokens/s\n", achieved);
	if (unlimited || !target) {
		printf("ratio         n/a\n");
	} else {
		printf("ratio         %.3f\n", ratio);
		printf("steady rate   %.1f tokens/s, %.3f of target\n",
		       steady, steady / target);
		printf("              (the first %llu were in the bucket at the start)\n",
		       (unsigned long long)p->start_tokens);
		printf("bucket bound  %llu granted <= burst + rate x elapsed = %.0f: %s\n",
		       (unsigned long long)p->count, bound,
		       p->count <= bound + 1 ? "held" : "EXCEEDED");
	}
	report_waits(p, elapsed, st);
}

static int open_limiter(struct pace *p, const char *spec,
			const struct rl_config *cfg)
{
	int ret;

	p->fd = rl_open(0);
	if (p->fd < 0) {
		fprintf(stderr, "rlpace: cannot open %s: %s%s\n", RL_DEVICE_PATH,
			strerror(-p->fd), p->fd == -ENOENT || p->fd == -ENODEV ||
			p->fd == -ENXIO ? " (is the module loaded?)" : "");
		return 1;
	}
	if (!p->name) {
		ret = rl_set_config(p->fd, cfg);
		return ret ? tool_fail(1, "cannot set rate '%s': %s", spec,
					 strerror(-ret)) : 0;
	}
	/* With a rate: create it if missing, everybody may attach. */
	ret = rl_attach(p->fd, p->name, spec ? RL_ATTACH_CREATE : 0,
			TOOL_DEFAULT_MODE,
			spec ? cfg : NULL);
	if (ret == -ENOENT)
		fprintf(stderr, "rlpace: no limiter named '%s' (-r creates it)\n",
			p->name);
	else if (ret == -EACCES)
		fprintf(stderr, "rlpace: permission denied for '%s'\n", p->name);
	else if (ret == -EINVAL && spec)
		return tool_fail(1, "invalid rate for '%s': %s", p->name,
				 strerror(-ret));
	else if (ret)
		return tool_fail(1, "cannot attach to '%s': %s", p->name,
				 strerror(-ret));
	return ret ? 1 : 0;
}

/* The options of the command line that are not in struct pace. */
struct args {
	const char *spec;	/* -r, or NULL */
	uint64_t threads;	/* -t */
	bool quiet;		/* -q */
};

/*
 * One option @opt (with optarg) into @p and @a: -1 to go on, or the exit
 * status.
 */
static int parse_option(int opt, struct pace *p, struct args *a)
{
	uint64_t val;
	int ret;

	switch (opt) {
	case 'r':
		a->spec = optarg;
		return -1;
	case 'N':
		if (!rl_name_valid(optarg))
			return tool_usage(EXIT_USAGE, "invalid name '%s'", optarg);
		p->name = optarg;
		return -1;
	case 'n':
		if (rl_parse_amount(optarg, &p->count) || !p->count)
			return tool_usage(EXIT_USAGE, "invalid count '%s'", optarg);
		return -1;
	case 's':
		if (rl_parse_amount(optarg, &p->size) || !p->size)
			return tool_usage(EXIT_USAGE, "invalid size '%s'", optarg);
		return -1;
	case 't':
		if (rl_parse_amount(optarg, &a->threads) || !a->threads ||
		    a->threads > MAX_THREADS)
			return tool_usage(EXIT_USAGE,
					  "invalid thread count '%s' (1 .. %d)",
					  optarg, MAX_THREADS);
		return -1;
	case 'P':
		ret = rl_parse_priority(optarg);
		if (ret < 0)
			return tool_usage(EXIT_USAGE,
					  "invalid priority '%s' (low, mid, high, user)",
					  optarg);
		p->client.priority = (uint32_t)ret;
		p->set_client = true;
		return -1;
	case 'W':
		if (rl_parse_amount(optarg, &val) || !val ||
		    val > RL_WEIGHT_MAX)
			return tool_usage(EXIT_USAGE,
					  "invalid weight '%s' (1 .. %d)",
					  optarg, RL_WEIGHT_MAX);
		p->client.weight = (uint32_t)val;
		p->set_client = true;
		return -1;
	case 'q':
		a->quiet = true;
		return -1;
	default:	/* getopt said what */
		return tool_try_help(EXIT_USAGE);
	}
}

/*
 * The command line into @p, @a and, with -r, @cfg: -1 to go on, or the
 * exit status (0 after --help and --version).
 */
static int parse_args(int argc, char **argv, struct pace *p, struct args *a,
		      struct rl_config *cfg)
{
	static const struct option opts[] = {
		TOOL_HELP_OPTION,
		TOOL_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "r:N:n:s:t:P:W:qh", opts,
				  NULL)) != -1) {
		ret = tool_std_option(opt, print_usage);
		if (ret < 0)
			ret = parse_option(opt, p, a);
		if (ret >= 0)
			return ret;
	}
	if (!a->spec && !p->name)
		return tool_usage(EXIT_USAGE, "missing -r RATESPEC or -N NAME");
	if (optind != argc)
		return tool_usage(EXIT_USAGE, "unexpected argument '%s'", argv[optind]);
	if (a->spec) {
		ret = rl_parse_rate(a->spec, cfg);
		if (ret)
			return tool_usage(EXIT_USAGE, "invalid rate spec '%s': %s", a->spec,
					  strerror(-ret));
	}
	if (a->spec && !p->name && !(cfg->flags & RL_CONFIG_UNLIMITED) &&
	    !cfg->rate)
		return tool_usage(EXIT_USAGE,
				  "rate 0 pauses the limiter; nothing would be granted");
	p->acquires = p->count / p->size + !!(p->count % p->size);
	if (p->acquires > MAX_ACQUIRES)
		return tool_usage(EXIT_USAGE, "too many acquires (%llu); use a larger -s",
				  (unsigned long long)p->acquires);
	return -1;
}

/*
 * The limiter of @p open (created with @spec, @cfg), the client set: its
 * configuration into @cfg, its statistics into @st0; 0 or the exit status.
 */
static int start(struct pace *p, const char *spec, struct rl_config *cfg,
		 struct rl_stats *st0)
{
	int ret;

	ret = open_limiter(p, spec, cfg);
	if (ret)
		return ret;
	if (p->set_client) {
		ret = rl_set_client(p->fd, &p->client);
		if (ret == -ENOTTY)
			fprintf(stderr, "rlpace: the loaded module has no priorities or weights\n");
		if (ret)
			return tool_fail(1, "cannot set the priority and weight: %s",
					 strerror(-ret));
	}
	ret = rl_get_config(p->fd, cfg);
	if (ret)
		return tool_fail(1, "cannot read the configuration: %s",
				 strerror(-ret));
	if (!(cfg->flags & RL_CONFIG_UNLIMITED) && !cfg->rate)
		fprintf(stderr, "rlpace: '%s' is paused (rate 0); waiting until it is resumed\n",
			p->name);
	ret = rl_get_stats(p->fd, st0);	/* a named limiter may be in use */
	if (ret)
		return tool_fail(1, "cannot read statistics: %s",
				 strerror(-ret));
	p->start_tokens = st0->available;
	return 0;
}

int main(int argc, char **argv)
{
	struct pace p = { .count = 100, .size = 1 };
	struct args a = { .threads = 1 };
	struct rl_config cfg;
	struct rl_stats st0, st;
	uint64_t start_ns, elapsed;
	int ret;

	argv[0] = (char *)tool_name;	/* for getopt's messages */
	ret = parse_args(argc, argv, &p, &a, &cfg);
	if (ret >= 0)
		return ret;
	p.waits = calloc(p.acquires, sizeof(*p.waits));
	if (!p.waits)
		return tool_fail(1, "cannot allocate: %s", strerror(ENOMEM));
	ret = start(&p, a.spec, &cfg, &st0);
	if (ret)
		return ret;

	start_ns = rl_now_ns();
	ret = run(&p, (unsigned int)a.threads);
	elapsed = rl_now_ns() - start_ns;
	if (ret)
		return tool_fail(1, "acquire: %s", strerror(-ret));
	ret = rl_get_stats(p.fd, &st);
	if (!ret)	/* the limits in force now: sysfs may change them */
		ret = rl_get_config(p.fd, &cfg);
	if (ret)
		return tool_fail(1, "cannot read statistics: %s",
				 strerror(-ret));
	st.immediate -= st0.immediate;
	st.waited -= st0.waited;
	st.wait_ns_total -= st0.wait_ns_total;

	qsort(p.waits, p.acquires, sizeof(*p.waits), tool_cmp_u64);
	report(&p, &cfg, elapsed, &st, a.quiet);
	rl_close(p.fd);
	free(p.waits);
	return 0;
}
