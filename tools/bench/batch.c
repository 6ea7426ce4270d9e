// SPDX-License-Identifier: GPL-2.0-only
/*
 * batch.c - section 8, batch: rl_batch_*() vs plain acquires at several rates.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <math.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "bench.h"

struct batch_res {
	double tput;		/* acquires per second */
	double ratio;		/* achieved / target */
	double syscalls;	/* per acquire */
	uint64_t refunded;
	double excess;
};

static void batch_run(uint64_t rate, uint64_t batch, uint64_t dur,
		      struct batch_res *res)
{
	uint64_t t_cfg = rl_now_ns(), burst, total, t0, t, used = 0, sys = 0;
	struct rl_batch b;
	double bound, excess = -INFINITY;
	int fd, ret;

	fd = open_private(rate, 0, 0);
	burst = get_burst(fd);
	total = drain(fd);
	if (batch > 1 && rl_batch_open(&b, fd, batch))
		die("rl_batch_open", EINVAL);
	t0 = rl_now_ns();
	t = t0;
	while (t - t0 < dur) {
		ret = batch > 1 ? rl_batch_acquire(&b, 1) : rl_acquire(fd, 1);
		if (ret)
			die("acquire", ret);
		used++;
		/* Check the bound only now and then: it costs a clock read. */
		if (!(used & 63) || rate < 100000) {
			t = rl_now_ns();
			bound = (double)burst + (double)rate * (double)(t - t_cfg) / 1e9;
			if ((double)(total + used) - bound > excess)
				excess = (double)(total + used) - bound;
		}
	}
	t = rl_now_ns();
	sys = used;
	res->refunded = 0;
	if (batch > 1) {
		rl_batch_close(&b);
		sys = b.syscalls;
		res->refunded = b.refunded;
	}
	res->tput = (double)used * NSEC_PER_SEC / (double)(t - t0);
	res->ratio = res->tput / (double)rate;
	res->syscalls = (double)sys / (double)used;
	res->excess = excess;
	rl_close(fd);
}

/* Two clients of one limiter, one batched: the share each gets. */
static double batch_share(uint64_t batch, uint64_t dur, uint64_t *got)
{
	struct rl_config cfg = { .rate = 1000, .period_ns = NSEC_PER_SEC,
				 .burst = 100 };
	uint64_t end;
	struct rl_batch b;
	int fd[2], i;
	pid_t pid;
	uint64_t *sh = shared_alloc(2 * sizeof(uint64_t));

	create_named("rlbench-batch", &cfg);
	for (i = 0; i < 2; i++)
		fd[i] = attach("rlbench-batch");
	drain(fd[0]);
	end = rl_now_ns() + dur;
	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (!pid) {
		uint64_t n = 0;

		rl_batch_open(&b, fd[1], batch);
		while (rl_now_ns() < end && !rl_batch_acquire(&b, 1))
			n++;
		rl_batch_close(&b);
		sh[1] = n;
		_exit(0);
	}
	while (rl_now_ns() < end && !rl_acquire(fd[0], 1))
		sh[0]++;
	waitpid(pid, NULL, 0);
	got[0] = sh[0];
	got[1] = sh[1];
	for (i = 0; i < 2; i++)
		rl_close(fd[i]);
	rl_unlink(-1, "rlbench-batch");
	munmap(sh, 2 * sizeof(uint64_t));
	return jain(got, 2);
}

/* The rows of batch @batch against plain (@r0) at @rate, as @rs. */
static void batch_rows(uint64_t rate, const char *rs, uint64_t batch,
		       const struct batch_res *r, const struct batch_res *r0)
{
	char name[96], base[64];

	snprintf(name, sizeof(name), "batch %llu at %s/s: syscalls/acquire",
		 (unsigned long long)batch, rs);
	row("batch", name, r->syscalls, "", "plain", r0->syscalls,
	    NULL, V_INFO);
	snprintf(name, sizeof(name), "batch %llu at %s/s: acquires/s",
		 (unsigned long long)batch, rs);
	row("batch", name, r->tput, "/s", "plain", r0->tput, NULL,
	    V_INFO);
	if (rate != HUGE_RATE) {
		snprintf(name, sizeof(name),
			 "batch %llu at %s/s: achieved/target",
			 (unsigned long long)batch, rs);
		snprintf(base, sizeof(base), "plain");
		row("batch", name, r->ratio, "", base, r0->ratio,
		    NULL, V_INFO);
		snprintf(name, sizeof(name),
			 "batch %llu at %s/s: max over bound",
			 (unsigned long long)batch, rs);
		row("batch", name, r->excess, "tok", "plain",
		    r0->excess, "<= 0", at_most(r->excess, 0));
	}
	snprintf(name, sizeof(name), "batch %llu at %s/s: refunded at close",
		 (unsigned long long)batch, rs);
	row("batch", name, (double)r->refunded, "tok", NULL, 0, NULL,
	    V_INFO);
}

void bench_batch(void)
{
	static const uint64_t rates[] = { 1000, 100000, 1000000, HUGE_RATE };
	static const uint64_t batches[] = { 1, 8, 64 };
	uint64_t dur = scaled(2 * NSEC_PER_SEC, NSEC_PER_SEC / 2), got[2];
	struct batch_res r[3];
	char name[96], rbuf[24];
	unsigned int i, j;
	FILE *f = open_out("batch.dat");

	printf("batch: one caller, acquire(1) in a loop for %.1f s, default burst\n",
	       dur / 1e9);
	printf("  plain vs rl_batch_acquire() with batch 8 and 64\n");
	if (f) {
		fprintf(f, "# rate plain_tput b8_tput b64_tput\n");
		fprintf(f, "#   plain_sys b8_sys b64_sys plain_ratio b8_ratio b64_ratio\n");
	}
	for (i = 0; i < ARRAY_SIZE(rates); i++) {
		for (j = 0; j < 3; j++)
			batch_run(rates[i], batches[j], dur, &r[j]);
		snprintf(rbuf, sizeof(rbuf), "%llu", (unsigned long long)rates[i]);
		for (j = 1; j < 3; j++)
			batch_rows(rates[i], rates[i] == HUGE_RATE ? "1e9" : rbuf,
				   batches[j], &r[j], &r[0]);
		if (f)
			fprintf(f, "%llu %.0f %.0f %.0f %.4f %.4f %.4f %.5f %.5f %.5f\n",
				(unsigned long long)rates[i], r[0].tput, r[1].tput,
				r[2].tput, r[0].syscalls, r[1].syscalls,
				r[2].syscalls, r[0].ratio, r[1].ratio, r[2].ratio);
	}
	if (f)
		fclose(f);
	dur = scaled(3 * NSEC_PER_SEC, NSEC_PER_SEC);
	batch_share(64, dur, got);
	snprintf(name, sizeof(name), "shared 1000/s: batched(64) client's tokens");
	row("batch", name, (double)got[1], "tok", "plain client's tokens",
	    (double)got[0], NULL, V_INFO);
}
