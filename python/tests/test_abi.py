# SPDX-License-Identifier: GPL-2.0-only
"""The package's ctypes Structures, constants and library functions
against the C headers and the built library.

abi_dump.c, compiled at test time against uapi/ and lib/ of this tree,
prints what the compiler makes of the headers; every struct size, field
offset and constant it prints must be what kratelimit._lib declares, and
every field _lib declares must be printed. It prints the rows of the
driver's table of tunables (driver/tunables.h) too: each one is a field of
Config. And every function libratelimit.so.1 exports is bound, or named
in NOT_BOUND with the reason. Runs on the build machine (make check's
host unit tests); skipped without a compiler.
"""

import ctypes
import dataclasses
import os
import shutil
import subprocess
import tempfile
import unittest

from kratelimit import _lib
from kratelimit._values import Config

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.join(HERE, "..", "..")
UAPI = os.path.join(TOP, "uapi")
LIB = os.path.join(TOP, "lib")
DRIVER = os.path.join(TOP, "driver")
# The library's functions the package does not call, and why.
NOT_BOUND = {
    "rl_acquire": "rl_acquire_ex() does it with a deadline and priority",
    "rl_try_acquire": "rl_acquire_ex() with RL_ACQUIRE_NONBLOCK",
    "rl_acquire_timeout": "rl_acquire_ex() with a deadline",
    "rl_cycle": "rl_cycle_ex() with a deadline and priority",
    "rl_open_named": "rl_open() and rl_attach()",
    "rl_batch_open": "per-thread reserves for C's nanoseconds: Python's "
                     "call costs more than the syscall it saves",
    "rl_batch_acquire": "as rl_batch_open",
    "rl_batch_flush": "as rl_batch_open",
    "rl_batch_close": "as rl_batch_open",
    "rl_async_supported": "io_uring: Python has no liburing ring "
                          "(AsyncLimiter polls the fd)",
    "rl_acquire_async": "io_uring",
    "rl_cancel_async": "io_uring",
    "rl_prep_acquire_async": "io_uring",
    "rl_prep_cancel_async": "io_uring",
    "rl_async_result": "io_uring",
    "rl_acquire_key_async": "io_uring",
    "rl_prep_acquire_key_async": "io_uring",
    "rl_acquire_key": "rl_acquire_key_ex() with a deadline",
    "rl_try_acquire_key": "rl_acquire_key_ex() with RL_ACQUIRE_NONBLOCK",
    "rl_acquire_key_timeout": "rl_acquire_key_ex() with a deadline",
    "rl_share": "the host administrator's call (rlctl share), not a "
                "service's",
}


def dump() -> dict:
    cc = os.environ.get("CC", "cc")
    if not shutil.which(cc) or not os.path.isdir(UAPI) or \
            not os.path.isdir(DRIVER):
        raise unittest.SkipTest("no C compiler or no uapi/, lib/, driver/ "
                                "beside python/")
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "abi_dump")
        subprocess.run([cc, "-Wall", "-Werror", "-I", UAPI, "-I", LIB,
                        "-o", exe, os.path.join(HERE, "abi_dump.c")],
                       check=True)
        out = subprocess.run([exe], check=True, capture_output=True,
                             text=True).stdout
    res = {}
    for line in out.splitlines():
        kind, what, *value = line.split()
        if kind == "tunable":
            res[(kind, what)] = (value[0], int(value[1]))
        else:
            res[(kind, what)] = int(value[0])
    return res


class Abi(unittest.TestCase):
    c: dict = {}

    def setUp(self):
        if not Abi.c:
            Abi.c = dump()

    def test_sizes(self):
        for sname, cls in _lib.STRUCTS.items():
            if sname in ("rl_queued", "rl_key_acquire", "rl_key_state",
                         "rl_keys_stats") and \
                    ("sizeof", sname) not in self.c:
                continue    # a uapi/ without the queued acquire or keys
            self.assertEqual(ctypes.sizeof(cls), self.c[("sizeof", sname)],
                             sname)
        # every struct the dump knows is declared
        for kind, sname in self.c:
            if kind == "sizeof":
                self.assertIn(sname, _lib.STRUCTS)

    def test_offsets(self):
        n = 0
        for sname, cls in _lib.STRUCTS.items():
            if ("sizeof", sname) not in self.c:
                continue
            for field, _ in cls._fields_:
                key = ("offsetof", f"{sname}.{field}")
                self.assertIn(key, self.c, f"abi_dump.c lacks {key[1]}")
                self.assertEqual(getattr(cls, field).offset, self.c[key],
                                 key[1])
                n += 1
        self.assertGreater(n, 70)

    def test_ioctl_numbers(self):
        seen = 0
        for (kind, name), number in self.c.items():
            if kind != "ioctl":
                continue
            self.assertEqual(_lib.IOCTL_NR[name], number & 0xff, name)
            self.assertEqual(number >> 8 & 0xff, 0xBA, name)
            seen += 1
        self.assertGreaterEqual(seen, 18)

    def test_constants(self):
        n = 0
        for (kind, what), value in self.c.items():
            if kind == "const":
                self.assertEqual(getattr(_lib, what), value, what)
                n += 1
        self.assertGreaterEqual(n, 28)

    def test_keyed(self):
        """The keyed structs, constants and the ioctl numbers the package
        makes itself with an older library are the header's."""
        if ("sizeof", "rl_key_acquire") not in self.c:
            self.skipTest("a uapi/ without keyed limiters")
        self.assertEqual(self.c[("sizeof", "rl_key_acquire")], 160)
        self.assertEqual(self.c[("sizeof", "rl_key_state")], 128)
        self.assertEqual(self.c[("sizeof", "rl_keys_stats")], 128)
        for name in ("IOC_ACQUIRE_KEY", "IOC_GET_KEY", "IOC_GET_KEYS"):
            self.assertEqual(getattr(_lib, name), self.c[("const", name)],
                             name)
            self.assertEqual(self.c[("ioctl", "RL_" + name)],
                             self.c[("const", name)])
        self.assertEqual(self.c[("const", "KEY_MAX")], 64)

    def test_tunables(self):
        rows = {w: v for (k, w), v in self.c.items() if k == "tunable"}
        self.assertGreaterEqual(len(rows), 9)
        config = dict(_lib.rl_config._fields_)
        fields = {f.name for f in dataclasses.fields(Config)}
        for name, (field, flag) in rows.items():
            self.assertIn(field, config, name)
            if flag:
                self.assertEqual(getattr(_lib, "CONFIG_" + name.upper()),
                                 flag, name)
            self.assertIn(name, fields, f"tunable {name}: no field of Config")
        self.assertEqual(fields, set(rows))

    def test_every_library_function(self):
        """Each function libratelimit.so.1 exports is bound or named in
        NOT_BOUND: a new one fails here until it has its decision."""
        so = os.path.join(TOP, "build", "lib", "libratelimit.so.1")
        if not shutil.which("nm") or not os.path.exists(so):
            self.skipTest("no nm or no build/lib/libratelimit.so.1")
        out = subprocess.run(["nm", "-D", "--defined-only", so], check=True,
                             capture_output=True, text=True).stdout
        exported = {line.split()[-1].split("@")[0]
                    for line in out.splitlines()
                    if line.split()[-2:-1] == ["T"]}
        self.assertIn("rl_acquire_ex", exported)
        bound = set(_lib.PROTOTYPES) | set(_lib.QUEUED) | set(_lib.KEYED) | \
            set(_lib.KEYED_QUEUED)
        for fn in sorted(exported):
            self.assertTrue(fn in bound or fn in NOT_BOUND,
                            f"{fn}: neither bound in kratelimit/_lib.py "
                            "nor in NOT_BOUND")
        for fn in sorted(_lib.PROTOTYPES):
            self.assertIn(fn, exported)
        for fn in NOT_BOUND:
            self.assertNotIn(fn, bound)
