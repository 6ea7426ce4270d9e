#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# rlsyncd's connection options and errors against a private redis-server
# with a password (requirepass) and ACL users: AUTH with the right and a
# wrong password, none (NOAUTH), an ACL user with only the commands
# rlsyncd(8) lists (an agent runs and loads the library), users without
# +fcall or +function|list (NOPERM), SELECT, unix sockets, [::1] (skipped
# without IPv6 loopback), unreachable hosts; bad addresses refused at
# load with FILE:LINE; an agent that keeps retrying with backoff while its
# password is wrong. Each error line is checked by its text. The
# connection code is the agent's own: rlsyncd-fake --check, which needs
# no module. Run by selftests/global/run.sh with RLSYNCD_FAKE.
set -u

suite='auth'
# shellcheck source=selftests/global/lib.sh
. "$(dirname "$0")/lib.sh"

# The ACL rlsyncd(8) gives admins, and two users that lack a part of it.
acl='~rl:* resetchannels -@all +fcall +function|list +function|load +select +time +hgetall +hmget +hset +hdel +pexpire'
cat >"$tmp/redis.conf" <<EOF
bind 127.0.0.1 -::1
unixsocket $sock
dir $tmp
save ""
appendonly no
logfile $tmp/redis.log
requirepass rightpw
user rl on >rlpw $acl
user nofcall on >rlpw ~rl:* -@all +function|list +select
user nolist on >rlpw ~rl:* -@all +fcall +select
EOF
printf 'rightpw\n' >"$tmp/pw"
printf 'wrongpw\n' >"$tmp/bad"
printf 'rlpw\n' >"$tmp/rlpw"
: >"$tmp/empty"

# A free port: redis-server fails at once on a port in use.
port=$((20000 + $$ % 20000))
for try in 1 2 3 4 5; do
	redis-server "$tmp/redis.conf" --port "$port" &
	rpid=$!
	i=0
	until REDISCLI_AUTH=rightpw redis-cli -s "$sock" PING >/dev/null 2>&1; do
		i=$((i + 1))
		if ! kill -0 "$rpid" 2>/dev/null || [ "$i" -ge 100 ]; then
			break
		fi
		sleep 0.05
	done
	REDISCLI_AUTH=rightpw redis-cli -s "$sock" PING >/dev/null 2>&1 && break
	kill "$rpid" 2>/dev/null; wait "$rpid" 2>/dev/null
	rpid=''
	[ "$try" -lt 5 ] || { echo "not ok - auth: redis-server did not start:"; sed 's/^/#   /' "$tmp/redis.log"; exit 1; }
	port=$((port + 1))
done
cli() { REDISCLI_AUTH=rightpw redis-cli -s "$sock" "$@"; }
cli -x FUNCTION LOAD REPLACE <"$lua" >/dev/null

# ok NAME STATUS PATTERN ARGS...: rlsyncd-fake --check ARGS exits with
# STATUS; with STATUS 0 nothing on stderr, else one line (two with
# STATUS 2: then the --help line) whose first holds PATTERN (fixed).
check()
{
	name=$1 want=$2 pat=$3
	shift 3
	rc=0
	"$d" --lua "$lua" --check "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	lines=$(wc -l <"$tmp/err")
	wl=$((want == 0 ? 0 : want == 2 ? 2 : 1))
	if [ "$rc" -eq "$want" ] && [ "$lines" -eq "$wl" ] &&
		{ [ "$want" -eq 0 ] || head -n 1 "$tmp/err" | grep -qF -- "$pat"; }; then
		echo "ok - auth $name${pat:+: $(head -n 1 "$tmp/err")}"
	else
		echo "not ok - auth $name: rc $rc, $lines lines, wanted $want and '$pat':"
		sed 's/^/#   /' "$tmp/err" "$tmp/out"
	fi
}

u="unix:$sock"
check "right password" 0 "" -r "$u" -P "$tmp/pw" api=100/s
check "wrong password" 1 \
	"rlsyncd: redis $u: AUTH: wrong username or password (WRONGPASS" \
	-r "$u" -P "$tmp/bad" api=100/s
check "no password (NOAUTH)" 1 \
	"rlsyncd: redis $u: FUNCTION LIST: the server needs a password: give password-file = (NOAUTH" \
	-r "$u" api=100/s
check "ACL user" 0 "" -r "unix://$sock" -u rl -P "$tmp/rlpw" api=100/s
check "ACL user, wrong password" 1 "AUTH: wrong username or password (WRONGPASS" \
	-r "$u" -u rl -P "$tmp/pw" api=100/s
check "ACL user without +fcall (NOPERM)" 1 \
	"rlsyncd: redis $u: resource api: FCALL: denied by the ACL of user nofcall; rlsyncd(8) gives the ACL it needs (NOPERM" \
	-r "$u" -u nofcall -P "$tmp/rlpw" api
check "ACL user without +function|list: NOPERM, not an old Redis" 1 \
	"rlsyncd: redis $u: FUNCTION LIST: denied by the ACL of user nolist" \
	-r "$u" -u nolist -P "$tmp/rlpw" api=100/s
if grep -qF "Redis 7.0" "$tmp/err"; then
	echo "not ok - auth NOPERM of FUNCTION LIST says Redis 7.0: $(cat "$tmp/err")"
else
	echo "ok - auth NOPERM of FUNCTION LIST does not blame the version"
fi
check "TCP URL with user and db" 0 "" \
	-r "redis://rl@127.0.0.1:$port/2" -P "$tmp/rlpw" api=100/s
check "a db the server lacks" 1 "SELECT: ERR DB index is out of range" \
	-r "127.0.0.1:$port" -D 99 -P "$tmp/pw" api=100/s
if REDISCLI_AUTH=rightpw redis-cli -h ::1 -p "$port" PING 2>/dev/null | grep -q PONG; then
	check "IPv6 [::1]:PORT" 0 "" -r "[::1]:$port" -P "$tmp/pw" api=100/s
	check "IPv6 redis://[::1]" 0 "" -r "redis://[::1]:$port/1" -P "$tmp/pw" api=100/s
else
	echo "ok - auth IPv6 [::1]:PORT # SKIP no IPv6 loopback on this host"
fi
check "connection refused" 1 \
	"rlsyncd: redis 127.0.0.1:1: cannot connect: Connection refused" \
	-r 127.0.0.1:1 -P "$tmp/pw" api=100/s
check "unknown host" 1 "rlsyncd: redis no-such-host.invalid: cannot connect: " \
	-r no-such-host.invalid -P "$tmp/pw" api=100/s
check "password in a URL on the command line" 2 \
	"rlsyncd: command line: bad redis URL: a password in the URL is refused" \
	-r "redis://rl:rlpw@127.0.0.1:$port" api=100/s
if grep -q rlpw "$tmp/err"; then
	echo "not ok - auth the refused password is not echoed: $(cat "$tmp/err")"
else
	echo "ok - auth the refused password is not echoed"
fi
check "username without a password" 2 "username rl without password-file" \
	-r "$u" -u rl api=100/s
check "an empty password file" 2 "password-file $tmp/empty: empty" \
	-r "$u" -P "$tmp/empty" api=100/s

# systemd's LoadCredential=: %d/NAME in $CREDENTIALS_DIRECTORY.
printf '[global api]\nredis = %s\npassword-file = %%d/pw\nrate = 100/s\n' \
	"$u" >"$tmp/cred.conf"
CREDENTIALS_DIRECTORY=$tmp check "password-file = %d/NAME" 0 "" -c "$tmp/cred.conf"
check "password-file = %d/NAME without \$CREDENTIALS_DIRECTORY" 1 \
	"cred.conf:3: [global api]: password-file %d/pw: \$CREDENTIALS_DIRECTORY is not set" \
	-c "$tmp/cred.conf"

# Bad values refused at load, with FILE:LINE.
bad()
{
	printf '[global api]\nrate = 100/s\n%s\n' "$1" >"$tmp/bad.conf"
	check "refused at load: $1" 1 "bad.conf:3: [global api]: $2" -c "$tmp/bad.conf"
}
bad "redis = localhost:6379x" "bad redis 'localhost:6379x': the port must be a number 1..65535"
bad "redis = localhost:70000" "bad redis 'localhost:70000': the port must be a number 1..65535"
bad "redis = localhost:0" "bad redis 'localhost:0': the port must be a number 1..65535"
bad "redis = localhost:" "bad redis 'localhost:': the port must be a number 1..65535"
bad "redis = ::1:6379" "bad redis '::1:6379': an IPv6 address goes in brackets"
bad "redis = [::1:6379" "bad redis '[::1:6379': no ']' after an IPv6 address"
bad "redis = [::1]x" "bad redis '[::1]x': junk after ']'"
bad "redis = redis://h:6379/x" "bad redis 'redis://h:6379/x': the database after '/' must be a number"
bad "redis = redis://u:secret@h" "bad redis URL: a password in the URL is refused"
bad "redis = http://h" "bad redis 'http://h': unknown scheme (redis://, rediss:// or unix:)"
bad "redis = unix:" "bad redis 'unix:': no socket path"
bad "password = x" "no password key: give password-file ="
bad "password-file = $tmp/none" "password-file $tmp/none: No such file or directory"
bad "db = 1x" "bad db '1x': a number 0..1000000"

# An agent as the ACL user: it loads the library (+function|load), keeps
# its keys in db 3 (SELECT), and gets shares; then its password is
# changed: one line says so, it retries with backoff, and comes back.
cli FUNCTION FLUSH >/dev/null
cli FLUSHALL >/dev/null
RLS_FAKE_DEMAND=$tmp/demand RLS_FAKE_OUT=$tmp/rates "$d" --lua "$lua" \
	-r "redis://rl@127.0.0.1:$port/3" -P "$tmp/rlpw" -S "$tmp" \
	-l 1s -R 100ms api=1000/s >"$tmp/agent.out" 2>"$tmp/agent.all" &
apid=$!
echo 1000 >"$tmp/demand"
i=0
# the simulated limiter has no kernel lease: rlsyncd says so, not counted
errs() { grep -v "the module has no kernel lease" "$tmp/agent.all" >"$tmp/agent.err"; }
until grep -q '^redis_up=1' "$tmp/api" 2>/dev/null && [ -n "$(cli -n 3 KEYS 'rl:{api}:*')" ]; do
	i=$((i + 1))
	[ "$i" -lt 60 ] || break
	sleep 0.1
done
errs
if grep -q '^redis_up=1' "$tmp/api" 2>/dev/null && [ ! -s "$tmp/agent.err" ] &&
	[ "$(cli FUNCTION LIST LIBRARYNAME ratelimit | grep -c '^rl_')" -gt 0 ] &&
	[ -n "$(cli -n 3 KEYS 'rl:{api}:*')" ] && [ -z "$(cli -n 0 KEYS 'rl:*')" ]; then
	echo "ok - auth an agent as the ACL user of rlsyncd(8): library loaded, keys in db 3"
else
	echo "not ok - auth an agent as the ACL user: $(cat "$tmp/agent.err")"
fi
cli ACL LOG RESET >/dev/null
cli ACL SETUSER rl resetpass '>otherpw' >/dev/null
cli CLIENT KILL USER rl >/dev/null
sleep 2
# the failed AUTHs: one entry of the ACL log, counted
denied=$(cli ACL LOG | awk 'p { print; exit } /^count$/ { p = 1 }')
denied=${denied:-0}
cli ACL SETUSER rl resetpass '>rlpw' >/dev/null
i=0
until grep -q "reachable again" "$tmp/agent.out"; do
	i=$((i + 1))
	[ "$i" -lt 100 ] || break
	sleep 0.1
done
errs
line="api: redis redis://rl@127.0.0.1:$port/3: AUTH: wrong username or password (WRONGPASS"
# 2 s at refresh 100 ms: 20 tries without backoff; 100+200+400+800 ms..
if [ "$(wc -l <"$tmp/agent.err")" -eq 1 ] && grep -qF "$line" "$tmp/agent.err" &&
	grep -q "keeping the lease until it ends$" "$tmp/agent.err" &&
	[ "$denied" -ge 2 ] && [ "$denied" -le 8 ] &&
	grep -q "^rlsyncd: api: redis reachable again$" "$tmp/agent.out"; then
	echo "ok - auth a wrong password while running: one line, $denied tries in 2 s (backoff), back after: $(cat "$tmp/agent.err")"
else
	echo "not ok - auth a wrong password while running: $denied tries in 2 s:"
	sed 's/^/#   /' "$tmp/agent.err" "$tmp/agent.out"
fi
kill "$apid" 2>/dev/null
wait "$apid" 2>/dev/null
apid=''
