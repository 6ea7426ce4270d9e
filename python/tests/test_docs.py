# SPDX-License-Identifier: GPL-2.0-only
"""The Python examples of the docs run as written: the ```python blocks
of README.md, Documentation/python.md and python/README.md, each file's
blocks one script, in a process of their own, on the module. In the
guest the docs are under /python (selftests/vm/python.sh copies them)."""

import os
import re
import subprocess
import sys
import unittest

from util import need_device, need_socketpair

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.abspath(os.path.join(HERE, ".."))
TOP = os.path.join(PYDIR, "..")
# Each doc: where it is in the tree, and where python.sh puts it.
DOCS = {
    "README.md": (os.path.join(TOP, "README.md"),
                  os.path.join(PYDIR, "docs", "README.md")),
    "Documentation/python.md": (
        os.path.join(TOP, "Documentation", "python.md"),
        os.path.join(PYDIR, "docs", "python.md")),
    "python/README.md": (os.path.join(PYDIR, "README.md"),),
}


def blocks(path):
    with open(path, encoding="utf-8") as f:
        return re.findall(r"^```python\n(.*?)^```$", f.read(), re.M | re.S)


def run_doc(test, doc):
    path = next((p for p in DOCS[doc] if os.path.exists(p)), None)
    if path is None:
        test.skipTest(f"no {doc} here")
    code = blocks(path)
    test.assertTrue(code, f"{doc}: no ```python block")
    env = dict(os.environ, PYTHONPATH=PYDIR)
    r = subprocess.run([sys.executable, "-S", "-B", "-c", "\n".join(code)],
                       env=env, capture_output=True, text=True, timeout=60,
                       cwd="/")
    test.assertEqual(r.returncode, 0,
                     f"{doc}'s examples failed:\n{r.stdout}{r.stderr}")
    return len(code)


@need_device
@need_socketpair
class Examples(unittest.TestCase):
    def test_readme(self):
        self.assertEqual(run_doc(self, "README.md"), 1)

    def test_python_md(self):
        self.assertEqual(run_doc(self, "Documentation/python.md"), 3)

    def test_python_readme(self):
        self.assertEqual(run_doc(self, "python/README.md"), 2)
