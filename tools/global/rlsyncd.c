// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlsyncd - link local named limiters to global resources kept in Redis
 * (rlsyncd(8), Documentation/global.md).
 *
 *   rlsyncd [OPTION]... NAME[@RESOURCE][=RATE]...
 *   rlsyncd [OPTION]... -c PATH
 *
 * Start-up checks everything before it changes anything: the links, the
 * Redis servers, the function library, the resources; then it opens the
 * local limiters (paused until the first lease) and configures the
 * resources it was given a rate for. Then it tells systemd it is ready
 * (sd_notify(3): rlsyncd.service is Type=notify; nothing without
 * $NOTIFY_SOCKET).
 *
 * Its files, from the top down: calls run down this list, never up, and
 * each file's header (rlsyncd_link.h for rlsyncd_link.c...) declares what
 * it owns and exports and includes only headers of files below it
 * (Documentation/rlsyncd.md says what each owns).
 *
 *   rlsyncd.c          command line, start-up checks, the main loop
 *   rlsyncd_reload.c   SIGHUP: the configuration read again
 *   rlsyncd_link.c     one link (struct rls_link): demand; lease mode (the
 *                      lease, the limiter); batch mode (batches fed to it);
 *                      its state file (/run/rlsyncd/NAME)
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
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#define PROG "rlsyncd"
#include "tool.h"

TOOL_NAME(PROG);
#include "rlsyncd_reload.h"
#include "rlsyncd_link.h"
#include "rlsyncd_redis.h"
#include "rlsyncd_conn.h"
#include "rlsyncd_kernel.h"
#include "rlsyncd_conf.h"

#ifndef RLS_LUA_PATH
#define RLS_LUA_PATH "/usr/local/share/ratelimit/ratelimit.lua"
#endif
#define WAKE_MAX_NS	100000000ULL	/* look at leases 10 times a second */
/* Long options without a letter: Sentinel and WAIT (set_ha()). */
#define OPT_HA		1000

/* The long options without a letter: the keys of the TLS ones. */
enum { OPT_TLS = TOOL_OPT_VERSION + 1, OPT_TLS_END = OPT_TLS + 5 };
static const char *const tls_keys[] = {
	"tls-ca-file", "tls-cert-file", "tls-key-file", "tls-server-name",
	"tls-verify",
};

/* Set by SIGINT and SIGTERM, and SIGHUP; read by the main loop. */
static sig_atomic_t stop, hup;

struct opts {
	const char *config;
	const char *lua;
	char host[RLS_ID_MAX];
	struct rls_spec common;	/* the options that apply to NAME=RATE */
	bool check;
};

static const char usage[] =
"Usage: rlsyncd [OPTION]... NAME[@RESOURCE][=RATE]...\n"
"       rlsyncd [OPTION]... -c PATH\n"
"Link local named limiters to global resources in Redis (lease or batch\n"
"mode).\n"
"\n"
"  -r, --redis ADDR      HOST[:PORT], [IPV6][:PORT], unix:PATH,\n"
"                        redis://[USER@]HOST[:PORT][/DB] or rediss://...\n"
"                        (TLS) (default 127.0.0.1:6379); no password here\n"
"  -u, --username USER   the ACL user to AUTH as\n"
"  -P, --password-file F the password, the first line of F (%d/NAME:\n"
"                        NAME in $CREDENTIALS_DIRECTORY)\n"
"  -D, --db N            the database to SELECT (default 0)\n"
"      --tls-ca-file F   with rediss://: the CAs that sign the server's\n"
"                        certificate (default: the system's)\n"
"      --tls-cert-file F, --tls-key-file F  a client certificate, its key\n"
"      --tls-server-name NAME  the name to verify (default: the host's)\n"
"      --tls-verify no   do not verify the server's certificate (unsafe)\n"
"      --sentinels LIST  HOST:PORT,... of Redis Sentinel: they name the\n"
"                        primary (then --redis is not used)\n"
"      --master-name NAME  the master name the sentinels monitor\n"
"      --sentinel-password-file F  the sentinels' password\n"
"      --wait-replicas N WAIT for N replicas after each grant (default 0)\n"
"      --wait-timeout TIME  WAIT's timeout (default 50ms)\n"
"  -C, --cluster yes|no  ADDR is a seed node of a Redis Cluster (default no)\n"
"  -c, --config PATH     the [global NAME] sections of a ratelimit.d file\n"
"                        or directory\n"
"  -H, --host ID         this host's id in Redis (default: the hostname)\n"
"  -a, --algorithm ALGO  fair, proportional or static (default fair)\n"
"  -l, --lease TIME      lease length (default 10s)\n"
"  -R, --refresh TIME    refresh interval (default 1s)\n"
"  -T, --hold TIME       a floor's reservation after the lease (default 10s)\n"
"  -s, --safe MODE       pessimistic, optimistic or a RATE (default\n"
"                        pessimistic)\n"
"  -w, --weight W        weight in the fair share (default 1)\n"
"  -m, --mode MODE       lease (default) or batch\n"
"  -L, --lua PATH        the function library to load if Redis lacks it\n"
"  -S, --state DIR       the links' state files (default /run/rlsyncd;\n"
"                        \"\" for none)\n"
"  -n, --check           check the links and Redis, change nothing\n"
"  -v, --verbose         print each change of a share\n"
"  -h, --help            this help;  --version  the version\n";

static const struct option longopts[] = {
	{ "redis", required_argument, NULL, 'r' },
	{ "username", required_argument, NULL, 'u' },
	{ "password-file", required_argument, NULL, 'P' },
	{ "db", required_argument, NULL, 'D' },
	{ "tls-ca-file", required_argument, NULL, OPT_TLS },
	{ "tls-cert-file", required_argument, NULL, OPT_TLS + 1 },
	{ "tls-key-file", required_argument, NULL, OPT_TLS + 2 },
	{ "tls-server-name", required_argument, NULL, OPT_TLS + 3 },
	{ "tls-verify", required_argument, NULL, OPT_TLS + 4 },
	{ "sentinels", required_argument, NULL, OPT_HA },
	{ "master-name", required_argument, NULL, OPT_HA + 1 },
	{ "sentinel-password-file", required_argument, NULL, OPT_HA + 2 },
	{ "wait-replicas", required_argument, NULL, OPT_HA + 3 },
	{ "wait-timeout", required_argument, NULL, OPT_HA + 4 },
	{ "cluster", required_argument, NULL, 'C' },
	{ "config", required_argument, NULL, 'c' },
	{ "host", required_argument, NULL, 'H' },
	{ "algorithm", required_argument, NULL, 'a' },
	{ "lease", required_argument, NULL, 'l' },
	{ "refresh", required_argument, NULL, 'R' },
	{ "hold", required_argument, NULL, 'T' },
	{ "safe", required_argument, NULL, 's' },
	{ "weight", required_argument, NULL, 'w' },
	{ "mode", required_argument, NULL, 'm' },
	{ "lua", required_argument, NULL, 'L' },
	{ "state", required_argument, NULL, 'S' },
	{ "check", no_argument, NULL, 'n' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	TOOL_VERSION_OPTION,
	{ NULL, 0, NULL, 0 }
};

static const char *const optkeys[128] = {
	['a'] = "algorithm", ['l'] = "lease", ['R'] = "refresh", ['T'] = "hold",
	['s'] = "safe", ['w'] = "weight", ['m'] = "mode", ['r'] = "redis",
	['u'] = "username", ['P'] = "password-file", ['D'] = "db",
	['C'] = "cluster",
};

static const char *const hakeys[] = {
	"sentinels", "master-name", "sentinel-password-file", "wait-replicas",
	"wait-timeout",
};

/* Options; returns -1 to go on, else the exit status. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	int c;

	while ((c = getopt_long(argc, argv, "r:u:P:D:C:c:H:a:l:R:T:s:w:m:L:S:nvh", longopts,
				NULL)) != -1) {
		if ((c > 0 && c < 128 && optkeys[c]) ||
		    (c >= OPT_TLS && c < OPT_TLS_END)) {
			if (rls_spec_set(&o->common, c < 128 ? optkeys[c] :
					 tls_keys[c - OPT_TLS], optarg))
				return tool_try_help(EXIT_USAGE);
			continue;
		}
		if (c >= OPT_HA && c < OPT_HA + 5) {
			if (rls_spec_set(&o->common, hakeys[c - OPT_HA], optarg))
				return tool_try_help(EXIT_USAGE);
			continue;
		}
		switch (c) {
		case 'c':
			o->config = optarg;
			break;
		case 'H':
			snprintf(o->host, sizeof(o->host), "%s", optarg);
			break;
		case 'L':
			o->lua = optarg;
			break;
		case 'S':
			rls_state_dir = optarg;
			break;
		case 'n':
			o->check = true;
			break;
		case 'v':
			rls_verbose = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case TOOL_OPT_VERSION:
			return tool_version();
		default:
			return tool_try_help(EXIT_USAGE);
		}
	}
	return -1;
}

/*
 * NAME[@RESOURCE][=RATE] into @s, from the common options: with a rate
 * this agent configures the resource, without it joins it. 0, or
 * EXIT_USAGE after the error's line and the --help line.
 */
static int parse_link(const struct opts *o, const char *arg,
		      struct rls_spec *s)
{
	char name[RL_NAME_MAX * 2 + 2], *eq, *at;

	snprintf(name, sizeof(name), "%s", arg);
	eq = strchr(name, '=');
	if (eq)
		*eq = '\0';
	at = strchr(name, '@');
	if (at)
		*at = '\0';
	*s = o->common;
	if (!rl_name_valid(name) || (at && !rls_resource_valid(at + 1)))
		return tool_usage(EXIT_USAGE, "'%s': bad limiter or resource name",
				  arg);
	snprintf(s->name, sizeof(s->name), "%.*s", RL_NAME_MAX - 1, name);
	snprintf(s->resource, sizeof(s->resource), "%.*s", RL_NAME_MAX - 1,
		 at ? at + 1 : name);
	if ((eq && rls_spec_set(s, "rate", eq + 1)) || rls_spec_check(s))
		return tool_try_help(EXIT_USAGE);
	return 0;
}

/*
 * The links, from the command line or --config: 0, 1 after an error of
 * the files (or memory), EXIT_USAGE after one of the command line.
 */
static int get_specs(const struct opts *o, int argc, char **argv,
		     struct rls_spec **specs, unsigned int *n)
{
	int i, ret;

	if (o->config) {
		if (argc > optind)
			return tool_usage(EXIT_USAGE,
					  "give links or --config, not both");
		ret = rls_conf_load(o->config, &o->common, specs, n);
		if (!ret && !*n)
			fprintf(stderr, PROG ": %s: no [global NAME] section\n",
				o->config);
		return ret || !*n ? 1 : 0;
	}
	if (argc <= optind)
		return tool_usage(EXIT_USAGE,
				  "nothing to link: give NAME=RATE or --config PATH");
	*specs = calloc(argc - optind, sizeof(**specs));
	if (!*specs)
		return tool_fail(1, "out of memory");
	for (i = optind; i < argc; i++, (*n)++) {
		ret = parse_link(o, argv[i], &(*specs)[*n]);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Redis, its library and each resource, checked; connections kept. With
 * --check, reads only: a library Redis lacks is not loaded.
 */
static int check_redis(const struct opts *o, struct rls_link *links,
		       unsigned int n)
{
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		struct rls_link *l = &links[i];

		if (l->spec.conn.cluster) {	/* every primary's library */
			ret = rls_redis_cluster_library(&l->spec, o->lua, o->check);
			if (ret)
				return ret;
		}
		l->redis = rls_redis_connect(&l->spec,
					     RLS_START_TIMEOUT_MS, true);
		if (!l->redis)
			return -EIO;
		ret = o->check ? rls_redis_library_check(l->redis, o->lua) :
				 rls_redis_library(l->redis, o->lua);
		if (ret)
			return ret;
		if (l->spec.configure)
			continue;
		ret = rls_redis_exists(l->redis, l->spec.resource);
		if (ret == 0)
			fprintf(stderr, PROG ": %s: unknown resource %s at redis %s\n",
				l->spec.name, l->spec.resource, l->spec.redis);
		if (ret <= 0)
			return -ENOENT;
	}
	return 0;
}

/* Open the local limiters, then configure the resources; all or none. */
static int start_links(const struct opts *o, struct rls_link *links,
		       unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (rls_link_open(&links[i]))
			goto close_opened;
	}
	for (i = 0; i < n; i++) {
		if (links[i].spec.configure &&
		    rls_redis_config(links[i].redis, &links[i].spec, o->host))
			goto close_opened;
	}
	for (i = 0; i < n; i++)
		rls_redis_timeout(links[i].redis, rls_rpc_ms(&links[i].spec));
	return 0;

close_opened:
	for (i = 0; i < n; i++)
		rls_link_close(&links[i], o->host);
	return -EIO;
}

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		hup = 1;
	else
		stop = 1;
}

/* Before the calls to Redis, which may block: every link's lease. */
static void expire_all(struct rls_link *links, unsigned int n)
{
	uint64_t now = rl_now_ns();
	unsigned int i;

	for (i = 0; i < n; i++)
		rls_link_expire(&links[i], now);
}

/* SIGHUP: the configuration files again, applied whole or not at all. */
static void reload(const struct opts *o, struct rls_link **links,
		   unsigned int *n)
{
	hup = 0;
	if (!o->config) {
		fprintf(stderr, PROG ": SIGHUP: %s\n",
			"the links are the command line's; nothing to read again");
		return;
	}
	rls_reload(o->config, &o->common, o->host, o->lua, links, n);
}

/*
 * From the start: a SIGHUP or SIGTERM during start-up is seen when the
 * links run (a reload, or a clean exit), never the default death.
 */
static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* a Redis that died under a write is an error reply, not our end */
	signal(SIGPIPE, SIG_IGN);
}

static void run(const struct opts *o, struct rls_link **lp, unsigned int *np)
{
	struct rls_link *links = *lp;
	unsigned int i, n = *np;
	uint64_t now, wake, next;
	struct timespec ts;

	while (!stop) {
		if (hup) {
			reload(o, lp, np);
			links = *lp;
			n = *np;
		}
		now = rl_now_ns();
		wake = now + WAKE_MAX_NS;
		expire_all(links, n);
		next = rls_links_refresh(links, n, o->host, o->lua);
		if (next < wake)
			wake = next;
		now = rl_now_ns();
		if (wake <= now)
			continue;
		ts.tv_sec = (wake - now) / 1000000000ULL;
		ts.tv_nsec = (wake - now) % 1000000000ULL;
		if (!hup && !stop)
			nanosleep(&ts, NULL);
	}
	for (i = 0; i < n; i++)
		rls_link_close(&links[i], o->host);
}

int main(int argc, char **argv)
{
	struct opts o = { .lua = RLS_LUA_PATH };
	struct rls_spec *specs = NULL;
	struct rls_link *links = NULL;
	unsigned int i, n = 0;
	int ret;

	argv[0] = PROG;
	setvbuf(stdout, NULL, _IOLBF, 0);	/* a journal sees each line */
	/* jitters of its own: agents started together drift apart */
	srand((unsigned int)getpid() ^ (unsigned int)time(NULL));
	catch_signals();
	rls_spec_init(&o.common, "command line", NULL);
	ret = parse_opts(argc, argv, &o);
	if (ret >= 0)
		return ret;
	if (!o.host[0] && gethostname(o.host, sizeof(o.host) - 1))
		snprintf(o.host, sizeof(o.host), "%d", (int)getpid());
	ret = get_specs(&o, argc, argv, &specs, &n);
	if (ret) {
		free(specs);
		return ret;
	}
	links = calloc(n, sizeof(*links));
	ret = links ? 0 : -ENOMEM;
	for (i = 0; !ret && i < n; i++) {
		links[i].spec = specs[i];
		links[i].fd = -1;
	}
	if (!ret)
		ret = check_redis(&o, links, n);
	/* --check: the device too, which a start opens after Redis. */
	if (!ret && o.check)
		ret = rls_k_device();
	if (!ret && !o.check)
		ret = start_links(&o, links, n);
	if (!ret && !o.check) {
		sd_notifyf(0, "READY=1\nSTATUS=%u link%s", n, n == 1 ? "" : "s");
		run(&o, &links, &n);
		sd_notify(0, "STOPPING=1");
	}
	for (i = 0; links && i < n; i++)
		rls_redis_free(links[i].redis);
	free(links);
	free(specs);
	if (ret == -ENOMEM)
		fprintf(stderr, PROG ": out of memory\n");
	return ret ? 1 : 0;
}
