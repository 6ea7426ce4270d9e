#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# rlsyncd through a Redis Sentinel failover in the QEMU rig's guest, with
# the real module (issue #25; on the host with simulated limiters:
# selftests/global/sentinel.sh). One primary, one replica, three
# sentinels (quorum 2, down-after 1 s) on loopback ports, three rlsyncd
# agents, each with its own named limiter (sen.h1..3 linked to resource
# sen of 1500/s) and a backlogged client (rlgclient block 10); lease 4 s,
# refresh 400 ms, hold 0, wait-replicas 1, wait-timeout 50ms. Once the
# shares are fair the primary is killed with kill -9; the sentinels
# promote the replica; the agents follow it (issue #39: at once, so no
# lease ends). Then the old primary comes back as a replica and
# SENTINEL FAILOVER makes it the primary again, the old one alive.
#
# Every token granted is counted: the limiters' sysfs counters (granted)
# and their rates (config) are read together, by one process, every few
# tens of ms through the run. Through each failover no limiter's kernel
# rate may drop to its safe rate (0) or below, and from 1 s after the
# promotion on, every 1 s window must deliver >= 0.90 of the capacity. For every pair of samples at most W apart (W = 1, 2, 5 s) the
# tokens granted on the three hosts must stay within the bound of
# Documentation/global.md ("The bounds", Sentinel failover): capacity x W
# plus the limiters' bursts (the tokens a bucket holds at the window's
# start), plus, per host with a grant the old primary's WAIT found short,
# capacity x min(W, lease) (as sentinel.sh). A pair of samples spans at
# most W, so the check is strict; the worst figure it prints may be up to
# one sample interval short of the worst true window. The shares must be
# back (every agent renewed by the new primary at >= 98 % of its third)
# within two leases of the promotion. TAP, with the figures on each line.
# The Makefile installs this as build/selftests/ratelimit_sentinel_test;
# selftests/vm/run.sh puts redis-server, redis-cli (for SENTINEL
# FAILOVER), rlsyncd, rlgclient and ratelimit.lua into the guest. It
# skips what the guest lacks.
set -u

G=/global
RS=/redis/redis-server
CLI=/redis/redis-cli
SYS=/sys/kernel/ratelimit
T=${TMPDIR:-/tmp}/sentinel
STATE=/run/rlsyncd
C=1500		# capacity of resource sen, tokens per second
LEASE=4000	# ms
# 400 ms, as the other guest test of lease mode: replies are waited for
# half of it, and on the debug kernel under emulation a round trip took
# 125-155 ms, so at 250 ms the calls timed out and the agents backed off
# (shares back 9.5 s after the promotion, against two leases).
REFRESH=400	# ms
PP=6400 RP=6401 S1=6402 S2=6403 S3=6404
pids=''
apids=''
spid=''

tap_prefix='sentinel in the guest: '
# shellcheck source=selftests/vm/guest/tap.sh
. /guest/tap.sh
# give_up WHY: a setup failure ends the test
give_up()
{
	notok "$1"
	echo "1..$n"
	exit 1
}

# shellcheck disable=SC2317 # called by the trap
cleanup()
{
	for p in $spid $apids $pids; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	# what the agents and servers said, for a failure's reader
	for f in "$T"/*.out "$T"/*.log; do
		[ -f "$f" ] && grep -v '^rlsyncd: sen\.h[123]: [0-9.]*/s$' "$f" |
			sed "s|^|# ${f##*/}: |" | tail -n 8
	done
}
trap cleanup EXIT

if [ ! -x $G/rlsyncd ] || [ ! -x $G/rlgclient ] || [ ! -x $RS ]; then
	echo "1..0 # SKIP no rlsyncd, rlgclient or redis-server in the guest (libhiredis-dev, redis-server: make deps)"
	exit 4
fi
# Sentinels and servers talk TCP on the guest's loopback.
ifconfig lo 127.0.0.1 up 2>/dev/null || ip link set lo up 2>/dev/null
if [ ! -e /proc/net/tcp ]; then
	echo "1..0 # SKIP no IPv4 TCP in this kernel: no loopback for the sentinels"
	exit 4
fi
mkdir -p "$T" "$STATE"

now() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }
# st NAME KEY: KEY of NAME's state file (rlsyncd(8)); 0 if none
st() { v=$(sed -n "s/^$2=//p" "$STATE/$1" 2>/dev/null); echo "${v:-0}"; }
# until_ok MS COMMAND...: ms until COMMAND succeeded (polled), or -1
until_ok()
{
	u0=$(now)
	max=$1
	shift
	until "$@"; do
		if [ $(($(now) - u0)) -gt "$max" ]; then
			echo -1
			return
		fi
		sleep 0.05
	done
	echo $(($(now) - u0))
}
logged() { grep -q -- "$2" "$T/$1.log" 2>/dev/null; }

# The servers, then the sentinels (each its own sentinel.conf).
for s in p r; do
	port=$PP
	extra=''
	if [ $s = r ]; then port=$RP; extra="--replicaof 127.0.0.1 $PP"; fi
	mkdir -p "$T/$s"
	# shellcheck disable=SC2086 # extra: words
	$RS --port "$port" --bind 127.0.0.1 --dir "$T/$s" --save '' \
		--appendonly no --repl-diskless-sync yes \
		--repl-diskless-sync-delay 0 --logfile "$T/$s.log" $extra &
	pids="$pids $!"
	[ $s = p ] && ppid=$!
	[ "$(until_ok 10000 logged $s 'Ready to accept connections')" -ge 0 ] ||
		give_up "setup: redis-server on port $port did not start in 10 s"
done
for s in $S1 $S2 $S3; do
	cat >"$T/s$s.conf" <<EOF
port $s
bind 127.0.0.1
dir $T
logfile $T/s$s.log
sentinel monitor rlm 127.0.0.1 $PP 2
sentinel down-after-milliseconds rlm 1000
sentinel failover-timeout rlm 2000
sentinel parallel-syncs rlm 1
EOF
	$RS "$T/s$s.conf" --sentinel &
	pids="$pids $!"
done
# The replica in sync, each sentinel aware of the replica and the others
# (their logs: redis-cli is not in the guest).
ready()
{
	logged r 'sync: Finished with success' || return 1
	for s in $S1 $S2 $S3; do
		# no number before the sentinel opened its log
		seen=$(grep -c '+sentinel sentinel' "$T/s$s.log" 2>/dev/null)
		[ "${seen:-0}" -ge 2 ] &&
			logged "s$s" "+slave slave 127.0.0.1:$RP" || return 1
	done
}
ms=$(until_ok 20000 ready)
[ "$ms" -ge 0 ] ||
	give_up "setup: the sentinels did not see each other and the replica in 20 s"
ok "setup: replica in sync, each sentinel aware of the replica and the two others $ms ms after they started"

# Three hosts: an agent and a backlogged client each.
sentinels="127.0.0.1:$S1,127.0.0.1:$S2,127.0.0.1:$S3"
for h in h1 h2 h3; do
	$G/rlsyncd --lua $G/ratelimit.lua --sentinels "$sentinels" \
		--master-name rlm --wait-replicas 1 --wait-timeout 50ms -H "$h" \
		-l ${LEASE}ms -R ${REFRESH}ms -T 0s "sen.$h@sen=$C/s" \
		>"$T/$h.out" 2>&1 &
	apids="$apids $!"
done
for h in h1 h2 h3; do
	[ "$(until_ok 10000 test -e "$SYS/sen.$h")" -ge 0 ] ||
		give_up "setup: no limiter sen.$h 10 s after its agent started: $(head -n 2 "$T/$h.out")"
	$G/rlgclient "sen.$h" block 10 &
	pids="$pids $!"
done

# The sampler: "MS SUM G1 G2 G3 BURSTS R1 R2 R3" (uptime in ms, the
# limiters' granted counters, their bursts and their rates in tokens/s,
# read by one process) until stopped.
(
	while :; do
		awk 'FILENAME == "/proc/uptime" { ms = int($1 * 1000); next }
		     FILENAME ~ /stat$/ && $1 == "granted" { g[++k] = $2; s += $2; next }
		     FILENAME ~ /config$/ && $1 == "burst" { b += $2 }
		     FILENAME ~ /config$/ && $1 == "rate" { r[++kr] = $2 }
		     FILENAME ~ /config$/ && $1 == "period_ns" { p[++kp] = $2 }
		     END { printf "%d %d %d %d %d %d", ms, s, g[1], g[2], g[3], b
			   for (i = 1; i <= 3; i++)
				printf " %.3f", p[i] ? r[i] * 1e9 / p[i] : 0
			   printf "\n" }' \
			/proc/uptime $SYS/sen.h1/stat $SYS/sen.h2/stat \
			$SYS/sen.h3/stat $SYS/sen.h1/config $SYS/sen.h2/config \
			$SYS/sen.h3/config
		sleep 0.02
	done
) >"$T/samples" &
spid=$!

third=$((C / 3))
fair()
{
	for h in h1 h2 h3; do
		awk -v h="$(st "sen.$h" has)" -v t=$third \
			'BEGIN { exit !(h >= t * 0.98) }' || return 1
	done
}
# steady NAME FROM PROMOTED: from FROM (the kill, the command) on, no
# limiter's kernel rate at its safe rate (0) or below; from 1 s after
# PROMOTED on, every 1 s window (a pair of samples >= 1 s apart, the
# closest) delivers >= 0.90 of the capacity; and how long after PROMOTED
# the first window at >= 0.97 starts (full utilisation).
steady()
{
	# $4: when the first agent's lease ended (uptime ms), or 0. A
	# pessimistic limiter (safe rate 0) runs at its share until then,
	# then at 0 until the new primary renews it: only a promotion within
	# the lease leaves no drop, so after a later one drops count until
	# then. The agent ends a lease two call timeouts (half a refresh
	# each) before its end, as a call may block it that long
	# (rls_link_expire()): drops count until a refresh before the end,
	# and 50 ms more for the clocks.
	lim=0
	[ "${4:-0}" -gt 0 ] && [ "$3" -gt "$4" ] && lim=$(($4 - REFRESH - 50))
	awk -v a="$2" -v tp="$3" -v c=$C -v lim="$lim" 'NF == 9 { t[++k] = $1; g[k] = $2
		if ($1 >= a && (lim == 0 || $1 < lim))
			for (i = 7; i <= 9; i++) if (seen[i] == 0 || $i < m[i]) {
				seen[i] = 1; m[i] = $i; mt[i] = $1 } }
	END {
		lo = -1; full = -1; j = 1
		for (i = 1; i <= k; i++) {
			if (t[i] < tp) continue
			while (j < k && t[j] - t[i] < 1000) j++
			if (t[j] - t[i] < 1000) break
			u = (g[j] - g[i]) / (c * (t[j] - t[i]) / 1000)
			if (full < 0 && u >= 0.97) full = t[i] - tp
			if (t[i] >= tp + 1000 && (lo < 0 || u < lo)) { lo = u; at = t[i] - tp }
		}
		least = -1; h = 0; when = 0
		for (i = 7; i <= 9; i++) if (seen[i] && (least < 0 || m[i] < least)) {
			least = m[i]; h = i - 6; when = mt[i] - a }
		printf "%.3f h%d %d %.3f %d %d\n", least, h, when, lo, at, full
	}' "$T/samples" >"$T/steady"
	read -r least lh lat lo at full <"$T/steady"
	upto="from the failover's start on"
	[ "$lim" -eq 0 ] ||
		upto="from the failover's start until a refresh before the first lease ended (+$(($4 - $2)) ms, before the promotion at +$(($3 - $2)) ms)"
	# (no sample before that: the renewals failed before the kill, and
	# the first lease ended within a refresh of it; nothing to check)
	if [ "$least" = -1.000 ]; then
		skip "$1: no kernel rate drops" "no sample $upto"
	else
		timed "$1: no kernel rate drops" "$least > 0" \
			"the least rate a limiter ran at $upto: $least/s ($lh, +$lat ms; safe rate 0, share $third/s)"
	fi
	timed "$1: utilisation" "$lo >= 0.90" \
		"every 1 s window from 1 s after the promotion: >= $lo of $C/s (the least at +$at ms); full utilisation (>= 0.97) from +$full ms after the promotion"
}

# learning (one lease from the first agent's configuration), then shares
ms=$(until_ok 15000 fair)
timed "fair shares" "$ms >= 0" \
	"has $(st sen.h1 has) $(st sen.h2 has) $(st sen.h3 has) of $C/s $ms ms after the clients started (learning $LEASE ms), primary $(st sen.h1 primary)"
if [ "$(st sen.h1 kernel_lease)" != 1 ]; then
	skip "failover" "the module has no RL_IOC_SET_LEASE: a limiter keeps its share beyond its lease"
	echo "1..$n"
	exit 0
fi
sleep 2

# When the first agent's lease ends (expires_ns: CLOCK_MONOTONIC, which
# /proc/uptime's clock equals in the guest, which never suspends).
lease_end=$(for h in h1 h2 h3; do st "sen.$h" expires_ns; done | sort -n | head -1)
lease_end=$((${lease_end:-0} / 1000000))
tk=$(now)
kill -9 "$ppid"
switched() { grep -q "+switch-master rlm 127.0.0.1 $PP 127.0.0.1 $RP" "$T"/s*.log; }
ms=$(until_ok 20000 switched)
tp=-1
[ "$ms" -lt 0 ] || tp=$(now)
timed "failover" "$ms >= 0" \
	"the sentinels promoted the replica $((tp - tk)) ms after kill -9 of the primary (down-after 1000 ms)"
[ "$tp" -ge 0 ] || give_up "no promotion: nothing more to measure"

# Shares back: every agent renewed by the new primary at >= 98 % of its
# third.
back()
{
	for h in h1 h2 h3; do
		[ "$(st "sen.$h" primary)" = "127.0.0.1:$RP" ] || return 1
	done
	fair
}
ms=$(until_ok $((2 * LEASE + 4000)) back)
[ "$ms" -lt 0 ] || ms=$(($(now) - tp))
timed "shares back" "$ms >= 0 && $ms <= 2 * $LEASE" \
	"every agent at >= 98 % of $third/s through the new primary $ms ms after the promotion (bound: two leases, $((2 * LEASE)) ms): has $(st sen.h1 has) $(st sen.h2 has) $(st sen.h3 has)"
sleep 3
steady "kill -9" "$tk" "$tp" "$lease_end"

# Hosts with a grant the old primary's WAIT found short (each widens the
# bound by at most the capacity, for at most one lease).
short=0
for h in h1 h2 h3; do
	echo "# $h: $(grep -v '^pid=\|^updated_ns=' "$STATE/sen.$h" | tr '\n' ' ')"
	! grep -q "redis 127.0.0.1:$PP: WAIT" "$T/$h.out" || short=$((short + 1))
done

# A switchover with the old primary alive: the killed server back as a
# replica of the new one, then SENTINEL FAILOVER. The agents' primary
# answers on until the sentinels demote it (READONLY); its grants are
# short of WAIT once its replica is promoted, so they ask the sentinels.
td=$(now)
short2=0
if [ -x $CLI ]; then
	$RS --port "$PP" --bind 127.0.0.1 --dir "$T/p" --save '' \
		--appendonly no --repl-diskless-sync yes \
		--repl-diskless-sync-delay 0 --logfile "$T/p2.log" \
		--replicaof 127.0.0.1 "$RP" &
	pids="$pids $!"
	w0=$(for h in h1 h2 h3; do st "sen.$h" wait_short; done | tr '\n' ' ')
	failover() { $CLI -p $S1 SENTINEL FAILOVER rlm 2>&1 | grep -qx OK; }
	synced() { logged p2 'sync: Finished with success' && failover; }
	ms=$(until_ok 20000 synced)
	tf=$(now)
	switched2() { grep -q "+switch-master rlm 127.0.0.1 $RP 127.0.0.1 $PP" "$T"/s*.log; }
	ms2=$(until_ok 10000 switched2)
	tp2=$(now)
	on_pp()
	{
		for h in h1 h2 h3; do
			[ "$(st "sen.$h" primary)" = "127.0.0.1:$PP" ] || return 1
		done
	}
	moved=$(until_ok 10000 on_pp)
	timed "switchover" "$ms >= 0 && $ms2 >= 0 && $moved >= 0" \
		"SENTINEL FAILOVER $((tf - td)) ms after the old primary came back as a replica; promoted $((tp2 - tf)) ms after the command; every agent on it $moved ms after the promotion"
	sleep 4
	steady "switchover" "$tf" "$tp2"
	w1=$(for h in h1 h2 h3; do st "sen.$h" wait_short; done | tr '\n' ' ')
	short2=$(echo "$w0 $w1" | awk '{ for (i = 1; i <= 3; i++) k += $(i + 3) > $i; print k + 0 }')
else
	skip "switchover" "no redis-cli in the guest (redis-tools)"
fi
kill "$spid"
wait "$spid" 2>/dev/null
spid=''
echo "# agents' lines on the failovers (h1):"
grep -v '^rlsyncd: sen\.h1: [0-9.]*/s$' "$T/h1.out" | sed 's/^/#   /'

# Every pair of samples at most W apart: the tokens granted between them
# on the three hosts against capacity x W + the bursts (the largest the
# limiters had) + capacity x min(W, lease) per host WAIT found short.
# Only pairs spanning at least W less one sample gap are reported as
# the worst window (shorter ones are checked too). The kill's run until
# the old primary came back (td), then the switchover's, each with the
# hosts found short in it.
for phase in kill switchover; do
for w in 1 2 5; do
	if [ $phase = kill ]; then from=0 to=$td n_short=$short
	else from=$td to=999999999999 n_short=$short2; fi
	awk -v w=$((w * 1000)) -v c=$C -v short="$n_short" -v lease=$LEASE \
		-v tk="$tk" -v from="$from" -v to="$to" '
	NF == 9 && $1 >= from && $1 <= to { t[++k] = $1; g[k] = $2; if ($6 > b) b = $6
	  if (k > 1 && $1 - t[k - 1] > gap) gap = $1 - t[k - 1] }
	END {
		bound = c * w / 1000 + b + short * c * (w < lease ? w : lease) / 1000
		worst = 0; bad = 0; j = 1
		for (i = 1; i <= k; i++) {
			while (j < k && t[j + 1] - t[i] <= w) j++
			d = g[j] - g[i]
			if (d > bound) bad++
			if (d > worst) { worst = d; at = t[i] - tk; span = t[j] - t[i] }
		}
		printf "%d %d %.0f %.2f %.1f %d %d %d %.1f %.2f %d\n", (!bad && k > 10), worst,
			bound, 100 * worst / bound, at / 1000, span, k, gap,
			(t[k] - t[1]) / 1000, 100 * worst / (c * w / 1000 + b), b
	}' "$T/samples" >"$T/w$w"
	# busybox awk: a "!" after a comma is a syntax error, hence the ()
	read -r good worst bound pct at span k gap secs pcb bursts <"$T/w$w"
	[ $phase = kill ] || [ -x $CLI ] || continue
	check "$phase: bound over ${w} s windows" "$good == 1" \
		"worst $worst tokens on 3 hosts (capacity x W $((C * w)), + bursts $bursts, + $n_short host(s) WAIT found short x capacity x min(W, lease)): bound $bound ($pct %; $pcb % of capacity x W + bursts), in $span ms from $at s after the kill; $k samples over $secs s, largest gap $gap ms"
done
done

# shellcheck disable=SC2086 # the pids, one word each
kill $apids
rc=0
for p in $apids; do wait "$p" || rc=$?; done
apids=''
check "SIGTERM" "$rc == 0" "agents exit 0"
echo "1..$n"
