# SPDX-License-Identifier: GPL-2.0-only
"""Helpers of the tests: skip without the module, unique names, forks."""

import os
import shutil
import socket
import time
import unittest

import kratelimit

SEC = 1_000_000_000
_seq = [0]


def need_device(cls):
    """Skip a TestCase where /dev/ratelimit is missing (no module)."""
    if not os.path.exists(kratelimit.DEVICE):
        return unittest.skip("no /dev/ratelimit (module not loaded)")(cls)
    return cls


def need_socketpair(cls):
    """Skip a TestCase where the kernel has no AF_UNIX sockets (one
    built without CONFIG_UNIX): asyncio's event loop needs a socketpair
    for its self-pipe."""
    try:
        for sock in socket.socketpair():
            sock.close()
    except OSError as err:
        return unittest.skip(f"no socketpair ({err.strerror}): "
                             "asyncio cannot run on this kernel")(cls)
    return cls


def name(what: str) -> str:
    """A limiter name of its own for this test process."""
    _seq[0] += 1
    return f"py-{what}-{os.getpid()}-{_seq[0]}"


def in_child(fn) -> int:
    """Run @fn in a forked child; its return value is the exit status."""
    pid = os.fork()
    if pid == 0:
        rc = 99
        try:
            rc = fn()
        finally:
            os._exit(rc)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def tool(prog: str) -> str:
    """Path of a C tool: on PATH (the guest's /tools), else build/tools."""
    path = shutil.which(prog)
    if path:
        return path
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "build", "tools", prog)
    if not os.access(path, os.X_OK):
        raise unittest.SkipTest(f"no {prog} (make tools)")
    return path


def jain(xs) -> float:
    """Jain's fairness index of @xs: 1 when all are equal."""
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def now() -> int:
    return time.monotonic_ns()
