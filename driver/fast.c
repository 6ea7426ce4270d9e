// SPDX-License-Identifier: GPL-2.0-only
/*
 * Reservations: a client that maps its fd (RL_FEATURE_FAST) gets a page
 * whose first word holds tokens the kernel moved out of its limiter's
 * bucket; its process takes them with a compare-and-swap, no system call.
 *
 * The bound holds with reserved tokens counted as taken: the bucket may
 * hold at most the burst less @fast_out, what the pages may still hold
 * (rl_limiter.fast_out, the sum of the clients' @fast_out). The kernel
 * learns what was taken by reading the pages (rl_fast_sweep(): when the
 * bucket reaches that limit, and before statistics are read, each time
 * with the bucket refilled first, so that what was taken makes room from
 * then on: it may have been taken a moment before) and
 * takes the rest back with an exchange (rl_fast_reclaim(): before a
 * request would fail or wait, and on any change of the limits); a page is
 * topped up only by a grant at once with nobody waiting. So while a
 * request waits nothing is reserved, and a fast taker never overtakes it.
 *
 * A page is the client's: allocated at its first mmap() and dropped when
 * the client is freed. A mapping refers to the page, not to the client's
 * file: the vma's file is one kernel-internal shmem file of the module's
 * (rl_fast_file), so close(2) of the last fd ends the client as if it had
 * never been mapped, and what a process keeps mapped after that is a page
 * the kernel emptied and never reads again, which pins nothing (the page
 * itself lives on, by its reference count, until its last mapping goes).
 * What a page says is trusted only up to what the kernel put there.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <linux/atomic.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/shmem_fs.h>

#include "compat.h"
#include "fast.h"

/*
 * The kernel's view of struct rl_fast: the same words, as atomics, since
 * the process updates them concurrently.
 */
struct rl_fast_page {
	atomic64_t tokens;
	atomic64_t acquires;
	atomic64_t closes;
};

static_assert(offsetof(struct rl_fast, tokens) == offsetof(struct rl_fast_page, tokens));
static_assert(offsetof(struct rl_fast, acquires) == offsetof(struct rl_fast_page, acquires));
static_assert(offsetof(struct rl_fast, closes) == offsetof(struct rl_fast_page, closes));
static_assert(sizeof(struct rl_fast) <= RL_FAST_SIZE && RL_FAST_SIZE <= PAGE_SIZE);

/* A chunk is an eighth of the burst: a few kernel entries per burst. */
#define RL_FAST_CHUNK_SHIFT	3

/*
 * The file of every mapping of a page: an empty shmem file, so that neither
 * a client's file nor this module is held by a mapping (its operations are
 * the kernel's own). The pages are inserted into the mappings, never in
 * its page cache.
 */
static struct file *rl_fast_file;

/**
 * rl_fast_init() - create the file that mappings of pages refer to
 * Return: 0 or -errno.
 */
int rl_fast_init(void)
{
	struct file *file = shmem_file_setup("ratelimit-reservation", 0, VM_NORESERVE);

	if (IS_ERR(file))
		return PTR_ERR(file);
	rl_fast_file = file;
	return 0;
}

/**
 * rl_fast_exit() - drop the module's reference to that file
 *
 * Mappings left in processes keep the file and their pages, no code of
 * the module.
 */
void rl_fast_exit(void)
{
	fput(rl_fast_file);
}

/**
 * rl_fast_map() - map @client's page into @vma, allocating it the first time
 * @client: a client that may reconfigure its limiter
 * @vma:    the mapping: shared, of one page at offset 0, not executable
 *
 * The mapping then refers to the page and rl_fast_file, no longer to the
 * client's file; its vm_operations are the kernel's default (the page is
 * inserted, VM_MIXEDMAP, so fork() copies it).
 *
 * Return: 0, -EINVAL for another mapping, or -ENOMEM.
 */
int rl_fast_map(struct rl_client *client, struct vm_area_struct *vma)
{
	struct page *page;
	int ret;

	if (vma->vm_pgoff || vma->vm_end - vma->vm_start != PAGE_SIZE ||
	    !(vma->vm_flags & VM_SHARED) || vma->vm_flags & VM_EXEC)
		return -EINVAL;
	/* No mutex under the mmap lock: the first of two mappings sets it. */
	if (!READ_ONCE(client->fast)) {
		page = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!page)
			return -ENOMEM;
		if (cmpxchg(&client->fast, NULL, page_address(page)))
			__free_page(page);
	}
	rl_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	rl_vm_flags_clear(vma, VM_MAYEXEC);
	ret = vm_insert_page(vma, vma->vm_start, virt_to_page(client->fast));
	if (ret)
		return ret;
	vma_set_file(vma, rl_fast_file);
	return 0;
}

static struct rl_fast_page *rl_fast_page(const struct rl_client *client)
{
	return (struct rl_fast_page *)client->fast;
}

/**
 * rl_fast_free() - drop @client's page, if it has one
 * @client: a client being freed, detached (rl_fast_leave() took the page back)
 *
 * A mapping left behind keeps the page, empty: it holds no token and gets none.
 */
void rl_fast_free(struct rl_client *client)
{
	if (!client->fast)
		return;
	atomic64_set(&rl_fast_page(client)->tokens, 0);
	put_page(virt_to_page(client->fast));
}

/**
 * rl_fast_closed() - an fd of @client's file was closed (by any process)
 * @client: the client
 *
 * Counted in the page, for processes that mapped it: the fd number they
 * mapped may now be another file's (struct rl_fast.closes).
 */
void rl_fast_closed(struct rl_client *client)
{
	if (READ_ONCE(client->fast))
		atomic64_inc(&rl_fast_page(client)->closes);
}

/* Does any process map @client's page? Racy, harmlessly: see rl_fast_sweep(). */
static bool rl_fast_mapped(const struct rl_client *client)
{
	return page_mapped(virt_to_page(client->fast));
}

/* Count what @client took from its page, which now holds @left (<= its @fast_out). */
static void rl_fast_account(struct rl_limiter *lim, struct rl_client *client, u64 left)
{
	u64 taken = client->fast_out - left, acq;

	client->fast_out = left;
	lim->fast_out -= taken;
	client->fast_taken += taken;
	client->granted += taken;
	client->refundable += taken;
	lim->counters.granted += taken;
	lim->counters.asked += taken;
	/* Each request took a token at least; a count that goes back is ignored. */
	acq = min_t(u64, atomic64_read(&rl_fast_page(client)->acquires), client->fast_taken);
	if (acq > client->fast_acq) {
		lim->counters.requests += acq - client->fast_acq;
		lim->counters.immediate += acq - client->fast_acq;
		client->fast_acq = acq;
	}
}

/* What @client's page holds, as far as the kernel put it there. */
static u64 rl_fast_left(struct rl_client *client, u64 seen)
{
	return min(seen, client->fast_out);
}

/* Empty @client's page: what it held goes back to @lim's bucket. */
static void rl_fast_empty(struct rl_limiter *lim, struct rl_client *client)
{
	u64 left;

	if (!client->fast_out)
		return;
	left = rl_fast_left(client, atomic64_xchg(&rl_fast_page(client)->tokens, 0));
	rl_fast_account(lim, client, left);
	client->fast_out = 0;
	lim->fast_out -= left;
	/* The sum stayed within the burst: the bucket takes all of it back. */
	rl_bucket_give(&lim->bucket, &lim->params, left);
}

/**
 * rl_fast_reclaim() - take back every token reserved in @lim's pages
 * @lim: the limiter, locked
 */
void rl_fast_reclaim(struct rl_limiter *lim)
{
	struct rl_client *client;

	lockdep_assert_held(lim->tlock);
	/* O(1) when none is reserved: the lease's hrtimer applies limits. */
	if (!lim->fast_out)
		return;
	list_for_each_entry(client, &lim->fast_clients, fast_node)
		rl_fast_empty(lim, client);
}

/**
 * rl_fast_leave() - take back @client's reservation: it is closed or unmapped
 * @lim:    its limiter, locked
 * @client: the client
 */
void rl_fast_leave(struct rl_limiter *lim, struct rl_client *client)
{
	lockdep_assert_held(lim->tlock);
	if (list_empty(&client->fast_node))
		return;
	rl_fast_empty(lim, client);
	list_del_init(&client->fast_node);
}

/**
 * rl_fast_sweep() - count what the pages of @lim's clients gave out
 * @lim: the limiter, locked
 *
 * A page no process maps any more (munmap(), exec, exit) is emptied and
 * leaves the list: the kernel learns of the last unmap here, not when it
 * happens (no vm_operations of the module's: they would pin it). Until
 * then its tokens stay reserved, as any page's, and rl_fast_reclaim() takes
 * them back before a request would wait or fail.
 */
void rl_fast_sweep(struct rl_limiter *lim)
{
	struct rl_client *client, *next;
	u64 seen;

	lockdep_assert_held(lim->tlock);
	list_for_each_entry_safe(client, next, &lim->fast_clients, fast_node) {
		if (!rl_fast_mapped(client)) {
			rl_fast_leave(lim, client);
			continue;
		}
		seen = atomic64_read(&rl_fast_page(client)->tokens);
		rl_fast_account(lim, client, rl_fast_left(client, seen));
	}
}

/* May @client hold a reservation of @lim: nothing there needs the kernel at every grant? */
static bool rl_fast_allowed(const struct rl_limiter *lim, const struct rl_client *client)
{
	const struct rl_params *p = &lim->params;

	return p->rate && !p->unlimited && !p->fed && !p->concurrency &&
	       (p->catchup <= RL_TOKENS_CATCHUP_STRICT || !p->backlog) &&
	       !lim->h.parent && list_empty(&lim->h.children) &&
	       (!lim->lease || !lim->lease->lease_end) &&
	       !lim->nwaiters && !client->cap && client->level <= RL_PRIO_MID - 1;
}

/**
 * rl_fast_topup() - after a grant at once, fill @client's page up to a chunk
 * @lim:    the limiter, locked
 * @client: a mapped client of @lim
 *
 * At most half the tokens left, so that the bucket is not emptied into one page.
 */
void rl_fast_topup(struct rl_limiter *lim, struct rl_client *client)
{
	u64 chunk = max(lim->params.burst >> RL_FAST_CHUNK_SHIFT, 1ULL), add;
	struct rl_fast_page *page = rl_fast_page(client);

	lockdep_assert_held(lim->tlock);
	if (!rl_fast_mapped(client) || !rl_fast_allowed(lim, client))
		return;
	if (list_empty(&client->fast_node))
		list_add(&client->fast_node, &lim->fast_clients);
	rl_fast_account(lim, client, rl_fast_left(client, atomic64_read(&page->tokens)));
	if (client->fast_out >= chunk)
		return;
	add = min(chunk - client->fast_out, lim->bucket.tokens / 2);
	if (!add)
		return;
	lim->bucket.tokens -= add;
	lim->fast_out += add;
	client->fast_out += add;
	atomic64_add(add, &page->tokens);
}

/**
 * rl_fast_refill() - refill @lim's bucket up to the burst less what is reserved
 * @lim: a limiter with tokens reserved, locked; no backlog to catch up on
 * @now: the time
 *
 * When that limit is reached, the pages are read: what their processes
 * took since is room again from @now on. Not for the time gone: those
 * tokens may have been taken a moment ago, and a bucket refilled for the
 * time it stood at the limit would give as many again at once.
 */
void rl_fast_refill(struct rl_limiter *lim, u64 now)
{
	struct rl_params cp = lim->params;

	lockdep_assert_held(lim->tlock);
	cp.burst -= lim->fast_out;
	rl_bucket_refill(&lim->bucket, &cp, now);
	if (lim->bucket.tokens >= cp.burst && !list_empty(&lim->fast_clients))
		rl_fast_sweep(lim);
}
