#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# make check-containers: names per IPC namespace and the CDI spec in a real
# container runtime, Debian's podman and crun, in the Debian 12 guest of
# make check-host (image.sh, RL_HOST_VARIANT=containers: the same image
# with podman and crun) under QEMU, with no network. CI runs it after
# make check-host: 146 s on 2 cores the first time, 80 s of them the
# image's build, then about 60 s.
#
# The second disk holds containers_guest.sh (as guest.sh, which the
# image's unit runs), the module built for the image's kernel, the CDI
# spec, and rootfs.tar: a root of the static rlctl and rlpace, which the
# guest turns into an image with podman import (no registry). Results go
# to build/results.txt with "containers: " before each (RL_APPEND=1: added
# to what is there, as check-host's); any kernel splat in the guest's log
# fails the run.
# Environment: RL_HOST_TIMEOUT (seconds, 3600), RL_HOST_MEM (MiB, 2048),
# RL_HOST_OUT (the output dir, build/containers).
set -eu

here=$(dirname "$0")
# shellcheck source=selftests/vm/lib.sh
. "$here/../vm/lib.sh"
# shellcheck source=selftests/host/boot.sh
. "$here/boot.sh"
make=${MAKE:-make}
out=${RL_HOST_OUT:-build/containers}
vm_timeout=${RL_HOST_TIMEOUT:-3600}
mem=${RL_HOST_MEM:-2048}
pfx="containers: "
start=$(date +%s)

rl_results_open build/results.txt
# The exit status is this script's own, as check-host's (RL_APPEND=1).
finish()
{
	rl_summary || true
	if grep -q "^FAIL $pfx" "$RL_RESULTS"; then
		exit 1
	fi
	exit 0
}

echo "==> containers: deps and the guest's image (podman, crun)"
if ! scripts/deps.sh 6.1 host || ! RL_HOST_VARIANT=containers "$here/image.sh"; then
	rl_result FAIL "${pfx}deps and guest image (image.sh, RL_HOST_VARIANT=containers)"
	finish
fi
img=$(RL_HOST_VARIANT=containers "$here/image.sh" dir)
release=$(cat "$img/release")
kdir=/usr/src/linux-headers-$release
# The image's kernel is the archive's of the day the image was made.
[ -d "$kdir" ] || apt-get install -y -q "linux-headers-$release" >/dev/null || true

echo "==> containers: the module for $release, static rlctl and rlpace"
rm -rf "$out"
mkdir -p "$out/share" "$out/root"
if ! $make --no-print-directory -s module KDIR="$kdir" ||
   ! $make --no-print-directory -s tools TOOLS_LINK=static B=build/static; then
	rl_result FAIL "${pfx}the module for $release (headers in $kdir) and static tools"
	finish
fi
cp ratelimit.ko "$out/share/"
cp dist/ratelimit.cdi.yaml "$out/share/"
cp "$here/containers_guest.sh" "$out/share/guest.sh"
cp build/static/tools/rlctl build/static/tools/rlpace "$out/root/"
cp build/static/tools/rlctl "$out/share/"
tar -C "$out/root" -cf "$out/share/rootfs.tar" .
mkfs.ext4 -q -F -L rltest -d "$out/share" "$out/share.img" 64M >/dev/null
qemu-img create -q -f qcow2 -F raw -b "$(cd "$img" && pwd)/root.img" \
	"$out/root.qcow2"

host_boot containers
echo "containers: $(($(date +%s) - start)) s in all"
grep -q '^FAIL ' "$RL_RESULTS" || rm -f "$out/root.qcow2"
finish
