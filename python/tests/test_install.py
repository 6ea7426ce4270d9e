# SPDX-License-Identifier: GPL-2.0-only
"""pip install ./python offline, in a plain venv (no system
site-packages), and the in-tree build backend's wheel and sdist. On the
build machine (make check's host unit tests); skipped without Debian's
python3-venv."""

import base64
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.abspath(os.path.join(HERE, ".."))
TREE_LIB = os.path.abspath(os.path.join(PYDIR, "..", "build", "lib",
                                        "libratelimit.so.1"))
sys.path.insert(0, os.path.join(PYDIR, "_build"))
import kratelimit_build  # noqa: E402

# Any use of an index fails: nothing may be downloaded.
OFFLINE = {"PIP_INDEX_URL": "http://127.0.0.1:9/simple",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1"}


class Install(unittest.TestCase):
    def venv(self, d):
        v = os.path.join(d, "venv")
        r = subprocess.run(["/usr/bin/python3", "-m", "venv", v],
                           capture_output=True, text=True)
        if r.returncode != 0:
            self.skipTest(f"no venv with pip (python3-venv): {r.stderr}")
        return v

    def pip_install(self, v, what):
        env = dict(os.environ, **OFFLINE)
        env.pop("PYTHONPATH", None)
        r = subprocess.run([os.path.join(v, "bin", "pip"), "install", what],
                           env=env, capture_output=True, text=True,
                           cwd=os.path.join(PYDIR, ".."))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def check_import(self, v):
        env = dict(os.environ, KRATELIMIT_LIBRARY=TREE_LIB)
        env.pop("PYTHONPATH", None)
        code = ("import kratelimit, os; "
                "d = os.path.dirname(kratelimit.__file__); "
                "print(d, os.path.exists(os.path.join(d, 'py.typed')), "
                "kratelimit.Config.parse('100/s:10'))")
        r = subprocess.run([os.path.join(v, "bin", "python"), "-c", code],
                           env=env, capture_output=True, text=True,
                           cwd="/")
        self.assertEqual(r.returncode, 0, r.stderr)
        where, typed, spec = r.stdout.split()
        self.assertTrue(where.startswith(v), where)
        self.assertEqual((typed, spec), ("True", "100/s:10"))

    def test_pip_install_offline_in_a_plain_venv(self):
        if not os.path.exists(TREE_LIB):
            self.skipTest("no build/lib/libratelimit.so.1 (make lib)")
        with tempfile.TemporaryDirectory() as d:
            v = self.venv(d)
            self.pip_install(v, "./python")
            self.check_import(v)
            self.assertFalse(os.path.exists(os.path.join(PYDIR, "build")))

    def test_sdist_installs_offline(self):
        if not os.path.exists(TREE_LIB):
            self.skipTest("no build/lib/libratelimit.so.1 (make lib)")
        with tempfile.TemporaryDirectory() as d:
            sdist = kratelimit_build.build_sdist(d)
            v = self.venv(d)
            self.pip_install(v, os.path.join(d, sdist))
            self.check_import(v)

    def test_wheel(self):
        with tempfile.TemporaryDirectory() as d:
            name = kratelimit_build.build_wheel(d)
            self.assertEqual(name, "kratelimit-0.1.0-py3-none-any.whl")
            with zipfile.ZipFile(os.path.join(d, name)) as z:
                names = set(z.namelist())
                record = z.read("kratelimit-0.1.0.dist-info/RECORD").decode()
                meta = z.read("kratelimit-0.1.0.dist-info/METADATA").decode()
                for line in record.splitlines():
                    path, digest, size = line.rsplit(",", 2)
                    if not digest:
                        continue
                    data = z.read(path)
                    want = base64.urlsafe_b64encode(hashlib.sha256(
                        data).digest()).rstrip(b"=").decode()
                    self.assertEqual(digest, "sha256=" + want, path)
                    self.assertEqual(int(size), len(data), path)
        for f in ("kratelimit/__init__.py", "kratelimit/_lib.py",
                  "kratelimit/aio.py", "kratelimit/py.typed"):
            self.assertIn(f, names)
        self.assertIn("License: LGPL-2.1-or-later", meta)
        self.assertIn("Name: kratelimit", meta)

    def test_sdist_members(self):
        with tempfile.TemporaryDirectory() as d:
            name = kratelimit_build.build_sdist(d)
            with tarfile.open(os.path.join(d, name)) as t:
                names = set(t.getnames())
        for f in ("pyproject.toml", "README.md", "PKG-INFO",
                  "_build/kratelimit_build.py", "kratelimit/py.typed"):
            self.assertIn("kratelimit-0.1.0/" + f, names)
