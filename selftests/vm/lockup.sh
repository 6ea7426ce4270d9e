#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# The QEMU rig's own test (make check-lockup; check.sh runs it once, on its
# first kernel): a guest with a CPU stuck in the kernel must end at the
# kernel's first soft lockup or RCU stall, not at the rig's timeout. The
# CPU is stuck by lockup.c, a module built here for the guest's kernel
# (lockup.sh KDIR), which spins with preemption off when loaded (run.sh
# lockup). It passes when run.sh's result for that boot is its FAIL line
# of a stuck CPU, the guest ended within 60 s of the spin's start, and the
# log has the backtraces of both CPUs. The boot's own results stay in
# build/vm/lockup/results.txt; its one result here, "rig: ...", goes to
# RL_RESULTS (a results file of its own when unset). Environment as
# run.sh's: RL_KVER, RL_KERNEL, RL_PREFIX.
set -eu

here=$(dirname "$0")
# shellcheck source=selftests/vm/lib.sh
. "$here/lib.sh"
kdir=${1:?usage: lockup.sh KDIR}
out=build/vm/lockup
pfx=${RL_PREFIX:-}
limit=60

rm -rf "$out"
mkdir -p "$out/mod"
own=	# a summary here, or in the calling check.sh
[ -n "${RL_RESULTS:-}" ] || { own=1; rl_results_init "$out/summary/results.txt"; }
outer=$RL_RESULTS
what="${pfx}rig: a CPU stuck in the kernel ends the guest at the first report"

cp "$here/lockup.c" "$out/mod/"
echo 'obj-m := lockup.o' > "$out/mod/Kbuild"
echo "==> lockup: a module that spins with preemption off ($out/mod)"
if ! make -C "$kdir" M="$PWD/$out/mod" modules > "$out/build.log" 2>&1; then
	tail -n 20 "$out/build.log"
	rl_result FAIL "$what (lockup.ko did not build)"
	[ -z "$own" ] || rl_summary
	exit 0
fi

# The boot's own output (its expected FAIL line, the panic's backtraces)
# goes to run.out only, so that a passing check prints no FAIL: shown
# below when the check fails.
echo "==> lockup: the boot, its output in $out/run.out"
RL_RESULTS=$out/results.txt RL_VM_OUT=$out/vm RL_VM_TIMEOUT=300 \
	RL_LOCKUP_KO=$out/mod/lockup.ko "$here/run.sh" lockup > "$out/run.out" 2>&1 || :
log=$out/vm/lockup.log
# QEMU's time, from its start (the guest's clock starts a little later).
took=$(sed -n 's/^vm: QEMU exited with status .* after \([0-9]*\) s$/\1/p' "$out/run.out")

# The spin's start, by the guest's clock (seconds since its boot).
began=$(sed -n 's/^\[ *\([0-9]*\)\.[0-9]*\] lockup: spinning.*/\1/p' "$log" | head -n 1)
line=$(sed -n 's/^FAIL //p' "$out/results.txt" | grep 'vm: a CPU stuck in lockup' | head -n 1)
bad=
[ -n "$began" ] || bad="$bad; the module did not start spinning"
[ -n "$line" ] || bad="$bad; no result line of a stuck CPU"
! grep -q 'lockup: the spin ended' "$log" || bad="$bad; the guest ran on after the spin"
# Each CPU's backtrace, or the NMI's word that it idled.
for c in 0 1; do
	grep -Eq "CPU: $c (UID: [0-9]+ )?PID: |NMI backtrace for cpu $c" "$log" ||
		bad="$bad; no backtrace of CPU $c"
done
after=$((${took:-9999} - ${began:-0}))
[ "$after" -le "$limit" ] || bad="$bad; $after s after the spin began, not $limit"
echo "lockup: QEMU ran ${took:-?} s, the spin began ${began:-?} s after the boot"
[ -z "$line" ] || echo "lockup: run.sh said: $line"
RL_RESULTS=$outer
if [ -z "$bad" ]; then
	rl_result PASS "$what: $after s after the spin began, with every CPU's backtrace"
else
	tail -n 40 "$out/run.out" | sed 's/^/  | /'
	rl_result FAIL "$what${bad}"
fi
[ -z "$own" ] || rl_summary
