#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# rlsyncd through a Redis Sentinel failover: one primary, one replica,
# three sentinels (quorum 2, down-after 1 s) on loopback ports, three
# real rlsyncd agents on simulated limiters (selftests/global/fake_kernel.c)
# with backlogged demand sharing 3000/s (lease 4 s, refresh 100 ms, hold 0,
# wait-replicas 1, wait-timeout 20ms). The primary is killed with kill -9
# mid-run; the sentinels promote the replica; the agents follow it.
#
# Every token granted is counted: a simulated limiter serves exactly its
# rate while demand exceeds it, and each rate set is logged with its time
# (RLS_FAKE_OUT), so the tokens of every host over any window are the
# integral of its rates. Over every window of 1 s, 2 s and 5 s the total
# must stay within the bound of rlsyncd(8) (BOUNDS): capacity x window
# (the simulated limiter has no burst) plus the shares of the grants WAIT
# found short (wait_short in the state files), which the test prints.
# Shares must be back (every agent at >= 98 % of 1000/s, renewed by the
# new primary) within two leases of the promotion. Then a switchover
# (SENTINEL FAILOVER) with the old primary alive: the agents follow; and
# an agent given the primary's address sends WAIT too. Also: a wrong
# master name and all sentinels down give one-line errors,
# checked by text. Last, a promotion after an agent's lease ended (lease 1 s):
# the +switch-master event brings it to the new primary within a refresh.
# Run by selftests/global/run.sh with RLSYNCD_FAKE (the binary).
set -u

d=${RLSYNCD_FAKE:?}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rl-sentinel.XXXXXX")
lua=tools/global/ratelimit.lua
cap=3000
lease_ms=4000
pids=''
apids=''

# shellcheck disable=SC2317 # called by the trap
cleanup()
{
	for p in $apids $pids; do kill -9 "$p" 2>/dev/null || :; done
	wait 2>/dev/null
	[ -z "${KEEP:-}" ] || cp -r "$tmp"/. "$KEEP"/ 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

now() { date +%s%3N; }
# shellcheck source=selftests/global/ports.sh
. "$(dirname "$0")/ports.sh"
ok() { echo "ok - sentinel $1"; }
notok() { echo "not ok - sentinel $1"; }
# check NAME CONDITION(awk) FIGURES
check()
{
	if awk "BEGIN { exit !($2) }"; then ok "$1: $3"; else notok "$1: $3"; fi
}

# Five free ports in a row: primary, replica, three sentinels.
base=$(port_base 0 1 2 3 4)
pp=$base rp=$((base + 1))
s1=$((base + 2)) s2=$((base + 3)) s3=$((base + 4))
sentinels="127.0.0.1:$s1, 127.0.0.1:$s2,127.0.0.1:$s3"

up()
{
	i=0
	until redis-cli -p "$1" PING >/dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -ge 100 ]; then
			notok "setup: redis on port $1 did not start"
			cat "$tmp"/*.log | sed 's/^/#   /'
			exit 1
		fi
		sleep 0.05
	done
}

for n in p r; do
	mkdir "$tmp/$n"
	port=$pp
	extra=''
	if [ $n = r ]; then port=$rp; extra="--replicaof 127.0.0.1 $pp"; fi
	# shellcheck disable=SC2086 # extra: words
	redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp/$n" --save '' \
		--appendonly no --repl-diskless-sync yes \
		--repl-diskless-sync-delay 0 --logfile "$tmp/$n.log" $extra &
	pids="$pids $!"
	[ $n = p ] && ppid=$!
	up "$port"
done
for s in $s1 $s2 $s3; do
	cat >"$tmp/s$s.conf" <<EOF
port $s
bind 127.0.0.1
dir $tmp
logfile $tmp/s$s.log
sentinel monitor rlm 127.0.0.1 $pp 2
sentinel down-after-milliseconds rlm 1000
sentinel failover-timeout rlm 1000
sentinel parallel-syncs rlm 1
EOF
	redis-server "$tmp/s$s.conf" --sentinel &
	pids="$pids $!"
	up "$s"
done
# The replica in sync, each sentinel aware of the replica and the others.
ready()
{
	[ "$(redis-cli -p $pp INFO replication | tr -d '\r' |
		sed -n 's/^connected_slaves://p')" = 1 ] || return 1
	for s in $s1 $s2 $s3; do
		[ "$(redis-cli -p "$s" SENTINEL master rlm | tr -d '\r' |
			awk 'p { print; exit } /^num-other-sentinels$/ { p = 1 }')" = 2 ] ||
			return 1
		[ "$(redis-cli -p "$s" SENTINEL replicas rlm | grep -c '^name$')" -ge 1 ] ||
			return 1
	done
}
t0=$(now)
until ready; do
	if [ $(($(now) - t0)) -gt 15000 ]; then
		notok "setup: sentinels did not see each other and the replica in 15 s"
		exit 1
	fi
	sleep 0.1
done
echo "# sentinels ready after $(($(now) - t0)) ms (primary :$pp, replica :$rp)"

# errcheck NAME PATTERN ARGS...: rlsyncd-fake --check ARGS exits 1 with
# one line on stderr that holds PATTERN (fixed).
errcheck()
{
	name=$1 pat=$2
	shift 2
	rc=0
	"$d" --check --lua "$lua" -S '' "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ "$rc" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
		grep -qF -- "$pat" "$tmp/err"; then
		ok "$name: $(cat "$tmp/err")"
	else
		notok "$name: status $rc, wanted 1 and one line with '$pat':"
		sed 's/^/#   /' "$tmp/err"
	fi
}

errcheck "wrong master name" \
	"rlsyncd: sentinel master nope: no sentinel knows master name 'nope' (3 asked)" \
	--sentinels "$sentinels" --master-name nope api=3000/s
dead=$((base + 5))
errcheck "all sentinels down" \
	"rlsyncd: sentinel master rlm: no sentinel named a primary (2 asked; last: 127.0.0.1:$((dead + 1)): cannot connect: Connection refused)" \
	--sentinels "127.0.0.1:$dead,127.0.0.1:$((dead + 1))" --master-name rlm api=3000/s
printf '[global api]\nmaster-name = rlm\nrate = 3000/s\n' >"$tmp/m.conf"
errcheck "master-name alone" \
	"rlsyncd: $tmp/m.conf:3: [global api]: master-name without sentinels" -c "$tmp/m.conf"
printf '[global api]\nsentinels = 127.0.0.1:1\nmaster-name = rlm\nrate = 3000/s\nrefresh = 100ms\nwait-replicas = 1\nwait-timeout = 50ms\n' >"$tmp/c.conf"
errcheck "wait-timeout over the call's" \
	"rlsyncd: $tmp/c.conf:7: [global api]: wait-timeout 50ms is over half the call's timeout (50ms: half the refresh, at most 1s)" \
	-c "$tmp/c.conf"
rc=0
"$d" --check --lua "$lua" -S '' --sentinels "$sentinels" --master-name rlm \
	api=3000/s >"$tmp/out" 2>"$tmp/err" || rc=$?
if [ "$rc" = 0 ] && [ ! -s "$tmp/err" ]; then
	ok "--check through the sentinels finds the primary"
else
	notok "--check through the sentinels: status $rc"
	sed 's/^/#   /' "$tmp/err"
fi

# Three agents, each backlogged (demand far above any share).
for h in h1 h2 h3; do
	echo 100000 >"$tmp/$h.d"
	: >"$tmp/$h.log"
	mkdir "$tmp/$h.state"
	RLS_FAKE_DEMAND=$tmp/$h.d RLS_FAKE_OUT=$tmp/$h.log "$d" --lua "$lua" \
		--sentinels "$sentinels" --master-name rlm --wait-replicas 1 \
		--wait-timeout 20ms -H "$h" -S "$tmp/$h.state" -l 4s -R 100ms \
		-T 0s api=$cap/s >"$tmp/$h.out" 2>&1 &
	apids="$apids $!"
done
rate() { tail -n 1 "$tmp/$1.log" | cut -d' ' -f2; }
st() { sed -n "s/^$2=//p" "$tmp/$1.state/api" 2>/dev/null; }
# merged: every rate the agents set, "MS RATE HOST", in time order
merged() { for h in h1 h2 h3; do sed "s/\$/ $h/" "$tmp/$h.log"; done | sort -n; }
# windows FROM TO W: over every window of W ms from FROM to TO, the
# tokens of the three hosts (the integral of the rates they ran at, ms
# resolution): "LEAST AT MOST AT" (AT: seconds after FROM)
windows()
{
	merged | awk -v a="$1" -v b="$2" -v w="$3" '
	{ t[++k] = $1; r[k] = $2; h[k] = $3 }
	END {
		j = 1; tot = 0; n = 0
		for (ms = t[1]; ms <= b; ms++) {
			while (j <= k && t[j] <= ms) {
				tot += r[j] - cur[h[j]]; cur[h[j]] = r[j]; j++
			}
			if (ms >= a) { n++; c[n] = c[n - 1] + tot / 1000 }
		}
		lo = -1; hi = 0; lat = 0; hat = 0
		for (s = 0; s + w <= n; s++) {
			d = c[s + w] - c[s]
			if (lo < 0 || d < lo) { lo = d; lat = s }
			if (d > hi) { hi = d; hat = s }
		}
		printf "%.1f %.1f %.1f %.1f\n", lo, lat / 1000, hi, hat / 1000
	}'
}
# least FROM TO: the least rate any host ran at from FROM to TO, "RATE HOST"
least()
{
	merged | awk -v a="$1" -v b="$2" '
	$1 <= a { cur[$3] = $2; next }
	$1 <= b { cur[$3] = $2; if (!($3 in m) || $2 < m[$3]) m[$3] = $2 }
	END {
		lo = -1
		for (x in cur) {
			v = (x in m) && m[x] < cur[x] ? m[x] : cur[x]
			if (lo < 0 || v < lo) { lo = v; who = x }
		}
		printf "%.3f %s\n", lo, who
	}'
}
# steady NAME FROM PROMOTED: from FROM (the kill, the command) to now, no
# host's rate at its safe rate (0) or below; from 1 s after PROMOTED on,
# every 1 s window delivers >= 0.90 of the capacity
steady()
{
	te=$(now)
	# shellcheck disable=SC2046 # the figures: words
	set -- "$1" "$2" "$3" $(least "$2" "$te") $(windows $(($3 + 1000)) "$te" 1000)
	check "$1: no rate drops" "$4 > 0" \
		"the least rate a host ran at from the failover's start on: $4/s ($5; its safe rate 0, its share $((cap / 3))/s)"
	check "$1: utilisation" "$6 >= 0.90 * $cap" \
		"every 1 s window from 1 s after the promotion to $(((te - $3) / 1000)) s after it: the least $6 tokens ($(awk "BEGIN { printf \"%.3f\", $6 / $cap }") of $cap) at +$7 s, the most $8"
}

# wait_for MS CONDITION(awk; h1 h2 h3 the rates): ms it took, or -1
wait_for()
{
	t=$(now)
	while [ $(($(now) - t)) -le "$1" ]; do
		if awk "BEGIN { h1 = $(rate h1)+0; h2 = $(rate h2)+0; h3 = $(rate h3)+0; exit !($2) }"; then
			echo $(($(now) - t))
			return
		fi
		sleep 0.02
	done
	echo -1
}

fair='h1 >= 980 && h2 >= 980 && h3 >= 980'
ms=$(wait_for 8000 "$fair")
check "fair shares" "$ms >= 0" \
	"$(rate h1) $(rate h2) $(rate h3) of $cap/s, $ms ms after start (learning 4000 ms), primary $(st h1 primary)"
sleep 2

# promotion FROM: when (ms) the sentinels named the replica, waiting up
# to 15 s from FROM; -1 if they did not
promotion()
{
	while [ $(($(now) - $1)) -le 15000 ]; do
		if redis-cli -p "$s1" SENTINEL get-master-addr-by-name rlm 2>/dev/null |
			grep -qx "$rp"; then
			now
			return
		fi
		sleep 0.02
	done
	echo -1
}

tk=$(now)
kill -9 "$ppid"
tp=$(promotion "$tk")
check "failover" "$tp >= 0" \
	"the sentinels promoted the replica $((tp - tk)) ms after kill -9 of the primary"

# Shares back: every agent renewed by the new primary at >= 98 % of 1000/s.
back=-1
while [ "$tp" -ge 0 ] && [ $(($(now) - tp)) -le $((2 * lease_ms + 2000)) ]; do
	if [ "$(st h1 primary)" = "127.0.0.1:$rp" ] &&
		[ "$(st h2 primary)" = "127.0.0.1:$rp" ] &&
		[ "$(st h3 primary)" = "127.0.0.1:$rp" ] &&
		awk "BEGIN { h1 = $(rate h1)+0; h2 = $(rate h2)+0; h3 = $(rate h3)+0; exit !($fair) }"; then
		back=$(($(now) - tp))
		break
	fi
	sleep 0.02
done
check "shares back" "$back >= 0 && $back <= 2 * $lease_ms" \
	"every agent at >= 980/s through the new primary $back ms after the promotion (bound: two leases, $((2 * lease_ms)) ms): $(rate h1) $(rate h2) $(rate h3)"
tb=$(now)
sleep 3
steady "kill -9" "$tk" "$tp"
low=$(for h in h1 h2 h3; do sed "s/\$/ $h/" "$tmp/$h.log"; done | sort -n |
	awk -v a="$tk" -v b="$tb" '{ r[$3] = $2; s = 0; for (h in r) s += r[h]
		if ($1 < a) m = s; else if ($1 <= b && s < m) m = s }
		END { printf "%.3f", m }')
echo "# the least sum of the rates set between the kill and shares back: $low of $cap"

# Hosts with a grant the old primary's WAIT found short (each widens the
# bound by its share, at most the capacity, for at most one lease); those
# of the new primary, which has no replica left, are counted too.
short=0
for h in h1 h2 h3; do
	echo "# $h: $(grep -v '^pid=\|^updated_ns=' "$tmp/$h.state/api" | tr '\n' ' ')"
	! grep -q "redis 127.0.0.1:$pp: WAIT" "$tmp/$h.out" || short=$((short + 1))
done

# A switchover with the old primary alive: the killed server back as a
# replica, then SENTINEL FAILOVER; every agent must be on the new primary
# within 10 s. Their primary still answers (until the sentinels demote
# it: READONLY); its WAITs come back short, so they ask the sentinels.
# (Left out of the windows above: the over-grant such a switchover may
# cause is rlsyncd(8)'s, not measured here.)
td=$(now)
redis-server --port "$pp" --bind 127.0.0.1 --dir "$tmp/p" --save '' \
	--appendonly no --logfile "$tmp/p.log" --replicaof 127.0.0.1 "$rp" &
pids="$pids $!"
ppid=$!
up "$pp"
t0=$(now)
until [ "$(redis-cli -p $pp INFO replication | tr -d '\r' |
	sed -n 's/^master_link_status://p')" = up ] &&
	redis-cli -p "$s1" SENTINEL FAILOVER rlm 2>&1 | grep -qx OK; do
	if [ $(($(now) - t0)) -gt 15000 ]; then
		notok "switchover: no SENTINEL FAILOVER in 15 s: $(redis-cli -p "$s1" SENTINEL FAILOVER rlm 2>&1)"
		break
	fi
	sleep 0.2
done
tf=$(now)
moved=-1
tp2=-1
w0="$(st h1 wait_short) $(st h2 wait_short) $(st h3 wait_short)"
while [ $(($(now) - tf)) -le 10000 ]; do
	[ "$tp2" -ge 0 ] ||
		! redis-cli -p "$s1" SENTINEL get-master-addr-by-name rlm 2>/dev/null |
		grep -qx "$pp" || tp2=$(now)
	if [ "$tp2" -ge 0 ] && [ "$(st h1 primary)" = "127.0.0.1:$pp" ] &&
		[ "$(st h2 primary)" = "127.0.0.1:$pp" ] &&
		[ "$(st h3 primary)" = "127.0.0.1:$pp" ]; then
		moved=$(($(now) - tf))
		break
	fi
	sleep 0.02
done
check "switchover" "$moved >= 0" \
	"SENTINEL FAILOVER $((tf - td)) ms after the old primary came back as a replica; the sentinels named the new primary $((tp2 - tf)) ms after it; every agent on it $moved ms after the command; rates $(rate h1) $(rate h2) $(rate h3)"
sleep 4
steady "switchover" "$tf" "$tp2"
# hosts with a grant WAIT found short from the command on
w1="$(st h1 wait_short) $(st h2 wait_short) $(st h3 wait_short)"
short2=$(echo "$w0 $w1" | awk '{ for (i = 1; i <= 3; i++) k += $(i + 3) > $i; print k + 0 }')
t_end=$(now)
# shellcheck disable=SC2086 # the pids, one word each
set -- $apids
kill "$1" "$2" "$3"
rc=0
for p in "$@"; do wait "$p" || rc=$?; done
apids=''
check "SIGTERM" "$rc == 0" "agents exit 0"

# WAIT without sentinels: an agent given the primary's address, once the
# old primary is its replica (with none online it sends no WAIT).
t0=$(now)
until redis-cli -p "$pp" INFO replication | tr -d '\r' | grep -q '^slave0:.*state=online'; do
	[ $(($(now) - t0)) -lt 15000 ] || break
	sleep 0.1
done
waits() {
	redis-cli -p "$pp" INFO commandstats | tr -d '\r' |
		sed -n 's/^cmdstat_wait:calls=\([0-9]*\),.*/\1/p'
}
w0=$(waits)
mkdir "$tmp/h4.state"
echo 100000 >"$tmp/h4.d"
RLS_FAKE_DEMAND=$tmp/h4.d RLS_FAKE_OUT=$tmp/h4.log "$d" --lua "$lua" \
	-r "127.0.0.1:$pp" --wait-replicas 1 --wait-timeout 20ms -H h4 \
	-S "$tmp/h4.state" -l 4s -R 100ms -T 0s api >"$tmp/h4.out" 2>&1 &
apids=$!
sleep 1.5
kill "$apids"
wait "$apids"
apids=''
w1=$(waits)
check "WAIT without sentinels" "${w1:-0} - ${w0:-0} >= 5" \
	"an agent with redis = the primary and wait-replicas 1 sent $((${w1:-0} - ${w0:-0})) WAITs in 1.5 s (refresh 100 ms)"
echo "# agents' lines on the failover (h1):"
grep -v '^rlsyncd: api: [0-9.]*/s$' "$tmp/h1.out" | sed 's/^/#   /'

# Every window of W s: the sum over hosts of the integral of the rates
# they ran at (ms resolution), against capacity x W, plus, per host with
# a grant WAIT found short, capacity x min(W, lease). The switchover's
# windows from the old primary's return to the end, with the hosts short
# since the command.
for w in 1 2 5; do
	# shellcheck disable=SC2046 # the figures: words
	set -- $(windows "$td" "$t_end" $((w * 1000)))
	bound=$(awk "BEGIN { print $cap * ($w + $short2 * ($w < 4 ? $w : 4)) }")
	check "switchover bound over $w s windows" "$3 <= $bound + 0.001" \
		"worst $3 tokens at +$4 s of the old primary's return (SENTINEL FAILOVER at +$(((tf - td) / 1000)).$(((tf - td) % 1000 / 100)) s; capacity x W $((cap * w))), bound $bound; hosts with a grant WAIT found short since the command: $short2"
done
for w in 1 2 5; do
	for h in h1 h2 h3; do sed "s/\$/ $h/" "$tmp/$h.log"; done | sort -n |
	awk -v w=$((w * 1000)) -v cap=$cap -v short="$short" -v end="$td" \
		-v lease=$lease_ms '
	$1 <= end { t[++k] = $1; r[k] = $2; h[k] = $3 }
	END {
		t0 = t[1]; t1 = end; j = 1; tot = 0
		for (ms = t0; ms <= t1; ms++) {
			while (j <= k && t[j] <= ms) {
				tot += r[j] - cur[h[j]]; cur[h[j]] = r[j]; j++
			}
			c[ms - t0 + 1] = c[ms - t0] + tot / 1000
		}
		n = t1 - t0 + 1; worst = 0
		for (s = 0; s + w <= n; s++)
			if (c[s + w] - c[s] > worst) { worst = c[s + w] - c[s]; at = s }
		bound = cap * (w + short * (w < lease ? w : lease)) / 1000
		printf "%s - sentinel bound over %d s windows: worst %.1f tokens (capacity x W %.0f), bound %.0f (%.2f %%), at %.1f s of %.1f s; hosts with a grant the old primary WAIT found short: %d\n",
			worst <= bound + 0.001 ? "ok" : "not ok", w / 1000, worst,
			cap * w / 1000, bound, 100 * worst / bound, at / 1000,
			n / 1000, short
	}'
done

# A promotion after the lease: an agent with a lease (1 s) shorter than
# the sentinels take to promote (down-after 1 s, then the election) runs
# at its safe rate (0) from the lease's end and backs off (up to 8
# refreshes); the +switch-master event must bring it to the new primary
# at once, not at its next retry. The primary is the old one again (the
# switchover), its replica in sync (WAIT without sentinels).
mkdir "$tmp/h5.state"
echo 100000 >"$tmp/h5.d"
: >"$tmp/h5.log"
RLS_FAKE_DEMAND=$tmp/h5.d RLS_FAKE_OUT=$tmp/h5.log "$d" --lua "$lua" \
	--sentinels "$sentinels" --master-name rlm -H h5 -S "$tmp/h5.state" \
	-l 1s -R 500ms -T 0s late=1000/s >"$tmp/h5.out" 2>&1 &
apids=$!
lst() { sed -n "s/^$1=//p" "$tmp/h5.state/late" 2>/dev/null; }
t0=$(now)
until [ "$(lst primary)" = "127.0.0.1:$pp" ] && [ "$(rate h5)" = 1000.000 ]; do
	[ $(($(now) - t0)) -lt 8000 ] || break
	sleep 0.02
done
tk=$(now)
kill -9 "$ppid"
tp=$(promotion "$tk")
on=-1
while [ "$tp" -ge 0 ] && [ $(($(now) - tp)) -le 6000 ]; do
	if [ "$(lst primary)" = "127.0.0.1:$rp" ]; then
		on=$(($(now) - tp))
		break
	fi
	sleep 0.02
done
# when the agent set 0 (its lease's end), ms after the kill
zero=$(awk -v a="$tk" '$1 >= a && $2 == 0 { printf "%d\n", $1 - a; exit }' "$tmp/h5.log")
kill "$apids"
wait "$apids"
apids=''
if [ -z "$zero" ] || [ "$tp" -lt 0 ] || [ "$zero" -ge $((tp - tk)) ]; then
	echo "ok - sentinel a promotion after the lease # SKIP the lease did not end before the promotion (lease end +${zero:-none} ms, promotion +$((tp - tk)) ms after kill -9)"
else
	check "a promotion after the lease" "$on >= 0 && $on <= 500" \
		"lease ended +$zero ms after kill -9, the sentinels named the replica at +$((tp - tk)) ms, the agent on it $on ms later (bound: one refresh, 500 ms; its backoff up to 4000 ms)"
fi
grep -F '+switch-master' "$tmp/h5.out" | sed 's/^/#   /'
