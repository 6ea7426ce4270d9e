#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# The Python package's tests that need no module, on the build machine:
# its ctypes Structures against the C headers and the built library
# (test_abi.py), rate strings and parsers (test_lib.py), the queued
# asyncio path against a simulated kernel (test_aio_queued.py), pip
# install ./python offline in a plain venv (test_install.py), and what of
# keyed limiters needs no module (test_keyed.py: keys, Config, the code of
# keyed.md against the examples). A host unit
# test of make check, which runs it from the top of the tree. The
# Makefile installs this as build/unit/python_abi_test.
exec /usr/bin/python3 -B python/tests/run.py test_abi test_lib test_aio_queued test_install test_keyed
