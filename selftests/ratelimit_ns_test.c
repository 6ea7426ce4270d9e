// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of names scoped by the IPC namespace, as in a container: a
 * child that unshares its IPC namespace (CLONE_NEWIPC) sees none of the
 * host's names and the host none of its own (except, for root, under
 * /sys/kernel/ratelimit/ipc:INUM/); processes of one namespace share its
 * names; a namespace has its own quota of names; and its names, persistent
 * ones too, go once no process, file or mount holds the namespace.
 *
 * Each child reports through a pipe: results at its exit (child_start()),
 * and, where the parent must look while it lives, its namespace's inode
 * number on a second pipe before it waits for a byte on a third.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_rlctl.h"
#include "ratelimit_util.h"

#define SLOW_PERIOD	(10 * NS_PER_SEC)
#define HOST_BURST	5
#define NS_BURST	7
#define CHILD_MS	5000
/* The module looks for namespaces gone once a second. */
#define REAP_MS		5000

#define NAME(buf, tag) \
	snprintf(buf, sizeof(buf), "rlt-%d-%s", getpid(), tag)

/* A new slow limiter @name of burst @burst, persistent if @persist. */
static int create(const char *name, __u64 burst, int persist)
{
	return ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL |
			   (persist ? RL_ATTACH_PERSIST : 0), 0644, 1,
			   SLOW_PERIOD, burst);
}

/* The burst of the limiter @name of this namespace, or -errno. */
static int burst_of(const char *name)
{
	struct rl_config c;
	int fd = ks_open(), ret;

	if (fd < 0)
		return -errno;
	ret = ks_att(fd, name, 0, 0, 1, NS_PER_SEC, 0);
	ret = ret ? -errno : ks_get(fd, &c) ? -errno : (int)c.burst;
	close(fd);
	return ret;
}

/* Inode number of the IPC namespace of @pid (0: this process), or 0. */
static unsigned int ipc_inum(pid_t pid)
{
	char path[64];
	struct stat st;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/ipc", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/ipc");
	return stat(path, &st) ? 0 : (unsigned int)st.st_ino;
}

/* Is there /sys/kernel/ratelimit/ipc:@inum[/@name]? */
static int ns_dir(unsigned int inum, const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/ipc:%u%s%s", KS_SYSFS, inum,
		 name ? "/" : "", name ? name : "");
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* Wait up to @ms for /sys/kernel/ratelimit/ipc:@inum to go: 0 or -1. */
static int ns_dir_gone(unsigned int inum, unsigned int ms)
{
	__u64 end = now_ns() + ms * NS_PER_MS;

	while (ns_dir(inum, NULL)) {
		if (now_ns() >= end)
			return -1;
		sleep_ms(20);
	}
	return 0;
}

static int set_parent(int fd, const char *pname)
{
	struct rl_parent p = { .name_ptr = (__u64)(uintptr_t)pname };

	return ioctl(fd, RL_IOC_SET_PARENT, &p);
}

/* A child's pipes to the parent: it sends its inode number, waits for a byte. */
struct ns_child {
	const char *name;
	const char *hparent;
	int ready[2];
	int go[2];
	int persist;
};

static int ns_child_pipes(struct ns_child *c)
{
	return pipe2(c->ready, O_CLOEXEC) || pipe2(c->go, O_CLOEXEC) ? -1 : 0;
}

/* In the child: tell the parent @inum, then wait for its byte or EOF. */
static void ns_child_wait(struct ns_child *c, unsigned int inum)
{
	char b;

	close(c->ready[0]);
	close(c->go[1]);
	if (write(c->ready[1], &inum, sizeof(inum)) != sizeof(inum))
		_exit(4);
	if (read(c->go[0], &b, 1) < 0)
		_exit(5);
}

/* In the parent: the child's inode number, or 0. */
static unsigned int ns_child_ready(struct ns_child *c)
{
	unsigned int inum = 0;

	close(c->ready[1]);
	close(c->go[0]);
	if (read(c->ready[0], &inum, sizeof(inum)) != sizeof(inum))
		inum = 0;
	close(c->ready[0]);
	return inum;
}

static void ns_child_go(struct ns_child *c)
{
	close(c->go[1]);
}

/*
 * In a new IPC namespace: what of the host's name it sees, then its own
 * limiter of the same name, held while the parent looks.
 */
static void in_new_ns(void *arg, int *out)
{
	struct ns_child *c = arg;
	int fd;

	out[0] = ret_err(unshare(CLONE_NEWIPC));
	if (out[0])
		return;
	out[1] = -burst_of(c->name);
	out[2] = ret_err(ks_unl_name(c->name));
	out[3] = (int)ks_named_count();
	fd = create(c->name, NS_BURST, c->persist);
	out[4] = fd < 0 ? errno : 0;
	out[5] = burst_of(c->name);
	out[6] = (int)ks_named_count();
	/* The host's name is no parent to take either. */
	out[7] = fd < 0 ? -1 : ret_err(set_parent(fd, c->hparent));
	ns_child_wait(c, ipc_inum(0));
	if (fd >= 0)
		close(fd);
}

TEST(names_are_per_namespace)
{
	char name[RL_NAME_MAX], hparent[RL_NAME_MAX], path[256], buf[64];
	struct ns_child c = { .persist = 1 };
	int out[RUN_AS_MAX], hfd, pfd;
	struct ks_child ch;
	unsigned int inum;

	NAME(name, "api");
	NAME(hparent, "top");
	c.name = name;
	c.hparent = hparent;
	ASSERT_NE(0U, ipc_inum(0));
	hfd = create(name, HOST_BURST, 0);
	ASSERT_LE(0, hfd);
	pfd = create(hparent, HOST_BURST, 0);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, ns_child_pipes(&c));
	ASSERT_EQ(0, child_start(&ch, NULL, in_new_ns, &c));
	inum = ns_child_ready(&c);
	ASSERT_NE(0U, inum);
	EXPECT_NE(ipc_inum(0), inum);
	/* Root of the host sees the child's name apart from its own. */
	EXPECT_TRUE(ns_dir(inum, name));
	snprintf(path, sizeof(path), "%s/ipc:%u/%s/config", KS_SYSFS, inum,
		 name);
	EXPECT_EQ(0, file_read(path, buf, sizeof(buf)));
	EXPECT_EQ(HOST_BURST, (int)sysfs_u64(name, "burst"));
	EXPECT_EQ(HOST_BURST, burst_of(name));
	ns_child_go(&c);
	ASSERT_EQ(0, child_finish(&ch, out, CHILD_MS));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(ENOENT, out[1]);
	EXPECT_EQ(ENOENT, out[2]);
	EXPECT_EQ(0, out[3]);
	EXPECT_EQ(0, out[4]);
	EXPECT_EQ(NS_BURST, out[5]);
	EXPECT_EQ(1, out[6]);
	EXPECT_EQ(ENOENT, out[7]);
	/* The child's namespace died with it: its persistent name goes. */
	EXPECT_EQ(0, ns_dir_gone(inum, REAP_MS));
	EXPECT_EQ(HOST_BURST, burst_of(name));
	close(hfd);
	close(pfd);
}

/* A process of the namespace, forked after the name was made: out[0] its burst. */
static void same_ns_user(void *arg, int *out)
{
	out[0] = burst_of(arg);
}

/* Unshare, create, and let a child of the same namespace attach. */
static void shared_in_ns(void *arg, int *out)
{
	int sub[RUN_AS_MAX], fd;

	out[0] = ret_err(unshare(CLONE_NEWIPC));
	fd = create(arg, NS_BURST, 0);
	out[1] = fd < 0 ? errno : 0;
	out[2] = run_as(NULL, same_ns_user, arg, sub, CHILD_MS);
	out[3] = sub[0];
	if (fd >= 0)
		close(fd);
}

TEST(shared_within_a_namespace)
{
	char name[RL_NAME_MAX];
	int out[RUN_AS_MAX];

	NAME(name, "pod");
	ASSERT_EQ(0, run_as(NULL, shared_in_ns, name, out, 2 * CHILD_MS));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(0, out[1]);
	EXPECT_EQ(0, out[2]);
	EXPECT_EQ(NS_BURST, out[3]);
	/* Never the host's. */
	EXPECT_EQ(-ENOENT, burst_of(name));
}

struct enter_arg {
	int fd;
	char name[RL_NAME_MAX];
};

/* setns(2) into the namespace of an nsfs fd: out[0], then out[1] its name's burst. */
static void enter_ns(void *arg, int *out)
{
	const struct enter_arg *e = arg;

	out[0] = ret_err(setns(e->fd, CLONE_NEWIPC));
	out[1] = burst_of(e->name);
}

TEST(a_held_namespace_keeps_its_names)
{
	struct ns_child c = { .persist = 1 };
	int out[RUN_AS_MAX], nsfd;
	struct enter_arg e;
	struct ks_child ch;
	unsigned int inum;
	char path[64];

	NAME(e.name, "held");
	c.name = e.name;
	c.hparent = e.name;
	ASSERT_EQ(0, ns_child_pipes(&c));
	ASSERT_EQ(0, child_start(&ch, NULL, in_new_ns, &c));
	inum = ns_child_ready(&c);
	ASSERT_NE(0U, inum);
	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", ch.pid);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, nsfd);
	ns_child_go(&c);
	ASSERT_EQ(0, child_finish(&ch, out, CHILD_MS));
	EXPECT_EQ(0, out[4]);
	/* No process is left in it, but a file holds it: the name stays. */
	sleep_ms(2500);
	EXPECT_TRUE(ns_dir(inum, e.name));
	e.fd = nsfd;
	ASSERT_EQ(0, run_as(NULL, enter_ns, &e, out, CHILD_MS));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(NS_BURST, out[1]);
	close(nsfd);
	EXPECT_EQ(0, ns_dir_gone(inum, REAP_MS));
}

/* Unshare, then create names base0.. until one fails: out[1+i] each errno. */
static void fill_ns(void *arg, int *out)
{
	char name[RL_NAME_MAX + 8];
	int i, fd;

	out[0] = ret_err(unshare(CLONE_NEWIPC));
	out[4] = (int)ipc_inum(0);
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "%s%d", (const char *)arg, i);
		fd = create(name, NS_BURST, 1);
		out[1 + i] = fd < 0 ? errno : 0;
		if (fd >= 0)
			close(fd);
	}
}

TEST(quota_per_namespace)
{
	__u64 quota = param_get("max_named_per_ns");
	char name[RL_NAME_MAX], hname[RL_NAME_MAX + 8];
	int out[RUN_AS_MAX], i, fd;

	ASSERT_EQ(64ULL, quota);
	NAME(name, "q");
	ASSERT_EQ(0, param_set("max_named_per_ns", 2));
	EXPECT_EQ(0, run_as(NULL, fill_ns, name, out, CHILD_MS));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(0, out[1]);
	EXPECT_EQ(0, out[2]);
	EXPECT_EQ(EDQUOT, out[3]);
	EXPECT_EQ(0, ns_dir_gone((unsigned int)out[4], REAP_MS));
	/* The host's names are not counted by it. */
	for (i = 0; i < 3; i++) {
		snprintf(hname, sizeof(hname), "%s%d", name, i);
		fd = create(hname, HOST_BURST, 0);
		EXPECT_LE(0, fd);
		if (fd >= 0)
			close(fd);
	}
	EXPECT_EQ(0, param_set("max_named_per_ns", quota));
}

/*
 * A process in a new IPC namespace that does what the parent asks, one
 * byte at a time, and answers an int: the parent looks and acts between.
 */
struct remote {
	pid_t pid;
	int cmd, res;
	unsigned int inum;
	const char *name;
};

/* In the remote: its own limiter named @name, kept open. */
static int remote_fd = -1;

static int remote_op(const char *name, char op)
{
	char path[] = "/proc/self/ns/ipc";
	struct rl_share sh = { 0 };
	int ret;

	switch (op) {
	case 'a':	/* the burst of @name here, or -errno */
		return burst_of(name);
	case 'u':	/* unlink @name here: 0 or errno */
		return ret_err(ks_unl_name(name));
	case 'n':	/* the count of names here */
		return (int)ks_named_count();
	case 'c':	/* create its own @name: 0 or errno */
		remote_fd = create(name, NS_BURST, 1);
		return remote_fd < 0 ? errno : 0;
	case 's':	/* share its own limiter into its namespace: errno */
		sh.ns_fd = open(path, O_RDONLY | O_CLOEXEC);
		ret = ret_err(ioctl(remote_fd, RL_IOC_SHARE, &sh));
		close(sh.ns_fd);
		return ret;
	}
	return -1;
}

static void remote_main(struct remote *r, int cmd, int res)
{
	unsigned int inum;
	int v;
	char op;

	if (unshare(CLONE_NEWIPC))
		_exit(2);
	inum = ipc_inum(0);
	if (write(res, &inum, sizeof(inum)) != sizeof(inum))
		_exit(3);
	while (read(cmd, &op, 1) == 1 && op != 'q') {
		v = remote_op(r->name, op);
		if (write(res, &v, sizeof(v)) != sizeof(v))
			_exit(4);
	}
	_exit(0);
}

static int remote_start(struct remote *r, const char *name)
{
	int cmd[2], res[2];

	r->name = name;
	if (pipe2(cmd, O_CLOEXEC) || pipe2(res, O_CLOEXEC))
		return -1;
	r->pid = fork();
	if (r->pid < 0)
		return -1;
	if (!r->pid) {
		close(cmd[1]);
		close(res[0]);
		remote_main(r, cmd[0], res[1]);
	}
	close(cmd[0]);
	close(res[1]);
	r->cmd = cmd[1];
	r->res = res[0];
	if (read(r->res, &r->inum, sizeof(r->inum)) != sizeof(r->inum))
		return -1;
	return 0;
}

/* What the remote answers to @op, or INT_MIN when it does not. */
static int remote_do(struct remote *r, char op)
{
	struct pollfd pfd = { .fd = r->res, .events = POLLIN };
	int v;

	if (write(r->cmd, &op, 1) != 1 || poll(&pfd, 1, CHILD_MS) != 1 ||
	    read(r->res, &v, sizeof(v)) != sizeof(v))
		return INT_MIN;
	return v;
}

/* Let the remote go, and collect it. */
static void remote_stop(struct remote *r)
{
	int status;
	char q = 'q';

	if (write(r->cmd, &q, 1) != 1)
		kill(r->pid, SIGKILL);
	close(r->cmd);
	close(r->res);
	waitpid(r->pid, &status, 0);
}

/* RL_IOC_SHARE on @fd: 0 or -1 (errno). */
static int share(int fd, int ns_fd, __u32 flags, __u64 reserved)
{
	struct rl_share sh = { .ns_fd = ns_fd, .flags = flags };

	sh.reserved[2] = reserved;
	return ioctl(fd, RL_IOC_SHARE, &sh);
}

struct share_arg {
	const char *name;
	int ns_fd;
};

/* As a user who may attach: out[0] the errno of the share. */
static void share_as_user(void *arg, int *out)
{
	const struct share_arg *a = arg;
	int fd = ks_open_att(a->name, 0, 0, 1, NS_PER_SEC, 0);

	out[0] = fd < 0 ? -errno : ret_err(share(fd, a->ns_fd, 0, 0));
}

static const struct ks_cred user4242 = { 4242, 4242, 0, { 0 } };

/* Is /sys/kernel/ratelimit/ipc:@inum/@name a link to the host's directory? */
static int ns_link(unsigned int inum, const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/ipc:%u/%s", KS_SYSFS, inum, name);
	return !lstat(path, &st) && S_ISLNK(st.st_mode) && !stat(path, &st) &&
	       S_ISDIR(st.st_mode);
}

TEST(share_is_explicit_and_checked)
{
	int hfd, nsfd, selffd, nullfd, pfd, fresh, out[RUN_AS_MAX];
	char name[RL_NAME_MAX], path[64];
	struct share_arg sa;
	struct remote r;

	NAME(name, "db");
	/* First, so that it holds no copy of the host's fd. */
	ASSERT_EQ(0, remote_start(&r, name));
	hfd = create(name, HOST_BURST, 0);
	ASSERT_LE(0, hfd);
	EXPECT_EQ(-ENOENT, remote_do(&r, 'a'));
	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", r.pid);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, nsfd);

	/* Bad requests change nothing. */
	selffd = open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC);
	nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pfd = ks_open();
	fresh = ks_open();
	ASSERT_LE(0, selffd);
	ASSERT_LE(0, nullfd);
	ASSERT_EQ(0, ks_set(pfd, 1, NS_PER_SEC, 1, 0));
	EXPECT_ERRNO(EBADF, share(hfd, -1, 0, 0));
	EXPECT_ERRNO(EINVAL, share(hfd, nullfd, 0, 0));
	EXPECT_ERRNO(EINVAL, share(hfd, selffd, 0, 0));
	EXPECT_ERRNO(EINVAL, share(hfd, nsfd, 2, 0));
	EXPECT_ERRNO(EINVAL, share(hfd, nsfd, 0, 1));
	EXPECT_ERRNO(EINVAL, share(pfd, nsfd, 0, 0));
	EXPECT_ERRNO(EBADFD, share(fresh, nsfd, 0, 0));
	EXPECT_ERRNO(ENOENT, share(hfd, nsfd, RL_SHARE_REVOKE, 0));
	close(selffd);
	close(nullfd);
	close(pfd);
	close(fresh);
	/* Not over a name of the namespace's own; not one of its limiters. */
	EXPECT_EQ(0, remote_do(&r, 'c'));
	EXPECT_ERRNO(EEXIST, share(hfd, nsfd, 0, 0));
	EXPECT_EQ(EINVAL, remote_do(&r, 's'));
	EXPECT_EQ(NS_BURST, remote_do(&r, 'a'));
	EXPECT_EQ(0, remote_do(&r, 'u'));
	/* Only with CAP_SYS_ADMIN, whatever the mode bits give. */
	sa.name = name;
	sa.ns_fd = nsfd;
	EXPECT_EQ(0, run_as(&user4242, share_as_user, &sa, out, CHILD_MS));
	EXPECT_EQ(EPERM, out[0]);
	EXPECT_EQ(-ENOENT, remote_do(&r, 'a'));

	/* Shared: the namespace finds it by its name, sysfs links it. */
	ASSERT_EQ(0, share(hfd, nsfd, 0, 0));
	EXPECT_ERRNO(EEXIST, share(hfd, nsfd, 0, 0));
	EXPECT_TRUE(ns_link(r.inum, name));
	EXPECT_EQ(HOST_BURST, remote_do(&r, 'a'));
	EXPECT_EQ(1, remote_do(&r, 'n'));
	/* Revoked: gone from there, and the namespace with no name too. */
	EXPECT_EQ(0, share(hfd, nsfd, RL_SHARE_REVOKE, 0));
	EXPECT_ERRNO(ENOENT, share(hfd, nsfd, RL_SHARE_REVOKE, 0));
	EXPECT_EQ(-ENOENT, remote_do(&r, 'a'));
	EXPECT_FALSE(ns_dir(r.inum, NULL));
	/* Unlinked there: the host's name stays. */
	ASSERT_EQ(0, share(hfd, nsfd, 0, 0));
	EXPECT_EQ(0, remote_do(&r, 'u'));
	EXPECT_EQ(-ENOENT, remote_do(&r, 'a'));
	EXPECT_EQ(HOST_BURST, burst_of(name));
	/* The host's name gone, the share goes. */
	ASSERT_EQ(0, share(hfd, nsfd, 0, 0));
	EXPECT_EQ(HOST_BURST, remote_do(&r, 'a'));
	close(hfd);
	EXPECT_EQ(-ENOENT, remote_do(&r, 'a'));
	EXPECT_FALSE(ns_dir(r.inum, NULL));
	remote_stop(&r);
	close(nsfd);
}

struct rlctl_arg {
	struct ns_child c;
	const char *own;
	const char *dir;
};

/* Is @name a word of @text? */
static int listed(const char *text, const char *name)
{
	size_t len = strlen(name);
	const char *at;

	for (at = strstr(text, name); at; at = strstr(at + 1, name))
		if ((at == text || at[-1] == '\n' || at[-1] == ' ') &&
		    (at[len] == ' ' || at[len] == '\n' || at[len] == '\0'))
			return 1;
	return 0;
}

/*
 * In a new namespace, rlctl lists its names only: out[1..3] before the
 * host shares its limiter, out[4..6] after.
 */
static void rlctl_in_ns(void *arg, int *out)
{
	struct rlctl_arg *a = arg;
	struct run r;

	out[0] = ret_err(unshare(CLONE_NEWIPC));
	rlctl(&r, NULL, a->dir, "list", NULL);
	out[1] = r.status == 0 && !listed(r.out, a->c.name);
	rlctl(&r, NULL, a->dir, "create", a->own, "5/s", NULL);
	out[2] = r.status;
	rlctl(&r, NULL, a->dir, "list", NULL);
	out[3] = r.status == 0 && listed(r.out, a->own) && !listed(r.out, a->c.name);
	ns_child_wait(&a->c, ipc_inum(0));
	rlctl(&r, NULL, a->dir, "list", NULL);
	out[4] = r.status == 0 && listed(r.out, a->own) && listed(r.out, a->c.name);
	rlctl(&r, NULL, a->dir, "show", a->c.name, NULL);
	out[5] = r.status;
	rlctl(&r, NULL, a->dir, "show", a->own, NULL);
	out[6] = r.status;
}

TEST(rlctl_lists_the_namespace_and_shares)
{
	char name[RL_NAME_MAX], own[RL_NAME_MAX], dir[64], pid[16];
	struct rlctl_arg a = { .c = { .persist = 0 } };
	int out[RUN_AS_MAX], hfd;
	struct ks_child ch;
	unsigned int inum;
	struct run r;

	NAME(name, "hostdb");
	NAME(own, "mine");
	make_dir(dir, sizeof(dir));
	ASSERT_NE(0, dir[0]);
	a.c.name = name;
	a.own = own;
	a.dir = dir;
	hfd = create(name, HOST_BURST, 0);
	ASSERT_LE(0, hfd);
	ASSERT_EQ(0, ns_child_pipes(&a.c));
	ASSERT_EQ(0, child_start(&ch, NULL, rlctl_in_ns, &a));
	inum = ns_child_ready(&a.c);
	ASSERT_NE(0U, inum);
	rlctl(&r, NULL, dir, "list", NULL);
	EXPECT_TRUE(listed(r.out, name));
	EXPECT_FALSE(listed(r.out, own));
	snprintf(pid, sizeof(pid), "%d", ch.pid);
	rlctl(&r, NULL, dir, "share", name, pid, NULL);
	EXPECT_EQ(0, r.status) show(_metadata, &r);
	rlctl(&r, NULL, dir, "share", name, pid, NULL);
	EXPECT_EQ(1, r.status);
	EXPECT_NE(NULL, strstr(r.err, "has a limiter named"));
	ns_child_go(&a.c);
	ASSERT_EQ(0, child_finish(&ch, out, 2 * CHILD_MS));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(1, out[1]);
	EXPECT_EQ(0, out[2]);
	EXPECT_EQ(1, out[3]);
	EXPECT_EQ(1, out[4]);
	EXPECT_EQ(0, out[5]);
	EXPECT_EQ(0, out[6]);
	/* Its persistent name went with it. */
	EXPECT_EQ(0, ns_dir_gone(inum, REAP_MS));
	close(hfd);
	remove_dir(dir);
}

TEST_HARNESS_MAIN
