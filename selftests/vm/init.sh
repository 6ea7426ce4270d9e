#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# /init of the QEMU rig's guest (busybox). Loads /ratelimit.ko, does what
# rl.mode= on the kernel command line asks (check: every /selftests/*,
# run: /guest/demo.sh, bench: /guest/bench.sh, shell: a shell, lockup:
# load /lockup.ko, which spins until the rig ends the guest), unloads
# the module, prints the kernel log and reboots, which ends QEMU. Lines
# "@@rl ..." are markers that selftests/vm/run.sh reads.

/bin/busybox --install -s /bin
export PATH=/tools:/selftests:/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# The loopback, which the kernel leaves down: every test that serves or
# reaches 127.0.0.1 (the bindings' HTTP examples, rlsyncd's Redis, the
# bench's) finds it up, whichever runs first.
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
exec </dev/console >/dev/console 2>&1
echo	# a fresh line after the firmware's escape sequences

mode=check
timeout=300
# shellcheck disable=SC2013 # the words of the command line are wanted
for arg in $(cat /proc/cmdline); do
	case $arg in
	rl.mode=*) mode=${arg#*=} ;;
	rl.timeout=*) timeout=${arg#*=} ;;
	# a slow machine (the debug kernel): see the tests' timed checks
	rl.slow=yes) export KSFT_MACHINE_SLOW=yes ;;
	esac
done

mark() { echo "@@rl $*"; }

# stuck NAME: a test outlived its kill (a task that cannot die): the
# blocked tasks and every CPU's backtrace, then the kernel log's end.
stuck()
{
	mark "stuck $1"
	echo w > /proc/sysrq-trigger
	echo l > /proc/sysrq-trigger
	sleep 2
	dmesg | tail -n 400
}

# run NAME CMD...: CMD between begin/end markers, killed after $timeout s;
# its wall time, by the guest's clock, in a marker "took NAME N s".
run()
{
	name=$1
	shift
	mark begin "$name"
	(
		sleep $((timeout + 30)) &
		trap 'kill $! 2>/dev/null; exit 0' TERM
		wait $! && stuck "$name"
	) &
	wd=$!
	t0=$(date +%s)
	timeout -k 10 "$timeout" "$@"
	rc=$?
	kill $wd 2>/dev/null
	wait $wd 2>/dev/null
	mark took "$name" $(($(date +%s) - t0)) s
	mark end "$name" rc=$rc
}

# A kernel with kmemleak (the debug kernel): forget what boot left behind,
# so that the scan at the end reports only what leaked since. kmemleak
# reports nothing younger than 5 s, nor what changed since its last scan:
# the boot is let age that much, and scanned twice.
leak=/sys/kernel/debug/kmemleak
if [ -w $leak ]; then
	while read -r up _ < /proc/uptime && [ "${up%.*}" -lt 6 ]; do
		sleep 1
	done
	if echo scan > $leak 2>/dev/null; then
		echo scan > $leak
		echo clear > $leak
	else
		leak=
	fi
else
	leak=
fi

# The kernel booted: what goes wrong from here may be the module's.
mark userspace
if insmod /ratelimit.ko; then mark insmod ok; else mark insmod failed; fi
# Where the module is: kmemleak's backtraces show its addresses raw once
# it is gone, and run.sh names its functions in a stuck CPU's registers.
mark "ratelimit .text at $(cat /sys/module/ratelimit/sections/.text 2>/dev/null)"
mark "kernel _text at 0x$(sed -n 's/ T _text$//p' /proc/kallsyms)"

case $mode in
check)
	for t in /selftests/*; do
		[ -x "$t" ] && run "${t##*/}" "$t" </dev/null
	done ;;
run)
	run demo sh /guest/demo.sh </dev/null ;;
bench)
	run bench sh /guest/bench.sh </dev/null ;;
lockup)
	run lockup insmod /lockup.ko </dev/null ;;
shell)
	echo "ratelimit guest: module loaded, tools in /tools, tests in /selftests."
	echo "Leave with exit (or Ctrl-D): the guest powers off."
	PS1='rl-guest:\w# ' setsid cttyhack sh ;;
esac

if rmmod ratelimit; then mark rmmod ok; else mark rmmod failed; fi
if [ -n "$leak" ]; then
	# Again: objects at least 5 s old, unchanged over two scans.
	sleep 6
	echo scan > $leak
	sleep 1
	echo scan > $leak
	mark kmemleak-begin
	cat $leak
	mark kmemleak-end
fi
if [ "$mode" != shell ]; then
	mark dmesg-begin
	dmesg
	mark dmesg-end
fi
mark "done"
sleep 1	# let the serial port drain before the reset
reboot -f
