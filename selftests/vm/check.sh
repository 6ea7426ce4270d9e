#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# The part of `make check` after the build: static checks, host unit tests,
# then the selftests in a QEMU guest (run.sh check). Ends with the line
# "N passed, N failed"; exits non-zero on any failure.
set -eu

here=$(dirname "$0")
# shellcheck source=selftests/vm/lib.sh
. "$here/lib.sh"
rl_results_init build/results.txt

static()	# WHAT TARGET
{
	echo "==> $1 (make $2)"
	if ${MAKE:-make} --no-print-directory -s "$2"; then
		rl_result PASS "$1"
	else
		rl_result FAIL "$1"
	fi
}

static "checkpatch clean" style
static "module builds with W=1 without warnings" w1
static "sparse clean" sparse

echo "==> host unit tests"
for t in build/unit/*_test; do
	[ -x "$t" ] || { echo "(no unit tests built)"; break; }
	rc=0
	timeout 300 "$t" > "$t.log" 2>&1 </dev/null || rc=$?
	cat "$t.log"
	rl_tap "unit/${t##*/}" "$rc" < "$t.log"
done

echo "==> selftests in a QEMU guest"
"$here/run.sh" check || true

rl_summary
