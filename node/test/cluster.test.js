// SPDX-License-Identifier: LGPL-2.1-or-later
//
// cluster workers sharing one named limiter, as a Node.js server scales:
// four workers with many acquires each hold the limiter's bound over every
// 1 s window and get a quarter of the rate each (within 5 %); two workers
// beside two blocking C clients (rlpace) get a quarter each too: a queued
// acquire waits in the same queue as a sleeper; a worker killed with
// SIGKILL while it holds a permit gives it back.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const cluster = require('node:cluster');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { once } = require('node:events');
const { kratelimit, noDevice, noQueued, uniqueName, sleep } = require('./common');
const { Limiter } = kratelimit;

cluster.setupPrimary({ exec: path.join(__dirname, 'fixtures', 'worker.js') });

// msg(worker, type): the next message of that type from the worker.
async function msg(w, type) {
	for (;;) {
		const [m] = await once(w, 'message');
		if (m.type === type)
			return m;
		if (m.type === 'error')
			throw new Error(`worker ${w.id}: ${m.message}`);
	}
}

const RATE = 200, BURST = 20, WORKERS = 4, RUN_MS = 4000;

test('4 cluster workers share 200/s: bound over every 1 s window, 1/4 each', { skip: noQueued, timeout: 40000 }, async (t) => {
	const name = uniqueName('share');
	const own = Limiter.attach(name, { create: true, config: `${RATE}/s:${BURST}` });
	const ws = Array.from({ length: WORKERS }, () =>
		cluster.fork({ KRL_MODE: 'share', KRL_NAME: name, KRL_INFLIGHT: '16' }));
	try {
		await Promise.all(ws.map((w) => msg(w, 'ready')));
		const before = own.stats().granted;
		const t0 = performance.now();
		for (const w of ws)
			w.send({ type: 'go' });
		await sleep(RUN_MS);
		const results = await Promise.all(ws.map(async (w) => {
			w.send({ type: 'stop' });
			return (await msg(w, 'times')).times;
		}));
		const elapsed = performance.now() - t0;
		const granted = own.stats().granted - before;

		// The kernel's own count over the whole run: the exact bound.
		assert.ok(granted <= BURST + RATE * elapsed / 1000 + 1,
			`${granted} granted in ${elapsed} ms`);
		assert.ok(granted >= 0.8 * RATE * RUN_MS / 1000,
			`only ${granted} granted in ${elapsed} ms`);

		// Every 1 s window of the grants' times on the limiter's
		// schedule (Permit.readyNs, the instants the bound holds for):
		// at most burst + rate (+ 1: the window is closed).
		const all = results.flat().sort((a, b) => a - b);
		let worst = 0;
		for (let i = 0, j = 0; i < all.length; i++) {
			while (all[j] < all[i] - 1000)
				j++;
			worst = Math.max(worst, i - j + 1);
		}
		assert.ok(worst <= BURST + RATE + 1,
			`${worst} grants in one 1 s window (bound ${BURST} + ${RATE})`);

		// Shares while all four were backlogged: from 0.2 s after the
		// last worker's first grant to the end of the shortest run.
		for (const t of results)
			assert.ok(t.length > 0, `a worker got nothing: ${results.map((x) => x.length)}`);
		const from = Math.max(...results.map((t) => t[0])) + 200;
		const to = Math.min(...results.map((t) => t[t.length - 1]));
		const counts = results.map((t) => t.filter((x) => x >= from && x <= to).length);
		const total = counts.reduce((a, b) => a + b, 0);
		assert.ok(total >= 100, `shares over ${total} grants only`);
		for (const c of counts) {
			assert.ok(Math.abs(c / total - 1 / WORKERS) <= 0.05 / WORKERS,
				`shares ${counts.join(' / ')} of ${total}: not 1/4 each within 5 %`);
		}
		t.diagnostic(`window max ${worst}; shares ${counts.join(' / ')}`);
	} finally {
		for (const w of ws)
			w.kill('SIGKILL');
		own.close();
	}
});

// rlpace, a blocking C client (one fd, threads sleeping in the kernel):
// on the guest's PATH (/tools), else the tree's build.
const rlpace = ['/tools/rlpace', path.join(__dirname, '..', '..', 'build', 'tools', 'rlpace')]
	.find((f) => fs.existsSync(f));

test('2 cluster workers beside 2 blocking C clients get 1/4 of the rate each', { skip: noQueued || (!rlpace && 'no rlpace (make tools)'), timeout: 40000 }, async (t) => {
	const name = uniqueName('mixed');
	const own = Limiter.attach(name, { create: true, config: `${RATE}/s:${BURST}` });
	const ws = Array.from({ length: 2 }, () =>
		cluster.fork({ KRL_MODE: 'share', KRL_NAME: name, KRL_INFLIGHT: '16' }));
	const cs = [];
	try {
		await Promise.all(ws.map((w) => msg(w, 'ready')));
		for (let i = 0; i < 2; i++) {
			const c = spawn(rlpace, ['-N', name, '-n', '1000000', '-t', '4', '-q'],
				{ stdio: ['ignore', 'ignore', 'pipe'] });
			c.said = '';
			c.stderr.on('data', (d) => { c.said += d; });
			cs.push(c);
		}
		await sleep(300);	// the C clients sleep in the queue
		for (const w of ws)
			w.send({ type: 'go' });
		await sleep(RUN_MS);
		const results = await Promise.all(ws.map(async (w) => {
			w.send({ type: 'stop' });
			return (await msg(w, 'times')).times;
		}));
		for (const c of cs)
			assert.strictEqual(c.exitCode, null, `rlpace stopped: ${c.said}`);
		for (const r of results)
			assert.ok(r.length > 0, 'a worker got nothing');
		const from = Math.max(...results.map((x) => x[0])) + 200;
		const to = Math.min(...results.map((x) => x[x.length - 1]));
		const want = (to - from) / 1000 * RATE / 4;
		const counts = results.map((x) => x.filter((v) => v >= from && v <= to).length);
		assert.ok(want >= 100, `over ${want} grants only`);
		for (const c of counts) {
			assert.ok(Math.abs(c - want) <= 0.05 * want,
				`workers got ${counts.join(' / ')}, a quarter of the rate is ${want.toFixed(1)}`);
		}
		t.diagnostic(`workers ${counts.join(' / ')}, a quarter ${want.toFixed(1)}`);
	} finally {
		for (const c of cs)
			c.kill('SIGKILL');
		for (const w of ws)
			w.kill('SIGKILL');
		own.close();
	}
});

test('a worker killed with SIGKILL holding a permit gives it back', { skip: noDevice, timeout: 30000 }, async () => {
	const name = uniqueName('kill');
	const own = Limiter.attach(name, { create: true, config: { rate: 'unlimited', concurrency: 1 } });
	const w = cluster.fork({ KRL_MODE: 'hold', KRL_NAME: name });
	try {
		await msg(w, 'held');
		assert.strictEqual(own.stats().held, 1);
		assert.strictEqual(own.tryAcquire(), false, 'the worker holds the only permit');
		const waiting = own.acquire(1, { timeoutMs: 15000 });
		await sleep(100);
		w.process.kill('SIGKILL');
		const p = await waiting;
		assert.strictEqual(own.stats().held, 1, 'now held here');
		p.release();
		assert.strictEqual(own.stats().held, 0);
	} finally {
		w.process.kill('SIGKILL');
		own.close();
	}
});
