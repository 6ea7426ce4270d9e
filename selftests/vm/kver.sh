#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Print the release (uname -r) of a Debian kernel the QEMU rig boots:
#   kver.sh [6.1|6.12|6.12-rt|RELEASE]     (default 6.1)
# e.g. 6.1.0-56-amd64, 6.12.57+deb12-amd64, 6.12.57+deb12-rt-amd64: the
# one its meta-package (scripts/deps.sh installs it) depends on, else the
# newest installed one of that series that has a /boot/vmlinuz. A full
# RELEASE is printed as it is when its /boot/vmlinuz exists.
set -eu

k=${1:-6.1}
case $k in
6.1) meta=linux-image-amd64 re='6\.1\.[0-9]*-[0-9]*-amd64' ;;
6.12) meta=linux-image-6.12-amd64 re='6\.12\.[0-9]*+deb[0-9]*-amd64' ;;
6.12-rt) meta=linux-image-6.12-rt-amd64 re='6\.12\.[0-9]*+deb[0-9]*-rt-amd64' ;;
*)
	[ -e "/boot/vmlinuz-$k" ] || { echo "kver: no /boot/vmlinuz-$k" >&2; exit 1; }
	echo "$k"
	exit 0 ;;
esac

kver=$(dpkg-query -W -f='${Depends}' "$meta" 2>/dev/null |
	tr ',' '\n' | sed -n "s/^ *linux-image-\($re\)\( .*\)\{0,1\}\$/\1/p" |
	head -n 1)
if [ -z "$kver" ] || [ ! -e "/boot/vmlinuz-$kver" ]; then
	kver=$(for f in /boot/vmlinuz-*; do
		echo "${f#/boot/vmlinuz-}"
	done | grep -x "$re" | sort -V | tail -n 1) || true
fi
[ -n "$kver" ] || { echo "kver: no Debian $k kernel installed (make deps KVER=$k)" >&2; exit 1; }
echo "$kver"
