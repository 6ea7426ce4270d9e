#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# make check-global-redis: the Redis side of global limits
# (tools/global/ratelimit.lua) against a private redis-server, rlsyncd's
# start-up errors, its connection options (auth.sh) and TLS (tls.sh), and
# three rlsyncd agents on simulated limiters (selftests/global/agents.sh),
# each with its own redis-server.
#   selftests/global/run.sh BUILD_DIR
# Starts redis-server on a unix socket in a temporary directory (no TCP
# port, no persistence), loads the library, runs BUILD_DIR/global/lease_test
# and selftests/global/rlsyncd.sh, stops the server, then runs
# selftests/global/format.sh (keys an older library wrote), auth.sh, tls.sh, agents.sh, sentinel.sh (a Sentinel
# failover under three agents), pipeline.sh, batch.sh, cluster.sh and
# fleet.sh (100 agents on a Redis Cluster of 3 primaries and 3 replicas).
# The last line is "N passed, N failed".
set -eu

b=${1:-build}
dir=$(mktemp -d "${TMPDIR:-/tmp}/rl-global.XXXXXX")
sock=$dir/redis.sock
pid=

# shellcheck disable=SC2317 # called by the trap
stop()
{
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || :
	[ -z "$pid" ] || wait "$pid" 2>/dev/null || :
	rm -rf "$dir"
}
trap stop EXIT
trap 'exit 1' INT TERM

start=$(date +%s)
redis-server --port 0 --unixsocket "$sock" --dir "$dir" --save '' \
	--appendonly no --logfile "$dir/redis.log" &
pid=$!
i=0
until redis-cli -s "$sock" PING >/dev/null 2>&1; do
	i=$((i + 1))
	if [ "$i" -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "global: redis-server did not start:" >&2
		cat "$dir/redis.log" >&2
		exit 1
	fi
	sleep 0.1
done
redis-cli -s "$sock" -x FUNCTION LOAD REPLACE < tools/global/ratelimit.lua >/dev/null

rc=0
"$b/global/lease_test" "$sock" > "$dir/out" || rc=1
grep -v "passed, .* failed$" "$dir/out" || :
p=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$dir/out")
f=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$dir/out")
RLSYNCD="$b/global/rlsyncd" RLSYNCD_FAKE="$b/global/rlsyncd-fake" \
	REDIS_SOCK="$sock" selftests/global/rlsyncd.sh | tee "$dir/out2"
RLSYNCD_FAKE="$b/global/rlsyncd-fake" selftests/global/format.sh |
	tee -a "$dir/out2"
RLSYNCD_FAKE="$b/global/rlsyncd-fake" selftests/global/auth.sh |
	tee -a "$dir/out2"
RLSYNCD_FAKE="$b/global/rlsyncd-fake" selftests/global/tls.sh |
	tee -a "$dir/out2"
RLSYNCD_FAKE="$b/global/rlsyncd-fake" selftests/global/agents.sh |
	tee -a "$dir/out2"
RLSYNCD_FAKE="$b/global/rlsyncd-fake" selftests/global/sentinel.sh |
	tee -a "$dir/out2"
RLSYNCD_FAKE="$b/global/rlsyncd-fake" selftests/global/pipeline.sh |
	tee -a "$dir/out2"
RLSYNCD_FAKE="$b/global/rlsyncd-fake" selftests/global/batch.sh |
	tee -a "$dir/out2"
RLSYNCD_FAKE="$b/global/rlsyncd-fake" selftests/global/cluster.sh |
	tee -a "$dir/out2"
RLSYNCD_FAKE="$b/global/rlsyncd-fake" selftests/global/fleet.sh 100 1000 |
	tee -a "$dir/out2"
p=$((${p:-0} + $(grep -c '^ok' "$dir/out2" || :)))
f=$((${f:-0} + $(grep -c '^not ok' "$dir/out2" || :)))
[ "$f" -eq 0 ] || rc=1
echo "global: $(($(date +%s) - start)) s"
echo "${p:-0} passed, ${f:-1} failed"
exit $rc
