// SPDX-License-Identifier: GPL-2.0-only
/*
 * peers.c - section 7, peers: shm pthread bucket, POSIX semaphore, Redis + Lua.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "bench.h"

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

/*
 * One token from peer @which (0 the fd @fd, 1 the bucket @shm, 2 Redis
 * @r): the syscalls or round trips it took. Exits the child on errors.
 */
static uint64_t peer_take(int which, int fd, struct shmb *shm,
			  struct redis *r, uint64_t rate, uint64_t burst)
{
	long long trips;

	if (which == 0) {
		if (rl_acquire(fd, 1))
			_exit(1);
		return 1;
	}
	if (which == 1) {
		shmb_acquire(shm, 1);
		return 1;
	}
	trips = redis_acquire(r, "rlbench:acc", rate, burst, 1);
	if (trips < 0)
		_exit(1);
	return (uint64_t)trips;
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
		a.calls += peer_take(which, fd, shm, &r, rate, burst);
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

#define COST_SHM	"/tmp/rlbench-cost.shm"

/* What the cost part times: ratelimit first, the baseline of the rest. */
static const enum kind peer_kinds[] = { K_ACQ_RATE, K_SHM, K_SEM, K_CONC,
					K_REDIS, K_PING };

/* The peers of the cost part into @c: whether Redis is there. */
static bool peers_open(struct ctx *c)
{
	struct rl_config cfg = { .period_ns = NSEC_PER_SEC,
				 .flags = RL_CONFIG_UNLIMITED, .concurrency = 4 };
	bool redis = redis_available();

	mkdir("/dev/shm", 01777);	/* sem_open() needs it */
	c->fdr = open_private(HUGE_RATE, HUGE_RATE, 0);
	c->fdc = open_private(0, 1, 0);
	if (rl_set_config(c->fdc, &cfg))
		die("concurrency config", EINVAL);
	c->shm = shmb_create(COST_SHM, HUGE_RATE, HUGE_RATE);
	sem_unlink("/rlbench-sem");
	c->sem = sem_open("/rlbench-sem", O_CREAT, 0600, 4);
	if (c->sem == SEM_FAILED) {
		note("peers", "sem_open: %s: semaphore skipped", strerror(errno));
		c->sem = NULL;
	}
	if (redis && redis_connect(&c->redis))
		redis = false;
	if (!redis)
		note("peers", "no redis-server on 127.0.0.1:%d: Redis skipped",
		     opt_redis_port);
	return redis;
}

/* The rows and peers_cost.dat of the @n[k] sorted samples @s[k]. */
static void peers_cost_rows(const size_t *n, uint64_t **s)
{
	char name[96], base[64];
	enum kind have[ARRAY_SIZE(peer_kinds)];
	unsigned int i;
	int nh = 0;

	for (i = 1; i < ARRAY_SIZE(peer_kinds); i++) {
		enum kind k = peer_kinds[i];
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
	for (i = 0; i < ARRAY_SIZE(peer_kinds); i++)
		if (n[peer_kinds[i]])
			have[nh++] = peer_kinds[i];
	write_cdf("peers_cost.dat", have, nh, n, s);
}

/*
 * Per-acquire cost, uncontended: the semaphore into *@sem (NULL if
 * none), for the contended part; whether Redis is there.
 */
static bool peers_cost(sem_t **sem)
{
	size_t n[NKINDS] = { 0 }, per = scaled(50000, ROUND * 5);
	uint64_t *s[NKINDS] = { 0 };
	struct ctx c = { 0 };
	cpu_set_t cpus;
	unsigned int i;
	bool redis;

	per -= per % ROUND;
	redis = peers_open(&c);
	for (i = 0; i < ARRAY_SIZE(peer_kinds); i++) {
		enum kind k = peer_kinds[i];

		if ((k == K_SEM && !c.sem) ||
		    ((k == K_REDIS || k == K_PING) && !redis))
			continue;
		n[k] = k == K_REDIS || k == K_PING ?
		       per / 10 - per / 10 % ROUND : per;
		s[k] = xcalloc(n[k], sizeof(uint64_t));
	}
	printf("peers: per-acquire cost, uncontended, tokens available\n");
	printf("  %zu timed calls each, %zu for Redis, all on CPU 0\n", per,
	       n[K_REDIS]);
	sched_getaffinity(0, sizeof(cpus), &cpus);
	pin_cpu0();
	sample_kinds(&c, n, s);
	sched_setaffinity(0, sizeof(cpus), &cpus);
	peers_cost_rows(n, s);
	for (i = 0; i < NKINDS; i++)
		free(s[i]);
	if (redis)
		close(c.redis.fd);
	shmb_destroy(c.shm, COST_SHM);
	rl_close(c.fdr);
	rl_close(c.fdc);
	*sem = c.sem;
	return redis;
}

/* Concurrency limits under contention: 8 threads, 4 permits. */
static void peers_sem(sem_t *sem)
{
	uint64_t dur = scaled(2 * NSEC_PER_SEC, NSEC_PER_SEC / 2);
	double tp_rl, tp_sem;
	int max_rl, max_sem;

	tp_rl = sem_race_run(true, NULL, dur, &max_rl);
	row("peers", "rl concurrency 4, 8 threads: pairs/s", tp_rl, "/s",
	    NULL, 0, NULL, V_INFO);
	row("peers", "rl concurrency 4, 8 threads: most held", max_rl, "",
	    "limit", 4, "<= limit", at_most(max_rl, 4));
	if (!sem)
		return;
	tp_sem = sem_race_run(false, sem, dur, &max_sem);
	row("peers", "POSIX semaphore 4, 8 threads: pairs/s", tp_sem, "/s",
	    "rl concurrency pairs/s", tp_rl, NULL, V_INFO);
	row("peers", "POSIX semaphore 4, 8 threads: most held", max_sem,
	    "", "limit", 4, NULL, V_INFO);
	sem_close(sem);
	sem_unlink("/rlbench-sem");
}

/* Pacing at 1000/s, burst 100: accuracy and guest CPU per token. */
static void peers_pacing(bool redis)
{
	static const char *const peer[] = { "ratelimit", "shm pthread bucket",
					    "Redis + Lua" };
	uint64_t dur = scaled(10 * NSEC_PER_SEC, 2 * NSEC_PER_SEC);
	uint64_t rate = 1000, burst = 100;
	struct acc acc[3];
	char name[96];
	unsigned int i;
	FILE *f;

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

void bench_peers(void)
{
	sem_t *sem;
	bool redis;

	redis = peers_cost(&sem);
	peers_sem(sem);
	peers_pacing(redis);
}
