// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Thousands of pending acquires in one process do not block its event
// loop: they wait in the kernel (at most QUEUED_MAX) and in a FIFO, and
// one poll handle wakes the loop. A 10 ms interval keeps ticking; its
// largest gap stays under a generous bound (the guest is emulated).
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { kratelimit, noDevice } = require('./common');
const { Limiter } = kratelimit;

const PENDING = 3000, RATE = 2000, MAX_GAP_MS = 250;

test('3000 pending acquires keep the event loop ticking', { skip: noDevice, timeout: 30000 }, async (t) => {
	const l = Limiter.create(`${RATE}/s:20`);
	let done = 0;
	const all = Array.from({ length: PENDING }, () => l.acquire(1).then(() => done++));
	// From here on, while they wait: the loop's own gaps.
	const t0 = performance.now();
	let last = t0, gap = 0, ticks = 0;
	const iv = setInterval(() => {
		const now = performance.now();
		gap = Math.max(gap, now - last);
		last = now;
		ticks++;
	}, 10);
	try {
		await new Promise((r) => setTimeout(r, 200));
		assert.ok(done < PENDING, 'still waiting after 200 ms');
		await Promise.all(all);
		const ms = performance.now() - t0;
		assert.strictEqual(done, PENDING);
		assert.strictEqual(l.stats().granted, PENDING);
		assert.ok(ticks >= ms / 10 / 4, `${ticks} ticks in ${ms} ms`);
		assert.ok(gap < MAX_GAP_MS, `the event loop stalled ${gap} ms`);
		t.diagnostic(`${PENDING} in ${Math.round(ms)} ms, largest gap ${Math.round(gap)} ms, ${ticks} ticks`);
	} finally {
		clearInterval(iv);
		l.close();
	}
});
