/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bench.h - what the files of rlbench share (tools/bench/): main.c (the
 * command line), results.c, util.c, shmb.c and redis.c (the peers),
 * kinds.c (the timed operations), trace.c (the timer tracepoints), and a
 * file per section.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RL_BENCH_H
#define RL_BENCH_H

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libratelimit.h"
#include "tool.h"

#define NSEC_PER_MSEC	1000000ULL
#define HUGE_RATE	1000000000ULL	/* tokens/s: never the limit */
#define MAX_WORKERS	64
#define ROUND		100		/* samples per kind per round */

/* An ioctl number the driver does not know: -ENOTTY, the no-op floor. */
#define RL_IOC_NOOP	_IO(RL_IOC_MAGIC, 63)

/* main.c: the command line. */
extern double opt_scale;	/* -s: durations and sample counts */
extern char clocksource[64];	/* the kernel's, for the results */
extern const char *opt_dir;	/* -o: where the result files go */
extern int opt_redis_port;	/* -p */

enum verdict { V_INFO, V_MET, V_MISSED, V_SKIP };

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

struct redis {
	int fd;
	char sha[48];
	char buf[4096];
	size_t len;
};

enum kind {
	K_CLOCK, K_GETPPID, K_NOOP, K_FEATURES, K_ACQ_UNL, K_ACQ_RATE,
	K_SHM, K_SEM, K_CONC, K_REDIS, K_PING, K_GETCFG, K_STATS, K_CYCLE,
	NKINDS
};

struct ctx {
	int fdu, fdr, fdc;
	struct shmb *shm;
	sem_t *sem;
	struct redis redis;
	uint64_t cycling;	/* permits K_CYCLE holds on fdc: 0, then 1 */
};

struct race {
	atomic_int ready;
	atomic_int go;
	atomic_int stop;
	uint64_t count[MAX_WORKERS];
};

struct acc {
	uint64_t tokens;	/* granted after the first grant */
	uint64_t elapsed;	/* ns, first to last grant */
	double excess;		/* max of granted - (burst + rate x t) */
	uint64_t calls;		/* round trips (Redis), syscalls (batch) */
	uint64_t cpu;		/* guest busy ns during the window */
};

struct fair {
	int fd;			/* ratelimit client, or -1 */
	struct shmb *shm;	/* else the pthread bucket */
	uint64_t end;		/* absolute deadline */
	uint64_t got;
	atomic_int *ready;
	atomic_int *go;
};

/* results.c */
void row(const char *sec, const char *name, double val,
	 const char *unit, const char *base, double bval,
	 const char *goal, enum verdict v);
enum verdict at_most(double x, double lim);
enum verdict at_least(double x, double lim);
void note(const char *sec, const char *fmt, ...);
FILE *open_out(const char *file);
void write_results(void);
void print_summary(void);

/* util.c */
void sleep_ns(uint64_t ns);
uint64_t scaled(double x, uint64_t min);
void die(const char *what, int err);
double pct(const uint64_t *s, size_t n, double p);
void *xcalloc(size_t n, size_t size);
void *shared_alloc(size_t size);
int open_private(uint64_t rate, uint64_t burst, uint32_t flags);
uint64_t get_burst(int fd);
uint64_t drain(int fd);
void create_named(const char *name, const struct rl_config *cfg);
int attach(const char *name);
uint64_t cpu_ns(void);
double jain(const uint64_t *x, int n);
uint64_t sys_busy_ns(void);
uint64_t mem_field(const char *field);

/* shmb.c */
struct shmb *shmb_create(const char *path, uint64_t rate,
			 uint64_t burst);
void shmb_destroy(struct shmb *b, const char *path);
void shmb_acquire(struct shmb *b, uint64_t n);
uint64_t shmb_drain(struct shmb *b);

/* redis.c */
int redis_connect(struct redis *r);
long long redis_take(struct redis *r, const char *key, uint64_t rate,
		     uint64_t burst, uint64_t n);
long long redis_acquire(struct redis *r, const char *key,
			uint64_t rate, uint64_t burst, uint64_t n);
int redis_ping(struct redis *r);
int redis_load(struct redis *r, const char *script, char *sha, size_t len);
long long redis_call_int(struct redis *r, int argc, const char *const *argv);
int redis_call_str(struct redis *r, int argc, const char *const *argv, char *s,
		   size_t len);
void redis_del(struct redis *r, const char *key);
void pin_cpu0(void);
bool redis_available(void);

/* kinds.c */
extern const char *const kind_name[NKINDS];
int do_op(enum kind k, struct ctx *c);
void sample_kinds(struct ctx *c, const size_t *n, uint64_t **s);
void write_cdf(const char *file, const enum kind *ks, int nk,
	       const size_t *n, uint64_t **s);

/* floor.c */
void bench_floor(void);

/* contention.c */
void bench_contention(void);
double race_start(struct race *r, int n, bool procs, void (*worker)(int idx),
		  uint64_t dur);
/* fast.c */
void bench_fast(void);

/* accuracy.c */
double acc_rate(const struct acc *a);
void acc_rows(const char *sec, const char *what, uint64_t rate,
	      const struct acc *a, bool goal);
void bench_accuracy(void);

/* wake.c */
void bench_wake(void);

/* idle.c */
void bench_idle(void);

/* fairness.c */
void bench_fairness(void);

/* peers.c */
void bench_peers(void);

/* batch.c */
void bench_batch(void);

/* hier.c */
void bench_hier(void);

/* async.c */
void bench_async(void);

/* scale.c */
void raise_nofile(uint64_t n);
void bench_scale(void);
void bench_pollers(void);

/* many.c */
void bench_many(void);

/* cycle.c */
void bench_cycle(void);

/* timer.c */
void bench_timer(void);

/* keyed.c */
void bench_keyed(void);

/* trace.c: events enabled once, windows opened with tracing_on */
enum trace_event {
	TRACE_EXPIRE_ENTRY, TRACE_EXPIRE_EXIT, TRACE_RL_TIMER, NTRACE
};

void trace_setup(void);
bool trace_has(enum trace_event ev);
void trace_begin(void);
void trace_end(void);
FILE *trace_open(void);
void trace_clear(void);

#endif /* RL_BENCH_H */
