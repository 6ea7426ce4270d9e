#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# The keys of an older library read by this one (tools/global/ratelimit.lua
# packs the numbers it stores; older libraries wrote them as text): a
# resource of 100 members written as an older library left it (the
# configuration without its field "packed", each member and the cached
# round as text, the epoch), then renewed with this library:
#   - the epoch and its learning state are kept, the shares are those of
#     the text (the fair share of 10000/s among 100 hosts), and what the
#     call wrote is packed (the member, the configuration), though the
#     call (rl_lease_many) renewed a resource of this library's first;
#   - rl_config with the same configuration changes nothing (version);
#   - a configuration changed by rl_config is the one the next call
#     reads (the round, which carries its configuration, dropped);
#   - one changed as an older library changes it (its fields and
#     "version", not "packed", the round left) is the one a call reads
#     from the next round on (half a refresh), and not before;
#   - rl_info shows no packed field.
#   selftests/global/format.sh (make check-global-redis, through run.sh)
set -eu

suite='format'
d=none
# shellcheck source=selftests/global/lib.sh
. "$(dirname "$0")/lib.sh"

# shellcheck disable=SC2119 # no prefix: redis-server itself
redis_up
cli() { redis-cli -s "$sock" "$@"; }
cli -x FUNCTION LOAD REPLACE <"$lua" >/dev/null

r=old
k="rl:{$r}:cfg rl:{$r}:epoch rl:{$r}:members"
now=$(cli TIME | tr -d '\r' | awk 'NR == 1 { s = $1 } NR == 2 { printf "%.0f", s * 1000 + $1 / 1000 }')
cli HSET "rl:{$r}:cfg" by old mode lease algorithm fair capacity 10000 \
	lease_ms 6000 refresh_ms 1000 hold_ms 0 static 0 burst 0 \
	version 1 >/dev/null
cli HSET "rl:{$r}:epoch" id 1700000000000 learn_until 0 >/dev/null
# 100 members of 100/s each, leases of 6 s from now, counted for 100
j=0
while [ "$j" -lt 100 ]; do
	printf 'HSET rl:{%s}:members h%d "100.000000 100.000000 0.000000 0.000 %d.000 %d.000 1.000000 0.000000 100.000000"\n' \
		"$r" "$j" $((now + 6000)) $((now + 6000))
	j=$((j + 1))
done | cli >/dev/null
cli HSET "rl:{$r}:members" '' "$now.000 1 -1.000000000 -1.000000000000 10000.000000" >/dev/null

# a resource of this library's, 100 members and its round, renewed in the
# same call first: nothing of its round or member is taken for old's
n=new
kn="rl:{$n}:cfg rl:{$n}:epoch rl:{$n}:members"
# shellcheck disable=SC2086 # the keys: words
cli FCALL rl_config 3 $kn new lease 10000 fair 600000 100000 0 0 0 >/dev/null
cli HSET "rl:{$n}:epoch" learn_until 0 >/dev/null
j=0
while [ "$j" -lt 100 ]; do
	echo "FCALL rl_lease 3 $kn h$j 100 100 1 0"
	j=$((j + 1))
done | cli >/dev/null
# shellcheck disable=SC2086 # the keys: words
got=$(cli FCALL rl_lease_many 6 $kn $k h7 100 100 1 0 h7 100 100 1 0 |
	tr -d '\r' | sed -n '10,18p' | tr '\n' ' ')
# shellcheck disable=SC2086
h8=$(cli FCALL rl_lease 3 $k h8 200 100 1 0 | tr -d '\r' | head -n 1)
byte=$(cli HGET "rl:{$r}:members" h7 | head -c 1 | od -An -tu1 | tr -d ' ')
text=$(cli HGET "rl:{$r}:members" h9 | cut -c1-10)
packed=$(cli HEXISTS "rl:{$r}:cfg" packed)
# shellcheck disable=SC2086 # the reply's words
set -- $got
check "an older library's keys" "\"$1\" == \"100.000000\" && \"$6\" == 0 && \"$7\" == \"1700000000000\" && \"$h8\" == \"100.000000\" && \"$byte\" == 1 && \"$text\" == \"100.000000\" && \"$packed\" == 1" \
	"h7 of 100 text members: has $1 (100/s: 10000 among 100), learning $6, epoch $7 (1700000000000 kept); h8 asking 200: $h8 (10000 taken); h7's field now packed (first byte $byte), h9's still text ($text...), configuration packed: $packed"

# shellcheck disable=SC2086
v=$(cli FCALL rl_config 3 $k again lease 10000 fair 6000 1000 0 0 0 | tr -d '\r' | tr '\n' ' ')
check "same configuration" "\"$v\" == \"1 0 \"" \
	"rl_config of the same configuration: version and changed $v(1 0)"

# changed by rl_config: the round, which carries the configuration it was
# computed for, is dropped, and the next call reads the new one
# shellcheck disable=SC2086
v=$(cli FCALL rl_config 3 $k again lease 8000 fair 6000 3000 0 0 0 | tr -d '\r' | tr '\n' ' ')
# shellcheck disable=SC2046,SC2086 # the keys, the reply's words
set -- $(cli FCALL rl_lease 3 $k h7 100 100 1 0 | tr -d '\r' | tr '\n' ' ')
byte=$(cli HGET "rl:{$r}:members" '' | head -c 1 | od -An -tu1 | tr -d ' ')
check "configuration changed" "\"$v\" == \"2 1 \" && $1 <= 80.000001 && \"$9\" == 2 && \"$byte\" == 2" \
	"rl_config of capacity 8000, refresh 3000 ms: version and changed $v(2 1); the next call: h7 has $1 (at most 80 of 8000 among 100), version $9; the new round carries it (first byte $byte)"

# as an older library changes it: its fields and the version, not
# "packed", and the round left as it was: read at the next round, when
# the round is half a refresh old (1.5 s: the first round of a version
# is not steady, so it lasts half a refresh)
cli HSET "rl:{$r}:cfg" capacity 5000 version 3 >/dev/null
# shellcheck disable=SC2046,SC2086 # the keys, the reply's words
set -- $(cli FCALL rl_lease 3 $k h7 100 100 1 0 | tr -d '\r' | tr '\n' ' ')
v=$9
sleep 1.6
# shellcheck disable=SC2086
got=$(cli FCALL rl_lease 3 $k h7 100 100 1 0 | tr -d '\r' | tr '\n' ' ')
# shellcheck disable=SC2086
set -- $got
# shellcheck disable=SC2086
info=$(cli FCALL rl_info 3 $k | tr -d '\r' | grep -c '^packed$' || :)
check "configuration of an older library" "\"$v\" == 2 && $1 <= 50.000001 && \"$9\" == 3 && $info == 0" \
	"capacity 5000 and version 3 written without \"packed\": version $v before the next round (the round's), then h7 has $1 (at most 50 of 5000 among 100), version $9; rl_info shows \"packed\" $info times"
