#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# rlsyncd's start-up errors, which need no kernel: each bad input gives
# one line on stderr, exit status 1, and leaves Redis as it was (no key
# written). Run by selftests/global/run.sh with RLSYNCD (the binary) and
# REDIS_SOCK (a private redis-server with the library loaded).
set -u

d=${RLSYNCD:?}
sock=${REDIS_SOCK:?}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlsyncd.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
lua=tools/global/ratelimit.lua

# expect NAME PATTERN ARGS...: rlsyncd ARGS fails with one line matching
# PATTERN, and Redis holds no key afterwards.
expect()
{
	name=$1 pat=$2
	shift 2
	redis-cli -s "$sock" FLUSHALL >/dev/null
	rc=0
	"$d" --lua "$lua" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	lines=$(wc -l <"$tmp/err")
	keys=$(redis-cli -s "$sock" DBSIZE)
	if [ "$rc" -eq 1 ] && [ "$lines" -eq 1 ] && [ "$keys" -eq 0 ] &&
		grep -q -- "$pat" "$tmp/err"; then
		echo "ok - rlsyncd $name: $(cat "$tmp/err")"
	else
		echo "not ok - rlsyncd $name: rc $rc, $lines lines, $keys keys:"
		sed 's/^/#   /' "$tmp/err"
	fi
}

expect "wrong redis address" "redis 127.0.0.1:1: Connection refused" \
	--redis 127.0.0.1:1 api=5000/s
expect "bad redis address" "bad address" --redis "localhost:99999" api=5000/s
expect "global rate of 0" "rate of 0" --redis "unix:$sock" api=0
expect "bad rate" "bad rate" --redis "unix:$sock" api=5000/s:x
expect "unknown resource" "unknown resource nope at redis" \
	--redis "unix:$sock" api@nope
printf '[api]\nrate = 1/s\n[global api]\nrate = 100/s\nlease = 10x\n' \
	>"$tmp/bad.conf"
expect "bad config line" "bad.conf:5: \[global api\]: bad lease '10x'" \
	--redis "unix:$sock" -c "$tmp/bad.conf"
printf '[global api]\nrate = 100/s\nmode = batch\n' >"$tmp/batch.conf"
expect "batch mode without the module" "api: cannot open the local limiter" \
	--redis "unix:$sock" -c "$tmp/batch.conf"
expect "refresh above half the lease" "refresh must be" \
	--redis "unix:$sock" -l 1s -R 800ms api=1/s
# --check: Redis reachable, a valid link; nothing changed but the library.
redis-cli -s "$sock" FLUSHALL >/dev/null
if "$d" --lua "$lua" --redis "unix:$sock" --check api=5000/s 2>"$tmp/err" &&
	[ ! -s "$tmp/err" ] && [ "$(redis-cli -s "$sock" DBSIZE)" -eq 0 ]; then
	echo "ok - rlsyncd --check: a good link passes, no key written"
else
	echo "not ok - rlsyncd --check: $(cat "$tmp/err")"
fi
redis-cli -s "$sock" -x FUNCTION LOAD REPLACE <"$lua" >/dev/null
