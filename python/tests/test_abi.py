# SPDX-License-Identifier: GPL-2.0-only
"""The package's struct layouts and ioctl numbers against the C header.

abi_dump.c, compiled at test time against uapi/ of this tree, prints what
the compiler makes of the header; every size, offset, ioctl number and
constant it prints must be what kratelimit._abi packs. It prints the rows
of the driver's table of tunables (driver/tunables.h) too: each one is a
field of Config, or named in NOT_IN_CONFIG with the reason. Runs on the
build machine (make check's host unit tests); skipped without a compiler.
"""

import dataclasses
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

from kratelimit import _abi
from kratelimit._core import Config

HERE = os.path.dirname(os.path.abspath(__file__))
UAPI = os.path.join(HERE, "..", "..", "uapi")
DRIVER = os.path.join(HERE, "..", "..", "driver")
# The tunables that Config leaves out, and why.
NOT_IN_CONFIG = {"fed": "only a feeder such as rlsyncd deposits tokens"}


def dump() -> dict:
    cc = os.environ.get("CC", "cc")
    if not shutil.which(cc) or not os.path.isdir(UAPI) or \
            not os.path.isdir(DRIVER):
        raise unittest.SkipTest("no C compiler or no uapi/, driver/ beside "
                                "python/")
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "abi_dump")
        subprocess.run([cc, "-Wall", "-Werror", "-I", UAPI, "-o", exe,
                        os.path.join(HERE, "abi_dump.c")], check=True)
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
        seen = 0
        for sname, fields in _abi.STRUCTS.items():
            size = struct.calcsize(_abi.fmt(fields))
            self.assertEqual(size, self.c[("sizeof", sname)], sname)
            seen += 1
        self.assertEqual(seen, 8)

    def test_offsets(self):
        n = 0
        for (kind, what), value in self.c.items():
            if kind != "offsetof":
                continue
            sname, field = what.split(".", 1)
            offs = _abi.offsets(_abi.STRUCTS[sname])
            self.assertEqual(offs[field], value, what)
            n += 1
        self.assertGreater(n, 40)

    def test_ioctl_numbers(self):
        for name, number in _abi.IOCTLS.items():
            self.assertEqual(number, self.c[("ioctl", name)], name)
        self.assertEqual(len([k for k in self.c if k[0] == "ioctl"]),
                         len(_abi.IOCTLS))

    def test_constants(self):
        for (kind, what), value in self.c.items():
            if kind == "const":
                self.assertEqual(getattr(_abi, what), value, what)

    def test_tunables(self):
        rows = {w: v for (k, w), v in self.c.items() if k == "tunable"}
        self.assertGreaterEqual(len(rows), 9)
        config = dict(_abi.CONFIG)
        fields = {f.name for f in dataclasses.fields(Config)}
        for name, (field, flag) in rows.items():
            self.assertIn(field, config, name)
            if flag:
                self.assertEqual(getattr(_abi, "CONFIG_" + name.upper()),
                                 flag, name)
            if name in NOT_IN_CONFIG:
                self.assertNotIn(name, fields, name)
            else:
                self.assertIn(name, fields,
                              f"tunable {name}: no field of Config")
        self.assertEqual(fields, set(rows) - set(NOT_IN_CONFIG))
