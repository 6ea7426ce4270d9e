#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Many resources per host: one rlsyncd agent (rlsyncd-fake, one simulated
# limiter per link) with 50 resources on its own redis-server renews
# them all in one pipelined round trip per refresh (the reads of Redis,
# INFO stats total_reads_processed, against the rl_lease calls of INFO
# commandstats; 50 calls fit in one read of 16 KB), and an
# error stays with its resource: one resource's keys deleted from Redis,
# that link alone configures it again while the 49 others keep their
# rates. Run by selftests/global/run.sh with RLSYNCD_FAKE (the binary).
set -u

suite='pipeline'
# shellcheck source=selftests/global/lib.sh
. "$(dirname "$0")/lib.sh"
n=50

fcalls()
{
	redis-cli -s "$sock" INFO commandstats | tr -d '\r' |
		sed -n 's/^cmdstat_fcall:calls=\([0-9]*\).*/\1/p'
}
reads()
{
	redis-cli -s "$sock" INFO stats | tr -d '\r' |
		sed -n 's/^total_reads_processed:\([0-9]*\).*/\1/p'
}
# running: the links whose last rate is above 0
running()
{
	awk '{ r[$3] = $2 } END { for (k in r) if (r[k] > 0) c++; print c + 0 }' \
		"$tmp/h1.log"
}

redis-server --port 0 --unixsocket "$sock" --dir "$tmp" --save '' \
	--appendonly no --logfile "$tmp/redis.log" &
rpid=$!
i=0
until redis-cli -s "$sock" PING >/dev/null 2>&1; do
	i=$((i + 1))
	[ "$i" -lt 100 ] || { echo "not ok - pipeline: no redis"; exit 1; }
	sleep 0.05
done

set --
i=1
while [ "$i" -le "$n" ]; do
	set -- "$@" "r$i=1000/s"
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

c0=$(fcalls) w0=$(reads)
sleep 2
c1=$(fcalls) w1=$(reads)
ref=$(awk "BEGIN { printf \"%.1f\", ($c1 - $c0) / $n }")
# less the read of each INFO call (two) between the two counts
rt=$(awk "BEGIN { printf \"%.2f\", ($w1 - $w0 - 2) / ($ref + 0.001) }")
check "round trips" "$(running) == $n && $ref >= 5 && $rt <= 1.5" \
	"$n resources: $((c1 - c0)) rl_lease in 2 s, $ref refreshes, $((w1 - w0 - 2)) reads by Redis: $rt round trips per refresh"

# r7 lost by Redis: its link configures it again, the others go on
mark=$(wc -l <"$tmp/h1.log")
redis-cli -s "$sock" DEL 'rl:{r7}:cfg' 'rl:{r7}:epoch' 'rl:{r7}:members' >/dev/null
sleep 1
back=$(redis-cli -s "$sock" EXISTS 'rl:{r7}:cfg')
# rates set after the loss: a 0 for a link other than r7 fails
zeros=$(tail -n +"$mark" "$tmp/h1.log" | awk '$2 == 0 && $3 != "r7"' | wc -l)
check "errors per resource" "$back == 1 && $zeros == 0 && $(running) >= $n - 1" \
	"r7's keys deleted: configured again by its link (cfg there: $back); $zeros other links paused; $(running) of $n running"

kill "$apid"
rc=0
wait "$apid" || rc=$?
apid=''
check "SIGTERM" "$rc == 0" "agent exits $rc"
