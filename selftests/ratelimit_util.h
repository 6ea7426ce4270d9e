/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers shared by the /dev/ratelimit selftests: raw ioctls, a clock,
 * threads that sit in RL_IOC_ACQUIRE, named limiters, sysfs files and
 * children running as another user. Include after "kselftest_harness.h"
 * with _GNU_SOURCE defined.
 *
 * The helpers' names that would otherwise start with rl_ or RL_ start with
 * ks_ or KS_ (kselftest): rl_ names the library's functions, whose
 * signatures and error conventions differ (these return -1 and set errno,
 * as the ioctls do), and the driver's.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RL_SELFTEST_UTIL_H
#define RL_SELFTEST_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <linux/ratelimit_dev.h>

#include "../tools/common/sysfile.h"

#define KS_DEV		"/dev/ratelimit"
#define NS_PER_MS	1000000ULL
#define NS_PER_SEC	1000000000ULL
#define POISON_BYTE	0xa5
#define POISON64	0xa5a5a5a5a5a5a5a5ULL

/* Expect a syscall to fail with @err; evaluates @expr once. */
#define EXPECT_ERRNO(err, expr) do {		\
	int __ret = (expr);			\
	int __err = errno;			\
	EXPECT_EQ(-1, __ret);			\
	EXPECT_EQ(err, __err);			\
} while (0)

static inline __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

static inline void sleep_ms(unsigned int ms)
{
	struct timespec ts = {
		.tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * 1000000L,
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static inline int ks_open(void)
{
	return open(KS_DEV, O_RDWR | O_CLOEXEC);
}

static inline int ks_set(int fd, __u64 rate, __u64 period_ns, __u64 burst,
			 __u32 flags)
{
	struct rl_config c;

	memset(&c, 0, sizeof(c));
	c.rate = rate;
	c.period_ns = period_ns;
	c.burst = burst;
	c.flags = flags;
	return ioctl(fd, RL_IOC_SET_CONFIG, &c);
}

/* GET_CONFIG into a poisoned struct. */
static inline int ks_get(int fd, struct rl_config *c)
{
	memset(c, POISON_BYTE, sizeof(*c));
	return ioctl(fd, RL_IOC_GET_CONFIG, c);
}

/* GET_STATS with valid inputs and poisoned outputs. */
static inline int ks_stats(int fd, struct rl_stats *s)
{
	memset(s, POISON_BYTE, sizeof(*s));
	s->flags = 0;
	s->reserved0 = 0;
	return ioctl(fd, RL_IOC_GET_STATS, s);
}

/* An ACQUIRE request with the output fields poisoned. */
static inline void ks_acq_req(struct rl_acquire *a, __u64 count,
			      __u64 deadline, __u32 flags)
{
	memset(a, 0, sizeof(*a));
	a->count = count;
	a->deadline_ns = deadline;
	a->flags = flags;
	a->wait_ns = POISON64;
	a->ready_ns = POISON64;
	a->lag_ns = POISON64;
}

/* ACQUIRE with the output fields poisoned. */
static inline int ks_acq(int fd, __u64 count, __u64 deadline, __u32 flags,
			 struct rl_acquire *a)
{
	ks_acq_req(a, count, deadline, flags);
	return ioctl(fd, RL_IOC_ACQUIRE, a);
}

/* ks_acq() at priority @prio (RL_PRIO_*). */
static inline int ks_acq_prio(int fd, __u64 count, __u64 deadline,
			      __u32 flags, __u32 prio, struct rl_acquire *a)
{
	memset(a, 0, sizeof(*a));
	a->count = count;
	a->deadline_ns = deadline;
	a->flags = flags;
	a->priority = prio;
	a->wait_ns = POISON64;
	a->ready_ns = POISON64;
	a->lag_ns = POISON64;
	return ioctl(fd, RL_IOC_ACQUIRE, a);
}

/* RL_IOC_RELEASE (@cmd RL_IOC_RELEASE) or RL_IOC_REFUND of @count. */
static inline int ks_give(int fd, unsigned long cmd, __u64 count)
{
	struct rl_release r;

	memset(&r, 0, sizeof(r));
	r.count = count;
	return ioctl(fd, cmd, &r);
}

static inline int ks_release(int fd, __u64 count)
{
	return ks_give(fd, RL_IOC_RELEASE, count);
}

static inline int ks_refund(int fd, __u64 count)
{
	return ks_give(fd, RL_IOC_REFUND, count);
}

/* A new fd's private limiter, drained to @avail of @burst tokens (permits given back). */
static inline int ks_drained(struct __test_metadata *_metadata, __u64 rate,
			     __u64 period, __u64 burst, __u64 conc, __u64 avail)
{
	struct rl_config c = {
		.rate = rate, .period_ns = period, .burst = burst,
		.concurrency = conc,
	};
	struct rl_acquire a;
	int fd = ks_open();

	if (fd < 0)
		return fd;
	EXPECT_EQ(0, ioctl(fd, RL_IOC_SET_CONFIG, &c));
	if (burst > avail)
		EXPECT_EQ(0, ks_acq(fd, burst - avail, 0, RL_ACQUIRE_NONBLOCK, &a));
	if (conc && burst > avail)
		EXPECT_EQ(0, ks_release(fd, burst - avail));
	return fd;
}

/* RL_IOC_SET_CLIENT: this fd's default priority, weight and cap. */
static inline int ks_client(int fd, __u32 prio, __u32 weight, __u64 cap)
{
	struct rl_client_config cc;

	memset(&cc, 0, sizeof(cc));
	cc.priority = prio;
	cc.weight = weight;
	cc.cap = cap;
	return ioctl(fd, RL_IOC_SET_CLIENT, &cc);
}

/* RL_IOC_GET_CLIENT into a poisoned struct. */
static inline int ks_client_get(int fd, struct rl_client_config *cc)
{
	memset(cc, POISON_BYTE, sizeof(*cc));
	return ioctl(fd, RL_IOC_GET_CLIENT, cc);
}

/* Tokens in the bucket now, or POISON64 on error. */
static inline __u64 ks_avail(int fd)
{
	struct rl_stats s;

	return ks_stats(fd, &s) ? POISON64 : s.available;
}

static inline __u64 ks_nwaiters(int fd)
{
	struct rl_stats s;

	return ks_stats(fd, &s) ? POISON64 : s.waiters;
}

/* Wait until stats.waiters == @n; 0 on success, -1 after @timeout_ms. */
static inline int ks_wait_waiters(int fd, __u64 n, unsigned int timeout_ms)
{
	__u64 end = now_ns() + timeout_ms * NS_PER_MS;

	do {
		if (ks_nwaiters(fd) == n)
			return 0;
		sleep_ms(1);
	} while (now_ns() < end);
	return -1;
}

static inline long thread_nvcsw(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	return ru.ru_nvcsw;
}

/* Value of "key:\t<n>" in /proc/self/fdinfo/<fd>; -1 if absent. */
static inline int fdinfo_get(int fd, const char *key, __u64 *val,
			     char *raw, size_t rawlen)
{
	char path[64], buf[4096], pat[64];
	const char *p;
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -1;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	snprintf(pat, sizeof(pat), "\n%s:\t", key);
	p = strstr(buf, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	if (raw)
		snprintf(raw, rawlen, "%.*s", (int)strcspn(p, "\n"), p);
	*val = strtoull(p, NULL, 0);
	return 0;
}

/*
 * A thread doing one RL_IOC_ACQUIRE. The caller fills fd, count, deadline,
 * flags and prio (RL_PRIO_*, 0 for the fd's); the thread records the
 * result, the times around the call and its voluntary context switches
 * during it.
 */
struct waiter {
	int fd;
	__u64 count;
	__u64 deadline;
	__u32 flags;
	__u32 prio;
	int ret;
	int err;
	struct rl_acquire a;
	__u64 t_start;
	__u64 t_end;
	long nvcsw;
	int *order;		/* optional: append id here on return */
	int *order_len;
	int id;
	int done;
	pthread_t th;
};

static inline void *waiter_fn(void *arg)
{
	struct waiter *w = arg;
	long cs;

	cs = thread_nvcsw();
	w->t_start = now_ns();
	w->ret = ks_acq_prio(w->fd, w->count, w->deadline, w->flags, w->prio,
			     &w->a);
	w->err = errno;
	w->t_end = now_ns();
	w->nvcsw = thread_nvcsw() - cs;
	if (w->order)
		w->order[__atomic_fetch_add(w->order_len, 1, __ATOMIC_SEQ_CST)] =
			w->id;
	__atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/*
 * Start a waiter; @order, if not NULL, gets its @id appended when the
 * acquire returns (at index (*@order_len)++).
 */
static inline int waiter_start_ordered(struct waiter *w, int fd, __u64 count,
				       __u64 deadline, __u32 flags,
				       int *order, int *order_len, int id)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->count = count;
	w->deadline = deadline;
	w->flags = flags;
	w->ret = -2;
	w->order = order;
	w->order_len = order_len;
	w->id = id;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return pthread_create(&w->th, NULL, waiter_fn, w);
}

static inline int waiter_start(struct waiter *w, int fd, __u64 count,
			       __u64 deadline, __u32 flags)
{
	return waiter_start_ordered(w, fd, count, deadline, flags,
				    NULL, NULL, 0);
}

/* waiter_start_ordered() at priority @prio. */
static inline int waiter_start_prio(struct waiter *w, int fd, __u64 count,
				    __u64 deadline, __u32 prio, int *order,
				    int *order_len, int id)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->count = count;
	w->deadline = deadline;
	w->prio = prio;
	w->ret = -2;
	w->order = order;
	w->order_len = order_len;
	w->id = id;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return pthread_create(&w->th, NULL, waiter_fn, w);
}

/* Join within @timeout_ms: 0 on success, else the thread is left running. */
static inline int waiter_join(struct waiter *w, unsigned int timeout_ms)
{
	struct timespec ts;
	__u64 t;

	clock_gettime(CLOCK_REALTIME, &ts);
	t = (__u64)ts.tv_sec * NS_PER_SEC + ts.tv_nsec +
	    timeout_ms * NS_PER_MS;
	ts.tv_sec = t / NS_PER_SEC;
	ts.tv_nsec = t % NS_PER_SEC;
	return pthread_timedjoin_np(w->th, NULL, &ts);
}

static int sig_hits;

static inline void on_signal(int sig)
{
	(void)sig;
	__atomic_fetch_add(&sig_hits, 1, __ATOMIC_SEQ_CST);
}

static inline int signal_hits(void)
{
	return __atomic_load_n(&sig_hits, __ATOMIC_SEQ_CST);
}

/* Install on_signal() for @sig with @flags (0 or SA_RESTART). */
static inline int catch_signal(int sig, int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	__atomic_store_n(&sig_hits, 0, __ATOMIC_SEQ_CST);
	return sigaction(sig, &sa, NULL);
}

/* ---- named limiters ---- */

#define KS_SYSFS	"/sys/kernel/ratelimit"
#define KS_PARAMS	"/sys/module/ratelimit/parameters"

/* RL_IOC_ATTACH with @c as the config of a limiter it creates. */
static inline int ks_att_cfg(int fd, const char *name, __u32 flags,
			     __u32 mode, const struct rl_config *c)
{
	struct rl_attach at;

	memset(&at, 0, sizeof(at));
	at.name_ptr = (__u64)(uintptr_t)name;
	at.flags = flags;
	at.mode = mode;
	at.config = *c;
	return ioctl(fd, RL_IOC_ATTACH, &at);
}

static inline int ks_att(int fd, const char *name, __u32 flags, __u32 mode,
			 __u64 rate, __u64 period_ns, __u64 burst)
{
	struct rl_config c;

	memset(&c, 0, sizeof(c));
	c.rate = rate;
	c.period_ns = period_ns;
	c.burst = burst;
	return ks_att_cfg(fd, name, flags, mode, &c);
}

/* A new fd attached to @name, or -1 with errno set. */
static inline int ks_open_att(const char *name, __u32 flags, __u32 mode,
			      __u64 rate, __u64 period_ns, __u64 burst)
{
	int fd = ks_open();
	int err;

	if (fd < 0)
		return -1;
	if (ks_att(fd, name, flags, mode, rate, period_ns, burst)) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

static inline int ks_unl(int fd, const char *name)
{
	struct rl_unlink u;

	memset(&u, 0, sizeof(u));
	u.name_ptr = (__u64)(uintptr_t)name;
	return ioctl(fd, RL_IOC_UNLINK, &u);
}

/* RL_IOC_UNLINK through a fresh fd: 0, or -1 with errno set. */
static inline int ks_unl_name(const char *name)
{
	int fd = ks_open();
	int ret, err;

	if (fd < 0)
		return -1;
	ret = ks_unl(fd, name);
	err = errno;
	close(fd);
	errno = err;
	return ret;
}

/* Read a small file, without its trailing newline: 0 or -1 (errno). */
static inline int file_read(const char *path, char *buf, size_t len)
{
	ssize_t n = sysfile_read(path, buf, len);

	if (n < 0) {
		errno = (int)-n;
		return -1;
	}
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

/* Write @s to @path in one write(): 0 or -1 (errno). */
static inline int file_write(const char *path, const char *s)
{
	ssize_t n;
	int fd, err;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	err = errno;
	close(fd);
	if (n < 0) {
		errno = err;
		return -1;
	}
	if ((size_t)n != strlen(s)) {
		errno = EIO;
		return -1;
	}
	return 0;
}

/* A decimal u64 file: 0, or -1 (errno; EINVAL if it is not a number). */
static inline int file_u64(const char *path, __u64 *v)
{
	uint64_t val;
	int ret = sysfile_read_u64(path, 10, &val);

	if (ret) {
		errno = ret == -EIO ? EINVAL : -ret;
		return -1;
	}
	*v = val;
	return 0;
}

/* /sys/kernel/ratelimit/@name/@file (@file may be NULL: the directory). */
static inline const char *sysfs_path(char *buf, size_t len, const char *name,
				     const char *file)
{
	snprintf(buf, len, "%s/%s%s%s", KS_SYSFS, name, file ? "/" : "",
		 file ? file : "");
	return buf;
}

/*
 * The files of a limiter's directory. The helpers below take any other
 * @file as a key of one of them: of config for the tunables, weight and
 * parent (ks_config_keys), of stat for the rest.
 */
static const char *const ks_sysfs_files[] = {
	"stat", "config", "children", "client_list", "wait_histogram", NULL,
};

static const char *const ks_config_keys[] = {
	"rate", "period_ns", "burst", "unlimited", "concurrency", "fairness",
	"catchup", "backlog", "fed", "weight", "parent", NULL,
};

static inline int ks_listed(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (!strcmp(*list, s))
			return 1;
	return 0;
}

/*
 * The value of line "@key VALUE" of sysfs file stat or config of @name,
 * as sysfs_read(): 0 or -1 (errno; ENOENT for a key not there). A root's
 * config has no parent line: its parent reads as "".
 */
static inline int sysfs_key(const char *name, const char *key, char *buf,
			    size_t len)
{
	const char *file = ks_listed(ks_config_keys, key) ? "config" : "stat";
	size_t klen = strlen(key);
	char path[256], text[4096];
	char *line, *save = NULL;

	if (file_read(sysfs_path(path, sizeof(path), name, file), text,
		      sizeof(text)))
		return -1;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, key, klen) || line[klen] != ' ')
			continue;
		snprintf(buf, len, "%s", line + klen + 1);
		return 0;
	}
	if (!strcmp(key, "parent")) {
		snprintf(buf, len, "%s", "");
		return 0;
	}
	errno = ENOENT;
	return -1;
}

static inline int sysfs_read(const char *name, const char *file, char *buf,
			     size_t len)
{
	char path[256];

	if (!ks_listed(ks_sysfs_files, file))
		return sysfs_key(name, file, buf, len);
	return file_read(sysfs_path(path, sizeof(path), name, file), buf, len);
}

/* A write of @s to @file, or of the line "@file @s" to config. */
static inline int sysfs_write(const char *name, const char *file,
			      const char *s)
{
	char path[256], line[512];

	if (ks_listed(ks_sysfs_files, file))
		return file_write(sysfs_path(path, sizeof(path), name, file), s);
	snprintf(line, sizeof(line), "%s %s", file, s);
	return file_write(sysfs_path(path, sizeof(path), name, "config"), line);
}

/* A decimal value of stat or config, or POISON64 on error. */
static inline __u64 sysfs_u64(const char *name, const char *file)
{
	unsigned long long v;
	char buf[64], *end;

	if (sysfs_key(name, file, buf, sizeof(buf)))
		return POISON64;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (!buf[0] || *end || errno)
		return POISON64;
	return v;
}

/* 1 if /sys/kernel/ratelimit/@name is a directory, else 0. */
static inline int sysfs_exists(const char *name)
{
	char path[256];
	struct stat st;

	if (stat(sysfs_path(path, sizeof(path), name, NULL), &st))
		return 0;
	return S_ISDIR(st.st_mode);
}

/* /sys/kernel/ratelimit/count, or POISON64. */
static inline __u64 ks_named_count(void)
{
	__u64 v;

	return file_u64(KS_SYSFS "/count", &v) ? POISON64 : v;
}

/* Module parameter @param of ratelimit, or POISON64. */
static inline __u64 param_get(const char *param)
{
	char path[256];
	__u64 v;

	snprintf(path, sizeof(path), "%s/%s", KS_PARAMS, param);
	return file_u64(path, &v) ? POISON64 : v;
}

static inline int param_set(const char *param, __u64 v)
{
	char path[256], buf[32];

	snprintf(path, sizeof(path), "%s/%s", KS_PARAMS, param);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return file_write(path, buf);
}

/* ---- running as another user ---- */

/* Credentials for run_as(): uid, gid and up to 4 supplementary groups. */
struct ks_cred {
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[4];
};

/* Drop to @c for good (groups, then gid, then uid): 0 or -1. */
static inline int ks_become(const struct ks_cred *c)
{
	if (setgroups(c->ngroups, c->groups))
		return -1;
	if (setgid(c->gid) || setuid(c->uid))
		return -1;
	if (getuid() != c->uid || geteuid() != c->uid || getegid() != c->gid)
		return -1;
	return 0;
}

#define RUN_AS_MAX	16

/* A child started by child_start(): its pid and the read end of its pipe. */
struct ks_child {
	pid_t pid;
	int fd;
};

/*
 * Run @fn(@arg, out) in a child process with credentials @c (NULL: the
 * caller's). @fn fills up to RUN_AS_MAX ints of out (preset to -1), which
 * child_finish() reads back. 0 or -1.
 */
static inline int child_start(struct ks_child *ch, const struct ks_cred *c,
			      void (*fn)(void *arg, int *out), void *arg)
{
	int res[RUN_AS_MAX], p[2], i;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	fflush(stdout);
	fflush(stderr);
	ch->pid = fork();
	if (ch->pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (ch->pid == 0) {
		close(p[0]);
		if (c && ks_become(c))
			_exit(2);
		for (i = 0; i < RUN_AS_MAX; i++)
			res[i] = -1;
		fn(arg, res);
		if (write(p[1], res, sizeof(res)) != sizeof(res))
			_exit(3);
		_exit(0);
	}
	close(p[1]);
	ch->fd = p[0];
	return 0;
}

/*
 * Collect the ints of a child into @out (RUN_AS_MAX of them, -1 if
 * missing). 0 when it dropped its credentials, reported and exited with 0
 * within @timeout_ms; else -1 (the child is killed).
 */
static inline int child_finish(struct ks_child *ch, int *out,
			       unsigned int timeout_ms)
{
	int res[RUN_AS_MAX], status, i;
	size_t got = 0;
	__u64 end;

	for (i = 0; i < RUN_AS_MAX; i++)
		out[i] = -1;
	end = now_ns() + timeout_ms * NS_PER_MS;
	while (got < sizeof(res)) {
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		__u64 t = now_ns();
		ssize_t n;

		if (t >= end || poll(&pfd, 1, (end - t) / NS_PER_MS + 1) <= 0)
			break;
		n = read(ch->fd, (char *)res + got, sizeof(res) - got);
		if (n <= 0)
			break;
		got += n;
	}
	close(ch->fd);
	if (got < sizeof(res))
		kill(ch->pid, SIGKILL);
	if (waitpid(ch->pid, &status, 0) != ch->pid)
		return -1;
	if (got < sizeof(res) || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	memcpy(out, res, sizeof(res));
	return 0;
}

/* child_start() and child_finish() in one. */
static inline int run_as(const struct ks_cred *c,
			 void (*fn)(void *arg, int *out), void *arg,
			 int *out, unsigned int timeout_ms)
{
	struct ks_child ch;
	int i;

	if (child_start(&ch, c, fn, arg)) {
		for (i = 0; i < RUN_AS_MAX; i++)
			out[i] = -1;
		return -1;
	}
	return child_finish(&ch, out, timeout_ms);
}

/* 0 if @ret is 0, else errno: for the ints of run_as(). */
static inline int ret_err(int ret)
{
	return ret ? errno : 0;
}

#endif /* RL_SELFTEST_UTIL_H */
