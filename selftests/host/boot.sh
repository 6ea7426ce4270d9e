# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
# shellcheck disable=SC2154 # img, out, pfx, vm_timeout, mem: the sourcing script's
#
# Sourced by run.sh (make check-host) and containers.sh (make
# check-containers), after selftests/vm/lib.sh: one boot of the guest.
#
# host_boot STAGE: boot $img (an image.sh directory) through the overlay
# $out/root.qcow2, with $out/share.img as its second, read-only disk and
# rl.stage=STAGE on the kernel command line, which makes the image's
# rl-check-host.service run the share's guest.sh and power off when it
# ends; -no-reboot makes a reboot (panic=-1 on an oops) end QEMU too. The
# serial log goes to $out/bootSTAGE.log, on screen without the kernel log.
# Then the guest's "@@rl PASS|FAIL|SKIP what" lines become results with
# $pfx before them, and so do whether it printed "@@rl stage STAGE done"
# and whether its kernel log is clean. $vm_timeout (seconds) and $mem
# (MiB) bound the boot, which holds the guests' lock (rl_vm_lock).
host_boot()
{
	log=$out/boot$1.log
	rl_vm_lock "${pfx}boot $1"
	echo "${pfx}boot $1 of $(cat "$img/release"), serial log in $log"
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
	} | awk -v file="$log" -v pfx="$pfx" '
		# The log without CRs and terminal escapes; on screen, not the dmesg.
		{ sub(/\r$/, ""); gsub(/\033(\[[0-9;?]*[A-Za-z]|c)/, ""); print > file }
		/@@rl dmesg-begin/ { hide = 1; print pfx "(the kernel log is in " file ")" }
		!hide { print; fflush() }
		/@@rl dmesg-end/ { hide = 0 }'
	rl_vm_unlock
	rc=$(cat "$out/qemu.rc")
	echo "${pfx}QEMU exited with status $rc after $(($(date +%s) - t)) s"
	[ "$rc" != 124 ] || echo "${pfx}timed out after $vm_timeout s"

	sed -n 's/^.*@@rl \(PASS\|FAIL\|SKIP\) \(.*\)$/\1 \2/p' "$log" |
		while read -r res what; do
			rl_result "$res" "$pfx$what"
		done
	if grep -q "@@rl stage $1 done\$" "$log"; then res=PASS; else res=FAIL; fi
	rl_result "$res" "${pfx}boot $1: guest.sh finished"
	rl_klog_bad "$log" > "$out/bad$1.txt"
	sed 's/^/  /' "$out/bad$1.txt"
	if ! grep -q '@@rl dmesg-end$' "$log"; then
		rl_result FAIL "${pfx}boot $1: kernel log clean (dmesg not captured)"
	elif [ -s "$out/bad$1.txt" ]; then
		rl_result FAIL "${pfx}boot $1: kernel log clean"
	else
		rl_result PASS "${pfx}boot $1: kernel log clean"
	fi
}
