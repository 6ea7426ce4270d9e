#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Install the Debian packages the build and the QEMU test rig need.
# Idempotent and non-interactive; a quick no-op when all are present.
set -eu

pkgs="gcc make libc6-dev perl
linux-image-amd64 linux-headers-amd64 linux-source-6.1
qemu-system-x86 busybox-static sparse cpio kmod xz-utils gzip"

missing=
for p in $pkgs; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) || st=
	[ "$st" = installed ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "deps: installing$missing"
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "deps: need root or sudo" >&2; exit 1; }
	sudo=sudo
else
	sudo=
fi
apt="$sudo env DEBIAN_FRONTEND=noninteractive apt-get -q -y"
$apt update
# shellcheck disable=SC2086 # word splitting of the lists is wanted
$apt install --no-install-recommends $missing </dev/null
