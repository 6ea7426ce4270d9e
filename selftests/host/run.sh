#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# make check-host: the Debian packages (make deb) installed and used as a
# sysadmin would, in a Debian 12 guest with systemd and udev under QEMU
# (software emulation). The guest boots its own kernel (Debian's 6.1) from
# a cached image (image.sh) through a copy-on-write overlay, with a second,
# read-only disk holding guest.sh and the .debs, and no network at all.
# Two boots of the same overlay (the reboot of the test): stage 1 installs
# the packages, stage 2 checks what the boot made of them and removes
# them. guest.sh prints the results; this script adds its own, and fails
# the run on any kernel splat in either boot's log (selftests/vm/lib.sh).
#
# Results go to build/results.txt with "host: " before each; its summary,
# "N passed, N failed" over the whole file, is the last line. RL_APPEND=1
# adds them to what is there (make check-all's, for .ci/run), else the
# file starts anew.
# Environment: RL_HOST_TIMEOUT (seconds per boot, 3600), RL_HOST_MEM
# (MiB, 2048), RL_HOST_OUT (the output dir, build/host), RL_HOST_IMAGE
# (another image dir, as image.sh makes them).
set -eu

here=$(dirname "$0")
# shellcheck source=selftests/vm/lib.sh
. "$here/../vm/lib.sh"
# shellcheck source=selftests/host/boot.sh
. "$here/boot.sh"
make=${MAKE:-make}
out=${RL_HOST_OUT:-build/host}
vm_timeout=${RL_HOST_TIMEOUT:-3600}
mem=${RL_HOST_MEM:-2048}
pfx="host: "

rl_results_open build/results.txt
# Whatever stops this script, the summary is the last line. The exit
# status is this script's own: with RL_APPEND=1 the file also holds
# make check-all's results, whose failures are not the packages'.
finished=
finish()
{
	finished=1
	rl_summary || true
	if grep -q "^FAIL $pfx" "$RL_RESULTS"; then
		exit 1
	fi
	exit 0
}
trap '[ -n "$finished" ] || { rl_result FAIL "${pfx}the rig ran to its end"; rl_summary; }' EXIT
start=$(date +%s)

echo "==> host: deps"
if ! scripts/deps.sh deb host; then
	rl_result FAIL "${pfx}deps installed (scripts/deps.sh deb host)"
	finish
fi

echo "==> host: the packages (make deb)"
if $make --no-print-directory deb LINTIAN=1; then
	rl_result PASS "${pfx}make deb builds the packages, lintian reports no error"
else
	rl_result FAIL "${pfx}make deb builds the packages, lintian reports no error"
	finish
fi

echo "==> host: the guest's image"
if [ -n "${RL_HOST_IMAGE:-}" ]; then
	img=$RL_HOST_IMAGE
elif "$here/image.sh"; then
	img=$("$here/image.sh" dir)
else
	rl_result FAIL "${pfx}guest image built (selftests/host/image.sh)"
	finish
fi

# The second disk: guest.sh and the packages (not their -dbgsym).
rm -rf "$out"
mkdir -p "$out/share/debs"
cp "$here/guest.sh" "$out/share/"
for p in ratelimit-dkms libratelimit1 libratelimit-dev ratelimit-tools \
	ratelimit-global python3-kratelimit; do
	cp build/deb/"$p"_*.deb "$out/share/debs/"
done
mkfs.ext4 -q -F -L rltest -d "$out/share" "$out/share.img" 64M >/dev/null
qemu-img create -q -f qcow2 -F raw -b "$(cd "$img" && pwd)/root.img" \
	"$out/root.qcow2"

host_boot 1
if grep -q '@@rl stage 1 done$' "$out/boot1.log"; then
	host_boot 2
else
	rl_result FAIL "${pfx}boot 2 (not tried: boot 1 did not finish)"
fi
echo "host: $(($(date +%s) - start)) s in all"
# The overlay (the guest's disk, a few hundred MB) stays for a look when
# something failed.
grep -q '^FAIL ' "$RL_RESULTS" || rm -f "$out/root.qcow2"
finish
