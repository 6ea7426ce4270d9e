#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Run the tests (unittest) and print TAP: what the QEMU rig and the host
unit test loop of make check read (selftests/vm/lib.sh, rl_tap).

    run.py [MODULE...]     default: every test_*.py beside this file

One TAP line per test method; a skipped test is "ok N name # SKIP why".
Exit status 0 when all passed, 1 otherwise.
"""

import os
import sys
import time
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..")]
# The tree's library (make lib) rather than an installed one, when there
# is one: the guest has it as /usr/lib/libratelimit.so.1 (python.sh).
_tree_lib = os.path.join(here, "..", "..", "build", "lib", "libratelimit.so.1")
if "KRATELIMIT_LIBRARY" not in os.environ and os.path.exists(_tree_lib):
    os.environ["KRATELIMIT_LIBRARY"] = os.path.abspath(_tree_lib)


class Tap(unittest.TestResult):
    """Prints a TAP line per test as it ends, with the failure's trace."""

    def __init__(self):
        super().__init__()
        self.n = 0
        self.t0 = time.monotonic()

    def startTest(self, test):
        super().startTest(test)
        self.t0 = time.monotonic()

    def _line(self, ok, test, extra=""):
        self.n += 1
        ms = (time.monotonic() - self.t0) * 1000
        word = "ok" if ok else "not ok"
        print(f"{word} {self.n} {test.id()} ({ms:.0f} ms){extra}", flush=True)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._line(True, test)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._line(True, test, f" # SKIP {reason}")

    def _bad(self, test, err):
        for line in self._exc_info_to_string(err, test).splitlines():
            print("# " + line)
        self._line(False, test)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._bad(test, err)

    def addError(self, test, err):
        super().addError(test, err)
        self._bad(test, err)


def flat(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from flat(t)
        else:
            yield t


def main(argv):
    loader = unittest.TestLoader()
    names = argv or sorted(f[:-3] for f in os.listdir(here)
                           if f.startswith("test_") and f.endswith(".py"))
    tests = []
    for n in names:
        tests.extend(flat(loader.loadTestsFromName(n)))
    print(f"1..{len(tests)}", flush=True)
    result = Tap()
    for t in tests:
        t(result)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
