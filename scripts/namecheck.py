#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""namecheck.py [--warn DIR]... [--kernel DIR]... DIR...: the files and
functions that the
comments of the C sources under each DIR name exist.

A comment names a file as "tokens.c", "tools/rlctl_keys.c" or
"linux/ratelimit_dev.h": it must be a file of the tree (git ls-files),
by its path from the top, from the commenting file's directory or from
uapi/, or, for a bare name, anywhere in the tree. A comment names a
function as "rl_tunable_set()": it must be defined, or called, in the
code (not the comments) of the tree's C and Python sources; a name that
no code has, such as another project's, goes in KNOWN below with why.
A comment that ties a function to a file, "rl_params_check() (tokens.c)",
must be right: the file defines it. So must a header's comment "FILE.c"
or "FILE.c: ..." right above declarations: FILE.c defines each function
declared below it, up to the next blank line.

Prints "FILE:LINE: what" per name that is not there; exits 1 if any was
found under a DIR or a --kernel DIR, 0 if only under a --warn DIR
(printed as "warning:"). Under a --kernel or --warn DIR, for the kernel's
sake, only the functions named rl_*() must be in the tree. make style
runs it, from the top of the tree.
"""

import os
import re
import subprocess
import sys

# Named in comments, on purpose, but no code of the tree has them.
KNOWN = {
    # the kernel and other projects the comments compare with
    "ntsync.c", "eventfd.c", "timerfd.c", "ratelimiter.c",
    "kselftest_harness.h", "kselftest.h", "checkpatch.pl",
    "coding-style.rst", "ioctl-number.rst", "define_trace.h",
    "ioctl.h", "cmd.h", "fs/ioctl.c",
    # the C library's, named where the code passes or documents them
    "execve", "alphasort", "sysexits.h",
    # gnuplot's (make bench plots its tables)
    "columnhead",
}

FILE_RE = re.compile(r"(?<![\w/.<-])((?:[\w.-]+/)*[\w-]+\.(?:c|h|sh|py|lua|map))\b")
FUNC_RE = re.compile(r"\b([A-Za-z_]\w*)\(\)")
CODE_CALL_RE = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
PY_DEF_RE = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)|^\s*class\s+(\w+)", re.M)
COMMENT_RE = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'",
                        re.S)


def tree_files():
    """The files of the tree: git's, or every one but build/'s."""
    try:
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"],
                             capture_output=True, text=True,
                             check=True).stdout
        return [f for f in out.splitlines() if os.path.isfile(f)]
    except (OSError, subprocess.CalledProcessError):
        out = []
        for d, subdirs, names in os.walk("."):
            subdirs[:] = [s for s in subdirs
                          if s not in ("build", ".git") and d + s != "./."]
            out += [os.path.relpath(os.path.join(d, n)) for n in names]
        return out


def split(text):
    """(comments as [(line, text)], code with comments and strings blanked)."""
    comments = []
    code = []
    last = 0
    for m in COMMENT_RE.finditer(text):
        code.append(text[last:m.start()])
        s = m.group(0)
        if s.startswith(("/*", "//")):
            comments.append((text.count("\n", 0, m.start()) + 1, s))
        code.append(re.sub(r"[^\n]", " ", s))
        last = m.end()
    code.append(text[last:])
    return comments, "".join(code)


TIE_RE = re.compile(r"\b([A-Za-z_]\w*)\(\) \(((?:[\w.-]+/)*[\w-]+\.[ch])[,)]")
BLOCK_RE = re.compile(r"^/\* ((?:[\w.-]+/)*[\w-]+\.c)(?::[^\n]*?| )?\*/$|"
                      r"^/\*\n \* ((?:[\w.-]+/)*[\w-]+\.c):", re.S)
PROTO_RE = re.compile(r"^(?![\s#/*])[^;{}()]*?\b([A-Za-z_]\w*)\s*\(")


def defines(path, name, cache={}):
    """Does the C file @path define function (or macro) @name?"""
    if path not in cache:
        try:
            text = open(path, encoding="utf-8", errors="replace").read()
        except OSError:
            text = ""
        cache[path] = split(text)[1]
    code = cache[path]
    if re.search(r"^#\s*define\s+" + re.escape(name) + r"\(", code, re.M):
        return True
    for m in re.finditer(r"^(?![\s#])[^;{}]*?\b" + re.escape(name) +
                         r"\s*\(", code, re.M):
        rest = code[m.end():]
        semi, brace = rest.find(";"), rest.find("{")
        if brace >= 0 and (semi < 0 or brace < semi):
            return True
    return False


def comment_at(lines, i):
    """The comment that starts at line @i, and the line after it."""
    j = i
    while j < len(lines) and "*/" not in lines[j]:
        j += 1
    return "\n".join(lines[i:j + 1]), j + 1


def header_blocks(f, text):
    """(line, file, [function]) for each "/* FILE.c */" above declarations."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        start = i
        if lines[i].startswith("/*"):
            comment, i = comment_at(lines, i)
            m = BLOCK_RE.match(comment)
            if not m or i >= len(lines) or not lines[i].strip():
                continue
            names = []
            while i < len(lines) and lines[i].strip():
                if lines[i].startswith("/*"):
                    comment, after = comment_at(lines, i)
                    if BLOCK_RE.match(comment):
                        break   # the next block
                    i = after
                    continue
                p = PROTO_RE.match(lines[i])
                if p and not lines[i].startswith(("typedef", "extern",
                                                  "static", "#")):
                    names.append(p.group(1))
                i += 1
            out.append((start + 1, m.group(1) or m.group(2), names))
        else:
            i += 1
    return out


def main(argv):
    warn_dirs, kernel_dirs, dirs = [], [], []
    it = iter(argv)
    for a in it:
        if a == "--warn":
            warn_dirs.append(next(it).rstrip("/"))
        elif a == "--kernel":
            kernel_dirs.append(next(it).rstrip("/"))
        else:
            dirs.append(a.rstrip("/"))
    files = tree_files()
    paths = set(files)
    bases = {os.path.basename(f) for f in files}
    known_funcs = set()
    sources = {}
    for f in files:
        if f.endswith((".c", ".h")):
            text = open(f, encoding="utf-8", errors="replace").read()
            comments, code = split(text)
            sources[f] = comments
            known_funcs.update(CODE_CALL_RE.findall(code))
        elif f.endswith(".py"):
            text = open(f, encoding="utf-8", errors="replace").read()
            for a, b in PY_DEF_RE.findall(text):
                known_funcs.add(a or b)

    def file_ok(f, name):
        if name in KNOWN or os.path.basename(name) in KNOWN:
            return True
        here = os.path.dirname(f)
        for p in (name, os.path.join(here, name), os.path.join("uapi", name)):
            if os.path.normpath(p) in paths:
                return True
        return "/" not in name and name in bases

    def resolve(f, name):
        here = os.path.dirname(f)
        for p in (os.path.join(here, name), name):
            if os.path.normpath(p) in paths:
                return os.path.normpath(p)
        return None

    bad = {"error": 0, "warning": 0}
    for f in sorted(sources):
        top = f.split("/")[0]
        kernel = any(f.startswith(d + "/") for d in warn_dirs + kernel_dirs)
        if any(f.startswith(d + "/") for d in warn_dirs):
            kind = "warning"
        elif kernel:
            kind = "error"
        elif any(f.startswith(d + "/") for d in dirs) or top in dirs:
            kind = "error"
        else:
            continue
        for line, text in sources[f]:
            for m in FILE_RE.finditer(text):
                name = m.group(1)
                if not file_ok(f, name):
                    n = line + text.count("\n", 0, m.start())
                    print(f"{f}:{n}: {kind}: no file {name}")
                    bad[kind] += 1
            for m in FUNC_RE.finditer(text):
                name = m.group(1)
                if kernel and not name.startswith("rl_"):
                    continue    # the kernel's, which the tree need not call
                if name not in known_funcs and name not in KNOWN:
                    n = line + text.count("\n", 0, m.start())
                    print(f"{f}:{n}: {kind}: no function {name}()")
                    bad[kind] += 1
            for m in TIE_RE.finditer(text):
                name, where = m.group(1), resolve(f, m.group(2))
                if where and not defines(where, name):
                    n = line + text.count("\n", 0, m.start())
                    print(f"{f}:{n}: {kind}: {where} has no {name}()")
                    bad[kind] += 1
        if not f.endswith(".h"):
            continue
        text = open(f, encoding="utf-8", errors="replace").read()
        for line, cfile, names in header_blocks(f, text):
            where = resolve(f, cfile)
            for name in names if where else ():
                if not defines(where, name):
                    print(f"{f}:{line}: {kind}: {name}() is not in {where}")
                    bad[kind] += 1
    if bad["warning"]:
        print(f"namecheck: {bad['warning']} warnings (not failing)")
    if bad["error"]:
        print(f"namecheck: {bad['error']} names in comments that are nowhere")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
