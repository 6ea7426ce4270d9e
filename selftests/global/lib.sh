# SPDX-License-Identifier: GPL-2.0-only
#
# selftests/global/lib.sh: what the scripts of make check-global-redis
# share, sourced with $suite set (the name on each of their TAP lines):
# $d, the agent (rlsyncd-fake: $RLSYNCD_FAKE, unless the script set it),
# $tmp, a directory of its own removed at exit, $sock and $lua. At exit
# every pid in $pids, $apid, $rpid and $rpids is killed, and with
# KEEP=DIR the agents' *.out and *.log files are copied there first.
# shellcheck shell=sh disable=SC2034 # the variables are the scripts'

d=${d:-${RLSYNCD_FAKE:?}}
: "${suite:?}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rl-$suite.XXXXXX")
sock=$tmp/r.sock
lua=tools/global/ratelimit.lua
pids='' apid='' rpid='' rpids=''

# shellcheck disable=SC2317 # called by the trap
cleanup()
{
	for p in $pids $apid $rpid $rpids; do kill -9 "$p" 2>/dev/null || :; done
	[ -z "${KEEP:-}" ] || cp "$tmp"/*.out "$tmp"/*.log "$KEEP"/ 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

now() { date +%s%3N; }

# stopped LOG: a rate of 0 appended to LOG, a simulated limiter's, once
# its agent is reaped. The limiter's lines carry fractions of a
# millisecond and now() does not: stamped .999, the mark sorts after the
# last line the agent wrote, even one written in the millisecond of its
# kill (a mark stamped before the kill once left a dead host's rate in
# agents.sh's sum: 7,500 of 5,000).
stopped() { echo "$(now).999 0.000" >>"$1"; }

# shellcheck source=selftests/global/ports.sh
. "$(dirname "$0")/ports.sh"

# redis_up [PREFIX...]: a private redis-server on $sock in $tmp, no
# persistence, run by PREFIX (valgrind ..., say) when given; its pid in
# $rpid; returns once it answers PING, or exits with a TAP line after
# 20 s.
redis_up()
{
	"$@" redis-server --port 0 --unixsocket "$sock" --dir "$tmp" \
		--save '' --appendonly no --logfile "$tmp/redis.log" &
	rpid=$!
	i=0
	until redis-cli -s "$sock" PING >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -lt 400 ] || { echo "not ok - $suite: no redis"; exit 1; }
		sleep 0.05
	done
}

# check NAME CONDITION(awk) FIGURES: one TAP line
check()
{
	if awk "BEGIN { exit !($2) }"; then
		echo "ok - $suite $1: $3"
	else
		echo "not ok - $suite $1: $3"
	fi
}
