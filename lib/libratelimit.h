/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libratelimit.h - libratelimit, the userspace library of /dev/ratelimit.
 *
 * Conventions (as in liburing):
 * - Functions return 0 (or a non-negative value) on success and a negative
 *   errno value on failure. They never read or change errno.
 * - The library keeps no state and takes no locks: every function is
 *   thread-safe and async-signal-safe. The exception is the opt-in
 *   struct rl_batch, whose state the caller owns (one per thread).
 * - Blocking acquires sleep in the kernel. A signal interrupts them with
 *   -EINTR unless its handler was installed with SA_RESTART, in which case
 *   the kernel restarts the call transparently (deadlines are absolute, so
 *   a restart does not extend them). Nothing is consumed by an interrupted
 *   acquire.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef LIBRATELIMIT_H
#define LIBRATELIMIT_H

#include <stddef.h>
#include <stdint.h>
#include <linux/ratelimit_dev.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Path of the device rl_open() opens. */
#define RL_DEVICE_PATH		"/dev/ratelimit"

/* Buffer size always large enough for rl_format_rate(), NUL included. */
#define RL_RATE_STRLEN		80

/**
 * rl_open() - open a new client of /dev/ratelimit
 * @flags: 0 or a combination of O_NONBLOCK and O_CLOEXEC.
 *
 * The file is always opened O_RDWR | O_CLOEXEC: an fd leaked across
 * execve() would keep a client alive behind the new program's back.
 * Clear FD_CLOEXEC with fcntl() to hand the fd to a child on purpose.
 * With O_NONBLOCK every acquire on the fd behaves like rl_try_acquire().
 *
 * Return: the new fd, -EINVAL for other flags, or the -errno of open(2)
 * (-ENOENT when the module is not loaded).
 */
int rl_open(int flags);

/**
 * rl_close() - close a client fd
 * @fd: fd from rl_open().
 *
 * Return: 0 or the -errno of close(2). The fd is released in any case.
 */
int rl_close(int fd);

/**
 * rl_set_config() - configure the fd's limiter (RL_IOC_SET_CONFIG)
 * @fd:  client fd.
 * @cfg: limits; reserved fields must be zero.
 *
 * The first call creates the fd's private limiter, later calls change it
 * atomically, keeping tokens and queued waiters.
 *
 * Return: 0, -EINVAL for a NULL @cfg or a configuration the kernel
 * rejects, or another -errno from the ioctl.
 */
int rl_set_config(int fd, const struct rl_config *cfg);

/**
 * rl_get_config() - read the limits in force (RL_IOC_GET_CONFIG)
 * @fd:  client fd.
 * @cfg: filled on success; burst is the value in force.
 *
 * Return: 0, -EBADFD before the first rl_set_config(), or another -errno.
 */
int rl_get_config(int fd, struct rl_config *cfg);

/**
 * rl_acquire() - take tokens, waiting as long as it takes
 * @fd:    client fd.
 * @count: tokens wanted, >= 1; may exceed the burst.
 *
 * Return: 0 once all @count tokens are granted, -EINTR on a signal,
 * -EAGAIN when @fd was opened with O_NONBLOCK and the tokens are not
 * there, or another -errno.
 */
int rl_acquire(int fd, uint64_t count);

/**
 * rl_try_acquire() - take tokens only if they are there now
 * @fd:       client fd.
 * @count:    tokens wanted, 1 .. burst.
 * @ready_ns: if not NULL, set on -EAGAIN to the predicted CLOCK_MONOTONIC
 *            time (see rl_now_ns()) the request could be granted at, or
 *            RL_DEADLINE_NONE when the limiter is paused.
 *
 * Return: 0 when granted, -EAGAIN when not, -EINVAL when @count exceeds
 * the burst, or another -errno.
 */
int rl_try_acquire(int fd, uint64_t count, uint64_t *ready_ns);

/**
 * rl_acquire_timeout() - take tokens, waiting at most @timeout_ns
 * @fd:         client fd.
 * @count:      tokens wanted, >= 1.
 * @timeout_ns: longest wait in ns from now; RL_DEADLINE_NONE (or any value
 *              too large for a deadline) waits forever.
 * @wait_ns:    if not NULL, set on success to the time the caller slept.
 *
 * Return: 0 when granted, -ETIMEDOUT when the time ran out (nothing is
 * consumed), -EINTR on a signal, or another -errno.
 */
int rl_acquire_timeout(int fd, uint64_t count, uint64_t timeout_ns,
		       uint64_t *wait_ns);

/**
 * rl_fast_map() - take tokens of @fd without a system call (RL_FEATURE_FAST)
 * @fd: client fd with a limiter, that may reconfigure it.
 *
 * Maps the fd's reservation page: rl_acquire(), rl_try_acquire() and
 * rl_acquire_timeout() take tokens from it, when the kernel put enough
 * there, before they make the ioctl. Done by rl_set_config() and
 * rl_attach() for an fd of rl_open() (unless the environment has
 * RATELIMIT_FAST=0). The mapping does not keep the fd's file: close(2)
 * ends the client as rl_close() does, and a later take of the same fd
 * number (closed, dup2()ed over, opened again) maps what it names now, or
 * takes nothing. Mapping twice is 0.
 *
 * Return: 0, -EACCES for an fd that may only acquire, -EBADFD for an fd
 * with no limiter yet, -ENODEV for a module without RL_FEATURE_FAST,
 * -EBADF, or another -errno of mmap(2).
 */
int rl_fast_map(int fd);

/**
 * rl_fast_take() - take tokens from @fd's reservation page only
 * @fd:    client fd.
 * @count: tokens wanted.
 *
 * What rl_acquire() and rl_try_acquire() do first, for bindings that make
 * the ioctl themselves: no system call, no wait.
 *
 * Return: 1 if @count tokens were taken from the page of @fd (mapped by
 * rl_fast_map()), else 0: not mapped, @count 0, or fewer tokens there.
 */
int rl_fast_take(int fd, uint64_t count);

/**
 * rl_fast_unmap() - undo rl_fast_map(); the kernel takes back the page's
 * tokens at its next look at the page
 * @fd: client fd.
 *
 * Return: 0, or -ENOENT if it was not mapped.
 */
int rl_fast_unmap(int fd);

/**
 * rl_acquire_ex() - the raw RL_IOC_ACQUIRE
 * @fd:  client fd.
 * @req: request, filled in by the caller (reserved fields zero); the
 *       kernel writes the outputs back on success, -EAGAIN and -ETIMEDOUT.
 *
 * Return: 0 or -errno, as documented for struct rl_acquire.
 */
int rl_acquire_ex(int fd, struct rl_acquire *req);

/**
 * rl_release() - give back concurrency permits (RL_IOC_RELEASE)
 * @fd:    client fd of a limiter with a concurrency limit.
 * @count: permits, 1 .. the number this fd holds.
 *
 * On a limiter with rl_config.concurrency set, every token an acquire
 * grants is a permit held by the fd until it is released here or the fd
 * is closed (by exit or kill -9 too).
 *
 * Return: 0, -EINVAL for a @count of 0 or above what @fd holds, -EBADFD
 * without a limiter, or another -errno.
 */
int rl_release(int fd, uint64_t count);

/**
 * rl_cycle() - give back permits and acquire again, in one call
 *              (RL_IOC_CYCLE)
 * @fd:       client fd of a limiter with a concurrency limit.
 * @release:  permits @fd holds to give back first, 0 .. the number it
 *            holds.
 * @count:    tokens (permits) wanted, >= 1; waits as long as it takes.
 * @released: if not NULL, set to the permits given back: @release, or 0
 *            when the call failed before giving them back.
 *
 * What rl_release() then rl_acquire() do, in one syscall and atomically:
 * requests already waiting are served from what comes back first.
 *
 * Return: 0 once granted; -EINVAL (nothing given back) for @release above
 * what @fd holds, a @count of 0 or above the concurrency limit; -EINTR on
 * a signal (the permits are given back); -EBADFD without a limiter, or
 * another -errno.
 */
int rl_cycle(int fd, uint64_t release, uint64_t count, uint64_t *released);

/**
 * rl_cycle_ex() - the raw RL_IOC_CYCLE
 * @fd:  client fd.
 * @req: request, filled in by the caller (reserved fields zero); the
 *       kernel sets @req->release to 0 once it gave the permits back and
 *       writes the acquire's outputs as for rl_acquire_ex().
 *
 * Return: 0 or -errno, as documented for struct rl_cycle.
 */
int rl_cycle_ex(int fd, struct rl_cycle *req);

/**
 * rl_refund() - give back rate tokens not used (RL_IOC_REFUND)
 * @fd:    client fd.
 * @count: tokens, 1 .. those acquired through @fd and not refunded yet.
 *
 * The tokens go back to the bucket, which still never holds more than the
 * burst: acquire the most a job may need, refund what it did not use.
 *
 * Return: 0, -EINVAL for a @count of 0 or too large, -EBADFD without a
 * limiter, or another -errno.
 */
int rl_refund(int fd, uint64_t count);

/**
 * rl_set_client() - set the fd's priority, weight and cap (RL_IOC_SET_CLIENT)
 * @fd: client fd with a limiter.
 * @cc: priority (RL_PRIO_LOW .. RL_PRIO_USER, 0 for MID), weight (1 ..
 *      RL_WEIGHT_MAX, 0 for 1), cap (tokens per period, 0 for none);
 *      flags and reserved fields zero. The outputs held and granted are
 *      ignored, so a struct filled by rl_get_client() may be passed back.
 *
 * Return: 0, -EINVAL for values out of range, -EBADFD without a limiter,
 * or another -errno.
 */
int rl_set_client(int fd, const struct rl_client_config *cc);

/**
 * rl_get_client() - read the fd's client settings (RL_IOC_GET_CLIENT)
 * @fd: client fd with a limiter.
 * @cc: filled on success, with the permits the fd holds and the tokens
 *      granted through it.
 *
 * Return: 0, -EBADFD without a limiter, or another -errno.
 */
int rl_get_client(int fd, struct rl_client_config *cc);

/**
 * rl_get_stats() - read the limiter's counters (RL_IOC_GET_STATS)
 * @fd: client fd.
 * @st: filled on success (the library zeroes the input fields).
 *
 * Return: 0, -EBADFD before the first rl_set_config(), or another -errno.
 */
int rl_get_stats(int fd, struct rl_stats *st);

/**
 * rl_get_features() - what the loaded module supports
 * @fd: client fd (a configured limiter is not needed).
 * @f:  filled on success.
 *
 * Return: 0 or -errno.
 */
int rl_get_features(int fd, struct rl_features *f);

/**
 * rl_deposit() - feed tokens to a fed limiter (RL_IOC_DEPOSIT)
 * @fd:     client fd of a limiter configured with RL_CONFIG_FED, with the
 *          right to reconfigure it.
 * @count:  tokens to add, >= 1.
 * @excess: if not NULL, set on success to the tokens that did not fit
 *          (the bucket holds at most the burst): they were not added.
 *
 * Waiters are served from the deposit in their usual order.
 *
 * Return: 0, -EINVAL for a @count of 0 or a limiter without RL_CONFIG_FED,
 * -EPERM without the right to reconfigure it, -EBADFD without a limiter,
 * or another -errno.
 */
int rl_deposit(int fd, uint64_t count, uint64_t *excess);

/**
 * rl_set_lease() - limits that hold until a deadline (RL_IOC_SET_LEASE)
 * @fd:    client fd with the right to reconfigure its limiter; it holds
 *         the lease: closing it (or the death of its process) applies the
 *         fallback at once.
 * @lease: expires_ns (CLOCK_MONOTONIC, see rl_now_ns(); 0 ends the lease
 *         now), config applied now as by rl_set_config(), fallback applied
 *         by the kernel when the lease ends; flags and reserved zero.
 *
 * A later call, from any fd with the right, renews (replaces) the lease.
 *
 * Return: 0, -EINVAL for a NULL @lease or a configuration the kernel
 * rejects (nothing is changed then), -EPERM without the right, -EBADFD
 * without a limiter, or another -errno.
 */
int rl_set_lease(int fd, const struct rl_lease *lease);

/**
 * rl_get_demand() - what the limiter's clients ask for (RL_IOC_GET_DEMAND)
 * @fd: client fd.
 * @d:  filled on success (the library zeroes the input fields): tokens
 *      asked and refused since creation, queued now, time with a sleeper,
 *      and the time of the snapshot.
 *
 * Return: 0, -EINVAL for a NULL @d, -EBADFD without a limiter, or another
 * -errno.
 */
int rl_get_demand(int fd, struct rl_demand *d);

/**
 * rl_name_valid() - check the syntax of a limiter name
 * @name: candidate name, may be NULL.
 *
 * Mirrors the kernel's rule: 1 to RL_NAME_MAX - 1 characters from
 * [A-Za-z0-9._-], not starting with '.'. A name that passes can be used
 * as a path component under /sys/kernel/ratelimit/.
 *
 * Return: 1 when @name is valid, 0 when not (a predicate, not an errno).
 */
int rl_name_valid(const char *name);

/**
 * rl_attach() - make the fd a client of a named limiter (RL_IOC_ATTACH)
 * @fd:    client fd without a limiter yet.
 * @name:  limiter name, see rl_name_valid().
 * @flags: RL_ATTACH_CREATE, RL_ATTACH_EXCL, RL_ATTACH_PERSIST.
 * @mode:  permission bits (0 .. 0777) of a limiter this call creates,
 *         used as given (no umask); ignored when it exists.
 * @cfg:   limits of a limiter this call creates; ignored when it exists,
 *         but the kernel still validates them. NULL stands for a paused
 *         limiter (rate 0, one second period, default burst): fine to
 *         join an existing limiter, and a limiter created that way
 *         grants nothing until it is reconfigured.
 *
 * Return: 0, -ENOENT when the name does not exist (without CREATE),
 * -EEXIST when it does (CREATE | EXCL), -EACCES when the mode denies
 * access, -EBUSY when @fd already has a limiter, -EINVAL for a bad name,
 * flags, mode or configuration, -ENOSPC or -EDQUOT past the module's
 * bounds on named limiters, or another -errno.
 */
int rl_attach(int fd, const char *name, uint32_t flags, uint32_t mode,
	      const struct rl_config *cfg);

/**
 * rl_open_named() - rl_open() and rl_attach() in one call
 * @name:  limiter name.
 * @flags: RL_ATTACH_* flags (not open flags: use fcntl() for O_NONBLOCK).
 * @mode:  as for rl_attach().
 * @cfg:   as for rl_attach(), may be NULL.
 *
 * Return: the new close-on-exec fd, attached, or -errno as rl_open() and
 * rl_attach() return it (the fd is closed on failure).
 */
int rl_open_named(const char *name, uint32_t flags, uint32_t mode,
		  const struct rl_config *cfg);

/**
 * rl_unlink() - remove a limiter's name (RL_IOC_UNLINK)
 * @fd:   any fd of /dev/ratelimit, or -1 to use a temporary one.
 * @name: limiter name.
 *
 * The name disappears at once; fds attached to the limiter keep working
 * until closed.
 *
 * Return: 0, -ENOENT when there is no such name, -EPERM when the caller
 * is neither the owner nor CAP_SYS_ADMIN, -EINVAL for a bad name, or
 * another -errno (of rl_open() too, when @fd is -1).
 */
int rl_unlink(int fd, const char *name);

/**
 * rl_set_perm() - change the owner, group or mode of the fd's named
 *                 limiter in place (RL_IOC_SET_PERM)
 * @fd:    client fd attached to a named limiter.
 * @uid:   new owner (a uid of the caller's user namespace), with
 *         RL_PERM_UID in @flags.
 * @gid:   new group, with RL_PERM_GID.
 * @mode:  new permission bits, 0 .. 0777, with RL_PERM_MODE.
 * @flags: RL_PERM_* flags, at least one: which of the three to set.
 *
 * As chmod(2) and chown(2): the owner may change the mode and the group
 * to one of its groups; a new owner, or a limiter of someone else, takes
 * CAP_SYS_ADMIN (or CAP_CHOWN). The limiter's sysfs files follow the new
 * owner. Attached fds keep working; the new mode holds for later attaches.
 *
 * Return: 0, -EPERM, -EINVAL for a private or unlinked limiter, bad flags,
 * mode or ids, -EBADFD for an fd without a limiter, -ENOTTY from a module
 * without the call, or another -errno; nothing changes on error.
 */
int rl_set_perm(int fd, uint32_t uid, uint32_t gid, uint32_t mode,
		uint32_t flags);

/**
 * rl_share() - give the fd's host limiter a name in another IPC namespace,
 *              such as a container's, or take it back (RL_IOC_SHARE)
 * @fd:    client fd attached to a named limiter of the host's IPC namespace.
 * @ns_fd: fd of the namespace: an open /proc/PID/ns/ipc of a process in it.
 * @flags: 0 to share, RL_SHARE_REVOKE to take the share back.
 *
 * The namespace's processes then find the limiter under its name, with
 * its permission bits checked as on the host. Takes CAP_SYS_ADMIN.
 *
 * Return: 0, -EPERM, -EEXIST when the namespace has the name, -ENOENT to
 * revoke what is not shared there, -EINVAL for a private, unlinked or
 * non-host limiter, an @ns_fd of no IPC namespace or of the host's, or bad
 * flags, -EBADF for a bad @ns_fd, -EBADFD for an fd without a limiter,
 * -ENOTTY from a module without the call, or another -errno.
 */
int rl_share(int fd, int ns_fd, uint32_t flags);

/**
 * rl_set_parent() - put the fd's named limiter under another one
 *                   (RL_IOC_SET_PARENT)
 * @fd:     client fd attached to a named limiter it may reconfigure.
 * @parent: name of the new parent, or NULL to make the limiter a root.
 * @weight: share among the parent's backlogged children, 1 ..
 *          RL_WEIGHT_MAX, 0 for 1.
 *
 * Return: 0, -EACCES without write rights on the limiter or the parent,
 * -ENOENT for a missing parent, -ELOOP for a parent in the limiter's own
 * subtree, -EMLINK past RL_DEPTH_MAX ancestors, -EINVAL for a private
 * limiter, a bad name or weight, or another -errno; nothing changes on
 * error.
 */
int rl_set_parent(int fd, const char *parent, uint32_t weight);

/**
 * rl_get_parent() - read the fd's limiter's place in its tree
 *                   (RL_IOC_GET_PARENT)
 * @fd:   client fd with a limiter.
 * @p:    filled with the weight, the number of ancestors (depth) and of
 *        children; its name_ptr is set to @name.
 * @name: NULL, or RL_NAME_MAX bytes that receive the parent's name, ""
 *        for a root.
 *
 * Return: 0, -EBADFD without a limiter, or another -errno.
 */
int rl_get_parent(int fd, struct rl_parent *p, char *name);

/*
 * Keyed limiters (ratelimit(4), "Keyed limiters"): a limiter created with
 * RL_CONFIG_KEYED in its configuration is a family of token buckets, one
 * per key of 1 to RL_KEY_MAX opaque bytes (an address, a hash of an API
 * key, a user id), each with the limiter's rate and burst and created
 * full on first use. Its tokens are taken by key only: rl_acquire() and
 * the other functions without a key fail with -EINVAL on it. A key
 * length of 0 or above RL_KEY_MAX is -EINVAL without a system call.
 */

/**
 * rl_acquire_key() - take tokens of one key, waiting as long as it takes
 * @fd:    client fd of a keyed limiter.
 * @key:   the key's bytes.
 * @len:   its length, 1 .. RL_KEY_MAX.
 * @count: tokens wanted, 1 .. the burst.
 *
 * Requests of one key are served in arrival order; requests of other keys
 * never wait for them.
 *
 * Return: 0 once granted; -EINVAL for a bad @key, @len or @count, or a
 * limiter that is not keyed; -ENOSPC when the key is new and the limiter
 * keeps as many keys with state as its rl_config.keys allows; -EINTR on a
 * signal; -EAGAIN when @fd was opened with O_NONBLOCK and the tokens are
 * not there; -EBADFD without a limiter; or another -errno.
 */
int rl_acquire_key(int fd, const void *key, size_t len, uint64_t count);

/**
 * rl_try_acquire_key() - take tokens of one key only if they are there now
 * @fd:       client fd of a keyed limiter.
 * @key:      the key's bytes.
 * @len:      its length, 1 .. RL_KEY_MAX.
 * @count:    tokens wanted, 1 .. the burst.
 * @ready_ns: if not NULL, set on -EAGAIN to the CLOCK_MONOTONIC time (see
 *            rl_now_ns()) the request could be granted at, behind the
 *            key's sleepers: what an HTTP server sends as Retry-After; on
 *            -ENOSPC to when every key idle at the call is full again, an
 *            upper bound on when room for a new key comes back.
 *
 * Return: 0 when granted, -EAGAIN when not, -ENOSPC as for
 * rl_acquire_key(), -EINVAL for a bad @key, @len or @count, or a limiter
 * that is not keyed, or another -errno.
 */
int rl_try_acquire_key(int fd, const void *key, size_t len, uint64_t count,
		       uint64_t *ready_ns);

/**
 * rl_acquire_key_timeout() - take tokens of one key, waiting at most
 *                            @timeout_ns
 * @fd:         client fd of a keyed limiter.
 * @key:        the key's bytes.
 * @len:        its length, 1 .. RL_KEY_MAX.
 * @count:      tokens wanted, 1 .. the burst.
 * @timeout_ns: longest wait in ns from now; RL_DEADLINE_NONE (or any value
 *              too large for a deadline) waits forever, 0 only tries.
 * @ready_ns:   if not NULL, set on -ETIMEDOUT, -EAGAIN and -ENOSPC as by
 *              rl_try_acquire_key().
 *
 * Return: 0 when granted, -ETIMEDOUT when the time ran out (nothing is
 * taken from the key), -EINTR on a signal, or the other errors of
 * rl_acquire_key().
 */
int rl_acquire_key_timeout(int fd, const void *key, size_t len,
			   uint64_t count, uint64_t timeout_ns,
			   uint64_t *ready_ns);

/**
 * rl_acquire_key_ex() - the raw RL_IOC_ACQUIRE_KEY
 * @fd:  client fd of a keyed limiter.
 * @req: request, filled in by the caller: @req->acquire as for
 *       rl_acquire_ex() (deadline, RL_ACQUIRE_NONBLOCK or
 *       RL_ACQUIRE_PREDICT, priority), key_len and key; flags and reserved
 *       fields zero. The kernel writes the outputs of @req->acquire back on
 *       success, -EAGAIN, -ETIMEDOUT and -ENOSPC.
 *
 * Return: 0 or -errno, as documented for struct rl_key_acquire; -EINVAL
 * without a system call for a NULL @req or a key_len of 0 or above
 * RL_KEY_MAX.
 */
int rl_acquire_key_ex(int fd, struct rl_key_acquire *req);

/**
 * rl_submit_key() - take one key's tokens now, or queue the request without
 *                   sleeping (RL_IOC_SUBMIT_KEY)
 * @fd: client fd of a keyed limiter.
 * @kq: the request: @kq->queued as for rl_submit() (count 1 .. the burst,
 *      deadline_ns, flags 0 or RL_ACQUIRE_PREDICT, user_data), key_len and
 *      key; other fields zero. On return, kq->queued.ticket is 0 when the
 *      tokens were granted at once, else the ticket that rl_collect()
 *      reports and rl_cancel() withdraws, as for rl_submit().
 *
 * The request waits in line on its key behind the key's other requests,
 * queued or sleeping. rl_cancel() of a granted but uncollected one keeps
 * its tokens taken: a key takes nothing back.
 *
 * Return: 0; -ETIMEDOUT and -ENOSPC with kq->queued.ready_ns written;
 * -EBUSY, -EPERM, -EBADFD, or -EINVAL (also without a system call for a
 * NULL @kq or a key_len of 0 or above RL_KEY_MAX, and for a limiter that
 * is not keyed); or another -errno.
 */
int rl_submit_key(int fd, struct rl_key_queued *kq);

/**
 * rl_get_key() - one key's state (RL_IOC_GET_KEY), without creating it
 * @fd:  client fd of a keyed limiter.
 * @key: the key's bytes; may point into @st.
 * @len: its length, 1 .. RL_KEY_MAX.
 * @st:  filled on success: available tokens (the burst for a key without
 *       state), full_ns (when the bucket is full again, 0 when it is),
 *       waiters, and kept (1 when the limiter keeps state for the key).
 *
 * Return: 0, -EINVAL for a NULL @st, a bad @key or @len, or a limiter
 * that is not keyed, -EBADFD without a limiter, or another -errno.
 */
int rl_get_key(int fd, const void *key, size_t len, struct rl_key_state *st);

/**
 * rl_get_keys() - the counters of a keyed limiter's keys (RL_IOC_GET_KEYS)
 * @fd: client fd of a keyed limiter.
 * @st: filled on success (the library zeroes the input fields): keys with
 *      state now and the most allowed, keys created and evicted, requests
 *      refused with -ENOSPC, requests asleep. No key is ever listed.
 *
 * Return: 0, -EINVAL for a NULL @st or a limiter that is not keyed,
 * -EBADFD without a limiter, or another -errno.
 */
int rl_get_keys(int fd, struct rl_keys_stats *st);

/**
 * struct rl_batch - batched reservations over one client fd (opt-in)
 * @fd:        client fd the tokens come from; not owned, not closed
 * @unlimited: the limiter was unlimited at rl_batch_open()
 * @batch:     tokens reserved at a time (at most the burst)
 * @local:     tokens reserved and not handed out yet
 * @backoff:   current back-off, in acquires, after a failed batch
 * @skip:      acquires left before the next batch is tried
 * @syscalls:  ioctls made by rl_batch_acquire() and rl_batch_flush()
 * @taken:     tokens taken from the kernel
 * @handed:    tokens handed out by rl_batch_acquire()
 * @refunded:  tokens given back by rl_batch_flush()
 *
 * Fields are for reading; only the functions below change them.
 */
struct rl_batch {
	int fd;
	int unlimited;
	uint64_t batch;
	uint64_t local;
	uint64_t backoff;
	uint64_t skip;
	uint64_t syscalls;
	uint64_t taken;
	uint64_t handed;
	uint64_t refunded;
};

/**
 * rl_batch_open() - start batched reservations on a client fd
 * @b:     state to initialise, owned by the caller.
 * @fd:    client fd with a limiter (private or named).
 * @batch: tokens to reserve from the kernel at a time, >= 1; clamped to
 *         the burst in force now.
 *
 * rl_batch_acquire() then takes a whole batch from the kernel whenever the
 * bucket holds one and hands it out without system calls. The price:
 * up to @batch - 1 tokens are taken from the limiter before they are used,
 * so other clients of a shared limiter see them gone early, and tokens are
 * handed out in bursts of up to @batch. The state keeps no lock: use one
 * struct rl_batch per thread (threads may share the fd). This is the one
 * part of the library that keeps state.
 *
 * Return: 0, -EINVAL for a NULL @b or a @batch of 0, or the -errno of
 * rl_get_config() (-EBADFD without a limiter).
 */
int rl_batch_open(struct rl_batch *b, int fd, uint64_t batch);

/**
 * rl_batch_acquire() - take tokens, from the local reserve when it has them
 * @b:     state from rl_batch_open().
 * @count: tokens wanted, >= 1.
 *
 * Hands out reserved tokens; when they run short, reserves a batch if the
 * bucket holds one now, else waits in the kernel for only the tokens that
 * are missing (and tries batches less often until one succeeds again).
 *
 * Return: 0 once granted, or the -errno of rl_acquire().
 */
int rl_batch_acquire(struct rl_batch *b, uint64_t count);

/**
 * rl_batch_flush() - give the reserved tokens back (RL_IOC_REFUND)
 * @b: state from rl_batch_open().
 *
 * The bucket still never holds more than the burst: refunded tokens that
 * do not fit are lost, as with rl_refund().
 *
 * Return: 0 or the -errno of rl_refund() (the reserve is kept then).
 */
int rl_batch_flush(struct rl_batch *b);

/**
 * rl_batch_close() - end batched reservations
 * @b: state from rl_batch_open().
 *
 * Flushes the reserve; the fd stays open.
 *
 * Return: as rl_batch_flush(); the reserve is dropped in any case.
 */
int rl_batch_close(struct rl_batch *b);

/**
 * rl_now_ns() - the clock of deadlines and ready times
 *
 * Return: CLOCK_MONOTONIC in nanoseconds.
 */
uint64_t rl_now_ns(void);

/**
 * rl_parse_rate() - parse a rate specification
 * @spec: "unlimited" or "RATE[/PERIOD][:BURST]", e.g. "12000/s",
 *        "10MiB/s", "1/10s", "500/100ms:50"; see libratelimit(3).
 * @cfg:  fully written on success (reserved fields zeroed), untouched on
 *        failure.
 *
 * Return: 0, -EINVAL for a malformed @spec, -ERANGE when a number
 * overflows, the period is 0 or above RL_PERIOD_MAX_NS, or burst * period
 * exceeds RL_BURST_PERIOD_MAX.
 */
int rl_parse_rate(const char *spec, struct rl_config *cfg);

/**
 * rl_parse_amount() - parse a token count with the suffixes of a rate spec
 * @arg: "100", "10k", "64KiB", "1MiB" ...
 * @val: set on success, untouched on failure
 *
 * Return: 0, -EINVAL for a malformed @arg, -ERANGE on overflow.
 */
int rl_parse_amount(const char *arg, uint64_t *val);

/**
 * rl_parse_priority() - parse a priority name
 * @arg: "low", "mid", "high", "user", or "1" .. "4"
 *
 * Return: RL_PRIO_LOW .. RL_PRIO_USER, or -EINVAL.
 */
int rl_parse_priority(const char *arg);

/**
 * rl_format_rate() - print a configuration as a rate specification
 * @cfg: configuration, e.g. from rl_get_config().
 * @buf: output buffer, NUL terminated on success.
 * @len: size of @buf; RL_RATE_STRLEN is always enough.
 *
 * Prints "unlimited" or "RATE/PERIOD[:BURST]" in plain decimal with the
 * largest exact period unit, e.g. "12000/s:1200" or "1/10s".
 * rl_parse_rate() reads the text back to the same configuration (for an
 * unlimited configuration, only the flag is kept).
 *
 * Return: the length of the text, -EINVAL for NULL arguments, or -ENOSPC
 * when @len is too small.
 */
int rl_format_rate(const struct rl_config *cfg, char *buf, size_t len);

/*
 * Queued acquires (ratelimit(4), "Queued acquires"), for event loops that
 * poll the fd (poll, epoll, asyncio, libuv): a request takes its place in
 * the limiter's queue without sleeping, and the fd polls readable once it
 * is finished. Every kernel the module supports has them.
 */

/**
 * rl_submit() - take tokens now, or queue the request without sleeping
 * @fd: client fd.
 * @q:  the request: count, deadline_ns (absolute, or RL_DEADLINE_NONE),
 *      flags (0 or RL_ACQUIRE_PREDICT), priority and user_data; other
 *      fields zero. On return, q->ticket is 0 when the tokens were granted
 *      at once (nothing to collect), else the ticket to collect or cancel.
 *
 * Return: 0; -EBUSY when RL_QUEUED_MAX requests of @fd are outstanding;
 * -ETIMEDOUT when the deadline is past (or predicted late with
 * RL_ACQUIRE_PREDICT); -EINVAL, -EPERM, -EBADFD or another -errno.
 */
int rl_submit(int fd, struct rl_queued *q);

/**
 * rl_collect() - the result of one finished request of rl_submit()
 * @fd: client fd, readable (POLLIN) when one is finished.
 * @q:  filled in: ticket, count, user_data, result (0 granted, or
 *      -ETIMEDOUT), wait_ns, ready_ns and lag_ns.
 *
 * Return: 0, -EAGAIN when none is finished, or another -errno.
 */
int rl_collect(int fd, struct rl_queued *q);

/**
 * rl_cancel() - withdraw a request of rl_submit()
 * @fd:     client fd.
 * @ticket: its ticket, or 0 for every outstanding request of @fd.
 *
 * A queued request leaves the queue; a granted one not yet collected gives
 * back its tokens and permits. Nothing is left to collect for it.
 *
 * Return: 0, -ENOENT when @ticket is not outstanding (collected already),
 * or another -errno.
 */
int rl_cancel(int fd, uint64_t ticket);

/*
 * Acquires through io_uring (ratelimit(4), "io_uring"): the request goes
 * to a ring of liburing and completes there, for event loops that wait for
 * tokens without a thread per waiter. The library does not link with
 * liburing; a program that calls these does (-luring).
 */
struct io_uring;
struct io_uring_sqe;
struct io_uring_cqe;

/**
 * rl_async_supported() - may acquires go through io_uring on this kernel?
 * @fd: client fd.
 *
 * Return: 1 when the module reports RL_FEATURE_URING_CMD, 0 when not
 * (io_uring fails the commands with -EOPNOTSUPP there), or -errno.
 */
int rl_async_supported(int fd);

/**
 * rl_acquire_async() - queue an acquire on an io_uring
 * @ring:      the ring (liburing's struct io_uring).
 * @fd:        client fd.
 * @req:       the request, as for rl_acquire_ex(); its outputs are written
 *             before the completion is posted, so it must stay valid (and
 *             unchanged) until then.
 * @user_data: the completion's user_data.
 *
 * Only queues the SQE: io_uring_submit() sends it. The completion's result
 * (rl_async_result()) is what rl_acquire_ex() would return: 0 once granted,
 * -EAGAIN, -ETIMEDOUT at the deadline, -ECANCELED when cancelled (by
 * rl_cancel_async(), closing the ring or the exit of the task), another
 * -errno. The fd's O_NONBLOCK does not apply; RL_ACQUIRE_NONBLOCK does.
 *
 * Return: 0, -EBUSY when the submission queue is full, -EINVAL.
 */
int rl_acquire_async(struct io_uring *ring, int fd, struct rl_acquire *req,
		     uint64_t user_data);

/**
 * rl_acquire_key_async() - queue an acquire of one key's tokens on an io_uring
 * @ring:      the ring (liburing's struct io_uring).
 * @fd:        client fd of a keyed limiter.
 * @req:       the request, as for rl_acquire_key_ex(); the outputs of
 *             @req->acquire are written before the completion is posted,
 *             so it must stay valid (and unchanged) until then.
 * @user_data: the completion's user_data.
 *
 * As rl_acquire_async(), for a key (RL_URING_ACQUIRE_KEY): the request
 * waits in line on its key with the key's other requests; its result is
 * what rl_acquire_key_ex() would return (-ENOSPC with a ready time too).
 *
 * Return: 0, -EBUSY when the submission queue is full, -EINVAL (also for
 * a key_len of 0 or above RL_KEY_MAX).
 */
int rl_acquire_key_async(struct io_uring *ring, int fd, struct rl_key_acquire *req,
			 uint64_t user_data);

/**
 * rl_cancel_async() - queue the cancellation of acquires on an io_uring
 * @ring:      the ring of the acquires.
 * @fd:        the client fd they went to.
 * @target:    their user_data.
 * @user_data: the cancellation's own completion's user_data.
 *
 * The acquires complete with -ECANCELED, unless served by then, and give
 * back every token and permit they got. The cancellation's result: how
 * many, or -ENOENT. (IORING_OP_ASYNC_CANCEL does not reach them.)
 *
 * Return: 0, -EBUSY when the submission queue is full, -EINVAL.
 */
int rl_cancel_async(struct io_uring *ring, int fd, uint64_t target,
		    uint64_t user_data);

/**
 * rl_prep_acquire_async() - fill an SQE with an acquire
 * @sqe: from io_uring_get_sqe(); every field is written (user_data 0).
 * @fd:  client fd.
 * @req: as for rl_acquire_async().
 */
void rl_prep_acquire_async(struct io_uring_sqe *sqe, int fd,
			   struct rl_acquire *req);

/**
 * rl_prep_acquire_key_async() - fill an SQE with an acquire of a key
 * @sqe: from io_uring_get_sqe(); every field is written (user_data 0).
 * @fd:  client fd of a keyed limiter.
 * @req: as for rl_acquire_key_async().
 */
void rl_prep_acquire_key_async(struct io_uring_sqe *sqe, int fd,
			       struct rl_key_acquire *req);

/**
 * rl_prep_cancel_async() - fill an SQE with a cancellation
 * @sqe:    from io_uring_get_sqe(); every field is written (user_data 0).
 * @fd:     client fd.
 * @target: user_data of the acquires to cancel.
 */
void rl_prep_cancel_async(struct io_uring_sqe *sqe, int fd, uint64_t target);

/**
 * rl_async_result() - the result of an acquire or cancellation's completion
 * @cqe: the completion.
 *
 * Return: its result (cqe->res): 0 or -errno for an acquire.
 */
int rl_async_result(const struct io_uring_cqe *cqe);

#ifdef __cplusplus
}
#endif

#endif /* LIBRATELIMIT_H */
