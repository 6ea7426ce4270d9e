// SPDX-License-Identifier: GPL-2.0-only
/*
 * keyed.c - section keyed: limiters with a bucket per key
 * (RL_FEATURE_KEYED), through the raw ioctls.
 *
 *  - cost: RL_IOC_ACQUIRE_KEY of one token of a random key among N live
 *    keys (16 bytes, as an IPv6 address), against RL_IOC_ACQUIRE of a
 *    plain limiter in the same run, in turns, at 1,000, 100,000,
 *    1,000,000 and 10,000,000 live keys (as many as the guest's memory
 *    allows); the keys live (their buckets hold up to 9e6 tokens that come
 *    back one per 1,000 s), so none is dropped while it is timed; and, in
 *    the same rounds, the control: a read of one random cache line of a
 *    user-space region as large as the keys' memory, the least any design
 *    pays per request once its keys outgrow the caches;
 *  - memory: the growth of Slab + VmallocUsed (/proc/meminfo) per live
 *    key, and, for a family whose keys refill within seconds, the figure
 *    once they are full again and dropped by the sweep (against the idle
 *    figure before the family had keys);
 *  - 1, 2 and 4 processes, each on keys of its own, then all on one key;
 *  - peers, in the same run: a hash of per-key buckets in shared memory
 *    under one process-shared lock (what nginx's limit_req zone is) and
 *    Redis with a per-key GCRA Lua script (redis-cell's semantics): cost
 *    per acquire, memory per key, and the bound per key, the most tokens
 *    over burst + rate x t granted in any window to two processes
 *    hammering one key.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "bench.h"

#define KY_REPS		7
#define KY_KEYLEN	16
#define KY_SLOW_PERIOD	(1000 * NSEC_PER_SEC)	/* a token per 1,000 s ... */
#define KY_SLOW_BURST	9000000ULL		/* ... of 9e6: keys stay live */
#define KY_MAX_SIZES	4
#define KY_PROCS_KEYS	1000			/* keys of each process */
#define KY_BOUND_RATE	100			/* the bound's key: 100/s ... */
#define KY_BOUND_BURST	10			/* ... burst 10 */
#define KY_BOUND_MAX	100000			/* grants recorded */
#define KY_SHM_PATH	"/tmp/rlbench-keyed.shm"
#define KY_ZONE_TAU	(1ULL << 62)	/* a zone's burst when it is not the limit */

static const uint64_t ky_sizes[KY_MAX_SIZES] = { 1000, 100000, 1000000, 10000000 };

/* Key @i: 2001:db8::/64 with @i in the low bits. */
static void ky_key(uint8_t *k, uint64_t i)
{
	static const uint8_t pfx[8] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0 };

	memcpy(k, pfx, sizeof(pfx));
	memcpy(k + 8, &i, sizeof(i));
}

static uint64_t ky_rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A private keyed limiter: @rate per @period, @burst, up to @keys keys. */
static int ky_family(uint64_t rate, uint64_t period, uint64_t burst, uint64_t keys)
{
	struct rl_config c = {
		.rate = rate, .period_ns = period, .burst = burst,
		.flags = RL_CONFIG_KEYED, .keys = keys,
	};
	int fd = open("/dev/ratelimit", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		die("open /dev/ratelimit", errno);
	if (ioctl(fd, RL_IOC_SET_CONFIG, &c))
		die("SET_CONFIG keyed", errno);
	return fd;
}

static void ky_req(struct rl_key_acquire *ka, uint32_t flags)
{
	memset(ka, 0, sizeof(*ka));
	ka->acquire.count = 1;
	ka->acquire.deadline_ns = flags & RL_ACQUIRE_NONBLOCK ? 0 : RL_DEADLINE_NONE;
	ka->acquire.flags = flags;
	ka->key_len = KY_KEYLEN;
}

/* One token of key @i: 0, or -1 with errno. */
static int ky_take(int fd, struct rl_key_acquire *ka, uint64_t i)
{
	ky_key(ka->key, i);
	ka->acquire.count = 1;
	return ioctl(fd, RL_IOC_ACQUIRE_KEY, ka);
}

static uint64_t ky_live(int fd)
{
	struct rl_keys_stats st;

	memset(&st, 0, sizeof(st));
	return ioctl(fd, RL_IOC_GET_KEYS, &st) ? 0 : st.keys;
}

/* Kernel memory that keys take: slab objects and vmalloc'd tables. */
static uint64_t ky_kmem(void)
{
	return mem_field("Slab") + mem_field("VmallocUsed");
}

static int ky_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double ky_median(double *v, int n)
{
	qsort(v, n, sizeof(*v), ky_cmp);
	return v[n / 2];
}

/* ---- the peer: per-key buckets in a shared hash under one lock ---- */

/* One key's GCRA state, as an nginx limit_req node holds its own. */
struct ky_node {
	uint64_t tat;			/* ns */
	uint32_t next;			/* in the chain, 0: none (node 0 unused) */
	uint32_t len;
	uint8_t key[KY_KEYLEN];
};

struct ky_zone {
	pthread_mutex_t lock;
	uint64_t T, tau;		/* ns per token, burst x T */
	uint32_t nheads, nnodes, used;
	uint32_t heads[];		/* then the nodes */
};

static size_t ky_zone_size(uint32_t nheads, uint32_t nnodes)
{
	return sizeof(struct ky_zone) + nheads * sizeof(uint32_t) +
	       (size_t)(nnodes + 1) * sizeof(struct ky_node);
}

static struct ky_node *ky_zone_nodes(struct ky_zone *z)
{
	return (struct ky_node *)(z->heads + z->nheads);
}

static struct ky_zone *ky_zone_create(uint32_t nkeys, uint64_t T, uint64_t tau)
{
	uint32_t nheads = 1;
	pthread_mutexattr_t ma;
	struct ky_zone *z;
	size_t size;
	int fd;

	while (nheads < nkeys)
		nheads <<= 1;
	size = ky_zone_size(nheads, nkeys);
	fd = open(KY_SHM_PATH, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)size))
		die(KY_SHM_PATH, errno);
	z = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (z == MAP_FAILED)
		die("mmap keyed zone", errno);
	close(fd);
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&z->lock, &ma);
	z->T = T;
	z->tau = tau;
	z->nheads = nheads;
	z->nnodes = nkeys;
	return z;
}

static void ky_zone_destroy(struct ky_zone *z)
{
	munmap(z, ky_zone_size(z->nheads, z->nnodes));
	unlink(KY_SHM_PATH);
}

static uint32_t ky_hash(const uint8_t *k, uint32_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	uint32_t i;

	for (i = 0; i < len; i++)
		h = (h ^ k[i]) * 0x100000001b3ULL;
	return (uint32_t)(h ^ h >> 32);
}

/* Take @n tokens of @key: 0, 1 when refused, -1 when the zone is full. */
static int ky_zone_take(struct ky_zone *z, const uint8_t *key, uint32_t len, uint64_t n)
{
	struct ky_node *nodes = ky_zone_nodes(z), *k = NULL;
	uint32_t h = ky_hash(key, len), *pp, i;
	uint64_t now, tat;
	int ret = 0;

	pthread_mutex_lock(&z->lock);
	now = rl_now_ns();
	pp = &z->heads[h & (z->nheads - 1)];
	for (i = *pp; i; i = nodes[i].next)
		if (nodes[i].len == len && !memcmp(nodes[i].key, key, len)) {
			k = &nodes[i];
			break;
		}
	if (!k) {
		if (z->used == z->nnodes) {
			pthread_mutex_unlock(&z->lock);
			return -1;
		}
		i = ++z->used;
		k = &nodes[i];
		k->tat = 0;
		k->len = len;
		memcpy(k->key, key, len);
		k->next = *pp;
		*pp = i;
	}
	tat = k->tat > now ? k->tat : now;
	if (tat + n * z->T > now + z->tau)
		ret = 1;
	else
		k->tat = tat + n * z->T;
	pthread_mutex_unlock(&z->lock);
	return ret;
}

/* ---- the peer: Redis, a GCRA script per key (redis-cell's CL.THROTTLE) ---- */

/*
 * KEYS[1] = the key; ARGV = T (us per token), tau (burst x T, us), tokens
 * wanted. 0 when granted (the key's TAT stored, expiring when the bucket
 * is full again), else the us until they would be.
 */
static const char ky_lua[] =
	"local T = tonumber(ARGV[1])\n"
	"local tau = tonumber(ARGV[2])\n"
	"local n = tonumber(ARGV[3])\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local v = redis.call('GET', KEYS[1])\n"
	"local tat = now\n"
	"if v then tat = math.max(tonumber(v), now) end\n"
	"local new = tat + n * T\n"
	"if new - tau > now then return math.max(1, math.ceil(new - tau - now)) end\n"
	"redis.call('SET', KEYS[1], string.format('%.0f', new), 'PX',\n"
	"	    math.max(1, math.ceil((new - now) / 1000)))\n"
	"return 0";

static void ky_rkey(char *buf, size_t len, uint64_t i)
{
	uint8_t k[KY_KEYLEN];
	size_t j, o = 0;

	ky_key(k, i);
	o += snprintf(buf + o, len - o, "rlk:");
	for (j = 0; j < KY_KEYLEN && o + 3 < len; j++)
		o += snprintf(buf + o, len - o, "%02x", k[j]);
}

/* 0 granted, > 0 refused (us to wait), < 0 -errno. */
static long long ky_redis_take(struct redis *r, const char *sha, const char *key,
			       uint64_t T_us, uint64_t tau_us)
{
	char a1[24], a2[24];
	const char *const argv[] = { "EVALSHA", sha, "1", key, a1, a2, "1" };

	snprintf(a1, sizeof(a1), "%llu", (unsigned long long)T_us);
	snprintf(a2, sizeof(a2), "%llu", (unsigned long long)tau_us);
	return redis_call_int(r, 7, argv);
}

/* ---- cost and memory by live keys ---- */

struct ky_cost {
	int fam, plain;
	uint64_t keys;		/* live keys of @fam */
	double create_ns;	/* per new key, the last growth */
};

/* Grow @c->fam to @n live keys (1 token each); ns per new key. */
static double ky_grow(struct ky_cost *c, uint64_t n)
{
	struct rl_key_acquire ka;
	uint64_t t0 = rl_now_ns(), i;

	ky_req(&ka, RL_ACQUIRE_NONBLOCK);
	for (i = c->keys; i < n; i++)
		if (ky_take(c->fam, &ka, i))
			die("ACQUIRE_KEY (new key)", errno);
	t0 = rl_now_ns() - t0;
	if (n > c->keys)
		c->create_ns = (double)t0 / (double)(n - c->keys);
	c->keys = n;
	return c->create_ns;
}

/* Mean ns of @m acquires of random live keys. */
static double ky_time_keys(struct ky_cost *c, uint64_t m, uint64_t *seed)
{
	struct rl_key_acquire ka;
	uint64_t t0, i;

	ky_req(&ka, 0);
	t0 = rl_now_ns();
	for (i = 0; i < m; i++)
		if (ky_take(c->fam, &ka, ky_rnd(seed) % c->keys))
			die("ACQUIRE_KEY", errno);
	return (double)(rl_now_ns() - t0) / (double)m;
}

/* Mean ns of @m ACQUIREs of the plain limiter, the same request otherwise. */
static double ky_time_plain(struct ky_cost *c, uint64_t m, uint64_t *seed)
{
	struct rl_acquire a;
	uint64_t t0, i;

	memset(&a, 0, sizeof(a));
	a.deadline_ns = RL_DEADLINE_NONE;
	t0 = rl_now_ns();
	for (i = 0; i < m; i++) {
		/* The key path draws a key: so does this one, and drops it. */
		(void)ky_rnd(seed);
		a.count = 1;
		if (ioctl(c->plain, RL_IOC_ACQUIRE, &a))
			die("ACQUIRE", errno);
	}
	return (double)(rl_now_ns() - t0) / (double)m;
}

/*
 * The control: a region of @bytes (anonymous, huge pages where the kernel
 * gives them), as large as the family's keys took, for ky_time_line().
 */
static uint8_t *ky_region(size_t bytes)
{
	uint8_t *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		die("mmap control region", errno);
	(void)madvise(mem, bytes, MADV_HUGEPAGE);
	memset(mem, 0, bytes);
	return mem;
}

/*
 * Mean ns of @m reads of one random cache line of @mem (@bytes), each
 * read's address depending on the one before: what any design pays per
 * request for a key's state once its keys outgrow the caches (and, under
 * emulation, the emulated TLB). The same random draw as ky_time_keys().
 */
static double ky_time_line(const uint8_t *mem, size_t bytes, uint64_t m, uint64_t *seed)
{
	uint64_t lines = bytes / 64, t0, i;
	uint8_t last = 0;

	t0 = rl_now_ns();
	for (i = 0; i < m; i++)
		last = mem[((ky_rnd(seed) ^ last) % lines) * 64];
	t0 = rl_now_ns() - t0;
	if (last)	/* never: the region is zero; keeps the loads */
		die("control region", EINVAL);
	return (double)t0 / (double)m;
}

/* The most live keys the guest's memory holds, at about 150 bytes each. */
static uint64_t ky_fits(void)
{
	uint64_t avail = mem_field("MemAvailable");

	return avail > (256ULL << 20) ? (avail - (256ULL << 20)) / 150 : 0;
}

static void ky_cost_rows(void)
{
	uint64_t m = scaled(200000, 20000), seed = 88172645463325252ULL;
	uint64_t k0, k1, fits = ky_fits();
	double v[3][KY_REPS], med[KY_MAX_SIZES][3];
	size_t bytes;
	uint8_t *mem;
	char name[96], base[64];
	struct ky_cost c = { 0 };
	int s, r, last = -1;

	c.plain = open_private(HUGE_RATE, HUGE_RATE, 0);
	k0 = ky_kmem();
	c.fam = ky_family(1, KY_SLOW_PERIOD, KY_SLOW_BURST, 16ULL << 20);
	k1 = ky_kmem();
	row("keyed", "a family of up to 16M keys, none yet, KiB",
	    k1 > k0 ? (double)(k1 - k0) / 1024 : 0, "KiB", NULL, 0, NULL, V_INFO);
	k0 = k1;
	printf("keyed: %llu acquires per kind, %d rounds in turn, median ns per call;\n"
	       "  keys of 16 bytes, random among the live ones; room for about %llu keys\n",
	       (unsigned long long)m, KY_REPS, (unsigned long long)fits);
	for (s = 0; s < KY_MAX_SIZES; s++) {
		if (ky_sizes[s] > fits) {
			note("keyed", "%llu live keys skipped: %llu MiB available",
			     (unsigned long long)ky_sizes[s],
			     (unsigned long long)(mem_field("MemAvailable") >> 20));
			break;
		}
		ky_grow(&c, ky_sizes[s]);
		k1 = ky_kmem();
		if (ky_live(c.fam) != c.keys)
			note("keyed", "%llu keys asked, %llu live", (unsigned long long)c.keys,
			     (unsigned long long)ky_live(c.fam));
		bytes = k1 > k0 + 4096 ? k1 - k0 : 4096;
		mem = ky_region(bytes);
		ky_time_keys(&c, m / 10, &seed);
		ky_time_plain(&c, m / 10, &seed);
		ky_time_line(mem, bytes, m / 10, &seed);
		for (r = 0; r < KY_REPS; r++) {
			v[0][r] = ky_time_keys(&c, m, &seed);
			v[1][r] = ky_time_plain(&c, m, &seed);
			v[2][r] = ky_time_line(mem, bytes, m, &seed);
		}
		munmap(mem, bytes);
		for (r = 0; r < 3; r++)
			med[s][r] = ky_median(v[r], KY_REPS);
		last = s;
		snprintf(name, sizeof(name), "ACQUIRE_KEY(1), %llu live keys, ns",
			 (unsigned long long)c.keys);
		row("keyed", name, med[s][0], "ns", "ACQUIRE(1), a plain limiter", med[s][1],
		    "<= 1.5x", at_most(med[s][0] / med[s][1], 1.5));
		snprintf(name, sizeof(name), "control: a random line of %.1f MiB, ns",
			 (double)bytes / (1 << 20));
		row("keyed", name, med[s][2], "ns", NULL, 0, NULL, V_INFO);
		snprintf(name, sizeof(name), "new key, growing to %llu keys, ns",
			 (unsigned long long)c.keys);
		row("keyed", name, c.create_ns, "ns", NULL, 0, NULL, V_INFO);
		snprintf(name, sizeof(name), "kernel memory per key, %llu live keys",
			 (unsigned long long)c.keys);
		row("keyed", name, k1 > k0 ? (double)(k1 - k0) / (double)c.keys : 0, "B",
		    NULL, 0, c.keys >= 1000000 ? "<= 64 B" : NULL,
		    c.keys >= 1000000 ? at_most((double)(k1 - k0) / (double)c.keys, 64) :
		    V_INFO);
	}
	if (last > 0) {
		/*
		 * Flat: the ratio to the plain ACQUIRE of the same rounds, so
		 * that a host whose speed drifts between sizes (under TCG, by
		 * 1.5x within a run) moves both; the ns alone, and less the
		 * control, for reference.
		 */
		snprintf(base, sizeof(base), "the same at %llu live keys",
			 (unsigned long long)ky_sizes[0]);
		snprintf(name, sizeof(name), "ACQUIRE_KEY(1) / ACQUIRE(1), %llu live keys",
			 (unsigned long long)ky_sizes[last]);
		row("keyed", name, med[last][0] / med[last][1], "x", base,
		    med[0][0] / med[0][1], "<= 1.2x",
		    at_most(med[last][0] / med[last][1] / (med[0][0] / med[0][1]), 1.2));
		snprintf(name, sizeof(name), "ACQUIRE_KEY(1), %llu live keys, ns",
			 (unsigned long long)ky_sizes[last]);
		row("keyed", name, med[last][0], "ns", base, med[0][0], NULL, V_INFO);
		snprintf(name, sizeof(name),
			 "(ACQUIRE_KEY(1) less the control) / ACQUIRE(1), %llu live keys",
			 (unsigned long long)ky_sizes[last]);
		row("keyed", name, (med[last][0] - med[last][2]) / med[last][1], "x", base,
		    (med[0][0] - med[0][2]) / med[0][1], NULL, V_INFO);
	}
	close(c.fam);
	close(c.plain);
}

/*
 * Memory back to the idle figure: @n keys of a family whose buckets are
 * full again @period after their one grant; then the wait until the sweep
 * has dropped them all.
 */
static void ky_refill_rows(void)
{
	uint64_t n = opt_scale >= 0.2 ? 1000000 : 100000, period, t0, k0, k1, k2, end;
	struct ky_cost c = { 0 };
	int fd;

	if (n > ky_fits())
		n = ky_fits() / 2;
	/* How long n new keys take, from a family that keeps them. */
	c.fam = ky_family(1, KY_SLOW_PERIOD, KY_SLOW_BURST, 16ULL << 20);
	ky_grow(&c, n / 10 ? n / 10 : 1);
	close(c.fam);
	period = (uint64_t)(c.create_ns * (double)n * 3);
	if (period < 5 * NSEC_PER_SEC)
		period = 5 * NSEC_PER_SEC;
	sleep_ns(3 * NSEC_PER_SEC);
	/* The idle figure: the family made, no key yet. */
	fd = ky_family(1, period, 1, 16ULL << 20);
	k0 = ky_kmem();
	memset(&c, 0, sizeof(c));
	c.fam = fd;
	t0 = rl_now_ns();
	ky_grow(&c, n);
	k1 = ky_kmem();
	printf("keyed: %llu keys made in %.1f s, full again %.1f s after their grant\n",
	       (unsigned long long)n, (rl_now_ns() - t0) / 1e9, period / 1e9);
	row("keyed", "kernel memory per key, keys that refill",
	    ((double)k1 - (double)k0) / (double)n,
	    "B", NULL, 0, NULL, V_INFO);
	end = t0 + 2 * period + 30 * NSEC_PER_SEC;
	while (ky_live(fd) && rl_now_ns() < end)
		sleep_ns(NSEC_PER_SEC / 2);
	k2 = ky_kmem();
	printf("keyed: %llu keys left %.1f s after the first grant\n",
	       (unsigned long long)ky_live(fd), (rl_now_ns() - t0) / 1e9);
	row("keyed", "kernel memory after they refilled, KiB", ((double)k2 - (double)k0) / 1024,
	    "KiB", "while they lived, KiB", ((double)k1 - (double)k0) / 1024, "<= 0.01x",
	    at_most(((double)k2 - (double)k0) / ((double)k1 - (double)k0), 0.01));
	close(fd);
}

/* ---- processes ---- */

#define KY_NAME		"rlbench-keyed"

enum ky_mode { M_KEYS, M_ONE_KEY, M_ZONE, M_NOOP, M_NMODES };

static struct race *ky_race;
static enum ky_mode ky_race_mode;
static uint64_t ky_one_key;	/* M_ONE_KEY's key: another each run, never drained */
static struct ky_zone *ky_race_zone;

/* One process: its own fd of KY_NAME (as a worker of a server opens its own). */
static void ky_worker(int idx)
{
	uint64_t n = 0, seed = 0x9e3779b97f4a7c15ULL * (idx + 1);
	uint64_t base = (uint64_t)idx * KY_PROCS_KEYS;
	int fd = attach(KY_NAME);
	struct rl_key_acquire ka;
	uint8_t k[KY_KEYLEN];

	ky_req(&ka, 0);
	atomic_fetch_add(&ky_race->ready, 1);
	while (!atomic_load(&ky_race->go))
		sched_yield();
	while (!atomic_load_explicit(&ky_race->stop, memory_order_relaxed)) {
		uint64_t i = ky_race_mode == M_ONE_KEY ? ky_one_key :
			     base + ky_rnd(&seed) % KY_PROCS_KEYS;

		switch (ky_race_mode) {
		case M_ZONE:
			ky_key(k, i);
			if (ky_zone_take(ky_race_zone, k, KY_KEYLEN, 1))
				die("zone take", EAGAIN);
			break;
		case M_NOOP:
			if (ioctl(fd, RL_IOC_NOOP) != -1 || errno != ENOTTY)
				die("no-op ioctl", errno);
			break;
		default:
			if (ky_take(fd, &ka, i))
				die("ACQUIRE_KEY", errno);
		}
		n++;
	}
	ky_race->count[idx] = n;
	close(fd);
}

static void ky_procs_rows(void)
{
	static const int ns[] = { 1, 2, 4 };
	static const char *const what[M_NMODES] = {
		"ACQUIRE_KEY(1), different keys", "ACQUIRE_KEY(1), one key",
		"shm hash under one lock, different keys", "no-op ioctl (the machine)",
	};
	struct rl_config cfg = {
		.rate = 1, .period_ns = KY_SLOW_PERIOD, .burst = KY_SLOW_BURST,
		.flags = RL_CONFIG_KEYED, .keys = 16ULL << 20,
	};
	uint64_t dur = scaled(0.5 * NSEC_PER_SEC, NSEC_PER_SEC / 10);
	double rep[M_NMODES][3][KY_REPS], tp[M_NMODES][3];
	char name[96];
	int w, i, r;

	ky_race = shared_alloc(sizeof(*ky_race));
	create_named(KY_NAME, &cfg);
	printf("keyed: 1, 2 and 4 processes, each its own fd of a named keyed limiter,\n"
	       "  %d keys each or all on one, %d times %.1f s, median (%ld CPUs)\n",
	       KY_PROCS_KEYS, KY_REPS, dur / 1e9, sysconf(_SC_NPROCESSORS_ONLN));
	for (r = 0; r < KY_REPS; r++)
		for (w = 0; w < M_NMODES; w++)
			for (i = 0; i < 3; i++) {
				ky_race_mode = w;
				ky_one_key = 1000000 + (uint64_t)(r * 3 + i);
				ky_race_zone = w == M_ZONE ?
					       ky_zone_create(4 * KY_PROCS_KEYS, 1, KY_ZONE_TAU) :
					       NULL;
				rep[w][i][r] = race_start(ky_race, ns[i], true, ky_worker, dur);
				if (ky_race_zone)
					ky_zone_destroy(ky_race_zone);
				ky_race_zone = NULL;
			}
	for (w = 0; w < M_NMODES; w++)
		for (i = 0; i < 3; i++)
			tp[w][i] = ky_median(rep[w][i], KY_REPS);
	for (w = 0; w < M_NMODES; w++)
		for (i = 0; i < 3; i++) {
			bool goal = i && w <= M_ONE_KEY;

			snprintf(name, sizeof(name), "%s, %d proc%s, calls/s", what[w], ns[i],
				 i ? "s" : "");
			row("keyed", name, tp[w][i], "/s", "1 process", tp[w][0],
			    goal ? (w ? ">= 1x" : ">= 1.6x") : NULL,
			    goal ? at_least(tp[w][i] / tp[w][0], w ? 1.0 : 1.6) : V_INFO);
		}
	rl_unlink(-1, KY_NAME);
	munmap(ky_race, sizeof(*ky_race));
}

/* ---- the peers: cost, memory, bound ---- */

/* Mean ns of @m takes of random keys among @n, in the zone. */
static double ky_time_zone(struct ky_zone *z, uint64_t n, uint64_t m, uint64_t *seed)
{
	uint8_t k[KY_KEYLEN];
	uint64_t t0 = rl_now_ns(), i;

	for (i = 0; i < m; i++) {
		ky_key(k, ky_rnd(seed) % n);
		if (ky_zone_take(z, k, KY_KEYLEN, 1))
			die("zone take", EAGAIN);
	}
	return (double)(rl_now_ns() - t0) / (double)m;
}

/* Used memory of Redis (INFO memory), bytes, or 0. */
static uint64_t ky_redis_mem(struct redis *r)
{
	char info[4096];
	const char *const argv[] = { "INFO", "memory" };
	const char *p;

	if (redis_call_str(r, 2, argv, info, sizeof(info)))
		return 0;
	p = strstr(info, "used_memory:");
	return p ? strtoull(p + 12, NULL, 10) : 0;
}

static void ky_peer_cost_rows(void)
{
	uint64_t n = scaled(1000000, 100000), nr = scaled(100000, 10000);
	uint64_t m = scaled(200000, 20000), mr = scaled(20000, 2000);
	uint64_t seed = 1, t0, i, mem0, mem1;
	double v[3][KY_REPS], med[3], kernel;
	struct ky_cost c = { 0 };
	struct ky_zone *z;
	char key[64], sha[48];
	uint8_t k[KY_KEYLEN];
	cpu_set_t cpus;
	struct redis rd;
	bool redis;
	int r;

	if (n > ky_fits())
		n = ky_fits();
	c.plain = open_private(HUGE_RATE, HUGE_RATE, 0);
	c.fam = ky_family(1, KY_SLOW_PERIOD, KY_SLOW_BURST, 16ULL << 20);
	ky_grow(&c, n);
	z = ky_zone_create((uint32_t)n, 1, KY_ZONE_TAU);
	for (i = 0; i < n; i++) {	/* every key made */
		ky_key(k, i);
		if (ky_zone_take(z, k, KY_KEYLEN, 1))
			die("zone take (new key)", ENOSPC);
	}
	for (r = 0; r < KY_REPS; r++) {
		v[0][r] = ky_time_keys(&c, m, &seed);
		v[1][r] = ky_time_zone(z, n, m, &seed);
		v[2][r] = ky_time_plain(&c, m, &seed);
	}
	for (r = 0; r < 3; r++)
		med[r] = ky_median(v[r], KY_REPS);
	printf("keyed: peers, %llu keys, %llu calls per kind, %d rounds in turn, median\n",
	       (unsigned long long)n, (unsigned long long)m, KY_REPS);
	row("keyed", "ACQUIRE_KEY(1), peers' run, ns", med[0], "ns",
	    "ACQUIRE(1), a plain limiter", med[2], NULL, V_INFO);
	row("keyed", "shm hash of buckets, one lock, ns", med[1], "ns",
	    "ACQUIRE_KEY(1)", med[0], NULL, V_INFO);
	row("keyed", "shm hash of buckets, memory per key",
	    (double)ky_zone_size(z->nheads, z->nnodes) / (double)n, "B", NULL, 0, NULL, V_INFO);
	ky_zone_destroy(z);
	close(c.fam);
	close(c.plain);
	kernel = med[0];

	redis = redis_available() && !redis_connect(&rd);
	if (redis && redis_load(&rd, ky_lua, sha, sizeof(sha))) {
		close(rd.fd);
		redis = false;
	}
	if (!redis) {
		note("keyed", "no redis-server on 127.0.0.1:%d: Redis skipped", opt_redis_port);
		return;
	}
	sched_getaffinity(0, sizeof(cpus), &cpus);
	pin_cpu0();
	mem0 = ky_redis_mem(&rd);
	t0 = rl_now_ns();
	for (i = 0; i < nr; i++) {
		ky_rkey(key, sizeof(key), i);
		if (ky_redis_take(&rd, sha, key, 1000000000ULL, KY_SLOW_BURST * 1000000000ULL))
			die("redis GCRA (new key)", EIO);
	}
	mem1 = ky_redis_mem(&rd);
	printf("keyed: Redis, %llu keys made in %.1f s\n", (unsigned long long)nr,
	       (rl_now_ns() - t0) / 1e9);
	for (r = 0; r < KY_REPS; r++) {
		t0 = rl_now_ns();
		for (i = 0; i < mr; i++) {
			ky_rkey(key, sizeof(key), ky_rnd(&seed) % nr);
			if (ky_redis_take(&rd, sha, key, 1000000000ULL,
					  KY_SLOW_BURST * 1000000000ULL))
				die("redis GCRA", EIO);
		}
		v[0][r] = (double)(rl_now_ns() - t0) / (double)mr;
	}
	med[0] = ky_median(v[0], KY_REPS);
	row("keyed", "Redis GCRA script (EVALSHA), ns", med[0], "ns", "ACQUIRE_KEY(1)",
	    kernel, NULL, V_INFO);
	row("keyed", "Redis GCRA script, memory per key", mem1 > mem0 ?
	    (double)(mem1 - mem0) / (double)nr : 0, "B", NULL, 0, NULL, V_INFO);
	{
		const char *const flush[] = { "FLUSHALL" };

		redis_call_str(&rd, 1, flush, NULL, 0);
	}
	close(rd.fd);
	sched_setaffinity(0, sizeof(cpus), &cpus);
}

struct ky_bound {
	atomic_int ready, go;
	uint64_t end;
	atomic_uint n;
	uint64_t t[KY_BOUND_MAX];	/* ns: after each grant */
	uint64_t ready_ns[KY_BOUND_MAX];	/* the kernel's, or 0 */
};

enum ky_peer { P_KERNEL, P_ZONE, P_REDIS, P_NPEERS };

static const char *const ky_peer_name[P_NPEERS] = {
	"ACQUIRE_KEY", "shm hash, one lock", "Redis GCRA script",
};

static void ky_bound_worker(struct ky_bound *b, enum ky_peer p, int fd, struct ky_zone *z,
			    const char *sha)
{
	const uint64_t T = NSEC_PER_SEC / KY_BOUND_RATE;
	struct rl_key_acquire ka;
	uint8_t k[KY_KEYLEN];
	struct redis rd;
	char key[64];
	long long ret;
	unsigned int i;

	ky_req(&ka, RL_ACQUIRE_NONBLOCK);
	ky_key(k, 7);
	ky_rkey(key, sizeof(key), 7);
	if (p == P_REDIS) {
		pin_cpu0();
		if (redis_connect(&rd))
			_exit(1);
	}
	atomic_fetch_add(&b->ready, 1);
	while (!atomic_load(&b->go))
		sched_yield();
	while (rl_now_ns() < b->end) {
		switch (p) {
		case P_KERNEL:
			ret = ky_take(fd, &ka, 7);
			break;
		case P_ZONE:
			ret = ky_zone_take(z, k, KY_KEYLEN, 1);
			break;
		default:
			ret = ky_redis_take(&rd, sha, key, T / 1000,
					    KY_BOUND_BURST * T / 1000);
		}
		if (ret)
			continue;
		i = atomic_fetch_add(&b->n, 1);
		if (i >= KY_BOUND_MAX)
			break;
		b->t[i] = rl_now_ns();
		b->ready_ns[i] = p == P_KERNEL ? ka.acquire.ready_ns : 0;
	}
	_exit(0);
}

static int ky_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The most tokens over burst + rate x t in any window of the sorted @t. */
static double ky_excess(uint64_t *t, unsigned int n)
{
	double most = -KY_BOUND_BURST, e;
	unsigned int i, j;

	qsort(t, n, sizeof(*t), ky_u64_cmp);
	for (i = 0; i < n; i++)
		for (j = i; j < n; j++) {
			e = (double)(j - i + 1) - KY_BOUND_BURST -
			    (double)KY_BOUND_RATE * (double)(t[j] - t[i]) / 1e9;
			if (e > most)
				most = e;
		}
	return most;
}

static void ky_bound_rows(void)
{
	uint64_t dur = scaled(3 * NSEC_PER_SEC, NSEC_PER_SEC);
	const uint64_t T = NSEC_PER_SEC / KY_BOUND_RATE;
	struct ky_zone *z = NULL;
	struct ky_bound *b;
	struct redis rd;
	char sha[48] = "", name[96];
	pid_t pid[2];
	int p, i, fd = -1;
	unsigned int n;
	double ex, exr;

	b = shared_alloc(sizeof(*b));
	printf("keyed: the bound of one key (%d/s, burst %d), 2 processes trying for %.1f s\n",
	       KY_BOUND_RATE, KY_BOUND_BURST, dur / 1e9);
	for (p = 0; p < P_NPEERS; p++) {
		if (p == P_KERNEL)
			fd = ky_family(KY_BOUND_RATE, NSEC_PER_SEC, KY_BOUND_BURST, 0);
		if (p == P_ZONE)
			z = ky_zone_create(16, T, KY_BOUND_BURST * T);
		if (p == P_REDIS) {
			if (!redis_available() || redis_connect(&rd)) {
				note("keyed", "no redis-server: its bound skipped");
				continue;
			}
			if (redis_load(&rd, ky_lua, sha, sizeof(sha))) {
				close(rd.fd);
				continue;
			}
			close(rd.fd);
		}
		memset(b, 0, sizeof(*b));
		b->end = UINT64_MAX;
		for (i = 0; i < 2; i++) {
			pid[i] = fork();
			if (pid[i] < 0)
				die("fork", errno);
			if (!pid[i])
				ky_bound_worker(b, p, fd, z, sha);
		}
		while (atomic_load(&b->ready) < 2)
			sleep_ns(NSEC_PER_MSEC);
		b->end = rl_now_ns() + dur;
		atomic_store(&b->go, 1);
		for (i = 0; i < 2; i++)
			waitpid(pid[i], NULL, 0);
		n = atomic_load(&b->n);
		if (n > KY_BOUND_MAX)
			n = KY_BOUND_MAX;
		ex = ky_excess(b->t, n);
		/* A grant's clock is read after it: a window may look a call short. */
		snprintf(name, sizeof(name), "%s: tokens over the bound, clock", ky_peer_name[p]);
		row("keyed", name, ex, "tok", NULL, 0, "<= 0.5", at_most(ex, 0.5));
		if (p == P_KERNEL) {
			exr = ky_excess(b->ready_ns, n);
			row("keyed", "ACQUIRE_KEY: tokens over the bound, ready_ns", exr, "tok",
			    NULL, 0, "<= 0", at_most(exr, 0));
			close(fd);
		}
		snprintf(name, sizeof(name), "%s: granted, calls/s", ky_peer_name[p]);
		row("keyed", name, (double)n * 1e9 / (double)dur, "/s", "rate", KY_BOUND_RATE,
		    NULL, V_INFO);
		if (z) {
			ky_zone_destroy(z);
			z = NULL;
		}
	}
	munmap(b, sizeof(*b));
}

void bench_keyed(void)
{
	struct rl_features f;
	int fd = open("/dev/ratelimit", O_RDWR | O_CLOEXEC);

	memset(&f, 0, sizeof(f));
	if (fd < 0 || ioctl(fd, RL_IOC_GET_FEATURES, &f) || !(f.flags & RL_FEATURE_KEYED)) {
		note("keyed", "no keyed limiters in this module: skipped");
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	ky_cost_rows();
	ky_procs_rows();
	ky_peer_cost_rows();
	ky_bound_rows();
	ky_refill_rows();
}
