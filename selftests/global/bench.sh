#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# The cost of many resources per host in lease mode: one rlsyncd agent
# (rlsyncd-fake, simulated limiters) with 1, 10, 100 and 1000 resources
# on its own redis-server (unix socket), refresh 500 ms, measured over a
# few seconds once all are renewed:
#   round trips per refresh   the agent's write(2) calls (/proc/PID/io
#                             syscw; state files off, nothing printed)
#   Redis reads per refresh   INFO stats total_reads_processed
#   agent CPU per refresh     /proc/PID/schedstat (time on a CPU)
#   Redis CPU per resource    INFO cpu used_cpu_user + used_cpu_sys, less
#                             that of Redis idle, per rl_lease (INFO
#                             commandstats cmdstat_fcall)
#   selftests/global/bench.sh [RLSYNCD_FAKE]
# (make bench-global). COUNTS="1 10" and SECS=4 change what is run.
set -eu

d=${1:-${RLSYNCD_FAKE:-build/global/rlsyncd-fake}}
suite='bench'
# shellcheck source=selftests/global/lib.sh
. "$(dirname "$0")/lib.sh"
counts=${COUNTS:-1 10 100 1000}
secs=${SECS:-4}

redis-server --port 0 --unixsocket "$sock" --dir "$tmp" --save '' \
	--appendonly no --logfile "$tmp/redis.log" &
rpid=$!
i=0
until redis-cli -s "$sock" PING >/dev/null 2>&1; do
	i=$((i + 1))
	[ "$i" -lt 100 ] || { echo "bench: no redis" >&2; exit 1; }
	sleep 0.05
done

# info FIELD: its value in INFO ALL (one INFO call)
info()
{
	redis-cli -s "$sock" INFO all | tr -d '\r' |
		sed -n "s/^$1:\(calls=\)\{0,1\}\([0-9.]*\).*/\2/p"
}
# snap: "fcalls reads rcpu syscw ns" now, with one INFO call
snap()
{
	redis-cli -s "$sock" INFO all | tr -d '\r' | awk -F'[:=,]' '
		$1 == "cmdstat_fcall" { f = $3 }
		$1 == "total_reads_processed" { r = $2 }
		$1 == "used_cpu_user" || $1 == "used_cpu_sys" { c += $2 }
		END { printf "%d %d %.6f", f, r, c }'
	echo " $(sed -n 's/^syscw: //p' "/proc/$apid/io")" \
		"$(cut -d' ' -f1 "/proc/$apid/schedstat")"
}

# Redis's own CPU when idle (its timers), taken off below
apid=$$
a=$(snap)
sleep "$secs"
b=$(snap)
# shellcheck disable=SC2086 # five numbers each
idle=$(echo $a $b | awk '{ printf "%.6f", $8 - $3 }')
apid=''

echo 100 >"$tmp/demand"
printf '%-10s %-12s %-12s %-16s %-16s\n' resources "round trips" "redis reads" \
	"agent CPU" "redis CPU"
printf '%-10s %-12s %-12s %-16s %-16s\n' "" "/refresh" "/refresh" "ms/refresh" \
	"us/resource"
for n in $counts; do
	redis-cli -s "$sock" FLUSHALL >/dev/null
	redis-cli -s "$sock" CONFIG RESETSTAT >/dev/null
	set --
	i=1
	while [ "$i" -le "$n" ]; do
		set -- "$@" "r$i=1000/s"
		i=$((i + 1))
	done
	RLS_FAKE_DEMAND=$tmp/demand "$d" --lua "$lua" -r "unix:$sock" -H h1 \
		-S '' -l 5s -R 500ms "$@" >"$tmp/out" 2>&1 &
	apid=$!
	# every resource renewed once, then a settled second
	i=0
	until [ "$(info cmdstat_fcall)" -ge $((3 * n)) ] 2>/dev/null; do
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
	# shellcheck disable=SC2086 # five numbers each
	echo $a $b | awk -v n="$n" -v idle="$idle" '{
		calls = $6 - $1; ref = calls / n
		printf "%-10d %-12.2f %-12.2f %-16.3f %-16.2f\n", n,
			($9 - $4) / ref, ($7 - $2 - 2) / ref,
			($10 - $5) / 1e6 / ref, ($8 - $3 - idle) * 1e6 / calls }'
	# (the INFO call of each snapshot adds a read or two, not counted)
done
