#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# The Python package's struct layouts and ioctl numbers against the C
# header (python/tests/test_abi.py), on the build machine: a host unit
# test of make check, which runs it from the top of the tree. The
# Makefile installs this as build/unit/python_abi_test.
exec /usr/bin/python3 -B python/tests/run.py test_abi test_lib test_aio_queued
