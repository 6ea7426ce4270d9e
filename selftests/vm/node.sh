#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# node.sh ROOT: put the installed node into the QEMU rig's initramfs ROOT
# for the Node.js package's tests (selftests/ratelimit_node_test.sh): the
# binary with the shared libraries it and the addon need (ldd), and the
# package (index.js, the addon, the tests) as ROOT/node. run.sh calls it
# when that test is in the guest. Prints what it added.
set -eu

root=$1
node=$(command -v node || true)
[ -n "$node" ] || { echo "node.sh: no node (scripts/deps.sh node)" >&2; exit 1; }
node=$(readlink -f "$node")
addon=node/build/Release/kratelimit.node
[ -f "$addon" ] || { echo "node.sh: no $addon (make node)" >&2; exit 1; }

# copy FILE...: each at its own path under ROOT.
copy()
{
	for f; do
		mkdir -p "$root${f%/*}"
		cp -L "$f" "$root$f"
	done
}

copy "$node"
[ "$node" = /usr/bin/node ] || ln -sf "$node" "$root/usr/bin/node"
# Debian's Node.js loads some builtins at start from files of other packages
# (cjs-module-lexer, undici, acorn under /usr/share/nodejs): the ones its
# library names. NodeSource's has them built in and names none.
libnode=$(ldd "$node" | awk '/libnode\.so/{ print $3 }')
for f in "$node" $libnode; do
	strings -n 6 "$f" | grep -o '/usr/share/nodejs/[A-Za-z0-9@._/-]*\.js' || :
done | sort -u | while read -r js; do
	[ ! -f "$js" ] || copy "$js"
done
ldd "$node" "$addon" 2>/dev/null | awk '/=> \//{ print $3 } /^[ \t]+\//{ print $1 }' |
	sort -u | while read -r lib; do copy "$lib"; done
# libratelimit.so.1 also where the guest's loader looks without the addon's
# rpath, a host path that may be hidden there (the guest mounts /tmp).
lib=$(ldd "$addon" | awk '/libratelimit\.so/{ print $3 }')
libc=$(ldd "$node" | awk '/libc\.so/{ print $3 }')
[ -n "$lib" ] || { echo "node.sh: $addon finds no libratelimit.so.1 (make lib)" >&2; exit 1; }
mkdir -p "$root${libc%/*}"
cp -L "$lib" "$root${libc%/*}/"
mkdir -p "$root/node/build/Release" "$root/node/test/fixtures"
cp -p node/package.json node/index.js "$root/node/"
cp -p "$addon" "$root/node/build/Release/"
cp -p node/test/*.js "$root/node/test/"
cp -p node/test/fixtures/*.js "$root/node/test/fixtures/"
# The example keyed.test.js runs (Documentation/keyed.md).
mkdir -p "$root/node/examples"
cp -p node/examples/*.js "$root/node/examples/"
echo "vm: node in the guest: $(du -sk "$root/usr" "$root/lib" "$root/lib64" \
	"$root/node" 2>/dev/null | awk '{ s += $1 } END { print s }') KiB"
