// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of named limiters seen from a container: a process that is
 * root only inside a new user namespace, as after "unshare -U -r" by the
 * unprivileged user 4242 (uid and gid 0 in the namespace map to 4242 on the
 * host, and every capability it holds is the namespace's), and, last, one
 * that has its own IPC namespace too, as a rootless container.
 *
 * Every check uses host ids and capabilities of the initial user
 * namespace, so such a "root" is user 4242: it may not use, tune or unlink
 * limiters that the mode bits deny to 4242, nor raise module-wide limits
 * or priorities, nor share a limiter into a namespace; what it creates is
 * owned by 4242 and counts against 4242's quota. In the host's IPC
 * namespace its names are the host's; in its own, they are its own.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"

#define CHILD_MS	5000
#define UNS_ID		4242
#define USERNS_KNOB	"/proc/sys/kernel/unprivileged_userns_clone"

static const struct ks_cred user = { UNS_ID, UNS_ID, 0, { 0 } };

/* Write @s to /proc/self/@file: 0 or -1. */
static int proc_self_write(const char *file, const char *s)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/%s", file);
	return file_write(path, s);
}

/*
 * Become root of a new user namespace that maps 0 to the caller's ids,
 * as "unshare -U -r" does: 0, or an errno.
 */
static int enter_userns(void)
{
	char map[32];
	uid_t uid = getuid();
	gid_t gid = getgid();

	/* Dropping root made it undumpable: /proc/self would be root's. */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) || unshare(CLONE_NEWUSER))
		return errno;
	snprintf(map, sizeof(map), "0 %u 1", (unsigned int)uid);
	if (proc_self_write("uid_map", map))
		return errno;
	if (proc_self_write("setgroups", "deny"))
		return errno;
	snprintf(map, sizeof(map), "0 %u 1", (unsigned int)gid);
	if (proc_self_write("gid_map", map))
		return errno;
	return geteuid() == 0 && getegid() == 0 ? 0 : EPERM;
}

/* errno of opening @path for writing, 0 if it opened. */
static int open_write_err(const char *path)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/* Inode number of this process's IPC namespace, or 0. */
static unsigned int ipc_inum_self(void)
{
	struct stat st;

	return stat("/proc/self/ns/ipc", &st) ? 0 : (unsigned int)st.st_ino;
}

/* A kernel without CONFIG_USER_NS has no /proc/self/ns/user: skip there. */
static int have_userns(void)
{
	return !access("/proc/self/ns/user", F_OK);
}

#define NO_USERNS	"no user namespaces (CONFIG_USER_NS)"

FIXTURE(userns) {
	char name[RL_NAME_MAX];
	char knob[16];		/* USERNS_KNOB before the test, "" if none */
	__u64 per_user;		/* max_named_per_user before the test */
};

FIXTURE_SETUP(userns)
{
	snprintf(self->name, sizeof(self->name), "userns-%d", getpid());
	self->knob[0] = 0;
	/* Debian's kernels can forbid unprivileged user namespaces. */
	if (!access(USERNS_KNOB, F_OK)) {
		ASSERT_EQ(0, file_read(USERNS_KNOB, self->knob,
				       sizeof(self->knob)));
		ASSERT_EQ(0, file_write(USERNS_KNOB, "1"));
	}
	self->per_user = param_get("max_named_per_user");
}

FIXTURE_TEARDOWN(userns)
{
	ks_unl_name(self->name);
	if (self->knob[0])
		file_write(USERNS_KNOB, self->knob);
	param_set("max_named_per_user", self->per_user);
}

/* What a container's root tries on a limiter of the host's root. */
static void try_root_owned(void *arg, int *out)
{
	const char *name = arg;
	char path[128];

	out[0] = enter_userns();
	if (out[0])
		return;
	out[1] = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0) < 0 ? errno : 0;
	out[2] = ks_unl_name(name) ? errno : 0;
	out[3] = open_write_err(sysfs_path(path, sizeof(path), name,
					   "config"));
	out[4] = open_write_err(KS_PARAMS "/max_named");
	out[5] = open_write_err(KS_PARAMS "/max_named_per_user");
}

TEST_F(userns, root_owned_limiter_denied)
{
	int out[RUN_AS_MAX];
	struct rl_config c;
	__u64 max_named = param_get("max_named");
	int fd;

	if (!have_userns())
		SKIP(return, NO_USERNS);

	fd = ks_open_att(self->name, RL_ATTACH_CREATE | RL_ATTACH_PERSIST,
			 0600, 10, NS_PER_SEC, 10);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, run_as(&user, try_root_owned, self->name, out,
			    CHILD_MS));
	ASSERT_EQ(0, out[0]) TH_LOG("user namespace: %s", strerror(out[0]));
	EXPECT_EQ(EACCES, out[1]);	/* mode 0600 of uid 0: no attach */
	EXPECT_EQ(EPERM, out[2]);	/* only the host's owner unlinks */
	EXPECT_EQ(EACCES, out[3]);	/* the sysfs tunables are root's */
	EXPECT_EQ(EACCES, out[4]);	/* module-wide limits too */
	EXPECT_EQ(EACCES, out[5]);
	/* Nothing changed. */
	EXPECT_EQ(1, sysfs_exists(self->name));
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ(10, c.rate);
	EXPECT_EQ(max_named, param_get("max_named"));
	close(fd);
}

/* Attach to a readable limiter, then try to reconfigure and boost. */
static void try_readable(void *arg, int *out)
{
	const char *name = arg;
	struct rl_acquire a;
	int fd;

	out[0] = enter_userns();
	if (out[0])
		return;
	fd = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0);
	out[1] = fd < 0 ? errno : 0;
	if (fd < 0)
		return;
	out[2] = ret_err(ks_set(fd, 1000, NS_PER_SEC, 1000, 0));
	out[3] = ret_err(ks_client(fd, RL_PRIO_HIGH, 0, 0));
	out[4] = ret_err(ks_client(fd, 0, 2, 0));
	out[5] = ret_err(ks_client(fd, RL_PRIO_LOW, 1, 0));
	out[6] = ret_err(ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
}

TEST_F(userns, readable_limiter_no_config_no_boost)
{
	int out[RUN_AS_MAX];
	struct rl_config c;
	int fd;

	if (!have_userns())
		SKIP(return, NO_USERNS);

	fd = ks_open_att(self->name, RL_ATTACH_CREATE | RL_ATTACH_PERSIST,
			 0644, 10, NS_PER_SEC, 10);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, run_as(&user, try_readable, self->name, out, CHILD_MS));
	ASSERT_EQ(0, out[0]) TH_LOG("user namespace: %s", strerror(out[0]));
	EXPECT_EQ(0, out[1]);		/* the read bit lets it attach */
	EXPECT_EQ(EACCES, out[2]);	/* no write bit: no SET_CONFIG */
	EXPECT_EQ(EPERM, out[3]);	/* CAP_SYS_NICE of the namespace */
	EXPECT_EQ(EPERM, out[4]);	/* is not the host's */
	EXPECT_EQ(0, out[5]);		/* lowering is anyone's */
	EXPECT_EQ(0, out[6]);
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ(10, c.rate);
	close(fd);
}

/* Create a limiter; report the uid and gid sysfs shows from inside. */
static void create_in_userns(void *arg, int *out)
{
	const char *name = arg;
	int fd;

	out[0] = enter_userns();
	if (out[0])
		return;
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_PERSIST, 0600,
			 10, NS_PER_SEC, 10);
	out[1] = fd < 0 ? errno : 0;
	if (fd < 0)
		return;
	out[2] = sysfs_u64(name, "owner");
	out[3] = sysfs_u64(name, "group");
	out[4] = ret_err(ks_set(fd, 20, NS_PER_SEC, 20, 0));
	close(fd);
}

/* The host's user 4242, outside any namespace, uses it and unlinks it. */
static void use_as_host_user(void *arg, int *out)
{
	const char *name = arg;
	struct rl_config c;
	int fd;

	fd = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0);
	out[0] = fd < 0 ? errno : 0;
	if (fd < 0)
		return;
	out[1] = ret_err(ks_get(fd, &c));
	out[2] = c.rate;
	out[3] = ret_err(ks_unl(fd, name));
	close(fd);
}

TEST_F(userns, owner_is_host_uid_and_shared_by_name)
{
	int out[RUN_AS_MAX];

	if (!have_userns())
		SKIP(return, NO_USERNS);

	ASSERT_EQ(0, run_as(&user, create_in_userns, self->name, out,
			    CHILD_MS));
	ASSERT_EQ(0, out[0]) TH_LOG("user namespace: %s", strerror(out[0]));
	ASSERT_EQ(0, out[1]);
	/* sysfs shows the host's ids, also to the namespace. */
	EXPECT_EQ(UNS_ID, out[2]);
	EXPECT_EQ(UNS_ID, out[3]);
	EXPECT_EQ(0, out[4]);		/* its owner may tune it */
	EXPECT_EQ(UNS_ID, sysfs_u64(self->name, "owner"));
	EXPECT_EQ(UNS_ID, sysfs_u64(self->name, "group"));
	/* The same name, and the same owner, on the host. */
	ASSERT_EQ(0, run_as(&user, use_as_host_user, self->name, out,
			    CHILD_MS));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(0, out[1]);
	EXPECT_EQ(20, out[2]);
	EXPECT_EQ(0, out[3]);
	EXPECT_EQ(0, sysfs_exists(self->name));
}

/* Create @arg's second name from inside: the quota is the host uid's. */
static void create_second(void *arg, int *out)
{
	char name[RL_NAME_MAX];
	int fd;

	out[0] = enter_userns();
	if (out[0])
		return;
	snprintf(name, sizeof(name), "%s-2", (const char *)arg);
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_PERSIST, 0600,
			 10, NS_PER_SEC, 10);
	out[1] = fd < 0 ? errno : 0;
	if (fd >= 0) {
		ks_unl(fd, name);
		close(fd);
	}
}

/* The host's user 4242 creates @arg. */
static void create_as_host_user(void *arg, int *out)
{
	int fd;

	fd = ks_open_att(arg, RL_ATTACH_CREATE | RL_ATTACH_PERSIST, 0600,
			 10, NS_PER_SEC, 10);
	out[0] = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
}

TEST_F(userns, quota_follows_host_uid)
{
	int out[RUN_AS_MAX];

	if (!have_userns())
		SKIP(return, NO_USERNS);

	ASSERT_EQ(0, param_set("max_named_per_user", 1));
	ASSERT_EQ(0, run_as(&user, create_as_host_user, self->name, out,
			    CHILD_MS));
	ASSERT_EQ(0, out[0]);
	ASSERT_EQ(0, run_as(&user, create_second, self->name, out,
			    CHILD_MS));
	ASSERT_EQ(0, out[0]) TH_LOG("user namespace: %s", strerror(out[0]));
	EXPECT_EQ(EDQUOT, out[1]);
	/* With room in the quota, the same creation succeeds. */
	ASSERT_EQ(0, param_set("max_named_per_user", self->per_user));
	ASSERT_EQ(0, run_as(&user, create_second, self->name, out,
			    CHILD_MS));
	EXPECT_EQ(0, out[1]);
}

/*
 * A rootless container: root of its own user namespace, with its own IPC
 * namespace. out[1] unshare, out[2] the host's name seen, out[3] its own
 * creation, out[4] its owner in sysfs, out[5] sharing the host's (attached
 * before) into its namespace, which only the host's CAP_SYS_ADMIN may.
 */
static void rootless_container(void *arg, int *out)
{
	struct rl_share sh = { 0 };
	char path[RL_NAME_MAX + 32];
	int hfd, fd;

	out[0] = enter_userns();
	if (out[0])
		return;
	hfd = ks_open_att(arg, 0, 0, 1, NS_PER_SEC, 0);
	out[1] = ret_err(unshare(CLONE_NEWIPC));
	fd = ks_open_att(arg, 0, 0, 1, NS_PER_SEC, 0);
	out[2] = fd < 0 ? errno : 0;
	fd = ks_open_att(arg, RL_ATTACH_CREATE | RL_ATTACH_EXCL | RL_ATTACH_PERSIST,
			 0600, 10, NS_PER_SEC, 10);
	out[3] = fd < 0 ? errno : 0;
	sh.ns_fd = open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "ipc:%u/%s", ipc_inum_self(), (const char *)arg);
	out[4] = (int)sysfs_u64(path, "owner");
	out[5] = hfd < 0 ? -1 : ret_err(ioctl(hfd, RL_IOC_SHARE, &sh));
}

TEST_F(userns, rootless_container_names_are_its_own)
{
	int out[RUN_AS_MAX], hfd;

	if (!have_userns())
		SKIP(return, NO_USERNS);

	hfd = ks_open_att(self->name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0644,
			  1, NS_PER_SEC, 5);
	ASSERT_LE(0, hfd);
	ASSERT_EQ(0, run_as(&user, rootless_container, self->name, out,
			    CHILD_MS));
	ASSERT_EQ(0, out[0]) TH_LOG("user namespace: %s", strerror(out[0]));
	EXPECT_EQ(0, out[1]);
	EXPECT_EQ(ENOENT, out[2]);
	EXPECT_EQ(0, out[3]);
	EXPECT_EQ(UNS_ID, out[4]);
	EXPECT_EQ(EPERM, out[5]);
	/* The host's is untouched. */
	EXPECT_EQ(5, sysfs_u64(self->name, "burst"));
	close(hfd);
}

TEST_HARNESS_MAIN
