#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# The cost of many resources per host in lease mode: one rlsyncd agent
# (rlsyncd-fake, simulated limiters) with 1, 10, 100 and 1000 resources
# on its own redis-server (unix socket), refresh 500 ms, measured over a
# few seconds once all are renewed; each count twice: resources in slots
# of their own (r1, r2, ...), and co-located by one hash tag ({g}.1,
# {g}.2, ...: one slot, renewed up to 128 a call with rl_lease_many):
#   FCALLs per refresh        INFO commandstats cmdstat_fcall
#   Redis reads per refresh   INFO stats total_reads_processed: the
#                             round trips (a read takes up to 16 KB;
#                             the agent's send(2) calls are not in
#                             /proc/PID/io, which counts write(2))
#   agent CPU per refresh     /proc/PID/schedstat (time on a CPU)
#   Redis CPU per resource    INFO cpu used_cpu_user + used_cpu_sys, less
#                             that of Redis idle, per renewal (one HSET
#                             of its member each: cmdstat_hset)
#   in the call per resource  Redis's time inside FCALL (cmdstat_fcall
#                             usec) per renewal: the function's own work
#   selftests/global/bench.sh [RLSYNCD_FAKE]
# (make bench-global). COUNTS="1 10", TAGS="no yes" (co-located or not)
# and SECS=4 change what is run.
set -eu

d=${1:-${RLSYNCD_FAKE:-build/global/rlsyncd-fake}}
suite='bench'
# shellcheck source=selftests/global/lib.sh
. "$(dirname "$0")/lib.sh"
counts=${COUNTS:-1 10 100 1000}
tags=${TAGS:-no yes}
secs=${SECS:-4}

# shellcheck disable=SC2119 # no prefix: redis-server itself
redis_up

# info FIELD: its value in INFO ALL (one INFO call)
info()
{
	redis-cli -s "$sock" INFO all | tr -d '\r' |
		sed -n "s/^$1:\(calls=\)\{0,1\}\([0-9.]*\).*/\2/p"
}
# snap: "fcalls reads rcpu renewals ns fcall_us" now, with one INFO call
snap()
{
	redis-cli -s "$sock" INFO all | tr -d '\r' | awk -F'[:=,]' '
		$1 == "cmdstat_fcall" { f = $3; u = $5 }
		$1 == "cmdstat_hset" { h = $3 }
		$1 == "total_reads_processed" { r = $2 }
		$1 == "used_cpu_user" || $1 == "used_cpu_sys" { c += $2 }
		END { printf "%d %d %.6f %d %d\n", f, r, c, h, u }' | {
		read -r f r c h u
		echo "$f $r $c $h $(cut -d' ' -f1 "/proc/$apid/schedstat") ${u:-0}"
	}
}

# Redis's own CPU when idle (its timers), taken off below
apid=$$
a=$(snap)
sleep "$secs"
b=$(snap)
# shellcheck disable=SC2086 # six numbers each
idle=$(echo $a $b | awk '{ printf "%.6f", $9 - $3 }')
apid=''

echo 100 >"$tmp/demand"
printf '%-10s %-11s %-10s %-12s %-12s %-12s %-12s\n' resources co-located \
	FCALLs "redis reads" "agent CPU" "redis CPU" "in the call"
printf '%-10s %-11s %-10s %-12s %-12s %-12s %-12s\n' "" "" /refresh \
	"/refresh" "ms/refresh" "us/resource" "us/resource"
for n in $counts; do
for tag in $tags; do
	redis-cli -s "$sock" FLUSHALL >/dev/null
	redis-cli -s "$sock" CONFIG RESETSTAT >/dev/null
	set --
	i=1
	while [ "$i" -le "$n" ]; do
		if [ "$tag" = yes ]; then
			set -- "$@" "r$i@{g}.$i=1000/s"
		else
			set -- "$@" "r$i=1000/s"
		fi
		i=$((i + 1))
	done
	RLS_FAKE_DEMAND=$tmp/demand "$d" --lua "$lua" -r "unix:$sock" -H h1 \
		-S '' -l 5s -R 500ms "$@" >"$tmp/out" 2>&1 &
	apid=$!
	# every resource renewed twice (a configuration writes 8 fields),
	# then a settled second
	i=0
	until [ "$(info cmdstat_hset)" -ge $((10 * n)) ] 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -lt 600 ] || { echo "bench: $n: no renewals" >&2; exit 1; }
		sleep 0.1
	done
	sleep 1
	a=$(snap)
	sleep "$secs"
	b=$(snap)
	kill "$apid"
	wait "$apid" 2>/dev/null || :
	apid=''
	# shellcheck disable=SC2086 # six numbers each
	echo $a $b | awk -v n="$n" -v tag="$tag" -v idle="$idle" '{
		renewals = $10 - $4; ref = renewals / n
		printf "%-10d %-11s %-10.2f %-12.2f %-12.3f %-12.2f %-12.2f\n",
			n, tag, ($7 - $1) / ref, ($8 - $2 - 2) / ref,
			($11 - $5) / 1e6 / ref, ($9 - $3 - idle) * 1e6 / renewals,
			($12 - $6) / renewals }'
	# (the INFO call of each snapshot adds a read or two, not counted)
done
done
