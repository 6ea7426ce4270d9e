// SPDX-License-Identifier: LGPL-2.1-or-later
//
// What the tests share: the package, whether the module is there (the
// tests that acquire skip without /dev/ratelimit: on a host they need the
// QEMU guest of make check), and a limiter name unique to this run.
'use strict';
const assert = require('assert');
const fs = require('fs');

const hasDevice = fs.existsSync('/dev/ratelimit');
const noDevice = hasDevice ? false : 'no /dev/ratelimit (make check runs this in a guest)';
let seq = 0;

// Does the module queue acquires (RL_FEATURE_QUEUED)? Without, acquire()
// tries and sleeps in the binding, and gets no fair share beside others.
function queued() {
	if (!hasDevice)
		return false;
	const l = require('..').Limiter.create('1/s');
	try {
		return l.queued;
	} finally {
		l.close();
	}
}
const noQueued = noDevice || (queued() ? false : 'a module without the queued acquire');

// timed(t, ok, what): a check of time alone (how often the loop ticks
// while requests wait). With KSFT_MACHINE_SLOW=yes (the QEMU rig sets it
// on the debug kernel, as the kernel's own selftests are run there) a
// failure marks the test TODO with its figures, and is reported so (a
// SKIP in make check's results); the test's other checks still fail it.
// Elsewhere it fails as an assertion would.
function timed(t, ok, what) {
	if (ok)
		return;
	if (process.env.KSFT_MACHINE_SLOW !== 'yes')
		assert.fail(what);
	t.todo(`timing on a slow machine (KSFT_MACHINE_SLOW): ${what}`);
}

module.exports = {
	kratelimit: require('..'),
	noDevice,
	noQueued,
	timed,
	uniqueName: (what) => `node-${what}-${process.pid}-${++seq}`,
	sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
};
