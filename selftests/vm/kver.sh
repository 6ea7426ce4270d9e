#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Print the release of Debian's 6.1 kernel that the QEMU rig boots
# (e.g. 6.1.0-56-amd64): the one linux-image-amd64 depends on, else the
# newest installed /lib/modules/6.1.*-amd64 that has a /boot/vmlinuz.
set -eu

kver=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null |
	sed -n 's/.*linux-image-\(6\.1\.[^ ,]*-amd64\).*/\1/p')
if [ -z "$kver" ] || [ ! -e "/boot/vmlinuz-$kver" ]; then
	kver=$(for d in /lib/modules/6.1.*-amd64; do
		[ -e "/boot/vmlinuz-${d##*/}" ] && echo "${d##*/}"
	done | sort -V | tail -n 1)
fi
[ -n "$kver" ] || { echo "kver: no Debian 6.1 kernel installed" >&2; exit 1; }
echo "$kver"
