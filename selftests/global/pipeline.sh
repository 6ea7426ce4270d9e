#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Many resources per host: one rlsyncd agent (rlsyncd-fake, one simulated
# limiter per link) with 50 resources on its own redis-server renews
# them all in one pipelined round trip per refresh (the reads of Redis,
# INFO stats total_reads_processed, against the refreshes; 50 renewals
# fit in one read of 16 KB). 20 of them are co-located by a hash tag,
# {g}.1 to {g}.20 (one slot), the 30 others, r1 to r30, are in slots of
# their own: the 20 cost one FCALL per refresh (rl_lease_many), the 30
# one each (the FCALLs of a round trip in MONITOR), MONITOR shows which
# resources each call names, and a round trip comes a refresh after the
# last (jittered by 0.9-1.1). An error stays with its resource: one
# co-located resource's keys deleted from Redis, that link alone
# configures it again while the 49 others keep their rates, and renews
# it at once with the demand it reported before. A library
# without rl_lease_many (an older one) is met with one line and one call
# per resource. Run by selftests/global/run.sh with RLSYNCD_FAKE (the
# binary).
set -u

suite='pipeline'
# shellcheck source=selftests/global/lib.sh
. "$(dirname "$0")/lib.sh"
n=50 ng=20

# counts: "HSETS READS" of one INFO call: the renewals of one round trip
# are all in it or none
counts()
{
	redis-cli -s "$sock" INFO all | tr -d '\r' | awk -F'[:=,]' '
		/^cmdstat_hset:/ { h = $3 } /^total_reads_processed:/ { r = $2 }
		END { print h + 0, r + 0 }'
}
# running: the links whose last rate is above 0
running()
{
	awk '{ r[$3] = $2 } END { for (k in r) if (r[k] > 0) c++; print c + 0 }' \
		"$tmp/h1.log"
}

# shellcheck disable=SC2119 # no prefix: redis-server itself
redis_up

set --
i=1
while [ "$i" -le "$n" ]; do
	if [ "$i" -le "$ng" ]; then
		set -- "$@" "g$i@{g}.$i=1000/s"
	else
		set -- "$@" "r$((i - ng))=1000/s"
	fi
	i=$((i + 1))
done
echo 100 >"$tmp/demand"
: >"$tmp/h1.log"
RLS_FAKE_NAMES=1 RLS_FAKE_DEMAND=$tmp/demand RLS_FAKE_OUT=$tmp/h1.log \
	"$d" --lua "$lua" -r "unix:$sock" -H h1 -S '' -l 2s -R 100ms -T 0s \
	"$@" >"$tmp/h1.out" 2>&1 &
apid=$!
i=0
until [ "$(running)" -eq "$n" ] || [ "$i" -ge 100 ]; do
	i=$((i + 1))
	sleep 0.1
done

# reads and refreshes over 2 s (a renewal writes its member: one HSET)
# measure: in $ref the renewals per link (the refreshes)
measure()
{
	# shellcheck disable=SC2046 # three numbers
	set -- $(counts) $(now)
	h0=$1 w0=$2 t0=$3
	sleep 2
	# shellcheck disable=SC2046
	set -- $(counts) $(now)
	h1=$1 w1=$2 t1=$3
	ref=$(awk "BEGIN { printf \"%.1f\", ($h1 - $h0) / $n }")
}
measure
# less the read of the second INFO call
rt=$(awk "BEGIN { printf \"%.2f\", ($w1 - $w0 - 1) / ($ref + 0.001) }")
check "round trips" "$(running) == $n && $ref >= 5 && $rt <= 1.5" \
	"$n resources: $((h1 - h0)) renewals in $((t1 - t0)) ms, $ref refreshes, $((w1 - w0 - 1)) reads by Redis: $rt round trips per refresh"

# which resources each call names, over 2.5 s
timeout 2.5 redis-cli -s "$sock" MONITOR >"$tmp/monitor.out" 2>/dev/null
# (a renewal out of turn, after a decrease or a demand shift, may split
# the links of a slot over two round trips for a while: a link renewed
# alone is an rl_lease, at most 5 % of {g}'s renewals)
# shellcheck disable=SC2046 # six numbers
set -- $(awk -v ng="$ng" '
	/"FCALL" "rl_lease_many"/ { many++; k = gsub(/"rl:\{\{g\}\.[0-9]*\}:cfg"/, "")
		named += k; if (k == ng) full++; if (/"rl:\{r[0-9]*\}:/) other++ }
	/"FCALL" "rl_lease" / { one++; if (/\{\{g\}/) g1++ }
	END { print many + 0, full + 0, one + 0, g1 + 0, other + 0,
		named / (many + !many) }' "$tmp/monitor.out")
check "co-located" "$1 >= 12 && $4 <= 0.05 * $1 * $6 && $5 == 0 && $6 >= $ng * 0.75 && $3 >= 12 * ($n - $ng)" \
	"in 2.5 s: $1 rl_lease_many calls naming $6 resources on average, $2 of them all $ng of {g}, $5 another; $3 rl_lease calls, $4 of them for a resource of {g}"
# The round trips in MONITOR (its lines closer than 5 ms), among them
# those that renew at least half as many as the largest (a renewal after
# a decrease goes alone, a quarter of a refresh after the others): for
# each, "F" and its FCALLs, and "G" and the time from the end of the
# last such to its start. median KIND: the median of KIND, and how many.
trips()
{
	awk '{
		t = $1 * 1000
		if (!n || t - e[n] > 5) { n++; b[n] = t; c[n] = 0; f[n] = 0 }
		e[n] = t; c[n]++
		if (/"FCALL"/) f[n]++
	}
	END {
		for (i = 1; i <= n; i++) if (c[i] > mx) mx = c[i]
		for (i = 1; i <= n; i++) {
			if (c[i] * 2 < mx) continue
			print "F", f[i]
			if (p) printf "G %.2f\n", b[i] - e[p]
			p = i
		}
	}' "$tmp/monitor.out"
}
median()
{
	trips | awk -v k="$1" '$1 == k { print $2 }' | sort -n |
		awk '{ v[NR] = $1 } END { printf "%.1f %d\n", v[int((NR + 1) / 2)], NR }'
}
one=$((n - ng + 1))
calls=$(median F)
check "one call per slot" "${calls#* } >= 15 && ${calls% *} == $one" \
	"$ng resources of one slot and $((n - ng)) of their own: ${calls% *} FCALLs in the median round trip of ${calls#* } (one per slot: $one; one per resource: $n)"
# A round trip comes a refresh after the last, jittered by 0.9-1.1: the
# links it renews share one draw. Each with its own, a round trip of
# many came back after the least of theirs: 0.92 of a refresh. On a
# loaded machine a round trip's lines spread, which shortens the time
# from one's end to the next one's start: 96.7 ms in a full local CI run
# (beside check-fresh), 95.5 beside two busy loops; 99.5-104.7 idle.
gap=$(median G)
check "a round trip a refresh" "${gap#* } >= 15 && ${gap% *} >= 94" \
	"the median time between two round trips: ${gap% *} ms of a 100 ms refresh (${gap#* } of them; at least 94; 92 when each link drew its own)"

# {g}.7 lost by Redis: its link configures it again, the others go on
mark=$(wc -l <"$tmp/h1.log")
timeout 1 redis-cli -s "$sock" MONITOR >"$tmp/monitor.out" 2>/dev/null &
sleep 0.1
redis-cli -s "$sock" DEL 'rl:{{g}.7}:cfg' 'rl:{{g}.7}:epoch' \
	'rl:{{g}.7}:members' >/dev/null
wait $!
back=$(redis-cli -s "$sock" EXISTS 'rl:{{g}.7}:cfg')
# rates set after the loss: a 0 for a link other than g7 fails
zeros=$(tail -n +"$mark" "$tmp/h1.log" | awk '$2 == 0 && $3 != "g7"' | wc -l)
# the resources configured again: {g}.7's alone
conf=$(grep '"FCALL" "rl_config"' "$tmp/monitor.out" |
	grep -o '"rl:{[^"]*}:cfg"' | sort -u | tr -d '"' | tr '\n' ' ')
check "errors per resource" "$back == 1 && $zeros == 0 && $(running) >= $n - 1" \
	"{g}.7's keys deleted, its renewal in a call of $ng: configured again by its link (cfg there: $back); $zeros other links paused; $(running) of $n running"
check "error of one in a call" "\"$conf\" == \"rl:{{g}.7}:cfg \"" \
	"the resources configured again after {g}.7's RLNOCONF: ${conf:-none}(its own only)"
# The renewal made again at once after rl_config reports the demand the
# refused one reported: a window of a few ms would say 0 or several times
# the demand, and a 0 would lower the limiter to its floor at once, and,
# in the learning period that follows a loss, Redis grants no more than
# the host runs at.
# shellcheck disable=SC2046 # two numbers
set -- $(awk '/"FCALL" "rl_config"/ && /"rl:\{\{g\}\.7\}:cfg"/ { conf = 1; next }
	/"FCALL" "rl_lease/ && /"rl:\{\{g\}\.7\}:cfg"/ {
		split($0, f, /" "/)
		for (i = 4; i < 4 + f[3]; i++)
			if (f[i] == "rl:{{g}.7}:cfg") p = (i - 4) / 3
		w = f[4 + f[3] + 5 * p + 1]
		if (conf) { print last, w; exit }
		last = w
	}' "$tmp/monitor.out")
check "demand after a loss" "${2:-x} == ${1:-y}" \
	"{g}.7's renewal refused with RLNOCONF reported ${1:-none}, the one after rl_config ${2:-none}"

# an older library, without rl_lease_many: one call per resource (g7
# may still be in the learning period of its loss, at 0)
grep -v "register_function('rl_lease_many'" "$lua" |
	redis-cli -s "$sock" -x FUNCTION LOAD REPLACE >/dev/null
mark=$(wc -l <"$tmp/h1.log")
sleep 0.5
timeout 1 redis-cli -s "$sock" MONITOR >"$tmp/monitor.out" 2>/dev/null
# shellcheck disable=SC2046 # three numbers
set -- $(awk '/"FCALL" "rl_lease_many"/ { many++ }
	/"FCALL" "rl_lease" .*"rl:\{\{g\}\./ { g++
		if (match($0, /"rl:\{\{g\}\.[0-9]*\}:cfg"/)) seen[substr($0, RSTART, RLENGTH)] = 1 }
	END { for (k in seen) d++; print many + 0, g + 0, d + 0 }' "$tmp/monitor.out")
zeros=$(tail -n +"$mark" "$tmp/h1.log" | awk '$2 == 0 && $3 != "g7"' | wc -l)
said=$(grep -c 'rl_lease_many: .*renewing one resource a call' "$tmp/h1.out")
check "older library" "$1 == 0 && $3 == $ng && $2 >= 5 * $ng && $zeros == 0 && $said == 1" \
	"library without rl_lease_many, over 1 s: $1 rl_lease_many calls, $2 rl_lease calls for the $3 of $ng resources of {g}; $zeros other links paused; said $said time"

kill "$apid"
rc=0
wait "$apid" || rc=$?
apid=''
check "SIGTERM" "$rc == 0" "agent exits $rc"
