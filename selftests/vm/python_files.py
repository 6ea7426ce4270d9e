# SPDX-License-Identifier: GPL-2.0-only
"""The files of Debian's Python the rig's guest needs for python/tests.

Run by python.sh with the interpreter that goes into the guest (-S, as
the guest runs it). Imports the tests and runs them (here, where
/dev/ratelimit is missing, the device tests skip), so that what the
runner, unittest and the package import lazily is imported too; then
prints every stdlib file loaded (modules with their cached bytecode,
extension modules of lib-dynload).
"""

import contextlib
import io
import os
import sys
import sysconfig

tree = sys.argv[1]
sys.path[:0] = [os.path.join(tree, "python", "tests"),
                os.path.join(tree, "python")]
os.environ["CC"] = "/nonexistent"       # test_abi skips: no compiler there
import kratelimit  # noqa: E402

kratelimit.DEVICE = "/nonexistent"       # never this machine's module
import run  # noqa: E402

with contextlib.redirect_stdout(io.StringIO()):
    run.main([])
stdlib = sysconfig.get_paths()["stdlib"]
tag = sys.implementation.cache_tag
# Imported if there, not needed: they would bring libssl, libbz2, liblzma.
OPTIONAL = {"ssl", "bz2", "lzma"}
files = set()
for mod in list(sys.modules.values()):
    path = getattr(mod, "__file__", None)
    if not path or not path.startswith(stdlib + "/"):
        continue
    if mod.__name__.split(".")[0].lstrip("_") in OPTIONAL:
        continue
    files.add(path)
    if path.endswith(".py"):
        d, base = os.path.split(path)
        pyc = os.path.join(d, "__pycache__", f"{base[:-3]}.{tag}.pyc")
        if os.path.exists(pyc):
            files.add(pyc)
print("\n".join(sorted(files)))
