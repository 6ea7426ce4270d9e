#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Global limits across two kernels: two QEMU guests at once, each with its
# own kernel, module, rlsyncd and client, sharing resource "two" of
# 1000/s through one redis-server on this host's loopback, which each
# guest reaches at 10.0.2.100:6379 through QEMU's user-mode network
# (restrict=on: a guestfwd to 127.0.0.1:PORT is all the guest can reach).
# Runs selftests/ratelimit_rlsyncd_test.sh's two-guest part in each
# (rl.global=, rl.ghost= on the kernel command line), then checks the two
# together: the sum of their grants within the global bound, and Jain's
# index of the two. Run from the top of the tree after a build for the
# kernel (RL_KVER, RL_KERNEL, RL_PREFIX as selftests/vm/run.sh); check.sh
# runs it for the first kernel of make check. Results go to RL_RESULTS
# when set, else build/vm/two/results.txt with the "N passed, N failed"
# line.
set -eu

here=$(dirname "$0")
# shellcheck source=selftests/vm/lib.sh
. "$here/../vm/lib.sh"
pfx=${RL_PREFIX:-}
out=build/vm/two
mkdir -p "$out"
own=
[ -n "${RL_RESULTS:-}" ] || { own=1; rl_results_init "$out/results.txt"; }
rpid=

# shellcheck disable=SC2317 # called by the trap
stop()
{
	[ -z "$rpid" ] || kill "$rpid" 2>/dev/null || :
	[ -z "$rpid" ] || wait "$rpid" 2>/dev/null || :
}
trap stop EXIT

redis=$(command -v redis-server || true)
if [ -z "$redis" ] || [ ! -x build/global/rlsyncd ]; then
	rl_result SKIP "${pfx}two guests: no redis-server or rlsyncd (make deps; libhiredis-dev)"
	[ -z "$own" ] || rl_summary
	exit 0
fi

# A free port on the loopback: redis-server refuses one in use.
port=$((20000 + $$ % 20000))
for _ in 1 2 3 4 5; do
	"$redis" --bind 127.0.0.1 --port "$port" --dir "$PWD/$out" --save '' \
		--appendonly no --logfile "$PWD/$out/redis.log" &
	rpid=$!
	j=0
	until redis-cli -p "$port" PING >/dev/null 2>&1; do
		j=$((j + 1))
		if ! kill -0 "$rpid" 2>/dev/null || [ "$j" -ge 50 ]; then
			break
		fi
		sleep 0.1
	done
	redis-cli -p "$port" PING >/dev/null 2>&1 && break
	kill "$rpid" 2>/dev/null || :
	wait "$rpid" 2>/dev/null || :
	rpid=
	port=$((port + 1))
done
[ -n "$rpid" ] || { rl_result FAIL "${pfx}two guests: redis-server started"; exit 1; }

# The two boot at once, as one holder of the guests' lock (rl_vm_lock).
rl_vm_lock "two guests"
start=$(date +%s)
for g in g1 g2; do
	RL_VM_LOCK='' RL_TESTS=ratelimit_rlsyncd_test RL_VM_OUT=$out/$g RL_VM_MEM=512 \
		RL_PREFIX="${pfx}two guests, $g: " RL_VM_TIMEOUT=300 \
		RL_VM_NIC="user,restrict=on,guestfwd=tcp:10.0.2.100:6379-tcp:127.0.0.1:$port" \
		RL_VM_APPEND="rl.global=10.0.2.100:6379 rl.ghost=$g" \
		RL_RESULTS=${RL_RESULTS:-$out/results.txt} \
		"$here/../vm/run.sh" check > "$out/$g.txt" 2>&1 &
	eval "pid_$g=\$!"
done
# shellcheck disable=SC2154 # set by the eval above
wait "$pid_g1" || :
# shellcheck disable=SC2154
wait "$pid_g2" || :
rl_vm_unlock
sed 's/^/g1: /' "$out/g1.txt" | grep -E "PASS|FAIL|SKIP|QEMU" || :
sed 's/^/g2: /' "$out/g2.txt" | grep -E "PASS|FAIL|SKIP|QEMU" || :

# "@@rl two ID GRANTED MS HAS BURST" from each guest: the rates of both
# measured over overlapping windows (each guest measures once both hold a
# share), so their sum is what the one resource allowed.
figs=$(cat "$out"/g1/check.log "$out"/g2/check.log 2>/dev/null |
	sed -n 's/^@@rl two //p')
if [ "$(echo "$figs" | grep -c .)" -ne 2 ]; then
	rl_result FAIL "${pfx}two guests: both guests measured their share"
else
	res=$(echo "$figs" | awk '{ r[NR] = $2 * 1000 / $3; h[NR] = $4; b += $5 }
		END { s = r[1] + r[2]; j = s * s / (2 * (r[1] * r[1] + r[2] * r[2]))
		      ok = s <= 1000 * 1.02 + b / 2 && j >= 0.99
		      printf "%s %.1f %.1f (shares %s %s); sum %.1f of 1000/s; Jain %.4f\n",
			ok ? "PASS" : "FAIL", r[1], r[2], h[1], h[2], s, j }')
	rl_result "${res%% *}" "${pfx}two guests, two kernels, one Redis through guestfwd: tokens/s ${res#* }"
fi
echo "two guests: $(($(date +%s) - start)) s"
[ -z "$own" ] || rl_summary
