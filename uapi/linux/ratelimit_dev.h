/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/*
 * ratelimit_dev.h - ABI of /dev/ratelimit, the kernel rate limiter service.
 *
 * The name is not <linux/ratelimit.h>: that one is the kernel's own,
 * non-uapi printk rate limiting header.
 *
 * Every open file description of /dev/ratelimit is a client of one limiter.
 * RL_IOC_SET_CONFIG on a fresh fd creates the fd's private limiter; later
 * calls reconfigure it atomically, keeping tokens and queued waiters.
 * RL_IOC_ATTACH instead makes the fd a client of a named limiter shared
 * with other programs; /sys/kernel/ratelimit/<name>/ shows and tunes it.
 * Until either RL_IOC_GET_CONFIG, RL_IOC_ACQUIRE and RL_IOC_GET_STATS fail
 * with -EBADFD and poll() reports EPOLLERR.
 *
 * poll() reports EPOLLIN | EPOLLRDNORM when an acquire of one token would
 * be granted at once: the bucket holds a token, nobody is queued, a permit
 * is free and the fd's own cap allows it.
 * Unknown ioctl numbers fail with -ENOTTY.
 *
 * Conventions: only __u32/__u64, naturally aligned, no implicit padding.
 * Every struct has a flags word; unknown flags and non-zero reserved fields
 * are rejected with -EINVAL. Output structs are fully written by the kernel
 * (reserved fields are zeroed). Times are nanoseconds of CLOCK_MONOTONIC.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef _UAPI_LINUX_RATELIMIT_DEV_H
#define _UAPI_LINUX_RATELIMIT_DEV_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

/* Version of this ABI, reported by RL_IOC_GET_FEATURES. */
#define RL_ABI_VERSION		1

/* Deadline meaning "wait forever". */
#define RL_DEADLINE_NONE	(~(__u64)0)

/*
 * Bounds on a configuration. The token arithmetic is exact in 64 bits as
 * long as burst * period_ns stays within RL_BURST_PERIOD_MAX: with a one
 * second period a bucket may hold up to 9.2e9 tokens.
 */
#define RL_PERIOD_MAX_NS	(86400ULL * 1000000000ULL)	/* one day */
#define RL_BURST_PERIOD_MAX	_BITULL(63)

/* struct rl_config.flags */
#define RL_CONFIG_UNLIMITED	_BITUL(0)	/* grant everything at once */
#define RL_CONFIG_FED		_BITUL(1)	/* only RL_IOC_DEPOSIT adds tokens */
#define RL_CONFIG_KEYED		_BITUL(2)	/* a bucket per key (RL_IOC_ACQUIRE_KEY) */
#define RL_CONFIG_FAIR_PER_USER	_BITUL(3)	/* fair shares per user, not per fd */
#define RL_CONFIG_FLAGS_ALL	(RL_CONFIG_UNLIMITED | RL_CONFIG_FED | RL_CONFIG_KEYED | \
				 RL_CONFIG_FAIR_PER_USER)

/* Priorities of a request, served USER first, then HIGH, MID, LOW. */
#define RL_PRIO_DEFAULT		0	/* in struct rl_acquire: the fd's */
#define RL_PRIO_LOW		1
#define RL_PRIO_MID		2
#define RL_PRIO_HIGH		3
#define RL_PRIO_USER		4

#define RL_CATCHUP_STRICT	1000	/* per-mille: no catching up */
#define RL_CATCHUP_MAX		100000
#define RL_FAIRNESS_DEFAULT	10
#define RL_FAIRNESS_MAX		1000000	/* largest rl_config.fairness */
#define RL_WEIGHT_MAX		1000

/**
 * struct rl_config - limits of a limiter (RL_IOC_SET_CONFIG/GET_CONFIG)
 * @rate:        tokens added per @period_ns; 0 pauses the limiter (acquires
 *               wait, nothing is lost). Ignored when RL_CONFIG_UNLIMITED.
 * @period_ns:   length of the rate period, 1 .. RL_PERIOD_MAX_NS.
 * @burst:       bucket depth: most tokens that accumulate while idle, and
 *               the largest chunk one acquire is served in. 0 on SET picks
 *               the default: the tokens of 100 ms at @rate, at least 1.
 *               GET reports the value in force. burst * period_ns must not
 *               exceed RL_BURST_PERIOD_MAX.
 * @flags:       RL_CONFIG_* flags.
 * @catchup:     per-mille, RL_CATCHUP_STRICT .. RL_CATCHUP_MAX (0 on SET
 *               means strict): tokens that overflow the full bucket while
 *               clients fall behind are kept, up to @backlog, and released
 *               at up to @rate x @catchup / 1000 when demand returns.
 * @concurrency: most tokens held at once by all clients (permits, given
 *               back by RL_IOC_RELEASE or when the holding fd is closed);
 *               0 for no such limit. Combines with the rate limit, or
 *               stands alone with RL_CONFIG_UNLIMITED. Going from 0 to
 *               non-zero or back is -EBUSY (nothing changed) while other
 *               fds than the caller's are attached to the limiter or to
 *               a limiter under it: their acquires would hold permits
 *               they never give back, or give back permits they do not
 *               hold. N to M, both non-zero, is always allowed.
 * @backlog:     most tokens kept for catching up; at most burst x 1000.
 *               0 (with strict @catchup) keeps none.
 * @fairness:    1 in @fairness grants lets a lower priority go first among
 *               LOW, MID and HIGH (USER always goes first); 0 on SET picks
 *               RL_FAIRNESS_DEFAULT; at most RL_FAIRNESS_MAX.
 * @reserved0:   must be zero.
 * @keys:        with RL_CONFIG_KEYED, most keys the limiter keeps state
 *               for at once, 1 .. RL_KEYS_MAX; 0 means RL_KEYS_DEFAULT.
 *               Above RL_KEYS_USER_MAX it takes CAP_SYS_RESOURCE (-EPERM).
 *               Must be zero without RL_CONFIG_KEYED. GET reports it as
 *               set (0 for the default); struct rl_keys_stats.keys_max
 *               is the value in force.
 *
 * RL_CONFIG_KEYED is fixed when the limiter is created: a SET_CONFIG that
 * changes it on an existing limiter is -EINVAL. See "Keyed limiters".
 *
 * Among the requests of one priority, fair shares go to fds: a process
 * with three fds of a limiter gets three shares. With
 * RL_CONFIG_FAIR_PER_USER they go to users instead: the fds of one user
 * (the effective uid of the process that opened each) form one flow, in
 * which their requests are served in arrival order, so that a user
 * gains nothing by opening more fds. A client's cap still holds its own
 * requests, and while the head of a user's flow waits for its fd's cap,
 * that user's other fds wait too. It may be set and cleared at any time:
 * requests already asleep keep their place. Not with RL_CONFIG_KEYED
 * (-EINVAL): keys are served in arrival order.
 */
struct rl_config {
	__u64 rate;
	__u64 period_ns;
	__u64 burst;
	__u32 flags;
	__u32 catchup;
	__u64 concurrency;
	__u64 backlog;
	__u32 fairness;
	__u32 reserved0;
	__u64 keys;
};

/* struct rl_acquire.flags */
#define RL_ACQUIRE_NONBLOCK	_BITUL(0)	/* -EAGAIN instead of sleeping */
#define RL_ACQUIRE_PREDICT	_BITUL(1)	/* -ETIMEDOUT at once if late */
#define RL_ACQUIRE_FLAGS_ALL	(RL_ACQUIRE_NONBLOCK | RL_ACQUIRE_PREDICT)

/**
 * struct rl_acquire - take tokens (RL_IOC_ACQUIRE)
 * @count:       in: tokens wanted, >= 1. A count above the burst is served
 *               in chunks of at most burst tokens; between chunks the
 *               request goes to the back of the queue so that smaller
 *               requests are not stuck behind it. All or nothing: on error
 *               every token granted so far goes back to the pool.
 * @deadline_ns: in: absolute CLOCK_MONOTONIC time to give up at with
 *               -ETIMEDOUT, or RL_DEADLINE_NONE. At most S64_MAX otherwise.
 * @flags:       in: RL_ACQUIRE_NONBLOCK fails with -EAGAIN instead of
 *               sleeping (as does an fd opened with O_NONBLOCK); it never
 *               succeeds for a @count above the burst (-EINVAL).
 *               RL_ACQUIRE_PREDICT fails with -ETIMEDOUT at once when the
 *               predicted grant time is past @deadline_ns.
 * @priority:    in: RL_PRIO_LOW .. RL_PRIO_USER, or RL_PRIO_DEFAULT for
 *               the fd's priority (struct rl_client_config). HIGH and
 *               USER need the right to reconfigure the limiter or
 *               CAP_SYS_NICE (-EPERM), as for RL_IOC_SET_CLIENT.
 * @wait_ns:     out on success: time the caller slept.
 * @ready_ns:    out on -EAGAIN and -ETIMEDOUT: predicted CLOCK_MONOTONIC
 *               time the request could be granted at, given the tokens,
 *               the queue and the fd's cap at the time of the call;
 *               RL_DEADLINE_NONE when the limiter is paused. Out on
 *               success: the CLOCK_MONOTONIC instant the grant's tokens
 *               (of its last chunk) existed on the limiter's schedule,
 *               which the token bucket bound holds for; at or before the
 *               grant, and before the call when the limiter was
 *               backlogged (see ratelimit(4), "Bounds"). 0 when unlimited.
 * @lag_ns:      out on success: how far behind schedule the grant is:
 *               the time the limiter could have granted it by, had the
 *               caller asked as early as the rate allowed (0 when the
 *               caller kept up or waited); at most the time the bucket
 *               takes to fill.
 * @reserved:    must be zero.
 *
 * The outputs are cleared when the request is read, and filled in on
 * success, -EAGAIN and -ETIMEDOUT; the in fields are left as they are. A
 * struct the caller cannot write fails with -EFAULT before anything is
 * taken. A signal gives -EINTR (or a transparent restart with SA_RESTART;
 * the deadline is absolute) and consumes nothing.
 */
struct rl_acquire {
	__u64 count;
	__u64 deadline_ns;
	__u32 flags;
	__u32 priority;
	__u64 wait_ns;
	__u64 ready_ns;
	__u64 lag_ns;
	__u64 reserved[2];
};

/**
 * struct rl_stats - counters of a limiter (RL_IOC_GET_STATS)
 * @flags:         in: must be zero.
 * @reserved0:     in: must be zero.
 * @granted:       tokens granted since creation.
 * @requests:      acquire calls that passed validation.
 * @immediate:     requests granted without sleeping.
 * @waited:        requests granted after sleeping.
 * @wait_ns_total: sum of the sleep time of @waited requests.
 * @wait_ns_max:   longest sleep of one granted request.
 * @timeouts:      requests failed with -ETIMEDOUT (after sleeping or
 *                 predicted late).
 * @interrupted:   requests ended by a signal the caller sees: a fatal
 *                 one, or one whose handler runs (-EINTR, or a restart
 *                 after the handler with SA_RESTART). A stop (SIGSTOP,
 *                 SIGTSTP...) or the freezer restarts the call unseen:
 *                 that counts once in @requests and not here. Also
 *                 queued requests cancelled (RL_IOC_CANCEL, close,
 *                 RL_URING_CANCEL).
 * @rejected:      non-blocking requests failed with -EAGAIN.
 * @waiters:       requests sleeping now.
 * @available:     tokens in the bucket now, with those reserved in fds'
 *                 pages (RL_FEATURE_FAST), which come back for any
 *                 request that needs them.
 * @held:          permits held now (see rl_config.concurrency).
 * @clients:       fds attached to the limiter.
 * @backlog:       tokens kept for catching up now.
 * @refunded:      tokens given back by RL_IOC_REFUND.
 */
struct rl_stats {
	__u32 flags;
	__u32 reserved0;
	__u64 granted;
	__u64 requests;
	__u64 immediate;
	__u64 waited;
	__u64 wait_ns_total;
	__u64 wait_ns_max;
	__u64 timeouts;
	__u64 interrupted;
	__u64 rejected;
	__u64 waiters;
	__u64 available;
	__u64 held;
	__u64 clients;
	__u64 backlog;
	__u64 refunded;
};

/**
 * struct rl_release - give tokens back (RL_IOC_RELEASE, RL_IOC_REFUND)
 * @count:     in: tokens, >= 1. RL_IOC_RELEASE returns concurrency permits
 *             this fd holds (-EINVAL for more than it holds). RL_IOC_REFUND
 *             returns rate tokens acquired through this fd and not used
 *             (-EINVAL for more than it acquired and did not refund); the
 *             bucket still never holds more than the burst.
 * @flags:     in: must be zero.
 * @reserved0: must be zero.
 * @reserved:  must be zero.
 */
struct rl_release {
	__u64 count;
	__u32 flags;
	__u32 reserved0;
	__u64 reserved[2];
};

/**
 * struct rl_client_config - this fd's place in its limiter
 *                           (RL_IOC_SET_CLIENT, RL_IOC_GET_CLIENT)
 * @priority:  RL_PRIO_LOW .. RL_PRIO_USER for acquires that ask for
 *             RL_PRIO_DEFAULT; 0 on SET means RL_PRIO_MID.
 * @weight:    1 .. RL_WEIGHT_MAX: share of this fd among the backlogged
 *             fds of its priority (weighted fair queuing); 0 on SET
 *             means 1.
 * @cap:       most tokens this fd may take per period of the limiter, 0
 *             for no cap of its own.
 * @flags:     must be zero.
 * @reserved0: must be zero.
 * @held:      out (GET): permits this fd holds; ignored on SET.
 * @granted:   out (GET): tokens granted through this fd; ignored on SET.
 * @reserved:  must be zero on SET; zeroed on GET.
 *
 * A fresh fd has priority MID, weight 1 and no cap. SET needs a limiter
 * (-EBADFD) and keeps the fd's queued requests in place. A @priority above
 * MID or a @weight above 1 needs the right to reconfigure the limiter
 * (a private one, or write permission on a named one when the fd was
 * attached) or CAP_SYS_NICE, else -EPERM with nothing changed; the same
 * holds for struct rl_acquire's @priority.
 */
struct rl_client_config {
	__u32 priority;
	__u32 weight;
	__u64 cap;
	__u32 flags;
	__u32 reserved0;
	__u64 held;
	__u64 granted;
	__u64 reserved[3];
};

/**
 * struct rl_features - what this module supports (RL_IOC_GET_FEATURES)
 * @version:       RL_ABI_VERSION of the module.
 * @flags:         RL_FEATURE_* bits: RL_FEATURE_URING_CMD, RL_FEATURE_QUEUED,
 *                 RL_FEATURE_FAST, RL_FEATURE_KEYED, RL_FEATURE_IPC_NS.
 * @ioctls:        bit N set when ioctl number N (_IOC_NR) is supported.
 * @config_flags:  supported struct rl_config flags.
 * @acquire_flags: supported struct rl_acquire flags.
 * @attach_flags:  supported struct rl_attach flags.
 * @reserved:      zeroed.
 */
struct rl_features {
	__u32 version;
	__u32 flags;
	__u64 ioctls;
	__u64 config_flags;
	__u64 acquire_flags;
	__u64 attach_flags;
	__u64 reserved[3];
};

/*
 * Named limiters. A name is 1 to RL_NAME_MAX - 1 characters from
 * [A-Za-z0-9._-], not starting with '.', and not "count", "version" or
 * "features" (global files beside the limiters in sysfs); anything else
 * is -EINVAL.
 *
 * With RL_FEATURE_IPC_NS (struct rl_features.flags), a name lives in the
 * IPC namespace of the process that created it, as a System V IPC object
 * does: RL_IOC_ATTACH and RL_IOC_UNLINK see the names of the caller's
 * IPC namespace only, so that two containers may each have their own
 * "api". The host's (the initial namespace's) names are as before. A
 * namespace's names, persistent ones too, go when nothing holds the
 * namespace any more (no process in it, no open /proc/PID/ns/ipc, no bind
 * mount of it), within a second; fds attached to their limiters keep
 * working until closed, as after RL_IOC_UNLINK. RL_IOC_SHARE gives a
 * host's limiter a name in another namespace. The first name of a
 * namespace other than the host's takes a file descriptor of the caller
 * for a moment (the module holds the namespace by a file of nsfs): -EMFILE
 * when it has none free.
 */
#define RL_NAME_MAX		64

/* struct rl_attach.flags */
#define RL_ATTACH_CREATE	_BITUL(0)	/* create it if missing */
#define RL_ATTACH_EXCL		_BITUL(1)	/* with CREATE: -EEXIST if it exists */
#define RL_ATTACH_PERSIST	_BITUL(2)	/* a new one outlives its fds */
#define RL_ATTACH_FLAGS_ALL	(RL_ATTACH_CREATE | RL_ATTACH_EXCL | \
				 RL_ATTACH_PERSIST)

/**
 * struct rl_attach - make this fd a client of a named limiter (RL_IOC_ATTACH)
 * @name_ptr:  in: pointer to the NUL-terminated name.
 * @flags:     in: RL_ATTACH_* flags.
 * @mode:      in: permission bits (0 .. 0777) of a limiter this call
 *             creates, checked like a file's: read (4) lets a process
 *             attach and acquire, write (2) lets it reconfigure (through
 *             RL_IOC_SET_CONFIG on an attached fd, or sysfs). The owner
 *             is the caller's fsuid and fsgid. CAP_SYS_ADMIN bypasses the
 *             check. Ignored when the limiter exists.
 * @config:    in: limits of a limiter this call creates; ignored (but
 *             still validated) when the limiter exists.
 * @reserved:  must be zero.
 *
 * The fd must not be a client of a limiter yet (-EBUSY). Without
 * RL_ATTACH_CREATE a missing name is -ENOENT. A non-persistent limiter dies
 * with its last fd; a persistent one lives until RL_IOC_UNLINK. Denied
 * access is -EACCES. Past the module's bounds on named limiters (module
 * parameters max_named, and max_named_per_user and max_named_per_ns)
 * creation fails with -ENOSPC and -EDQUOT.
 */
struct rl_attach {
	__u64 name_ptr;
	__u32 flags;
	__u32 mode;
	struct rl_config config;
	__u64 reserved[4];
};

/**
 * struct rl_unlink - remove a name (RL_IOC_UNLINK)
 * @name_ptr:  in: pointer to the NUL-terminated name.
 * @flags:     in: must be zero.
 * @reserved0: must be zero.
 * @reserved:  must be zero.
 *
 * The name disappears at once (-ENOENT if missing); fds attached to the
 * limiter keep working until closed. Only the owner or CAP_SYS_ADMIN may
 * unlink (-EPERM). Any fd of /dev/ratelimit can be used. A share
 * (RL_IOC_SHARE) unlinked in its namespace goes from there only, and
 * takes CAP_SYS_ADMIN.
 */
struct rl_unlink {
	__u64 name_ptr;
	__u32 flags;
	__u32 reserved0;
	__u64 reserved[2];
};

/*
 * Global limits (issue #11): a per-host agent feeds a limiter tokens it
 * reserved elsewhere (RL_CONFIG_FED, RL_IOC_DEPOSIT), sets limits that hold
 * until a deadline (RL_IOC_SET_LEASE), and reads what the clients ask for
 * (RL_IOC_GET_DEMAND).
 */

/**
 * struct rl_deposit - feed tokens to a fed limiter (RL_IOC_DEPOSIT)
 * @count:     in: tokens to add, >= 1. out: tokens that did not fit (the
 *             bucket holds at most the burst); those are not added, so the
 *             agent can give them back to the global bucket.
 * @flags:     in: must be zero.
 * @reserved0: must be zero.
 * @available: out: tokens in the bucket after the deposit.
 * @reserved:  must be zero.
 *
 * -EINVAL on a limiter without RL_CONFIG_FED; needs the right to
 * reconfigure the limiter (as RL_IOC_SET_CONFIG: its private fd, an
 * attached fd with write permission, CAP_SYS_ADMIN), else -EPERM. Wakes
 * waiters in their usual order of service.
 */
struct rl_deposit {
	__u64 count;
	__u32 flags;
	__u32 reserved0;
	__u64 available;
	__u64 reserved[2];
};

/**
 * struct rl_lease - limits that hold until a deadline (RL_IOC_SET_LEASE)
 * @expires_ns: CLOCK_MONOTONIC time the lease ends; 0 ends the lease now
 *              (the fallback is applied).
 * @flags:      must be zero.
 * @reserved0:  must be zero.
 * @config:     limits applied now (as RL_IOC_SET_CONFIG: waiters kept and
 *              re-evaluated).
 * @fallback:   limits the kernel applies itself when the lease expires, or
 *              at once when the fd that set it is closed (the agent died),
 *              whichever comes first.
 * @reserved:   must be zero.
 *
 * Same permission as RL_IOC_SET_CONFIG. Both configurations are validated
 * before anything changes; neither may be keyed (RL_CONFIG_KEYED, -EINVAL),
 * as a keyed limiter takes no lease. One lease per limiter: a new SET_LEASE
 * (renewal, from any fd with the right) replaces it and the fd that set it
 * last holds it.
 */
struct rl_lease {
	__u64 expires_ns;
	__u32 flags;
	__u32 reserved0;
	struct rl_config config;
	struct rl_config fallback;
	__u64 reserved[2];
};

/**
 * struct rl_demand - what clients ask for (RL_IOC_GET_DEMAND)
 * @flags:     in: must be zero.
 * @reserved0: in: must be zero.
 * @asked:     tokens asked by acquire calls that passed validation, since
 *             creation (granted, refused with -EAGAIN, timed out,
 *             interrupted or still waiting).
 * @refused:   tokens of requests that failed with -EAGAIN or -ETIMEDOUT.
 * @queued:    tokens waiting now.
 * @busy_ns:   total time during which at least one request was sleeping.
 * @now_ns:    CLOCK_MONOTONIC time of this snapshot (to compute rates from
 *             two reads).
 * @reserved:  zeroed.
 */
struct rl_demand {
	__u32 flags;
	__u32 reserved0;
	__u64 asked;
	__u64 refused;
	__u64 queued;
	__u64 busy_ns;
	__u64 now_ns;
	__u64 reserved[4];
};

/* Most ancestors of a named limiter (struct rl_parent). */
#define RL_DEPTH_MAX		4

/**
 * struct rl_parent - a named limiter's place in a tree of limiters
 *                    (RL_IOC_SET_PARENT, RL_IOC_GET_PARENT)
 * @name_ptr: SET: in: pointer to the NUL-terminated name of the new
 *            parent, or 0 to make the limiter a root. GET: in: pointer to
 *            a buffer of RL_NAME_MAX bytes that receives the parent's
 *            name ("" for a root), or 0.
 * @weight:   share of the limiter among its parent's backlogged children,
 *            1 .. RL_WEIGHT_MAX; 0 on SET means 1. Out on GET.
 * @flags:    must be zero.
 * @depth:    GET: out: ancestors of the limiter. SET: must be zero.
 * @children: GET: out: its children. SET: must be zero.
 * @reserved: must be zero on SET; zeroed on GET.
 *
 * A grant of n tokens at a limiter takes n tokens (and, when a level of
 * the path limits concurrency, n permits) at the limiter and at every
 * ancestor, at once: all levels or none. Backlogged children share their
 * parent by weight, each within its own limits. See ratelimit(4).
 *
 * SET applies to the named limiter of this fd; it needs the right to
 * reconfigure it (as RL_IOC_SET_CONFIG) and write permission on the new
 * parent, else -EACCES. A private limiter, or one whose name was unlinked,
 * is -EINVAL; a missing parent -ENOENT; a parent in the limiter's own
 * subtree (itself included) -ELOOP; a tree in which a limiter would get
 * more than RL_DEPTH_MAX ancestors -EMLINK; a move between a path
 * that limits concurrency (a level with rl_config.concurrency) and one
 * that does not, of a limiter whose own concurrency is 0, while other
 * fds than the caller's are attached in the limiter's subtree, -EBUSY
 * (their grants would turn into permits, or stop being ones, as for a
 * concurrency switch). Nothing changes on error.
 * Sleeping requests, held permits and tokens stay; the new parent's
 * counts take the subtree's held permits. A limiter with children cannot
 * be unlinked (-EBUSY), and keeps its name while it has children even
 * when its last fd is closed.
 */
struct rl_parent {
	__u64 name_ptr;
	__u32 weight;
	__u32 flags;
	__u32 depth;
	__u32 children;
	__u64 reserved[2];
};

/*
 * Acquires through io_uring, where struct rl_features.flags has
 * RL_FEATURE_URING_CMD (kernels whose io_uring can cancel a command of a
 * file, 6.8 and later; elsewhere io_uring fails such commands with
 * -EOPNOTSUPP). An IORING_OP_URING_CMD SQE on a /dev/ratelimit fd, with
 * cmd_op:
 *  RL_URING_ACQUIRE  sqe->addr points to a struct rl_acquire, read at
 *                    submission. Completes when RL_IOC_ACQUIRE would
 *                    return, with the same semantics, order of service and
 *                    statistics: cqe->res is 0 when granted, else -errno
 *                    (-EAGAIN, -ETIMEDOUT, -ECANCELED...); the outputs of
 *                    the struct are written before the completion is
 *                    posted, so it must stay valid until then. The fd's
 *                    O_NONBLOCK does not apply; RL_ACQUIRE_NONBLOCK does.
 *  RL_URING_ACQUIRE_KEY  sqe->addr points to a struct rl_key_acquire of a
 *                    keyed limiter, read at submission: completes when
 *                    RL_IOC_ACQUIRE_KEY would return, its request waiting
 *                    in line on its key with the key's sleepers and queued
 *                    requests (see "Keyed limiters"); the outputs of its
 *                    acquire member are written as RL_URING_ACQUIRE's, on
 *                    -ENOSPC too. A cancelled request still in line takes
 *                    nothing; one granted by then completes with 0.
 *  RL_URING_CANCEL   cancels the acquires of this fd submitted to the same
 *                    ring whose user_data is sqe->addr: each completes
 *                    with -ECANCELED (unless served by then) and gives
 *                    back everything it got. cqe->res: how many, or
 *                    -ENOENT. IORING_OP_ASYNC_CANCEL does not reach
 *                    commands of files.
 * Closing the ring, or the exit of the submitting task, cancels them too.
 * A cancelled request counts as interrupted in struct rl_stats. Leave the
 * other SQE fields zero: they are reserved.
 */
#define RL_FEATURE_URING_CMD	_BITUL(0)	/* struct rl_features.flags */
#define RL_URING_ACQUIRE	_IOWR(0xBA, 3, struct rl_acquire)
#define RL_URING_CANCEL		_IOW(0xBA, 17, __u64)
/* RL_URING_ACQUIRE_KEY: with the ioctls, after struct rl_key_acquire. */

/*
 * Queued acquires, for event loops that poll the fd (every kernel; struct
 * rl_features.flags has RL_FEATURE_QUEUED). RL_IOC_SUBMIT never sleeps: it
 * grants a request at once when a non-blocking RL_IOC_ACQUIRE would, and
 * otherwise puts it in the limiter's queue exactly where a sleeper would
 * go (priorities, fair shares between fds, caps, trees, chunks, all or
 * nothing) and returns its ticket. The fd polls readable (POLLIN) while a
 * finished request waits to be collected, besides when a non-blocking
 * acquire of one token would succeed; RL_IOC_COLLECT returns one finished
 * request, RL_IOC_CANCEL withdraws one. At most RL_QUEUED_MAX requests of
 * an fd are outstanding (queued, or finished and not collected); closing
 * the fd, by exit or kill -9 too, cancels them. One fd is one client:
 * its requests share its fair share, however many are queued.
 */
#define RL_FEATURE_QUEUED	_BITUL(1)	/* struct rl_features.flags */
#define RL_QUEUED_MAX		64

/**
 * struct rl_queued - a queued acquire (RL_IOC_SUBMIT) and its result
 *                    (RL_IOC_COLLECT)
 * @ticket:      out: SUBMIT: 0 when granted at once (the outputs are final,
 *               there is nothing to collect), else the request's number on
 *               this fd, from 1 up; COLLECT: the ticket of the result.
 * @count:       in (SUBMIT): tokens wanted, >= 1, as struct rl_acquire's
 *               (above the burst: in chunks, all or nothing). Out
 *               (COLLECT): the count asked.
 * @deadline_ns: in: absolute CLOCK_MONOTONIC time to give up at, or
 *               RL_DEADLINE_NONE; at most S64_MAX otherwise.
 * @flags:       in: 0 or RL_ACQUIRE_PREDICT (-ETIMEDOUT at once when the
 *               predicted grant time is past @deadline_ns).
 * @priority:    in: as struct rl_acquire's (RL_PRIO_DEFAULT: the fd's).
 * @result:      out (COLLECT): 0 when granted, -ETIMEDOUT when the
 *               deadline came first (nothing consumed). 0 from SUBMIT.
 * @reserved0:   must be zero.
 * @wait_ns:     out: time from SUBMIT to the grant.
 * @ready_ns:    out: as struct rl_acquire's, on a grant or -ETIMEDOUT.
 * @lag_ns:      out: as struct rl_acquire's, on a grant.
 * @user_data:   in (SUBMIT): the caller's, given back by COLLECT.
 * @reserved:    must be zero (SUBMIT); zeroed (COLLECT).
 *
 * RL_IOC_SUBMIT errors: -EINVAL (a field, a reserved field, a count that
 * can never be granted), -EBADFD (no limiter), -EPERM (priority, as for
 * RL_IOC_ACQUIRE), -EBUSY (RL_QUEUED_MAX outstanding on this fd),
 * -ETIMEDOUT (the deadline is past, or predicted late with
 * RL_ACQUIRE_PREDICT; nothing queued, @ready_ns written), -ENOMEM,
 * -EFAULT (checked before anything is taken).
 * RL_IOC_COLLECT: 0 with one finished request, in the order they
 * finished; -EAGAIN when none has; -EFAULT (checked before the request
 * is taken off the fd: it stays to be collected). Its input fields are
 * ignored.
 * RL_IOC_CANCEL (argument: a pointer to a ticket, or to 0 for all of this
 * fd's): a queued request leaves the queue with what it got so far; a
 * granted one that was not collected gives back its tokens and permits.
 * Either way there is nothing to collect for it, and it counts as
 * interrupted in struct rl_stats. 0, or -ENOENT when no such request is
 * outstanding (it was collected, or never submitted).
 * A collected grant is the fd's as an RL_IOC_ACQUIRE's is: permits held
 * until RL_IOC_RELEASE or close, tokens refundable with RL_IOC_REFUND.
 */
struct rl_queued {
	__u64 ticket;
	__u64 count;
	__u64 deadline_ns;
	__u32 flags;
	__u32 priority;
	__s32 result;
	__u32 reserved0;
	__u64 wait_ns;
	__u64 ready_ns;
	__u64 lag_ns;
	__u64 user_data;
	__u64 reserved;
};

/*
 * Acquires without a system call, where struct rl_features.flags has
 * RL_FEATURE_FAST. mmap(NULL, RL_FAST_SIZE, PROT_READ | PROT_WRITE,
 * MAP_SHARED, fd, 0) maps the fd's reservation: a page whose first bytes
 * are a struct rl_fast, the same page for every mapping of the fd (and of
 * its processes' forks, which inherit the mapping). The mapping refers to
 * the page, not to the fd's file: it keeps neither the file, its limiter
 * nor the module, so closing the fd ends its client exactly as if it had
 * never been mapped (permits and reserved tokens back, a transient
 * limiter gone). A mapping that outlives its file's last fd shows a page
 * the kernel emptied and never reads again: it holds no token and gets
 * none. Only an fd that may reconfigure its limiter maps
 * it (a private limiter's, or a named one's attached with write
 * permission); others get -EACCES, and an fd with no limiter yet -EBADFD
 * (a module without RL_FEATURE_FAST: -ENODEV).
 * Offsets other than 0, sizes over RL_FAST_SIZE, MAP_PRIVATE and
 * PROT_EXEC are -EINVAL.
 *
 * Once the fd is mapped, an RL_IOC_ACQUIRE of it that the kernel grants at
 * once also moves up to a chunk of tokens (an eighth of the burst, at most
 * half of those left) from the bucket into @tokens, if nobody waits and
 * the limiter has none of what needs the kernel on every grant: it is a
 * root of no tree, rate-limited and not unlimited, fed, paused, catching
 * up with a backlog, under concurrency or under a lease, and the fd has no
 * cap and a default priority of at most RL_PRIO_MID. The fd then takes n
 * of them with a compare-and-swap of @tokens to @tokens - n, which is the
 * grant, and adds 1 to @acquires. The kernel takes back what is left, with
 * an exchange to 0, whenever a request of another fd would otherwise not
 * be granted at once or would wait, when the limiter or the fd's settings
 * change, at the kernel's first look at the page (below) after its last
 * mapping went (munmap, exec, exit), and when the file's last fd is
 * closed (also by exit or kill -9); an unmapped page gets none: so a
 * reserved token never waits while a request does, and none is lost. The
 * limiter's bound holds with reserved tokens as taken: its bucket holds at
 * most the burst less what is reserved. Tokens taken from @tokens count in
 * struct rl_stats (granted, requests, immediate) and the fd's granted from
 * the kernel's next look at the page (every read of the statistics), and
 * struct rl_stats.available counts what pages hold. The page holds
 * nothing but these counters.
 *
 * Every close of an fd of the file, by any process (close(2), dup2() or
 * dup3() over it, exec of an O_CLOEXEC fd, exit), adds 1 to @closes
 * before the file may go. A process that reads @closes when it maps the
 * page and compares it before each take knows when the fd number it
 * mapped may name another file since: it then takes nothing from the page
 * until it has mapped that number again (what libratelimit does).
 */
#define RL_FEATURE_FAST		_BITUL(2)	/* struct rl_features.flags */
#define RL_FAST_SIZE		4096

/**
 * struct rl_fast - the reservation of an fd, at offset 0 of its mapping
 * @tokens:   tokens reserved for this fd; taken by compare-and-swap.
 * @acquires: requests served from @tokens, counted by the taker.
 * @closes:   closes of fds of this file, counted by the kernel; 0 from a
 *            module older than the field.
 * @reserved: 0.
 */
struct rl_fast {
	__u64 tokens;
	__u64 acquires;
	__u64 closes;
	__u64 reserved[5];
};

/**
 * struct rl_cycle - give back permits and take tokens in one call
 *                   (RL_IOC_CYCLE)
 * @release:   in: concurrency permits this fd holds, given back first;
 *             0 to give back none. More than the fd holds is -EINVAL with
 *             nothing done. Out: set to 0 once they are given back,
 *             whatever the acquire's result, so that a call restarted
 *             after a signal (SA_RESTART) does not give them back twice
 *             and the caller knows what it holds on any error.
 * @flags:     in: must be zero.
 * @reserved0: must be zero.
 * @acquire:   the request, in and out, as for RL_IOC_ACQUIRE.
 * @reserved:  must be zero.
 *
 * The permits are given back and the request made under one hold of the
 * limiter's lock: requests already waiting are served from what came back
 * first, as after an RL_IOC_RELEASE, and the request then takes its place
 * behind them or is granted at once, as an RL_IOC_ACQUIRE. Errors of the
 * request are those of RL_IOC_ACQUIRE; one that can never be granted
 * (-EINVAL) gives nothing back. Stats count the release and the request
 * as those two calls would.
 */
struct rl_cycle {
	__u64 release;
	__u32 flags;
	__u32 reserved0;
	struct rl_acquire acquire;
	__u64 reserved[2];
};

/* struct rl_perm.flags: the fields to set */
#define RL_PERM_UID		_BITUL(0)
#define RL_PERM_GID		_BITUL(1)
#define RL_PERM_MODE		_BITUL(2)
#define RL_PERM_FLAGS_ALL	(RL_PERM_UID | RL_PERM_GID | RL_PERM_MODE)

/**
 * struct rl_perm - owner, group and mode of a named limiter (RL_IOC_SET_PERM)
 * @uid:      in, with RL_PERM_UID: the new owner, a uid of the caller's
 *            user namespace (sysfs shows it mapped into the initial one).
 * @gid:      in, with RL_PERM_GID: the new group, likewise.
 * @mode:     in, with RL_PERM_MODE: the new permission bits, 0 .. 0777.
 * @flags:    in: RL_PERM_* flags, at least one: the fields to set.
 * @reserved: must be zero.
 *
 * Changes the named limiter this fd is attached to in place, as chmod(2)
 * and chown(2) change a file: the owner may change the mode, and the
 * group to one of its own groups; anything else (another owner, another
 * group, or a limiter the caller does not own) takes CAP_SYS_ADMIN, or
 * CAP_CHOWN in the caller's user namespace when the limiter's owner and
 * group are mapped in it, else -EPERM. The files of its sysfs directory
 * follow the new owner and group. Attached fds keep working with the
 * rights they were given when they attached; the new mode holds from the
 * next RL_IOC_ATTACH on. A private limiter, or one whose name was
 * unlinked, is -EINVAL; an fd without a limiter -EBADFD; unknown flags,
 * no flag, reserved fields, mode bits beyond 0777 or an id without a
 * mapping -EINVAL. Nothing changes on error.
 */
struct rl_perm {
	__u32 uid;
	__u32 gid;
	__u32 mode;
	__u32 flags;
	__u64 reserved[2];
};

/* struct rl_features.flags: names per IPC namespace, RL_IOC_SHARE */
#define RL_FEATURE_IPC_NS	_BITUL(4)

/* struct rl_share.flags */
#define RL_SHARE_REVOKE		_BITUL(0)	/* take the share back */
#define RL_SHARE_FLAGS_ALL	RL_SHARE_REVOKE

/**
 * struct rl_share - give a host's named limiter a name in another IPC
 *                   namespace, such as a container's (RL_IOC_SHARE)
 * @ns_fd:    in: an fd of the namespace: an open /proc/PID/ns/ipc of a
 *            process in it, or a bind mount of one.
 * @flags:    in: 0 to share, RL_SHARE_REVOKE to take the share back.
 * @reserved: must be zero.
 *
 * On an fd attached to a named limiter of the host's IPC namespace: from
 * now on the processes of the namespace of @ns_fd find it under its name
 * as one of their own, with the permission bits checked as for the
 * host's processes. This is how the host's administrator lets chosen
 * containers share one budget (a database's, that every replica on the
 * node must respect), and the only way a name crosses namespaces. It
 * takes CAP_SYS_ADMIN (-EPERM). The share counts as one of the
 * namespace's names (max_named_per_ns is not checked), is listed in its
 * sysfs directory as a symbolic link to the host's directory, and goes
 * when the host's name goes, when revoked, when unlinked in the namespace
 * (with CAP_SYS_ADMIN), or with the namespace. A share is no parent for
 * RL_IOC_SET_PARENT there: a tree of limiters stays in one namespace.
 *
 * Errors: -EBADF for a bad @ns_fd; -EINVAL for unknown flags, reserved
 * fields, an @ns_fd that is not an IPC namespace's or is the host's, or a
 * limiter that is private, unlinked or of another namespace; -EBADFD for
 * an fd without a limiter; -EEXIST when the namespace has the name
 * already; -ENOENT to revoke what is not shared there; -ENOMEM.
 */
struct rl_share {
	__s32 ns_fd;
	__u32 flags;
	__u64 reserved[3];
};

/*
 * Keyed limiters (struct rl_features.flags has RL_FEATURE_KEYED). A limiter
 * created with RL_CONFIG_KEYED is a family of token buckets, one per key:
 * a key is 1 to RL_KEY_MAX opaque bytes (an IP address, a hash of an API
 * key, a user id), and each behaves as its own bucket of the limiter's
 * rate, period and burst, created full on first use. Keys never borrow
 * from one another, and requests of one key are served in arrival order
 * (their priorities are checked but not used); requests of different keys
 * never wait for each other.
 *
 * The kernel keeps state only for keys that carry some: a key whose bucket
 * is full and on which nobody sleeps is dropped at any time (it is what a
 * new key would be), so memory follows the keys used within one burst's
 * refill time. At most rl_config.keys keys carry state at once; a request
 * for a new key beyond that fails with -ENOSPC (the keys already kept go
 * on as before, and ready_ns says when every key that was idle then is
 * full, an upper bound on when room comes back). Keys are told apart by a
 * 64-bit keyed hash (SipHash, a secret per limiter): two keys that collide
 * share one bucket, which can only refuse, never grant more than the
 * limits. The memory is charged to the memory cgroup of the process that
 * created the limiter.
 *
 * Event loops queue requests of a key with RL_IOC_SUBMIT_KEY (struct
 * rl_key_queued) and collect them as any ticket (RL_IOC_COLLECT, poll,
 * RL_IOC_CANCEL), or submit them to io_uring (RL_URING_ACQUIRE_KEY); they
 * wait in line on their key with the sleepers.
 *
 * A keyed limiter takes no RL_IOC_ACQUIRE, CYCLE, SUBMIT, DEPOSIT,
 * SET_LEASE, SET_PARENT, RL_URING_ACQUIRE or mmap (-EINVAL), has no
 * concurrency limit, catch-up, backlog, fed or unlimited mode, and needs a
 * rate of 1 .. RL_KEY_RATE_MAX (-EINVAL). RL_IOC_GET_STATS reports the sums
 * of all its keys (available and held are 0); RL_IOC_GET_KEYS its keys.
 * A change of its limits applies to each key at the key's next request.
 */
#define RL_FEATURE_KEYED	_BITUL(3)	/* struct rl_features.flags */
#define RL_KEY_MAX		64
#define RL_KEYS_DEFAULT		65536
#define RL_KEYS_USER_MAX	(1U << 20)
#define RL_KEYS_MAX		(1U << 26)
#define RL_KEY_RATE_MAX		0xffffffffULL

/**
 * struct rl_key_acquire - take tokens from one key's bucket
 *                         (RL_IOC_ACQUIRE_KEY)
 * @acquire:   the request, in and out, as for RL_IOC_ACQUIRE but for
 *             @acquire.count, 1 .. the burst (-EINVAL above: a key's
 *             requests are not served in chunks), and @acquire.lag_ns,
 *             always 0. @acquire.ready_ns on -EAGAIN and -ETIMEDOUT is
 *             the time the request could be granted at behind the key's
 *             sleepers: what an HTTP server sends as Retry-After; on
 *             -ENOSPC, when every key idle then is full.
 * @key_len:   in: bytes of @key used, 1 .. RL_KEY_MAX.
 * @flags:     in: must be zero.
 * @reserved:  must be zero.
 * @key:       in: the key; bytes past @key_len are ignored.
 *
 * Errors: those of RL_IOC_ACQUIRE; -EINVAL when the fd's limiter is not
 * keyed; -ENOSPC when the key is new and the limiter already keeps as
 * many keys as rl_config.keys allows, all carrying state (@acquire.ready_ns
 * filled in). A timeout, a
 * signal or a kill takes nothing from the key.
 */
struct rl_key_acquire {
	struct rl_acquire acquire;
	__u32 key_len;
	__u32 flags;
	__u64 reserved[3];
	__u8 key[RL_KEY_MAX];
};

/**
 * struct rl_key_queued - queue a request of one key's tokens
 *                        (RL_IOC_SUBMIT_KEY)
 * @queued:   the request, in and out, as for RL_IOC_SUBMIT but for
 *            @queued.count, 1 .. the burst (-EINVAL above), and
 *            @queued.lag_ns, always 0. @queued.ready_ns on -ETIMEDOUT is
 *            the time the request could be granted at behind the key's
 *            line; on -ENOSPC as for RL_IOC_ACQUIRE_KEY.
 * @key_len:  in: bytes of @key used, 1 .. RL_KEY_MAX.
 * @flags:    in: must be zero.
 * @reserved: must be zero.
 * @key:      in: the key; bytes past @key_len are ignored.
 *
 * A ticket of the fd as RL_IOC_SUBMIT's: RL_IOC_COLLECT reports it (the
 * struct rl_queued part; result 0, -ETIMEDOUT, or -EINVAL when the burst
 * was lowered below its count while it waited), poll says when one is
 * finished, RL_IOC_CANCEL and close withdraw it. It waits in line on its
 * key behind the requests before it, queued or sleeping. A withdrawn
 * request still in line takes nothing and counts as interrupted; a
 * granted one not yet collected keeps its tokens taken (a key's bucket
 * takes nothing back) and counts as granted.
 * Errors: those of RL_IOC_SUBMIT; -EINVAL when the fd's limiter is not
 * keyed; -ENOSPC as for RL_IOC_ACQUIRE_KEY (@queued's outputs written).
 */
struct rl_key_queued {
	struct rl_queued queued;
	__u32 key_len;
	__u32 flags;
	__u64 reserved[3];
	__u8 key[RL_KEY_MAX];
};

/**
 * struct rl_key_state - one key's state (RL_IOC_GET_KEY)
 * @key_len:   in: bytes of @key used, 1 .. RL_KEY_MAX.
 * @flags:     in: must be zero.
 * @key:       in: the key.
 * @available: out: tokens the key's bucket holds now (the burst for a key
 *             without state).
 * @full_ns:   out: CLOCK_MONOTONIC time the bucket is full again, 0 when
 *             it is full now.
 * @waiters:   out: requests sleeping on the key.
 * @kept:      out: 1 when the limiter keeps state for the key, else 0.
 * @reserved0: out: zeroed.
 * @reserved:  out: zeroed.
 *
 * Reads the key without creating it. -EINVAL when the limiter is not keyed.
 */
struct rl_key_state {
	__u32 key_len;
	__u32 flags;
	__u8 key[RL_KEY_MAX];
	__u64 available;
	__u64 full_ns;
	__u64 waiters;
	__u32 kept;
	__u32 reserved0;
	__u64 reserved[3];
};

/**
 * struct rl_keys_stats - the keys of a keyed limiter (RL_IOC_GET_KEYS)
 * @flags:     in: must be zero.
 * @reserved0: in: must be zero.
 * @keys:      keys with state now.
 * @keys_max:  the most keys with state at once (rl_config.keys in force).
 * @created:   keys given state since the limiter was created.
 * @evicted:   keys dropped since, their buckets full.
 * @refused:   requests failed with -ENOSPC since.
 * @waiters:   requests sleeping now, on all keys.
 * @reserved:  zeroed.
 *
 * Counts only: no key is ever listed. -EINVAL when the limiter is not keyed.
 */
struct rl_keys_stats {
	__u32 flags;
	__u32 reserved0;
	__u64 keys;
	__u64 keys_max;
	__u64 created;
	__u64 evicted;
	__u64 refused;
	__u64 waiters;
	__u64 reserved[9];
};

#define RL_IOC_MAGIC		0xBA	/* unassigned in ioctl-number.rst */

#define RL_IOC_GET_FEATURES	_IOR(RL_IOC_MAGIC, 0, struct rl_features)
#define RL_IOC_SET_CONFIG	_IOW(RL_IOC_MAGIC, 1, struct rl_config)
#define RL_IOC_GET_CONFIG	_IOR(RL_IOC_MAGIC, 2, struct rl_config)
#define RL_IOC_ACQUIRE		_IOWR(RL_IOC_MAGIC, 3, struct rl_acquire)
#define RL_IOC_GET_STATS	_IOWR(RL_IOC_MAGIC, 4, struct rl_stats)
#define RL_IOC_ATTACH		_IOW(RL_IOC_MAGIC, 5, struct rl_attach)
#define RL_IOC_UNLINK		_IOW(RL_IOC_MAGIC, 6, struct rl_unlink)
#define RL_IOC_RELEASE		_IOW(RL_IOC_MAGIC, 7, struct rl_release)
#define RL_IOC_REFUND		_IOW(RL_IOC_MAGIC, 8, struct rl_release)
#define RL_IOC_SET_CLIENT	_IOW(RL_IOC_MAGIC, 9, struct rl_client_config)
#define RL_IOC_GET_CLIENT	_IOR(RL_IOC_MAGIC, 10, struct rl_client_config)
#define RL_IOC_DEPOSIT		_IOWR(RL_IOC_MAGIC, 11, struct rl_deposit)
#define RL_IOC_SET_LEASE	_IOW(RL_IOC_MAGIC, 12, struct rl_lease)
#define RL_IOC_GET_DEMAND	_IOWR(RL_IOC_MAGIC, 13, struct rl_demand)
#define RL_IOC_SET_PARENT	_IOW(RL_IOC_MAGIC, 14, struct rl_parent)
#define RL_IOC_GET_PARENT	_IOWR(RL_IOC_MAGIC, 15, struct rl_parent)
#define RL_IOC_CYCLE		_IOWR(RL_IOC_MAGIC, 16, struct rl_cycle)
/* 17 is RL_URING_CANCEL's. */
#define RL_IOC_SET_PERM		_IOW(RL_IOC_MAGIC, 18, struct rl_perm)
#define RL_IOC_SUBMIT		_IOWR(RL_IOC_MAGIC, 19, struct rl_queued)
#define RL_IOC_COLLECT		_IOWR(RL_IOC_MAGIC, 20, struct rl_queued)
#define RL_IOC_CANCEL		_IOW(RL_IOC_MAGIC, 21, __u64)
#define RL_IOC_ACQUIRE_KEY	_IOWR(RL_IOC_MAGIC, 22, struct rl_key_acquire)
#define RL_IOC_GET_KEY		_IOWR(RL_IOC_MAGIC, 23, struct rl_key_state)
#define RL_IOC_GET_KEYS		_IOWR(RL_IOC_MAGIC, 24, struct rl_keys_stats)
#define RL_IOC_SUBMIT_KEY	_IOWR(RL_IOC_MAGIC, 25, struct rl_key_queued)
#define RL_IOC_SHARE		_IOW(RL_IOC_MAGIC, 26, struct rl_share)
#define RL_URING_ACQUIRE_KEY	_IOWR(RL_IOC_MAGIC, 22, struct rl_key_acquire)

#endif /* _UAPI_LINUX_RATELIMIT_DEV_H */
