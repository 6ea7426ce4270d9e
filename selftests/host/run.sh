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
make=${MAKE:-make}
out=${RL_HOST_OUT:-build/host}
vm_timeout=${RL_HOST_TIMEOUT:-3600}
mem=${RL_HOST_MEM:-2048}
pfx="host: "

results=build/results.txt
if [ "${RL_APPEND:-}" = 1 ] && [ -f "$results" ]; then
	RL_RESULTS=$results
	export RL_RESULTS
else
	rl_results_init "$results"
fi
check() { if "$@"; then echo PASS; else echo FAIL; fi; }
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
release=$(cat "$img/release")

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

# boot STAGE: one boot of the guest; its serial log in $out/bootN.log.
# rl.stage= on its command line makes the image's rl-check-host.service
# run guest.sh in the normal boot and power off when it ends; -no-reboot
# makes a reboot (panic=-1 on an oops) end QEMU too.
boot()
{
	log=$out/boot$1.log
	echo "host: boot $1 of $release, serial log in $log"
	t=$(date +%s)
	{
		rc=0
		timeout "$vm_timeout" qemu-system-x86_64 -accel tcg -m "$mem" -smp 2 \
			-nographic -no-reboot -nic none \
			-kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
			-drive file="$out/root.qcow2",if=virtio,format=qcow2 \
			-drive file="$out/share.img",if=virtio,format=raw,readonly=on \
			-append "console=ttyS0 root=/dev/vda rw quiet panic=-1 oops=panic hung_task_panic=1 rl.stage=$1" \
			</dev/null 2>&1 || rc=$?
		echo "$rc" > "$out/qemu.rc"
	} | awk -v file="$log" '
		# The log without CRs and terminal escapes; on screen, not the dmesg.
		{ sub(/\r$/, ""); gsub(/\033(\[[0-9;?]*[A-Za-z]|c)/, ""); print > file }
		/@@rl dmesg-begin/ { hide = 1; print "host: (the kernel log is in " file ")" }
		!hide { print; fflush() }
		/@@rl dmesg-end/ { hide = 0 }'
	rc=$(cat "$out/qemu.rc")
	echo "host: QEMU exited with status $rc after $(($(date +%s) - t)) s"
	[ "$rc" != 124 ] || echo "host: timed out after $vm_timeout s"

	# The guest's results, then whether it got to the end and the kernel
	# log of this boot.
	sed -n 's/^.*@@rl \(PASS\|FAIL\|SKIP\) \(.*\)$/\1 \2/p' "$log" |
		while read -r res what; do
			rl_result "$res" "$pfx$what"
		done
	rl_result "$(check grep -q "@@rl stage $1 done\$" "$log")" \
		"${pfx}boot $1: guest.sh finished"
	rl_klog_bad "$log" > "$out/bad$1.txt"
	sed 's/^/  /' "$out/bad$1.txt"
	if ! grep -q '@@rl dmesg-end$' "$log"; then
		rl_result FAIL "${pfx}boot $1: kernel log clean (dmesg not captured)"
	else
		rl_result "$(check test ! -s "$out/bad$1.txt")" "${pfx}boot $1: kernel log clean"
	fi
}

boot 1
if grep -q '@@rl stage 1 done$' "$out/boot1.log"; then
	boot 2
else
	rl_result FAIL "${pfx}boot 2 (not tried: boot 1 did not finish)"
fi
echo "host: $(($(date +%s) - start)) s in all"
# The overlay (the guest's disk, a few hundred MB) stays for a look when
# something failed.
grep -q '^FAIL ' "$RL_RESULTS" || rm -f "$out/root.qcow2"
finish
