#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# A fleet on one resource, against a real Redis Cluster of three primaries
# and three replicas (redis-cli --cluster create --cluster-replicas 1):
#   selftests/global/fleet.sh HOSTS REFRESH_MS
# HOSTS real rlsyncd agents (rlsyncd-fake: rlsyncd's code, each on one
# simulated limiter of selftests/global/fake_kernel.c) share resource
# fleet of 10000/s (fair, lease 4 refreshes, hold 0), each with demand
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
# restart (every agent killed with kill -9 and started again at once).
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
# Run by selftests/global/run.sh (100 hosts, 1 s) and make bench-global.
set -u

suite='fleet'
# shellcheck source=selftests/global/lib.sh
. "$(dirname "$0")/lib.sh"
N=${1:-100}
R=${2:-1000}
C=10000
L=$((4 * R))

cli() { p=$1; shift; redis-cli -h 127.0.0.1 -p "$p" "$@"; }

# six nodes on free ports (and their bus ports, +10000)
base=$(port_base 0 1 2 3 4 5 10000 10001 10002 10003 10004 10005)
ports=''
for i in 0 1 2 3 4 5; do
	p=$((base + i))
	ports="$ports $p"
	redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
		--cluster-config-file "$tmp/nodes-$p.conf" --dir "$tmp" \
		--cluster-node-timeout 2000 --save '' --appendonly no \
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
# the primary of the resource's slot
slot=$(cli "$seed" CLUSTER KEYSLOT 'rl:{fleet}:cfg')
owner=$(cli "$seed" CLUSTER NODES | awk -v s="$slot" '
	/master/ { for (i = 9; i <= NF; i++) { split($i, r, "-")
		if (r[2] == "") r[2] = r[1]
		if (s >= r[1] && s <= r[2]) { split($2, a, "[:@]"); print a[2] } } }')
echo "# cluster: 3 primaries, 3 replicas on ports $base..$((base + 5)); {fleet} in slot $slot on $owner"

cpu() { cli "$owner" INFO cpu | tr -d '\r' | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.3f\n", s }'; }
# Redis's own (idle: cluster bus, cron) CPU over 3 s, before any agent
i0=$(cpu) s0=$(now)
sleep 3
idle=$(awk -v a="$i0" -v b="$(cpu)" -v t=$(($(now) - s0)) 'BEGIN { printf "%.6f", (b - a) / (t / 1000) }')

echo $C >"$tmp/da"
echo $C >"$tmp/db"
# start I: agent hI (group a when odd, b when even)
start()
{
	g=b
	[ $(($1 % 2)) = 1 ] && g=a
	RLS_FAKE_DEMAND=$tmp/d$g RLS_FAKE_OUT=$tmp/h$1.log "$d" --lua "$lua" \
		-r "127.0.0.1:$seed" --cluster yes -H "h$1" -S '' -l "${L}ms" \
		-R "${R}ms" -T 0s "fleet=$C/s" >>"$tmp/h$1.out" 2>&1 &
	eval "ap$1=$!"
}
# the agents' pids, for lib.sh's cleanup (ap1..apN: those running now)
agents()
{
	pids=''
	j=1
	while [ "$j" -le "$N" ]; do
		eval "pids=\"\$pids \$ap$j\""
		j=$((j + 1))
	done
}
i=1
while [ "$i" -le "$N" ]; do
	start "$i"
	i=$((i + 1))
done
agents
t0=$(now)

# members: "HOST WANTS HAS", from rl_info on the owner
members()
{
	cli "$owner" FCALL_RO rl_info 3 'rl:{fleet}:cfg' 'rl:{fleet}:epoch' \
		'rl:{fleet}:members' 2>/dev/null | tr -d '\r' | awk '
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

# a demand shift: group b down to a quarter of the fair share
q=$((C / N / 4))
echo "$q" >"$tmp/db"
ms=$(converge $((q * 12 / 10 + 1)) $((10 * R)))
check "demand shift" "$ms >= 0 && $ms <= 3 * $R" \
	"group b (even hosts) from backlogged to $q/s each: every member within 2 % of the exact share $ms ms after (bound: 3 refreshes, $((3 * R)) ms): $(fit $((q * 12 / 10 + 1)))"

# a tenth leave (SIGTERM: rl_leave) and come back
k=$((N / 10))
i=1
while [ "$i" -le "$k" ]; do
	eval "kill \$ap$i"
	i=$((i + 1))
done
i=1
while [ "$i" -le "$k" ]; do
	eval "wait \$ap$i" 2>/dev/null
	i=$((i + 1))
done
nn=$N
N=$((N - k))
ms=$(converge $((q * 12 / 10 + 1)) $((10 * R)))
check "leave" "$ms >= 0 && $ms <= 3 * $R" \
	"$k hosts stopped (rl_leave): the other $N within 2 % of the exact share $ms ms after (bound: 3 refreshes)"
N=$nn
i=1
while [ "$i" -le "$k" ]; do
	start "$i"
	i=$((i + 1))
done
agents
ms=$(converge $((q * 12 / 10 + 1)) $((14 * R)))
check "join" "$ms >= 0 && $ms <= 10 * $R" \
	"$k hosts back: all $N within 2 % of the exact share $ms ms after (bound: 10 refreshes: about 5 for a new agent's demand measured, the others' decrease at the next round and acknowledged, then its grant)"

# a thundering restart: every agent killed at once, then started again
tk=$(now)
i=1
while [ "$i" -le "$N" ]; do
	eval "kill -9 \$ap$i"
	i=$((i + 1))
done
wait_all=$(now)
i=1
while [ "$i" -le "$N" ]; do
	eval "wait \$ap$i" 2>/dev/null
	# the simulated limiter died with its agent
	echo "$tk.000 0.000000" >>"$tmp/h$i.log"
	start "$i"
	i=$((i + 1))
done
agents
ms=$(converge $((q * 12 / 10 + 1)) $((L + 10 * R)))
check "thundering restart" "$ms >= 0 && $ms <= $L + 4 * $R" \
	"every agent killed with kill -9 and started again ($((wait_all - tk)) ms to kill, restarted one by one): all $N within 2 % of the exact share $ms ms after the restart (bound: a lease and 4 refreshes)"
te=$(now)

# The bound: over every window of 1, 2, 5 refreshes from the start, the
# tokens of all hosts (integral of the rates set; ms resolution).
i=1
while [ "$i" -le "$N" ]; do
	sed "s/\$/ h$i/" "$tmp/h$i.log"
	i=$((i + 1))
done | sort -n >"$tmp/merged"
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
