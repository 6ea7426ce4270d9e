#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# checkpatch.sh CHECKPATCH FLAGS [IGNORE FILES]...: run CHECKPATCH with
# FLAGS on groups of files, each group with its own --ignore list (IGNORE,
# "-" for none) and FILES a list of paths separated by blanks or newlines.
# make style calls it. The files are checked in batches of BATCH, as many
# batches at once as there are CPUs (RL_STYLE_JOBS overrides): checkpatch
# reads about 500 lines a second, single-threaded, and the tree has over
# 60,000. Each batch's report is printed whole, in the order given.
# Exits 1 if any report is not clean.
set -eu

if [ $# -lt 2 ] || [ $(($# % 2)) -ne 0 ]; then
	echo "usage: $0 CHECKPATCH FLAGS [IGNORE FILES]..." >&2
	exit 2
fi
checkpatch=$1
flags=$2
shift 2
jobs=${RL_STYLE_JOBS:-$(nproc)}
BATCH=8

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One line a batch: its number, its --ignore list, its files.
while [ $# -gt 0 ]; do
	# shellcheck disable=SC2086 # the list is split on purpose
	printf '%s\n' $2 | xargs -r -n "$BATCH" echo "$1"
	shift 2
done | awk '{ print NR, $0 }' > "$tmp/batches"
n=$(wc -l < "$tmp/batches")
[ "$n" -gt 0 ] || exit 0

rc=0
# shellcheck disable=SC2016 # expanded by the inner shell
xargs -P "$jobs" -L 1 sh -c '
	out=$1/$4.out cp=$2 flags=$3 ignore=$5
	shift 5
	set -- $flags "$@"
	[ "$ignore" = - ] || set -- --ignore "$ignore" "$@"
	"$cp" "$@" > "$out" 2>&1
' sh "$tmp" "$checkpatch" "$flags" < "$tmp/batches" || rc=1
i=1
while [ "$i" -le "$n" ]; do
	cat "$tmp/$i.out"
	i=$((i + 1))
done
exit "$rc"
