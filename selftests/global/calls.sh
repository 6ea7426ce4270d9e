#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Redis's time inside one lease renewal, without agents: a private
# redis-server on a unix socket, the library loaded, and redis-benchmark
# (one client) making the same call again and again. Two figures per
# call and per renewal: "in call", usec_per_call of cmdstat_fcall (INFO
# commandstats), Redis's time inside the function (not its event loop
# nor the parsing of the request); "CPU", redis-server's time on a CPU
# (/proc/PID/schedstat) per call, all of it, which a busy machine's
# preemption does not inflate as it does the first:
#   lease-1      rl_lease on a resource of one member (the exact path)
#   lease-N      rl_lease on a resource of N members (default 100: above
#                the 64 of the exact path, so O(1) from a cached round),
#                hosts drawn at random among them
#   round-N      rl_lease on that resource, its cached round deleted
#                before each call: a round of N members each call (the
#                first rewrites what each member is counted for)
#   many-N       rl_lease_many of 34 resources of one hash tag, N members
#                each (a host's share of 100 resources on 3 primaries),
#                per call and per renewal
#   empty        an empty function of three keys: the cost of a call
#   lease-N@R    with PACE=R: rl_lease as lease-N, R calls a second for
#                10 s (paced.py), as a fleet's calls come: apart, not as
#                fast as Redis answers, the hosts in turn (each once
#                every N calls); its CPU less what redis-server takes idle
#                (measured over 2 s first). The calls begin 8 s before
#                the 10 s measured (more than a lease): the memberships
#                of the set-up have ended, the hosts renew in turn. At
#                PACE=1000 and MEMBERS=1000, the calls of 1,000 hosts at
#                R = 1 s.
#   many-N@R     with PACE=R: rl_lease_many as many-N, R calls a second
#                for 10 s, each host's 34 renewals in one: at PACE=1000
#                and MEMBERS=1000, what a primary of three serves 1,000
#                hosts x 100 resources at R = 1 s (33,333 renewals a
#                second); replication aside, unless REPLICA=yes.
# Each resource is fair, capacity 10000/s, lease 6 s, refresh 1 s (a
# new round every 0.5 s, or 1 s while steady: among thousands of calls),
# hold 0, out of its learning period.
#   selftests/global/calls.sh [LUA...]
# With several libraries (an older one from git show, say) each round
# runs each of them in turn, so that a shared machine's noise falls on
# all alike. ROUNDS=3, CALLS=20000 (rl_lease; rl_lease_many makes a
# 34th of them), MEMBERS=100 change what is run. With CALLGRIND=yes
# redis-server runs under valgrind's callgrind, and the second figure is
# instead the instructions redis-server ran per call (callgrind's Ir,
# zeroed and dumped around each case with callgrind_control): the same
# from run to run whatever the machine's load, at 50 times the time
# (use CALLS=1000). Its calls being that slow, the refresh is then 100 s
# and the lease 600 s, so that no round falls among them: the O(1) path
# alone. With REPLICA=yes a replica follows the server (on loopback TCP,
# its own process): the server's figures then include streaming every
# write to it, as a cluster's primary does.
set -eu

suite='calls'
d=none
# shellcheck source=selftests/global/lib.sh
. "$(dirname "$0")/lib.sh"
[ $# -gt 0 ] || set -- "$lua"
rounds=${ROUNDS:-3}
calls=${CALLS:-20000}
members=${MEMBERS:-100}
pace=${PACE:-}
nres=34

cg=${CALLGRIND:-no}
lease=6000 refresh=1000
[ "$cg" = no ] || lease=600000 refresh=100000
if [ "$cg" = yes ]; then
	redis_up valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
		--log-file="$tmp/valgrind.log"
else
	# shellcheck disable=SC2119 # no prefix: redis-server itself
	redis_up
fi
[ -z "$pace" ] || [ "$cg" = no ] ||
	{ echo "calls: PACE is not for CALLGRIND" >&2; exit 1; }

cli() { redis-cli -s "$sock" "$@"; }
# replica_up: a replica of the server on loopback TCP, in $rpids; returns
# once its link is up, or exits after 20 s
replica_up()
{
	base=$(port_base 0 1)
	cli CONFIG SET bind 127.0.0.1 port "$base" >/dev/null
	mkdir "$tmp/replica"
	redis-server --port $((base + 1)) --bind 127.0.0.1 \
		--replicaof 127.0.0.1 "$base" --dir "$tmp/replica" --save '' \
		--appendonly no --logfile "$tmp/replica.log" &
	rpids=$!
	i=0
	until redis-cli -p $((base + 1)) INFO replication 2>/dev/null |
		grep -q '^master_link_status:up'; do
		i=$((i + 1))
		[ "$i" -lt 400 ] || { echo "calls: no replica" >&2; exit 1; }
		sleep 0.05
	done
}
[ "${REPLICA:-no}" = no ] || replica_up
# cpu_ns: redis-server's time on a CPU so far, in ns (/proc/PID/schedstat)
cpu_ns() { cut -d' ' -f1 "/proc/$rpid/schedstat"; }
# us: usec_per_call of FCALL since the last CONFIG RESETSTAT
us()
{
	cli INFO commandstats | tr -d '\r' |
		sed -n 's/^cmdstat_fcall:.*usec_per_call=\([0-9.]*\).*/\1/p'
}
# keys RES: rl_lease's three keys of RES
keys() { echo "rl:{$1}:cfg rl:{$1}:epoch rl:{$1}:members"; }
# setup RES N: RES configured, out of learning, with members h0..h(N-1)
# in redis-benchmark's names (__rand_int__: 12 digits)
setup()
{
	# shellcheck disable=SC2046 # three keys
	cli FCALL rl_config 3 $(keys "$1") calls lease 10000 fair "$lease" \
		"$refresh" 0 0 0 >/dev/null
	cli HSET "rl:{$1}:epoch" learn_until 0 >/dev/null
	j=0
	while [ "$j" -lt "$2" ]; do
		printf 'FCALL rl_lease 3 %s h%012d 100 100 1 0\n' "$(keys "$1")" "$j"
		j=$((j + 1))
	done | cli >/dev/null
}
# measure N CMD...: CMD (N calls) run; prints Redis's time inside the
# calls and its CPU (/proc/PID/schedstat: time on a CPU, which a busy
# machine's preemption does not inflate) per call, in us; under
# callgrind, its instructions per call instead of its CPU
measure()
{
	n=$1
	shift
	cli CONFIG RESETSTAT >/dev/null
	if [ "$cg" = yes ]; then
		callgrind_control -z "$rpid" >/dev/null 2>&1
		"$@" >/dev/null
		rm -f "$tmp"/cg.out.*
		callgrind_control -d "$rpid" >/dev/null 2>&1
		i=0
		until ls "$tmp"/cg.out.* >/dev/null 2>&1; do
			i=$((i + 1))
			[ "$i" -lt 100 ] || { echo "calls: no dump" >&2; exit 1; }
			sleep 0.1
		done
		sleep 0.2
		ir=$(sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' \
			"$tmp"/cg.out.* | head -n 1)
		echo "$(us) $ir $n" | awk '{ printf "%.2f %.0f", $1, $2 / $3 }'
		return
	fi
	c0=$(cpu_ns)
	"$@" >/dev/null
	c1=$(cpu_ns)
	echo "$(us) $c0 $c1 $n" | awk '{ printf "%.2f %.2f", $1, ($3 - $2) / 1e3 / $4 }'
}
# bench N ARGS...: redis-benchmark of N calls ARGS, one client (measure())
bench()
{
	n=$1
	shift
	measure "$n" redis-benchmark -s "$sock" -c 1 -n "$n" -r "$members" "$@"
}
# new_rounds N: N calls of rl_lease on the resource big, each after its
# cached round is deleted, so that each computes a round of every member
# (the HDEL is not an FCALL: "in call" is the round's alone)
new_rounds()
{
	j=0
	while [ "$j" -lt "$1" ]; do
		printf 'HDEL rl:{big}:members ""\n'
		printf 'FCALL rl_lease 3 %s h%012d 100 100 1 0\n' \
			"$(keys big)" "$((j % members))"
		j=$((j + 1))
	done | cli
}
# idle_cpu: redis-server's CPU when idle, in ns a second (over 2 s)
idle_cpu()
{
	c0=$(cpu_ns)
	sleep 2
	c1=$(cpu_ns)
	echo $(((c1 - c0) / 2))
}
# paced RATE ARGS...: ARGS called RATE times a second for 8 s, then for
# 10 s measured (paced.py); Redis's time inside the calls and its CPU
# per call less its idle CPU, in us
paced()
{
	n=$(($1 * 10)) rate=$1
	shift
	python3 "$(dirname "$0")/paced.py" "$sock" "$rate" $((rate * 8)) \
		"$members" "$@" >/dev/null
	cli CONFIG RESETSTAT >/dev/null
	c0=$(cpu_ns) t0=$(now)
	got=$(python3 "$(dirname "$0")/paced.py" "$sock" "$rate" "$n" \
		"$members" "$@")
	c1=$(cpu_ns) t1=$(now)
	[ "$got" -ge $((rate * 95 / 100)) ] ||
		echo "calls: $got calls a second of $rate" >&2
	echo "$(us) $c0 $c1 $n $idle_ns $((t1 - t0))" | awk '{
		printf "%.2f %.2f", $1, ($3 - $2 - $5 * $6 / 1000) / 1e3 / $4 }'
}
# row ROUND LIBRARY CASE RENEWALS US CPU: one line, per call and renewal
row()
{
	echo "$@" | awk '{ printf "%-5s %-26s %-16s %9.2f %9.2f %11.2f %11.2f\n",
		$1, $2, $3, $5, $6, $5 / $4, $6 / $4 }'
}

empty='#!lua name=calls_empty
redis.register_function("calls_empty", function(keys, args) return 1 end)'
second=CPU unit=us
[ "$cg" = no ] || second=instr unit=Ir
printf '%-5s %-26s %-16s %9s %9s %11s %11s\n' round library case "in call" \
	"$second" "in call" "$second"
printf '%-5s %-26s %-16s %9s %9s %11s %11s\n' "" "" "" us/call "$unit/call" \
	us/renewal "$unit/renewal"
idle_ns=0
[ -z "$pace" ] || idle_ns=$(idle_cpu)
r=1
while [ "$r" -le "$rounds" ]; do
	for l in "$@"; do
		b=$(basename "$l" | cut -c1-26)
		cli FLUSHALL >/dev/null
		cli FUNCTION FLUSH >/dev/null
		cli -x FUNCTION LOAD REPLACE <"$l" >/dev/null
		echo "$empty" | cli -x FUNCTION LOAD REPLACE >/dev/null
		setup one 1
		# shellcheck disable=SC2046 # three keys
		row "$r" "$b" lease-1 1 $(bench "$calls" FCALL rl_lease 3 \
			$(keys one) h000000000000 100 100 1 0)
		setup big "$members"
		# shellcheck disable=SC2046
		row "$r" "$b" "lease-$members" 1 $(bench "$calls" FCALL rl_lease 3 \
			$(keys big) h__rand_int__ 100 100 1 0)
		# shellcheck disable=SC2046 # two figures
		row "$r" "$b" "round-$members" 1 $(measure "$((calls / 100))" \
			new_rounds "$((calls / 100))")
		# shellcheck disable=SC2046
		[ -z "$pace" ] || row "$r" "$b" "lease-$members@$pace" 1 \
			$(paced "$pace" FCALL rl_lease 3 $(keys big) \
				h__next_int__ 100 100 1 0)
		k='' a='' an=''
		i=1
		while [ "$i" -le "$nres" ]; do
			setup "{g}.$i" "$members"
			k="$k $(keys "{g}.$i")"
			a="$a h__rand_int__ 100 100 1 0"
			an="$an h__next_int__ 100 100 1 0"
			i=$((i + 1))
		done
		# shellcheck disable=SC2046,SC2086 # the keys and arguments: words
		row "$r" "$b" "many-$members" "$nres" $(bench $((calls / nres)) \
			FCALL rl_lease_many $((3 * nres)) $k $a)
		# shellcheck disable=SC2046,SC2086
		[ -z "$pace" ] || row "$r" "$b" "many-$members@$pace" "$nres" \
			$(paced "$pace" FCALL rl_lease_many $((3 * nres)) $k $an)
		# shellcheck disable=SC2046
		row "$r" "$b" empty 1 $(bench "$calls" FCALL calls_empty 3 \
			$(keys one))
done
	r=$((r + 1))
done
