// SPDX-License-Identifier: LGPL-2.1-or-later
//
// An HTTP server under the cluster module that allows each client address
// 10 requests a second (a burst of 20), counted across all the workers,
// and answers the others 429 Too Many Requests with a Retry-After.
//
//	rlctl create api_per_ip 10/s:20 --keyed --keys 1000000
//	node keyed_cluster.js [PORT] [WORKERS]
//
// Every worker attaches to the one keyed limiter "api_per_ip" (RL_LIMITER
// names another): a token bucket per client address lives in the kernel,
// so the limit holds whichever worker the connection reaches, and whatever
// worker dies or is restarted. Behind a reverse proxy, take the address
// from the header the proxy sets rather than the socket's.
// Documentation/keyed.md.
'use strict';

const cluster = require('node:cluster');
const http = require('node:http');
const os = require('node:os');
// The package installed, else the one of this tree.
const { Limiter } = (() => {
	try {
		return require('kratelimit');
	} catch {
		return require('..');
	}
})();

const NAME = process.env.RL_LIMITER || 'api_per_ip';

// The key a request is counted under: the client's address.
function clientKey(req) {
	return req.socket.remoteAddress || 'unknown';
}

// null when key may have cost more requests now, else the status and
// headers of the refusal: 429 with Retry-After from the time the kernel
// says the request could be granted. A new key when the limiter keeps as
// many keys as it may, all of them busy (ENOSPC), is refused the same way.
function check(limiter, key, cost = 1) {
	let r;
	try {
		r = limiter.tryAcquireKey(key, cost);
	} catch (err) {
		if (err.code !== 'ENOSPC')
			throw err;
		r = err;
	}
	if (r.granted)
		return null;
	return { status: 429, headers: { 'Retry-After': String(r.retryAfter),
		'Content-Type': 'text/plain' } };
}

// The request handler of a worker, over its client of the limiter.
function handler(limiter) {
	return (req, res) => {
		const refused = check(limiter, clientKey(req));
		// (which worker answered: the budget is the same in all)
		res.setHeader('X-Worker', String(process.pid));
		if (refused) {
			res.writeHead(refused.status, refused.headers);
			res.end('too many requests, retry later\n');
			return;
		}
		res.writeHead(200, { 'Content-Type': 'text/plain' });
		res.end('hello\n');
	};
}

function main() {
	const port = Number(process.argv[2] || 8000);
	const workers = Number(process.argv[3] || os.availableParallelism?.() || os.cpus().length);
	if (cluster.isPrimary) {
		for (let i = 0; i < workers; i++)
			cluster.fork();
		cluster.on('exit', (w, code) => {
			console.error(`worker ${w.process.pid} exited (${code}), replacing it`);
			cluster.fork();
		});
		console.log(`serving on port ${port} with ${workers} workers, limiter ${NAME}`);
		return;
	}
	const limiter = Limiter.attach(NAME);
	http.createServer(handler(limiter)).listen(port);
}

module.exports = { check, handler, clientKey };

if (require.main === module)
	main();
