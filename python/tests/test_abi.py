# SPDX-License-Identifier: GPL-2.0-only
"""The package's struct layouts and ioctl numbers against the C header.

abi_dump.c, compiled at test time against uapi/ of this tree, prints what
the compiler makes of the header; every size, offset, ioctl number and
constant it prints must be what ratelimit._abi packs. Runs on the build
machine (make check's host unit tests); skipped without a compiler.
"""

import os
import shutil
import struct
import subprocess
import tempfile
import unittest

from ratelimit import _abi

HERE = os.path.dirname(os.path.abspath(__file__))
UAPI = os.path.join(HERE, "..", "..", "uapi")


def dump() -> dict:
    cc = os.environ.get("CC", "cc")
    if not shutil.which(cc) or not os.path.isdir(UAPI):
        raise unittest.SkipTest("no C compiler or no uapi/ beside python/")
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "abi_dump")
        subprocess.run([cc, "-Wall", "-Werror", "-I", UAPI, "-o", exe,
                        os.path.join(HERE, "abi_dump.c")], check=True)
        out = subprocess.run([exe], check=True, capture_output=True,
                             text=True).stdout
    res = {}
    for line in out.splitlines():
        kind, what, value = line.split()
        res[(kind, what)] = int(value)
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
