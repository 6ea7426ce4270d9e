#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Where the QEMU rig finds a guest kernel:
#   kernel.sh KVER release|dir|image
# KVER is 6.1, 6.12, 6.12-rt or a release (Debian's kernels, kver.sh), or
# debug (the debug kernel, scripts/kdebug.sh). release is its uname -r,
# dir the build dir to build the module against (KDIR), image the kernel
# to boot. Ask only once scripts/deps.sh installed the kernel, or
# scripts/kdebug.sh built it: that is why the Makefile runs this in a
# recipe line rather than in a $(shell) that make expands beforehand.
set -eu

[ $# -eq 2 ] || { echo "usage: $0 KVER release|dir|image" >&2; exit 2; }
here=$(dirname "$0")
case $2 in
release|dir|image) ;;
*) echo "usage: $0 KVER release|dir|image" >&2; exit 2 ;;
esac

if [ "$1" = debug ]; then
	exec "$here/../../scripts/kdebug.sh" "$2"
fi
release=$("$here/kver.sh" "$1")
case $2 in
release) echo "$release" ;;
dir) echo "/lib/modules/$release/build" ;;
image) echo "/boot/vmlinuz-$release" ;;
esac
