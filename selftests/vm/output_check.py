#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Parse the rlctl outputs that selftests printed in a guest log.

ratelimit_rlctl_test prints each as "@@rl KIND TAG HEX" (the bytes in
hex, so nothing on the serial line can change them), decoded here as
strict UTF-8 and parsed by real parsers:
  json  Python's json module: "show" must be an object with a "name",
        "list" an array of such objects, "watch" JSON Lines of objects.
  prom  the Prometheus client library's parser of the text format
        (Debian's python3-prometheus-client): every family has HELP and
        TYPE, every sample the limiter label, and a histogram's buckets
        are cumulative and end at its count.
Prints one "PASS|FAIL rlctl ..." line per output; exits 1 if none was
found.

Usage: output_check.py LOG
"""
import json
import re
import sys

MARK = re.compile(r"@@rl (json|prom) (\S+) ([0-9a-f]*)\s*$")


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


def check_json(tag, text):
    """Parse one --json output; return an error or None, and a summary."""
    docs = documents(tag, text)
    err = None if docs else "empty"
    for doc in docs:
        err = err or check(tag, doc)
    return err, f"rlctl --json {tag} parses ({len(docs)} document(s))"


def check_histogram(family):
    """A histogram's buckets per limiter: cumulative, +Inf the count."""
    last, count = {}, {}
    for sample in family.samples:
        name = sample.labels["limiter"]
        if sample.name.endswith("_bucket"):
            if sample.value < last.get(name, 0):
                return f"{family.name}: buckets of {name} not cumulative"
            last[name] = sample.value
        elif sample.name.endswith("_count"):
            count[name] = sample.value
    for name, value in last.items():
        if count.get(name) != value:
            return f"{family.name}: +Inf bucket of {name} is not its count"
    return None


def check_prom(tag, text):
    """Parse one export; return an error or None, and a summary."""
    # pylint: disable-next=import-outside-toplevel
    from prometheus_client.parser import text_string_to_metric_families
    families = list(text_string_to_metric_families(text))
    what = f"rlctl export {tag} parses ({len(families)} families)"
    if not families:
        return "no families", what
    for family in families:
        if not family.documentation or family.type == "unknown":
            return f"{family.name}: no HELP or TYPE", what
        if not family.samples:
            return f"{family.name}: no samples", what
        for sample in family.samples:
            if "limiter" not in sample.labels:
                return f"{sample.name}: no limiter label", what
        if family.type == "histogram":
            err = check_histogram(family)
            if err:
                return err, what
    return None, what


def main():
    """Check every output in the log named on the command line."""
    found = 0
    with open(sys.argv[1], encoding="utf-8", errors="replace") as log:
        for line in log:
            match = MARK.search(line)
            if not match:
                continue
            found += 1
            kind, tag = match.group(1), match.group(2)
            what = f"rlctl {kind} {tag} parses"
            try:
                text = bytes.fromhex(match.group(3)).decode("utf-8")
                checker = check_json if kind == "json" else check_prom
                err, what = checker(tag, text)
            except (ValueError, ImportError) as exc:
                err = str(exc)
            print(f"{'FAIL' if err else 'PASS'} {what}{': ' + err if err else ''}")
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())
