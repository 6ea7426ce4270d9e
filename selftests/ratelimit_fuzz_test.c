// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzer of /dev/ratelimit: random and structure-aware ioctl sequences
 * (every command, random command numbers, sizes and directions, flags,
 * reserved bytes, extreme values, names, bad pointers) from several
 * threads of several processes, interleaved with open, close, dup, fork,
 * signals (with and without SA_RESTART), SIGKILL of children, poll, sysfs
 * writes and unlink, and mappings of the reservation page taken from,
 * written to and unmapped, and keyed limiters (random keys of 0 to 70
 * bytes, by key acquires, reads and counts), and threads moving to new IPC
 * namespaces and back, sharing limiters into them (RL_IOC_SHARE). Every
 * call must succeed or fail with one of the
 * errnos the ABI documents; any other result fails the test. At the end
 * every file is closed, every named limiter the fuzzer created must be
 * gone, and nothing may hang.
 *
 * fuzz.run runs for RL_FUZZ_SECS seconds (default 20); fuzz.failslab, on
 * kernels with CONFIG_FAILSLAB and fault injection in debugfs, does the
 * same for RL_FAILSLAB_SECS seconds (default 6) while the workers' slab
 * allocations fail at random: every failure must be a clean errno.
 * The seed is printed; RL_FUZZ_SEED=N repeats each thread's sequence.
 * fuzz.poll_tree checks poll()'s answer against a non-blocking acquire in
 * random trees of limiters with requests asleep in them.
 * RL_FUZZ_PROCS and RL_FUZZ_THREADS (default 3 each, at most 8) raise the
 * number of worker processes and of threads in each, for longer hunts.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"
#include <liburing.h>
#include "libratelimit.h"

#define FZ_PROCS	3		/* worker processes */
#define FZ_THREADS	3		/* fuzzing threads per worker */
#define FZ_MAX_PROCS	8		/* most of either from the environment */
#define FZ_MAX_THREADS	8
#define FZ_SLOTS	12		/* fds per worker */
#define FZ_SHARED_FDS	4		/* of them inherited from the test */
#define FZ_NAMES	6		/* names the fuzzer may create */
#define FZ_FAILS	16		/* failure messages kept */
#define FZ_SECS		20
#define FZ_FAILSLAB_SECS 6
#define FZ_HANG_NS	(20 * NS_PER_SEC)	/* grace after the deadline */
#define FZ_PAGE		4096
#define FAILSLAB	"/sys/kernel/debug/failslab"
#define FZ_NO_FAILSLAB	"no failslab (needs CONFIG_FAILSLAB, " \
			"CONFIG_FAULT_INJECTION_DEBUG_FS, debugfs)"

enum fz_op {
	OP_FEATURES, OP_SET_CONFIG, OP_GET_CONFIG, OP_ACQUIRE, OP_GET_STATS,
	OP_ATTACH, OP_UNLINK, OP_RELEASE, OP_REFUND, OP_SET_CLIENT,
	OP_GET_CLIENT,	/* the 11 commands, in _IOC_NR order */
	OP_RANDCMD, OP_VFSIOCTL, OP_SEQ, OP_OPEN, OP_CLOSE, OP_DUP, OP_FCNTL,
	OP_POLL, OP_RW, OP_SYSFS_W, OP_SYSFS_R, OP_FORK, OP_SIGNAL,
	OP_DEPOSIT, OP_SET_LEASE, OP_GET_DEMAND,	/* fz_global() */
	OP_HIER,	/* RL_IOC_SET_PARENT and RL_IOC_GET_PARENT (fz_hier()) */
	OP_URING, OP_CYCLE, OP_PERM, OP_QUEUED, OP_FAST,
	OP_KEYED,	/* RL_IOC_ACQUIRE_KEY, GET_KEY, GET_KEYS (fz_keyed()) */
	OP_NS,		/* IPC namespaces and RL_IOC_SHARE (fz_ns()) */
	OP_NR
};

static const char *const fz_op_names[OP_NR] = {
	"GET_FEATURES", "SET_CONFIG", "GET_CONFIG", "ACQUIRE", "GET_STATS",
	"ATTACH", "UNLINK", "RELEASE", "REFUND", "SET_CLIENT", "GET_CLIENT",
	"random cmd", "vfs ioctl", "sequence", "open", "close", "dup",
	"fcntl", "poll", "read/write", "sysfs write", "sysfs read", "fork",
	"signal",
	"DEPOSIT", "SET_LEASE", "GET_DEMAND",
	"SET/GET_PARENT", "io_uring", "CYCLE", "SET_PERM", "queued", "mmap",
	"keyed", "IPC namespace",
};

static const unsigned long fz_cmds[] = {
	RL_IOC_GET_FEATURES, RL_IOC_SET_CONFIG, RL_IOC_GET_CONFIG,
	RL_IOC_ACQUIRE, RL_IOC_GET_STATS, RL_IOC_ATTACH, RL_IOC_UNLINK,
	RL_IOC_RELEASE, RL_IOC_REFUND, RL_IOC_SET_CLIENT, RL_IOC_GET_CLIENT,
};

/* What the ABI lets an ioctl fail with (EBADF: the fuzzer's fd races). */
static const int fz_ioctl_errs[] = {
	EINVAL, EAGAIN, ETIMEDOUT, EINTR, EBADFD, EFAULT, ENOTTY, EACCES,
	EPERM, EBUSY, ENOENT, EEXIST, ENOSPC, EDQUOT, ENOMEM, EBADF, 0
};

static const int fz_open_errs[] = { ENOMEM, EINTR, 0 };

static const int fz_fd_errs[] = { EBADF, EBUSY, EMFILE, ENOMEM, EINTR, 0 };
/* read()/write() of a device without them, or of a reused fd number. */
static const int fz_rw_errs[] = {
	EINVAL, EBADF, EINTR, ENOMEM, ENODEV, ENOENT, EACCES, EPERM, 0
};

/* sysfs: the directory may vanish, files may be read-only or invalid. */
static const int fz_sysfs_errs[] = {
	EINVAL, ENOENT, ENODEV, EACCES, EPERM, EBADF, ENOMEM, EINTR, EBUSY,
	ELOOP, EMLINK, 0
};

static const int fz_fork_errs[] = { EAGAIN, ENOMEM, 0 };

/* unshare(2) and setns(2) of an IPC namespace: past user.max_ipc_namespaces. */
static const int fz_ns_errs[] = { ENOMEM, ENOSPC, 0 };

/* The host's IPC namespace, for threads to go back to (fz_ns()). */
static int fz_host_ns = -1;

struct fz_shared {
	__u64 seed;
	__u64 deadline;
	int failslab;
	int owner;			/* pid in the names */
	int nprocs;			/* worker processes */
	int nthreads;			/* fuzzing threads per worker */
	__u64 ops;
	__u64 op_count[OP_NR];
	__u64 op_ok[OP_NR];
	__u64 errs[256];
	__u64 children;
	__u64 kills;
	__u64 signals;
	__u64 bad;
	int nfails;
	char fails[FZ_FAILS][256];
};

struct fz_proc;

struct fz_thread {
	struct fz_proc *proc;
	struct fz_shared *sh;
	__u64 rng;
	int id;
	int op;				/* running now, for hang reports */
	int done;
	bool child;			/* a forked child runs this copy */
	pid_t kid;			/* a child of fz_fork() */
	__u64 kid_kill;			/* when to kill it, or was killed */
	bool kid_killed;
	pthread_t th;
	char name[320];
	unsigned char buf[FZ_PAGE];
};

struct fz_proc {
	struct fz_shared *sh;
	int slots[FZ_SLOTS];
	int idx;
	int go;
	int stop;
	struct fz_thread th[FZ_MAX_THREADS];
};

/* Three pages: read-write (ends in a non-NUL byte), none, read-only. */
static unsigned char *fz_mem;

/* ---- random numbers ---- */

static __u64 rnd(__u64 *s)
{
	__u64 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static __u64 below(struct fz_thread *t, __u64 n)
{
	return n ? rnd(&t->rng) % n : 0;
}

static bool chance(struct fz_thread *t, unsigned int pct)
{
	return below(t, 100) < pct;
}

#define PICK(t, arr)	((arr)[below(t, sizeof(arr) / sizeof((arr)[0]))])

static const __u64 fz_extremes[] = {
	0, 1, 2, 3, 7, 64, 1000, 1000000, NS_PER_SEC, RL_PERIOD_MAX_NS,
	RL_PERIOD_MAX_NS + 1, 1ULL << 32, (1ULL << 63) - 1, 1ULL << 63,
	~0ULL - 1, ~0ULL,
};

static __u64 rnd_u64(struct fz_thread *t)
{
	switch (below(t, 4)) {
	case 0:
		return PICK(t, fz_extremes);
	case 1:
		return rnd(&t->rng);
	case 2:
		return below(t, 100);
	default:
		return (1ULL << below(t, 64)) + below(t, 3) - 1;
	}
}

static __u32 rnd_u32(struct fz_thread *t)
{
	return chance(t, 50) ? (__u32)rnd(&t->rng) : (__u32)rnd_u64(t);
}

/* ---- results ---- */

static void fz_fail(struct fz_shared *sh, const char *fmt, ...)
{
	int i = __atomic_fetch_add(&sh->nfails, 1, __ATOMIC_RELAXED);
	va_list ap;

	__atomic_fetch_add(&sh->bad, 1, __ATOMIC_RELAXED);
	if (i >= FZ_FAILS)
		return;
	va_start(ap, fmt);
	vsnprintf(sh->fails[i], sizeof(sh->fails[i]), fmt, ap);
	va_end(ap);
}

static bool in_set(int err, const int *set)
{
	for (; *set; set++)
		if (*set == err)
			return true;
	return false;
}

static void hex(char *out, size_t len, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i, o = 0;

	out[0] = '\0';
	for (i = 0; i < n && o + 3 < len; i++)
		o += snprintf(out + o, len - o, "%02x", b[i]);
}

/*
 * Account for one call: @ret (0 or more, or -1 with @err) must be a
 * success or an errno of @allowed; @what and @arg (@len bytes, may be
 * NULL) describe the call in a failure message.
 */
static void fz_check(struct fz_thread *t, int op, long ret, int err,
		     const int *allowed, const char *what, const void *arg,
		     size_t len)
{
	struct fz_shared *sh = t->sh;
	char dump[132];

	__atomic_fetch_add(&sh->ops, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->op_count[op], 1, __ATOMIC_RELAXED);
	if (ret >= 0) {
		__atomic_fetch_add(&sh->op_ok[op], 1, __ATOMIC_RELAXED);
		if (ret > 0 && op <= OP_GET_CLIENT)
			fz_fail(sh, "%s returned %ld (%s)", fz_op_names[op],
				ret, what);
		return;
	}
	__atomic_fetch_add(&sh->errs[err & 255], 1, __ATOMIC_RELAXED);
	if (ret == -1 && in_set(err, allowed))
		return;
	hex(dump, sizeof(dump), arg, arg ? (len < 64 ? len : 64) : 0);
	fz_fail(sh, "%s: ret %ld errno %d (%s) seed %llu thread %d: %s %s",
		fz_op_names[op], ret, err, strerror(err),
		(unsigned long long)sh->seed, t->id, what, dump);
}

/* ---- fds and names ---- */

/* The fd of a random slot, mostly an open one; now and then a bad fd. */
static int fz_fd(struct fz_thread *t)
{
	int i, fd = -1;

	if (chance(t, 2))
		return PICK(t, ((const int[]){ -1, 0, 1000, 4095 }));
	for (i = 0; i < 4 && fd < 0; i++)
		fd = __atomic_load_n(&t->proc->slots[below(t, FZ_SLOTS)],
				     __ATOMIC_RELAXED);
	return fd;
}

static void fz_pool_name(char *buf, size_t len, int owner, int i)
{
	int n;

	n = snprintf(buf, len, "fz%d-%d", owner, i);
	/* The last name is the longest valid one: RL_NAME_MAX - 1 chars. */
	if (i == FZ_NAMES - 1) {
		while (n < RL_NAME_MAX - 1 && (size_t)n + 1 < len)
			buf[n++] = 'L';
		buf[n] = '\0';
	}
}

static const char *const fz_bad_names[] = {
	"", ".", ".hidden", "count", "version", "features", "a/b", "a b",
	"x\n", "\xc3\xbc", "tab\there", "..", "-/-",
	/* RL_NAME_MAX characters: one too many */
	"0123456789012345678901234567890123456789012345678901234567890123",
};

/* A name pointer: mostly the fuzzer's own names, else invalid ones. */
static __u64 fz_name(struct fz_thread *t)
{
	static const char junk[] = "aZ9._-/ \x01\x7f\xff";
	size_t i, n;

	switch (below(t, 10)) {
	case 0:
		return (__u64)(uintptr_t)PICK(t, fz_bad_names);
	case 1:
		if (chance(t, 50)) {
			/* Valid characters, too many of them. */
			n = RL_NAME_MAX + below(t, sizeof(t->name) - RL_NAME_MAX);
			memset(t->name, 'n', n);
		} else {
			/* Random bytes with at least one invalid one. */
			n = 1 + below(t, 80);
			for (i = 0; i < n; i++)
				t->name[i] = junk[below(t, sizeof(junk) - 1)];
			t->name[below(t, n)] = '/';
		}
		t->name[n] = '\0';
		return (__u64)(uintptr_t)t->name;
	case 2:
		return PICK(t, ((const __u64[]){
			0, 1, 0xffff888000000000ULL, ~0ULL,
			(__u64)(uintptr_t)(fz_mem + FZ_PAGE),
			/* runs into the PROT_NONE page without a NUL */
			(__u64)(uintptr_t)(fz_mem + FZ_PAGE - 3) }));
	default:
		fz_pool_name(t->name, sizeof(t->name), t->sh->owner,
			     below(t, FZ_NAMES));
		return (__u64)(uintptr_t)t->name;
	}
}

/* A bad argument pointer for an ioctl of a @size byte struct. */
static void *fz_bad_ptr(struct fz_thread *t, size_t size)
{
	switch (below(t, 7)) {
	case 0:
		return NULL;
	case 1:
		return (void *)1;
	case 2:
		return (void *)0xffff888000000000ULL;
	case 3:
		return fz_mem + FZ_PAGE;		/* PROT_NONE */
	case 4:
		return fz_mem + FZ_PAGE - size / 2;	/* straddles it */
	case 5:
		return fz_mem + 2 * FZ_PAGE;		/* read-only */
	default:
		return (void *)~0UL;
	}
}

/* ---- struct generators ---- */

static void gen_config(struct fz_thread *t, struct rl_config *c)
{
	static const __u64 periods[] = {
		NS_PER_MS, 10 * NS_PER_MS, 100 * NS_PER_MS, NS_PER_SEC,
	};

	memset(c, 0, sizeof(*c));
	if (chance(t, 60)) {
		c->period_ns = PICK(t, periods);
		c->rate = chance(t, 10) ? 0 : below(t, 2000);
		c->burst = below(t, 50);
		c->flags = chance(t, 10) ? RL_CONFIG_UNLIMITED : 0;
		/* Shares per user: set and cleared under sleepers. */
		c->flags |= chance(t, 30) ? RL_CONFIG_FAIR_PER_USER : 0;
		c->concurrency = chance(t, 30) ? below(t, 5) : 0;
		if (c->burst && chance(t, 20)) {
			c->catchup = 1000 + below(t, 5000);
			c->backlog = below(t, c->burst * 1000 + 1);
		}
		c->fairness = below(t, 20);
		if (chance(t, 15)) {
			/* A family of keys: a rate, none of the limiter-wide modes. */
			c->flags = RL_CONFIG_KEYED;
			c->rate = 1 + below(t, 2000);
			c->concurrency = 0;
			c->catchup = 0;
			c->backlog = 0;
			c->keys = chance(t, 50) ? 1 + below(t, 64) : 0;
		}
	} else {
		c->rate = rnd_u64(t);
		c->period_ns = chance(t, 50) ? PICK(t, ((const __u64[]){
			0, 1, 2, RL_PERIOD_MAX_NS - 1, RL_PERIOD_MAX_NS,
			RL_PERIOD_MAX_NS + 1, ~0ULL })) : rnd_u64(t);
		if (c->period_ns && chance(t, 40))
			/* burst * period around 2^63 */
			c->burst = RL_BURST_PERIOD_MAX / c->period_ns +
				   below(t, 3) - 1;
		else
			c->burst = rnd_u64(t);
		c->flags = chance(t, 80) ? below(t, 2) | (chance(t, 20) ? RL_CONFIG_KEYED : 0) |
			   (chance(t, 20) ? RL_CONFIG_FAIR_PER_USER : 0) : rnd_u32(t);
		c->catchup = PICK(t, ((const __u32[]){
			0, 999, 1000, 1001, 100000, 100001, ~0U, 5000 }));
		c->concurrency = rnd_u64(t);
		c->backlog = chance(t, 50) && c->burst < (1ULL << 50) ?
			     c->burst * 1000 + below(t, 2) : rnd_u64(t);
		c->fairness = PICK(t, ((const __u32[]){
			0, 1, 10, 1000000, 1000001, ~0U, 7 }));
	}
	if (chance(t, 4))
		c->reserved0 = rnd_u32(t) | 1;
	if (chance(t, 4))
		c->keys = rnd_u64(t) | 1;
}

static void gen_acquire(struct fz_thread *t, struct rl_acquire *a)
{
	__u64 now = now_ns();
	bool forever;

	memset(a, POISON_BYTE, sizeof(*a));
	a->count = chance(t, 70) ? 1 + below(t, 4) : rnd_u64(t);
	switch (below(t, 10)) {
	case 0:
	case 1:
	case 2:
	case 3:
		a->flags = RL_ACQUIRE_NONBLOCK;
		break;
	case 4:
		a->flags = RL_ACQUIRE_PREDICT;
		break;
	case 5:
		a->flags = RL_ACQUIRE_FLAGS_ALL;
		break;
	case 6:
		a->flags = rnd_u32(t);
		break;
	default:
		a->flags = 0;
	}
	switch (below(t, 10)) {
	case 0:
		a->deadline_ns = now - below(t, NS_PER_SEC);
		break;
	case 1:
		a->deadline_ns = PICK(t, ((const __u64[]){
			0, 1, (1ULL << 63) - 1, 1ULL << 63, ~0ULL - 1 }));
		break;
	case 2:
		a->deadline_ns = RL_DEADLINE_NONE;
		break;
	case 3:
		a->deadline_ns = now + 200 * NS_PER_MS;
		break;
	default:
		a->deadline_ns = now + below(t, 30 * NS_PER_MS);
	}
	/*
	 * Long sleeps only for a few tokens: a huge count, served in
	 * chunks, would sleep past the run (signals end the rest).
	 */
	forever = a->deadline_ns > now + NS_PER_SEC &&
		  a->deadline_ns <= (1ULL << 63) - 1;
	forever |= a->deadline_ns == RL_DEADLINE_NONE;
	if (forever && !(a->flags & RL_ACQUIRE_NONBLOCK) && a->count > 16)
		a->count = 1 + below(t, 4);
	a->priority = chance(t, 90) ? below(t, 5) : rnd_u32(t);
	a->reserved[0] = chance(t, 3) ? rnd_u64(t) | 1 : 0;
	a->reserved[1] = chance(t, 3) ? rnd_u64(t) | 1 : 0;
}

static void gen_release(struct fz_thread *t, struct rl_release *r)
{
	memset(r, 0, sizeof(*r));
	r->count = chance(t, 60) ? 1 + below(t, 3) : rnd_u64(t);
	r->flags = chance(t, 5) ? rnd_u32(t) : 0;
	r->reserved0 = chance(t, 5) ? rnd_u32(t) : 0;
	r->reserved[below(t, 2)] = chance(t, 5) ? rnd_u64(t) : 0;
}

static void gen_client(struct fz_thread *t, struct rl_client_config *cc)
{
	memset(cc, POISON_BYTE, sizeof(*cc));
	cc->priority = chance(t, 90) ? below(t, 6) : rnd_u32(t);
	cc->weight = PICK(t, ((const __u32[]){
		0, 1, 2, 10, 1000, 1001, ~0U, 5 }));
	cc->cap = chance(t, 50) ? 0 : rnd_u64(t);
	cc->flags = chance(t, 5) ? rnd_u32(t) : 0;
	cc->reserved0 = chance(t, 5) ? rnd_u32(t) : 0;
	memset(cc->reserved, 0, sizeof(cc->reserved));
	if (chance(t, 5))
		cc->reserved[below(t, 3)] = rnd_u64(t) | 1;
}

static void gen_attach(struct fz_thread *t, struct rl_attach *at)
{
	memset(at, 0, sizeof(*at));
	at->name_ptr = fz_name(t);
	at->flags = chance(t, 90) ? below(t, 8) : rnd_u32(t);
	at->mode = PICK(t, ((const __u32[]){
		0, 0400, 0600, 0644, 0666, 0777, 01000, 07777, 0440 }));
	if (chance(t, 3))
		at->mode = rnd_u32(t);
	gen_config(t, &at->config);
	if (chance(t, 4))
		at->reserved[below(t, 4)] = rnd_u64(t) | 1;
}

static void gen_unlink(struct fz_thread *t, struct rl_unlink *u)
{
	memset(u, 0, sizeof(*u));
	u->name_ptr = fz_name(t);
	u->flags = chance(t, 5) ? rnd_u32(t) : 0;
	u->reserved0 = chance(t, 5) ? rnd_u32(t) : 0;
	if (chance(t, 5))
		u->reserved[below(t, 2)] = rnd_u64(t) | 1;
}

/* ---- output checks: structs are fully written, reserved zeroed ---- */

static bool zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		if (*b++)
			return false;
	return true;
}

static void fz_check_out(struct fz_thread *t, int op, const void *buf)
{
	const struct rl_features *f = buf;
	const struct rl_config *c = buf;
	const struct rl_stats *st = buf;
	const struct rl_acquire *a = buf;
	const struct rl_client_config *cc = buf;
	const char *bad = NULL;

	switch (op) {
	case OP_FEATURES:
		if (f->version != RL_ABI_VERSION ||
		    (f->flags & ~(__u32)RL_FEATURE_URING_CMD) !=
		    (RL_FEATURE_QUEUED | RL_FEATURE_FAST | RL_FEATURE_KEYED |
		     RL_FEATURE_IPC_NS) ||
		    (~f->ioctls & 0x1fdffff) || !zero(f->reserved, sizeof(f->reserved)))
			bad = "features";
		break;
	case OP_GET_CONFIG:
		/* A cap on keys only with keys; the ops of a keyed one only. */
		if (c->reserved0 || (c->keys && !(c->flags & RL_CONFIG_KEYED)) ||
		    c->keys > RL_KEYS_MAX || c->flags & ~RL_CONFIG_FLAGS_ALL ||
		    (c->flags & RL_CONFIG_KEYED &&
		     (c->flags & ~RL_CONFIG_KEYED || c->concurrency || c->backlog)) ||
		    !c->period_ns || c->period_ns > RL_PERIOD_MAX_NS ||
		    !c->burst || c->burst > RL_BURST_PERIOD_MAX / c->period_ns)
			bad = "config";
		break;
	case OP_GET_STATS:
		if (st->flags || st->reserved0)
			bad = "stats";
		break;
	case OP_ACQUIRE:
		if (!zero(a->reserved, sizeof(a->reserved)))
			bad = "acquire";
		break;
	case OP_GET_CLIENT:
		if (cc->flags || cc->reserved0 ||
		    !zero(cc->reserved, sizeof(cc->reserved)) ||
		    cc->priority < RL_PRIO_LOW || cc->priority > RL_PRIO_USER ||
		    !cc->weight || cc->weight > RL_WEIGHT_MAX)
			bad = "client";
		break;
	}
	if (bad) {
		char dump[260];

		hex(dump, sizeof(dump), buf, 128);
		fz_fail(t->sh, "%s: bad output (%s): %s", fz_op_names[op], bad,
			dump);
	}
}

/* ---- the operations ---- */

/* One of the 11 commands with a generated argument. */
static void fz_ioctl(struct fz_thread *t, int op)
{
	union {
		struct rl_features f;
		struct rl_config c;
		struct rl_acquire a;
		struct rl_stats st;
		struct rl_attach at;
		struct rl_unlink u;
		struct rl_release r;
		struct rl_client_config cc;
	} u;
	unsigned long cmd = fz_cmds[op];
	char what[64];
	void *arg = &u;
	int fd = fz_fd(t), err;
	long ret;

	memset(&u, POISON_BYTE, sizeof(u));
	switch (op) {
	case OP_SET_CONFIG:
		gen_config(t, &u.c);
		break;
	case OP_ACQUIRE:
		gen_acquire(t, &u.a);
		break;
	case OP_GET_STATS:
		u.st.flags = chance(t, 5) ? rnd_u32(t) : 0;
		u.st.reserved0 = chance(t, 5) ? rnd_u32(t) : 0;
		break;
	case OP_ATTACH:
		gen_attach(t, &u.at);
		break;
	case OP_UNLINK:
		gen_unlink(t, &u.u);
		break;
	case OP_RELEASE:
	case OP_REFUND:
		gen_release(t, &u.r);
		break;
	case OP_SET_CLIENT:
		gen_client(t, &u.cc);
		break;
	}
	if (chance(t, 4))
		arg = fz_bad_ptr(t, _IOC_SIZE(cmd));
	t->op = op;
	ret = ioctl(fd, cmd, arg);
	err = errno;
	snprintf(what, sizeof(what), "fd %d cmd %#lx arg %p", fd, cmd, arg);
	fz_check(t, op, ret, err, fz_ioctl_errs, what,
		 arg == &u ? (void *)&u : NULL, _IOC_SIZE(cmd));
	if (!ret && arg == &u)
		fz_check_out(t, op, &u);
	/* The struct is copied back on -EAGAIN and -ETIMEDOUT too. */
	if (op == OP_ACQUIRE && arg == &u && (!ret || err == EAGAIN ||
					      err == ETIMEDOUT)) {
		if (!zero(u.a.reserved, sizeof(u.a.reserved)) ||
		    (ret && u.a.ready_ns == POISON64) ||
		    (!ret && (u.a.wait_ns == POISON64 || u.a.lag_ns == POISON64)))
			fz_fail(t->sh, "ACQUIRE out (%s): ready %#llx wait %#llx lag %#llx",
				ret ? strerror(err) : "granted",
				(unsigned long long)u.a.ready_ns,
				(unsigned long long)u.a.wait_ns,
				(unsigned long long)u.a.lag_ns);
	}
}

/* ---- global limits: RL_IOC_DEPOSIT, SET_LEASE, GET_DEMAND ---- */

static void gen_deposit(struct fz_thread *t, struct rl_deposit *d)
{
	memset(d, 0, sizeof(*d));
	d->count = chance(t, 70) ? below(t, 100) : rnd_u64(t);
	d->available = rnd_u64(t);	/* an output: ignored */
	d->flags = chance(t, 5) ? rnd_u32(t) : 0;
	d->reserved0 = chance(t, 5) ? rnd_u32(t) : 0;
	if (chance(t, 5))
		d->reserved[below(t, 2)] = rnd_u64(t) | 1;
}

static void gen_lease(struct fz_thread *t, struct rl_lease *l)
{
	__u64 now = now_ns();

	memset(l, 0, sizeof(*l));
	l->expires_ns = PICK(t, ((const __u64[]){
		0, 1, now, now + below(t, 50 * NS_PER_MS),
		now + below(t, 2 * NS_PER_SEC), (1ULL << 63) - 1, 1ULL << 63,
		~0ULL }));
	if (chance(t, 5))
		l->expires_ns = rnd_u64(t);
	gen_config(t, &l->config);
	gen_config(t, &l->fallback);
	if (chance(t, 40))
		l->config.flags |= RL_CONFIG_FED;
	if (chance(t, 20))
		l->fallback.flags |= RL_CONFIG_FED;
	l->flags = chance(t, 5) ? rnd_u32(t) : 0;
	l->reserved0 = chance(t, 5) ? rnd_u32(t) : 0;
	if (chance(t, 5))
		l->reserved[below(t, 2)] = rnd_u64(t) | 1;
}

/* Outputs of DEPOSIT and GET_DEMAND, after success. */
static void fz_global_out(struct fz_thread *t, int op, const void *buf)
{
	const struct rl_deposit *d = buf;
	const struct rl_demand *dm = buf;
	bool bad = false;

	if (op == OP_DEPOSIT)
		bad = d->flags || d->reserved0 ||
		      !zero(d->reserved, sizeof(d->reserved));
	else if (op == OP_GET_DEMAND)
		/* asked and refused count modulo 2^64: no order. */
		bad = dm->flags || dm->reserved0 || !dm->now_ns ||
		      dm->now_ns > now_ns() ||
		      !zero(dm->reserved, sizeof(dm->reserved));
	if (bad) {
		char dump[260];

		hex(dump, sizeof(dump), buf, 80);
		fz_fail(t->sh, "%s: bad output: %s", fz_op_names[op], dump);
	}
}

/*
 * One of the ioctls of global limits, or a SET_CONFIG of a fed limiter,
 * with a generated argument.
 */
static void fz_global(struct fz_thread *t)
{
	union {
		struct rl_deposit d;
		struct rl_lease l;
		struct rl_demand dm;
		struct rl_config c;
	} u;
	unsigned long cmd;
	char what[64];
	void *arg = &u;
	int fd = fz_fd(t), op, err;
	long ret;

	memset(&u, POISON_BYTE, sizeof(u));
	switch (below(t, 4)) {
	case 0:
		op = OP_DEPOSIT;
		gen_deposit(t, &u.d);
		break;
	case 1:
		op = OP_SET_LEASE;
		gen_lease(t, &u.l);
		break;
	case 2:
		op = OP_GET_DEMAND;
		u.dm.flags = chance(t, 5) ? rnd_u32(t) : 0;
		u.dm.reserved0 = chance(t, 5) ? rnd_u32(t) : 0;
		break;
	default:
		op = OP_SET_CONFIG;
		gen_config(t, &u.c);
		u.c.flags |= RL_CONFIG_FED;
		break;
	}
	cmd = op == OP_DEPOSIT ? RL_IOC_DEPOSIT :
	      op == OP_SET_LEASE ? RL_IOC_SET_LEASE :
	      op == OP_GET_DEMAND ? RL_IOC_GET_DEMAND : RL_IOC_SET_CONFIG;
	if (chance(t, 4))
		arg = fz_bad_ptr(t, _IOC_SIZE(cmd));
	t->op = op;
	ret = ioctl(fd, cmd, arg);
	err = errno;
	snprintf(what, sizeof(what), "fd %d cmd %#lx arg %p", fd, cmd, arg);
	fz_check(t, op, ret, err, fz_ioctl_errs, what,
		 arg == &u ? (void *)&u : NULL, _IOC_SIZE(cmd));
	if (ret > 0)
		fz_fail(t->sh, "%s returned %ld", fz_op_names[op], ret);
	if (!ret && arg == &u)
		fz_global_out(t, op, &u);
}

/* What SET_PARENT and GET_PARENT may fail with, beyond the others'. */
static const int fz_hier_errs[] = {
	EINVAL, EBADFD, EFAULT, EACCES, ENOENT, ELOOP, EMLINK, EBADF,
	ENOTTY, EBUSY, 0
};

/*
 * RL_IOC_SET_PARENT (random reparenting among the fuzzer's names, while
 * the other threads acquire from them) or RL_IOC_GET_PARENT.
 */
static void fz_hier(struct fz_thread *t)
{
	char name[RL_NAME_MAX + 8];
	struct rl_parent p;
	unsigned long cmd;
	int fd = fz_fd(t), err;
	void *arg = &p;
	char what[64];
	long ret;

	memset(&p, 0, sizeof(p));
	memset(name, POISON_BYTE, sizeof(name));
	if (chance(t, 60)) {
		cmd = RL_IOC_SET_PARENT;
		p.name_ptr = chance(t, 15) ? 0 : fz_name(t);
		p.weight = chance(t, 10) ? rnd_u32(t) :
			   (__u32)below(t, RL_WEIGHT_MAX + 1);
	} else {
		cmd = RL_IOC_GET_PARENT;
		p.name_ptr = chance(t, 10) ? fz_name(t) :
			     chance(t, 10) ? 0 : (__u64)(uintptr_t)name;
	}
	if (chance(t, 5))
		p.flags = rnd_u32(t);
	if (chance(t, 5))
		p.reserved[below(t, 2)] = rnd_u64(t);
	if (chance(t, 4))
		arg = fz_bad_ptr(t, sizeof(p));
	t->op = OP_HIER;
	ret = ioctl(fd, cmd, arg);
	err = errno;
	snprintf(what, sizeof(what), "fd %d cmd %#lx arg %p", fd, cmd, arg);
	fz_check(t, OP_HIER, ret, err, fz_hier_errs, what,
		 arg == &p ? (void *)&p : NULL, sizeof(p));
	if (!ret && cmd == RL_IOC_GET_PARENT && arg == &p &&
	    (p.depth > RL_DEPTH_MAX || !p.weight || p.weight > RL_WEIGHT_MAX ||
	     !zero(p.reserved, sizeof(p.reserved))))
		fz_fail(t->sh, "GET_PARENT: bad output: depth %u weight %u",
			p.depth, p.weight);
}

/*
 * RL_IOC_CYCLE with a generated request: permits to give back (mostly
 * few), the acquire of gen_acquire(). Once the permits were given back
 * (granted, -EAGAIN, -ETIMEDOUT, -EINTR) the kernel must have zeroed
 * @release; the acquire's outputs are checked as for ACQUIRE.
 */
static void fz_cycle(struct fz_thread *t)
{
	struct rl_cycle c;
	void *arg = &c;
	char what[64];
	int fd = fz_fd(t), err;
	long ret;

	memset(&c, 0, sizeof(c));
	c.release = chance(t, 80) ? below(t, 3) : rnd_u64(t);
	c.flags = chance(t, 4) ? rnd_u32(t) : 0;
	c.reserved0 = chance(t, 4) ? rnd_u32(t) : 0;
	c.reserved[below(t, 2)] = chance(t, 4) ? rnd_u64(t) : 0;
	gen_acquire(t, &c.acquire);
	if (chance(t, 4))
		arg = fz_bad_ptr(t, sizeof(c));
	t->op = OP_CYCLE;
	ret = ioctl(fd, RL_IOC_CYCLE, arg);
	err = errno;
	snprintf(what, sizeof(what), "fd %d CYCLE arg %p", fd, arg);
	fz_check(t, OP_CYCLE, ret, err, fz_ioctl_errs, what,
		 arg == &c ? (void *)&c : NULL, sizeof(c));
	if (arg != &c || (ret && err != EAGAIN && err != ETIMEDOUT &&
			  err != EINTR))
		return;
	if (c.release || !zero(c.acquire.reserved, sizeof(c.acquire.reserved)) ||
	    (ret && err != EINTR && c.acquire.ready_ns == POISON64) ||
	    (!ret && (c.acquire.wait_ns == POISON64 ||
		      c.acquire.lag_ns == POISON64)))
		fz_fail(t->sh, "CYCLE out (%s): release %#llx ready %#llx",
			ret ? strerror(err) : "granted",
			(unsigned long long)c.release,
			(unsigned long long)c.acquire.ready_ns);
}

/*
 * RL_IOC_SET_PERM: owner, group and mode of the fd's limiter (mostly
 * valid, so that the chown and the sysfs files' change of hands run while
 * the other threads read and write those files), else bad flags, mode,
 * ids or reserved fields.
 */
static void fz_perm(struct fz_thread *t)
{
	struct rl_perm p;
	void *arg = &p;
	char what[64];
	int fd = fz_fd(t), err;
	long ret;

	memset(&p, 0, sizeof(p));
	p.flags = chance(t, 10) ? rnd_u32(t) : 1 + below(t, RL_PERM_FLAGS_ALL);
	p.uid = chance(t, 10) ? rnd_u32(t) : (__u32)below(t, 3);
	p.gid = chance(t, 10) ? rnd_u32(t) : (__u32)below(t, 3);
	p.mode = chance(t, 10) ? rnd_u32(t) : 0600 | (__u32)below(t, 0200);
	if (chance(t, 5))
		p.reserved[below(t, 2)] = rnd_u64(t);
	if (chance(t, 4))
		arg = fz_bad_ptr(t, sizeof(p));
	t->op = OP_PERM;
	ret = ioctl(fd, RL_IOC_SET_PERM, arg);
	err = errno;
	snprintf(what, sizeof(what), "fd %d SET_PERM arg %p", fd, arg);
	fz_check(t, OP_PERM, ret, err, fz_ioctl_errs, what,
		 arg == &p ? (void *)&p : NULL, sizeof(p));
}

/* unshare(2) or setns(2) back to the host's: the thread's names change. */
static void fz_ns_move(struct fz_thread *t)
{
	bool back = chance(t, 50);
	long ret;

	t->op = OP_NS;
	ret = back ? setns(fz_host_ns, CLONE_NEWIPC) : unshare(CLONE_NEWIPC);
	fz_check(t, OP_NS, ret, errno, fz_ns_errs,
		 back ? "setns to the host's" : "unshare(CLONE_NEWIPC)", NULL, 0);
}

/*
 * IPC namespaces: the thread moves to a new one or back to the host's,
 * or shares the limiter of a slot into its own (refused but for the
 * host's limiters, into another namespace), revokes a share, or asks with
 * a bad namespace fd, flags, reserved field or pointer.
 */
static void fz_ns(struct fz_thread *t)
{
	struct rl_share sh;
	void *arg = &sh;
	int fd, nsfd, err;
	char what[64];
	long ret;

	if (chance(t, 20)) {
		fz_ns_move(t);
		return;
	}
	nsfd = open("/proc/thread-self/ns/ipc", O_RDONLY | O_CLOEXEC);
	memset(&sh, 0, sizeof(sh));
	sh.ns_fd = chance(t, 10) ? (int)rnd_u32(t) : chance(t, 10) ? fz_host_ns : nsfd;
	sh.flags = chance(t, 30) ? RL_SHARE_REVOKE : chance(t, 10) ? rnd_u32(t) : 0;
	if (chance(t, 5))
		sh.reserved[below(t, 3)] = rnd_u64(t);
	if (chance(t, 4))
		arg = fz_bad_ptr(t, sizeof(sh));
	fd = fz_fd(t);
	t->op = OP_NS;
	ret = ioctl(fd, RL_IOC_SHARE, arg);
	err = errno;
	if (nsfd >= 0)
		close(nsfd);
	snprintf(what, sizeof(what), "fd %d SHARE ns_fd %d arg %p", fd, sh.ns_fd, arg);
	fz_check(t, OP_NS, ret, err, fz_ioctl_errs, what,
		 arg == &sh ? (void *)&sh : NULL, sizeof(sh));
}

/* A generated request for RL_IOC_SUBMIT, from gen_acquire()'s fields. */
static void gen_queued(struct fz_thread *t, struct rl_queued *q)
{
	struct rl_acquire a;

	gen_acquire(t, &a);
	memset(q, POISON_BYTE, sizeof(*q));
	q->count = a.count;
	q->deadline_ns = a.deadline_ns;
	/* Mostly a valid flag: NONBLOCK is refused here. */
	q->flags = chance(t, 80) ? a.flags & RL_ACQUIRE_PREDICT : a.flags;
	q->priority = a.priority;
	q->reserved0 = chance(t, 3) ? rnd_u32(t) | 1 : 0;
	q->reserved = chance(t, 3) ? rnd_u64(t) | 1 : 0;
	q->user_data = rnd_u64(t);
}

/*
 * Queued acquires: RL_IOC_SUBMIT of a generated request, RL_IOC_COLLECT
 * (a result is 0 or -ETIMEDOUT, its reserved field zero), or RL_IOC_CANCEL
 * of a small ticket or of all; requests left outstanding end with their fd.
 */
static void fz_queued(struct fz_thread *t)
{
	static const unsigned long cmds[] = { RL_IOC_SUBMIT, RL_IOC_COLLECT, RL_IOC_CANCEL };
	unsigned int which = below(t, 3);
	struct rl_queued q;
	__u64 ticket;
	void *arg = &q;
	char what[64];
	int fd = fz_fd(t), err;
	long ret;

	if (which == 0)
		gen_queued(t, &q);
	else
		memset(&q, POISON_BYTE, sizeof(q));
	ticket = chance(t, 30) ? 0 : below(t, 8);
	if (which == 2)
		arg = &ticket;
	if (chance(t, 4))
		arg = fz_bad_ptr(t, sizeof(q));
	t->op = OP_QUEUED;
	ret = ioctl(fd, cmds[which], arg);
	err = errno;
	snprintf(what, sizeof(what), "fd %d queued cmd %u arg %p", fd, which, arg);
	fz_check(t, OP_QUEUED, ret, err, fz_ioctl_errs, what,
		 arg == &q ? (void *)&q : NULL, sizeof(q));
	if (arg != &q || ret || which == 2)
		return;
	/* -EINVAL: a key's request whose burst was lowered below its count. */
	if ((which == 1 && (q.reserved || (q.result && q.result != -ETIMEDOUT &&
					   q.result != -EINVAL) || !q.ticket)) ||
	    (which == 0 && (q.result || q.ticket == POISON64)))
		fz_fail(t->sh, "%s out: ticket %#llx result %d reserved %#llx",
			which ? "COLLECT" : "SUBMIT", (unsigned long long)q.ticket,
			q.result, (unsigned long long)q.reserved);
}

/* mmap() of a device without it, a closed or reused fd, or bad arguments. */
static const int fz_mmap_errs[] = {
	EINVAL, EACCES, EBADFD, EBADF, ENODEV, ENOMEM, EPERM, EAGAIN, 0
};

/*
 * The library's fast path on a slot's fd, while other threads close(),
 * dup2() over and open fds of the same numbers and the process forks:
 * mapped, takes and acquires, now and then given up. A take must never
 * fault, whatever the number names by then.
 */
static void fz_fast_lib(struct fz_thread *t)
{
	int fd = fz_fd(t), i, ret;

	t->op = OP_FAST;
	ret = rl_fast_map(fd);
	fz_check(t, OP_FAST, ret ? -1 : 0, -ret, fz_mmap_errs, "rl_fast_map", NULL, 0);
	for (i = below(t, 20); i > 0; i--) {
		if (chance(t, 50))
			rl_fast_take(fd, 1 + below(t, 4));
		else
			rl_try_acquire(fd, 1 + below(t, 4), NULL);
	}
	if (chance(t, 10))
		rl_fast_unmap(fd);
}

/*
 * The reservation page: mapped, mostly with valid arguments; then tokens
 * taken as the library does (a compare-and-swap), now and then a value
 * written into it (the kernel must trust none beyond what it put there),
 * and unmapped, or left for the fd's close.
 */
static void fz_fast(struct fz_thread *t)
{
	static const int prots[] = { PROT_READ | PROT_WRITE, PROT_READ,
				     PROT_READ | PROT_EXEC, PROT_WRITE };
	int fd = fz_fd(t), prot = PROT_READ | PROT_WRITE, flags = MAP_SHARED, err;
	size_t len = RL_FAST_SIZE;
	struct rl_fast *f;
	char what[80];
	off_t off = 0;
	__u64 v, n;
	int i;

	if (chance(t, 50)) {
		fz_fast_lib(t);
		return;
	}
	if (chance(t, 10))
		prot = prots[below(t, 4)];
	if (chance(t, 5))
		flags = MAP_PRIVATE;
	if (chance(t, 5))
		len = RL_FAST_SIZE * (1 + below(t, 3));
	if (chance(t, 5))
		off = (off_t)(RL_FAST_SIZE * below(t, 3));
	t->op = OP_FAST;
	f = mmap(NULL, len, prot, flags, fd, off);
	err = errno;
	snprintf(what, sizeof(what), "fd %d mmap len %zu prot %d flags %d off %lld",
		 fd, len, prot, flags, (long long)off);
	fz_check(t, OP_FAST, f == MAP_FAILED ? -1 : 0, err, fz_mmap_errs, what, NULL, 0);
	if (f == MAP_FAILED)
		return;
	for (i = below(t, 20); i > 0 && prot & PROT_WRITE && flags == MAP_SHARED; i--) {
		n = 1 + below(t, 4);
		v = __atomic_load_n(&f->tokens, __ATOMIC_RELAXED);
		if (v >= n && __atomic_compare_exchange_n(&f->tokens, &v, v - n, 0,
							  __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			__atomic_fetch_add(&f->acquires, 1, __ATOMIC_RELAXED);
		if (chance(t, 3))
			__atomic_store_n(chance(t, 50) ? &f->tokens : &f->acquires,
					 rnd_u64(t), __ATOMIC_RELAXED);
	}
	if (!chance(t, 10))
		munmap(f, len);
}

/*
 * A key: 0 to 70 bytes (the valid 1 .. RL_KEY_MAX and beyond), mostly from
 * a few short ones so that keys repeat, sleep on one another and refill,
 * else random bytes that make new keys up to a family's cap.
 */
static __u32 gen_key(struct fz_thread *t, __u8 *key)
{
	__u32 len, i;

	if (chance(t, 70)) {
		len = 1 + below(t, 2);
		for (i = 0; i < len; i++)
			key[i] = 'a' + below(t, 4);
		return len;
	}
	len = below(t, 71);
	for (i = 0; i < len && i < RL_KEY_MAX; i++)
		key[i] = (__u8)rnd_u64(t);
	return len;
}

/*
 * Keyed limiters: RL_IOC_ACQUIRE_KEY of a generated request on a generated
 * key (valid or not: lengths, counts above the burst, flags, reserved),
 * RL_IOC_GET_KEY of one, RL_IOC_GET_KEYS, and RL_IOC_SUBMIT_KEY (its
 * tickets collected and cancelled by fz_queued(), or ended with their fd),
 * on whatever limiter the fd has; the outputs of a success are checked
 * (not keys <= keys_max: a change of limits may lower the cap below the
 * keys kept).
 */
static void fz_keyed(struct fz_thread *t)
{
	static const unsigned long cmds[] = {
		RL_IOC_ACQUIRE_KEY, RL_IOC_GET_KEY, RL_IOC_GET_KEYS, RL_IOC_SUBMIT_KEY,
	};
	unsigned int which = below(t, 10) < 5 ? 0 : 1 + below(t, 3);
	union {
		struct rl_key_acquire ka;
		struct rl_key_state st;
		struct rl_keys_stats ks;
		struct rl_key_queued kq;
	} u;
	static const size_t sizes[] = {
		sizeof(u.ka), sizeof(u.st), sizeof(u.ks), sizeof(u.kq),
	};
	void *arg = &u;
	char what[80];
	int fd = fz_fd(t), err;
	__u32 len = 0;
	long ret;

	memset(&u, 0, sizeof(u));
	switch (which) {
	case 0:
		gen_acquire(t, &u.ka.acquire);
		len = gen_key(t, u.ka.key);
		u.ka.key_len = chance(t, 3) ? rnd_u32(t) : len;
		u.ka.flags = chance(t, 3) ? rnd_u32(t) | 1 : 0;
		if (chance(t, 3))
			u.ka.reserved[below(t, 3)] = rnd_u64(t) | 1;
		break;
	case 1:
		memset(&u.st, POISON_BYTE, sizeof(u.st));
		len = gen_key(t, u.st.key);
		u.st.key_len = chance(t, 3) ? rnd_u32(t) : len;
		u.st.flags = chance(t, 3) ? rnd_u32(t) | 1 : 0;
		break;
	case 2:
		memset(&u.ks, POISON_BYTE, sizeof(u.ks));
		u.ks.flags = chance(t, 3) ? rnd_u32(t) | 1 : 0;
		u.ks.reserved0 = chance(t, 3) ? rnd_u32(t) | 1 : 0;
		break;
	default:
		gen_queued(t, &u.kq.queued);
		len = gen_key(t, u.kq.key);
		u.kq.key_len = chance(t, 3) ? rnd_u32(t) : len;
		u.kq.flags = chance(t, 3) ? rnd_u32(t) | 1 : 0;
		if (chance(t, 3))
			u.kq.reserved[below(t, 3)] = rnd_u64(t) | 1;
	}
	if (chance(t, 4))
		arg = fz_bad_ptr(t, sizes[which]);
	t->op = OP_KEYED;
	ret = ioctl(fd, cmds[which], arg);
	err = errno;
	snprintf(what, sizeof(what), "fd %d keyed cmd %u key_len %u arg %p", fd, which,
		 which == 0 ? u.ka.key_len : which == 1 ? u.st.key_len :
		 which == 3 ? u.kq.key_len : 0, arg);
	fz_check(t, OP_KEYED, ret, err, fz_ioctl_errs, what, arg == &u ? (void *)&u : NULL,
		 sizes[which]);
	if (arg != &u || ret)
		return;
	if ((which == 0 && (u.ka.key_len < 1 || u.ka.key_len > RL_KEY_MAX ||
			    u.ka.acquire.lag_ns || u.ka.acquire.wait_ns == POISON64 ||
			    u.ka.acquire.ready_ns > now_ns())) ||
	    (which == 1 && (u.st.kept > 1 || u.st.reserved0 ||
			    !zero(u.st.reserved, sizeof(u.st.reserved)) ||
			    (!u.st.kept && (u.st.full_ns || u.st.waiters)))) ||
	    (which == 2 && (u.ks.keys_max > RL_KEYS_MAX ||
			    !zero(u.ks.reserved, sizeof(u.ks.reserved)))) ||
	    (which == 3 && (u.kq.queued.result || u.kq.queued.ticket == POISON64 ||
			    u.kq.queued.lag_ns)))
		fz_fail(t->sh, "%s out: bad output", what);
}

/* The generic ioctls of fs/ioctl.c: any other type reaches the driver. */
static bool fz_vfs_type(unsigned int type)
{
	return type == 0 || type == 0x15 || type == 'T' || type == 'X' ||
	       type == 'f' || type == 0x94;
}

static void fz_randcmd(struct fz_thread *t)
{
	unsigned int dir = below(t, 4), type, nr, size;
	struct rl_acquire *a = (void *)t->buf;
	unsigned long cmd;
	char what[64];
	void *arg = t->buf;
	size_t i;
	long ret;
	int err;

	if (chance(t, 60)) {
		type = RL_IOC_MAGIC;
		nr = below(t, 16);
	} else {
		do
			type = below(t, 256);
		while (fz_vfs_type(type));
		nr = below(t, 256);
	}
	size = chance(t, 70) ? below(t, 160) : below(t, 1 << 14);
	cmd = _IOC(dir, type, nr, size);
	if (chance(t, 5))
		cmd = (__u32)rnd(&t->rng);
	if (fz_vfs_type(_IOC_TYPE(cmd)) && _IOC_TYPE(cmd) != RL_IOC_MAGIC)
		cmd = _IOC(dir, RL_IOC_MAGIC, nr & 15, size);
	for (i = 0; i < 256; i += 8)
		*(__u64 *)(t->buf + i) = chance(t, 50) ? 0 : rnd_u64(t);
	if (cmd == RL_IOC_ACQUIRE) {
		/* Never sleep on random bytes. */
		a->flags = RL_ACQUIRE_NONBLOCK;
	} else if (cmd == RL_IOC_ATTACH || cmd == RL_IOC_UNLINK ||
		   cmd == RL_IOC_SET_PARENT || cmd == RL_IOC_GET_PARENT) {
		/* Random pointers could name anything: no name at all. */
		*(__u64 *)t->buf = 0;
	}
	if (chance(t, 10))
		arg = fz_bad_ptr(t, size);
	t->op = OP_RANDCMD;
	ret = ioctl(fz_fd(t), cmd, arg);
	err = errno;
	snprintf(what, sizeof(what), "cmd %#lx arg %p", cmd, arg);
	fz_check(t, OP_RANDCMD, ret, err, fz_ioctl_errs, what,
		 arg == t->buf ? t->buf : NULL, 64);
}

static void fz_vfsioctl(struct fz_thread *t)
{
	int on = below(t, 2), fd = fz_fd(t);
	unsigned long cmd;
	long ret;

	switch (below(t, 3)) {
	case 0:
		cmd = FIONBIO;
		break;
	case 1:
		cmd = FIOCLEX;
		break;
	default:
		cmd = FIOASYNC;
		break;
	}
	ret = ioctl(fd, cmd, chance(t, 10) ? NULL : &on);
	fz_check(t, OP_VFSIOCTL, ret, errno, fz_ioctl_errs, "vfs ioctl",
		 NULL, 0);
}

/* A valid sequence on one fd: config, client, acquire, give back. */
static void fz_seq(struct fz_thread *t)
{
	struct rl_client_config cc;
	struct rl_acquire a;
	struct rl_config c;
	int fd = fz_fd(t);
	long ret;

	t->op = OP_SEQ;
	if (chance(t, 30)) {
		memset(&c, 0, sizeof(c));
		c.rate = 1 + below(t, 1000);
		c.period_ns = 100 * NS_PER_MS;
		c.burst = 1 + below(t, 20);
		c.concurrency = chance(t, 50) ? 1 + below(t, 4) : 0;
		ret = ioctl(fd, RL_IOC_SET_CONFIG, &c);
		fz_check(t, OP_SEQ, ret, errno, fz_ioctl_errs, "seq config",
			 &c, sizeof(c));
	}
	if (chance(t, 20)) {
		ret = ks_client(fd, 1 + below(t, 4), 1 + below(t, 10),
				below(t, 3) ? 0 : 1 + below(t, 50));
		fz_check(t, OP_SEQ, ret, errno, fz_ioctl_errs, "seq client",
			 NULL, 0);
	}
	ret = ks_acq(fd, 1 + below(t, 3), now_ns() + below(t, 20 * NS_PER_MS),
		     chance(t, 50) ? RL_ACQUIRE_NONBLOCK : 0, &a);
	fz_check(t, OP_SEQ, ret, errno, fz_ioctl_errs, "seq acquire", &a,
		 sizeof(a));
	ret = ks_client_get(fd, &cc);
	fz_check(t, OP_SEQ, ret, errno, fz_ioctl_errs, "seq get client",
		 NULL, 0);
	if (ret)
		return;
	fz_check_out(t, OP_GET_CLIENT, &cc);
	if (cc.held) {
		ret = ks_release(fd, 1 + below(t, cc.held));
		fz_check(t, OP_SEQ, ret, errno, fz_ioctl_errs, "seq release",
			 NULL, 0);
	}
	if (chance(t, 50)) {
		ret = ks_refund(fd, 1 + below(t, 2));
		fz_check(t, OP_SEQ, ret, errno, fz_ioctl_errs, "seq refund",
			 NULL, 0);
	}
}

/* Put @fd in slot @i, closing what was there. */
static void fz_slot_set(struct fz_thread *t, int i, int fd)
{
	int old = __atomic_exchange_n(&t->proc->slots[i], fd, __ATOMIC_SEQ_CST);
	long ret;

	if (old < 0)
		return;
	ret = close(old);
	fz_check(t, OP_CLOSE, ret, errno, fz_fd_errs, "close", NULL, 0);
}

static void fz_open(struct fz_thread *t)
{
	int flags = O_CLOEXEC, fd, err;
	long ret;

	flags |= chance(t, 20) ? O_NONBLOCK : 0;
	flags |= chance(t, 20) ? O_RDONLY : O_RDWR;
	t->op = OP_OPEN;
	fd = open(KS_DEV, flags);
	err = errno;
	fz_check(t, OP_OPEN, fd, err, fz_open_errs, "open", NULL, 0);
	if (fd < 0)
		return;
	/* Mostly a limiter at once, so that the commands get further. */
	if (chance(t, 30)) {
		ret = ks_set(fd, 1 + below(t, 1000), 100 * NS_PER_MS,
			     below(t, 20), 0);
		fz_check(t, OP_SET_CONFIG, ret, errno, fz_ioctl_errs,
			 "open: config", NULL, 0);
	} else if (chance(t, 40)) {
		ret = ks_att(fd, (const char *)(uintptr_t)fz_name(t),
			     below(t, 8), 0600, 1 + below(t, 1000),
			     100 * NS_PER_MS, below(t, 20));
		fz_check(t, OP_ATTACH, ret, errno, fz_ioctl_errs,
			 "open: attach", NULL, 0);
	}
	fz_slot_set(t, below(t, FZ_SLOTS), fd);
}

static void fz_dup(struct fz_thread *t)
{
	int src = fz_fd(t), i = below(t, FZ_SLOTS), fd, err;
	int dst = __atomic_load_n(&t->proc->slots[i], __ATOMIC_RELAXED);

	t->op = OP_DUP;
	if (dst >= 0 && chance(t, 30)) {
		/* Replace the file under a number in use by other threads. */
		if (src == dst || chance(t, 50))
			fd = dup2(src, dst);
		else
			fd = dup3(src, dst, O_CLOEXEC);
		err = errno;
		fz_check(t, OP_DUP, fd < 0 ? -1 : 0, err, fz_fd_errs, "dup2",
			 NULL, 0);
		return;
	}
	fd = fcntl(src, F_DUPFD_CLOEXEC, 0);
	err = errno;
	fz_check(t, OP_DUP, fd < 0 ? -1 : 0, err, fz_fd_errs, "dup", NULL, 0);
	if (fd >= 0)
		fz_slot_set(t, i, fd);
}

static void fz_fcntl(struct fz_thread *t)
{
	int fd = fz_fd(t), fl;
	long ret;

	fl = fcntl(fd, F_GETFL);
	if (fl < 0) {
		fz_check(t, OP_FCNTL, fl, errno, fz_fd_errs, "getfl", NULL, 0);
		return;
	}
	ret = fcntl(fd, F_SETFL, fl ^ O_NONBLOCK);
	fz_check(t, OP_FCNTL, ret, errno, fz_fd_errs, "setfl", NULL, 0);
}

static void fz_poll(struct fz_thread *t)
{
	struct pollfd p[2] = {
		{ .fd = fz_fd(t), .events = POLLIN | POLLOUT | POLLPRI },
		{ .fd = fz_fd(t), .events = POLLIN },
	};
	long ret;

	t->op = OP_POLL;
	ret = poll(p, 1 + below(t, 2), below(t, 6));
	fz_check(t, OP_POLL, ret, errno, fz_open_errs, "poll", NULL, 0);
}

static void fz_rw(struct fz_thread *t)
{
	int fd = fz_fd(t);
	long ret;

	t->op = OP_RW;
	if (chance(t, 50))
		ret = read(fd, t->buf, below(t, 64));
	else
		ret = write(fd, "1", 1);
	fz_check(t, OP_RW, ret, errno, fz_rw_errs, "read/write", NULL, 0);
}

/* A limiter's files, config first, and one that is not there. */
static const char *const fz_sysfs_files[] = {
	"config", "stat", "client_list", "wait_histogram", "children",
	"nonexistent",
};

/* The keys a write of config may name: the tunables first, then others. */
static const char *const fz_sysfs_keys[] = {
	"rate", "period_ns", "burst", "unlimited", "concurrency", "fairness",
	"catchup", "backlog", "fed", "weight", "parent", "granted", "",
	"nonexistent",
};

static const char *const fz_sysfs_values[] = {
	"0", "1", "2", "10", "1000", "100000", "1000000000",
	"86400000000000", "86400000000001", "9223372036854775807",
	"9223372036854775808", "18446744073709551615",
	"18446744073709551616", "-1", "0x10", "010", "abc", "", "1\n",
	" 5", "5 ", "99999999999999999999999", "1\n2", "+3",
};

static void fz_sysfs_path(struct fz_thread *t, char *path, size_t len,
			  bool tunable)
{
	char name[RL_NAME_MAX + 16];
	size_t nfiles = ARRAY_SIZE(fz_sysfs_files);

	fz_pool_name(name, sizeof(name), t->sh->owner, below(t, FZ_NAMES));
	if (chance(t, 3)) {
		snprintf(path, len, KS_SYSFS "/%s",
			 PICK(t, ((const char *const[]){
				"count", "version", "features" })));
		return;
	}
	snprintf(path, len, KS_SYSFS "/%s/%s", name,
		 fz_sysfs_files[tunable && chance(t, 90) ? 0 :
				below(t, nfiles)]);
}

static void fz_sysfs_write(struct fz_thread *t)
{
	char path[160], val[32], line[64];
	const char *v = val;
	int fd, err;
	long ret;

	fz_sysfs_path(t, path, sizeof(path), true);
	if (chance(t, 50))
		v = PICK(t, fz_sysfs_values);
	else
		snprintf(val, sizeof(val), "%llu",
			 (unsigned long long)(chance(t, 50) ? below(t, 3000) :
					      rnd_u64(t)));
	/* Mostly "KEY VALUE", a tunable's most of the time; else the value alone. */
	if (chance(t, 90)) {
		snprintf(line, sizeof(line), "%s %s",
			 fz_sysfs_keys[chance(t, 90) ? below(t, 9) :
				       below(t, ARRAY_SIZE(fz_sysfs_keys))], v);
		v = line;
	}
	t->op = OP_SYSFS_W;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	err = errno;
	if (fd < 0) {
		fz_check(t, OP_SYSFS_W, -1, err, fz_sysfs_errs, path, NULL, 0);
		return;
	}
	ret = write(fd, v, strlen(v));
	err = errno;
	close(fd);
	fz_check(t, OP_SYSFS_W, ret, err, fz_sysfs_errs, path, v, strlen(v));
}

static void fz_sysfs_read(struct fz_thread *t)
{
	char path[160];
	int fd, err;
	long ret;

	fz_sysfs_path(t, path, sizeof(path), false);
	t->op = OP_SYSFS_R;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	err = errno;
	if (fd < 0) {
		fz_check(t, OP_SYSFS_R, -1, err, fz_sysfs_errs, path, NULL, 0);
		return;
	}
	ret = read(fd, t->buf, sizeof(t->buf));
	err = errno;
	close(fd);
	fz_check(t, OP_SYSFS_R, ret, err, fz_sysfs_errs, path, NULL, 0);
}

static void fz_signal(struct fz_thread *t)
{
	static const int errs[] = { ESRCH, 0 };
	struct fz_thread *to = &t->proc->th[below(t, t->sh->nthreads)];
	int err;

	t->op = OP_SIGNAL;
	__atomic_fetch_add(&t->sh->signals, 1, __ATOMIC_RELAXED);
	err = pthread_kill(to->th, chance(t, 50) ? SIGUSR1 : SIGUSR2);
	fz_check(t, OP_SIGNAL, err ? -1 : 0, err, errs, "signal", NULL, 0);
}

static void fz_one(struct fz_thread *t);

/*
 * The child of fz_fork(): killed with SIGKILL at its time, it must be
 * gone 10 s later. @wait: block until then (the end of the run).
 */
static void fz_reap(struct fz_thread *t, bool wait)
{
	int status;
	pid_t r;

	while (t->kid > 0) {
		r = waitpid(t->kid, &status, WNOHANG);
		if (r == t->kid) {
			if (WIFEXITED(status) && WEXITSTATUS(status))
				fz_fail(t->sh, "child exited with %d",
					WEXITSTATUS(status));
			t->kid = 0;
			return;
		}
		if (r < 0 && errno != EINTR) {
			fz_fail(t->sh, "waitpid: %s", strerror(errno));
			t->kid = 0;
			return;
		}
		if (!t->kid_killed && (wait || now_ns() >= t->kid_kill)) {
			kill(t->kid, SIGKILL);
			t->kid_killed = true;
			t->kid_kill = now_ns();
			__atomic_fetch_add(&t->sh->kills, 1, __ATOMIC_RELAXED);
		}
		if (t->kid_killed && now_ns() >= t->kid_kill + 10 * NS_PER_SEC) {
			fz_fail(t->sh, "child %d did not die within 10 s of SIGKILL",
				t->kid);
			t->kid = 0;
			return;
		}
		if (!wait)
			return;
		sleep_ms(2);
	}
}

/*
 * A child that goes on fuzzing the inherited fds for a while, killed with
 * SIGKILL at a random time (maybe asleep in an acquire) unless it ended
 * by itself. The thread goes on meanwhile: fz_reap() collects it.
 */
static void fz_fork(struct fz_thread *t)
{
	__u64 life = (5 + below(t, 150)) * NS_PER_MS, start = now_ns(), end;
	int err;
	pid_t pid;

	if (t->kid)
		return;
	t->op = OP_FORK;
	pid = fork();
	err = errno;
	if (pid < 0) {
		fz_check(t, OP_FORK, -1, err, fz_fork_errs, "fork", NULL, 0);
		return;
	}
	if (pid == 0) {
		t->child = true;
		t->rng ^= 0x5bd1e995ULL * (life + 1);
		end = start + life;
		if (end > t->sh->deadline)
			end = t->sh->deadline;
		while (now_ns() < end)
			fz_one(t);
		_exit(0);
	}
	__atomic_fetch_add(&t->sh->children, 1, __ATOMIC_RELAXED);
	t->kid = pid;
	t->kid_kill = start + below(t, 2 * life);
	t->kid_killed = false;
	fz_check(t, OP_FORK, 0, 0, NULL, "fork", NULL, 0);
}

/* ---- acquires through io_uring (RL_URING_ACQUIRE, _ACQUIRE_KEY, _CANCEL) ---- */

#define FZ_URING_SLOTS	8
#define FZ_URING_WAIT_NS (2 * NS_PER_SEC)	/* past every deadline */

/*
 * A thread's ring, made on first use (and again in a child of fz_fork(),
 * which leaves its parent's alone), and its requests in flight: the
 * kernel writes their results until they complete.
 */
struct fz_ring {
	struct io_uring ring;
	pid_t pid;
	int busy;
	int submit_err;			/* the last failed submission's -errno, or 0 */
	struct rl_key_acquire req[FZ_URING_SLOTS];	/* .acquire alone for a plain one */
	bool used[FZ_URING_SLOTS];
};

static __thread struct fz_ring *fz_ring;

/* What a completion may carry: the ioctl's errnos, cancellation, none. */
static const int fz_uring_errs[] = {
	EINVAL, EAGAIN, ETIMEDOUT, EBADFD, EFAULT, ENOTTY, EPERM, ENOMEM,
	ECANCELED, ENOENT, EOPNOTSUPP, EBADF, EINTR, ENOSPC, 0
};

/* What the kernel may refuse a submission with, the SQEs kept. */
static const int fz_submit_errs[] = { EBUSY, EAGAIN, EINTR, ENOMEM, 0 };

/*
 * A ring for the calling thread, which no close() or dup2() of the fuzzer
 * can reach: those go to numbers read from the slots, maybe a while ago
 * (by then another file's), and in a child of fz_fork() to numbers the
 * fork may not have copied (the fd table is copied before the memory,
 * while the other threads go on). So the ring is entered by its registered
 * index alone and its number is closed at once; and it is made where no
 * other thread moves fds meanwhile: before the threads of a worker start
 * (fz_thread_fn()), or in a child, which has one thread.
 */
static struct fz_ring *fz_ring_new(void)
{
	struct fz_ring *r = calloc(1, sizeof(*r));

	if (!r || io_uring_queue_init(2 * FZ_URING_SLOTS, &r->ring, 0)) {
		free(r);
		return NULL;
	}
	if (io_uring_register_ring_fd(&r->ring) != 1) {
		io_uring_queue_exit(&r->ring);
		free(r);
		return NULL;
	}
	close(r->ring.ring_fd);
	r->ring.ring_fd = -1;	/* io_uring_queue_exit() closes no number then */
	r->pid = getpid();
	return r;
}

/* The thread's ring, if it has one. */
static struct fz_ring *fz_ring_get(struct fz_thread *t)
{
	if (fz_ring && fz_ring->pid == getpid())
		return fz_ring;
	fz_ring = t->child ? fz_ring_new() : NULL;
	return fz_ring;
}

/*
 * Send the SQEs queued so far. liburing has put them in the ring before it
 * enters the kernel, so one that a submission failed to send (an error,
 * or 0 sent) stays there and goes with the next: it stays counted.
 */
static void fz_uring_submit(struct fz_thread *t, struct fz_ring *r)
{
	int ret = io_uring_submit(&r->ring);

	if (ret >= 0)
		return;
	r->submit_err = ret;
	fz_check(t, OP_URING, -1, -ret, fz_submit_errs, "submit", NULL, 0);
}

/* Collect completions; @wait_ns: for all of them, at most that long. */
static void fz_uring_reap(struct fz_thread *t, struct fz_ring *r,
			  __u64 wait_ns)
{
	__u64 end = now_ns() + wait_ns;
	struct io_uring_cqe *cqe;
	int res;
	__u64 d;

	for (;;) {
		if (io_uring_peek_cqe(&r->ring, &cqe)) {
			if (!r->busy || now_ns() >= end)
				break;
			/* What a full ring kept back goes now. */
			fz_uring_submit(t, r);
			sleep_ms(1);
			continue;
		}
		d = io_uring_cqe_get_data64(cqe);
		res = rl_async_result(cqe);
		io_uring_cqe_seen(&r->ring, cqe);
		if (d < FZ_URING_SLOTS && r->used[d]) {
			r->used[d] = false;
			r->busy--;
		}
		fz_check(t, OP_URING, res < 0 ? -1 : 0, -res, fz_uring_errs,
			 "completion", NULL, 0);
	}
	if (wait_ns && r->busy)
		fz_fail(t->sh, "io_uring: %d acquires not completed (last submit error %d)",
			r->busy, r->submit_err);
}

/* An acquire, of a key or not, whose deadline ends it before the run does. */
static void fz_uring_acquire(struct fz_thread *t, struct fz_ring *r,
			     struct io_uring_sqe *sqe, int fd)
{
	__u64 now = now_ns(), d = below(t, FZ_URING_SLOTS);
	struct rl_key_acquire *k = &r->req[d];
	struct rl_acquire *a = &k->acquire;
	bool keyed = chance(t, 3);

	if (r->used[d] || chance(t, 5)) {
		rl_prep_acquire_async(sqe, fd, fz_bad_ptr(t, sizeof(*a)));
		if (keyed)
			rl_prep_acquire_key_async(sqe, fd, fz_bad_ptr(t, sizeof(*k)));
		d = FZ_URING_SLOTS;
	} else {
		memset(k, 0, sizeof(*k));
		gen_acquire(t, a);
		if (a->deadline_ns == RL_DEADLINE_NONE ||
		    (a->deadline_ns < 1ULL << 63 &&
		     a->deadline_ns > now + 300 * NS_PER_MS))
			a->deadline_ns = now + below(t, 300 * NS_PER_MS);
		rl_prep_acquire_async(sqe, fd, a);
		if (keyed) {
			k->key_len = gen_key(t, k->key);
			if (chance(t, 5))
				k->key_len = rnd_u32(t);
			if (chance(t, 5))
				k->reserved[below(t, 3)] = rnd_u64(t) | 1;
			rl_prep_acquire_key_async(sqe, fd, k);
		}
		r->used[d] = true;
		r->busy++;
	}
	io_uring_sqe_set_data64(sqe, d);
}

/* One command through the thread's ring, and the completions so far. */
static void fz_uring(struct fz_thread *t)
{
	struct io_uring_sqe *sqe;
	struct fz_ring *r;
	unsigned int k;

	t->op = OP_URING;
	r = fz_ring_get(t);
	if (!r)
		return;
	sqe = io_uring_get_sqe(&r->ring);
	if (!sqe) {
		/* The ring is full of SQEs not sent yet: send them, reap. */
		fz_uring_submit(t, r);
		fz_uring_reap(t, r, 0);
		return;
	}
	k = below(t, 10);
	if (k < 7) {
		fz_uring_acquire(t, r, sqe, fz_fd(t));
	} else {
		rl_prep_cancel_async(sqe, fz_fd(t), below(t, FZ_URING_SLOTS));
		if (k == 9)
			sqe->cmd_op = rnd_u32(t);
		io_uring_sqe_set_data64(sqe, FZ_URING_SLOTS);
	}
	fz_uring_submit(t, r);
	fz_uring_reap(t, r, 0);
}

/* The end of a thread: every acquire completes by its deadline. */
static void fz_uring_end(struct fz_thread *t)
{
	struct fz_ring *r = fz_ring;

	if (!r || r->pid != getpid())
		return;
	fz_uring_submit(t, r);
	fz_uring_reap(t, r, FZ_URING_WAIT_NS);
	io_uring_queue_exit(&r->ring);
	free(r);
	fz_ring = NULL;
}

/* One random operation. */
static void fz_one(struct fz_thread *t)
{
	unsigned int r = below(t, 1000);

	if (r < 40) {
		fz_global(t);
		return;
	}

	if (r < 80) {
		fz_hier(t);
		return;
	}

	if (r < 500)
		fz_ioctl(t, below(t, OP_GET_CLIENT + 1));
	else if (r < 510)
		fz_queued(t);
	else if (r < 520)
		fz_fast(t);
	else if (r < 540)
		fz_cycle(t);
	else if (r < 555)
		fz_keyed(t);
	else if (r < 565)
		fz_perm(t);
	else if (r < 575)
		fz_ns(t);
	else if (r < 600)
		fz_randcmd(t);
	else if (r < 620)
		fz_vfsioctl(t);
	else if (r < 700)
		fz_seq(t);
	else if (r < 770)
		fz_open(t);
	else if (r < 800)
		fz_slot_set(t, below(t, FZ_SLOTS), -1);
	else if (r < 830)
		fz_dup(t);
	else if (r < 840)
		fz_fcntl(t);
	else if (r < 870)
		fz_poll(t);
	else if (r < 880)
		fz_rw(t);
	else if (r < 930)
		fz_sysfs_write(t);
	else if (r < 960)
		fz_sysfs_read(t);
	else if (r < 970 && !t->child)
		fz_fork(t);
	else if (r < 985)
		fz_uring(t);
	else if (!t->child)
		fz_signal(t);
}

/* ---- workers ---- */

static void fz_handler(int sig)
{
	(void)sig;
}

static int fz_make_it_fail(void)
{
	return file_write("/proc/thread-self/make-it-fail", "1");
}

static void *fz_thread_fn(void *arg)
{
	struct fz_thread *t = arg;

	fz_ring = fz_ring_new();
	/* Every pthread_t is set before anyone signals a sibling. */
	while (!__atomic_load_n(&t->proc->go, __ATOMIC_SEQ_CST))
		sleep_ms(1);
	if (t->sh->failslab && fz_make_it_fail())
		fz_fail(t->sh, "make-it-fail: %s", strerror(errno));
	while (now_ns() < t->sh->deadline) {
		fz_one(t);
		fz_reap(t, false);
	}
	fz_uring_end(t);
	fz_reap(t, true);
	t->op = -1;
	__atomic_store_n(&t->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Signals at random threads while the run lasts. */
static void *fz_signaller(void *arg)
{
	struct fz_proc *p = arg;
	__u64 rng = p->sh->seed ^ (0xabcdULL << p->idx);

	while (!__atomic_load_n(&p->stop, __ATOMIC_SEQ_CST)) {
		struct fz_thread *to = &p->th[rnd(&rng) % p->sh->nthreads];

		sleep_ms(2 + rnd(&rng) % 20);
		if (!__atomic_load_n(&to->done, __ATOMIC_SEQ_CST)) {
			pthread_kill(to->th, rnd(&rng) & 1 ? SIGUSR1 : SIGUSR2);
			__atomic_fetch_add(&p->sh->signals, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

/* Join @th, interrupting it with SIGUSR2 (no SA_RESTART) meanwhile. */
static int fz_join(pthread_t th, __u64 end)
{
	struct timespec ts;

	for (;;) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * NS_PER_MS;
		if (ts.tv_nsec >= (long)NS_PER_SEC) {
			ts.tv_sec++;
			ts.tv_nsec -= NS_PER_SEC;
		}
		if (!pthread_timedjoin_np(th, NULL, &ts))
			return 0;
		if (now_ns() >= end)
			return -1;
		pthread_kill(th, SIGUSR2);
	}
}

static int fz_worker(struct fz_shared *sh, int idx, const int *shared_fds)
{
	struct fz_proc *p = calloc(1, sizeof(*p));
	struct sigaction sa;
	pthread_t sig_th;
	int i, rc = 0;
	bool sig_ok;

	if (!p)
		return 2;
	p->sh = sh;
	p->idx = idx;
	for (i = 0; i < FZ_SLOTS; i++)
		p->slots[i] = i < FZ_SHARED_FDS ? dup(shared_fds[i]) : -1;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fz_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_flags = 0;
	sigaction(SIGUSR2, &sa, NULL);

	for (i = 0; i < sh->nthreads; i++) {
		struct fz_thread *t = &p->th[i];

		t->proc = p;
		t->sh = sh;
		t->id = idx * sh->nthreads + i;
		t->rng = sh->seed + 0x1000193ULL * (t->id + 1);
		t->op = -1;
		if (pthread_create(&t->th, NULL, fz_thread_fn, t)) {
			fz_fail(sh, "pthread_create failed");
			t->done = 1;
			t->th = pthread_self();
			sh->deadline = 0;	/* stop the others early */
		}
	}
	__atomic_store_n(&p->go, 1, __ATOMIC_SEQ_CST);
	sig_ok = !pthread_create(&sig_th, NULL, fz_signaller, p);
	if (!sig_ok)
		fz_fail(sh, "pthread_create failed");

	while (now_ns() < sh->deadline)
		sleep_ms(50);
	__atomic_store_n(&p->stop, 1, __ATOMIC_SEQ_CST);
	if (sig_ok)
		pthread_join(sig_th, NULL);
	for (i = 0; i < sh->nthreads; i++) {
		struct fz_thread *t = &p->th[i];

		if (pthread_equal(t->th, pthread_self()))
			continue;
		if (fz_join(t->th, sh->deadline + FZ_HANG_NS / 2)) {
			fz_fail(sh, "thread %d hangs in %s after the run",
				t->id, t->op >= 0 ? fz_op_names[t->op] : "?");
			rc = 3;
		}
	}
	if (rc)
		_exit(rc);	/* stuck threads: leave without closing */
	for (i = 0; i < FZ_SLOTS; i++)
		if (p->slots[i] >= 0)
			close(p->slots[i]);
	free(p);
	return 0;
}

/* ---- the test ---- */

static __u64 env_u64(const char *name, __u64 def)
{
	const char *s = getenv(name);

	return s && *s ? strtoull(s, NULL, 0) : def;
}

/* @name from the environment, 1 to @max; @def when unset or out of range. */
static int env_range(const char *name, int def, int max)
{
	__u64 v = env_u64(name, def);

	return v >= 1 && v <= (__u64)max ? (int)v : def;
}

/* The fds every worker inherits: fresh, private, named and O_NONBLOCK. */
static void fz_shared_fds(struct fz_shared *sh, int *fds)
{
	char name[RL_NAME_MAX + 16];
	int i;

	for (i = 0; i < FZ_SHARED_FDS; i++)
		fds[i] = open(KS_DEV, O_RDWR | O_CLOEXEC | (i == 3 ? O_NONBLOCK : 0));
	ks_set(fds[1], 100, 100 * NS_PER_MS, 5, 0);
	fz_pool_name(name, sizeof(name), sh->owner, 0);
	ks_att(fds[2], name, RL_ATTACH_CREATE, 0600, 50, 100 * NS_PER_MS, 3);
	ks_set(fds[3], 10, NS_PER_SEC, 2, 0);
}

static void fz_report(struct __test_metadata *_metadata,
		      struct fz_shared *sh, double secs)
{
	char line[512];
	size_t o;
	int i;

	ksft_print_msg("%llu operations in %.1f s: %.0f ops/s\n",
		       (unsigned long long)sh->ops, secs, sh->ops / secs);
	ksft_print_msg("%llu children (%llu killed), %llu signals\n",
		       (unsigned long long)sh->children,
		       (unsigned long long)sh->kills,
		       (unsigned long long)sh->signals);
	for (i = 0; i < OP_NR; i++)
		ksft_print_msg("  %-12s %8llu calls %8llu ok\n", fz_op_names[i],
			       (unsigned long long)sh->op_count[i],
			       (unsigned long long)sh->op_ok[i]);
	o = snprintf(line, sizeof(line), "errnos:");
	for (i = 1; i < 256 && o < sizeof(line) - 32; i++)
		if (sh->errs[i])
			o += snprintf(line + o, sizeof(line) - o, " %s %llu",
				      strerrorname_np(i) ?: "?",
				      (unsigned long long)sh->errs[i]);
	ksft_print_msg("%s\n", line);
	for (i = 0; i < sh->nfails && i < FZ_FAILS; i++)
		TH_LOG("FAIL: %s", sh->fails[i]);
	if (sh->nfails > FZ_FAILS)
		TH_LOG("... and %d more failures", sh->nfails - FZ_FAILS);
}

/*
 * Has the limiter @name children? A parent outlives its fds while it has
 * some, persistent or not (ratelimit(4), "Trees of limiters").
 */
static bool fz_has_children(const char *name)
{
	char list[4096];

	return !sysfs_read(name, "children", list, sizeof(list)) && *list;
}

/*
 * After every fd is closed, no name may remain but persistent ones and
 * parents; then unlink those, leaves first (a parent with children is
 * EBUSY; a non-persistent one goes with its last child), and none may
 * remain at all.
 */
static void fz_names_gone(struct __test_metadata *_metadata,
			  struct fz_shared *sh, __u64 count0)
{
	char name[RL_NAME_MAX + 16];
	int i, pass, busy, fd = ks_open();
	__u64 v;

	ASSERT_LE(0, fd);
	for (i = 0; i < FZ_NAMES; i++) {
		fz_pool_name(name, sizeof(name), sh->owner, i);
		if (!sysfs_exists(name))
			continue;
		v = sysfs_u64(name, "persistent");
		if (v != 1 && !fz_has_children(name))
			TH_LOG("%s: survives its fds (persistent %llu, clients %llu)",
			       name, (unsigned long long)v,
			       (unsigned long long)sysfs_u64(name, "clients"));
		EXPECT_TRUE(v == 1 || fz_has_children(name));
		EXPECT_EQ(0, sysfs_u64(name, "clients"));
		EXPECT_EQ(0, sysfs_u64(name, "held"));
		EXPECT_EQ(0, sysfs_u64(name, "waiters"));
	}
	/* A tree has at most RL_DEPTH_MAX + 1 levels: as many passes. */
	for (pass = 0, busy = 1; busy && pass <= RL_DEPTH_MAX; pass++) {
		busy = 0;
		for (i = 0; i < FZ_NAMES; i++) {
			fz_pool_name(name, sizeof(name), sh->owner, i);
			if (!ks_unl(fd, name))
				continue;
			if (errno == EBUSY)
				busy++;
			else
				EXPECT_EQ(ENOENT, errno);
		}
	}
	ksft_print_msg("names unlinked in %d pass(es), leaves first\n", pass);
	for (i = 0; i < FZ_NAMES; i++) {
		fz_pool_name(name, sizeof(name), sh->owner, i);
		EXPECT_FALSE(sysfs_exists(name)) TH_LOG("%s still in sysfs", name);
	}
	close(fd);
	EXPECT_EQ(count0, ks_named_count());
}

/* Run the fuzzer for @secs seconds; @failslab: with fault injection. */
static void fz_run(struct __test_metadata *_metadata, __u64 secs,
		   bool failslab)
{
	int fds[FZ_SHARED_FDS], i, status, alive;
	struct rl_features f;
	pid_t pids[FZ_MAX_PROCS];
	struct fz_shared *sh;
	__u64 start, count0;
	int fd;

	fd = ks_open();
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", KS_DEV, strerror(errno));
	ASSERT_EQ(0, ioctl(fd, RL_IOC_GET_FEATURES, &f));
	close(fd);
	count0 = ks_named_count();
	fz_host_ns = open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fz_host_ns);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	fz_mem = mmap(NULL, 3 * FZ_PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, fz_mem);
	memset(fz_mem, 'a', FZ_PAGE);
	ASSERT_EQ(0, mprotect(fz_mem + FZ_PAGE, FZ_PAGE, PROT_NONE));
	ASSERT_EQ(0, mprotect(fz_mem + 2 * FZ_PAGE, FZ_PAGE, PROT_READ));

	sh->seed = env_u64("RL_FUZZ_SEED", now_ns() ^ ((__u64)getpid() << 32));
	sh->owner = getpid();
	sh->failslab = failslab;
	sh->nprocs = env_range("RL_FUZZ_PROCS", FZ_PROCS, FZ_MAX_PROCS);
	sh->nthreads = env_range("RL_FUZZ_THREADS", FZ_THREADS, FZ_MAX_THREADS);
	ksft_print_msg("seed %llu (RL_FUZZ_SEED=%llu repeats it)\n",
		       (unsigned long long)sh->seed,
		       (unsigned long long)sh->seed);
	ksft_print_msg("%llu s, %d processes x %d threads%s\n",
		       (unsigned long long)secs,
		       sh->nprocs, sh->nthreads, failslab ? ", failslab" : "");
	fz_shared_fds(sh, fds);
	start = now_ns();
	sh->deadline = start + secs * NS_PER_SEC;
	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < sh->nprocs; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0)
			_exit(fz_worker(sh, i, fds));
	}
	for (i = 0; i < FZ_SHARED_FDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);

	/* Every worker must end within the grace time. */
	for (alive = sh->nprocs; alive;) {
		for (i = 0; i < sh->nprocs; i++) {
			if (pids[i] <= 0 || waitpid(pids[i], &status, WNOHANG) != pids[i])
				continue;
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				fz_fail(sh, "worker %d ended with status %#x", i,
					status);
			pids[i] = 0;
			alive--;
		}
		if (alive && now_ns() > sh->deadline + FZ_HANG_NS) {
			for (i = 0; i < sh->nprocs; i++) {
				if (pids[i] <= 0)
					continue;
				fz_fail(sh, "worker %d hangs after the run", i);
				kill(pids[i], SIGKILL);
				waitpid(pids[i], &status, 0);
			}
			break;
		}
		sleep_ms(20);
	}
	fz_report(_metadata, sh, (now_ns() - start) / 1e9);
	EXPECT_EQ(0, sh->nfails);
	if (failslab) {
		ksft_print_msg("ENOMEM %llu times\n",
			       (unsigned long long)sh->errs[ENOMEM]);
		EXPECT_LT(0, sh->errs[ENOMEM]) TH_LOG("failslab injected nothing");
	}
	fz_names_gone(_metadata, sh, count0);
	munmap(fz_mem, 3 * FZ_PAGE);
	munmap(sh, sizeof(*sh));
}

FIXTURE(fuzz) {
	int unused;
};

FIXTURE_SETUP(fuzz)
{
}

FIXTURE_TEARDOWN(fuzz)
{
}

TEST_F_TIMEOUT(fuzz, run, 600)
{
	fz_run(_metadata, env_u64("RL_FUZZ_SECS", FZ_SECS), false);
}

/* The failslab knobs this test sets, and their values while it runs. */
static const char *const fz_fs_knobs[][2] = {
	{ "probability", "10" },
	{ "interval", "1" },
	{ "times", "100000000" },
	{ "space", "0" },
	{ "verbose", "0" },
	{ "task-filter", "Y" },
	{ "ignore-gfp-wait", "N" },
	{ "cache-filter", "N" },
};

#define FZ_NKNOBS ARRAY_SIZE(fz_fs_knobs)

TEST_F_TIMEOUT(fuzz, failslab, 600)
{
	char old[FZ_NKNOBS][32], path[128];
	size_t i;

	if (access(FAILSLAB "/probability", W_OK) ||
	    access("/proc/self/make-it-fail", W_OK))
		SKIP(return, "%s", FZ_NO_FAILSLAB);
	for (i = 0; i < FZ_NKNOBS; i++) {
		snprintf(path, sizeof(path), FAILSLAB "/%s", fz_fs_knobs[i][0]);
		ASSERT_EQ(0, file_read(path, old[i], sizeof(old[i])))
			TH_LOG("%s: %s", path, strerror(errno));
	}
	/* Probability last: nothing fails before the filters are in place. */
	for (i = FZ_NKNOBS; i-- > 0;) {
		snprintf(path, sizeof(path), FAILSLAB "/%s", fz_fs_knobs[i][0]);
		ASSERT_EQ(0, file_write(path, fz_fs_knobs[i][1]))
			TH_LOG("%s: %s", path, strerror(errno));
	}
	fz_run(_metadata, env_u64("RL_FAILSLAB_SECS", FZ_FAILSLAB_SECS), true);
	for (i = 0; i < FZ_NKNOBS; i++) {
		snprintf(path, sizeof(path), FAILSLAB "/%s", fz_fs_knobs[i][0]);
		EXPECT_EQ(0, file_write(path, old[i]))
			TH_LOG("%s: %s", path, strerror(errno));
	}
}

/* ---- poll() against a non-blocking acquire, in random trees ---- */

#define PT_NODES	5
#define PT_ROUNDS	25
#define PT_CHECKS	40
#define PT_WAITERS	4

struct pt_tree {
	int fd[PT_NODES];
	char name[PT_NODES][RL_NAME_MAX];
	struct waiter w[PT_WAITERS];
	int nw;
};

static __u64 pt_rand(__u64 *s, __u64 n)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s % n;
}

/* A random tree of PT_NODES named limiters, node 0 its root. */
static int pt_build(struct pt_tree *pt, __u64 *s, int round)
{
	struct rl_parent p;
	int i;

	for (i = 0; i < PT_NODES; i++) {
		snprintf(pt->name[i], RL_NAME_MAX, "fzpt-%d-%d-%d", getpid(),
			 round, i);
		pt->fd[i] = ks_open();
		if (pt->fd[i] < 0 ||
		    ks_att(pt->fd[i], pt->name[i], RL_ATTACH_CREATE |
			   RL_ATTACH_EXCL, 0600, 1 + pt_rand(s, 20),
			   NS_PER_SEC, 1 + pt_rand(s, 5)))
			return -1;
		if (!i)
			continue;
		memset(&p, 0, sizeof(p));
		p.name_ptr = (__u64)(uintptr_t)pt->name[pt_rand(s, i)];
		p.weight = 1 + pt_rand(s, 3);
		if (ioctl(pt->fd[i], RL_IOC_SET_PARENT, &p))
			return -1;
	}
	return 0;
}

/* poll()'s answer for @fd now, then a non-blocking acquire of 1: agree? */
static int pt_agree(int fd, bool *readable)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct rl_acquire a;
	bool got;

	*readable = poll(&pfd, 1, 0) == 1;
	got = !ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a);
	if (!got && errno != EAGAIN)
		return -1;
	return *readable == got;
}

/*
 * In random trees with requests asleep at random levels, poll() says an
 * fd is readable when, and only when, a non-blocking acquire of 1 by it
 * would succeed now, at every level of its path (ratelimit(4)). A token
 * may come, or a sleeper take one, between the two calls: an answer
 * counts as wrong when the next try on the same fd is wrong the same way.
 */
TEST_F_TIMEOUT(fuzz, poll_tree, 300)
{
	__u64 s = env_u64("RL_FUZZ_SEED", now_ns() ^ getpid()) | 1;
	int round, i, n, ok, wrong = 0, checks = 0;
	struct pt_tree pt;
	bool r1, r2;

	ksft_print_msg("seed %llu (RL_FUZZ_SEED=%llu repeats it)\n",
		       (unsigned long long)s, (unsigned long long)s);
	for (round = 0; round < PT_ROUNDS; round++) {
		memset(&pt, 0, sizeof(pt));
		ASSERT_EQ(0, pt_build(&pt, &s, round));
		pt.nw = pt_rand(&s, PT_WAITERS + 1);
		for (i = 0; i < pt.nw; i++) {
			n = pt_rand(&s, PT_NODES);
			ASSERT_EQ(0, waiter_start(&pt.w[i], pt.fd[n],
						  1 + pt_rand(&s, 3),
						  now_ns() + (50 + pt_rand(&s, 400)) *
						  NS_PER_MS, 0));
		}
		for (i = 0; i < PT_CHECKS; i++) {
			n = pt_rand(&s, PT_NODES);
			ok = pt_agree(pt.fd[n], &r1);
			ASSERT_LE(0, ok) TH_LOG("acquire: %s", strerror(errno));
			checks++;
			if (!ok) {
				ok = pt_agree(pt.fd[n], &r2);
				ASSERT_LE(0, ok);
				if (!ok && r1 == r2) {
					wrong++;
					TH_LOG("round %d node %d: poll says %s, acquire %s",
					       round, n, r1 ? "ready" : "not ready",
					       r1 ? "refused" : "granted");
				}
			}
			if (pt_rand(&s, 4) == 0)
				sleep_ms(pt_rand(&s, 30));
		}
		for (i = 0; i < pt.nw; i++)
			pthread_join(pt.w[i].th, NULL);
		for (i = PT_NODES; i-- > 0;)
			close(pt.fd[i]);
	}
	TH_LOG("%d checks, %d wrong", checks, wrong);
	EXPECT_EQ(0, wrong);
}

TEST_HARNESS_MAIN
