#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# rlsyncd's start-up errors, which need no kernel: each bad input gives
# one line on stderr, exit status 1, and leaves Redis as it was (no key
# written); a bad command line gives that line and the --help line, exit
# status 2. --check writes nothing, not even the function library, and
# fails in one line without the module. Run by selftests/global/run.sh
# with RLSYNCD (the binary), RLSYNCD_FAKE (rlsyncd on a simulated
# limiter, for a --check that passes on a host without the module) and
# REDIS_SOCK (a private redis-server with the library loaded).
set -u

d=${RLSYNCD:?}
fake=${RLSYNCD_FAKE:?}
sock=${REDIS_SOCK:?}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlsyncd.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
lua=tools/global/ratelimit.lua

# expect NAME PATTERN ARGS...: rlsyncd ARGS fails with one line matching
# PATTERN, and Redis holds no key afterwards. With STATUS=2 in the
# environment: a usage error, status 2, its line then the --help line.
expect()
{
	name=$1 pat=$2 want=${STATUS:-1}
	shift 2
	redis-cli -s "$sock" FLUSHALL >/dev/null
	rc=0
	"$d" --lua "$lua" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	lines=$(wc -l <"$tmp/err")
	keys=$(redis-cli -s "$sock" DBSIZE)
	if [ "$want" -eq 2 ]; then
		wlines=2
		help=$(sed -n 2p "$tmp/err")
	else
		wlines=1
		help="Try 'rlsyncd --help' for more information."
	fi
	if [ "$rc" -eq "$want" ] && [ "$lines" -eq "$wlines" ] &&
		[ "$keys" -eq 0 ] && [ ! -s "$tmp/out" ] &&
		[ "$help" = "Try 'rlsyncd --help' for more information." ] &&
		head -n 1 "$tmp/err" | grep -q -- "$pat"; then
		echo "ok - rlsyncd $name: $(head -n 1 "$tmp/err")"
	else
		echo "not ok - rlsyncd $name: rc $rc, $lines lines, $keys keys:"
		sed 's/^/#   /' "$tmp/err" "$tmp/out"
	fi
}

# The library's functions in Redis: 0 when it lacks the library.
library()
{
	redis-cli -s "$sock" FUNCTION LIST LIBRARYNAME ratelimit |
		grep -c '^rl_' || :
}

expect "wrong redis address" "redis 127.0.0.1:1: cannot connect: Connection refused" \
	--redis 127.0.0.1:1 api=5000/s
STATUS=2 expect "bad redis address" \
	"bad redis 'localhost:99999': the port must be a number 1..65535" \
	--redis "localhost:99999" api=5000/s
STATUS=2 expect "global rate of 0" "rate of 0" --redis "unix:$sock" api=0
STATUS=2 expect "bad cluster" "bad cluster 'maybe': yes or no" --cluster maybe api=1/s
STATUS=2 expect "cluster with a db" "cluster = yes with db 2: a Redis Cluster has only database 0" \
	--cluster yes --db 2 api=1/s
expect "cluster = yes on a plain server" \
	"redis unix:$sock: CLUSTER SLOTS: ERR This instance has cluster support disabled" \
	--redis "unix:$sock" --cluster yes api=5000/s
STATUS=2 expect "bad rate" "bad rate" --redis "unix:$sock" api=5000/s:x
STATUS=2 expect "unknown option" "^rlsyncd: " --bogus api=1/s
STATUS=2 expect "missing operand" "nothing to link" --redis "unix:$sock"
STATUS=2 expect "bad number" "bad lease '10x'" -l 10x api=1/s
STATUS=2 expect "bad name" "'a/b=1/s': bad limiter or resource name" a/b=1/s
STATUS=2 expect "bad hash tag" "'a@{api=1/s': bad limiter or resource name" 'a@{api=1/s'
STATUS=2 expect "links and --config" "give links or --config, not both" \
	-c /nonexistent api=1/s
expect "unknown resource" "unknown resource nope at redis" \
	--redis "unix:$sock" api@nope
expect "unknown resource behind a hash tag" \
	"unknown resource {api}.users at redis" --redis "unix:$sock" 'api@{api}.users'
printf '[api]\nrate = 1/s\n[global api]\nrate = 100/s\nlease = 10x\n' \
	>"$tmp/bad.conf"
expect "bad config line" "bad.conf:5: \[global api\]: bad lease '10x'" \
	--redis "unix:$sock" -c "$tmp/bad.conf"
printf '[global api]\nrate = 100/s\nmode = batch\n' >"$tmp/batch.conf"
expect "batch mode without the module" "api: cannot open the local limiter" \
	--redis "unix:$sock" -c "$tmp/batch.conf"
STATUS=2 expect "refresh above half the lease" "refresh must be" \
	--redis "unix:$sock" -l 1s -R 800ms api=1/s

# --help and --version: on stdout, status 0.
for opt in --help --version; do
	rc=0
	"$d" "$opt" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ "$rc" -eq 0 ] && [ ! -s "$tmp/err" ] &&
		grep -q "rlsyncd" "$tmp/out"; then
		echo "ok - rlsyncd $opt: on stdout, status 0"
	else
		echo "not ok - rlsyncd $opt: rc $rc: $(cat "$tmp/err")"
	fi
done

# --check changes nothing anywhere, not even the function library of an
# empty Redis (reads only: FUNCTION LIST).
redis-cli -s "$sock" FUNCTION FLUSH >/dev/null
redis-cli -s "$sock" FLUSHALL >/dev/null
# Without the module: one line, status 1. (Not on a host that has it.)
if [ -e /dev/ratelimit ]; then
	echo "ok - rlsyncd --check without the module # SKIP /dev/ratelimit exists"
else
	rc=0
	"$d" --lua "$lua" --redis "unix:$sock" --check api=5000/s \
		>"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
		grep -q "^rlsyncd: /dev/ratelimit: No such file or directory (is ratelimit.ko loaded? modprobe ratelimit)$" \
			"$tmp/err" &&
		[ "$(library)" -eq 0 ] &&
		[ "$(redis-cli -s "$sock" DBSIZE)" -eq 0 ]; then
		echo "ok - rlsyncd --check without the module: $(cat "$tmp/err")"
	else
		echo "not ok - rlsyncd --check without the module: rc $rc, library $(library):"
		sed 's/^/#   /' "$tmp/err"
	fi
fi
# On a simulated limiter: passes, says it would load the library, and
# neither loads it nor writes a key; then with the library loaded.
rc=0
"$fake" --lua "$lua" --redis "unix:$sock" --check api=5000/s \
	>"$tmp/out" 2>"$tmp/err" || rc=$?
if [ "$rc" -eq 0 ] && [ ! -s "$tmp/err" ] && [ "$(library)" -eq 0 ] &&
	grep -q "lacks the library; the agent would load" "$tmp/out" &&
	[ "$(redis-cli -s "$sock" DBSIZE)" -eq 0 ]; then
	echo "ok - rlsyncd --check: a good link passes, the library not loaded, no key written"
else
	echo "not ok - rlsyncd --check on an empty Redis: rc $rc, library $(library): $(cat "$tmp/err" "$tmp/out")"
fi
redis-cli -s "$sock" -x FUNCTION LOAD REPLACE <"$lua" >/dev/null
rc=0
"$fake" --lua "$lua" --redis "unix:$sock" --check api=5000/s \
	>"$tmp/out" 2>"$tmp/err" || rc=$?
if [ "$rc" -eq 0 ] && [ ! -s "$tmp/err" ] && [ ! -s "$tmp/out" ] &&
	[ "$(redis-cli -s "$sock" DBSIZE)" -eq 0 ]; then
	echo "ok - rlsyncd --check: a good link passes with the library loaded"
else
	echo "not ok - rlsyncd --check with the library: rc $rc: $(cat "$tmp/err" "$tmp/out")"
fi
