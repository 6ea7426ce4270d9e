#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Global limits end to end, in the QEMU rig's guest with the real module
# (issue #11, Documentation/global.md): a redis-server on a unix socket,
# several "hosts", each an rlsyncd with its own named limiter (api.h1,
# api.h2, api.h3 linked to resource api) and its own client processes
# (rlgclient, selftests/global/client.c). The Makefile installs this as
# build/selftests/ratelimit_rlsyncd_test; selftests/vm/run.sh puts
# redis-server, rlsyncd, rlgclient and ratelimit.lua into the guest.
# Lease 2.5 s, refresh 400 ms (batch mode 250), hold 0: every wait is a
# few of those.
#
# TAP, with the figures on each line. Bounds that must hold are strict
# (the global token bound, a killed agent's fallback, the total while
# Redis is down); convergence times allow the slack each check names, as
# an emulated guest's timing is noisy. What needs the module's lease or
# deposit (RL_IOC_SET_LEASE, RL_IOC_DEPOSIT) skips on a module without it.
# With rl.global=HOST:PORT and rl.ghost=ID on the kernel command line
# (selftests/global/two_guests.sh: two guests, one Redis on the host's
# loopback through QEMU's guestfwd) it runs only the two-guest part: one
# agent, host ID, sharing resource "two" with the other guest.
set -u

G=/global
RS=/redis/redis-server
SYS=/sys/kernel/ratelimit
T=${TMPDIR:-/tmp}/global
STATE=/run/rlsyncd
C=2000		# capacity of resource api, tokens per second
LEASE=2500	# ms
REFRESH=400	# ms: a reply is waited for 200 ms (a slow emulated guest
		# misses 125 often enough that the increases it would apply wait
		# a refresh more: see take_lease() in tools/global/rlsyncd_link.c)
BREFRESH=250	# ms: batch mode's refresh (a batch is that much of the rate)
ID=
GLOBAL_REDIS=
# shellcheck disable=SC2013 # the words of the command line are wanted
for arg in $(cat /proc/cmdline); do
	case $arg in
	rl.global=*) GLOBAL_REDIS=${arg#*=} ;;
	rl.ghost=*) ID=${arg#*=} ;;
	esac
done
pids=''
rpid=''

say() { echo "# $*"; }
# shellcheck source=selftests/vm/guest/tap.sh
. /guest/tap.sh

# shellcheck disable=SC2317 # called by the trap
cleanup()
{
	for p in $pids $rpid; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	# what the agents said, for a failure's reader
	for f in "$T"/*.out "$T"/redis.log; do
		[ -f "$f" ] && sed "s|^|# ${f##*/}: |" "$f" | head -n 20
	done
}
trap cleanup EXIT

if [ ! -x $G/rlsyncd ] || [ ! -x $G/rlgclient ] ||
	{ [ -z "$GLOBAL_REDIS" ] && [ ! -x $RS ]; }; then
	echo "1..0 # SKIP no rlsyncd, rlgclient or redis-server in the guest (libhiredis-dev, redis-server: make deps)"
	exit 4
fi
# Redis and rlsyncd talk over a unix socket: none on a kernel without
# AF_UNIX (CONFIG_UNIX), which has no /proc/net/unix.
if [ -z "$GLOBAL_REDIS" ] && [ ! -e /proc/net/unix ]; then
	echo "1..0 # SKIP no AF_UNIX sockets in this kernel (CONFIG_UNIX): Redis cannot listen"
	exit 4
fi
mkdir -p "$T" "$STATE"
# the guest's loopback, for the TCP address of the bad input test
ifconfig lo 127.0.0.1 up 2>/dev/null || ip link set lo up 2>/dev/null

now() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }
msleep() { sleep "$(awk "BEGIN { print $1 / 1000 }")"; }
# st NAME KEY: KEY of NAME's state file (rlsyncd(8)); 0 if none
st() { v=$(sed -n "s/^$2=//p" "$STATE/$1" 2>/dev/null); echo "${v:-0}"; }
# kkey NAME KEY: line KEY of the limiter's sysfs config or stat
kkey() { sed -n "s/^$2 //p" "$SYS/$1/config" "$SYS/$1/stat" 2>/dev/null; }
granted() { v=$(kkey "$1" granted); echo "${v:-0}"; }
# krate NAME: tokens per second the kernel limiter is set to
krate()
{
	awk '$1 == "rate" { r = $2 } $1 == "period_ns" { p = $2 }
	     END { printf "%.3f", p ? r * 1e9 / p : 0 }' \
		"$SYS/$1/config" 2>/dev/null
}

REDIS=${GLOBAL_REDIS:-unix:$T/r.sock}
start_redis()
{
	[ -z "$GLOBAL_REDIS" ] || return 0
	rm -f "$T/r.sock"
	$RS --port 0 --unixsocket "$T/r.sock" --dir "$T" --save '' \
		--appendonly no --logfile "$T/redis.log" &
	rpid=$!
	i=0
	while [ ! -S "$T/r.sock" ] && [ "$i" -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}

# agent HOST ARGS...: an rlsyncd for host HOST ($! its pid)
agent()
{
	h=$1
	shift
	$G/rlsyncd --lua $G/ratelimit.lua -r "$REDIS" -H "$ID$h" \
		-l ${LEASE}ms -R ${REFRESH}ms -T 0s "$@" >"$T/$h.out" 2>&1 &
	pids="$pids $!"
}

# finish: end the processes of a part (agents leave, limiters pause), so
# that the next part has the guest's two CPUs.
finish()
{
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	pids=''
}

# client NAME ARGS...: an rlgclient once NAME exists ($! its pid)
client()
{
	i=0
	while [ ! -e "$SYS/$1" ] && [ "$i" -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	$G/rlgclient "$@" &
	pids="$pids $!"
}

# wait_for MS CONDITION(awk; h1 h2 h3 = has of api.h1..3, h1 that of
# two.g in the two-guest part): ms, or -1.
# One awk a round: an emulated guest forks slowly.
wait_for()
{
	w0=$(now)
	while :; do
		# shellcheck disable=SC2046 # the state files, one word each
		r=$(awk -v t0="$w0" -v max="$1" '
			FILENAME == "/proc/uptime" { now = int($1 * 1000); next }
			/^has=/ { n = split(FILENAME, p, "."); h[p[n]] = substr($0, 5) + 0 }
			END {
				h1 = h["h1"] + h["g"]; h2 = h["h2"]; h3 = h["h3"]
				if ('"$2"') print now - t0
				else if (now - t0 > max) print -1
			}' /proc/uptime $(ls "$STATE"/api.h[123] "$STATE"/two.g 2>/dev/null))
		if [ -n "$r" ]; then
			echo "$r"
			return
		fi
		sleep 0.05
	done
}

# jain A B: Jain's fairness index of two rates
jain() { awk "BEGIN { s = $1 + $2; q = $1 * $1 + $2 * $2; printf \"%.4f\", q ? s * s / (2 * q) : 0 }"; }

# snap NAME...: "MS SUM G1 G2 ...", the uptime in ms and the limiters'
# granted counters, read by one process: one fork apart, an emulated
# guest's counters would be read tens of ms apart.
snap()
{
	f=''
	for l; do f="$f $SYS/$l/stat"; done
	# shellcheck disable=SC2086 # the files, one word each
	awk 'FILENAME == "/proc/uptime" { ms = int($1 * 1000); next }
	     $1 == "granted" { g[++k] = $2; s += $2 }
	     END { printf "%d %d", ms, s
		   for (i = 1; i <= k; i++) printf " %d", g[i]
		   print "" }' /proc/uptime $f
}

# 2. Fair share: h1 wants 10 % of the capacity, h2 and h3 all of it.
fair()
{
	for h in h1 h2 h3; do agent $h "api.$h@api=${C}/s"; done
	# shellcheck disable=SC2086 # the pids, one word each
	set -- $pids
	a3=$3
	# in steps of 2 tokens: a refresh's window then sees 200/s +- 4 %
	client api.h1 paced 2 $((C / 10))
	c1=$!
	client api.h2 block 10
	client api.h3 block 10
	# shellcheck disable=SC2046 # the figures, one word each
	set -- $(snap api.h1 api.h2 api.h3)
	t0=$1 g0=$2
	# learning (one lease from the configuration), then the first shares
	first=$(wait_for 5000 'h1 > 0 && h2 > 0 && h3 > 0')
	ms=$(wait_for $((6 * REFRESH)) "h1 >= $C * 0.09 && h1 <= $C * 0.13 && h2 + h3 >= ($C - h1) * 0.98 && (h2 + h3) * (h2 + h3) / (2 * (h2 * h2 + h3 * h3)) >= 0.99")
	h1=$(st api.h1 has) h2=$(st api.h2 has) h3=$(st api.h3 has)
	timed "fair share converged" "$first >= 0 && $ms >= 0 && $ms <= 6 * $REFRESH" \
		"first shares $first ms after start (learning $LEASE ms), max-min $ms ms later (3 refresh intervals + 3 of slack: $((6 * REFRESH)) ms): has $h1 $h2 $h3 of $C, Jain(h2, h3) $(jain "$h2" "$h3")"
	a=$(snap api.h1 api.h2 api.h3)
	sleep 1
	b=$(snap api.h1 api.h2 api.h3)
	# shellcheck disable=SC2086 # the figures, one word each
	set -- $a $b
	ta=$1 tb=$6
	r1=$(awk "BEGIN { printf \"%.1f\", ($8 - $3) * 1000 / ($tb - $ta) }")
	r2=$(awk "BEGIN { printf \"%.1f\", ($9 - $4) * 1000 / ($tb - $ta) }")
	r3=$(awk "BEGIN { printf \"%.1f\", (${10} - $5) * 1000 / ($tb - $ta) }")
	j=$(jain "$r2" "$r3")
	check "fair share, granted by the kernels" "$j >= 0.99 && $r1 >= $C * 0.08 && $r1 <= $C * 0.12" \
		"tokens/s over $((tb - ta)) ms: h1 $r1 (wants $((C / 10))), h2 $r2, h3 $r3; Jain(h2, h3) $j"
	out=$(/tools/rlctl show api.h2 2>&1)
	if echo "$out" | grep -q "^global .*api (lease mode" &&
		echo "$out" | grep -q "^has .*wants" && echo "$out" | grep -q "^lease .*ends in"; then
		ok "rlctl show: the global link: $(echo "$out" | grep -A 3 '^global' | tr '\n' ';')"
	else
		notok "rlctl show: no global link:"
		echo "$out" | sed 's/^/#   /'
	fi
}

# shifted: stop h1's client; ms until h2 and h3 both run at >= 98 % of
# half the capacity, or -1. The end is when the later of the two agents
# wrote its state (updated_ns, CLOCK_MONOTONIC: /proc/uptime's clock in a
# guest that never suspends), not when this shell's polling saw it.
shifted()
{
	tk=$(now)
	kill "$c1"
	if [ "$(wait_for 2000 "h2 >= ($C / 2) * 0.98 && h3 >= ($C / 2) * 0.98")" -lt 0 ]; then
		echo -1
		return
	fi
	# shellcheck disable=SC2016 # awk's own variables
	awk -v tk="$tk" -F= '$1 == "updated_ns" && $2 > u { u = $2 }
		END { printf "%d", u / 1e6 - tk }' "$STATE/api.h2" "$STATE/api.h3"
}

# 3. Demand shift: h1's client stops; h2 and h3 take the freed capacity.
# Five times (h1's client started again in between, until the shares are
# max-min again): the median within two refresh intervals (issue #25; a
# host whose demand moves renews early, rlsyncd(8)), from the kill to the
# agents' own writes; the old agent took 2.1-3.2 by this shell's polling.
shift_demand()
{
	shifts=$(shifted)
	for i in 2 3 4 5; do
		client api.h1 paced 2 $((C / 10))
		c1=$!
		wait_for 5000 "h1 >= $C * 0.09 && h2 <= $C * 0.46 && h3 <= $C * 0.46" >/dev/null
		msleep $((2 * REFRESH))
		shifts="$shifts $(shifted)"
	done
	# shellcheck disable=SC2086 # the figures, one word each
	med=$(printf '%s\n' $shifts | sort -n | sed -n 3p)
	lost=$(echo "$shifts" | tr ' ' '\n' | grep -c -- -1)
	timed "demand shift" "$lost == 0 && $med <= 2 * $REFRESH" \
		"h1's client stopped five times: h2, h3 at >= 98 % of $((C / 2)) after $shifts ms, median $(awk "BEGIN { printf \"%.2f\", $med / $REFRESH }") refresh intervals (goal 2): $(st api.h2 has) $(st api.h3 has)"
}

# 4. Agent killed: the kernel falls back at once, the share returns.
kill_agent()
{
	tk=$(now)
	kill -9 "$a3"
	wait "$a3" 2>/dev/null
	sleep 0.05
	k=$(krate api.h3)
	dt=$(($(now) - tk))
	g3=$(granted api.h3)
	msleep $((3 * REFRESH))
	d3=$(($(granted api.h3) - g3))
	burst=$(kkey api.h3 burst)
	if [ "$(st api.h3 kernel_lease)" = 1 ]; then
		check "agent killed: kernel fallback at once" "$k == 0 && $d3 <= $burst" \
			"api.h3 at $k/s $dt ms after kill -9 of its agent (pessimistic: 0); then $d3 tokens in $((3 * REFRESH)) ms (burst $burst)"
	else
		skip "agent killed: kernel fallback at once" "the module has no RL_IOC_SET_LEASE"
	fi
	wait_for $((LEASE + 4 * REFRESH)) "h2 >= $C * 0.98" >/dev/null
	ms=$(($(now) - tk))
	timed "agent killed: share returned" "$(st api.h2 has) >= $C * 0.98 && $ms <= $LEASE + 4 * $REFRESH" \
		"h2 has $(st api.h2 has) of $C $ms ms after the kill (one lease, $LEASE ms, + 4 refresh intervals of slack)"
}

# 4b. Safe mode: a killed agent's limiter falls back to the safe rate.
safe_mode()
{
	agent h4 -s 100/s -T 1s safe.h4@safe=1000/s
	a4=$!
	client safe.h4 block 10
	wait_h4=$(now)
	while [ "$(awk "BEGIN { print ($(st safe.h4 has) > 100) }")" = 0 ] &&
		[ $(($(now) - wait_h4)) -lt 6000 ]; do
		sleep 0.05
	done
	before=$(st safe.h4 has)
	kill -9 "$a4"
	wait "$a4" 2>/dev/null
	sleep 0.05
	k=$(krate safe.h4)
	if [ "$(st safe.h4 kernel_lease)" != 1 ]; then
		skip "safe mode: kernel fallback" "the module has no RL_IOC_SET_LEASE"
		return
	fi
	# The bound over the time the window really took: a slow guest's
	# "sleep 1" lasts longer.
	t0=$(now)
	g=$(granted safe.h4)
	sleep 1
	r=$(($(granted safe.h4) - g))
	ms=$(($(now) - t0))
	check "safe mode: kernel fallback to the safe rate" "$before > 100 && $k == 100 && $r <= 100 * $ms / 1000 + $(kkey safe.h4 burst)" \
		"has $before/s, agent killed: the kernel at $k/s at once (safe 100/s); $r tokens granted in the next $ms ms"
	finish
}

# 5. Redis killed: leases held, then the safe rate (0); restarted empty:
# learning, then shares again.
kill_redis()
{
	tr=$(now)
	kill -9 "$rpid"
	wait "$rpid" 2>/dev/null
	rpid=''
	while [ "$(krate api.h2)" != 0.000 ] && [ $(($(now) - tr)) -lt 3000 ]; do
		sleep 0.02
	done
	held=$(($(now) - tr))
	# the hosts whose agents live (h3's is dead: its limiter is at its
	# kernel fallback, which the global bound below covers)
	g=$(snap api.h1 api.h2)
	sleep 0.5
	down=$(($(snap api.h1 api.h2 | cut -d' ' -f2) - $(echo "$g" | cut -d' ' -f2)))
	bursts=$(($(kkey api.h1 burst) + $(kkey api.h2 burst)))
	check "redis killed: leases held, then safe" "$held >= $LEASE / 2 && $held <= $LEASE + $REFRESH && $down <= $bursts" \
		"h2 kept its share $held ms after Redis died (lease $LEASE ms, less margins, + a refresh interval of polling), then 0 (pessimistic); $down tokens on h1, h2 in the next 500 ms (N x safe = 0, bursts $bursts)"
	start_redis
	# (the agents retry at 1, 2, 4 then 8 refresh intervals)
	ms=$(wait_for $((2 * LEASE + 10 * REFRESH)) "h2 >= $C * 0.98")
	timed "redis restarted empty" "$ms >= 0 && $ms <= 2 * $LEASE + 10 * $REFRESH" \
		"library and resource loaded again by the agents; h2 back at $(st api.h2 has) after $ms ms (learning: one lease, $LEASE ms)"
}

# 1. The global bound over all of it: burst + rate x elapsed.
bound()
{
	# shellcheck disable=SC2046 # the figures, one word each
	set -- $(snap api.h1 api.h2 api.h3)
	t1=$1 g1=$2
	awk -v g="$((g1 - g0))" -v c=$C -v ms="$((t1 - t0))" 'BEGIN {
		b = c * ms / 1000 + c * 0.1
		printf "%d %.0f %.2f\n", (g <= b), b, 100 * g / b }' >"$T/bound"
	read -r okb b pct <"$T/bound"
	if [ "$(st api.h2 kernel_lease)" != 1 ]; then
		skip "lease mode: global bound ($pct % of it)" "the module has no RL_IOC_SET_LEASE: the killed agent's limiter kept its share"
		return
	fi
	check "lease mode: global bound" "$okb == 1" \
		"$((g1 - g0)) tokens granted on 3 hosts in $((t1 - t0)) ms through kill -9, Redis killed and restarted: at most $b (rate x elapsed + the bursts, 100 ms of the capacity): $pct %"
}

# 2b. Proportional share: non-blocking clients asking 300/s and 600/s
# of 600/s get shares in the ratio of their wants (averaged over ten
# refresh intervals: a tenth of a second of a paced client is a few
# dozen tries).
proportional()
{
	agent p1 -a proportional prop.p1@prop=600/s
	agent p2 -a proportional prop.p2@prop=600/s
	client prop.p1 try 1 300
	client prop.p2 try 1 600
	tp=$(now)
	while [ $(($(now) - tp)) -lt 5000 ]; do
		awk -v a="$(st prop.p1 has)" -v b="$(st prop.p2 has)" \
			'BEGIN { exit !(a > 0 && b > 0 && a + b >= 600 * 0.98) }' && break
		sleep 0.05
	done
	msleep $((3 * REFRESH))
	: >"$T/prop"
	for i in 1 2 3 4 5 6 7 8 9 10; do
		cat "$STATE/prop.p1" "$STATE/prop.p2" >>"$T/prop"
		msleep $REFRESH
	done
	# per sample, each host's share of its own wants (Redis's reply to
	# the wants it reported); proportional: the same for both
	# shellcheck disable=SC2046 # the figures, one word each
	set -- $(awk -F= '/^granted=/ { g[n++ % 2] = $2 }
		/^wants=/ { w[m % 2] = $2; s[m % 2] += $2; if (m++ % 2 && w[0] && w[1] && g[1]) { r += (g[0] / w[0]) / (g[1] / w[1]); k++; h0 += g[0]; h1 += g[1] } }
		END { if (!k) k = 1
		      printf "%.1f %.1f %.1f %.1f %.4f", h0 / k, h1 / k, s[0] / 10, s[1] / 10, r / k }' "$T/prop")
	p1=$1 p2=$2 w1=$3 w2=$4 ratio=$5
	if [ "$(st prop.p1 kernel_lease)" != 1 ]; then
		skip "proportional share" "the module has no RL_IOC_GET_DEMAND (refused tries count as saturation)"
	else
		check "proportional share" "$ratio >= 0.95 && $ratio <= 1.05" \
			"mean wants $w1 $w2 (tries at 300/s, 600/s), mean shares granted $p1 $p2 of 600: shares in $ratio of the wants' ratio (mean of 10 samples)"
	fi
	finish
}

# 6. Batch mode: one exact bucket of 1500/s in Redis, three hosts fed
# batches; accuracy over >= 10^4 tokens, Redis round trips per grant.
# The clients take 2 tokens an acquire: about 1000 acquires a second is
# what an emulated guest's three clients sustain, and their demand must
# exceed the rate (else the window sees the Redis bucket's level move).
# The window is 14 s, about 2 x 10^4 tokens: the tokens in flight at its
# ends (batches of up to 375 per host, in Redis, an agent or a local
# bucket) do not grow with it. A 7 s window measured -1.075 % once on
# 6.1 (-0.15 % on 6.12 in the same CI run). An agent takes a batch only
# once Redis holds it (rl_take's wait): between two takes up to one
# batch waits in Redis's bucket, so the bound is 1 % plus one batch
# (375: -1.24 % was measured once on 6.1 with a 14 s window).
batch()
{
	B=1500
	bp=''
	for h in b1 b2 b3; do
		agent $h -m batch -R ${BREFRESH}ms "bat.$h@bat=${B}/s"
		bp="$bp $!"
	done
	sleep 0.5
	if grep -q "RL_IOC_DEPOSIT" "$T/b1.out"; then
		skip "batch mode" "$(head -n 1 "$T/b1.out")"
		return
	fi
	for h in b1 b2 b3; do client "bat.$h" block 2; done
	sleep 2	# the bucket starts empty, the batches grow: two seconds of warm-up
	calls() { echo $(($(st bat.b1 calls) + $(st bat.b2 calls) + $(st bat.b3 calls))); }
	ca=$(calls)
	# shellcheck disable=SC2046 # the figures, one word each
	set -- $(snap bat.b1 bat.b2 bat.b3)
	ta=$1 ga=$2
	sleep 14
	# shellcheck disable=SC2046 # the figures, one word each
	set -- $(snap bat.b1 bat.b2 bat.b3)
	tb=$1 gbb=$2
	cb=$(calls)
	awk -v g=$((gbb - ga)) -v ms=$((tb - ta)) -v c=$((cb - ca)) -v r=$B 'BEGIN {
		e = 100 * (g / (r * ms / 1000) - 1)
		printf "%d %.3f %.2f %d\n", g, e, 100 * c / (g / 2), c }' >"$T/batch"
	read -r g err rt c <"$T/batch"
	held=$(cat $SYS/bat.b1/stat $SYS/bat.b2/stat $SYS/bat.b3/stat |
		awk '$1 == "available" { s += $2 } END { print s }')
	# 1 % plus one batch (B/4: 250 ms of the rate) in Redis at an end
	slack=$(awk -v ms=$((tb - ta)) -v r=$B 'BEGIN {
		printf "%.3f\n", 1 + 100 * (r / 4) / (r * ms / 1000) }')
	check "batch mode: accuracy" \
		"$g >= 10000 && $err >= -$slack && $err <= $slack" \
		"$g tokens granted on 3 hosts in $((tb - ta)) ms at $B/s: error $err % (bound +-$slack %: 1 % and one batch in Redis; $held in the local buckets at the end)"
	check "batch mode: Redis round trips per grant" "$rt <= 5" \
		"$c round trips for $((g / 2)) grants (2 tokens each): $rt % (goal <= 5 %; batches $(st bat.b1 batch) $(st bat.b2 batch) $(st bat.b3 batch))"
	# shellcheck disable=SC2086 # the pids, one word each
	kill $bp
	rc=0
	for p in $bp; do wait "$p" || rc=$?; done
	check "batch mode: agents exit and give back" "$rc == 0" "exit status $rc"
	finish
}

# expect NAME PATTERN NAME ARGS...: rlsyncd ARGS fails with status $want
# (1 unless set) and one line matching PATTERN, and creates no limiter NAME.
expect()
{
	what=$1 pat=$2 lim=$3
	shift 3
	rc=0
	$G/rlsyncd --lua $G/ratelimit.lua -S "$T/st" "$@" >"$T/bad.out" 2>&1 || rc=$?
	# A usage error's second line is the pointer to --help.
	if [ "$rc" = "${want:-1}" ] &&
		[ "$(grep -vc "^Try 'rlsyncd --help'" "$T/bad.out")" = 1 ] &&
		grep -q -- "$pat" "$T/bad.out" && [ ! -e "$SYS/$lim" ]; then
		ok "bad input: $what: $(cat "$T/bad.out")"
	else
		notok "bad input: $what: status $rc, no limiter: $([ ! -e "$SYS/$lim" ] && echo yes)"
		sed 's/^/#   /' "$T/bad.out"
	fi
}

# 7. Bad input, and SIGHUP with a bad, then a good configuration.
bad_input()
{
	expect "wrong redis address" "Connection refused" x.bad \
		-r 127.0.0.1:1 x.bad=100/s
	$RS --port 0 --unixsocket "$T/r2.sock" --dir "$T" --save '' \
		--logfile "$T/redis2.log" &
	r2=$!
	while [ ! -S "$T/r2.sock" ]; do sleep 0.05; done
	rc=0
	$G/rlsyncd --lua /nonexistent -r "unix:$T/r2.sock" x.bad=100/s \
		>"$T/bad.out" 2>&1 || rc=$?
	kill "$r2"
	wait "$r2" 2>/dev/null
	check "bad input: redis without the library" "$rc == 1 && $(wc -l <"$T/bad.out") == 1 && $(grep -c 'lacks the library' "$T/bad.out") == 1" \
		"$(cat "$T/bad.out")"
	expect "unknown resource" "unknown resource nope" x.bad \
		-r "$REDIS" x.bad@nope
	# A bad operand is a usage error: status 2, as in every tool.
	want=2
	expect "global rate of 0" "rate of 0" x.bad -r "$REDIS" x.bad=0
	want=1
	printf '[global x.bad]\nrate = 100/s\nrefresh = 1 s\n' >"$T/bad.conf"
	expect "bad config line" "bad.conf:3: \[global x.bad\]: bad refresh" \
		x.bad -r "$REDIS" -c "$T/bad.conf"
	printf '[global r.h5]\nrate = 500/s\n' >"$T/g.conf"
	agent h5 -c "$T/g.conf"
	a7=$!
	i=0
	while [ ! -e "$STATE/r.h5" ] && [ "$i" -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	printf '[global r.h5]\nrate = 500/s\n[global r.h6]\nrate = fast\n' >"$T/g.conf"
	kill -HUP "$a7"
	sleep 0.5
	kept=$(grep -c "keeping the running configuration" "$T/h5.out")
	check "SIGHUP, bad configuration: nothing applied" "$kept == 1 && $(kill -0 "$a7" 2>/dev/null && echo 1 || echo 0) == 1 && $([ -e "$SYS/r.h6" ] && echo 1 || echo 0) == 0" \
		"$(grep "keeping" "$T/h5.out")"
	printf '[global r.h5]\nrate = 500/s\n[global r.h6]\nrate = 300/s\n' >"$T/g.conf"
	kill -HUP "$a7"
	i=0
	while [ ! -e "$STATE/r.h6" ] && [ "$i" -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	check "SIGHUP, good configuration: applied" "$([ -e "$STATE/r.h6" ] && echo 1 || echo 0) == 1 && $([ -e "$STATE/r.h5" ] && echo 1 || echo 0) == 1" \
		"$(grep "reloaded" "$T/h5.out")"
	[ -e "$STATE/r.h6" ] || sed 's/^/#   /' "$T/h5.out"
	kill "$a7"
	wait "$a7" 2>/dev/null
}

# Two guests, each its own kernel and agent (host $ID), one Redis on the
# host: resource "two" of 1000/s, both hosts' clients saturating it.
# Each guest sees its share converge to half (so the other host is
# there), measures its grants, and prints "@@rl two ID GRANTED MS HAS"
# for the host's script, which checks the sum of both.
two_guests()
{
	if [ ! -f $G/e1000.ko ] || ! insmod $G/e1000.ko 2>/dev/null &&
		! [ -e /sys/class/net/eth0 ]; then
		skip "two guests" "no e1000.ko for this kernel"
		return
	fi
	i=0
	while [ ! -e /sys/class/net/eth0 ] && [ "$i" -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	ifconfig eth0 10.0.2.15 netmask 255.255.255.0 up
	# The agent gives up if Redis does not answer in 3 s: once in CI,
	# "Connection timed out" right after the interface came up. Wait for
	# the link, and start the agent again (at most 3 times) if it left.
	i=0
	while [ "$(cat /sys/class/net/eth0/carrier 2>/dev/null)" != 1 ] &&
		[ "$i" -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	for try in 1 2 3; do
		agent two two.g@two=1000/s
		# Its limiter appears once Redis answered; it exits if not.
		i=0
		while [ ! -e $SYS/two.g ] && [ "$i" -lt 150 ] &&
			kill -0 "${pids##* }" 2>/dev/null; do
			sleep 0.1
			i=$((i + 1))
		done
		[ ! -e $SYS/two.g ] || break
		echo "# try $try: $(cat "$T/two.out")"
	done
	client two.g block 10
	ms=$(wait_for 40000 "h1 >= 450 && h1 <= 550")
	check "two guests: $ID's share" "$ms >= 0" \
		"has $(st two.g has) of 1000/s with the other guest (Redis through guestfwd), $ms ms after start"
	a=$(snap two.g)
	sleep 2
	b=$(snap two.g)
	# shellcheck disable=SC2086 # the figures, one word each
	set -- $a $b
	echo "@@rl two $ID $(($5 - $2)) $(($4 - $1)) $(st two.g has) $(kkey two.g burst)"
	sleep 4	# the other guest may still measure: keep sharing
	finish
}

if [ -n "$GLOBAL_REDIS" ] && [ -n "$ID" ]; then
	two_guests
	echo "1..$n"
	exit 0
fi

start_redis
fair
shift_demand
kill_agent
kill_redis
bound
finish
safe_mode
proportional
batch
bad_input
echo "1..$n"
