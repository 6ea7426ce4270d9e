# SPDX-License-Identifier: LGPL-2.1-or-later
"""The PEP 517 build backend of kratelimit, in the tree (pyproject.toml's
backend-path): a pure wheel and an sdist made with the standard library
alone, so that pip's build isolation has nothing to download and
"pip install ./python" works offline, in a plain venv.

The project's metadata are pyproject.toml's [project] table (the few keys
it has, read without a TOML parser: Python 3.9 and 3.10 have none).
SOURCE_DATE_EPOCH, when set, dates the archives' members.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "kratelimit"
TAG = "py3-none-any"


def _project():
    """name, version, description, requires-python, license, classifiers."""
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    table = text.split("[project]", 1)[1].split("\n[", 1)[0]
    meta = dict(re.findall(r'^([\w-]+) = "([^"]*)"$', table, re.M))
    lic = re.search(r'^license = \{ text = "([^"]*)" \}$', table, re.M)
    cls = re.search(r'^classifiers = \[(.*?)\]$', table, re.M | re.S)
    meta["license"] = lic.group(1) if lic else ""
    meta["classifiers"] = re.findall(r'"([^"]*)"', cls.group(1)) if cls \
        else []
    return meta


def _metadata():
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {p['version']}",
        f"Summary: {p.get('description', '')}",
        f"License: {p['license']}",
        f"Requires-Python: {p.get('requires-python', '>=3')}",
    ] + [f"Classifier: {c}" for c in p["classifiers"]] + [
        "Description-Content-Type: text/markdown",
    ]
    with open(os.path.join(HERE, p.get("readme", "README.md")),
              encoding="utf-8") as f:
        readme = f.read()
    return "\n".join(lines) + "\n\n" + readme


def _dist_info():
    p = _project()
    return f"{p['name']}-{p['version']}.dist-info"


def _files():
    """The package's files, relative to python/."""
    out = []
    for f in sorted(os.listdir(os.path.join(HERE, PACKAGE))):
        if f.endswith(".py") or f == "py.typed":
            out.append(f"{PACKAGE}/{f}")
    return out


def _epoch():
    """SOURCE_DATE_EPOCH, or 1980-01-01 (the first date a zip has)."""
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", "0")), 315532800)


def _date():
    return time.gmtime(_epoch())[:6]


def _wheel(directory, members):
    """Write a wheel of @members ([(name, bytes)]) with its dist-info."""
    p = _project()
    info = _dist_info()
    members = list(members) + [
        (f"{info}/METADATA", _metadata().encode()),
        (f"{info}/WHEEL", ("Wheel-Version: 1.0\nGenerator: kratelimit_build"
                           f"\nRoot-Is-Purelib: true\nTag: {TAG}\n").encode()),
    ]
    record = []
    for name, data in members:
        digest = base64.urlsafe_b64encode(
            hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    members.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    base = f"{p['name']}-{p['version']}-{TAG}.whl"
    with zipfile.ZipFile(os.path.join(directory, base), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for name, data in members:
            zi = zipfile.ZipInfo(name, _date())
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return base


def _read(rel):
    with open(os.path.join(HERE, rel), "rb") as f:
        return f.read()


# PEP 517 and PEP 660 hooks
def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory,
                                     config_settings=None):
    info = _dist_info()
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w",
              encoding="utf-8") as f:
        f.write(_metadata())
    return info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    return _wheel(wheel_directory, [(f, _read(f)) for f in _files()])


def build_editable(wheel_directory, config_settings=None,
                   metadata_directory=None):
    """A wheel whose .pth file puts this source tree on sys.path."""
    return _wheel(wheel_directory, [(f"_{PACKAGE}_editable.pth",
                                     (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    root = f"{p['name']}-{p['version']}"
    base = f"{root}.tar.gz"
    files = ["pyproject.toml", p.get("readme", "README.md"),
             "_build/kratelimit_build.py"] + _files()
    with tarfile.open(os.path.join(sdist_directory, base), "w:gz",
                      format=tarfile.PAX_FORMAT) as t:
        members = [(f, _read(f)) for f in files]
        pkg_info = ("\n".join(_metadata().split("\n\n", 1)[0].splitlines())
                    + "\n").encode()
        members.append(("PKG-INFO", pkg_info))
        for name, data in members:
            ti = tarfile.TarInfo(f"{root}/{name}")
            ti.size, ti.mode, ti.mtime = len(data), 0o644, _epoch()
            t.addfile(ti, io.BytesIO(data))
    return base
