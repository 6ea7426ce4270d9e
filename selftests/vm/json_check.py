#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Parse the rlctl --json outputs that selftests printed in a guest log.

ratelimit_rlctl_test prints each as "@@rl json TAG HEX" (the bytes in
hex, so nothing on the serial line can change them). Each is decoded as
strict UTF-8 and parsed with Python's json module: "show" must be an
object with a "name", "list" an array of such objects, "watch" JSON Lines
of objects. Prints one "PASS|FAIL rlctl --json TAG ..." line per output;
exits 1 if none was found.

Usage: json_check.py LOG
"""
import json
import re
import sys

MARK = re.compile(r"@@rl json (\S+) ([0-9a-f]*)\s*$")


def documents(tag, text):
    """The JSON documents of one output."""
    if tag == "watch":
        return [line for line in text.splitlines() if line.strip()]
    return [text]


def check(tag, doc):
    """Parse one document; return an error or None."""
    try:
        val = json.loads(doc)
    except ValueError as err:
        return str(err)
    if tag == "list":
        if not isinstance(val, list) or not val:
            return "not a non-empty array"
        val = val[0]
    if not isinstance(val, dict):
        return "not an object"
    if tag in ("show", "list") and not isinstance(val.get("name"), str):
        return 'no string member "name"'
    return None


def main():
    """Check every output in the log named on the command line."""
    found = 0
    with open(sys.argv[1], encoding="utf-8", errors="replace") as log:
        for line in log:
            match = MARK.search(line)
            if not match:
                continue
            found += 1
            tag = match.group(1)
            try:
                text = bytes.fromhex(match.group(2)).decode("utf-8")
                docs = documents(tag, text)
                err = None if docs else "empty"
                for doc in docs:
                    err = err or check(tag, doc)
            except ValueError as exc:
                err = str(exc)
            if err:
                print(f"FAIL rlctl --json {tag} parses: {err}")
            else:
                print(f"PASS rlctl --json {tag} parses ({len(docs)} document(s))")
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())
