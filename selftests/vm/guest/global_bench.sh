#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# make bench, section "global" (Documentation/performance.md): global
# limits with the real module, run by bench.sh when the rig copied in
# rlsyncd, its client and redis-server (selftests/vm/run.sh). Writes
# DIR/global.csv:
#   batch: Redis round trips per local grant, by refresh interval, three
#          hosts taking 2 tokens an acquire from a 1500/s bucket
#   lease: three hosts saturating 2000/s, one agent killed -9 halfway;
#          the largest overshoot over any window of the sum of the grants
#          above rate x window (the bound allows the bursts, 100 ms of
#          the rate)
#   global_bench.sh DIR SCALE
set -u

dir=$1
scale=${2:-1}
G=/global
SYS=/sys/kernel/ratelimit
T=/tmp/gbench
csv=$dir/global.csv
pids=''
if [ ! -x $G/rlsyncd ] || [ ! -x $G/rlgclient ] || [ ! -x /redis/redis-server ]; then
	echo "global: no rlsyncd, rlgclient or redis-server in the guest"
	exit 0
fi
mkdir -p $T
secs=$(awk "BEGIN { s = int(6 * $scale); print s < 2 ? 2 : s }")

finish()
{
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	pids=''
}

LD_LIBRARY_PATH=/lib/x86_64-linux-gnu /redis/redis-server --port 0 \
	--unixsocket $T/r.sock --dir $T --save '' --logfile $T/redis.log &
rpid=$!
while [ ! -S $T/r.sock ]; do sleep 0.05; done

# hosts MODE RES RATE REFRESH SIZE: three agents and their clients
hosts()
{
	for h in h1 h2 h3; do
		$G/rlsyncd --lua $G/ratelimit.lua -r unix:$T/r.sock -H "$h" \
			-S $T/st -m "$1" -l 2500ms -R "$4" -T 0s \
			"$2.$h@$2=$3" >$T/$h.out 2>&1 &
		pids="$pids $!"
	done
	for h in h1 h2 h3; do
		while [ ! -e "$SYS/$2.$h" ]; do sleep 0.05; done
		$G/rlgclient "$2.$h" block "$5" &
		pids="$pids $!"
	done
}

# snap RES: "MS SUM" of the three hosts' granted counters, at once
snap()
{
	awk 'FILENAME == "/proc/uptime" { ms = int($1 * 1000); next }
	     $1 == "granted" { s += $2 } END { printf "%d %d\n", ms, s }' /proc/uptime \
		$SYS/"$1".h1/stat $SYS/"$1".h2/stat $SYS/"$1".h3/stat
}

echo "mode,refresh_ms,rate_per_s,tokens,grants,round_trips,round_trips_per_grant_pct,overshoot_tokens,overshoot_pct_of_1s" >"$csv"
for r in 100 250 1000; do
	hosts batch "b$r" 1500/s "${r}ms" 2
	sleep 1.5
	c0=$(cat $T/st/b$r.h* | awk -F= '/^calls=/ { s += $2 } END { print s }')
	a=$(snap "b$r")
	sleep "$secs"
	b=$(snap "b$r")
	c1=$(cat $T/st/b$r.h* | awk -F= '/^calls=/ { s += $2 } END { print s }')
	echo "$a $b $c0 $c1" | awk -v r="$r" '{ g = $4 - $2; c = $6 - $5
		printf "batch,%d,1500,%d,%d,%d,%.3f,,\n", r, g, g / 2, c, 100 * c / (g / 2) }' >>"$csv"
	finish
done

# lease: samples every 100 ms; kill -9 of h3's agent halfway
hosts lease lz 2000/s 250ms 10
sleep 3.5	# learning: one lease, 2.5 s
: >$T/samples
i=0
n=$((secs * 10))
while [ "$i" -lt "$n" ]; do
	snap lz >>$T/samples
	[ "$i" -ne $((n / 2)) ] || kill -9 "$(echo "$pids" | awk '{ print $3 }')"
	sleep 0.1
	i=$((i + 1))
done
awk '{ t[NR] = $1; g[NR] = $2 }
	END { for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR; j++) {
		o = g[j] - g[i] - 2000 * (t[j] - t[i]) / 1000
		if (o > m) m = o }
	      printf "lease,250,2000,%d,,,,%.0f,%.2f\n", g[NR] - g[1], m, 100 * m / 2000 }' \
	$T/samples >>"$csv"
finish
kill "$rpid"
wait "$rpid" 2>/dev/null
cat "$csv"
