#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Figures of the tree's shape, for reviews and closing notes: lines per
# source file, functions longer than a limit, and the places that name
# one tunable (what adding a tunable touches). Reads files only.
#
# Usage: scripts/metrics.sh [MAX_FUNCTION_LINES] [TUNABLE]
#   MAX_FUNCTION_LINES  functions longer than this are listed (60)
#   TUNABLE             a tunable's name to count the places of (catchup)
set -euo pipefail

cd "$(dirname "$0")/.."
max=${1:-60}
tunable=${2:-catchup}
src=$(git ls-files 'driver/*.[ch]' 'uapi/*.h' 'lib/*.[ch]' 'tools/*.[ch]' \
	'tools/**/*.[ch]' | sort -u)

echo "== lines per file (driver, uapi, lib, tools)"
# shellcheck disable=SC2086
wc -l $src | sort -n | awk '{ printf "%6d %s\n", $1, $2 }'
# shellcheck disable=SC2086
echo "files over 500 lines: $(wc -l $src | awk '$2 != "total" && $1 > 500' | wc -l)"

echo
echo "== functions over $max lines (kernel style: body from '{' to '}' in column 0)"
# shellcheck disable=SC2086
awk -v max="$max" '
	FNR == 1 { prev = ""; start = 0 }
	/^\{$/ { start = FNR; name = prev; sub(/\(.*/, "", name);
		 n = split(name, w, /[ *]+/); name = w[n]; next }
	/^\}/ && start { len = FNR - start + 1;
			 if (len > max) { printf "%5d %s:%d %s\n", len, FILENAME, start, name; over++ }
			 start = 0 }
	{ if ($0 !~ /^[ \t]/ && $0 != "") prev = $0; else if (prev ~ /,$/) prev = prev $0 }
	END { printf "functions over %d lines: %d\n", max, over + 0 }
' $src

echo
echo "== places that name the tunable '$tunable' (word match, driver uapi lib tools)"
# shellcheck disable=SC2086
grep -n -i -w -E "$tunable|RL_PARAM_$tunable" $src | awk -F: '{ print $1 }' |
	sort | uniq -c | awk '{ printf "%4d %s\n", $1, $2 } END { }'
# shellcheck disable=SC2086
echo "lines naming it: $(grep -i -w -c -E "$tunable" $src | awk -F: '{ s += $2 } END { print s }')" \
     "in $(grep -i -w -l -E "$tunable" $src | wc -l) files"
