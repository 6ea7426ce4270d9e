#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# The Python package's tests (python/tests, unittest, TAP) in the QEMU
# rig's guest, which selftests/vm/python.sh gave Debian's python3. The
# Makefile installs this as build/selftests/ratelimit_python_test. The
# ABI check (test_abi) needs a C compiler: it is a host unit test.
if [ ! -x /usr/bin/python3 ]; then
	echo "1..0 # SKIP no python3 in the guest"
	exit 4
fi
exec /usr/bin/python3 -S -B /python/tests/run.py test_lib test_limiter test_process test_aio test_aio_queued test_docs test_keyed
