# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# Sourced by check.sh and run.sh: every check and test adds one line
# "PASS|FAIL|SKIP what" to $RL_RESULTS; rl_summary sums them up.

# rl_results_init FILE: start a results file, also for child scripts.
rl_results_init()
{
	RL_RESULTS=$1
	export RL_RESULTS
	mkdir -p "$(dirname "$RL_RESULTS")"
	: > "$RL_RESULTS"
}

# rl_results_open FILE: results go to FILE, after what it holds with
# RL_APPEND=1 (a make check before: .ci/run), else into it anew.
rl_results_open()
{
	if [ "${RL_APPEND:-}" = 1 ] && [ -f "$1" ]; then
		RL_RESULTS=$1
		export RL_RESULTS
	else
		rl_results_init "$1"
	fi
}

# rl_result PASS|FAIL WHAT
rl_result()
{
	echo "$1 $2" >> "$RL_RESULTS"
	echo "$1: $2"
}

# rl_tap NAME RC < OUTPUT: results of one test program from its TAP lines
# (ok N, not ok N, "# SKIP", plan 1..N) and its exit status RC ("none"
# when it never finished). Exit status 4 is kselftest's "skipped". An ok
# marked "# XFAIL" or "# TODO" (a check of time alone that failed on a
# slow machine, KSFT_MACHINE_SLOW) counts as SKIP, with its figures; a not
# ok fails, marked or not (node's test runner marks a whole test TODO),
# and its FAIL line ends with why ("-- " and the assertion's message).
rl_tap()
{
	res=$(awk -v name="$1" -v rc="$2" '
	function flush() {
		if (pend != "")
			print pend (why != "" ? " -- " substr(why, 1, 200) : "")
		pend = ""
		why = ""
		yaml = 0
	}
	{ sub(/\r$/, "") }
	/^1\.\.[0-9]+/ { plan = substr($0, 4) + 0 }
	# Why a test failed: kselftest_harness.h prints it before the
	# result ("# file.c:LINE:test:Expected ..."), node:test after it, in
	# the YAML block of the result ("error: ...").
	/^# / && !/^# Subtest:/ && pre == "" && /(Expected|terminated|[Aa]ssert|[Ff]ail)/ {
		pre = substr($0, 3)
	}
	pend != "" && yaml && why == "" && /^ *error: / {
		why = $0
		sub(/^ *error: */, "", why)
		if (why ~ /^[|>]-?$/ && (getline) > 0) {
			why = $0
			sub(/^ */, "", why)
		}
	}
	pend != "" && /^  ---$/ { yaml = 1 }
	pend != "" && /^  \.\.\.$/ { flush() }
	/^(not )?ok [0-9]+/ {
		flush()
		t = $0
		bad = sub(/^not ok [0-9]+ */, "", t)
		sub(/^ok [0-9]+ */, "", t)
		sub(/^- */, "", t)
		st = bad ? "FAIL" : t ~ /# *([Ss][Kk][Ii][Pp]|XFAIL|TODO)/ ? "SKIP" : "PASS"
		n++
		fails += bad
		if (bad) {
			pend = "FAIL " name ": " t
			why = pre
		} else {
			print st, name ": " t
		}
		pre = ""
	}
	END {
		flush()
		if (rc == "none") {
			print "FAIL", name ": did not finish"
		} else if (plan > n) {
			print "FAIL", name ": " plan - n " of " plan \
				" tests did not report (exit status " rc ")"
		} else if (!n && rc == 4) {
			print "SKIP", name ": skipped"
		} else if (!n) {
			print "FAIL", name ": no test results (exit status " rc ")"
		} else if (rc != 0 && rc != 4 && !fails) {
			print "FAIL", name ": exit status " rc
		}
	}')
	[ -n "$res" ] && echo "$res" >> "$RL_RESULTS"
	echo "$res" | awk -v name="$1" -v rc="$2" '
		{ n[$1]++ } $1 == "FAIL" { print }
		END { printf "%s: pass=%d fail=%d skip=%d exit=%s\n", name,
			n["PASS"], n["FAIL"], n["SKIP"], rc }'
}

# rl_wanted TEST: does the name TEST contain one of the words of RL_TESTS
# (all do when that is empty, none when it is "none")?
rl_wanted()
{
	[ -z "${RL_TESTS:-}" ] && return 0
	[ "$RL_TESTS" != none ] || return 1
	for w in $RL_TESTS; do
		case $1 in *"$w"*) return 0 ;; esac
	done
	return 1
}

# rl_skipped TEST: does the name TEST contain one of the words of RL_SKIP?
rl_skipped()
{
	for w in ${RL_SKIP:-}; do
		case $1 in *"$w"*) return 0 ;; esac
	done
	return 1
}

# rl_vm_lock [WHO]: wait for, then hold until rl_vm_unlock, the lock of
# this host's guests: the file RL_VM_LOCK, if set (none if not), locked
# with flock(1) on fd 7. Runs that overlap set it (.ci/run runs make
# check-fresh beside make check-all), so that their guests still boot one
# at a time: two guests under TCG on 2 cores slow each other's timing
# tests. WHO names the waiter in the line printed while it waits.
rl_vm_lock()
{
	[ -n "${RL_VM_LOCK:-}" ] || return 0
	exec 7>> "$RL_VM_LOCK" || return 1
	flock -n 7 && return 0
	echo "${1:-vm}: waiting for another run's guest (lock $RL_VM_LOCK)"
	flock 7
}

rl_vm_unlock()
{
	[ -z "${RL_VM_LOCK:-}" ] || exec 7>&-
}

# rl_summary: list the failures, print "N passed, N failed" last (also
# into summary.txt beside $RL_RESULTS, for .ci/run), and return non-zero
# on any failure.
rl_summary()
{
	p=$(grep -c '^PASS ' "$RL_RESULTS") || true
	f=$(grep -c '^FAIL ' "$RL_RESULTS") || true
	s=$(grep -c '^SKIP ' "$RL_RESULTS") || true
	if [ "$f" -gt 0 ]; then
		echo "Failed:"
		sed -n 's/^FAIL /  /p' "$RL_RESULTS"
	fi
	if [ "$s" -gt 0 ]; then
		line="$p passed, $f failed, $s skipped"
	else
		line="$p passed, $f failed"
	fi
	echo "$line" > "$(dirname "$RL_RESULTS")/summary.txt"
	echo "$line"
	[ "$f" -eq 0 ]
}

# What fails a guest's run when it shows in its kernel log, and what a
# debug kernel says at boot about its checkers, or kmemleak's count of its
# scans, which is no finding.
RL_KLOG_BAD='BUG:|WARNING:|Oops|Call Trace|lockdep|possible recursive locking'
RL_KLOG_BAD="$RL_KLOG_BAD|circular locking|KASAN|UBSAN|unreferenced object"
RL_KLOG_BAD="$RL_KLOG_BAD|kmemleak:.*leak|general protection|hung_task"
RL_KLOG_BAD="$RL_KLOG_BAD|blocked for more than|soft lockup|rcu.*stall"
RL_KLOG_BAD="$RL_KLOG_BAD|Kernel panic|list_(add|del) corruption|refcount_t:"
RL_KLOG_FINE='command line:|kmemleak: Kernel memory leak detector initialized'
RL_KLOG_FINE="$RL_KLOG_FINE|kmemleak: [0-9]+ new suspected memory leaks"
RL_KLOG_FINE="$RL_KLOG_FINE|RCU lockdep checking is enabled"

# A CPU stuck in the kernel: the watchdog's soft lockup and RCU's stall
# reports (rcu_sched or rcu_preempt, self-detected or not, expedited). The
# guest's kernel panics at the first (run.sh), and the rig ends the guest
# there if it does not.
RL_KLOG_STUCK='soft lockup - CPU#|rcu_[a-z_]+ (self-)?detected( expedited)? stall'

# rl_klog_stuck LOG: the kernel's first report of a stuck CPU in LOG.
rl_klog_stuck()
{
	grep -E '^\[ *[0-9]+\.[0-9]+\]' "$1" | grep -E "$RL_KLOG_STUCK" |
		head -n 1 | sed 's/^\[ *[0-9.]*\] //' || true
}

# rl_klog_bad LOG: the kernel's lines of a serial log (dmesg printed by the
# guest, and what the kernel printed on the console itself) that fail it.
rl_klog_bad()
{
	grep -E '^\[ *[0-9]+\.[0-9]+\]' "$1" | grep -Eiv "$RL_KLOG_FINE" |
		grep -E "$RL_KLOG_BAD" | sort -u | head -n 40 || true
}
