#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Redis Cluster (cluster = yes): three primaries on loopback ports made
# with redis-cli --cluster create, two rlsyncd agents (rlsyncd-fake, one
# simulated limiter per link) with 100 resources each of 1000/s, given
# one seed node. Checks: the library loaded on every primary by the
# agents, the resources spread over the three shards, every resource
# shared 500/500; then 1500 slots resharded from the first primary to the
# second during load (redis-cli --cluster reshard: MIGRATING/IMPORTING,
# MIGRATE): no resource lost (all keys there, every link still at its
# share), the MOVED replies stop once the agents read the new slot map,
# and the sum of the rates the agents set per resource never exceeds
# 1000; a slot left half migrated (CLUSTER SETSLOT MIGRATING/IMPORTING,
# MIGRATE) makes the old node answer ASK, which the agents follow; the
# last 10 resources are co-located by a hash tag ({g}.91 to {g}.100, one
# slot, renewed in one call of the ten), and their slot is left half
# migrated at the same time with half of them moved: the old node
# refuses their call of ten (TRYAGAIN), and the agents renew them one a
# call, following ASK for those moved. Then
# the first primary, which has a replica (a fourth node), is killed with
# kill -9 (cluster-node-timeout 1 s, lease 6 s): its replica is promoted
# and the agents follow it (the slot map read again at once, from a node
# other than the seed, the dead one), so no link's rate drops to its
# safe rate (0). Run by selftests/global/run.sh with RLSYNCD_FAKE (the
# binary).
set -u

suite='cluster'
# shellcheck source=selftests/global/lib.sh
. "$(dirname "$0")/lib.sh"
nres=100 ng=10

cli() { p=$1; shift; redis-cli -h 127.0.0.1 -p "$p" "$@"; }
info() { cli "$1" INFO "$2" | tr -d '\r' | sed -n "s/^$3:\(count=\)\{0,1\}\([0-9]*\).*/\2/p"; }
# rates: each link's last rate on each host, "HOST NAME RATE"
rates()
{
	for h in h1 h2; do
		awk -v h="$h" '{ r[$3] = $2 } END { for (n in r) print h, n, r[n] }' \
			"$tmp/$h.log"
	done
}
# shared: the resources whose both hosts run at 400..600/s
shared()
{
	rates | awk '$3 >= 400 && $3 <= 600 { c[$2]++ }
		END { for (n in c) if (c[n] == 2) k++; print k + 0 }'
}

# start_nodes TRY: four nodes on free ports (and their cluster bus
# ports, +10000); 0 when all answer, 1 when one could not bind (a port
# taken since port_base looked), with every node stopped.
start_nodes()
{
	port_seed=$(($$ + $1 * 1009))
	base=$(port_base 0 1 2 3 10000 10001 10002 10003)
	p1=$base p2=$((base + 1)) p3=$((base + 2)) p4=$((base + 3))
	rpids=''
	for p in $p1 $p2 $p3 $p4; do
		redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
			--cluster-config-file "$tmp/nodes-$p.conf" --dir "$tmp" \
			--cluster-node-timeout 1000 --repl-diskless-sync yes \
			--repl-diskless-sync-delay 0 \
			--save '' --appendonly no --logfile "$tmp/redis-$p.log" &
		rpids="$rpids $!"
	done
	# shellcheck disable=SC2086 # rpids: words
	set -- $rpids
	for p in $p1 $p2 $p3 $p4; do
		i=0
		until cli "$p" PING >/dev/null 2>&1; do
			i=$((i + 1))
			if ! kill -0 "$1" 2>/dev/null; then
				# shellcheck disable=SC2086 # rpids: words
				kill -9 $rpids 2>/dev/null
				wait 2>/dev/null
				failed=$tmp/redis-$p.log
				return 1
			fi
			if [ "$i" -ge 200 ]; then
				echo "not ok - cluster: no redis on $p after 10 s:"
				tail -n 5 "$tmp/redis-$p.log" | sed 's/^/#   /'
				exit 1
			fi
			sleep 0.05
		done
		shift
	done
}
for try in 1 2 3 4; do
	start_nodes "$try" && break
	if [ "$try" = 4 ]; then
		echo "not ok - cluster: redis-server exited 4 times:"
		tail -n 5 "$failed" | sed 's/^/#   /'
		exit 1
	fi
	rm -f "$tmp"/nodes-*.conf
done
if ! redis-cli --cluster create "127.0.0.1:$p1" "127.0.0.1:$p2" \
	"127.0.0.1:$p3" --cluster-yes >"$tmp/create.out" 2>&1; then
	echo "not ok - cluster create:"
	sed 's/^/#   /' "$tmp/create.out"
	exit 1
fi
i=0
until cli "$p1" CLUSTER INFO | grep -q 'cluster_state:ok' &&
	cli "$p3" CLUSTER INFO | grep -q 'cluster_state:ok'; do
	i=$((i + 1))
	[ "$i" -lt 200 ] || { echo "not ok - cluster: state not ok"; exit 1; }
	sleep 0.05
done
# the fourth node, a replica of the first
if ! redis-cli --cluster add-node "127.0.0.1:$p4" "127.0.0.1:$p1" \
	--cluster-slave --cluster-master-id "$(cli "$p1" CLUSTER MYID)" \
	>"$tmp/add.out" 2>&1; then
	echo "not ok - cluster add-node (a replica):"
	tail -n 5 "$tmp/add.out" | sed 's/^/#   /'
	exit 1
fi

set --
i=1
while [ "$i" -le "$nres" ]; do
	if [ "$i" -gt $((nres - ng)) ]; then
		set -- "$@" "g$i@{g}.$i=1000/s"
	else
		set -- "$@" "r$i=1000/s"
	fi
	i=$((i + 1))
done
echo 5000 >"$tmp/demand"
t0=$(date +%s%3N)
for h in h1 h2; do
	: >"$tmp/$h.log"
	RLS_FAKE_NAMES=1 RLS_FAKE_DEMAND=$tmp/demand RLS_FAKE_OUT=$tmp/$h.log \
		"$d" --lua "$lua" -r "127.0.0.1:$p1" --cluster yes -H "$h" \
		-S '' -l 6s -R 200ms -T 0s "$@" >"$tmp/$h.out" 2>&1 &
	pids="$pids $!"
done

i=0
until [ "$(shared)" -eq "$nres" ] || [ "$i" -ge 200 ]; do
	i=$((i + 1))
	sleep 0.1
done
ms=$(($(date +%s%3N) - t0))
libs=0
for p in $p1 $p2 $p3; do
	cli "$p" FUNCTION LIST LIBRARYNAME ratelimit | grep -q rl_lease &&
		libs=$((libs + 1))
done
k1=$(cli "$p1" DBSIZE) k2=$(cli "$p2" DBSIZE) k3=$(cli "$p3" DBSIZE)
m0=$(info "$p1" errorstats errorstat_MOVED)
check "start" "${m0:-0} == 0 && $(shared) == $nres && $libs == 3 && $k1 > 0 && $k2 > 0 && $k3 > 0 && $k1 + $k2 + $k3 == 3 * $nres" \
	"$(shared) of $nres resources shared 500/500 after $ms ms (learning 6 s); ${m0:-0} MOVED (the slots rlsyncd computes are Redis's); library on $libs of 3 primaries (loaded by the agents); keys per shard $k1 / $k2 / $k3"

# reshard during load
id1=$(cli "$p1" CLUSTER MYID) id2=$(cli "$p2" CLUSTER MYID)
t1=$(date +%s%3N)
if ! redis-cli --cluster reshard "127.0.0.1:$p1" --cluster-from "$id1" \
	--cluster-to "$id2" --cluster-slots 1500 --cluster-yes \
	>"$tmp/reshard.out" 2>&1; then
	echo "not ok - cluster reshard:"
	tail -n 5 "$tmp/reshard.out" | sed 's/^/#   /'
fi
rms=$(($(date +%s%3N) - t1))
sleep 1
m1=$(info "$p1" errorstats errorstat_MOVED)
a1=$(info "$p1" errorstats errorstat_ASK)
sleep 1
m2=$(info "$p1" errorstats errorstat_MOVED)
k1b=$(cli "$p1" DBSIZE) k2b=$(cli "$p2" DBSIZE) k3b=$(cli "$p3" DBSIZE)
moved=$((k2b - k2))
check "slots migrated" "$moved > 0 && $k1b + $k2b + $k3b == 3 * $nres && $(shared) == $nres" \
	"1500 slots moved in $rms ms: $((moved / 3)) resources to the second shard; keys $k1b / $k2b / $k3b (all $((3 * nres)) there); $(shared) of $nres still shared 500/500"
check "redirections" "${m1:-0} == ${m2:-0}" \
	"MOVED replies ${m0:-0} before, ${m1:-0} 1 s after the reshard, ${m2:-0} 1 s later (the agents route by the new map); ASK ${a1:-0}"

# The primary among p1, p2, p3 that holds keys of slot $1 (p1 if none).
slot_holder()
{
	h=$p1
	for p in $p1 $p2 $p3; do
		[ "$(cli "$p" CLUSTER COUNTKEYSINSLOT "$1")" -gt 0 ] && h=$p
	done
	echo "$h"
}

# Start moving slot $1 from node $2 to node $3: IMPORTING, then MIGRATING.
slot_move_start()
{
	cli "$3" CLUSTER SETSLOT "$1" IMPORTING "$(cli "$2" CLUSTER MYID)" >/dev/null
	cli "$2" CLUSTER SETSLOT "$1" MIGRATING "$(cli "$3" CLUSTER MYID)" >/dev/null
}

# one slot left half migrated for a second: its keys on the new node,
# the old one answering ASK, which the agents follow with ASKING
slot=$(cli "$p1" CLUSTER KEYSLOT 'rl:{r1}:cfg')
src=$(slot_holder "$slot")
dst=$p3
[ "$src" = "$p3" ] && dst=$p1
did=$(cli "$dst" CLUSTER MYID)
a0=$(info "$src" errorstats errorstat_ASK)
slot_move_start "$slot" "$src" "$dst"
cli "$src" MIGRATE 127.0.0.1 "$dst" "" 0 5000 KEYS 'rl:{r1}:cfg' \
	'rl:{r1}:epoch' 'rl:{r1}:members' >/dev/null
# and {g}'s, half of its resources moved
gslot=$(cli "$p1" CLUSTER KEYSLOT "rl:{{g}.$nres}:cfg")
gsrc=$(slot_holder "$gslot")
gdst=$p2
[ "$gsrc" = "$p2" ] && gdst=$p3
gdid=$(cli "$gdst" CLUSTER MYID)
t0=$(info "$gsrc" errorstats errorstat_TRYAGAIN)
slot_move_start "$gslot" "$gsrc" "$gdst"
set --
i=$((nres - ng + 1))
while [ "$i" -le $((nres - ng / 2)) ]; do
	set -- "$@" "rl:{{g}.$i}:cfg" "rl:{{g}.$i}:epoch" "rl:{{g}.$i}:members"
	i=$((i + 1))
done
cli "$gsrc" MIGRATE 127.0.0.1 "$gdst" "" 0 5000 KEYS "$@" >/dev/null
sleep 1
a1=$(info "$src" errorstats errorstat_ASK)
t1=$(info "$gsrc" errorstats errorstat_TRYAGAIN)
# the least lease left of {g}'s members, each read where its keys are
# (ASKING on the importing node): renewed during the migration if above
# a lease (6 s) less 1 s
gleft=$(j=$((nres - ng + 1))
	while [ "$j" -le "$nres" ]; do
		k="rl:{{g}.$j}"
		if [ "$j" -lt "$i" ]; then
			printf 'ASKING\nFCALL_RO rl_info 3 %s:cfg %s:epoch %s:members\n' \
				"$k" "$k" "$k" | cli "$gdst"
		else
			cli "$gsrc" FCALL_RO rl_info 3 "$k:cfg" "$k:epoch" "$k:members"
		fi
		j=$((j + 1))
	done | sed -n 's/.*left_ms=\([0-9]*\).*/\1/p' |
	awk '{ n++; if (!m || $1 < m) m = $1 } END { print n + 0, m + 0 }')
# the migration of {g} ends: the rest of its keys moved, then the slot
set --
while [ "$i" -le "$nres" ]; do
	set -- "$@" "rl:{{g}.$i}:cfg" "rl:{{g}.$i}:epoch" "rl:{{g}.$i}:members"
	i=$((i + 1))
done
cli "$gsrc" MIGRATE 127.0.0.1 "$gdst" "" 0 5000 KEYS "$@" >/dev/null
# each slot's new owner told first, then the old one (else for a moment
# the old one sends to the new, which sends back: MOVED twice)
cli "$dst" CLUSTER SETSLOT "$slot" NODE "$did" >/dev/null
cli "$src" CLUSTER SETSLOT "$slot" NODE "$did" >/dev/null
cli "$gdst" CLUSTER SETSLOT "$gslot" NODE "$gdid" >/dev/null
cli "$gsrc" CLUSTER SETSLOT "$gslot" NODE "$gdid" >/dev/null
sleep 0.5
r1=$(rates | awk '$2 == "r1" && $3 >= 400 && $3 <= 600' | wc -l)
g=$(rates | awk '$2 ~ /^g/ && $3 >= 400 && $3 <= 600' | wc -l)
check "ASK" "${a1:-0} > ${a0:-0} && $r1 == 2 && $(shared) == $nres" \
	"slot $slot of r1 half migrated for 1 s: $((${a1:-0} - ${a0:-0})) ASK replies followed with ASKING; r1 still 500/500 on both hosts, $(shared) of $nres shared"
check "co-located, migrating" "${t1:-0} > ${t0:-0} && $g == 2 * $ng && ${gleft% *} == 2 * $ng && ${gleft#* } > 5000" \
	"slot $gslot of the $ng resources of {g} half migrated for 1 s, $((ng / 2)) of them moved: their call of $ng refused $((${t1:-0} - ${t0:-0})) times (TRYAGAIN), then one a call; ${gleft% *} members, the least lease left ${gleft#* } ms of 6000 (renewed meanwhile); $((g / 2)) of $ng still 500/500 on both hosts"

# (rl_lease names only the keys it uses, all on the importing node after
# MIGRATE: no TRYAGAIN there)
errs=$(cat "$tmp/h1.out" "$tmp/h2.out" | grep -vc 'has no kernel lease')
check "quiet" "$errs == 0" "$errs lines of errors from the agents (a TRYAGAIN would be one)"
[ "$errs" -eq 0 ] || grep -hv 'has no kernel lease' "$tmp/h1.out" "$tmp/h2.out" |
	head -n 5 | sed 's/^/#   /'

# kill -9 of the first primary (the seed), its replica in sync
i=0
until cli "$p4" INFO replication | grep -q 'master_link_status:up' &&
	cli "$p1" INFO replication | grep -q 'state=online'; do
	i=$((i + 1))
	[ "$i" -lt 200 ] || { echo "not ok - cluster: replica not in sync in 10 s"; break; }
	sleep 0.05
done
on1=$(($(cli "$p1" DBSIZE) / 3))
# shellcheck disable=SC2086 # rpids: words
set -- $rpids
tk=$(now)
kill -9 "$1"
tp=-1
while [ $(($(now) - tk)) -le 15000 ]; do
	if cli "$p4" ROLE 2>/dev/null | head -n 1 | grep -qx master; then
		tp=$(now)
		break
	fi
	sleep 0.02
done
check "failover" "$tp >= 0" \
	"the replica promoted itself $((tp - tk)) ms after kill -9 of the primary holding $on1 of the resources (cluster-node-timeout 1000 ms)"
# every link of those resources renewed since the promotion at its share
sleep 3
te=$(now)
# the least rate any link ran at from the kill on (the rate it ran at
# then, and every one set since), and the links at their share at the end
# shellcheck disable=SC2046 # the figures: words
set -- $(for h in h1 h2; do sed "s/\$/ $h/" "$tmp/$h.log"; done | sort -n |
	awk -v a="$tk" '$1 <= a { cur[$3 " " $4] = $2; next }
		{ k = $3 " " $4; cur[k] = $2; if (!(k in m) || $2 < m[k]) m[k] = $2 }
		END { lo = -1
			for (k in cur) { v = (k in m) && m[k] < cur[k] ? m[k] : cur[k]
				if (lo < 0 || v < lo) { lo = v; who = k } }
			printf "%.3f %s\n", lo, who }')
check "failover: no rate drops" "$1 > 0 && $(shared) == $nres" \
	"the least rate a link ran at from the kill on: $1/s ($2 of $3; safe rate 0, share 500/s); $(shared) of $nres resources shared 500/500 $((te - tp)) ms after the promotion"

max=$(for h in h1 h2; do sed "s/\$/ $h/" "$tmp/$h.log"; done | sort -n |
	awk '{ r[$3 " " $4] = $2; s[$3] = 0 }
	     { t = 0; for (k in r) { split(k, a, " "); if (a[1] == $3) t += r[k] }
	       if (t > m) m = t }
	     END { printf "%.3f", m }')
check "global bound" "$max <= 1000.001" \
	"largest sum of the rates set for one resource over the run (the failover too): $max of 1000"
echo "# the agents' lines on the failover (h1):"
grep -v 'has no kernel lease' "$tmp/h1.out" | sed 's/^/#   /' | head -n 8
# shellcheck disable=SC2086 # the pids, one word each
kill $pids
rc=0
for p in $pids; do wait "$p" || rc=$?; done
pids=''
check "SIGTERM" "$rc == 0" "agents exit $rc"
