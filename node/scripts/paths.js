// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Prints one of the directories binding.gyp needs: "include" (libratelimit.h
// and linux/ratelimit_dev.h), "lib" (libratelimit.so) or "napi"
// (node-addon-api's headers); or "nodedir", the Node.js headers' prefix. In the source tree the library's own lib/,
// uapi/ and build/lib/ (make lib); elsewhere nothing: the system's
// (libratelimit-dev). KRATELIMIT_LIBDIR and KRATELIMIT_INCDIR override.
'use strict';
const fs = require('fs');
const path = require('path');

const top = path.resolve(__dirname, '..', '..');
const inTree = fs.existsSync(path.join(top, 'lib', 'libratelimit.h')) &&
	fs.existsSync(path.join(top, 'uapi', 'linux', 'ratelimit_dev.h'));
const what = process.argv[2];

function napi() {
	// Debian's node-addon-api, a node_modules one, or the copy that
	// scripts/deps.sh node keeps in /var/cache/ratelimit/npm.
	const dirs = [path.join(__dirname, '..', 'node_modules'),
		'/usr/share/nodejs', '/var/cache/ratelimit/npm/node_modules'];
	for (const d of dirs) {
		if (fs.existsSync(path.join(d, 'node-addon-api', 'napi.h')))
			return path.join(d, 'node-addon-api');
	}
	return path.dirname(require.resolve('node-addon-api/napi.h'));
}

let out;
switch (what) {
case 'include':
	out = process.env.KRATELIMIT_INCDIR ||
		(inTree ? [path.join(top, 'lib'), path.join(top, 'uapi')].join(' ') : '');
	break;
case 'lib':
	out = process.env.KRATELIMIT_LIBDIR ||
		(inTree && fs.existsSync(path.join(top, 'build', 'lib', 'libratelimit.so')) ?
			path.join(top, 'build', 'lib') : '');
	break;
case 'napi':
	out = napi();
	break;
case 'nodedir':
	// The prefix of this node's headers (include/node), for node-gyp's
	// --nodedir: it then downloads none.
	out = [path.resolve(process.execPath, '..', '..'), '/usr', '/usr/local'].find(
		(d) => fs.existsSync(path.join(d, 'include', 'node', 'node_api.h'))) || '';
	break;
default:
	process.stderr.write('usage: paths.js include|lib|napi|nodedir\n');
	process.exit(2);
}
process.stdout.write(out + '\n');
