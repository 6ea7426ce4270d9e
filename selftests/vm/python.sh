#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# python.sh ROOT [MODE]: put Debian's python3 into the QEMU rig's initramfs ROOT
# for the Python package's tests (selftests/ratelimit_python_test.sh): the
# interpreter and its shared libraries, the stdlib modules the tests load
# (python_files.py finds them; with their cached bytecode), and python/
# (the package and its tests) as ROOT/python, build/lib's
# libratelimit.so.1 as ROOT/usr/lib's. run.sh calls it when that
# test is in the guest. Prints what it added.
set -eu

root=$1
here=$(dirname "$0")
py=$(readlink -f /usr/bin/python3)
[ -x "$py" ] || { echo "python.sh: no /usr/bin/python3 (make deps)" >&2; exit 1; }

# copy FILE...: each at its own path under ROOT, keeping its mtime (the
# bytecode caches name their sources' mtimes).
copy()
{
	for f; do
		mkdir -p "$root${f%/*}"
		cp -pL "$f" "$root$f"
	done
}

[ -f build/lib/libratelimit.so.1 ] ||
	{ echo "python.sh: no build/lib/libratelimit.so.1 (make lib)" >&2; exit 1; }
files=$(KRATELIMIT_LIBRARY=build/lib/libratelimit.so.1 "$py" -S "$here/python_files.py" .)
# make bench (MODE bench): its workers section's Redis client, Debian's
# python3-limits and python3-redis, when installed (scripts/deps.sh bench)
if [ "${2:-}" = bench ]; then
	files="$files $("$py" -S python/tests/bench_workers.py --files)"
fi
# shellcheck disable=SC2086 # one file a word
copy "$py" $files
ln -sf "${py##*/}" "$root/usr/bin/python3"
# The lib-dynload directory tells Python its exec prefix.
mkdir -p "$root/usr/lib/${py##*/}/lib-dynload"
# shellcheck disable=SC2086
ldd "$py" $files 2>/dev/null | awk '/=> \//{ print $3 } /^[ \t]+\//{ print $1 }' |
	sort -u | while read -r lib; do copy "$lib"; done
# The package loads the tree's library as the system's libratelimit.so.1.
mkdir -p "$root/usr/lib"
cp -pL build/lib/libratelimit.so.1 "$root/usr/lib/"
mkdir -p "$root/python/tests" "$root/python/kratelimit"
cp -p python/kratelimit/*.py python/kratelimit/py.typed "$root/python/kratelimit/"
cp -p python/tests/*.py "$root/python/tests/"
# The examples test_keyed.py runs (Documentation/keyed.md).
mkdir -p "$root/python/examples"
cp -p python/examples/*.py "$root/python/examples/"
# The docs whose Python examples test_docs.py runs.
mkdir -p "$root/python/docs"
cp -p python/README.md "$root/python/"
cp -p README.md Documentation/python.md "$root/python/docs/"
echo "vm: python3 in the guest: $(du -sk "$root/usr" "$root/lib" "$root/lib64" \
	"$root/python" 2>/dev/null | awk '{ s += $1 } END { print s }') KiB"
