# SPDX-License-Identifier: GPL-2.0-only
"""What needs no module: rate strings, names and parsers of libratelimit
through the package, and the library's absence. On the build machine
(with test_abi) and in the guest."""

import os
import subprocess
import sys
import unittest

import kratelimit
from kratelimit import Config, Limiter

SEC = 1_000_000_000


class RateStrings(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(Config.parse("100/s:10"),
                         Config(rate=100, period_ns=SEC, burst=10))
        self.assertEqual(Config.parse("1/10s"),
                         Config(rate=1, period_ns=10 * SEC))
        self.assertEqual(Config.parse("10MiB/s").rate, 10 << 20)
        self.assertTrue(Config.parse("unlimited").unlimited)
        c = Config.parse("50/s", concurrency=4)
        self.assertEqual((c.rate, c.concurrency), (50, 4))

    def test_format_round_trip(self):
        for spec in ("100/s:10", "1/10s", "500/100ms:50", "unlimited"):
            c = Config.parse(spec)
            self.assertEqual(Config.parse(str(c)), c, spec)
        self.assertEqual(str(Config.parse("100/s:10")), "100/s:10")

    def test_malformed(self):
        for bad in ("", "fast", "10/", "1/0s", "-1/s"):
            with self.assertRaises(ValueError, msg=bad) as cm:
                Config.parse(bad)
            self.assertIn("rl_parse_rate", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            Config.parse("99999999999999999999999/s")
        self.assertIn("out of range", str(cm.exception))

    def test_to_config(self):
        c = Config(rate=3)
        self.assertIs(kratelimit.to_config(c), c)
        self.assertEqual(kratelimit.to_config("3/s"), Config(rate=3))


class Parsers(unittest.TestCase):
    def test_names(self):
        self.assertTrue(kratelimit.name_valid("api.v1-x_2"))
        for bad in ("", ".hidden", "a/b", "x" * 64, "é"):
            self.assertFalse(kratelimit.name_valid(bad), bad)

    def test_amount_and_priority(self):
        self.assertEqual(kratelimit.parse_amount("64KiB"), 65536)
        self.assertEqual(kratelimit.parse_amount("10k"), 10000)
        self.assertEqual(kratelimit.parse_priority("high"),
                         kratelimit.PRIO_HIGH)
        with self.assertRaises(ValueError):
            kratelimit.parse_amount("lots")
        with self.assertRaises(ValueError):
            kratelimit.parse_priority("urgent")

    def test_now_ns_is_monotonic_ns(self):
        import time
        a = time.monotonic_ns()
        b = kratelimit.now_ns()
        self.assertLessEqual(a, b)
        self.assertLess(b - a, 10 * SEC)


class Loading(unittest.TestCase):
    def test_missing_library_names_the_package(self):
        env = dict(os.environ, KRATELIMIT_LIBRARY="/nonexistent/lib.so.1")
        here = os.path.dirname(os.path.abspath(__file__))
        r = subprocess.run([sys.executable, "-S", "-c", "import kratelimit"],
                           env=env, cwd=os.path.join(here, ".."),
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ImportError: kratelimit needs libratelimit.so.1 "
                      "(Debian: apt install libratelimit1", r.stderr)

    def test_no_device(self):
        with self.assertRaises(FileNotFoundError) as cm:
            Limiter("/dev/no-such-ratelimit")
        self.assertIn("module loaded", str(cm.exception))
