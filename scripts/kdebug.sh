#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# The debug kernel of `make check-debug`: Debian's linux-source-6.12 built
# with allnoconfig plus selftests/vm/debug.config (KASAN, lockdep, UBSAN,
# kmemleak, debug objects, fault injection; io_uring, AF_UNIX and TCP/IP,
# user namespaces, so that no selftest skips for want of them), cached
# outside the repo:
#   $RL_CACHE, else /var/cache/ratelimit (root), else ~/.cache/ratelimit.
# The cache entry is keyed by a hash of the fragment, the source package's
# version and the compiler, so a rerun is a no-op and an edit rebuilds.
#   scripts/kdebug.sh          build the kernel unless it is cached
#   scripts/kdebug.sh dir      print the build dir (KDIR for the module)
#   scripts/kdebug.sh image    print the kernel image
#   scripts/kdebug.sh release  print its release (uname -r)
set -eu

frag=$(cd "$(dirname "$0")/.." && pwd)/selftests/vm/debug.config
series=6.12
pkg=linux-source-$series
tarball=${KDEBUG_TARBALL:-/usr/src/$pkg.tar.xz}

if [ -n "${RL_CACHE:-}" ]; then
	cache=$RL_CACHE
elif [ "$(id -u)" -eq 0 ]; then
	cache=/var/cache/ratelimit
else
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/ratelimit
fi

srcver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null) ||
	srcver=$(stat -c '%s %Y' "$tarball" 2>/dev/null) || srcver=none
key=$( { cat "$frag"; echo "$pkg $srcver"; ${CC:-gcc} --version | head -n 1; } |
	sha256sum | cut -c1-16)
dir=$cache/kdebug-$series-$key
out=$dir/out

case ${1:-build} in
dir) echo "$out"; exit 0 ;;
image) echo "$out/arch/x86/boot/bzImage"; exit 0 ;;
release) cat "$out/include/config/kernel.release"; exit 0 ;;
build) ;;
*) echo "usage: $0 [build|dir|image|release]" >&2; exit 2 ;;
esac

[ -f "$dir/.done" ] && { echo "kdebug: cached in $dir"; exit 0; }

# One build at a time; a second one waits and then finds it cached.
mkdir -p "$cache"
exec 9> "$cache/.lock"
flock 9
[ -f "$dir/.done" ] && { echo "kdebug: cached in $dir"; exit 0; }

[ -r "$tarball" ] || { echo "kdebug: $tarball missing (make deps KVER=debug)" >&2; exit 1; }
# Nothing of an outer make (W=1, KDIR=, -s, its jobserver) reaches the
# kernel's build.
unset MAKEFLAGS MFLAGS MAKEOVERRIDES MAKELEVEL KBUILD_EXTMOD ARCH \
	CROSS_COMPILE O M W C KDIR KVER
jobs=$(nproc 2>/dev/null || echo 2)
log=$dir/build.log
start=$(date +%s)

echo "kdebug: building a debug kernel from $pkg $srcver in $dir"
echo "kdebug: (6-12 minutes on 2 cores; the log is $log)"
rm -rf "$dir"
mkdir -p "$dir"
# Older entries of the cache are of no further use.
find "$cache" -mindepth 1 -maxdepth 1 -name 'kdebug-*' ! -path "$dir" \
	-exec rm -rf {} + 2>/dev/null || true
tar -xJf "$tarball" -C "$dir"
mv "$dir/$(basename "$tarball" .tar.xz)" "$dir/src"

kmake() { make -C "$dir/src" O="$out" ARCH=x86_64 "$@" >> "$log" 2>&1; }
fail() { tail -n 40 "$log" >&2; echo "kdebug: $*" >&2; exit 1; }

kmake KCONFIG_ALLCONFIG="$frag" allnoconfig || fail "allnoconfig failed"
kmake olddefconfig || fail "olddefconfig failed"

# Every option of the fragment must have survived the dependency checks.
lost=$(grep -E '^(CONFIG_|# CONFIG_.* is not set)' "$frag" |
	while IFS= read -r line; do
		grep -qxF -- "$line" "$out/.config" || echo "  $line"
	done)
[ -z "$lost" ] || { printf 'kdebug: options lost to olddefconfig:\n%s\n' "$lost" >&2; exit 1; }

kmake -j"$jobs" all || fail "kernel build failed"
for f in Module.symvers arch/x86/boot/bzImage; do
	[ -f "$out/$f" ] || fail "no $f"
done
touch "$dir/.done"
echo "kdebug: built $(cat "$out/include/config/kernel.release") in $(($(date +%s) - start)) s"
