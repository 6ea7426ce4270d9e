#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# A fleet on one resource, against a real Redis Cluster of three primaries
# and three replicas (redis-cli --cluster create --cluster-replicas 1):
#   selftests/global/fleet.sh HOSTS REFRESH_MS [RESOURCES [TAGS]]
# HOSTS real rlsyncd agents (rlsyncd-fake: rlsyncd's code, each on one
# simulated limiter of selftests/global/fake_kernel.c) share resource
# fleet of 10000/s (fair, lease 6 refreshes, hold 0), each with demand
# from one of two files: hosts of group a (odd) and b (even) start
# backlogged (10000/s each). What is simulated: the limiters (a limiter
# serves min(demand, its rate), and dies with its agent) and the hosts
# (processes of this machine). What is real: the agents' code paths, the
# cluster, the library. On 2 cores a fleet of 1,000 cannot run at
# R = 1 s; run it at a longer REFRESH_MS, which keeps the number of calls
# per second, and scale by the model below.
#
# Phases, each timed from its event: steady shares (every member within
# 2 % of the exact max-min share of the wants Redis holds, FCALL rl_info,
# and group b's wants those of its demand), after learning (one lease);
# a demand shift (group b down to a quarter of its fair share); a tenth
# of the hosts leaving (SIGTERM: rl_leave) and coming back; a thundering
# restart (every agent killed with kill -9 and started again at once);
# the resource's primary killed with kill -9 (its replica promoted), then
# back and CLUSTER FAILOVER to it (shares back within two leases each).
# A shift and a leave must converge within 3 refreshes (2 for the
# algorithm, 1 for the agents' demand measurement), a join within 10 (a
# new agent measures its demand, the others' decrease waits for a round
# and for their acknowledgement), the restart within a lease and 4. The bound: over every window of 1, 2 and 5
# refreshes, the tokens of all hosts (the integral of the rates they
# set; a killed agent's limiter stops with it) <= capacity x window.
# Redis's CPU (INFO cpu of the primary that owns the resource, over the
# steady phase) per call, and the model: CPU at N hosts and R = 1 s is
# N x (CPU per call), a call's cost being flat in N above 64 members
# (Documentation/global.md); the run prints it for its own N, and make
# bench-global runs two sizes to check it.
# With RESOURCES (M > 1) each agent links fleet1..fleetM, spread over the
# three shards; the run measures steady shares of fleet1 and the cost
# (many()), without the phases. With TAGS yes too, they are co-located by
# three hash tags, one per shard ({tX}.fleet1, ...: the first tags whose
# slots are in the three ranges of redis-cli --cluster create), so that
# each host renews the resources of a shard in one call (rl_lease_many,
# up to 128 a call) instead of one call each.
# Run by selftests/global/run.sh (100 hosts, 1 s) and make bench-global.
set -u

suite='fleet'
# shellcheck source=selftests/global/lib.sh
. "$(dirname "$0")/lib.sh"
N=${1:-100}
R=${2:-1000}
M=${3:-1}
C=10000
L=$((6 * R))
tags=${4:-no}
# the resources: fleet, or fleet1..fleetM (the phases watch fleet1), or
# with TAGS yes {tX}.fleet1..., their tags set once the cluster is up
res=fleet
links="fleet=$C/s"
if [ "$M" -gt 1 ]; then
	res=fleet1
	links=$(j=1; while [ "$j" -le "$M" ]; do printf 'fleet%d=%d/s ' "$j" $C; j=$((j + 1)); done)
	export RLS_FAKE_NAMES=1
fi

cli() { p=$1; shift; redis-cli -h 127.0.0.1 -p "$p" "$@"; }

# six nodes on free ports (and their bus ports, +10000)
base=$(port_base 0 1 2 3 4 5 10000 10001 10002 10003 10004 10005)
ports=''
for i in 0 1 2 3 4 5; do
	p=$((base + i))
	ports="$ports $p"
	redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
		--cluster-config-file "$tmp/nodes-$p.conf" --dir "$tmp" \
		--cluster-node-timeout 1000 --save '' --appendonly no \
		--maxclients 10000 --logfile "$tmp/redis-$p.log" &
	rpids="$rpids $!"
done
for p in $ports; do
	i=0
	until cli "$p" PING >/dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -ge 200 ]; then
			echo "not ok - fleet: no redis on $p after 10 s"
			exit 1
		fi
		sleep 0.05
	done
done
# shellcheck disable=SC2046 # the nodes: words
if ! redis-cli --cluster create $(for p in $ports; do echo "127.0.0.1:$p"; done) \
	--cluster-replicas 1 --cluster-yes >"$tmp/create.out" 2>&1; then
	echo "not ok - fleet: cluster create:"
	tail -n 5 "$tmp/create.out" | sed 's/^/#   /'
	exit 1
fi
seed=$base
i=0
until [ "$(cli "$seed" CLUSTER INFO | tr -d '\r' | grep -c '^cluster_state:ok')" = 1 ] &&
	[ "$(cli "$seed" CLUSTER NODES | grep -c 'slave')" = 3 ]; do
	i=$((i + 1))
	[ "$i" -lt 400 ] || { echo "not ok - fleet: cluster not ok in 20 s"; exit 1; }
	sleep 0.05
done
# TAGS yes: three tags, the first of t1, t2, ... in each third of the
# slots (redis-cli --cluster create's ranges: one primary each); resource
# J behind tag (J - 1) % 3
if [ "$M" -gt 1 ] && [ "$tags" = yes ]; then
	tg0='' tg1='' tg2='' x=0
	while [ -z "$tg0" ] || [ -z "$tg1" ] || [ -z "$tg2" ]; do
		x=$((x + 1))
		sl=$(cli "$seed" CLUSTER KEYSLOT "rl:{{t$x}.fleet}:cfg")
		case $((sl * 3 / 16384)) in
		0) tg0=${tg0:-t$x} ;;
		1) tg1=${tg1:-t$x} ;;
		*) tg2=${tg2:-t$x} ;;
		esac
	done
	res="{$tg0}.fleet1"
	links=$(j=1; while [ "$j" -le "$M" ]; do
		case $(((j - 1) % 3)) in
		0) t=$tg0 ;;
		1) t=$tg1 ;;
		*) t=$tg2 ;;
		esac
		printf 'fleet%d@{%s}.fleet%d=%d/s ' "$j" "$t" "$j" $C
		j=$((j + 1))
	done)
	echo "# resources behind the tags {$tg0}, {$tg1}, {$tg2}"
fi
# the primary of the resource's slot
slot=$(cli "$seed" CLUSTER KEYSLOT "rl:{$res}:cfg")
# slot_owner PORT: the port of the slot's primary, as node PORT sees it
slot_owner()
{
	cli "$1" CLUSTER NODES | awk -v s="$slot" '
	/master/ && !/fail/ { for (i = 9; i <= NF; i++) { split($i, r, "-")
		if (r[2] == "") r[2] = r[1]
		if (s >= r[1] && s <= r[2]) { split($2, a, "[:@]"); print a[2] } } }'
}
owner=$(slot_owner "$seed")
echo "# cluster: 3 primaries, 3 replicas on ports $base..$((base + 5)); {$res} in slot $slot on $owner"

cpu() { cli "$owner" INFO cpu | tr -d '\r' | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.3f\n", s }'; }
# Redis's own (idle: cluster bus, cron) CPU over 3 s, before any agent
i0=$(cpu) s0=$(now)
sleep 3
idle=$(awk -v a="$i0" -v b="$(cpu)" -v t=$(($(now) - s0)) 'BEGIN { printf "%.6f", (b - a) / (t / 1000) }')

echo $C >"$tmp/da"
echo $C >"$tmp/db"
# many: with M resources per host, the cost of the steady fleet over 3
# refreshes, per primary (CPU, calls, reads: a read is a round trip or
# more of pipelined calls), and the agents' CPU (/proc/PID/schedstat);
# scaled to 1,000 hosts x 100 resources at R = 1 s. The phases and the
# bound are fleet.sh's with one resource.
# (a renewal writes its member with one HSET, rl_lease's and
# rl_lease_many's alike; a new round, twice a refresh per resource above
# 64 members, writes those of members whose count changed too)
stats()
{
	cli "$1" INFO all | tr -d '\r' | awk -F: '
	/^used_cpu_(sys|user):/ { c += $2 }
	/^total_reads_processed:/ { r = $2 }
	/^cmdstat_fcall:/ { split($2, a, "[=,]"); k = a[2] }
	/^cmdstat_hset:/ { split($2, a, "[=,]"); h = a[2] }
	END { printf "%.3f %d %d %d\n", c, k, r, h }'
}
acpu()
{
	for a in $pids; do cut -d' ' -f1 "/proc/$a/schedstat" 2>/dev/null; done |
		awk '{ s += $1 } END { printf "%.0f\n", s }'
}
many()
{
	prim=$(cli "$seed" CLUSTER NODES | awk '/master/ && !/fail/ { split($2, a, "[:@]"); print a[2] }')
	for p in $prim; do stats "$p" >"$tmp/s0.$p"; done
	a0=$(acpu) m0=$(now)
	sleep $((3 * R / 1000)).$((3 * R % 1000 / 100))
	for p in $prim; do stats "$p" >"$tmp/s1.$p"; done
	a1=$(acpu) m1=$(now)
	for p in $prim; do
		echo "$p $(cat "$tmp/s0.$p") $(cat "$tmp/s1.$p")"
	done | awk -v t=$((m1 - m0)) -v n="$N" -v m="$M" -v r="$R" \
		-v idle="$idle" -v a0="$a0" -v a1="$a1" '
	{
		s = t / 1000; cpu = $6 - $2; k = $7 - $3; rd = $8 - $4
		ren = $9 - $5
		rt = rd / (n * t / r)
		if (rt > worst) worst = rt
		per = ren > 0 ? (cpu - idle * s) / ren : 0
		if (per > pmax) pmax = per
		printf "# primary %s: %d calls (%.0f/s) for %d renewals (%.0f/s), %.1f %% of a core, %.1f us per renewal beside idle, %.2f reads per host per refresh\n",
			$1, k, k / s, ren, ren / s, 100 * cpu / s, per * 1e6, rt
	}
	END {
		ag = (a1 - a0) / 1e9 / (t / 1000) / n
		printf "# agents: %.3f %% of a core per host (%d resources, R = %d ms); model at R = 1 s, 100 resources: %.2f %%\n",
			100 * ag, m, r, 100 * ag * (r / 1000) * (100 / m)
		printf "# model, 1,000 hosts x 100 resources at R = 1 s on 3 primaries: %.0f renewals/s per primary, %.0f %% of a core each (idle %.1f %% + the most per renewal, %.1f us)\n",
			100000 / 3, 100 * (idle + 100000 / 3 * pmax), 100 * idle,
			pmax * 1e6
		printf "%s - fleet round trips: at most %.2f reads per host per refresh on a primary (bound 1.5: one pipelined round trip per primary)\n",
			worst <= 1.5 ? "ok" : "not ok", worst
	}'
}

# start I: agent hI (group a when odd, b when even)
start()
{
	g=b
	[ $(($1 % 2)) = 1 ] && g=a
	# shellcheck disable=SC2086 # links: words
	RLS_FAKE_DEMAND=$tmp/d$g RLS_FAKE_OUT=$tmp/h$1.log "$d" --lua "$lua" \
		-r "127.0.0.1:$seed" --cluster yes -H "h$1" -S '' -l "${L}ms" \
		-R "${R}ms" -T 0s $links >>"$tmp/h$1.out" 2>&1 &
	eval "ap$1=$!"
}
# each FROM TO FUNCTION: FUNCTION I for every agent I from FROM to TO
each()
{
	e=$1
	while [ "$e" -le "$2" ]; do
		"$3" "$e"
		e=$((e + 1))
	done
}
stop() { eval "kill \$ap$1"; }
reap() { eval "wait \$ap$1" 2>/dev/null; }
slay() { eval "kill -9 \$ap$1"; }
add_pid() { eval "pids=\"\$pids \$ap$1\""; }
# the agents' pids, for lib.sh's cleanup (ap1..apN: those running now)
agents()
{
	pids=''
	each 1 "$N" add_pid
}
each 1 "$N" start
agents
t0=$(now)

# members: "HOST WANTS HAS", from rl_info on the owner
members()
{
	cli "$owner" FCALL_RO rl_info 3 "rl:{$res}:cfg" "rl:{$res}:epoch" \
		"rl:{$res}:members" 2>/dev/null | tr -d '\r' | awk '
	/^wants=/ { split($1, w, "="); split($2, h, "="); print host, w[2], h[2] }
	{ host = $0 }'
}
# fit B_MAX: "K WORST SUM": K members, the worst relative error of their
# has against the exact water-fill of their wants (capacity $C), the sum
# of their has; WORST is over 1 unless every host is a member, group b's
# (even hosts) wants are at most B_MAX and the has add up to >= 98 % of
# the capacity (group a is backlogged)
fit()
{
	members | sort -k2 -g | awk -v c=$C -v n="$N" -v bmax="$1" '
	{ id[++k] = $1; w[k] = $2; h[k] = $3; sum += $3 }
	END {
		left = c; bad = 0
		for (i = 1; i <= k; i++) {
			s = left / (k - i + 1)
			if (w[i] < s) s = w[i]
			left -= s
			e = (h[i] - s) / (s > 1e-9 ? s : 1e-9)
			if (e < 0) e = -e
			if (e > worst) worst = e
			if (substr(id[i], 2) % 2 == 0 && w[i] > bmax) bad = 1
		}
		if (k != n || bad || sum < 0.98 * c) worst += 1
		printf "%d %.4f %.1f\n", k, worst, sum
	}'
}
# converge B_MAX LIMIT_MS: ms until fit() holds within 2 %, or -1
converge()
{
	tc=$(now)
	while [ $(($(now) - tc)) -le "$2" ]; do
		# shellcheck disable=SC2046 # the figures: words
		set -- "$1" "$2" $(fit "$1")
		if awk "BEGIN { exit !($4 <= 0.02) }"; then
			echo $(($(now) - tc))
			return
		fi
		sleep 0.1
	done
	echo -1
}
calls() { cli "$owner" INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_fcall:calls=\([0-9]*\),.*/\1/p'; }

ms=$(converge $C $((L + 10 * R + 30000)))
check "steady shares" "$ms >= 0" \
	"$N hosts within 2 % of the exact max-min share ($((C / N))/s each) $ms ms after they started (learning: one lease, $L ms; refresh $R ms): $(fit $C)"

# Redis's CPU over 5 refreshes of the steady fleet: per call, less its
# idle CPU; and Redis's time inside the calls (INFO commandstats)
fcall_us() { cli "$owner" INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_fcall:.*usec_per_call=\([0-9.]*\).*/\1/p'; }
cli "$owner" CONFIG RESETSTAT >/dev/null
c0=$(cpu) k0=$(calls) s0=$(now)
sleep $((5 * R / 1000)).$((5 * R % 1000 / 100))
c1=$(cpu) k1=$(calls) s1=$(now)
awk -v c0="$c0" -v c1="$c1" -v k0="${k0:-0}" -v k1="${k1:-0}" -v s0="$s0" \
	-v s1="$s1" -v n="$N" -v r="$R" -v idle="$idle" -v us="$(fcall_us)" 'BEGIN {
	k = k1 - k0; t = (s1 - s0) / 1000; cpu = c1 - c0
	per = k > 0 ? (cpu - idle * t) / k : 0
	printf "# redis (the owner): %d calls in %.1f s (%.0f/s; %d hosts / %d ms), %.3f s CPU: %.1f %% of a core (idle %.1f %%); %.1f us per call beside idle (inside the call: %.1f us); model at R = 1 s: %.1f %% + %d hosts x %.1f us = %.1f %% of a core\n",
		k, t, k / t, n, r, cpu, 100 * cpu / t, 100 * idle, per * 1e6,
		us, 100 * idle, n, per * 1e6, 100 * (idle + n * per)
	}' | tee "$tmp/cpu"
[ "$M" -eq 1 ] || { many; exit; }

# a demand shift: group b down to a quarter of the fair share; its wants
# at most $bmax: 10 % of headroom, or a token of the window (a quarter of
# a refresh at 25/s counts 6 or 7 tokens: up to 32/s reported)
q=$((C / N / 4))
bmax=$((q * 13 / 10 + 1))
echo "$q" >"$tmp/db"
ms=$(converge $bmax $((10 * R)))
check "demand shift" "$ms >= 0 && $ms <= 3 * $R" \
	"group b (even hosts) from backlogged to $q/s each: every member within 2 % of the exact share $ms ms after (bound: 3 refreshes, $((3 * R)) ms): $(fit $bmax)"

# a tenth leave (SIGTERM: rl_leave) and come back
k=$((N / 10))
each 1 "$k" stop
each 1 "$k" reap
nn=$N
N=$((N - k))
ms=$(converge $bmax $((10 * R)))
check "leave" "$ms >= 0 && $ms <= 3 * $R" \
	"$k hosts stopped (rl_leave): the other $N within 2 % of the exact share $ms ms after (bound: 3 refreshes)"
N=$nn
each 1 "$k" start
agents
ms=$(converge $bmax $((14 * R)))
check "join" "$ms >= 0 && $ms <= 10 * $R" \
	"$k hosts back: all $N within 2 % of the exact share $ms ms after (bound: 10 refreshes: about 5 for a new agent's demand measured, the others' decrease at the next round and acknowledged, then its grant)"

# a thundering restart: every agent killed at once, then started again
tk=$(now)
each 1 "$N" slay
wait_all=$(now)
# again, each as soon as it is reaped; its simulated limiter died with it
again()
{
	reap "$1"
	stopped "$tmp/h$1.log"
	start "$1"
}
each 1 "$N" again
agents
ms=$(converge $bmax $((L + 10 * R)))
check "thundering restart" "$ms >= 0 && $ms <= $L + 4 * $R" \
	"every agent killed with kill -9 and started again ($((wait_all - tk)) ms to kill, restarted one by one): all $N within 2 % of the exact share $ms ms after the restart (bound: a lease and 4 refreshes)"
# A failover inside the cluster under the fleet: the resource's primary
# killed with kill -9, its replica promotes itself (cluster-node-timeout
# 1 s: within the lease) and the agents follow (they read the slot map
# again), no limiter's rate dropping; then the
# killed node back, a replica of the new primary, and CLUSTER FAILOVER on
# it with the other alive. Each: shares back within two leases.
j=0
for p in $ports; do
	j=$((j + 1))
	# shellcheck disable=SC2086 # rpids: words
	[ "$p" = "$owner" ] && opid=$(echo $rpids | cut -d' ' -f$j)
done
old=$owner
live=$(for p in $ports; do [ "$p" = "$old" ] || echo "$p"; done | head -n 1)
# leases ended on the agents (each says so on stderr) until now
ended() { cat "$tmp"/h*.out | grep -c 'lease ended'; }
le0=$(ended)
tk=$(now)
kill -9 "$opid"
while [ $(($(now) - tk)) -le 20000 ]; do
	owner=$(slot_owner "$live")
	[ -z "$owner" ] || [ "$owner" = "$old" ] || break
	sleep 0.1
done
tp=$(now)
ms=-1
[ -z "$owner" ] || [ "$owner" = "$old" ] || ms=$(converge "$bmax" $((3 * L)))
# every agent renewed there: as many calls as agents
c0=$(calls)
until [ "$(($(calls) - ${c0:-0}))" -ge "$N" ] || [ $(($(now) - tp)) -gt $((3 * L)) ]; do
	sleep 0.1
done
rn=$(($(now) - tp))
ends=$(($(ended) - le0))
check "failover (kill -9)" "$ms >= 0 && $ms <= 2 * $L && $rn <= 2 * $L && $ends == 0" \
	"the primary of {fleet} ($old) killed: its replica ($owner) promoted $((tp - tk)) ms after (within the lease, $L ms); every member within 2 % of the exact share $ms ms after the promotion, $N calls there $rn ms after (bound: two leases, $((2 * L)) ms); leases ended meanwhile: $ends"
redis-server --port "$old" --bind 127.0.0.1 --cluster-enabled yes \
	--cluster-config-file "$tmp/nodes-$old.conf" --dir "$tmp" \
	--cluster-node-timeout 1000 --save '' --appendonly no \
	--maxclients 10000 --logfile "$tmp/redis-$old.log" &
rpids="$rpids $!"
tr=$(now)
until [ "$(cli "$old" INFO replication 2>/dev/null | tr -d '\r' | sed -n 's/^master_link_status://p')" = up ] &&
	[ "$(cli "$old" CLUSTER FAILOVER 2>&1 | tr -d '\r')" = OK ]; do
	[ $(($(now) - tr)) -le 20000 ] || break
	sleep 0.2
done
tf=$(now)
new=$owner
while [ $(($(now) - tf)) -le 10000 ]; do
	owner=$(slot_owner "$live")
	[ "$owner" != "$old" ] || break
	sleep 0.1
done
tp=$(now)
ms=-1
[ "$owner" != "$old" ] || ms=$(converge "$bmax" $((3 * L)))
check "switchover (CLUSTER FAILOVER)" "$ms >= 0 && $ms <= 2 * $L" \
	"$old back as a replica of $new, CLUSTER FAILOVER $((tf - tr)) ms after its start, primary again $((tp - tf)) ms after the command; every member within 2 % of the exact share $ms ms after (bound: two leases)"
te=$(now)

# The bound: over every window of 1, 2, 5 refreshes from the start, the
# tokens of all hosts (integral of the rates set; ms resolution).
tagged() { sed "s/\$/ h$1/" "$tmp/h$1.log"; }
each 1 "$N" tagged | sort -n >"$tmp/merged"
for w in 1 2 5; do
	awk -v a="$t0" -v b="$te" -v w=$((w * R)) -v c=$C '
	{ t[++k] = $1; r[k] = $2; h[k] = $3 }
	END {
		j = 1; tot = 0; n = 0
		for (ms = a; ms <= b; ms++) {
			while (j <= k && t[j] <= ms) {
				tot += r[j] - cur[h[j]]; cur[h[j]] = r[j]; j++
			}
			n++; s[n] = s[n - 1] + tot / 1000
		}
		hi = 0
		for (i = 0; i + w <= n; i++)
			if (s[i + w] - s[i] > hi) { hi = s[i + w] - s[i]; at = i }
		bound = c * w / 1000
		printf "%s - fleet bound over %d ms windows: worst %.1f tokens at +%.1f s of %.1f s, bound %.0f (capacity x window) (%.2f %%)\n",
			hi <= bound + 0.001 ? "ok" : "not ok", w, hi, at / 1000,
			n / 1000, bound, 100 * hi / bound
	}' "$tmp/merged"
done
