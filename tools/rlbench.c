// SPDX-License-Identifier: GPL-2.0-only
/*
 * rlbench - measure /dev/ratelimit against its physical floor and against
 * what users would run instead, each figure next to its baseline measured
 * in the same run. Run as root in the QEMU guest of `make bench`.
 *
 * Sections (all by default, in this order):
 *   floor       uncontended ACQUIRE(1) vs a no-op ioctl vs getppid()
 *   contention  1, 2, 4 threads and processes on one named limiter
 *   accuracy    achieved/target at 10/s, 1000/s and the highest rates;
 *               burst 1 at 200, 1000, 2000/s with 1 and 1000 clients queued
 *   wake        blocked acquire wake latency vs a timerfd wake
 *   idle        timer expirations caused by 1000 idle named limiters
 *   fairness    Jain's index of 2, 8, 32 clients vs a pthread bucket
 *   peers       shm pthread bucket, POSIX semaphore, Redis + Lua
 *   batch       rl_batch_*() vs plain acquires at several rates
 *
 * Prints a table; with -o DIR also writes DIR/results.csv,
 * DIR/results.json and gnuplot data files DIR/NAME.dat.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ratelimit.h"
#include "sysfile.h"
#include "tool.h"

TOOL_NAME("rlbench");

#define NSEC_PER_MSEC	1000000ULL
#define HUGE_RATE	1000000000ULL	/* tokens/s: never the limit */
#define MAX_WORKERS	64
#define ROUND		100		/* samples per kind per round */

/* An ioctl number the driver does not know: -ENOTTY, the no-op floor. */
#define RL_IOC_NOOP	_IO(RL_IOC_MAGIC, 63)

static double opt_scale = 1.0;
static char clocksource[64];
static const char *opt_dir;
static int opt_redis_port = 6379;

/* ---- results ---------------------------------------------------------- */

enum verdict { V_INFO, V_MET, V_MISSED, V_SKIP };
static const char *const verdict_name[] = { "info", "met", "MISSED", "skip" };

struct row {
	char sec[16];
	char name[72];
	double val;
	char unit[12];
	char base[56];
	double bval;
	double ratio;
	char goal[24];
	enum verdict v;
};

static struct row rows[256];
static int nrows;

static void row(const char *sec, const char *name, double val,
		const char *unit, const char *base, double bval,
		const char *goal, enum verdict v)
{
	struct row *r;

	if (nrows == (int)(ARRAY_SIZE(rows)))
		return;
	r = &rows[nrows++];
	snprintf(r->sec, sizeof(r->sec), "%s", sec);
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->val = val;
	snprintf(r->unit, sizeof(r->unit), "%s", unit);
	snprintf(r->base, sizeof(r->base), "%s", base ? base : "");
	r->bval = base ? bval : NAN;
	r->ratio = base && bval != 0 ? val / bval : NAN;
	snprintf(r->goal, sizeof(r->goal), "%s", goal ? goal : "");
	r->v = v;
	if (isnan(val) && !base) {
		printf("  note: %s\n", name);
		return;
	}
	printf("  %-44s %12.4g %-5s", name, val, unit);
	if (base)
		printf(" | %-30s %12.4g  x%.3f", base, bval, r->ratio);
	if (goal)
		printf("  [%s: %s]", goal, verdict_name[v]);
	putchar('\n');
	fflush(stdout);
}

static enum verdict at_most(double x, double lim)
{
	return isnan(x) ? V_SKIP : x <= lim ? V_MET : V_MISSED;
}

static enum verdict at_least(double x, double lim)
{
	return isnan(x) ? V_SKIP : x >= lim ? V_MET : V_MISSED;
}

static void note(const char *sec, const char *fmt, ...)
{
	char buf[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	row(sec, buf, NAN, "", NULL, 0, NULL, V_INFO);
}

static void print_num(FILE *f, double x)
{
	if (isnan(x) || isinf(x))
		fputs("null", f);
	else
		fprintf(f, "%.6g", x);
}

static FILE *open_out(const char *file)
{
	char path[512];
	FILE *f;

	if (!opt_dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", opt_dir, file);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "rlbench: %s: %s\n", path, strerror(errno));
	return f;
}

static void write_results(void)
{
	struct utsname u;
	FILE *f;
	int i;

	uname(&u);
	f = open_out("results.csv");
	if (f) {
		fprintf(f, "section,name,value,unit,baseline,baseline_value,ratio,goal,verdict\n");
		for (i = 0; i < nrows; i++) {
			struct row *r = &rows[i];

			fprintf(f, "%s,\"%s\",", r->sec, r->name);
			if (!isnan(r->val))
				fprintf(f, "%.6g", r->val);
			fprintf(f, ",%s,\"%s\",", r->unit, r->base);
			if (!isnan(r->bval))
				fprintf(f, "%.6g", r->bval);
			fputc(',', f);
			if (!isnan(r->ratio))
				fprintf(f, "%.6g", r->ratio);
			fprintf(f, ",\"%s\",%s\n", r->goal, verdict_name[r->v]);
		}
		fclose(f);
	}
	f = open_out("results.json");
	if (!f)
		return;
	fprintf(f, "{\n  \"kernel\": \"%s\",\n  \"machine\": \"%s\",\n",
		u.release, u.machine);
	fprintf(f, "  \"clocksource\": \"%s\",\n", clocksource);
	fprintf(f, "  \"cpus\": %ld,\n  \"scale\": %g,\n  \"results\": [\n",
		sysconf(_SC_NPROCESSORS_ONLN), opt_scale);
	for (i = 0; i < nrows; i++) {
		struct row *r = &rows[i];

		fprintf(f, "    {\"section\": \"%s\", \"name\": \"%s\", \"value\": ",
			r->sec, r->name);
		print_num(f, r->val);
		fprintf(f, ", \"unit\": \"%s\", \"baseline\": \"%s\", \"baseline_value\": ",
			r->unit, r->base);
		print_num(f, r->bval);
		fputs(", \"ratio\": ", f);
		print_num(f, r->ratio);
		fprintf(f, ", \"goal\": \"%s\", \"verdict\": \"%s\"}%s\n",
			r->goal, verdict_name[r->v], i + 1 < nrows ? "," : "");
	}
	fputs("  ]\n}\n", f);
	fclose(f);
}

static void print_summary(void)
{
	int i, met = 0, missed = 0;

	printf("\n== summary: goals ==\n");
	for (i = 0; i < nrows; i++) {
		struct row *r = &rows[i];

		if (r->v != V_MET && r->v != V_MISSED)
			continue;
		printf("  %-7s %-10s %-44s %s\n", verdict_name[r->v], r->sec,
		       r->name, r->goal);
		met += r->v == V_MET;
		missed += r->v == V_MISSED;
	}
	printf("  goals met: %d, missed: %d\n", met, missed);
}

/* ---- helpers ---------------------------------------------------------- */

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = ns / NSEC_PER_SEC, .tv_nsec = ns % NSEC_PER_SEC,
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static uint64_t scaled(double x, uint64_t min)
{
	double v = x * opt_scale;

	return v < (double)min ? min : (uint64_t)v;
}

static void die(const char *what, int err)
{
	exit(tool_fail(1, "%s: %s", what, strerror(err < 0 ? -err : err)));
}

/* @p-th percentile of sorted @s. */
static double pct(const uint64_t *s, size_t n, double p)
{
	size_t i;

	if (!n)
		return NAN;
	i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return (double)s[i < n ? i : n - 1];
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		die("calloc", ENOMEM);
	return p;
}

/* Memory shared with forked children. */
static void *shared_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap", errno);
	return p;
}

static int open_private(uint64_t rate, uint64_t burst, uint32_t flags)
{
	struct rl_config cfg = {
		.rate = rate, .period_ns = NSEC_PER_SEC, .burst = burst,
		.flags = flags,
	};
	int fd, ret;

	fd = rl_open(0);
	if (fd < 0)
		die("rl_open", fd);
	ret = rl_set_config(fd, &cfg);
	if (ret)
		die("rl_set_config", ret);
	return fd;
}

static uint64_t get_burst(int fd)
{
	struct rl_config cfg;

	if (rl_get_config(fd, &cfg))
		return 1;
	return cfg.burst;
}

/*
 * Empty the bucket, in halving chunks, one try each: at high rates new
 * tokens come faster than a loop of tries could take them one by one.
 * Returns the tokens taken.
 */
static uint64_t drain(int fd)
{
	uint64_t burst = get_burst(fd), got = 0, c;

	for (c = burst; c; c /= 2)
		if (!rl_try_acquire(fd, c, NULL))
			got += c;
	return got;
}

static void create_named(const char *name, const struct rl_config *cfg)
{
	int fd;

	rl_unlink(-1, name);
	fd = rl_open_named(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL |
			   RL_ATTACH_PERSIST, 0600, cfg);
	if (fd < 0)
		die(name, fd);
	rl_close(fd);
}

static int attach(const char *name)
{
	int fd = rl_open_named(name, 0, 0, NULL);

	if (fd < 0)
		die(name, fd);
	return fd;
}

/*
 * CPU time of this process, ns (user + system, which the kernel scales to
 * the scheduler's exact runtime), plus that of redis-server when it runs:
 * the peer's work is done in both. Interrupt work (the timer that wakes a
 * sleeper) is charged to whoever it interrupts, for every peer alike.
 */
static uint64_t cpu_ns(void)
{
	unsigned long long ut, st;
	char path[64], buf[512], *p;
	struct rusage ru;
	uint64_t total, tck = NSEC_PER_SEC / (uint64_t)sysconf(_SC_CLK_TCK);
	FILE *f;
	int pid;

	getrusage(RUSAGE_SELF, &ru);
	total = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) *
		NSEC_PER_SEC + ((uint64_t)ru.ru_utime.tv_usec +
				(uint64_t)ru.ru_stime.tv_usec) * 1000;
	for (pid = 2; pid < 1024; pid++) {
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		f = fopen(path, "r");
		if (!f)
			continue;
		p = fgets(buf, sizeof(buf), f) ? strstr(buf, "(redis-server) ") : NULL;
		/* Fields after the name: state ... utime (12th), stime. */
		if (p && sscanf(p + 15, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
				&ut, &st) == 2)
			total += (uint64_t)(ut + st) * tck;
		fclose(f);
	}
	return total;
}

static double jain(const uint64_t *x, int n)
{
	double s = 0, s2 = 0;
	int i;

	for (i = 0; i < n; i++) {
		s += (double)x[i];
		s2 += (double)x[i] * (double)x[i];
	}
	return s2 > 0 ? s * s / (n * s2) : NAN;
}

/* ---- peer 1: token bucket in a shared memory file --------------------- */

/*
 * What a user would write instead of the kernel service: a bucket in a
 * mapped file, a process-shared mutex, and a condvar to sleep on until
 * the tokens are due (each waiter times its own wait).
 */
struct shmb {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t rate;		/* tokens per second */
	uint64_t burst;
	uint64_t tokens;
	uint64_t units;		/* fraction of a token, in 1/NSEC_PER_SEC */
	uint64_t stamp;
};

static struct shmb *shmb_create(const char *path, uint64_t rate,
				uint64_t burst)
{
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	struct shmb *b;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(*b)))
		die(path, errno);
	b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (b == MAP_FAILED)
		die("mmap shm bucket", errno);
	close(fd);
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&b->lock, &ma);
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cond, &ca);
	b->rate = rate;
	b->burst = burst;
	b->tokens = burst;
	b->stamp = rl_now_ns();
	return b;
}

static void shmb_destroy(struct shmb *b, const char *path)
{
	munmap(b, sizeof(*b));
	unlink(path);
}

static void shmb_refill(struct shmb *b, uint64_t now)
{
	unsigned __int128 add;

	if (now <= b->stamp)
		return;
	add = (unsigned __int128)(now - b->stamp) * b->rate + b->units;
	b->stamp = now;
	b->units = (uint64_t)(add % NSEC_PER_SEC);
	add /= NSEC_PER_SEC;
	if (add >= b->burst - b->tokens) {
		b->tokens = b->burst;
		b->units = 0;
	} else {
		b->tokens += (uint64_t)add;
	}
}

static void shmb_acquire(struct shmb *b, uint64_t n)
{
	uint64_t now, missing, when;
	struct timespec ts;

	pthread_mutex_lock(&b->lock);
	for (;;) {
		now = rl_now_ns();
		shmb_refill(b, now);
		if (b->tokens >= n) {
			b->tokens -= n;
			break;
		}
		missing = (n - b->tokens) * NSEC_PER_SEC - b->units;
		when = now + (missing + b->rate - 1) / b->rate;
		ts.tv_sec = when / NSEC_PER_SEC;
		ts.tv_nsec = when % NSEC_PER_SEC;
		pthread_cond_timedwait(&b->cond, &b->lock, &ts);
	}
	pthread_mutex_unlock(&b->lock);
}

/* Empty it, as drain() does a kernel bucket. */
static uint64_t shmb_drain(struct shmb *b)
{
	uint64_t got;

	pthread_mutex_lock(&b->lock);
	shmb_refill(b, rl_now_ns());
	got = b->tokens;
	b->tokens = 0;
	pthread_mutex_unlock(&b->lock);
	return got;
}

/* ---- peer 3: Redis with a token-bucket Lua script ---------------------- */

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

struct redis {
	int fd;
	char sha[48];
	char buf[4096];
	size_t len;
};

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

static int redis_connect(struct redis *r)
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
static long long redis_take(struct redis *r, const char *key, uint64_t rate,
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
static long long redis_acquire(struct redis *r, const char *key,
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

static int redis_ping(struct redis *r)
{
	const char *const argv[] = { "PING" };
	int ret = redis_send(r, 1, argv);

	return ret ? ret : redis_reply(r, NULL, NULL, 0);
}

static void redis_del(struct redis *r, const char *key)
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
static void pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static bool redis_available(void)
{
	struct redis r;

	if (redis_connect(&r))
		return false;
	close(r.fd);
	return true;
}

/* ---- 1. floor ----------------------------------------------------------- */

enum kind {
	K_CLOCK, K_GETPPID, K_NOOP, K_FEATURES, K_ACQ_UNL, K_ACQ_RATE,
	K_SHM, K_SEM, K_CONC, K_REDIS, K_PING, K_GETCFG, K_STATS, NKINDS
};

static const char *const kind_name[NKINDS] = {
	"clock_gettime pair (timer only)", "getppid()", "no-op ioctl (ENOTTY)",
	"RL_IOC_GET_FEATURES", "ACQUIRE(1) unlimited", "ACQUIRE(1) rate 1e9/s",
	"shm pthread bucket acquire(1)", "sem_wait+sem_post",
	"ACQUIRE(1)+RELEASE(1) concurrency", "Redis EVALSHA token bucket",
	"Redis PING (round trip only)", "RL_IOC_GET_CONFIG",
	"RL_IOC_GET_STATS",
};

static const char *const kind_file[NKINDS] = {
	"clock", "getppid", "noop_ioctl", "get_features", "acquire_unlimited",
	"acquire_rate", "shm_bucket", "posix_sem", "rl_concurrency", "redis",
	"redis_ping", "get_config", "get_stats",
};

struct ctx {
	int fdu, fdr, fdc;
	struct shmb *shm;
	sem_t *sem;
	struct redis redis;
};

static int do_op(enum kind k, struct ctx *c)
{
	struct rl_features f;
	struct rl_config cfg;
	struct rl_stats st;

	switch (k) {
	case K_CLOCK:
		return 0;
	case K_GETPPID:
		return (int)syscall(SYS_getppid) < 0;
	case K_NOOP:
		return ioctl(c->fdu, RL_IOC_NOOP) != -1 || errno != ENOTTY;
	case K_FEATURES:
		return ioctl(c->fdu, RL_IOC_GET_FEATURES, &f);
	case K_ACQ_UNL:
		return rl_acquire(c->fdu, 1);
	case K_ACQ_RATE:
		return rl_acquire(c->fdr, 1);
	case K_SHM:
		shmb_acquire(c->shm, 1);
		return 0;
	case K_SEM:
		return sem_wait(c->sem) || sem_post(c->sem);
	case K_CONC:
		return rl_acquire(c->fdc, 1) || rl_release(c->fdc, 1);
	case K_REDIS:
		return redis_take(&c->redis, "rlbench:cost", HUGE_RATE,
				  HUGE_RATE, 1) != 0;
	case K_PING:
		return redis_ping(&c->redis);
	case K_GETCFG:
		return rl_get_config(c->fdr, &cfg);
	case K_STATS:
		return rl_get_stats(c->fdr, &st);
	default:
		return 1;
	}
}

/*
 * Time every call of the kinds in @use, ROUND calls of each kind in turn
 * so that drift hits all alike; @n[k] samples of kind k (a multiple of
 * ROUND). Fills @s[k], sorted.
 */
static void sample_kinds(struct ctx *c, const size_t *n, uint64_t **s)
{
	size_t done[NKINDS] = { 0 }, i;
	uint64_t t0, t1;
	bool more = true;
	int k;

	for (k = 0; k < NKINDS; k++)	/* warm up */
		for (i = 0; n[k] && k != K_REDIS && k != K_PING && i < 1000;
		     i++)
			do_op(k, c);
	while (more) {
		more = false;
		for (k = 0; k < NKINDS; k++) {
			if (done[k] >= n[k])
				continue;
			for (i = 0; i < ROUND; i++) {
				t0 = rl_now_ns();
				if (do_op(k, c))
					die(kind_name[k], errno);
				t1 = rl_now_ns();
				s[k][done[k]++] = t1 - t0;
			}
			more |= done[k] < n[k];
		}
	}
	for (k = 0; k < NKINDS; k++)
		qsort(s[k], n[k], sizeof(uint64_t), tool_cmp_u64);
}

static void write_cdf(const char *file, const enum kind *ks, int nk,
		      const size_t *n, uint64_t **s)
{
	static const double ps[] = { 1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90,
				     95, 97, 98, 99, 99.5, 99.9 };
	FILE *f = open_out(file);
	size_t i;
	int j;

	if (!f)
		return;
	/* A header line gnuplot's columnhead() reads: ns per call. */
	fprintf(f, "percentile");
	for (j = 0; j < nk; j++)
		fprintf(f, " %s", kind_file[ks[j]]);
	fputc('\n', f);
	for (i = 0; i < ARRAY_SIZE(ps); i++) {
		fprintf(f, "%g", ps[i]);
		for (j = 0; j < nk; j++)
			fprintf(f, " %.0f", pct(s[ks[j]], n[ks[j]], ps[i]));
		fputc('\n', f);
	}
	fclose(f);
}

static void bench_floor(void)
{
	static const enum kind ks[] = { K_CLOCK, K_GETPPID, K_NOOP, K_FEATURES,
					K_GETCFG, K_STATS, K_ACQ_UNL,
					K_ACQ_RATE };
	size_t n[NKINDS] = { 0 }, per = scaled(200000, ROUND * 10);
	uint64_t *s[NKINDS] = { 0 };
	struct ctx c = { 0 };
	double p50[NKINDS], p99[NKINDS];
	unsigned int i;
	char name[80];

	per -= per % ROUND;
	c.fdu = open_private(0, 1, RL_CONFIG_UNLIMITED);
	c.fdr = open_private(HUGE_RATE, HUGE_RATE, 0);
	for (i = 0; i < ARRAY_SIZE(ks); i++) {
		n[ks[i]] = per;
		s[ks[i]] = xcalloc(per, sizeof(uint64_t));
	}
	printf("floor: %zu timed calls of each kind, interleaved in rounds of %d\n",
	       per, ROUND);
	sample_kinds(&c, n, s);
	for (i = 0; i < ARRAY_SIZE(ks); i++) {
		p50[ks[i]] = pct(s[ks[i]], per, 50);
		p99[ks[i]] = pct(s[ks[i]], per, 99);
		snprintf(name, sizeof(name), "%s p50", kind_name[ks[i]]);
		row("floor", name, p50[ks[i]], "ns", NULL, 0, NULL, V_INFO);
		snprintf(name, sizeof(name), "%s p99", kind_name[ks[i]]);
		row("floor", name, p99[ks[i]], "ns", NULL, 0, NULL, V_INFO);
	}
	for (i = K_ACQ_UNL; i <= K_ACQ_RATE; i++) {
		snprintf(name, sizeof(name), "%s p50", kind_name[i]);
		row("floor", name, p50[i], "ns", "no-op ioctl p50", p50[K_NOOP],
		    "<= 1.3x", at_most(p50[i] / p50[K_NOOP], 1.3));
		snprintf(name, sizeof(name), "%s p99", kind_name[i]);
		row("floor", name, p99[i], "ns", "no-op ioctl p99", p99[K_NOOP],
		    "<= 2x", at_most(p99[i] / p99[K_NOOP], 2.0));
		snprintf(name, sizeof(name), "%s p50", kind_name[i]);
		row("floor", name, p50[i], "ns", "GET_FEATURES p50",
		    p50[K_FEATURES], NULL, V_INFO);
		row("floor", name, p50[i], "ns", "getppid() p50",
		    p50[K_GETPPID], NULL, V_INFO);
		/* Without the clock reads that every sample includes. */
		snprintf(name, sizeof(name), "%s p50 - timer", kind_name[i]);
		row("floor", name, p50[i] - p50[K_CLOCK], "ns",
		    "no-op ioctl p50 - timer", p50[K_NOOP] - p50[K_CLOCK],
		    NULL, V_INFO);
	}
	write_cdf("floor.dat", ks, ARRAY_SIZE(ks), n, s);
	for (i = 0; i < NKINDS; i++)
		free(s[i]);
	rl_close(c.fdu);
	rl_close(c.fdr);
}

/* ---- 2. contention ---------------------------------------------------- */

struct race {
	atomic_int ready;
	atomic_int go;
	atomic_int stop;
	uint64_t count[MAX_WORKERS];
};

static struct race *race;
static const char *race_name;
static enum kind race_kind;

static void race_worker(int idx)
{
	struct ctx c = { 0 };
	uint64_t n = 0;

	c.fdr = attach(race_name);
	c.fdu = c.fdr;
	atomic_fetch_add(&race->ready, 1);
	while (!atomic_load(&race->go))
		sched_yield();
	while (!atomic_load_explicit(&race->stop, memory_order_relaxed)) {
		if (do_op(race_kind, &c))
			die("contention op", errno);
		n++;
	}
	race->count[idx] = n;
	rl_close(c.fdr);
}

static void *race_thread(void *arg)
{
	race_worker((int)(intptr_t)arg);
	return NULL;
}

/* Aggregate calls per second of @n threads or processes. */
static double race_run(int n, bool procs, enum kind k, uint64_t dur)
{
	pthread_t th[MAX_WORKERS];
	pid_t pid[MAX_WORKERS];
	uint64_t t0, t1, sum = 0;
	int i;

	memset(race, 0, sizeof(*race));
	race_kind = k;
	for (i = 0; i < n; i++) {
		if (!procs) {
			pthread_create(&th[i], NULL, race_thread,
				       (void *)(intptr_t)i);
			continue;
		}
		pid[i] = fork();
		if (pid[i] < 0)
			die("fork", errno);
		if (!pid[i]) {
			race_worker(i);
			_exit(0);
		}
	}
	while (atomic_load(&race->ready) < n)
		sleep_ns(NSEC_PER_MSEC);
	t0 = rl_now_ns();
	atomic_store(&race->go, 1);
	sleep_ns(dur);
	atomic_store(&race->stop, 1);
	t1 = rl_now_ns();
	for (i = 0; i < n; i++) {
		if (procs)
			waitpid(pid[i], NULL, 0);
		else
			pthread_join(th[i], NULL);
	}
	for (i = 0; i < n; i++)
		sum += race->count[i];
	return (double)sum * NSEC_PER_SEC / (double)(t1 - t0);
}

#define CONT_REPS	5

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void bench_contention(void)
{
	struct rl_config cfg = {
		.rate = HUGE_RATE, .period_ns = NSEC_PER_SEC, .burst = HUGE_RATE,
	};
	static const int ns[] = { 1, 2, 4 };
	uint64_t dur = scaled(0.3 * NSEC_PER_SEC, NSEC_PER_SEC / 10);
	double tp[2][2][3];	/* [procs][kind][n] */
	double rep[2][2][3][CONT_REPS];
	char name[80], base[64];
	FILE *f;
	int p, k, i, r;

	race = shared_alloc(sizeof(*race));
	race_name = "rlbench-contention";
	create_named(race_name, &cfg);
	printf("contention: named limiter at %llu/s, burst %llu, one fd per caller\n",
	       HUGE_RATE, HUGE_RATE);
	printf("  every point %d times %.1f s, all points in turn, median\n",
	       CONT_REPS, dur / 1e9);
	for (r = 0; r < CONT_REPS; r++)
		for (p = 0; p < 2; p++)
			for (i = 0; i < 3; i++)
				for (k = 0; k < 2; k++)
					rep[p][k][i][r] = race_run(ns[i], p, k ?
						K_NOOP : K_ACQ_RATE, dur);
	for (p = 0; p < 2; p++)
		for (i = 0; i < 3; i++)
			for (k = 0; k < 2; k++)
				tp[p][k][i] = median(rep[p][k][i], CONT_REPS);
	for (p = 0; p < 2; p++) {
		for (i = 0; i < 3; i++) {
			const char *what = p ? "processes" : "threads";

			snprintf(name, sizeof(name), "ACQUIRE(1), %d %s, calls/s",
				 ns[i], what);
			snprintf(base, sizeof(base), "1 of %s", what);
			row("contention", name, tp[p][0][i], "/s", base,
			    tp[p][0][0], i ? ">= 0.8x" : NULL,
			    i ? at_least(tp[p][0][i] / tp[p][0][0], 0.8) : V_INFO);
			snprintf(name, sizeof(name), "no-op ioctl, %d %s, calls/s",
				 ns[i], what);
			row("contention", name, tp[p][1][i], "/s", base,
			    tp[p][1][0], NULL, V_INFO);
		}
	}
	f = open_out("contention.dat");
	if (f) {
		fprintf(f, "# callers, calls/s: acquire_threads noop_threads\n");
		fprintf(f, "#   acquire_procs noop_procs\n");
		for (i = 0; i < 3; i++)
			fprintf(f, "%d %.0f %.0f %.0f %.0f\n", ns[i], tp[0][0][i],
				tp[0][1][i], tp[1][0][i], tp[1][1][i]);
		fclose(f);
	}
	rl_unlink(-1, race_name);
	munmap(race, sizeof(*race));
}

/* ---- 3. accuracy ------------------------------------------------------- */

/*
 * The achieved rate is measured from the first grant after a warm-up (a
 * tenth of the run, at most ACC_WARMUP_NS) to the last grant: tokens granted after that first one
 * over that time, so that neither what the drain left in the bucket nor
 * the phase of the first token counts.
 */
#define ACC_WARMUP_NS	(2 * NSEC_PER_SEC)

struct acc {
	uint64_t tokens;	/* granted after the first grant */
	uint64_t elapsed;	/* ns, first to last grant */
	double excess;		/* max of granted - (burst + rate x t) */
	uint64_t calls;		/* round trips (Redis), syscalls (batch) */
	uint64_t cpu;		/* guest busy ns during the window */
};

/*
 * Take @count at a time from @fd (rate @rate/s) for @dur after emptying
 * the bucket. The bound is checked at every grant against the time
 * before the limiter was configured (@t_cfg), which only loosens it.
 */
static void acc_rl(int fd, uint64_t rate, uint64_t count, uint64_t dur,
		   uint64_t t_cfg, struct acc *a)
{
	uint64_t burst = get_burst(fd), total, t0, t, cpu0, first = 0;
	uint64_t warm = dur / 10 < ACC_WARMUP_NS ? dur / 10 : ACC_WARMUP_NS;
	struct rl_acquire req;
	double bound;
	int ret;

	total = drain(fd);
	memset(a, 0, sizeof(*a));
	a->excess = -INFINITY;
	cpu0 = cpu_ns();
	t0 = rl_now_ns();
	t = t0;
	while (t - t0 < dur) {
		memset(&req, 0, sizeof(req));
		req.count = count;
		req.deadline_ns = RL_DEADLINE_NONE;
		ret = rl_acquire_ex(fd, &req);
		if (ret)
			die("acquire", ret);
		t = rl_now_ns();
		total += count;
		a->calls++;
		/*
		 * Start at a grant that slept: the bucket was empty then, even
		 * if the host stalled the caller during the warm-up.
		 */
		if (first)
			a->tokens += count;
		else if (t - t0 >= warm && req.wait_ns)
			first = t;
		bound = (double)burst + (double)rate * (double)(t - t_cfg) / 1e9;
		if ((double)total - bound > a->excess)
			a->excess = (double)total - bound;
	}
	a->elapsed = t - first;
	a->cpu = cpu_ns() - cpu0;
}

static double acc_rate(const struct acc *a)
{
	return a->elapsed ? (double)a->tokens * NSEC_PER_SEC / (double)a->elapsed : NAN;
}

static void acc_rows(const char *sec, const char *what, uint64_t rate,
		     const struct acc *a, bool goal)
{
	double r = acc_rate(a);
	char name[80];

	snprintf(name, sizeof(name), "%s at %llu/s (%llu tokens)", what,
		 (unsigned long long)rate, (unsigned long long)a->tokens);
	row(sec, name, r, "/s", "target", (double)rate,
	    goal ? "within 1%" : NULL,
	    goal ? (fabs(r / rate - 1) <= 0.01 ? V_MET : V_MISSED) : V_INFO);
	snprintf(name, sizeof(name), "%s at %llu/s: max over burst+rate*t", what,
		 (unsigned long long)rate);
	row(sec, name, a->excess, "tok", NULL, 0, goal ? "<= 0" : NULL,
	    goal ? at_most(a->excess, 0) : V_INFO);
}

/*
 * Burst 1 with clients always queued (ratelimit(4), "Bounds"): @n threads,
 * each with its own fd on one named limiter, acquire(1) in a loop; the
 * rate is the limiter's granted counter over @dur after a warm-up, each
 * count taken at the middle of the call that read it.
 */
struct bl_ctx {
	const char *name;
	int stop;
};

static void *bl_thread(void *arg)
{
	struct bl_ctx *c = arg;
	int fd = attach(c->name);

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
		if (rl_acquire_timeout(fd, 1, 5 * NSEC_PER_SEC, NULL))
			break;
	rl_close(fd);
	return NULL;
}

static uint64_t bl_granted(int fd, uint64_t *t)
{
	struct rl_stats st;
	uint64_t t0 = rl_now_ns();

	if (rl_get_stats(fd, &st))
		die("rl_get_stats", -EIO);
	*t = (t0 + rl_now_ns()) / 2;
	return st.granted;
}

static double acc_backlog(uint64_t rate, int n, uint64_t dur)
{
	struct rl_config cfg = { .rate = rate, .period_ns = NSEC_PER_SEC,
				 .burst = 1 };
	struct bl_ctx c = { "bench-bl", 0 };
	uint64_t g0, g1, t0, t1;
	pthread_attr_t attr;
	pthread_t *th = xcalloc(n, sizeof(*th));
	int fd, i;

	create_named(c.name, &cfg);
	fd = attach(c.name);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], &attr, bl_thread, &c))
			die("pthread_create", -EAGAIN);
	sleep_ns(NSEC_PER_SEC / 2);
	g0 = bl_granted(fd, &t0);
	sleep_ns(dur);
	g1 = bl_granted(fd, &t1);
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
	cfg.flags = RL_CONFIG_UNLIMITED;
	rl_set_config(fd, &cfg);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	pthread_attr_destroy(&attr);
	rl_close(fd);
	rl_unlink(-1, c.name);
	free(th);
	return (double)(g1 - g0) * NSEC_PER_SEC / (double)(t1 - t0);
}

static void bench_backlog(void)
{
	static const uint64_t rates[] = { 200, 1000, 2000 };
	static const int clients[] = { 1, 1000 };
	unsigned int i, j;
	char name[80];
	double r;

	printf("accuracy: burst 1, clients always queued, for %.0f s each\n",
	       scaled(2 * NSEC_PER_SEC, 2 * NSEC_PER_SEC) / 1e9);
	for (i = 0; i < ARRAY_SIZE(clients); i++)
		for (j = 0; j < ARRAY_SIZE(rates); j++) {
			r = acc_backlog(rates[j], clients[i],
					scaled(2 * NSEC_PER_SEC, 2 * NSEC_PER_SEC));
			snprintf(name, sizeof(name),
				 "burst 1, %d client%s: ACQUIRE(1) at %llu/s",
				 clients[i], clients[i] > 1 ? "s" : "",
				 (unsigned long long)rates[j]);
			row("accuracy", name, r, "/s", "target",
			    (double)rates[j], ">= 99.5%",
			    at_least(r / rates[j], 0.995));
		}
}

/* Long enough for 10^4 tokens at 10/s after the warm-up. */
#define ACC_10_NS	((10000 / 10 + 5) * NSEC_PER_SEC + ACC_WARMUP_NS)

static void bench_accuracy(void)
{
	static const uint64_t sweep[] = { 10000, 30000, 100000, 300000,
					  1000000, 3000000 };
	uint64_t t_cfg, best = 0;
	struct acc a, best_a = { 0 };
	unsigned int i;
	FILE *f;
	int fd;

	f = open_out("accuracy.dat");
	if (f)
		fprintf(f, "# target_per_s achieved_per_s ratio tokens\n");
	printf("accuracy: one caller, acquire(1) in a loop after emptying the bucket; "
	       "default burst (100 ms of tokens)\n");

	/* 10/s: 10^4 tokens take 1000 s (at scale 1), the longest part of the run. */
	printf("accuracy: 10/s for %.0f s\n",
	       scaled(ACC_10_NS, 2 * NSEC_PER_SEC) / 1e9);
	t_cfg = rl_now_ns();
	fd = open_private(10, 0, 0);
	acc_rl(fd, 10, 1, scaled(ACC_10_NS, 2 * NSEC_PER_SEC), t_cfg, &a);
	rl_close(fd);
	acc_rows("accuracy", "ACQUIRE(1)", 10, &a, true);
	if (f)
		fprintf(f, "10 %.4f %.6f %llu\n", acc_rate(&a), acc_rate(&a) / 10,
			(unsigned long long)a.tokens);

	t_cfg = rl_now_ns();
	fd = open_private(1000, 0, 0);
	acc_rl(fd, 1000, 1, scaled(12 * NSEC_PER_SEC, 2 * NSEC_PER_SEC), t_cfg, &a);
	rl_close(fd);
	acc_rows("accuracy", "ACQUIRE(1)", 1000, &a, true);
	if (f)
		fprintf(f, "1000 %.4f %.6f %llu\n", acc_rate(&a), acc_rate(&a) / 1000,
			(unsigned long long)a.tokens);

	/* The highest rate one caller keeps up with: the last within 1%. */
	for (i = 0; i < ARRAY_SIZE(sweep); i++) {
		t_cfg = rl_now_ns();
		fd = open_private(sweep[i], 0, 0);
		acc_rl(fd, sweep[i], 1, scaled(2 * NSEC_PER_SEC, NSEC_PER_SEC / 2),
		       t_cfg, &a);
		rl_close(fd);
		acc_rows("accuracy", "sweep ACQUIRE(1)", sweep[i], &a, false);
		if (f)
			fprintf(f, "%llu %.4f %.6f %llu\n",
				(unsigned long long)sweep[i], acc_rate(&a),
				acc_rate(&a) / sweep[i], (unsigned long long)a.tokens);
		if (fabs(acc_rate(&a) / sweep[i] - 1) > 0.01 || a.excess > 0)
			break;
		best = sweep[i];
		best_a = a;
	}
	if (f)
		fclose(f);
	if (best)
		acc_rows("accuracy", "highest sustained: ACQUIRE(1)", best,
			 &best_a, true);
	else
		note("accuracy", "no sweep rate was sustained within 1%%");
	bench_backlog();
}

/* ---- 4. wake latency --------------------------------------------------- */

static void bench_wake(void)
{
	size_t n = scaled(400, 40), i;
	uint64_t *s[NKINDS] = { 0 }, ready, t, gap = 10 * NSEC_PER_MSEC;
	struct itimerspec its = { 0 };
	enum kind ks[2] = { K_ACQ_RATE, K_CLOCK };	/* rl, timerfd */
	double r50, r99, t50, t99;
	uint64_t exp;
	int fd, tfd, ret;

	fd = open_private(100, 1, 0);	/* a token every 10 ms */
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (tfd < 0)
		die("timerfd_create", errno);
	s[ks[0]] = xcalloc(n, sizeof(uint64_t));
	s[ks[1]] = xcalloc(n, sizeof(uint64_t));
	printf("wake: %zu blocked ACQUIRE(1) at 100/s, burst 1\n", n);
	printf("  latency = return - predicted ready_ns; interleaved with %zu\n", n);
	printf("  timerfd waits of 10 ms: latency = read() return - expiry\n");
	for (i = 0; i < n; i++) {
		/* Empty the bucket; the last try tells when the next token is due. */
		while (!(ret = rl_try_acquire(fd, 1, &ready)))
			;
		if (ret != -EAGAIN)
			die("try_acquire", ret);
		ret = rl_acquire(fd, 1);
		t = rl_now_ns();
		if (ret)
			die("acquire", ret);
		s[ks[0]][i] = t > ready ? t - ready : 0;

		t = rl_now_ns() + gap;
		its.it_value.tv_sec = t / NSEC_PER_SEC;
		its.it_value.tv_nsec = t % NSEC_PER_SEC;
		if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) ||
		    read(tfd, &exp, sizeof(exp)) != sizeof(exp))
			die("timerfd", errno);
		s[ks[1]][i] = rl_now_ns() - t;
	}
	close(tfd);
	rl_close(fd);
	for (i = 0; i < 2; i++)
		qsort(s[ks[i]], n, sizeof(uint64_t), tool_cmp_u64);
	r50 = pct(s[ks[0]], n, 50);
	r99 = pct(s[ks[0]], n, 99);
	t50 = pct(s[ks[1]], n, 50);
	t99 = pct(s[ks[1]], n, 99);
	row("wake", "blocked ACQUIRE wake latency p50", r50, "ns",
	    "timerfd wake p50", t50, "<= 1.2x", at_most(r50 / t50, 1.2));
	row("wake", "blocked ACQUIRE wake latency p99", r99, "ns",
	    "timerfd wake p99", t99, "<= 2x", at_most(r99 / t99, 2.0));
	row("wake", "blocked ACQUIRE wake latency max", (double)s[ks[0]][n - 1],
	    "ns", "timerfd wake max", (double)s[ks[1]][n - 1], NULL, V_INFO);
	{
		FILE *f = open_out("wake.dat");
		static const double ps[] = { 1, 5, 10, 25, 50, 75, 90, 95, 99, 100 };

		if (f) {
			fprintf(f, "# percentile acquire_ns timerfd_ns\n");
			for (i = 0; i < ARRAY_SIZE(ps); i++)
				fprintf(f, "%g %.0f %.0f\n", ps[i],
					pct(s[ks[0]], n, ps[i]),
					pct(s[ks[1]], n, ps[i]));
			fclose(f);
		}
	}
	free(s[ks[0]]);
	free(s[ks[1]]);
}

/* ---- 5. idle cost ------------------------------------------------------ */

struct fair {
	int fd;			/* ratelimit client, or -1 */
	struct shmb *shm;	/* else the pthread bucket */
	uint64_t end;		/* absolute deadline */
	uint64_t got;
	atomic_int *ready;
	atomic_int *go;
};

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -EIO;
}

static const char *tracing_dir(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing",
					    "/sys/kernel/debug/tracing" };
	char path[128];
	unsigned int i;

	mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL);
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path),
			 "%s/events/timer/hrtimer_expire_entry/enable", dirs[i]);
		if (!access(path, W_OK))
			return dirs[i];
	}
	return NULL;
}

/* Sum of the local timer interrupts of all CPUs (/proc/interrupts LOC). */
static uint64_t loc_irqs(void)
{
	char line[1024], *p, *end;
	uint64_t sum = 0;
	FILE *f = fopen("/proc/interrupts", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		p = line + strspn(line, " ");
		if (strncmp(p, "LOC:", 4))
			continue;
		p += 4;
		for (;;) {
			unsigned long long v = strtoull(p, &end, 10);

			if (end == p)
				break;
			sum += v;
			p = end;
		}
	}
	fclose(f);
	return sum;
}

struct timer_count {
	uint64_t all;		/* hrtimer expirations */
	uint64_t rl;		/* of them, rl_timer_fn */
	uint64_t lost;		/* events the buffer dropped */
	uint64_t loc;		/* local timer interrupts */
};

/* Without tracefs: the local timer interrupts only. */
static void count_loc(uint64_t dur, struct timer_count *tc)
{
	uint64_t loc0 = loc_irqs();

	memset(tc, 0, sizeof(*tc));
	sleep_ns(dur);
	tc->loc = loc_irqs() - loc0;
}

/* Count hrtimer expirations over @dur with the timer tracepoint. */
static void count_timers(const char *tr, uint64_t dur, struct timer_count *tc)
{
	char path[160], line[512];
	unsigned long long in, written;
	uint64_t loc0;
	FILE *f;

	memset(tc, 0, sizeof(*tc));
	snprintf(path, sizeof(path), "%s/tracing_on", tr);
	write_file(path, "0");
	snprintf(path, sizeof(path), "%s/buffer_size_kb", tr);
	write_file(path, "4096");
	snprintf(path, sizeof(path), "%s/trace", tr);
	write_file(path, "");
	snprintf(path, sizeof(path), "%s/events/timer/hrtimer_expire_entry/enable", tr);
	write_file(path, "1");
	snprintf(path, sizeof(path), "%s/tracing_on", tr);
	loc0 = loc_irqs();
	write_file(path, "1");
	sleep_ns(dur);
	write_file(path, "0");
	tc->loc = loc_irqs() - loc0;
	snprintf(path, sizeof(path), "%s/events/timer/hrtimer_expire_entry/enable", tr);
	write_file(path, "0");
	snprintf(path, sizeof(path), "%s/trace", tr);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "# entries-in-buffer/entries-written: %llu/%llu",
			   &in, &written) == 2)
			tc->lost = written - in;
		if (line[0] == '#' || !strstr(line, "hrtimer_expire_entry"))
			continue;
		tc->all++;
		tc->rl += !!strstr(line, "rl_timer_fn");
	}
	fclose(f);
}

/* A waiter taking a token at a time from @arg, a struct fair. */
static void *control_waiter(void *arg)
{
	struct fair *f = arg;

	while (!atomic_load(&race->stop)) {
		if (f->fd < 0)
			shmb_acquire(f->shm, 1);
		else if (rl_acquire(f->fd, 1))
			break;
	}
	return NULL;
}

/* Timer counts over @dur while one waiter takes 100 tokens/s. */
static void control_run(const char *tr, bool rl, uint64_t dur,
			struct timer_count *tc)
{
	const char *path = "/tmp/rlbench-ctl.shm";
	struct fair f = { .fd = -1 };
	pthread_t th;

	if (rl)
		f.fd = open_private(100, 1, 0);
	else
		f.shm = shmb_create(path, 100, 1);
	atomic_store(&race->stop, 0);
	pthread_create(&th, NULL, control_waiter, &f);
	if (tr)
		count_timers(tr, dur, tc);
	else
		count_loc(dur, tc);
	atomic_store(&race->stop, 1);
	pthread_join(th, NULL);
	if (rl)
		rl_close(f.fd);
	else
		shmb_destroy(f.shm, path);
}

static void bench_idle(void)
{
	const char *par = "/sys/module/ratelimit/parameters/max_named_per_user";
	struct rl_config cfg = { .rate = 100, .period_ns = NSEC_PER_SEC };
	uint64_t dur = scaled(5 * NSEC_PER_SEC, NSEC_PER_SEC);
	struct timer_count base, idle, ctl, shm;
	const int nlim = 1000;
	char old[32] = "", name[RL_NAME_MAX];
	const char *tr = tracing_dir();
	int i, fd, made = 0;
	double secs = dur / 1e9;

	printf("idle: timer:hrtimer_expire_entry events (rl_timer_fn) and\n");
	printf("  /proc/interrupts LOC over %.1f s: nothing; %d idle named\n",
	       secs, nlim);
	printf("  limiters (each used once); one sleeper at 100/s as a positive\n");
	printf("  control; one sleeper on the shm bucket\n");
	if (!tr)
		note("idle", "no tracefs with timer events: LOC interrupts only");
	race = shared_alloc(sizeof(*race));
	sysfile_read(par, old, sizeof(old));
	write_file(par, "4096");

	if (tr)
		count_timers(tr, dur, &base);
	else
		count_loc(dur, &base);

	for (i = 0; i < nlim; i++) {
		snprintf(name, sizeof(name), "rlbench-idle-%04d", i);
		rl_unlink(-1, name);
		fd = rl_open_named(name, RL_ATTACH_CREATE | RL_ATTACH_PERSIST,
				   0600, &cfg);
		if (fd < 0) {
			fprintf(stderr, "rlbench: %s: %s\n", name, strerror(-fd));
			break;
		}
		rl_acquire(fd, 1);
		rl_close(fd);
		made++;
	}
	sleep_ns(NSEC_PER_SEC / 2);	/* let any timer they armed fire */
	if (tr)
		count_timers(tr, dur, &idle);
	else
		count_loc(dur, &idle);
	for (i = 0; i < made; i++) {
		snprintf(name, sizeof(name), "rlbench-idle-%04d", i);
		rl_unlink(-1, name);
	}
	if (old[0])
		write_file(par, old);

	control_run(tr, true, dur, &ctl);
	control_run(tr, false, dur, &shm);

	snprintf(name, sizeof(name), "named limiters created (of %d)", nlim);
	row("idle", name, made, "", NULL, 0, NULL, V_INFO);
	if (tr) {
		row("idle", "rl_timer_fn expirations, 1000 idle limiters",
		    (double)idle.rl, "", "same, no limiter", (double)base.rl,
		    "== 0", idle.rl == 0 && made == nlim ? V_MET : V_MISSED);
		row("idle", "all hrtimer expirations/s, 1000 idle limiters",
		    idle.all / secs, "/s", "same, no limiter", base.all / secs,
		    NULL, V_INFO);
		row("idle", "rl_timer_fn expirations/s, 1 waiter at 100/s",
		    ctl.rl / secs, "/s", "tokens/s", 100, NULL, V_INFO);
		row("idle", "all hrtimer expirations/s, 1 waiter at 100/s",
		    ctl.all / secs, "/s", "same, shm bucket waiter",
		    shm.all / secs, NULL, V_INFO);
		if (base.lost + idle.lost + ctl.lost)
			note("idle", "trace buffer dropped %llu events",
			     (unsigned long long)(base.lost + idle.lost + ctl.lost));
	}
	row("idle", "LOC timer interrupts/s, 1000 idle limiters",
	    idle.loc / secs, "/s", "same, no limiter", base.loc / secs, NULL,
	    V_INFO);
	row("idle", "LOC timer interrupts/s, 1 waiter at 100/s",
	    ctl.loc / secs, "/s", "same, shm bucket waiter", shm.loc / secs,
	    NULL, V_INFO);
	munmap(race, sizeof(*race));
}

/* ---- 6. fairness ------------------------------------------------------- */

static void *fair_thread(void *arg)
{
	struct fair *f = arg;
	struct rl_acquire req;

	atomic_fetch_add(f->ready, 1);
	while (!atomic_load(f->go))
		sched_yield();
	for (;;) {
		if (f->fd >= 0) {
			memset(&req, 0, sizeof(req));
			req.count = 1;
			req.deadline_ns = f->end;
			if (rl_acquire_ex(f->fd, &req))
				break;
		} else {
			shmb_acquire(f->shm, 1);
			if (rl_now_ns() >= f->end)
				break;
		}
		f->got++;
	}
	return NULL;
}

/* Jain's index of @n clients taking one token at a time for @dur. */
static double fair_run(int n, bool rl, uint64_t rate, uint64_t dur,
		       uint64_t *share)
{
	struct rl_config cfg = { .rate = rate, .period_ns = NSEC_PER_SEC,
				 .burst = 1 };
	const char *path = "/tmp/rlbench-fair.shm";
	struct fair f[MAX_WORKERS];
	pthread_t th[MAX_WORKERS];
	pthread_attr_t attr;
	atomic_int ready = 0, go = 0;
	struct shmb *shm = NULL;
	uint64_t got[MAX_WORKERS];
	int i;

	if (rl)
		create_named("rlbench-fair", &cfg);
	else
		shm = shmb_create(path, rate, 1);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (i = 0; i < n; i++) {
		f[i] = (struct fair) { .fd = rl ? attach("rlbench-fair") : -1,
				       .shm = shm, .ready = &ready, .go = &go };
		pthread_create(&th[i], &attr, fair_thread, &f[i]);
	}
	while (atomic_load(&ready) < n)
		sleep_ns(NSEC_PER_MSEC);
	for (i = 0; i < n; i++)
		f[i].end = rl_now_ns() + dur;
	atomic_store(&go, 1);
	for (i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		got[i] = f[i].got;
		if (share)
			share[i] = got[i];
		if (rl)
			rl_close(f[i].fd);
	}
	if (rl)
		rl_unlink(-1, "rlbench-fair");
	else
		shmb_destroy(shm, path);
	return jain(got, n);
}

static void bench_fairness(void)
{
	static const int ns[] = { 2, 8, 32 };
	uint64_t dur = scaled(3 * NSEC_PER_SEC, NSEC_PER_SEC), rate = 1000;
	uint64_t share[MAX_WORKERS];
	double jr, js;
	char name[80];
	FILE *f = open_out("fairness.dat");
	unsigned int i;

	printf("fairness: N threads, one fd each, acquire(1) in a loop on one\n");
	printf("  named limiter at %llu/s, burst 1, for %.1f s; baseline: the\n",
	       (unsigned long long)rate, dur / 1e9);
	printf("  same threads on the shm pthread bucket\n");
	if (f)
		fprintf(f, "# clients jain_ratelimit jain_shm_bucket\n");
	for (i = 0; i < ARRAY_SIZE(ns); i++) {
		jr = fair_run(ns[i], true, rate, dur, share);
		js = fair_run(ns[i], false, rate, dur, NULL);
		snprintf(name, sizeof(name), "Jain's index, %d clients", ns[i]);
		row("fairness", name, jr, "", "shm pthread bucket", js,
		    ">= 0.99", at_least(jr, 0.99));
		if (f)
			fprintf(f, "%d %.5f %.5f\n", ns[i], jr, js);
	}
	if (f)
		fclose(f);
}

/* ---- 7. peers ---------------------------------------------------------- */

struct sem_race {
	atomic_int inuse;
	atomic_int max;
	atomic_int stop;
	atomic_ullong pairs;
};

struct sem_arg {
	struct sem_race *r;
	sem_t *sem;
	int fd;
};

static void *sem_thread(void *arg)
{
	struct sem_arg *a = arg;
	uint64_t n = 0;
	int cur, m;

	while (!atomic_load_explicit(&a->r->stop, memory_order_relaxed)) {
		if (a->sem ? sem_wait(a->sem) : rl_acquire(a->fd, 1))
			break;
		cur = atomic_fetch_add(&a->r->inuse, 1) + 1;
		m = atomic_load(&a->r->max);
		while (cur > m && !atomic_compare_exchange_weak(&a->r->max, &m, cur))
			;
		atomic_fetch_sub(&a->r->inuse, 1);
		if (a->sem ? sem_post(a->sem) : rl_release(a->fd, 1))
			break;
		n++;
	}
	atomic_fetch_add(&a->r->pairs, n);
	return NULL;
}

/* 8 threads, 4 permits: pairs/s and the most ever held at once. */
static double sem_race_run(bool rl, sem_t *sem, uint64_t dur, int *max)
{
	struct rl_config cfg = { .period_ns = NSEC_PER_SEC,
				 .flags = RL_CONFIG_UNLIMITED, .concurrency = 4 };
	struct sem_race r = { 0 };
	struct sem_arg a[8];
	pthread_t th[8];
	uint64_t t0, t1;
	int i;

	if (rl)
		create_named("rlbench-sem", &cfg);
	t0 = rl_now_ns();
	for (i = 0; i < 8; i++) {
		a[i] = (struct sem_arg) { .r = &r, .sem = rl ? NULL : sem,
					  .fd = rl ? attach("rlbench-sem") : -1 };
		pthread_create(&th[i], NULL, sem_thread, &a[i]);
	}
	sleep_ns(dur);
	atomic_store(&r.stop, 1);
	for (i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		if (rl)
			rl_close(a[i].fd);
	}
	t1 = rl_now_ns();
	if (rl)
		rl_unlink(-1, "rlbench-sem");
	*max = atomic_load(&r.max);
	return (double)atomic_load(&r.pairs) * NSEC_PER_SEC / (double)(t1 - t0);
}

/* A pacing run of one peer in a child process; results in @out. */
static void peer_acc_child(int which, uint64_t rate, uint64_t burst,
			   uint64_t dur, struct acc *out)
{
	const char *path = "/tmp/rlbench-acc.shm";
	uint64_t t_cfg = rl_now_ns(), total, t0, t, cpu0, first = 0;
	struct shmb *shm = NULL;
	struct redis r;
	struct acc a = { .excess = -INFINITY };
	double bound;
	long long trips;
	int fd = -1;

	if (which == 0) {
		fd = open_private(rate, burst, 0);
		total = drain(fd);
	} else if (which == 1) {
		shm = shmb_create(path, rate, burst);
		total = shmb_drain(shm);
	} else {
		pin_cpu0();
		if (redis_connect(&r))
			_exit(1);
		redis_del(&r, "rlbench:acc");
		t_cfg = rl_now_ns();
		/* The first call creates a full bucket: take all of it. */
		if (redis_take(&r, "rlbench:acc", rate, burst, burst))
			_exit(1);
		total = burst;
	}
	cpu0 = cpu_ns();
	t0 = rl_now_ns();
	t = t0;
	while (t - t0 < dur) {
		if (which == 0) {
			if (rl_acquire(fd, 1))
				_exit(1);
			a.calls++;
		} else if (which == 1) {
			shmb_acquire(shm, 1);
			a.calls++;
		} else {
			trips = redis_acquire(&r, "rlbench:acc", rate, burst, 1);
			if (trips < 0)
				_exit(1);
			a.calls += (uint64_t)trips;
		}
		t = rl_now_ns();
		total++;
		if (first)
			a.tokens++;
		else if (t - t0 >= dur / 10)
			first = t;
		bound = (double)burst + (double)rate * (double)(t - t_cfg) / 1e9;
		if ((double)total - bound > a.excess)
			a.excess = (double)total - bound;
	}
	a.elapsed = t - first;
	a.cpu = cpu_ns() - cpu0;
	if (which == 2) {
		/* The server's CPU time is in the guest's busy time. */
		redis_del(&r, "rlbench:acc");
		close(r.fd);
	}
	if (shm)
		shmb_destroy(shm, path);
	if (fd >= 0)
		rl_close(fd);
	*out = a;
	_exit(0);
}

static bool peer_acc(int which, uint64_t rate, uint64_t burst, uint64_t dur,
		     struct acc *a)
{
	struct acc *sh = shared_alloc(sizeof(*sh));
	int status = 1;
	pid_t pid;

	memset(sh, 0, sizeof(*sh));
	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (!pid)
		peer_acc_child(which, rate, burst, dur, sh);
	waitpid(pid, &status, 0);
	*a = *sh;
	munmap(sh, sizeof(*sh));
	return WIFEXITED(status) && !WEXITSTATUS(status);
}

static void bench_peers(void)
{
	const char *path = "/tmp/rlbench-cost.shm";
	size_t n[NKINDS] = { 0 }, per = scaled(50000, ROUND * 5);
	uint64_t *s[NKINDS] = { 0 }, dur, rate = 1000, burst = 100;
	static const enum kind ks[] = { K_ACQ_RATE, K_SHM, K_SEM, K_CONC,
					K_REDIS, K_PING };
	static const char *const peer[] = { "ratelimit", "shm pthread bucket",
					    "Redis + Lua" };
	struct rl_config cfg = { .period_ns = NSEC_PER_SEC,
				 .flags = RL_CONFIG_UNLIMITED, .concurrency = 4 };
	bool redis = redis_available();
	struct acc acc[3];
	struct ctx c = { 0 };
	char name[96], base[64];
	cpu_set_t cpus;
	unsigned int i;
	int max_rl, max_sem;

	double tp_rl, tp_sem;
	FILE *f;

	per -= per % ROUND;
	mkdir("/dev/shm", 01777);	/* sem_open() needs it */
	c.fdr = open_private(HUGE_RATE, HUGE_RATE, 0);
	c.fdc = open_private(0, 1, 0);
	if (rl_set_config(c.fdc, &cfg))
		die("concurrency config", EINVAL);
	c.shm = shmb_create(path, HUGE_RATE, HUGE_RATE);
	sem_unlink("/rlbench-sem");
	c.sem = sem_open("/rlbench-sem", O_CREAT, 0600, 4);
	if (c.sem == SEM_FAILED) {
		note("peers", "sem_open: %s: semaphore skipped", strerror(errno));
		c.sem = NULL;
	}
	if (redis && redis_connect(&c.redis))
		redis = false;
	if (!redis)
		note("peers", "no redis-server on 127.0.0.1:%d: Redis skipped",
		     opt_redis_port);
	for (i = 0; i < ARRAY_SIZE(ks); i++) {
		if ((ks[i] == K_SEM && !c.sem) ||
		    ((ks[i] == K_REDIS || ks[i] == K_PING) && !redis))
			continue;
		n[ks[i]] = ks[i] == K_REDIS || ks[i] == K_PING ?
			   per / 10 - per / 10 % ROUND : per;
		s[ks[i]] = xcalloc(n[ks[i]], sizeof(uint64_t));
	}
	printf("peers: per-acquire cost, uncontended, tokens available\n");
	printf("  %zu timed calls each, %zu for Redis, all on CPU 0\n", per,
	       n[K_REDIS]);
	sched_getaffinity(0, sizeof(cpus), &cpus);
	pin_cpu0();
	sample_kinds(&c, n, s);
	sched_setaffinity(0, sizeof(cpus), &cpus);
	for (i = 1; i < ARRAY_SIZE(ks); i++) {
		enum kind k = ks[i];
		enum kind b = k == K_SEM ? K_CONC : k == K_PING ? K_REDIS :
			      K_ACQ_RATE;
		const char *bn = k == K_SEM ? "rl ACQUIRE+RELEASE" :
				 k == K_PING ? "Redis EVALSHA" : "rl ACQUIRE(1)";

		if (!n[k])
			continue;
		snprintf(name, sizeof(name), "%s p50", kind_name[k]);
		snprintf(base, sizeof(base), "%s p50", bn);
		row("peers", name, pct(s[k], n[k], 50), "ns", base,
		    pct(s[b], n[b], 50), NULL, V_INFO);
		snprintf(name, sizeof(name), "%s p99", kind_name[k]);
		snprintf(base, sizeof(base), "%s p99", bn);
		row("peers", name, pct(s[k], n[k], 99), "ns", base,
		    pct(s[b], n[b], 99), NULL, V_INFO);
	}
	{
		enum kind have[6];
		int nh = 0;

		for (i = 0; i < ARRAY_SIZE(ks); i++)
			if (n[ks[i]])
				have[nh++] = ks[i];
		write_cdf("peers_cost.dat", have, nh, n, s);
	}
	for (i = 0; i < NKINDS; i++)
		free(s[i]);
	if (redis)
		close(c.redis.fd);
	shmb_destroy(c.shm, path);
	rl_close(c.fdr);
	rl_close(c.fdc);

	/* Concurrency limits under contention: 8 threads, 4 permits. */
	dur = scaled(2 * NSEC_PER_SEC, NSEC_PER_SEC / 2);
	tp_rl = sem_race_run(true, NULL, dur, &max_rl);
	row("peers", "rl concurrency 4, 8 threads: pairs/s", tp_rl, "/s",
	    NULL, 0, NULL, V_INFO);
	row("peers", "rl concurrency 4, 8 threads: most held", max_rl, "",
	    "limit", 4, "<= limit", at_most(max_rl, 4));
	if (c.sem) {
		tp_sem = sem_race_run(false, c.sem, dur, &max_sem);
		row("peers", "POSIX semaphore 4, 8 threads: pairs/s", tp_sem, "/s",
		    "rl concurrency pairs/s", tp_rl, NULL, V_INFO);
		row("peers", "POSIX semaphore 4, 8 threads: most held", max_sem,
		    "", "limit", 4, NULL, V_INFO);
		sem_close(c.sem);
		sem_unlink("/rlbench-sem");
	}

	/* Pacing at 1000/s, burst 100: accuracy and guest CPU per token. */
	dur = scaled(10 * NSEC_PER_SEC, 2 * NSEC_PER_SEC);
	printf("peers: pacing at %llu/s, burst %llu, %.1f s each, in turn\n",
	       (unsigned long long)rate, (unsigned long long)burst, dur / 1e9);
	printf("  CPU = user + system time of the pacer (and redis-server)\n");
	f = open_out("peers_acc.dat");
	if (f)
		fprintf(f, "# peer achieved/target cpu_us_per_token calls_per_token\n");
	for (i = 0; i < 3; i++) {
		if (i == 2 && !redis)
			continue;
		if (!peer_acc(i, rate, burst, dur, &acc[i])) {
			note("peers", "%s pacing run failed", peer[i]);
			continue;
		}
		snprintf(name, sizeof(name), "%s pacing", peer[i]);
		acc_rows("peers", name, rate, &acc[i], false);
		snprintf(name, sizeof(name), "%s: CPU per token", peer[i]);
		row("peers", name, acc[i].cpu / 1e3 / (double)acc[i].tokens, "us",
		    i ? "ratelimit" : NULL,
		    acc[0].cpu / 1e3 / (double)acc[0].tokens, NULL, V_INFO);
		snprintf(name, sizeof(name), "%s: calls per token", peer[i]);
		row("peers", name, (double)acc[i].calls / (double)acc[i].tokens,
		    "", NULL, 0, NULL, V_INFO);
		if (f)
			fprintf(f, "\"%s\" %.6f %.3f %.3f\n", peer[i],
				acc_rate(&acc[i]) / rate,
				acc[i].cpu / 1e3 / (double)acc[i].tokens,
				(double)acc[i].calls / (double)acc[i].tokens);
	}
	if (f)
		fclose(f);
}

/* ---- 8. batched reservations ------------------------------------------- */

struct batch_res {
	double tput;		/* acquires per second */
	double ratio;		/* achieved / target */
	double syscalls;	/* per acquire */
	uint64_t refunded;
	double excess;
};

static void batch_run(uint64_t rate, uint64_t batch, uint64_t dur,
		      struct batch_res *res)
{
	uint64_t t_cfg = rl_now_ns(), burst, total, t0, t, used = 0, sys = 0;
	struct rl_batch b;
	double bound, excess = -INFINITY;
	int fd, ret;

	fd = open_private(rate, 0, 0);
	burst = get_burst(fd);
	total = drain(fd);
	if (batch > 1 && rl_batch_open(&b, fd, batch))
		die("rl_batch_open", EINVAL);
	t0 = rl_now_ns();
	t = t0;
	while (t - t0 < dur) {
		ret = batch > 1 ? rl_batch_acquire(&b, 1) : rl_acquire(fd, 1);
		if (ret)
			die("acquire", ret);
		used++;
		/* Check the bound only now and then: it costs a clock read. */
		if (!(used & 63) || rate < 100000) {
			t = rl_now_ns();
			bound = (double)burst + (double)rate * (double)(t - t_cfg) / 1e9;
			if ((double)(total + used) - bound > excess)
				excess = (double)(total + used) - bound;
		}
	}
	t = rl_now_ns();
	sys = used;
	res->refunded = 0;
	if (batch > 1) {
		rl_batch_close(&b);
		sys = b.syscalls;
		res->refunded = b.refunded;
	}
	res->tput = (double)used * NSEC_PER_SEC / (double)(t - t0);
	res->ratio = res->tput / (double)rate;
	res->syscalls = (double)sys / (double)used;
	res->excess = excess;
	rl_close(fd);
}

/* Two clients of one limiter, one batched: the share each gets. */
static double batch_share(uint64_t batch, uint64_t dur, uint64_t *got)
{
	struct rl_config cfg = { .rate = 1000, .period_ns = NSEC_PER_SEC,
				 .burst = 100 };
	uint64_t end;
	struct rl_batch b;
	int fd[2], i;
	pid_t pid;
	uint64_t *sh = shared_alloc(2 * sizeof(uint64_t));

	create_named("rlbench-batch", &cfg);
	for (i = 0; i < 2; i++)
		fd[i] = attach("rlbench-batch");
	drain(fd[0]);
	end = rl_now_ns() + dur;
	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (!pid) {
		uint64_t n = 0;

		rl_batch_open(&b, fd[1], batch);
		while (rl_now_ns() < end && !rl_batch_acquire(&b, 1))
			n++;
		rl_batch_close(&b);
		sh[1] = n;
		_exit(0);
	}
	while (rl_now_ns() < end && !rl_acquire(fd[0], 1))
		sh[0]++;
	waitpid(pid, NULL, 0);
	got[0] = sh[0];
	got[1] = sh[1];
	for (i = 0; i < 2; i++)
		rl_close(fd[i]);
	rl_unlink(-1, "rlbench-batch");
	munmap(sh, 2 * sizeof(uint64_t));
	return jain(got, 2);
}

static void bench_batch(void)
{
	static const uint64_t rates[] = { 1000, 100000, 1000000, HUGE_RATE };
	static const uint64_t batches[] = { 1, 8, 64 };
	uint64_t dur = scaled(2 * NSEC_PER_SEC, NSEC_PER_SEC / 2), got[2];
	struct batch_res r[3];
	char name[96], base[64];
	unsigned int i, j;
	FILE *f = open_out("batch.dat");

	printf("batch: one caller, acquire(1) in a loop for %.1f s, default burst\n",
	       dur / 1e9);
	printf("  plain vs rl_batch_acquire() with batch 8 and 64\n");
	if (f) {
		fprintf(f, "# rate plain_tput b8_tput b64_tput\n");
		fprintf(f, "#   plain_sys b8_sys b64_sys plain_ratio b8_ratio b64_ratio\n");
	}
	for (i = 0; i < ARRAY_SIZE(rates); i++) {
		for (j = 0; j < 3; j++)
			batch_run(rates[i], batches[j], dur, &r[j]);
		for (j = 1; j < 3; j++) {
			const char *rs = rates[i] == HUGE_RATE ? "1e9" : NULL;
			char rbuf[24];

			snprintf(rbuf, sizeof(rbuf), "%llu", (unsigned long long)rates[i]);
			rs = rs ? rs : rbuf;
			snprintf(name, sizeof(name), "batch %llu at %s/s: syscalls/acquire",
				 (unsigned long long)batches[j], rs);
			row("batch", name, r[j].syscalls, "", "plain", r[0].syscalls,
			    NULL, V_INFO);
			snprintf(name, sizeof(name), "batch %llu at %s/s: acquires/s",
				 (unsigned long long)batches[j], rs);
			row("batch", name, r[j].tput, "/s", "plain", r[0].tput, NULL,
			    V_INFO);
			if (rates[i] != HUGE_RATE) {
				snprintf(name, sizeof(name),
					 "batch %llu at %s/s: achieved/target",
					 (unsigned long long)batches[j], rs);
				snprintf(base, sizeof(base), "plain");
				row("batch", name, r[j].ratio, "", base, r[0].ratio,
				    NULL, V_INFO);
				snprintf(name, sizeof(name),
					 "batch %llu at %s/s: max over bound",
					 (unsigned long long)batches[j], rs);
				row("batch", name, r[j].excess, "tok", "plain",
				    r[0].excess, "<= 0", at_most(r[j].excess, 0));
			}
			snprintf(name, sizeof(name), "batch %llu at %s/s: refunded at close",
				 (unsigned long long)batches[j], rs);
			row("batch", name, (double)r[j].refunded, "tok", NULL, 0, NULL,
			    V_INFO);
		}
		if (f)
			fprintf(f, "%llu %.0f %.0f %.0f %.4f %.4f %.4f %.5f %.5f %.5f\n",
				(unsigned long long)rates[i], r[0].tput, r[1].tput,
				r[2].tput, r[0].syscalls, r[1].syscalls,
				r[2].syscalls, r[0].ratio, r[1].ratio, r[2].ratio);
	}
	if (f)
		fclose(f);
	dur = scaled(3 * NSEC_PER_SEC, NSEC_PER_SEC);
	batch_share(64, dur, got);
	snprintf(name, sizeof(name), "shared 1000/s: batched(64) client's tokens");
	row("batch", name, (double)got[1], "tok", "plain client's tokens",
	    (double)got[0], NULL, V_INFO);
}

/* ---- main -------------------------------------------------------------- */

static const struct {
	const char *name;
	void (*fn)(void);
} sections[] = {
	{ "floor", bench_floor },
	{ "contention", bench_contention },
	{ "accuracy", bench_accuracy },
	{ "wake", bench_wake },
	{ "idle", bench_idle },
	{ "fairness", bench_fairness },
	{ "peers", bench_peers },
	{ "batch", bench_batch },
};

#define NSECTIONS	(ARRAY_SIZE(sections))

static void print_usage(FILE *f)
{
	unsigned int i;

	fprintf(f, "usage: rlbench [-o DIR] [-s SCALE] [-p REDIS_PORT] [SECTION...]\n"
		"  -o DIR    write results.csv, results.json and *.dat there\n"
		"  -s SCALE  multiply durations and sample counts (default 1)\n"
		"  -p PORT   redis-server port on 127.0.0.1 (default 6379)\n"
		"sections:");
	for (i = 0; i < NSECTIONS; i++)
		fprintf(f, " %s", sections[i].name);
	fputc('\n', f);
}

int main(int argc, char **argv)
{
	bool want[NSECTIONS] = { 0 }, any = false;
	unsigned int i;
	int opt, fd;

	while ((opt = getopt(argc, argv, "o:s:p:h")) != -1) {
		switch (opt) {
		case 'o':
			opt_dir = optarg;
			break;
		case 's':
			opt_scale = atof(optarg);
			break;
		case 'p':
			opt_redis_port = atoi(optarg);
			break;
		case 'h':
			print_usage(stdout);
			return 0;
		default:
			print_usage(stderr);
			return 2;
		}
	}
	for (; optind < argc; optind++) {
		for (i = 0; i < NSECTIONS; i++)
			if (!strcmp(argv[optind], sections[i].name))
				break;
		if (i == NSECTIONS || opt_scale <= 0) {
			print_usage(stderr);
			return 2;
		}
		want[i] = true;
		any = true;
	}
	fd = rl_open(0);
	if (fd < 0)
		die(RL_DEVICE_PATH, fd);
	rl_close(fd);
	if (opt_dir)
		mkdir(opt_dir, 0755);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Every clock read of the driver (and of the samples) goes there. */
	if (sysfile_read("/sys/devices/system/clocksource/clocksource0/current_clocksource",
			 clocksource, sizeof(clocksource)) < 0)
		snprintf(clocksource, sizeof(clocksource), "unknown");
	clocksource[strcspn(clocksource, "\n")] = '\0';
	printf("rlbench: clocksource %s, %ld CPUs, scale %g\n", clocksource,
	       sysconf(_SC_NPROCESSORS_ONLN), opt_scale);
	for (i = 0; i < NSECTIONS; i++) {
		if (any && !want[i])
			continue;
		printf("\n== %s ==\n", sections[i].name);
		sections[i].fn();
	}
	print_summary();
	write_results();
	return 0;
}
