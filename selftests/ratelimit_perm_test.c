// SPDX-License-Identifier: GPL-2.0-only
/*
 * Selftests of the permissions of named limiters. A limiter is created with
 * each mode of the matrix, by an unprivileged user (uid/gid 4242) or by
 * root; then child processes with other credentials try what the mode
 * allows or denies:
 *
 *   u4242      uid 4242, gid 4242             (the owner of most variants)
 *   group      uid 4243, gid 4242             (the group, as primary gid)
 *   suppgroup  uid 4245, gid 4245, +4242      (the group, supplementary)
 *   other      uid 4244, gid 4244
 *   root       uid 0 with every capability    (bypasses all checks)
 *
 * Like a file's, the owner class is used when the uid matches, else the
 * group class when a gid matches, else other: read (4) allows ATTACH,
 * write (2) allows SET_CONFIG on the attached fd. Only the owner or
 * CAP_SYS_ADMIN may unlink; the sysfs tunables are 0644 files owned by the
 * limiter's uid and gid.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* The harness has unused parameters (variant, ucontext) by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "ratelimit_util.h"

#define SLOW_RATE	1ULL
#define SLOW_PERIOD	(10 * NS_PER_SEC)
#define BURST		100ULL
#define CHILD_MS	2000

struct ident {
	const char *name;
	struct ks_cred cred;
	int root;
};

static const struct ident idents[] = {
	{ "u4242", { 4242, 4242, 0, { 0 } }, 0 },
	{ "group", { 4243, 4242, 0, { 0 } }, 0 },
	{ "suppgroup", { 4245, 4245, 1, { 4242 } }, 0 },
	{ "other", { 4244, 4244, 0, { 0 } }, 0 },
	{ "root", { 0, 0, 0, { 0 } }, 1 },
};

#define NIDENTS	ARRAY_SIZE(idents)

/* The credentials for run_as(): root keeps the test's own. */
static const struct ks_cred *cred_of(const struct ident *id)
{
	return id->root ? NULL : &id->cred;
}

FIXTURE(perm) {
	char name[RL_NAME_MAX];
	int fd;		/* root's fd on the limiter, for checks */
};

/* What a limiter of the matrix is: its mode, owner and group. */
struct perm_lim {
	__u32 mode;
	uid_t uid;
	gid_t gid;
};

FIXTURE_VARIANT(perm) {
	struct perm_lim lim;
};

FIXTURE_VARIANT_ADD(perm, u4242_0600) { { 0600, 4242, 4242 } };
FIXTURE_VARIANT_ADD(perm, u4242_0640) { { 0640, 4242, 4242 } };
FIXTURE_VARIANT_ADD(perm, u4242_0644) { { 0644, 4242, 4242 } };
FIXTURE_VARIANT_ADD(perm, u4242_0666) { { 0666, 4242, 4242 } };
FIXTURE_VARIANT_ADD(perm, u4242_0400) { { 0400, 4242, 4242 } };
FIXTURE_VARIANT_ADD(perm, u4242_0000) { { 0000, 4242, 4242 } };
/* The owner class alone decides for the owner, even if others may more. */
FIXTURE_VARIANT_ADD(perm, u4242_0066) { { 0066, 4242, 4242 } };
FIXTURE_VARIANT_ADD(perm, u4242_0046) { { 0046, 4242, 4242 } };
FIXTURE_VARIANT_ADD(perm, root_0600) { { 0600, 0, 0 } };
FIXTURE_VARIANT_ADD(perm, root_0644) { { 0644, 0, 0 } };
FIXTURE_VARIANT_ADD(perm, root_0666) { { 0666, 0, 0 } };

/* The rwx bits of the class @id falls in. */
static unsigned int class_bits(const struct perm_lim *l,
			       const struct ident *id)
{
	const struct ks_cred *c = &id->cred;
	int i;

	if (c->uid == l->uid)
		return (l->mode >> 6) & 7;
	if (c->gid == l->gid)
		return (l->mode >> 3) & 7;
	for (i = 0; i < c->ngroups; i++)
		if (c->groups[i] == l->gid)
			return (l->mode >> 3) & 7;
	return l->mode & 7;
}

static int may(const struct perm_lim *l, const struct ident *id,
	       unsigned int bit)
{
	return id->root || (class_bits(l, id) & bit);
}

static int is_owner(const struct perm_lim *l, const struct ident *id)
{
	return id->root || id->cred.uid == l->uid;
}

struct perm_arg {
	const char *name;
	__u32 mode;
};

/* Create the limiter as its owner: out[0] is the errno. */
static void create_fn(void *arg, int *out)
{
	struct perm_arg *pa = arg;
	int fd;

	fd = ks_open_att(pa->name, RL_ATTACH_CREATE | RL_ATTACH_EXCL |
			 RL_ATTACH_PERSIST, pa->mode, SLOW_RATE, SLOW_PERIOD,
			 BURST);
	out[0] = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
}

FIXTURE_SETUP(perm)
{
	struct perm_arg pa;
	int out[RUN_AS_MAX];

	self->fd = -1;
	snprintf(self->name, sizeof(self->name), "rlp-%d", getpid());
	pa.name = self->name;
	pa.mode = variant->lim.mode;
	if (variant->lim.uid) {
		const struct ks_cred c = { variant->lim.uid, variant->lim.gid, 0,
					   { 0 } };

		ASSERT_EQ(0, run_as(&c, create_fn, &pa, out, CHILD_MS));
	} else {
		create_fn(&pa, out);
	}
	ASSERT_EQ(0, out[0]);
	/* Root attaches whatever the mode. */
	self->fd = ks_open_att(self->name, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(perm)
{
	if (self->fd >= 0)
		close(self->fd);
	ks_unl_name(self->name);
}

/* The limiter is still there (root's @fd on it) with its first config. */
static void expect_unchanged(struct __test_metadata *_metadata,
			     const char *name, int fd)
{
	struct rl_config c;

	EXPECT_TRUE(sysfs_exists(name));
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ(SLOW_RATE, c.rate);
	EXPECT_EQ(SLOW_PERIOD, c.period_ns);
	EXPECT_EQ(BURST, c.burst);
	EXPECT_EQ(0U, c.flags);
	EXPECT_EQ(SLOW_RATE, sysfs_u64(name, "rate"));
}

#define EXPECT_UNCHANGED() expect_unchanged(_metadata, self->name, self->fd)
#define RESTORE() \
	ASSERT_EQ(0, ks_set(self->fd, SLOW_RATE, SLOW_PERIOD, BURST, 0))

/* Check @got against @want, naming who and what on a mismatch. */
#define EXPECT_RES(want, got, id, what) do {				\
	int __w = (want), __g = (got);					\
									\
	if (__w != __g)							\
		TH_LOG("mode %04o owner %u, %s: %s gave %d (%s), want %d", \
		       variant->lim.mode, variant->lim.uid, (id)->name,	\
		       what, __g, __g > 0 ? strerror(__g) : "-", __w);	\
	EXPECT_EQ(__w, __g);						\
} while (0)

/*
 * out[0]: ATTACH; then, when attached, out[1] GET_CONFIG, out[2] ACQUIRE,
 * out[3] GET_STATS, out[4] poll; when denied, out[1] GET_CONFIG (EBADFD).
 */
static void attach_fn(void *arg, int *out)
{
	struct perm_arg *pa = arg;
	struct pollfd pfd;
	struct rl_acquire a;
	struct rl_config c;
	struct rl_stats s;
	int fd = ks_open();

	out[0] = ret_err(ks_att(fd, pa->name, 0, 0, 1, NS_PER_SEC, 0));
	out[1] = ret_err(ks_get(fd, &c));
	if (out[0])
		return;
	out[2] = ret_err(ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	out[3] = ret_err(ks_stats(fd, &s));
	pfd.fd = fd;
	pfd.events = POLLIN;
	out[4] = poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN) ? 0 : EIO;
}

TEST_F(perm, attach)
{
	struct perm_arg pa = { self->name, 0 };
	int out[RUN_AS_MAX], allowed = 0;
	unsigned int i;

	for (i = 0; i < NIDENTS; i++) {
		const struct ident *id = &idents[i];
		int ok = may(&variant->lim, id, 4);

		ASSERT_EQ(0, run_as(cred_of(id), attach_fn, &pa, out,
				    CHILD_MS));
		EXPECT_RES(ok ? 0 : EACCES, out[0], id, "ATTACH");
		if (ok) {
			allowed++;
			EXPECT_RES(0, out[1], id, "GET_CONFIG");
			EXPECT_RES(0, out[2], id, "ACQUIRE");
			EXPECT_RES(0, out[3], id, "GET_STATS");
			EXPECT_RES(0, out[4], id, "poll");
		} else {
			/* The fd stays fresh. */
			EXPECT_RES(EBADFD, out[1], id, "GET_CONFIG");
		}
	}
	/* Exactly the allowed ones took a token. */
	EXPECT_EQ(BURST - allowed, ks_avail(self->fd));
	EXPECT_UNCHANGED();
}

/* ATTACH with CREATE, with CREATE | EXCL, on the existing limiter. */
static void attach_create_fn(void *arg, int *out)
{
	struct perm_arg *pa = arg;
	int fd = ks_open();

	out[0] = ret_err(ks_att(fd, pa->name, RL_ATTACH_CREATE, 0666, 1,
				NS_PER_SEC, 0));
	close(fd);
	fd = ks_open();
	out[1] = ret_err(ks_att(fd, pa->name,
				RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0666, 1,
				NS_PER_SEC, 0));
	close(fd);
}

TEST_F(perm, attach_create_existing)
{
	struct perm_arg pa = { self->name, 0 };
	int out[RUN_AS_MAX];
	char buf[16], want[16];
	unsigned int i;

	for (i = 0; i < NIDENTS; i++) {
		const struct ident *id = &idents[i];

		ASSERT_EQ(0, run_as(cred_of(id), attach_create_fn, &pa, out,
				    CHILD_MS));
		/* CREATE does not get around the mode of an existing one. */
		EXPECT_RES(may(&variant->lim, id, 4) ? 0 : EACCES, out[0], id,
			   "ATTACH(CREATE)");
		EXPECT_RES(EEXIST, out[1], id, "ATTACH(CREATE|EXCL)");
	}
	snprintf(want, sizeof(want), "%04o", variant->lim.mode);
	ASSERT_EQ(0, sysfs_read(self->name, "mode", buf, sizeof(buf)));
	EXPECT_STREQ(want, buf);
	EXPECT_UNCHANGED();
}

/* out[0]: ATTACH, out[1]: SET_CONFIG on the attached fd. */
static void set_config_fn(void *arg, int *out)
{
	struct perm_arg *pa = arg;
	int fd = ks_open();

	out[0] = ret_err(ks_att(fd, pa->name, 0, 0, 1, NS_PER_SEC, 0));
	if (!out[0])
		out[1] = ret_err(ks_set(fd, 777, NS_PER_SEC, 7, 0));
}

TEST_F(perm, set_config)
{
	struct perm_arg pa = { self->name, 0 };
	int out[RUN_AS_MAX];
	struct rl_config c;
	unsigned int i;

	for (i = 0; i < NIDENTS; i++) {
		const struct ident *id = &idents[i];
		int ok = may(&variant->lim, id, 2);

		if (!may(&variant->lim, id, 4))
			continue;
		ASSERT_EQ(0, run_as(cred_of(id), set_config_fn, &pa, out,
				    CHILD_MS));
		EXPECT_RES(0, out[0], id, "ATTACH");
		EXPECT_RES(ok ? 0 : EACCES, out[1], id, "SET_CONFIG");
		if (ok) {
			ASSERT_EQ(0, ks_get(self->fd, &c));
			EXPECT_EQ(777ULL, c.rate);
			EXPECT_EQ(7ULL, c.burst);
			RESTORE();
		}
		EXPECT_UNCHANGED();
	}
}

/*
 * Being served ahead of others (priorities HIGH and USER, weights above 1)
 * needs the write right, decided at attach; LOW, MID, weight 1 and caps do
 * not. out[0] ATTACH; out[1] SET_CLIENT LOW with a cap; out[2..4]
 * SET_CLIENT HIGH, USER, MID with weight 2; out[5..7] the priority, weight
 * and cap read back; out[8..11] non-blocking ACQUIREs at USER, HIGH, MID
 * and LOW; out[12] GET_STATS's requests.
 */
static void boost_fn(void *arg, int *out)
{
	struct perm_arg *pa = arg;
	struct rl_client_config cc;
	struct rl_acquire a;
	struct rl_stats s;
	int fd = ks_open();

	out[0] = ret_err(ks_att(fd, pa->name, 0, 0, 1, NS_PER_SEC, 0));
	if (out[0])
		return;
	out[1] = ret_err(ks_client(fd, RL_PRIO_LOW, 1, 5));
	out[2] = ret_err(ks_client(fd, RL_PRIO_HIGH, 1, 0));
	out[3] = ret_err(ks_client(fd, RL_PRIO_USER, 0, 0));
	out[4] = ret_err(ks_client(fd, RL_PRIO_MID, 2, 0));
	if (!ks_client_get(fd, &cc)) {
		out[5] = cc.priority;
		out[6] = cc.weight;
		out[7] = (int)cc.cap;
	}
	out[8] = ret_err(ks_acq_prio(fd, 1, 0, RL_ACQUIRE_NONBLOCK,
				     RL_PRIO_USER, &a));
	out[9] = ret_err(ks_acq_prio(fd, 1, 0, RL_ACQUIRE_NONBLOCK,
				     RL_PRIO_HIGH, &a));
	out[10] = ret_err(ks_acq_prio(fd, 1, 0, RL_ACQUIRE_NONBLOCK,
				      RL_PRIO_MID, &a));
	out[11] = ret_err(ks_acq_prio(fd, 1, 0, RL_ACQUIRE_NONBLOCK,
				      RL_PRIO_LOW, &a));
	out[12] = ks_stats(fd, &s) ? -1 : (int)s.requests;
}

TEST_F(perm, priority_needs_write)
{
	struct perm_arg pa = { self->name, 0 };
	int out[RUN_AS_MAX];
	unsigned int i;

	for (i = 0; i < NIDENTS; i++) {
		const struct ident *id = &idents[i];
		int ok = may(&variant->lim, id, 2);
		int deny = ok ? 0 : EPERM;
		struct rl_stats s0;

		if (!may(&variant->lim, id, 4))
			continue;
		ASSERT_EQ(0, ks_stats(self->fd, &s0));
		ASSERT_EQ(0, run_as(cred_of(id), boost_fn, &pa, out,
				    CHILD_MS));
		EXPECT_RES(0, out[0], id, "ATTACH");
		EXPECT_RES(0, out[1], id, "SET_CLIENT LOW cap 5");
		EXPECT_RES(deny, out[2], id, "SET_CLIENT HIGH");
		EXPECT_RES(deny, out[3], id, "SET_CLIENT USER");
		EXPECT_RES(deny, out[4], id, "SET_CLIENT weight 2");
		/* A refused SET_CLIENT changed nothing. */
		EXPECT_RES(ok ? RL_PRIO_MID : RL_PRIO_LOW, out[5], id,
			   "priority read back");
		EXPECT_RES(ok ? 2 : 1, out[6], id, "weight read back");
		EXPECT_RES(ok ? 0 : 5, out[7], id, "cap read back");
		EXPECT_RES(deny, out[8], id, "ACQUIRE at USER");
		EXPECT_RES(deny, out[9], id, "ACQUIRE at HIGH");
		EXPECT_RES(0, out[10], id, "ACQUIRE at MID");
		EXPECT_RES(0, out[11], id, "ACQUIRE at LOW");
		/* A refused ACQUIRE is no request and takes no token. */
		EXPECT_RES((int)s0.requests + (ok ? 4 : 2), out[12], id,
			   "requests");
		EXPECT_UNCHANGED();
	}
}

/* out[0]: UNLINK through a fresh fd. */
static void unlink_fn(void *arg, int *out)
{
	struct perm_arg *pa = arg;

	out[0] = ret_err(ks_unl_name(pa->name));
}

TEST_F(perm, unlink_non_owner_eperm)
{
	struct perm_arg pa = { self->name, 0 };
	int out[RUN_AS_MAX];
	unsigned int i;

	for (i = 0; i < NIDENTS; i++) {
		const struct ident *id = &idents[i];

		if (is_owner(&variant->lim, id))
			continue;
		ASSERT_EQ(0, run_as(cred_of(id), unlink_fn, &pa, out,
				    CHILD_MS));
		EXPECT_RES(EPERM, out[0], id, "UNLINK");
		EXPECT_UNCHANGED();
	}
}

TEST_F(perm, unlink_owner)
{
	struct perm_arg pa = { self->name, 0 };
	const struct ks_cred c = { variant->lim.uid, variant->lim.gid, 0, { 0 } };
	int out[RUN_AS_MAX];
	int fd;

	/* Whatever the mode, the owner may remove the name. */
	ASSERT_EQ(0, run_as(variant->lim.uid ? &c : NULL, unlink_fn, &pa, out,
			    CHILD_MS));
	EXPECT_EQ(0, out[0]);
	EXPECT_FALSE(sysfs_exists(self->name));
	fd = ks_open();
	ASSERT_LE(0, fd);
	EXPECT_ERRNO(ENOENT, ks_att(fd, self->name, 0, 0, 1, NS_PER_SEC, 0));
	close(fd);
	/* Root's fd still works on the unlinked limiter. */
	EXPECT_EQ(BURST, ks_avail(self->fd));
}

TEST_F(perm, unlink_root)
{
	EXPECT_EQ(0, ks_unl_name(self->name));
	EXPECT_FALSE(sysfs_exists(self->name));
}

/* out[0]: write "777" to sysfs rate; out[1]: read rate (value or errno). */
static void sysfs_write_fn(void *arg, int *out)
{
	struct perm_arg *pa = arg;

	out[0] = ret_err(sysfs_write(pa->name, "rate", "777"));
}

TEST_F(perm, sysfs_write)
{
	struct perm_arg pa = { self->name, 0 };
	int out[RUN_AS_MAX];
	unsigned int i;

	for (i = 0; i < NIDENTS; i++) {
		const struct ident *id = &idents[i];
		int ok = is_owner(&variant->lim, id);

		/*
		 * The files are 0644 owned by the limiter's uid: the owner
		 * may write them. Only checked where the mode also lets the
		 * owner reconfigure, which every reading agrees on.
		 */
		if (ok && !id->root && !(variant->lim.mode & 0200))
			continue;
		ASSERT_EQ(0, run_as(cred_of(id), sysfs_write_fn, &pa, out,
				    CHILD_MS));
		EXPECT_RES(ok ? 0 : EACCES, out[0], id, "sysfs rate write");
		if (ok) {
			EXPECT_EQ(777ULL, sysfs_u64(self->name, "rate"));
			RESTORE();
		}
		EXPECT_UNCHANGED();
	}
}

/* out[0]: read errno, out[1]: rate read, out[2]: owner, out[3]: group. */
static void sysfs_read_fn(void *arg, int *out)
{
	struct perm_arg *pa = arg;
	char buf[64];

	out[0] = ret_err(sysfs_read(pa->name, "client_list", buf,
				    sizeof(buf)));
	out[1] = (int)sysfs_u64(pa->name, "rate");
	out[2] = (int)sysfs_u64(pa->name, "owner");
	out[3] = (int)sysfs_u64(pa->name, "group");
}

TEST_F(perm, sysfs_read_by_anyone)
{
	struct perm_arg pa = { self->name, 0 };
	int out[RUN_AS_MAX];
	unsigned int i;

	for (i = 0; i < NIDENTS; i++) {
		const struct ident *id = &idents[i];

		ASSERT_EQ(0, run_as(cred_of(id), sysfs_read_fn, &pa, out,
				    CHILD_MS));
		EXPECT_RES(0, out[0], id, "sysfs read");
		EXPECT_RES((int)SLOW_RATE, out[1], id, "sysfs rate");
		EXPECT_RES((int)variant->lim.uid, out[2], id, "sysfs owner");
		EXPECT_RES((int)variant->lim.gid, out[3], id, "sysfs group");
	}
}

TEST_F(perm, root_bypasses)
{
	struct rl_config c;
	char buf[16];
	int fd;

	/* In this process: root with every capability. */
	fd = ks_open_att(self->name, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, ks_set(fd, 5, NS_PER_SEC, 5, 0));
	EXPECT_EQ(5ULL, sysfs_u64(self->name, "rate"));
	EXPECT_EQ(0, sysfs_write(self->name, "rate", "6"));
	ASSERT_EQ(0, ks_get(fd, &c));
	EXPECT_EQ(6ULL, c.rate);
	close(fd);
	ASSERT_EQ(0, sysfs_read(self->name, "persistent", buf, sizeof(buf)));
	EXPECT_STREQ("1", buf);
	EXPECT_EQ(0, ks_unl_name(self->name));
	EXPECT_FALSE(sysfs_exists(self->name));
}

TEST_F(perm, ownership_in_sysfs)
{
	static const char *const files[] = {
		"stat", "children", "client_list", "wait_histogram",
	};
	char buf[16], want[16], path[256];
	struct stat st;
	unsigned int i;

	EXPECT_EQ((__u64)variant->lim.uid, sysfs_u64(self->name, "owner"));
	EXPECT_EQ((__u64)variant->lim.gid, sysfs_u64(self->name, "group"));
	snprintf(want, sizeof(want), "%04o", variant->lim.mode);
	ASSERT_EQ(0, sysfs_read(self->name, "mode", buf, sizeof(buf)));
	EXPECT_STREQ(want, buf);
	EXPECT_EQ(1ULL, sysfs_u64(self->name, "persistent"));
	/* config belongs to the limiter's owner, the rest to root. */
	sysfs_path(path, sizeof(path), self->name, "config");
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(variant->lim.uid, st.st_uid);
	EXPECT_EQ(variant->lim.gid, st.st_gid);
	EXPECT_EQ(0644U, st.st_mode & 07777);
	ASSERT_EQ(0, stat(sysfs_path(path, sizeof(path), self->name, NULL), &st));
	EXPECT_EQ(0U, st.st_uid);
	EXPECT_EQ(0U, st.st_gid);
	for (i = 0; i < ARRAY_SIZE(files); i++) {
		sysfs_path(path, sizeof(path), self->name, files[i]);
		ASSERT_EQ(0, stat(path, &st));
		if (st.st_uid || st.st_gid)
			TH_LOG("%s: %u:%u", files[i], st.st_uid, st.st_gid);
		EXPECT_EQ(0U, st.st_uid);
		EXPECT_EQ(0U, st.st_gid);
		EXPECT_EQ(0444U, st.st_mode & 07777);
	}
}

/* ---- single cases ---- */

static const struct ks_cred other = { 4244, 4244, 0, { 0 } };

/* A private limiter needs no permission. */
static void private_fn(void *arg, int *out)
{
	struct rl_acquire a;
	int fd = ks_open();

	out[0] = fd < 0 ? errno : 0;
	out[1] = ret_err(ks_set(fd, 10, NS_PER_SEC, 2, 0));
	out[2] = ret_err(ks_set(fd, 20, NS_PER_SEC, 2, 0));
	out[3] = ret_err(ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
}

TEST(unprivileged_private_limiter)
{
	int out[RUN_AS_MAX];

	ASSERT_EQ(0, run_as(&other, private_fn, NULL, out, CHILD_MS));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(0, out[1]);
	EXPECT_EQ(0, out[2]);
	EXPECT_EQ(0, out[3]);
}

/* The creator can use its new limiter, whatever the mode. */
static void create_use_fn(void *arg, int *out)
{
	const char *name = arg;
	struct rl_acquire a;
	char buf[16];
	int fd;

	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600, 10,
			 NS_PER_SEC, 4);
	out[0] = fd < 0 ? errno : 0;
	out[1] = ret_err(ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	out[2] = ret_err(ks_set(fd, 20, NS_PER_SEC, 4, 0));
	out[3] = (int)sysfs_u64(name, "owner");
	out[4] = (int)sysfs_u64(name, "group");
	out[5] = ret_err(sysfs_read(name, "mode", buf, sizeof(buf)));
	out[6] = strcmp(buf, "0600");
	out[7] = ret_err(sysfs_write(name, "burst", "5"));
	out[8] = (int)sysfs_u64(name, "burst");
	close(fd);
	/* Non-persistent: gone with the fd. */
	out[9] = sysfs_exists(name);
}

TEST(unprivileged_create_owner)
{
	char name[RL_NAME_MAX];
	int out[RUN_AS_MAX];

	snprintf(name, sizeof(name), "rlp-%d-own", getpid());
	ASSERT_EQ(0, run_as(&(struct ks_cred){ 4242, 4242, 0, { 0 } },
			    create_use_fn, name, out, CHILD_MS));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(0, out[1]);
	EXPECT_EQ(0, out[2]);
	EXPECT_EQ(4242, out[3]);
	EXPECT_EQ(4242, out[4]);
	EXPECT_EQ(0, out[5]);
	EXPECT_EQ(0, out[6]);
	EXPECT_EQ(0, out[7]);
	EXPECT_EQ(5, out[8]);
	EXPECT_EQ(0, out[9]);
	EXPECT_FALSE(sysfs_exists(name));
}

/* fsgid, not a supplementary group, becomes the group of a new limiter. */
TEST(unprivileged_create_group_is_fsgid)
{
	char name[RL_NAME_MAX];
	int out[RUN_AS_MAX];

	snprintf(name, sizeof(name), "rlp-%d-grp", getpid());
	ASSERT_EQ(0, run_as(&(struct ks_cred){ 4246, 4247, 1, { 4248 } },
			    create_use_fn, name, out, CHILD_MS));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(4246, out[3]);
	EXPECT_EQ(4247, out[4]);
}

struct decided_arg {
	int fd;
	const char *name;
};

/* Drop privileges with an fd root attached: its write right stays. */
static void decided_fn(void *arg, int *out)
{
	struct decided_arg *da = arg;
	int fd;

	out[0] = ks_become(&other) ? EPERM : 0;
	out[1] = ret_err(ks_set(da->fd, 42, NS_PER_SEC, 3, 0));
	/* A new attach as this user is denied by the mode (0600). */
	fd = ks_open();
	out[2] = ret_err(ks_att(fd, da->name, 0, 0, 1, NS_PER_SEC, 0));
	close(fd);
}

TEST(write_right_decided_at_attach)
{
	struct decided_arg da;
	char name[RL_NAME_MAX];
	int out[RUN_AS_MAX];

	snprintf(name, sizeof(name), "rlp-%d-dec", getpid());
	da.name = name;
	da.fd = ks_open_att(name, RL_ATTACH_CREATE, 0600, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, da.fd);
	ASSERT_EQ(0, run_as(NULL, decided_fn, &da, out, CHILD_MS));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(0, out[1]);
	EXPECT_EQ(EACCES, out[2]);
	EXPECT_EQ(42ULL, sysfs_u64(name, "rate"));
	close(da.fd);
}

static void param_write_fn(void *arg, int *out)
{
	out[0] = ret_err(param_set("max_named", 5));
	out[1] = ret_err(param_set("max_named_per_user", 5));
}

TEST(unprivileged_params_read_only)
{
	__u64 m = param_get("max_named"), u = param_get("max_named_per_user");
	int out[RUN_AS_MAX];

	ASSERT_NE(POISON64, m);
	ASSERT_EQ(0, run_as(&other, param_write_fn, NULL, out, CHILD_MS));
	EXPECT_EQ(EACCES, out[0]);
	EXPECT_EQ(EACCES, out[1]);
	EXPECT_EQ(m, param_get("max_named"));
	EXPECT_EQ(u, param_get("max_named_per_user"));
}

/* ---- RL_IOC_SET_PERM: chmod and chown in place ---- */

static int ks_perm(int fd, __u32 uid, __u32 gid, __u32 mode, __u32 flags)
{
	struct rl_perm p = {
		.uid = uid, .gid = gid, .mode = mode, .flags = flags,
	};

	return ioctl(fd, RL_IOC_SET_PERM, &p);
}

/* sysfs config of @name belongs to @uid:@gid, the rest to root: 0, else -1. */
static int files_owned(const char *name, uid_t uid, gid_t gid)
{
	static const char *const files[] = { "stat", "client_list" };
	char path[256];
	struct stat st;
	unsigned int i;

	if (stat(sysfs_path(path, sizeof(path), name, NULL), &st) ||
	    st.st_uid || st.st_gid)
		return -1;
	for (i = 0; i < ARRAY_SIZE(files); i++)
		if (stat(sysfs_path(path, sizeof(path), name, files[i]), &st) ||
		    st.st_uid || st.st_gid)
			return -1;
	if (stat(sysfs_path(path, sizeof(path), name, "config"), &st) ||
	    st.st_uid != uid || st.st_gid != gid)
		return -1;
	return 0;
}

static __u32 sysfs_mode(const char *name)
{
	char buf[16];

	if (sysfs_read(name, "mode", buf, sizeof(buf)))
		return ~0U;
	return (__u32)strtoul(buf, NULL, 8);
}

/* As the owner (4242, also in group 4250): what chmod and chown allow. */
static void owner_perm_fn(void *arg, int *out)
{
	struct rl_acquire a;
	int fd = ks_open_att(arg, 0, 0, 1, NS_PER_SEC, 0);

	out[0] = fd < 0 ? errno : 0;
	out[1] = ret_err(ks_perm(fd, 0, 0, 0640, RL_PERM_MODE));
	out[2] = ret_err(ks_perm(fd, 0, 4250, 0, RL_PERM_GID));
	out[3] = ret_err(ks_perm(fd, 4242, 0, 0, RL_PERM_UID));
	/* Not its group, not its uid to give: nothing changes at all. */
	out[4] = ret_err(ks_perm(fd, 0, 4251, 0600,
				 RL_PERM_GID | RL_PERM_MODE));
	out[5] = ret_err(ks_perm(fd, 4244, 0, 0, RL_PERM_UID));
	/* Its fd goes on. */
	out[6] = ret_err(ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
}

TEST(set_perm_owner)
{
	static const struct ks_cred owner = { 4242, 4242, 1, { 4250 } };
	struct ks_child ch;
	char name[RL_NAME_MAX];
	int out[RUN_AS_MAX];
	struct rl_acquire a;
	int fd;

	snprintf(name, sizeof(name), "rlp-%d-chmod", getpid());
	/* Root's fd: attached before, it keeps working. */
	ASSERT_EQ(0, child_start(&ch, &owner, create_fn,
				 &(struct perm_arg){ .name = name,
						     .mode = 0600 }));
	ASSERT_EQ(0, child_finish(&ch, out, CHILD_MS));
	ASSERT_EQ(0, out[0]);
	fd = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, run_as(&owner, owner_perm_fn, name, out, CHILD_MS));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(0, out[1]);
	EXPECT_EQ(0, out[2]);
	EXPECT_EQ(0, out[3]);
	EXPECT_EQ(EPERM, out[4]);
	EXPECT_EQ(EPERM, out[5]);
	EXPECT_EQ(0, out[6]);
	EXPECT_EQ(4242ULL, sysfs_u64(name, "owner"));
	EXPECT_EQ(4250ULL, sysfs_u64(name, "group"));
	EXPECT_EQ(0640U, sysfs_mode(name));
	EXPECT_EQ(0, files_owned(name, 4242, 4250));
	EXPECT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	close(fd);
	EXPECT_EQ(0, ks_unl_name(name));
}

/* Another user, even with the right to attach and reconfigure: EPERM. */
static void other_perm_fn(void *arg, int *out)
{
	int fd = ks_open_att(arg, 0, 0, 1, NS_PER_SEC, 0);

	out[0] = fd < 0 ? errno : 0;
	out[1] = ret_err(ks_perm(fd, 0, 0, 0600, RL_PERM_MODE));
	out[2] = ret_err(ks_perm(fd, 4244, 0, 0, RL_PERM_UID));
	out[3] = ret_err(ks_perm(fd, 0, 4244, 0, RL_PERM_GID));
	close(fd);
}

TEST(set_perm_non_owner_eperm)
{
	char name[RL_NAME_MAX];
	int out[RUN_AS_MAX];

	snprintf(name, sizeof(name), "rlp-%d-nochmod", getpid());
	ASSERT_EQ(0, run_as(&(struct ks_cred){ 4242, 4242, 0, { 0 } },
			    create_fn, &(struct perm_arg){ .name = name,
							   .mode = 0666 },
			    out, CHILD_MS));
	ASSERT_EQ(0, out[0]);
	ASSERT_EQ(0, run_as(&other, other_perm_fn, name, out, CHILD_MS));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(EPERM, out[1]);
	EXPECT_EQ(EPERM, out[2]);
	EXPECT_EQ(EPERM, out[3]);
	EXPECT_EQ(0666U, sysfs_mode(name));
	EXPECT_EQ(4242ULL, sysfs_u64(name, "owner"));
	EXPECT_EQ(4242ULL, sysfs_u64(name, "group"));
	EXPECT_EQ(0, ks_unl_name(name));
}

/* out[0]: errno of an attach as the caller. */
static void try_attach_fn(void *arg, int *out)
{
	int fd = ks_open_att(arg, 0, 0, 1, NS_PER_SEC, 0);

	out[0] = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
}

/* out[0]: may the new owner unlink it (it now answers for the name). */
static void unlink_fn2(void *arg, int *out)
{
	out[0] = ret_err(ks_unl_name(arg));
}

/* Root gives a limiter away; clients attached before keep working. */
TEST(set_perm_root_chown)
{
	char name[RL_NAME_MAX];
	int out[RUN_AS_MAX];
	struct rl_acquire a;
	int fd, fd2;

	snprintf(name, sizeof(name), "rlp-%d-chown", getpid());
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL |
			 RL_ATTACH_PERSIST, 0644, 1000, NS_PER_SEC, 100);
	ASSERT_LE(0, fd);
	fd2 = ks_open_att(name, 0, 0, 1, NS_PER_SEC, 0);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, run_as(&other, try_attach_fn, name, out, CHILD_MS));
	EXPECT_EQ(0, out[0]);
	ASSERT_EQ(0, ks_perm(fd, 4242, 4243, 0640,
			     RL_PERM_UID | RL_PERM_GID | RL_PERM_MODE));
	EXPECT_EQ(4242ULL, sysfs_u64(name, "owner"));
	EXPECT_EQ(4243ULL, sysfs_u64(name, "group"));
	EXPECT_EQ(0640U, sysfs_mode(name));
	EXPECT_EQ(0, files_owned(name, 4242, 4243));
	/* Attached fds keep their rights; a new attach sees the mode. */
	EXPECT_EQ(0, ks_acq(fd, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, ks_acq(fd2, 1, 0, RL_ACQUIRE_NONBLOCK, &a));
	EXPECT_EQ(0, ks_set(fd2, 2000, NS_PER_SEC, 100, 0));
	ASSERT_EQ(0, run_as(&other, try_attach_fn, name, out, CHILD_MS));
	EXPECT_EQ(EACCES, out[0]);
	ASSERT_EQ(0, run_as(&(struct ks_cred){ 4245, 4245, 1, { 4243 } },
			    try_attach_fn, name, out, CHILD_MS));
	EXPECT_EQ(0, out[0]);
	close(fd2);
	close(fd);
	/* The new owner may remove it. */
	ASSERT_EQ(0, run_as(&(struct ks_cred){ 4242, 4242, 0, { 0 } },
			    unlink_fn2, name, out, CHILD_MS));
	EXPECT_EQ(0, out[0]);
	EXPECT_FALSE(sysfs_exists(name));
}

TEST(set_perm_einval)
{
	char name[RL_NAME_MAX];
	struct rl_features f;
	struct rl_perm p;
	int fd, priv, fresh;

	ASSERT_EQ(0, ioctl(ks_open(), RL_IOC_GET_FEATURES, &f));
	EXPECT_TRUE(f.ioctls & (1ULL << _IOC_NR(RL_IOC_SET_PERM)));
	snprintf(name, sizeof(name), "rlp-%d-inval", getpid());
	fd = ks_open_att(name, RL_ATTACH_CREATE | RL_ATTACH_EXCL, 0600, 1,
			 NS_PER_SEC, 0);
	ASSERT_LE(0, fd);
	EXPECT_ERRNO(EINVAL, ks_perm(fd, 0, 0, 0644, 0));
	EXPECT_ERRNO(EINVAL, ks_perm(fd, 0, 0, 0644, 1U << 3));
	EXPECT_ERRNO(EINVAL, ks_perm(fd, 0, 0, 01644, RL_PERM_MODE));
	EXPECT_ERRNO(EINVAL, ks_perm(fd, ~0U, 0, 0, RL_PERM_UID));
	EXPECT_ERRNO(EINVAL, ks_perm(fd, 0, ~0U, 0, RL_PERM_GID));
	memset(&p, 0, sizeof(p));
	p.flags = RL_PERM_MODE;
	p.mode = 0644;
	p.reserved[1] = 1;
	EXPECT_ERRNO(EINVAL, ioctl(fd, RL_IOC_SET_PERM, &p));
	EXPECT_ERRNO(EFAULT, ioctl(fd, RL_IOC_SET_PERM, NULL));
	EXPECT_EQ(0600U, sysfs_mode(name));
	/* A private limiter has no owner; an fd without one, no limiter. */
	priv = ks_open();
	ASSERT_LE(0, priv);
	ASSERT_EQ(0, ks_set(priv, 1, NS_PER_SEC, 1, 0));
	EXPECT_ERRNO(EINVAL, ks_perm(priv, 0, 0, 0644, RL_PERM_MODE));
	fresh = ks_open();
	ASSERT_LE(0, fresh);
	EXPECT_ERRNO(EBADFD, ks_perm(fresh, 0, 0, 0644, RL_PERM_MODE));
	/* Unlinked: the name is gone, nothing to change. */
	ASSERT_EQ(0, ks_unl_name(name));
	EXPECT_ERRNO(EINVAL, ks_perm(fd, 0, 0, 0644, RL_PERM_MODE));
	close(fresh);
	close(priv);
	close(fd);
}

TEST_HARNESS_MAIN
