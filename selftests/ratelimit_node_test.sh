#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The Node.js package's tests (node/test, Node's own test runner, TAP) in
# the QEMU rig's guest, which selftests/vm/node.sh gave the node binary and
# the package (/node). The Makefile installs this as
# build/selftests/ratelimit_node_test.
if [ ! -x /usr/bin/node ] || [ ! -f /node/build/Release/kratelimit.node ]; then
	echo "1..0 # SKIP no node or no addon in the guest (scripts/deps.sh node, make node)"
	exit 4
fi
cd /node || exit 1
exec /usr/bin/node --test --test-reporter=tap test/api.test.js \
	test/cluster.test.js test/loop.test.js test/keyed.test.js
