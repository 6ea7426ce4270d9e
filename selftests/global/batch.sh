#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Batch mode's Redis round trips while demand exceeds the capacity: three
# rlsyncd agents in batch mode (rlsyncd-fake with RLS_FAKE_FED=1, a
# simulated fed limiter whose clients each ask the whole capacity) share
# 3000/s through their own redis-server, at refresh 100 ms, 250 ms and
# 1 s. A batch is one refresh interval of a host's tokens: round trips
# per batch = FCALLs (INFO commandstats) / (hosts x elapsed / refresh),
# goal <= 1 (the old polling made about 2, and brought part of a batch
# each). Then one host's clients stop: the other two must get the whole
# capacity within two refresh intervals (the tokens they got from two
# refresh intervals after the shift on). Asserted as ratios with slack
# for a loaded machine; the figures printed. Run by selftests/global/run.sh
# with RLSYNCD_FAKE (the binary); RS="0.25" runs one refresh interval.
set -u

suite='batch'
# shellcheck source=selftests/global/lib.sh
. "$(dirname "$0")/lib.sh"
cap=3000

fcalls()
{
	redis-cli -s "$sock" INFO commandstats | tr -d '\r' |
		sed -n 's/^cmdstat_fcall:calls=\([0-9]*\).*/\1/p'
}
# granted T0 T1 HOSTS...: tokens the clients of HOSTS got between the
# times T0 and T1 (ms), each host's count interpolated between samples
granted()
{
	t0=$1 t1=$2
	shift 2
	for h in "$@"; do cat "$tmp/$h.log"; echo "END"; done |
		awk -v t0="$t0" -v t1="$t1" '
		function at(t,   i) {
			if (n == 0 || t <= ts[1]) return n ? v[1] : 0
			for (i = 2; i <= n; i++) {
				if (ts[i] < t)
					continue
				f = (t - ts[i - 1]) / (ts[i] - ts[i - 1] + 1e-9)
				return v[i - 1] + (v[i] - v[i - 1]) * f
			}
			return v[n]
		}
		$1 == "END" { s += at(t1) - at(t0); n = 0; next }
		{ n++; ts[n] = $1; v[n] = $2 }
		END { printf "%.1f", s }'
}

# shellcheck disable=SC2119 # no prefix: redis-server itself
redis_up

for r in ${RS:-0.1 0.25 1}; do
	ms=$(awk "BEGIN { print $r * 1000 }")
	redis-cli -s "$sock" FLUSHALL >/dev/null
	pids=''
	for h in h1 h2 h3; do
		echo "$cap" >"$tmp/$h.d"
		: >"$tmp/$h.log"
		RLS_FAKE_FED=1 RLS_FAKE_DEMAND=$tmp/$h.d RLS_FAKE_OUT=$tmp/$h.log \
			"$d" --lua "$lua" -r "unix:$sock" -H "$h" -S '' -m batch \
			-R "${ms}ms" api=$cap/s >"$tmp/$h.out" 2>&1 &
		pids="$pids $!"
	done
	# warm-up, then a window of at least 2 s and 5 refresh intervals
	sleep "$(awk "BEGIN { print ($r * 3 > 1.5 ? $r * 3 : 1.5) }")"
	w=$(awk "BEGIN { print ($r * 5 > 2 ? $r * 5 : 2) }")
	c0=$(fcalls) t0=$(now)
	sleep "$w"
	c1=$(fcalls) t1=$(now)
	g=$(granted "$t0" "$t1" h1 h2 h3)
	el=$((t1 - t0))
	rtb=$(awk "BEGIN { printf \"%.2f\", ($c1 - $c0) / (3 * $el / $ms) }")
	tpc=$(awk "BEGIN { printf \"%.0f\", $g / ($c1 - $c0 + 0.001) }")
	rate=$(awk "BEGIN { printf \"%.0f\", $g * 1000 / $el }")
	check "round trips R=${ms}ms" "$rtb <= 1.1 && $rate >= 0.8 * $cap && $rate <= 1.05 * $cap + ($cap + 6 * $cap * $r) * 1000 / $el" \
		"$((c1 - c0)) rl_take in $el ms by 3 hosts: $rtb round trips per batch (goal <= 1), $tpc tokens per call; clients got $rate/s of $cap/s"

	# h1's clients stop: h2 and h3 get the whole capacity
	ts=$(now)
	echo 0 >"$tmp/h1.d"
	w2=$(awk "BEGIN { print ($r * 2 > 1 ? $r * 2 : 1) }")
	sleep "$(awk "BEGIN { print $r * 2 + $w2 + 0.1 }")"
	a=$((ts + 2 * ms))
	b=$(awk "BEGIN { printf \"%.0f\", $a + $w2 * 1000 }")
	g2=$(granted "$a" "$b" h2 h3)
	part=$(awk "BEGIN { printf \"%.3f\", $g2 / ($cap * $w2) }")
	# the first 100 ms step after which a window of one refresh
	# interval (at least 200 ms) is at 90 % of the capacity
	conv=-1
	for t in $(seq 0 100 $((2 * ms + 1000))); do
		x=$(awk "BEGIN { print ($ms > 200 ? $ms : 200) }")
		g3=$(granted $((ts + t)) $((ts + t + x)) h2 h3)
		if awk "BEGIN { exit !($g3 >= 0.9 * $cap * $x / 1000) }"; then
			conv=$t
			break
		fi
	done
	check "demand shift R=${ms}ms" "$part >= 0.85" \
		"h1 stopped: h2 + h3 at $part of $cap/s from 2 refresh intervals on (over ${w2} s); a window of $x ms at >= 90 % from $conv ms on"
	# shellcheck disable=SC2086 # the pids, one word each
	kill $pids
	# shellcheck disable=SC2086
	wait $pids 2>/dev/null
	pids=''
done
