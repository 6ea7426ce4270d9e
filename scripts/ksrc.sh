#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Extract the few kernel-tree files the build needs from Debian's
# linux-source package into build/ksrc/ (never into the repo):
#   build/ksrc/include/kselftest_harness.h, kselftest.h
#   build/ksrc/scripts/checkpatch.pl, spelling.txt, const_structs.checkpatch
# A stamp naming the tarball and its size/mtime makes reruns a no-op.
set -eu

tarball=${KSRC_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
out=${KSRC_OUT:-build/ksrc}
stamp=$out/.stamp

[ -r "$tarball" ] || { echo "ksrc: $tarball missing (run scripts/deps.sh)" >&2; exit 1; }
id="$tarball $(stat -c '%s %Y' "$tarball")"
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$id" ] && exit 0

top=$(basename "$tarball" .tar.xz)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ksrc.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "ksrc: extracting kselftest and checkpatch files from $tarball"
tar -xJf "$tarball" -C "$tmp" \
	"$top/tools/testing/selftests/kselftest_harness.h" \
	"$top/tools/testing/selftests/kselftest.h" \
	"$top/scripts/checkpatch.pl" \
	"$top/scripts/spelling.txt" \
	"$top/scripts/const_structs.checkpatch"

rm -rf "$out"
mkdir -p "$out/include" "$out/scripts"
cp "$tmp/$top"/tools/testing/selftests/kselftest*.h "$out/include/"
cp "$tmp/$top"/scripts/checkpatch.pl "$tmp/$top"/scripts/spelling.txt \
	"$tmp/$top"/scripts/const_structs.checkpatch "$out/scripts/"
echo "$id" > "$stamp"
