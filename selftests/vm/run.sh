#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# QEMU test rig. Boots a Debian kernel (6.1 unless told otherwise;
# software emulation) with an initramfs of busybox, ratelimit.ko,
# build/selftests/* and build/tools/*:
#   check  run every selftest, unload the module, check the kernel log
#   run    the pacing demo of guest/demo.sh
#   bench  tools/rlbench (guest/bench.sh); its result files go to
#          RL_BENCH_OUT (build/bench)
#   shell  an interactive shell on the serial console (Ctrl-A x quits QEMU)
#   lockup the rig's own test (lockup.sh): RL_LOCKUP_KO, a module that
#          spins with preemption off, loaded after ratelimit.ko
# Run it from the top of the tree after a build for that kernel: the
# Makefile targets check, run, shell and bench do both.
# Environment: RL_KVER (6.1, 6.12, 6.12-rt, a release, or debug, the
# built debug kernel; see kernel.sh), RL_KERNEL (another kernel image of
# release RL_KVER), RL_TEST_TIMEOUT (seconds per selftest in the guest),
# RL_VM_TIMEOUT (seconds per boot), RL_VM_MEM (MiB), RL_VM_OUT (the output
# dir, build/vm), RL_VM_APPEND (more of the kernel command line),
# RL_VM_NIC (QEMU's -nic, "none" by default; the guest gets the kernel's
# e1000.ko in /global: selftests/global/two_guests.sh),
# RL_PREFIX (put before every result, e.g. "6.12: "), RL_TESTS (only the
# selftests whose names contain one of these words, e.g. "backlog perm"),
# RL_SKIP (none of those whose names contain one of these),
# KSFT_MACHINE_SLOW ("yes": the guest's tests get it too, and report a
# check of time alone that fails as XFAIL; selftests/vm/check.sh sets it
# for the debug kernel), RL_VM_LOCK (a file whose flock the boot holds,
# waiting for it first: lib.sh's rl_vm_lock; none when unset).
set -eu

mode=${1:-check}
case $mode in
check|run|shell|bench|lockup) ;;
*) echo "usage: $0 check|run|shell|bench|lockup" >&2; exit 2 ;;
esac

here=$(dirname "$0")
# shellcheck source=selftests/vm/lib.sh
. "$here/lib.sh"
if [ -n "${RL_KERNEL:-}" ]; then
	kernel=$RL_KERNEL
	kver=${RL_KVER:?RL_KERNEL needs RL_KVER, its release}
else
	kver=$("$here/kernel.sh" "${RL_KVER:-6.1}" release)
	kernel=$("$here/kernel.sh" "${RL_KVER:-6.1}" image)
fi
test_timeout=${RL_TEST_TIMEOUT:-300}
vm_timeout=${RL_VM_TIMEOUT:-1200}
mem=${RL_VM_MEM:-1024}
pfx=${RL_PREFIX:-}
out=${RL_VM_OUT:-build/vm}
root=$out/root
log=$out/$mode.log

die() { echo "vm: $*" >&2; exit 1; }

[ -r "$kernel" ] || die "no kernel image $kernel (make deps)"
[ -f ratelimit.ko ] || die "no ratelimit.ko (make)"
modver=$(modinfo -F vermagic ratelimit.ko | cut -d' ' -f1)
[ "$modver" = "$kver" ] ||
	die "ratelimit.ko is built for $modver, not $kver: make KDIR=/lib/modules/$kver/build"

# The initramfs.
rm -rf "$root"
mkdir -p "$root/bin" "$root/dev" "$root/proc" "$root/sys" "$root/tmp" \
	"$root/root" "$root/selftests" "$root/tools" "$root/guest"
cp /bin/busybox "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
cp "$here/init.sh" "$root/init"
cp "$here"/guest/*.sh "$root/guest/"
cp ratelimit.ko "$root/"
[ "$mode" != lockup ] || cp "${RL_LOCKUP_KO:?lockup needs RL_LOCKUP_KO}" "$root/lockup.ko"
for f in build/selftests/* build/tools/*; do
	case $f in
	build/selftests/*)
		[ "$mode" != lockup ] || continue
		rl_wanted "${f##*/}" || continue
		! rl_skipped "${f##*/}" || continue ;;
	esac
	[ -f "$f" ] && [ -x "$f" ] && cp "$f" "$root/${f#build/}"
done
chmod 755 "$root/init" "$root"/guest/*.sh
# The Python package's tests need Debian's python3 in the guest.
if [ -f "$root/selftests/ratelimit_python_test" ]; then
	"$here/python.sh" "$root" "$mode" || die "no python3 for the guest"
fi
# The Node.js package's tests need node in the guest: make check installs
# it (scripts/deps.sh node); make run, shell and bench do without, and
# take it only when make node or make check built the addon (vm-build
# said so when not).
if [ -f "$root/selftests/ratelimit_node_test" ]; then
	if [ "$mode" != check ] && [ ! -f node/build/Release/kratelimit.node ]; then
		rm -f "$root/selftests/ratelimit_node_test"
	elif ! "$here/node.sh" "$root"; then
		[ "$mode" != check ] || die "no node for the guest"
		rm -f "$root/selftests/ratelimit_node_test"
	fi
fi
# copy_bin FILE DEST: FILE at DEST in the guest, with the shared
# libraries it needs at their own paths.
copy_bin()
{
	mkdir -p "$root${2%/*}"
	cp -L "$1" "$root$2"
	ldd "$1" | awk '/=> \//{ print $3 } /^[ \t]*\//{ print $1 }' |
	while read -r lib; do
		mkdir -p "$root${lib%/*}"
		cp -L "$lib" "$root$lib"
	done
}
# Redis, with the shared libraries it needs, if Debian's redis-server or
# redis-tools is installed (redis-check-rdb is redis-server under that
# name): bench's peer, and the global limits' test
# (selftests/ratelimit_rlsyncd_test.sh), which also gets rlsyncd, its
# client and the Redis library; it skips what is missing.
# ratelimit_sentinel_test needs the same, and redis-cli (SENTINEL
# FAILOVER) if redis-tools has it.
redis=$(command -v redis-server || command -v redis-check-rdb || true)
global=
[ ! -f "$root/selftests/ratelimit_rlsyncd_test" ] &&
	[ ! -f "$root/selftests/ratelimit_sentinel_test" ] || global=1
if [ -n "$redis" ] && { [ "$mode" = bench ] || [ -n "$global" ]; }; then
	copy_bin "$redis" /redis/redis-server
fi
cli=$(command -v redis-cli || true)
if [ -n "$cli" ] && [ -f "$root/selftests/ratelimit_sentinel_test" ]; then
	copy_bin "$cli" /redis/redis-cli
fi
if [ -n "$global" ]; then
	mkdir -p "$root/global"
	cp tools/global/ratelimit.lua "$root/global/"
	[ ! -x build/global/rlgclient ] || cp build/global/rlgclient "$root/global/"
	[ ! -x build/global/rlsyncd ] ||
		copy_bin build/global/rlsyncd /global/rlsyncd
	# a network card for RL_VM_NIC (the guest's kernel has it as a module)
	e1000=$(find "/lib/modules/$kver/kernel/drivers/net/ethernet/intel/e1000" \
		-name 'e1000.ko*' 2>/dev/null | head -n 1)
	case $e1000 in
	*.ko) cp "$e1000" "$root/global/e1000.ko" ;;
	*.ko.xz) xz -dc "$e1000" > "$root/global/e1000.ko" ;;
	*.ko.zst) zstd -qdc "$e1000" > "$root/global/e1000.ko" ;;
	esac
fi
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
	gzip -1 > "$out/initramfs.cpio.gz"

# oops=panic and hung_task_panic=1 turn a crashed or stuck kernel into a
# quick end of the run (panic=-1 reboots at once, -no-reboot exits QEMU)
# rather than a wait for the host timeout; so do softlockup_panic and
# panic_on_rcu_stall at the first soft lockup or RCU stall (a CPU spinning
# in the kernel: a guest once printed soft lockups for 6 minutes), with
# every CPU's backtrace (softlockup_all_cpu_backtrace, panic_print). A
# kernel that cannot panic for them (the debug kernel has no sysctl) is
# ended by the rig: boot() flags the first such line, and monitor.py
# sends an NMI 15 s later, and quits QEMU 15 s after that.
# no_timer_check skips the boot's check of the IO-APIC timer, which an
# emulated CPU starved by a loaded host can fail: seen once as a silent
# hang after "MP-BIOS bug: 8254 timer not connected to IO-APIC", until the
# host timeout.
#
# A guest that stops answering (CPUs spinning with interrupts off print
# nothing) is asked what it does 30 s before the timeout: monitor.py reads
# the CPUs' registers from QEMU's monitor and sends an NMI, which
# unknown_nmi_panic turns into a panic with every CPU's backtrace
# (panic_print=0x40). monitor.py names the module's functions in the
# registers, and the kernel's where its System.map has them (Debian's is
# a placeholder: the panic's backtraces name those).
mon=$out/monitor.sock
slow=
[ "${KSFT_MACHINE_SLOW:-}" != yes ] || slow=1
set -- qemu-system-x86_64 -accel tcg -m "$mem" -smp 2 -nographic -no-reboot \
	-monitor "unix:$mon,server=on,wait=off" \
	-nic "${RL_VM_NIC:-none}" -kernel "$kernel" -initrd "$out/initramfs.cpio.gz" \
	-append "console=ttyS0 quiet no_timer_check panic=-1 oops=panic hung_task_panic=1 softlockup_panic=1 softlockup_all_cpu_backtrace=1 sysctl.kernel.panic_on_rcu_stall=1 unknown_nmi_panic panic_print=0x40 rdinit=/init rl.mode=$mode rl.timeout=$test_timeout${slow:+ rl.slow=yes}${RL_VM_APPEND:+ $RL_VM_APPEND}"

if [ "$mode" = shell ]; then
	echo "vm: booting $kver; Ctrl-A x quits QEMU, exit powers off"
	exec "$@"
fi

own=	# summary here, or in the calling check.sh
[ -n "${RL_RESULTS:-}" ] || { own=1; rl_results_init "$out/results.txt"; }

# What fails a run when it shows in the kernel log (lib.sh).
bad=$RL_KLOG_BAD

# boot: run the guest once; the serial log in $log, QEMU's status in
# $out/qemu.rc; $stuck made at the kernel's first soft lockup or RCU stall
# (for monitor.py). Debian's awk, mawk, reads a pipe in blocks of many
# lines unless -W interactive, and would see that line only at the end.
stuck=$out/stuck
live=
[ -n "$(awk -W interactive 'BEGIN { }' </dev/null 2>&1)" ] || live='-W interactive'
boot() {
	rm -f "$mon" "$stuck" "$out/registers.txt" "$out/monitor.err"
	/usr/bin/python3 "$here/monitor.py" watch "$((vm_timeout - 30))" "$mon" \
		"$stuck" > "$out/registers.txt" 2> "$out/monitor.err" </dev/null &
	watch=$!
	# shellcheck disable=SC2086 # $live: none or two words
	{
		rc=0
		timeout "$vm_timeout" "$@" </dev/null 2>&1 || rc=$?
		echo "$rc" > "$out/qemu.rc"
	} | awk $live -v file="$log" -v stuck="$RL_KLOG_STUCK" -v flag="$stuck" '
		# The log without CRs and terminal escapes; on screen, not the dmesg.
		{ sub(/\r$/, ""); gsub(/\033(\[[0-9;?]*[A-Za-z]|c)/, ""); print > file }
		!hide && !flagged && $0 ~ stuck { flagged = 1; print > flag; close(flag) }
		/@@rl dmesg-begin/ { hide = 1; print "vm: (the kernel log is in " file ")" }
		!hide { print; fflush() }
		/@@rl dmesg-end/ { hide = 0 }
		/@@rl file-begin/ { hide = 1 }
		/@@rl file-end/ { hide = 0 }'
	kill "$watch" 2>/dev/null || true
	wait "$watch" 2>/dev/null || true
}

rl_vm_lock vm
echo "vm: booting $kver ($mode), serial log in $log"
start=$(date +%s)
boot "$@"
# A kernel that died before it ran /init never had the module loaded: seen
# once in some hundreds of boots, 6.12-rt under TCG hitting an int3 of the
# kernel's own code patching in an initcall. Boot once more then, and say
# so; from /init on, every crash counts.
if ! grep -q "@@rl userspace" "$log" && grep -qE "$bad" "$log"; then
	mv "$log" "$log.boot1"
	echo "vm: the kernel crashed before /init (log in $log.boot1): booting again, once"
	boot "$@"
fi
rl_vm_unlock
rc=$(cat "$out/qemu.rc")
echo "vm: QEMU exited with status $rc after $(($(date +%s) - start)) s"
[ "$rc" = 124 ] && echo "vm: timed out after $vm_timeout s"
# The guest stopped answering, or a CPU got stuck in the kernel: where its
# CPUs were, and what its kernel said, in a result line of its own (the end
# of a CI log is its list of failures).
first=$(rl_klog_stuck "$log")
if [ -n "$first" ] || grep -q 'RIP=' "$out/registers.txt" 2>/dev/null; then
	addr() { sed -n "s/.*@@rl $1 at \(0x[0-9a-f]*\).*/\1/p" "$log" | head -n 1; }
	map=$(dirname "$kernel")/System.map-$kver
	[ -r "$map" ] || map=$(dirname "$kernel")/System.map
	at=
	! grep -q 'RIP=' "$out/registers.txt" 2>/dev/null ||
		at="; $(/usr/bin/python3 "$here/monitor.py" where "$out/registers.txt" \
		"$map" "$(addr 'kernel _text')" ratelimit.ko \
		"$(addr 'ratelimit .text')")"
	last=$(sed -n 's/^@@rl begin //p' "$log" | tail -n 1)
	said=$(rl_klog_bad "$log" | grep -Ev 'Call Trace|NMI: Not continuing' |
		head -n 1 | sed 's/^\[ *[0-9.]*\] //')
	# The first places of the backtraces the NMI's panic printed.
	trace=$(grep -E 'RIP: 0010:|\[ratelimit\]' "$log" |
		sed 's/^\[[^]]*\] *//; s/RIP: 0010://' | awk '!seen[$0]++' |
		head -n 4 | paste -sd ' ')
	# What the test printed last (the fuzzer's seed, say).
	told=$(sed -n "/^@@rl begin $last\$/,\$p" "$log" | grep -v '^\[ *[0-9]' |
		grep -v '^@@rl' | tail -n 2 | paste -sd ' ')
	what="stopped answering in ${last:-boot} (it printed last: ${told:-nothing})"
	! grep -q "^@@rl stuck $last\$" "$log" ||
		what="$last outlived its kill (blocked tasks in $log)"
	said="; kernel: ${said:-nothing before the NMI}"
	if [ -n "$first" ]; then
		# From the report's arrival (the flag's time) to QEMU's end.
		after=$(($(date +%s) - $(stat -c %Y "$stuck" 2>/dev/null || date +%s)))
		what="a CPU stuck in ${last:-boot}: the guest ended $after s after the kernel's first report ($first); it printed last: ${told:-nothing}"
		said=
	fi
	rl_result FAIL "${pfx}vm: $what$at; backtraces: ${trace:-none}$said"
fi

marker() { grep -qE "@@rl $1\$" "$log"; }	# after any console escapes
check() { if "$@"; then echo PASS; else echo FAIL; fi; }

rl_result "$(check marker 'insmod ok')" "${pfx}module loaded"
case $mode in
check)
	for t in "$root"/selftests/*; do
		[ -f "$t" ] || continue
		n=${t##*/}
		rc=$(sed -n "s/.*@@rl end $n rc=//p" "$log")
		sed -n "/@@rl begin $n\$/,/@@rl end $n /p" "$log" |
			rl_tap "${pfx}selftests/$n" "${rc:-none}"
	done
	# Where the time went: each suite's, and the rest (boot, module,
	# kernel log), also in times.txt.
	sed -n 's/^@@rl took \([^ ]*\) \([0-9]*\) s$/\2 \1/p' "$log" > "$out/times.txt"
	awk -v total="$(($(date +%s) - start))" -v pfx="$pfx" '
		{ printf "vm: %s%s: %d s\n", pfx, $2, $1; sum += $1 }
		END { printf "vm: %sselftests: %d s; boot, module and the rest: %d s\n",
			pfx, sum, total - sum }' "$out/times.txt"
	# rlctl's --json and export outputs, printed by its selftest, parsed
	# here by real parsers: Debian's python3 (and its Prometheus client
	# library), which scripts/deps.sh installs.
	if [ -f "$root/selftests/ratelimit_rlctl_test" ]; then
		if /usr/bin/python3 "$here/output_check.py" "$log" > "$out/outputs.txt"; then
			while read -r res what; do
				rl_result "$res" "${pfx}$what"
			done < "$out/outputs.txt"
		else
			rl_result FAIL "${pfx}rlctl --json outputs reached the host"
		fi
	fi ;;
run)
	rl_result "$(check marker 'end demo rc=0')" "${pfx}demo ran" ;;
bench)
	# The guest prints every result file between markers.
	bench=${RL_BENCH_OUT:-build/bench}
	mkdir -p "$bench"
	awk -v dir="$bench" '
		/^@@rl file-begin / { f = dir "/" $3; printf "" > f; next }
		/^@@rl file-end / { close(f); f = ""; next }
		f != "" { print >> f }' "$log"
	rl_result "$(check marker 'end bench rc=0')" "${pfx}benchmark ran"
	rl_result "$(check test -s "$bench/results.csv")" \
		"${pfx}results in $bench" ;;
esac
rl_result "$(check marker 'rmmod ok')" "${pfx}module unloaded cleanly"
rl_result "$(check marker "done")" "${pfx}guest finished"

# kmemleak's report after the run, on kernels that have it (init.sh).
if grep -q '@@rl kmemleak-begin' "$log"; then
	sed -n '/@@rl kmemleak-begin/,/@@rl kmemleak-end/p' "$log" |
		sed '1d;$d' > "$out/kmemleak-all.txt"
	# An object allocated under start_kernel() is the boot's, from
	# before the module: kmemleak sometimes reports one late (an ACPI
	# cache of the debug kernel). Every other report is judged.
	awk '/^unreferenced object/ { if (e != "" && e !~ /start_kernel/)
			printf "%s", e; e = "" }
		{ e = e $0 "\n" }
		END { if (e != "" && e !~ /start_kernel/) printf "%s", e }' \
		"$out/kmemleak-all.txt" > "$out/kmemleak.txt"
	head -n 60 "$out/kmemleak.txt" | sed 's/^/  /'
	rl_result "$(check marker kmemleak-end)" "${pfx}kmemleak scan ran"
	rl_result "$(check test ! -s "$out/kmemleak.txt")" "${pfx}kmemleak: no leaks"
fi

# The kernel log: dmesg, printed by the guest between markers, and
# whatever the kernel printed on the console itself (panics).
# What a debug kernel says at boot about its checkers is no finding, nor
# is the count of kmemleak's scans (lib.sh): init.sh scans after the boot,
# to forget what the boot leaked, and after the run; the latter's report
# is judged above.
rl_klog_bad "$log" > "$out/bad.txt"
sed 's/^/  /' "$out/bad.txt"
if ! marker dmesg-end; then
	rl_result FAIL "${pfx}kernel log clean (dmesg not captured)"
else
	rl_result "$(check test ! -s "$out/bad.txt")" "${pfx}kernel log clean"
fi

[ -z "$own" ] || rl_summary
