// SPDX-License-Identifier: LGPL-2.1-or-later
//
// The API and its errors: rate strings, tryAcquire, acquire's timeout and
// AbortSignal, permits released on scope exit, and errors as Error objects
// with code and errno (EACCES from a limiter whose mode denies another
// user, checked in a child process running as nobody).
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { kratelimit, noDevice, uniqueName, sleep } = require('./common');
const { Limiter, parseRate, formatRate } = kratelimit;

function assertSysError(err, code, syscall) {
	assert.ok(err instanceof Error, 'an Error');
	assert.strictEqual(err.code, code);
	assert.strictEqual(err.errno, -require('os').constants.errno[code]);
	if (syscall)
		assert.strictEqual(err.syscall, syscall);
	return true;
}

test('rate strings parse as rl_parse_rate does, and print back', () => {
	const c = parseRate('100/s:10');
	assert.strictEqual(c.rate, 100);
	assert.strictEqual(c.periodNs, 1e9);
	assert.strictEqual(c.burst, 10);
	assert.strictEqual(formatRate({ rate: '500/100ms:50', concurrency: 3 }), '500/100ms:50');
	assert.throws(() => parseRate('100/fortnight'), (e) => assertSysError(e, 'EINVAL', 'rl_parse_rate'));
	assert.throws(() => parseRate(100), TypeError);
});

// `using x = ...` where the runtime has the syntax (Node.js 24): here a
// block that disposes of x as `using` would, at its end (Symbol.dispose
// from Node.js 20; before it, close() or release()).
function end(x) {
	if (Symbol.dispose)
		x[Symbol.dispose]();
	else if (x.close)
		x.close();
	else
		x.release();
}

function using(x, fn) {
	let r;
	try {
		r = fn(x);
	} finally {
		if (!(r instanceof Promise))
			end(x);
	}
	return r instanceof Promise ? r.finally(() => end(x)) : r;
}

test('an addon built with the queued acquire finds it in the module of its tree', { skip: noDevice }, () => {
	const native = require('../build/Release/kratelimit.node');
	const l = Limiter.create('1/s');
	try {
		assert.strictEqual(l.queued, typeof native.submit === 'function');
	} finally {
		l.close();
	}
});

test('tryAcquire takes the burst, then is false', { skip: noDevice }, () => using(Limiter.create('10/s:3'), (l) => {
	assert.strictEqual(l.rate(), '10/s:3');
	assert.strictEqual(l.tryAcquire(2), true);
	assert.strictEqual(l.tryAcquire(), true);
	assert.strictEqual(l.tryAcquire(), false);
	assert.throws(() => l.tryAcquire(4), (e) => assertSysError(e, 'EINVAL', 'rl_try_acquire'));
	assert.throws(() => l.tryAcquire(0), RangeError);
}));

test('acquire waits for the rate and resolves to a Permit', { skip: noDevice }, async () => {
	const l = Limiter.create('50/s:1');
	try {
		const p = await Promise.all([l.acquire(), l.acquire(), l.acquire()]);
		assert.strictEqual(p.length, 3);
		assert.strictEqual(p[0].count, 1);
		assert.strictEqual(l.stats().granted, 3);
	} finally {
		l.close();
	}
});

// A paused limiter (rate 0) whose one token is taken.
function paused() {
	const l = Limiter.create({ rate: 0, periodNs: 1e9, burst: 1 });
	assert.strictEqual(l.tryAcquire(), true);
	return l;
}

test('acquire rejects with ETIMEDOUT; nothing consumed', { skip: noDevice }, async () => {
	const l = paused();
	try {
		await assert.rejects(l.acquire(1, { timeoutMs: 100 }),
			(e) => assertSysError(e, 'ETIMEDOUT'));
		const st = l.stats();
		assert.strictEqual(st.waiters, 0);
		assert.strictEqual(st.timeouts, 1);
		assert.strictEqual(st.granted, 1, 'the timed-out request took nothing');
	} finally {
		l.close();
	}
});

test('an AbortSignal cancels a queued acquire', { skip: noDevice }, async () => {
	const l = paused();
	try {
		const ac = new AbortController();
		const p = l.acquire(1, { signal: ac.signal });
		const many = Array.from({ length: 100 }, () => l.acquire(1, { signal: ac.signal }));
		const settled = Promise.allSettled(many);
		await sleep(50);
		assert.strictEqual(l.stats().waiters, l.queued ? kratelimit.QUEUED_MAX : 0,
			'QUEUED_MAX in the kernel, the rest here');
		ac.abort();
		await assert.rejects(p, { name: 'AbortError' });
		for (const r of await settled)
			assert.strictEqual(r.reason?.name, 'AbortError');
		assert.strictEqual(l.stats().waiters, 0, 'nothing left in the kernel queue');
		await assert.rejects(l.acquire(1, { signal: AbortSignal.abort() }), { name: 'AbortError' });
	} finally {
		l.close();
	}
});

test('close rejects pending acquires with ECANCELED', { skip: noDevice }, async () => {
	const l = paused();
	const p = l.acquire(1);
	await sleep(20);
	l.close();
	await assert.rejects(p, (e) => assertSysError(e, 'ECANCELED'));
	assert.throws(() => l.tryAcquire(), (e) => assertSysError(e, 'EBADF'));
});

test('permits go back on scope exit (Symbol.dispose) and after withPermit', { skip: noDevice }, async () => {
	const l = Limiter.create({ rate: 'unlimited', concurrency: 2 });
	try {
		using(await l.acquire(2), (p) => {
			assert.strictEqual(p.count, 2);
			assert.strictEqual(l.stats().held, 2);
			assert.strictEqual(l.tryAcquire(), false, 'both permits held');
		});
		assert.strictEqual(l.stats().held, 0, 'released at the end of the block');
		const r = await l.withPermit(1, async (p) => {
			assert.strictEqual(l.stats().held, 1);
			p.release();
			p.release();	// once only
			return 7;
		});
		assert.strictEqual(r, 7);
		await assert.rejects(l.withPermit(async () => {
			assert.strictEqual(l.stats().held, 1);
			throw new Error('boom');
		}), /boom/);
		assert.strictEqual(l.stats().held, 0, 'released after a throw');
		assert.throws(() => l.release(1), (e) => assertSysError(e, 'EINVAL', 'rl_release'));
	} finally {
		l.close();
	}
});

test('a Permit of a rate-only limiter releases as a no-op', { skip: noDevice }, () =>
	using(Limiter.create('100/s:10'), async (l) => {
		const p = await l.acquire(1);
		p.release();
		assert.throws(() => l.release(1), (e) => assertSysError(e, 'EINVAL'));
	}));

test('attach: ENOENT, EEXIST, EINVAL as Error objects with code and errno', { skip: noDevice }, () => {
	const name = uniqueName('attach');
	assert.throws(() => Limiter.attach(name), (e) => assertSysError(e, 'ENOENT', 'rl_attach'));
	using(Limiter.attach(name, { create: true, config: '20/s' }), (a) => {
		assert.strictEqual(a.name, name);
		assert.throws(() => Limiter.attach(name, { create: true, exclusive: true }),
			(e) => assertSysError(e, 'EEXIST'));
		assert.throws(() => Limiter.attach('.hidden'), (e) => assertSysError(e, 'EINVAL'));
		using(Limiter.attach(name), (b) => {
			assert.strictEqual(b.rate(), a.rate());
			assert.strictEqual(b.stats().clients, 2);
		});
	});
	assert.throws(() => Limiter.attach(name), (e) => assertSysError(e, 'ENOENT'),
		'gone with its last client');
});

test('fairPerUser sets CONFIG_FAIR_PER_USER, config() reads it back', { skip: noDevice }, () => {
	const name = uniqueName('fpu');
	using(Limiter.attach(name, { create: true, config: { rate: '20/s', fairPerUser: true } }), (a) => {
		using(Limiter.attach(name), (b) => assert.strictEqual(b.config().fairPerUser, true));
		a.setConfig({ rate: '20/s' });
		assert.strictEqual(a.config().fairPerUser, false);
	});
});

test('EACCES: mode 0600 keeps another user out; 0644 lets it acquire but not reconfigure',
	{ skip: noDevice || (process.getuid() !== 0 && 'needs root to run a child as nobody') }, () => {
	const closed = uniqueName('closed');
	const open = uniqueName('open');
	const a = Limiter.attach(closed, { create: true, config: '20/s', mode: 0o600 });
	const b = Limiter.attach(open, { create: true, config: '20/s:5' });
	const child = spawnSync(process.execPath,
		[path.join(__dirname, 'fixtures', 'perm_child.js'), closed, open],
		{ uid: 65534, gid: 65534, encoding: 'utf8', timeout: 20000 });
	a.close();
	b.close();
	assert.strictEqual(child.status, 0, child.stderr);
	assert.deepStrictEqual(JSON.parse(child.stdout),
		{ closed: 'EACCES', tried: true, setConfig: 'EACCES' });
});
