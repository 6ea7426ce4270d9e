// SPDX-License-Identifier: LGPL-2.1-or-later
//
// kratelimit: the Node.js binding of /dev/ratelimit, over libratelimit
// (Documentation/node.md). A Limiter is one client fd of the module. Its
// acquire() is a queued acquire (ratelimit(4)): the request waits in the
// kernel's queue beside blocking clients, in the same order, and the fd,
// watched by libuv, turns readable when it is granted. At most QUEUED_MAX
// requests are in the kernel per fd; the rest wait here, in one FIFO per
// priority. No thread waits anywhere.
//
// On a keyed limiter (config.keyed: a token bucket per key), acquireKey()
// takes the same path with the queued request of a key (rl_submit_key(),
// RL_IOC_SUBMIT_KEY): it waits in the kernel's line of its key, with the
// key's sleepers, and is collected as any other. With an addon built
// without it, acquireKey() serves each key's requests of this Limiter in
// order (a FIFO per key), the head with non-blocking acquires of its key
// and a timer set to the ready time the kernel predicts.
'use strict';

const util = require('util');
const { errno: E } = require('os').constants;
const native = require('./build/Release/kratelimit.node');

const PRIORITIES = { default: 0, low: 1, mid: 2, high: 3, user: 4 };
const NS_PER_MS = 1e6;

// An Error for a libratelimit -errno: code 'EACCES' ..., errno as Node's
// system errors have it (negative), syscall the call that failed.
function rlError(rc, syscall, what) {
	const code = util.getSystemErrorName(rc);
	const msg = util.getSystemErrorMap().get(rc);
	const err = new Error(`${syscall}${what ? ` ${what}` : ''}: ${msg ? msg[1] : code}`);
	err.code = code;
	err.errno = rc;
	err.syscall = syscall;
	return err;
}

function check(rc, syscall, what) {
	if (typeof rc === 'number' && rc < 0)
		throw rlError(rc, syscall, what);
	return rc;
}

function count(n, name = 'n') {
	if (n === undefined)
		return 1;
	if (!Number.isSafeInteger(n) || n < 1)
		throw new RangeError(`${name} must be an integer >= 1, not ${n}`);
	return n;
}

function priority(p) {
	if (p === undefined)
		return 0;
	if (typeof p === 'number' && Number.isInteger(p) && p >= 0 && p <= 4)
		return p;
	if (typeof p === 'string' && p in PRIORITIES)
		return PRIORITIES[p];
	throw new RangeError(`priority is low, mid, high, user or 1..4, not ${p}`);
}

// parseRate("100/s:10"): the configuration of a rate specification
// (rl_parse_rate(3)).
function parseRate(spec) {
	if (typeof spec !== 'string')
		throw new TypeError('a rate specification is a string');
	return check(native.parseRate(spec), 'rl_parse_rate', JSON.stringify(spec));
}

function formatRate(config) {
	return check(native.formatRate(toConfig(config)), 'rl_format_rate');
}

const CONFIG_KEYS = ['rate', 'periodNs', 'burst', 'flags', 'catchup',
	'concurrency', 'backlog', 'fairness', 'keys'];
const CONFIG_KEYED = native.CONFIG_KEYED || 4;
const CONFIG_FAIR_PER_USER = native.CONFIG_FAIR_PER_USER || 8;
const KEY_MAX = native.KEY_MAX || 64;
// A refused keyed request tries again at the predicted ready time, and at
// least this often (ms): a reconfiguration may bring the time closer.
const KEY_RETRY_MAX_MS = 1000;

// The bytes of a key: a string (UTF-8) or a Buffer / Uint8Array, 1 to
// KEY_MAX bytes.
function keyBytes(key) {
	let b;
	if (typeof key === 'string')
		b = Buffer.from(key, 'utf8');
	else if (key instanceof Uint8Array)
		b = key;
	else
		throw new TypeError('a key is a string, a Buffer or a Uint8Array');
	if (b.length < 1 || b.length > KEY_MAX)
		throw new RangeError(`a key is 1 to ${KEY_MAX} bytes, not ${b.length}`);
	return b;
}

// An HTTP Retry-After in whole seconds (at least 1) for ms from now.
function retryAfter(ms) {
	return ms === Infinity ? 86400 : Math.max(1, Math.ceil(ms / 1000));
}

// The Error of a refused keyed request that waits no more (ETIMEDOUT,
// ENOSPC), with the kernel's ready time.
function keyError(res, syscall) {
	const err = rlError(res.errno, syscall);
	err.readyNs = res.readyNs;
	err.retryAfterMs = res.ms;
	err.retryAfter = retryAfter(res.ms);
	return err;
}

// A configuration from a rate string, or an object whose rate may be a
// rate string (its other fields then override the parsed ones) and whose
// period may be given as periodMs.
function toConfig(c) {
	if (typeof c === 'string')
		return parseRate(c);
	if (c === null || typeof c !== 'object')
		throw new TypeError('a configuration is a rate string or an object');
	const out = typeof c.rate === 'string' ? parseRate(c.rate) :
		{ rate: 0, periodNs: 1e9, burst: 0, flags: 0, catchup: 0,
			concurrency: 0, backlog: 0, fairness: 0, keys: 0 };
	if (out.keys === undefined)
		out.keys = 0;
	for (const k of CONFIG_KEYS) {
		if (k === 'rate' && typeof c.rate === 'string')
			continue;
		if (c[k] !== undefined) {
			if (!Number.isSafeInteger(c[k]) || c[k] < 0)
				throw new RangeError(`config.${k} must be an integer >= 0`);
			out[k] = c[k];
		}
	}
	if (c.periodMs !== undefined && c.periodNs === undefined)
		out.periodNs = Math.round(c.periodMs * NS_PER_MS);
	if (c.keyed !== undefined)
		out.flags = c.keyed ? out.flags | CONFIG_KEYED : out.flags & ~CONFIG_KEYED;
	if (c.fairPerUser !== undefined)
		out.flags = c.fairPerUser ? out.flags | CONFIG_FAIR_PER_USER :
			out.flags & ~CONFIG_FAIR_PER_USER;
	return out;
}

// A FIFO with O(1) push and shift (thousands of waiters).
class Fifo {
	constructor() { this.items = []; this.head = 0; }
	get length() { return this.items.length - this.head; }
	peek() { return this.items[this.head]; }
	push(x) { this.items.push(x); }
	unshift(x) {
		if (this.head > 0)
			this.items[--this.head] = x;
		else
			this.items.unshift(x);
	}
	shift() {
		const x = this.items[this.head];
		this.items[this.head++] = undefined;
		if (this.head > 1024 && this.head * 2 > this.items.length) {
			this.items = this.items.slice(this.head);
			this.head = 0;
		}
		return x;
	}
}

const dispose = Symbol.dispose;
const asyncDispose = Symbol.asyncDispose;

// What acquire() gives: n tokens; on a limiter with a concurrency limit,
// n permits held until release() (or scope exit with `using`).
class Permit {
	#limiter;
	constructor(limiter, n, readyNs, waitNs) {
		this.#limiter = limiter;
		this.count = n;
		this.released = false;
		// The kernel's: the CLOCK_MONOTONIC ns at which the tokens
		// existed on the limiter's schedule (the instant the bucket's
		// bound holds for; rl_now_ns() at the grant of a try), and the
		// ns from the request to its collection.
		this.readyNs = readyNs;
		this.waitNs = waitNs;
	}

	// Gives the permits back; a no-op on a limiter without a concurrency
	// limit (rate tokens are spent) and the second time.
	release() {
		if (this.released)
			return;
		this.released = true;
		if (this.#limiter._concurrency > 0 && this.#limiter.fd >= 0)
			this.#limiter.release(this.count);
	}
}
if (dispose)
	Permit.prototype[dispose] = Permit.prototype.release;

let nextId = 1;

// A limiter dropped without close() closes its fd when collected. Its
// poll handle holds it only weakly, so that it can be.
const unclosed = new FinalizationRegistry((fd) => native.close(fd));
// Limiters with requests in the kernel: held while those wait.
const busy = new Set();

class Limiter {
	#fd;
	#queues = [null, new Fifo(), new Fifo(), new Fifo(), new Fifo()];
	#waiting = 0;			// requests in the FIFOs
	#inKernel = new Map();		// id -> request submitted to the kernel
	#poller = null;
	#polling = false;
	#signals = new Map();		// AbortSignal -> its requests here
	#keyQueues = new Map();		// key (latin1) -> Fifo of acquireKey()s
	#queued;
	#keyQueued;			// acquireKey() by submitKey()

	constructor(fd) {
		this.#fd = fd;
		this.name = null;
		unclosed.register(this, fd, this);
		let f = native.getFeatures(fd);
		this.#queued = typeof native.submit === 'function' && f >= 0 &&
			(f & native.FEATURE_QUEUED) !== 0 && !process.env.KRATELIMIT_NO_QUEUED;
		this.#keyQueued = this.#queued && typeof native.submitKey === 'function';
		f = native.getConfig(fd);
		this._concurrency = typeof f === 'object' ? f.concurrency : 0;
	}

	// Limiter.attach(name, {create, exclusive, persist, config, mode}): a
	// client of the named limiter. create makes it if missing, with
	// config (a rate string or object; a paused limiter without one) and
	// mode (0o644 by default: others may attach and acquire, only the
	// owner reconfigures); the kernel checks the mode as for a file.
	static attach(name, opts = {}) {
		if (typeof name !== 'string')
			throw new TypeError('a limiter name is a string');
		const flags = (opts.create ? native.ATTACH_CREATE : 0) |
			(opts.exclusive ? native.ATTACH_EXCL : 0) |
			(opts.persist ? native.ATTACH_PERSIST : 0);
		const mode = opts.mode === undefined ? 0o644 : opts.mode;
		const cfg = opts.config === undefined ? null : toConfig(opts.config);
		const fd = check(native.open(), 'rl_open');
		const rc = native.attach(fd, name, flags, mode, cfg);
		if (rc < 0) {
			native.close(fd);
			throw rlError(rc, 'rl_attach', name);
		}
		const l = new Limiter(fd);
		l.name = name;
		return l;
	}

	// Limiter.create(config): a private limiter of this process.
	static create(config) {
		const cfg = toConfig(config);
		const fd = check(native.open(), 'rl_open');
		const rc = native.setConfig(fd, cfg);
		if (rc < 0) {
			native.close(fd);
			throw rlError(rc, 'rl_set_config');
		}
		return new Limiter(fd);
	}

	static unlink(name) {
		check(native.unlink(name), 'rl_unlink', name);
	}

	get fd() { return this.#fd; }

	// Does acquire() queue in the kernel (a module with the queued
	// acquire), or wait here with timers (older modules)?
	get queued() { return this.#queued; }

	#fdOrThrow() {
		if (this.#fd < 0)
			throw rlError(-E.EBADF, 'kratelimit', 'limiter closed');
		return this.#fd;
	}

	// n tokens (and permits) now, or false: never waits.
	tryAcquire(n) {
		const rc = native.tryAcquire(this.#fdOrThrow(), count(n));
		if (rc > 0)
			return false;
		check(rc, 'rl_try_acquire');
		return true;
	}

	// A promise of a Permit for n tokens, in the kernel's order.
	// timeoutMs: rejects with ETIMEDOUT (nothing consumed); priority:
	// 'low' .. 'user' or 1..4; signal: an AbortSignal, rejects with its
	// reason and gives back whatever was granted.
	acquire(n, opts = {}) {
		if (opts.timeoutMs !== undefined &&
		    (typeof opts.timeoutMs !== 'number' || !(opts.timeoutMs >= 0)))
			throw new RangeError('timeoutMs must be a number >= 0');
		const req = {
			id: nextId++, n: count(n), prio: priority(opts.priority),
			deadline: opts.timeoutMs === undefined ? -1 :
				performance.now() + opts.timeoutMs,
			signal: opts.signal, ticket: 0, state: 'new', timer: null,
			resolve: null, reject: null,
		};
		this.#fdOrThrow();
		if (req.signal?.aborted)
			return Promise.reject(req.signal.reason);
		const p = new Promise((resolve, reject) => {
			req.resolve = resolve;
			req.reject = reject;
		});
		if (req.signal)
			this.#watchSignal(req);
		this.#wait(req);
		return p;
	}

	// fn(permit) with n tokens acquired; the permit is released when fn
	// returns or throws.
	async withPermit(n, fn, opts) {
		if (typeof n === 'function')
			[n, fn, opts] = [1, n, fn];
		const permit = await this.acquire(n, opts);
		try {
			return await fn(permit);
		} finally {
			permit.release();
		}
	}

	// ---- keyed limiters (config.keyed) ----

	#keyedOrThrow() {
		if (typeof native.tryAcquireKey !== 'function')
			throw rlError(-E.ENOTSUP, 'kratelimit', 'an addon built without keyed limiters');
		return this.#fdOrThrow();
	}

	// n tokens (default 1) of key's bucket now, or not: never waits.
	// { granted, readyNs, retryAfterMs, retryAfter }: refused, readyNs is
	// the CLOCK_MONOTONIC ns the request could be granted at (behind the
	// key's sleepers), retryAfterMs the ms until then, retryAfter the
	// whole seconds (at least 1) of an HTTP Retry-After. A new key when
	// the limiter keeps as many keys as config.keys allows, all carrying
	// state: throws ENOSPC, with the same three fields.
	tryAcquireKey(key, n) {
		const fd = this.#keyedOrThrow();
		const rc = native.tryAcquireKey(fd, keyBytes(key), count(n));
		if (rc === 0)
			return { granted: true, readyNs: 0, retryAfterMs: 0, retryAfter: 0 };
		if (typeof rc === 'number')
			throw rlError(rc, 'rl_try_acquire_key');
		if (rc.errno !== -E.EAGAIN)
			throw keyError(rc, 'rl_try_acquire_key');
		return { granted: false, readyNs: rc.readyNs, retryAfterMs: rc.ms,
			retryAfter: retryAfter(rc.ms) };
	}

	// A promise of a Permit for n tokens of key's bucket; requests of
	// one key in arrival order, in the kernel's line of the key with
	// its sleepers. timeoutMs: rejects with ETIMEDOUT (nothing taken;
	// readyNs, retryAfterMs on the error); signal: an AbortSignal,
	// rejects with its reason and withdraws the request (nothing taken;
	// tokens granted as it aborts stay taken: a key takes nothing
	// back). ENOSPC (readyNs, retryAfterMs) and EINVAL reject at once.
	acquireKey(key, n, opts = {}) {
		if (opts.timeoutMs !== undefined &&
		    (typeof opts.timeoutMs !== 'number' || !(opts.timeoutMs >= 0)))
			throw new RangeError('timeoutMs must be a number >= 0');
		const req = {
			id: nextId++, n: count(n), key: keyBytes(key), prio: 0,
			deadline: opts.timeoutMs === undefined ? -1 :
				performance.now() + opts.timeoutMs,
			signal: opts.signal, ticket: 0, state: 'key', timer: null,
			retry: null, start: performance.now(), resolve: null,
			reject: null,
		};
		this.#keyedOrThrow();
		if (req.signal?.aborted)
			return Promise.reject(req.signal.reason);
		const p = new Promise((resolve, reject) => {
			req.resolve = resolve;
			req.reject = reject;
		});
		if (this.#keyQueued) {
			if (req.signal)
				this.#watchSignal(req);
			this.#wait(req);
			return p;
		}
		// An addon without submitKey(): tries at the ready time.
		const name = req.key.toString('latin1');
		let q = this.#keyQueues.get(name);
		if (!q) {
			q = new Fifo();
			this.#keyQueues.set(name, q);
		}
		req.queue = name;
		q.push(req);
		if (req.signal)
			this.#watchSignal(req);
		if (req.deadline >= 0)
			req.timer = setTimeout(() => this.#keyTimeout(req),
				Math.max(0, req.deadline - performance.now()));
		if (q.length === 1)
			this.#keyServe(name);
		return p;
	}

	// key's state: { key, available, fullNs, waiters, kept }, read
	// without creating it.
	keyState(key) {
		const k = keyBytes(key);
		const st = check(native.getKey(this.#keyedOrThrow(), k), 'rl_get_key');
		return { key: Buffer.from(k), ...st };
	}

	// The counts of the keys: { keys, keysMax, created, evicted, refused,
	// waiters }.
	keysStats() {
		return check(native.getKeys(this.#keyedOrThrow()), 'rl_get_keys');
	}

	// Serve key name's FIFO from its head: grant what the kernel grants
	// now, then wait for the ready time of the first it refuses.
	#keyServe(name) {
		const q = this.#keyQueues.get(name);
		while (q && q.length) {
			const req = q.peek();
			if (req.state === 'done') {
				q.shift();
				continue;
			}
			if (req.retry) {
				clearTimeout(req.retry);
				req.retry = null;
			}
			const rc = native.tryAcquireKey(this.#fd, req.key, req.n);
			if (rc === 0) {
				q.shift();
				this.#settle(req, null, { readyNs: native.now(),
					waitNs: Math.round((performance.now() - req.start) * NS_PER_MS) });
				continue;
			}
			if (typeof rc === 'number' || rc.errno !== -E.EAGAIN) {
				q.shift();
				this.#settle(req, typeof rc === 'number' ?
					rlError(rc, 'rl_acquire_key') : keyError(rc, 'rl_acquire_key'));
				continue;
			}
			req.lastRefusal = rc;
			const ms = Math.min(rc.ms, KEY_RETRY_MAX_MS);
			// (the deadline's own timer ends it earlier)
			req.retry = setTimeout(() => this.#keyServe(name), ms);
			return;
		}
		if (q && !q.length)
			this.#keyQueues.delete(name);
	}

	#keyTimeout(req) {
		req.timer = null;
		if (req.state === 'done')
			return;
		const res = req.lastRefusal || { errno: -E.ETIMEDOUT, readyNs: 0, ms: 0 };
		this.#settle(req, keyError({ ...res, errno: -E.ETIMEDOUT }, 'rl_acquire_key'));
		this.#keyNext(req);
	}

	// req left early: if it was its key's head, the next one tries now.
	#keyNext(req) {
		const q = this.#keyQueues.get(req.queue);
		if (q && q.peek() === req)
			this.#keyServe(req.queue);
	}

	release(n) {
		check(native.release(this.#fdOrThrow(), count(n)), 'rl_release');
	}

	refund(n) {
		check(native.refund(this.#fdOrThrow(), count(n)), 'rl_refund');
	}

	stats() {
		return check(native.getStats(this.#fdOrThrow()), 'rl_get_stats');
	}

	config() {
		const c = check(native.getConfig(this.#fdOrThrow()), 'rl_get_config');
		c.keyed = (c.flags & CONFIG_KEYED) !== 0;
		c.fairPerUser = (c.flags & CONFIG_FAIR_PER_USER) !== 0;
		return c;
	}

	// The rate as a string ("200/s:20"), as rl_format_rate() prints it.
	rate() {
		return formatRate(this.config());
	}

	setConfig(config) {
		const cfg = toConfig(config);
		check(native.setConfig(this.#fdOrThrow(), cfg), 'rl_set_config');
		this._concurrency = cfg.concurrency;
	}

	// Closes the fd: pending acquires reject with ECANCELED, permits the
	// fd holds go back.
	close() {
		if (this.#fd < 0)
			return;
		const err = rlError(-E.ECANCELED, 'kratelimit', 'limiter closed');
		for (const q of this.#queues.slice(1)) {
			while (q.length) {
				const r = q.shift();
				if (r.state === 'fifo')
					this.#settle(r, err);
			}
		}
		this.#waiting = 0;
		for (const r of this.#inKernel.values())
			this.#settle(r, err);
		this.#inKernel.clear();
		for (const q of this.#keyQueues.values()) {
			while (q.length)
				this.#settle(q.shift(), err);
		}
		this.#keyQueues.clear();
		if (this.#poller)
			this.#poller.close();
		this.#poller = null;
		this.#polling = false;
		busy.delete(this);
		unclosed.unregister(this);
		native.close(this.#fd);
		this.#fd = -1;
	}

	// ---- internals ----

	#settle(req, err, res) {
		if (req.state === 'done')
			return;
		req.state = 'done';
		if (req.timer)
			clearTimeout(req.timer);
		if (req.retry)
			clearTimeout(req.retry);
		if (req.signal)
			this.#unwatchSignal(req);
		if (err)
			req.reject(err);
		else if (res)
			req.resolve(new Permit(this, req.n, res.readyNs, res.waitNs));
		else
			req.resolve(new Permit(this, req.n, native.now(), 0));
	}

	// One abort listener per signal, whatever the number of requests
	// that share it.
	#watchSignal(req) {
		let w = this.#signals.get(req.signal);
		if (!w) {
			w = { reqs: new Set(), onAbort: null };
			w.onAbort = () => {
				for (const r of [...w.reqs])
					this.#abort(r);
			};
			this.#signals.set(req.signal, w);
			req.signal.addEventListener('abort', w.onAbort, { once: true });
		}
		w.reqs.add(req);
	}

	#unwatchSignal(req) {
		const w = this.#signals.get(req.signal);
		if (!w || !w.reqs.delete(req) || w.reqs.size)
			return;
		req.signal.removeEventListener('abort', w.onAbort);
		this.#signals.delete(req.signal);
	}

	// The one way a request waits: queued in the kernel when it can,
	// else by tries and timers.
	#wait(req) {
		if (this.#queued) {
			req.state = 'fifo';
			// The fd's own priority (0) waits with MID, its default.
			this.#queues[req.prio || 2].push(req);
			this.#waiting++;
			if (req.deadline >= 0)
				req.timer = setTimeout(() => this.#fifoTimeout(req),
					Math.max(0, req.deadline - performance.now()));
			this.#pump();
		} else {
			this.#poll(req);
		}
	}

	// Without the queued acquire: try; when refused, try again when the
	// kernel predicts the tokens are there (a client of this kind is
	// served only when the queue is empty).
	#poll(req) {
		if (req.state === 'done')
			return;
		req.state = 'polling';
		const rc = native.tryAcquire(this.#fd, req.n);
		if (rc === 0)
			return this.#settle(req);
		if (rc < 0)
			return this.#settle(req, rlError(rc, 'rl_try_acquire'));
		let ms = Math.min(rc === Infinity ? 100 : rc, 100);
		if (req.deadline >= 0) {
			const left = req.deadline - performance.now();
			if (left <= 0)
				return this.#settle(req, rlError(-E.ETIMEDOUT, 'rl_try_acquire'));
			ms = Math.min(ms, left);
		}
		req.timer = setTimeout(() => this.#poll(req), ms);
	}

	// Submit from the FIFOs, highest priority first, while the kernel
	// takes more.
	#pump() {
		const max = native.QUEUED_MAX;
		for (let p = 4; p >= 1 && this.#inKernel.size < max; p--) {
			const q = this.#queues[p];
			while (q.length && this.#inKernel.size < max) {
				const req = q.shift();
				if (req.state !== 'fifo')
					continue;
				this.#waiting--;
				if (!this.#submit(req)) {
					q.unshift(req);
					this.#waiting++;
					return;
				}
			}
		}
		this.#watch();
	}

	// One request to the kernel: false when it takes no more (EBUSY).
	#submit(req) {
		let timeout = -1;
		if (req.deadline >= 0)
			timeout = Math.max(0, Math.floor((req.deadline - performance.now()) * NS_PER_MS));
		const rc = req.key ?
			native.submitKey(this.#fd, req.key, req.n, timeout, req.id) :
			native.submit(this.#fd, req.n, timeout, req.prio, req.id);
		if (rc === -E.EBUSY)
			return false;
		if (typeof rc === 'object') {
			// A key's refusal (ETIMEDOUT, ENOSPC) has its ready time.
			this.#settle(req, rc.errno ? keyError(rc, 'rl_submit_key') : null, rc);
		} else if (rc < 0) {
			this.#settle(req, rlError(rc, req.key ? 'rl_submit_key' : 'rl_submit'));
		} else {
			req.state = 'kernel';
			req.ticket = rc;
			this.#inKernel.set(req.id, req);
		}
		return true;
	}

	// Watch the fd while the kernel holds requests of ours.
	#watch() {
		const want = this.#inKernel.size > 0;
		if (want === this.#polling)
			return;
		if (!this.#poller) {
			const self = new WeakRef(this);
			this.#poller = new native.Poller(this.#fd,
				() => self.deref()?._readable());
		}
		if (want) {
			check(this.#poller.start(), 'uv_poll_start');
			busy.add(this);
		} else {
			this.#poller.stop();
			busy.delete(this);
		}
		this.#polling = want;
	}

	// The fd is readable: collect every finished request (called by the
	// poll handle only).
	_readable() {
		if (this.#fd < 0)
			return;
		for (let got = 0; ; got++) {
			const res = native.collect(this.#fd);
			if (res === -E.EAGAIN && got === 0 && this.#polling) {
				// Readable with nothing to collect (the fd's other
				// meaning, tokens there for a try): look again
				// shortly rather than spin.
				this.#poller.stop();
				this.#polling = false;
				busy.delete(this);
				setTimeout(() => this.#fd >= 0 && this.#watch(), 2);
				return;
			}
			if (res === -E.EAGAIN)
				break;
			if (typeof res === 'number') {
				// Nothing more can be collected: fail what waits.
				const err = rlError(res, 'rl_collect');
				for (const r of this.#inKernel.values())
					this.#settle(r, err);
				this.#inKernel.clear();
				break;
			}
			const req = this.#inKernel.get(res.userData);
			if (!req)
				continue;
			this.#inKernel.delete(res.userData);
			let err = null;
			if (res.result)
				err = req.key ? keyError({ ...res, errno: res.result }, 'rl_collect') :
					rlError(res.result, 'rl_collect');
			this.#settle(req, err, res);
		}
		this.#pump();
	}

	#fifoTimeout(req) {
		req.timer = null;
		if (req.state === 'fifo') {
			this.#waiting--;
			// Never submitted: no ready time of the kernel's.
			this.#settle(req, req.key ?
				keyError({ errno: -E.ETIMEDOUT, readyNs: 0, ms: 0 }, 'rl_submit_key') :
				rlError(-E.ETIMEDOUT, 'rl_submit'));
		}
	}

	#abort(req) {
		const reason = req.signal.reason;
		if (req.state === 'key') {
			this.#settle(req, reason);
			this.#keyNext(req);
			return;
		}
		if (req.state === 'kernel') {
			// Queued: withdrawn; granted and not collected: back to
			// the limiter, or on a key taken still (ENOENT cannot be:
			// a collected request is settled).
			native.cancel(this.#fd, req.ticket);
			this.#inKernel.delete(req.id);
			this.#settle(req, reason);
			this.#pump();
			return;
		}
		if (req.state === 'fifo')
			this.#waiting--;
		this.#settle(req, reason);
	}
}
if (dispose)
	Limiter.prototype[dispose] = Limiter.prototype.close;
if (asyncDispose)
	Permit.prototype[asyncDispose] = async function () { this.release(); };

module.exports = {
	Limiter, Permit, parseRate, formatRate,
	QUEUED_MAX: native.QUEUED_MAX || 64,
	KEY_MAX,
};
