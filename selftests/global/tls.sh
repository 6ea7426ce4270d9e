#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# rlsyncd over TLS (rediss://) against a private redis-server with a TLS
# port (--tls-port) and a plain-text one, and certificates the test makes
# with openssl: a CA, a server certificate for localhost, 127.0.0.1 and
# ::1, a client certificate; a second CA that signed neither. Checked:
# the right CA by IP address and by name (and [::1] where there is IPv6
# loopback); a wrong CA, a wrong server name, a TLS client on the plain
# port and a plain client on the TLS port, each by its error line;
# tls-verify = no (a warning, no error); a server that wants client
# certificates (tls-auth-clients yes): none, one of another CA, the right
# one; the TLS options refused at load with FILE:LINE; an agent on a
# simulated limiter over TLS with a client certificate and a password,
# whose connection is killed: it connects again. The connection code is the
# agent's own: rlsyncd-fake (--check or running), which needs no module.
# Run by selftests/global/run.sh with RLSYNCD_FAKE.
set -u

suite='tls'
# shellcheck source=selftests/global/lib.sh
. "$(dirname "$0")/lib.sh"

# The certificates: EC keys, valid for a day.
cert()	# NAME SUBJECT CA [EXTENSIONS]
{
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$tmp/$1.key" -out "$tmp/$1.csr" -subj "$2" 2>/dev/null &&
	printf '%s\n' "${4:-basicConstraints=CA:FALSE}" >"$tmp/$1.ext" &&
	openssl x509 -req -in "$tmp/$1.csr" -CA "$tmp/$3.crt" \
		-CAkey "$tmp/$3.key" -CAcreateserial -days 1 \
		-extfile "$tmp/$1.ext" -out "$tmp/$1.crt" 2>/dev/null
}
ca()	# NAME SUBJECT
{
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -keyout "$tmp/$1.key" -out "$tmp/$1.crt" -days 1 \
		-subj "$2" 2>/dev/null
}
if ! ca ca "/CN=rlsyncd test CA" || ! ca other "/CN=another CA" ||
	! cert server "/CN=localhost" ca \
		"subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1" ||
	! cert client "/CN=rlsyncd" ca || ! cert stranger "/CN=rlsyncd" other; then
	echo "not ok - tls: openssl could not make the certificates"
	exit 1
fi
printf 'tlspw\n' >"$tmp/pw"

# A plain-text port and a TLS port, free: redis-server fails at once on
# a port in use.
port=$((20000 + ($$ * 7 + 5000) % 20000))
for try in 1 2 3 4 5; do
	tport=$((port + 1))
	redis-server --port "$port" --tls-port "$tport" --bind "127.0.0.1 -::1" \
		--unixsocket "$sock" --dir "$tmp" --save '' --appendonly no \
		--logfile "$tmp/redis.log" --requirepass tlspw \
		--tls-cert-file "$tmp/server.crt" --tls-key-file "$tmp/server.key" \
		--tls-ca-cert-file "$tmp/ca.crt" --tls-auth-clients no &
	rpid=$!
	i=0
	until REDISCLI_AUTH=tlspw redis-cli -s "$sock" PING >/dev/null 2>&1; do
		i=$((i + 1))
		if ! kill -0 "$rpid" 2>/dev/null || [ "$i" -ge 100 ]; then
			break
		fi
		sleep 0.05
	done
	REDISCLI_AUTH=tlspw redis-cli -s "$sock" PING >/dev/null 2>&1 && break
	kill "$rpid" 2>/dev/null; wait "$rpid" 2>/dev/null
	rpid=''
	if [ "$try" -eq 5 ]; then
		echo "not ok - tls: redis-server did not start:"
		sed 's/^/#   /' "$tmp/redis.log"
		exit 1
	fi
	port=$((port + 2))
done
cli() { REDISCLI_AUTH=tlspw redis-cli -s "$sock" "$@"; }
cli -x FUNCTION LOAD REPLACE <"$lua" >/dev/null

# check NAME STATUS PATTERN ARGS...: rlsyncd-fake --check ARGS exits with
# STATUS; with STATUS 0 nothing on stderr (or one line holding PATTERN
# if given), else one line (two with STATUS 2: then the --help line)
# whose first holds PATTERN (fixed).
check()
{
	name=$1 want=$2 pat=$3
	shift 3
	rc=0
	"$d" --lua "$lua" --check -P "$tmp/pw" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	lines=$(wc -l <"$tmp/err")
	wl=$((want == 2 ? 2 : want == 1 ? 1 : 0))
	[ "$want" -ne 0 ] || [ -z "$pat" ] || wl=1
	if [ "$rc" -eq "$want" ] && [ "$lines" -eq "$wl" ] &&
		{ [ -z "$pat" ] || head -n 1 "$tmp/err" | grep -qF -- "$pat"; }; then
		echo "ok - tls $name${pat:+: $(head -n 1 "$tmp/err")}"
	else
		echo "not ok - tls $name: rc $rc, $lines lines, wanted $want and '$pat':"
		sed 's/^/#   /' "$tmp/err" "$tmp/out"
	fi
}

ca_=$tmp/ca.crt
s="rediss://127.0.0.1:$tport"
check "the right CA, by IP address" 0 "" -r "$s" --tls-ca-file "$ca_" api=100/s
check "the right CA, by name (SNI)" 0 "" -r "rediss://localhost:$tport/1" \
	--tls-ca-file "$ca_" api=100/s
if REDISCLI_AUTH=tlspw redis-cli -h ::1 -p "$port" PING 2>/dev/null | grep -q PONG; then
	check "the right CA, IPv6 [::1]" 0 "" -r "rediss://[::1]:$tport" \
		--tls-ca-file "$ca_" api=100/s
else
	echo "ok - tls the right CA, IPv6 [::1] # SKIP no IPv6 loopback on this host"
fi
check "a name given by tls-server-name" 0 "" -r "rediss://127.0.0.1:$tport" \
	--tls-ca-file "$ca_" --tls-server-name localhost api=100/s
check "a wrong CA" 1 \
	"rlsyncd: redis $s: TLS: certificate verification failed: self-signed certificate in certificate chain (the server's CA is not in tls-ca-file $tmp/other.crt)" \
	-r "$s" --tls-ca-file "$tmp/other.crt" api=100/s
check "no tls-ca-file: the system's CAs do not know the test's" 1 \
	"rlsyncd: redis $s: TLS: certificate verification failed: self-signed certificate in certificate chain (the server's CA is not in the system's CAs)" \
	-r "$s" api=100/s
check "a wrong server name" 1 \
	"rlsyncd: redis $s: TLS: certificate verification failed: hostname mismatch: it is not for wrong.example (tls-server-name =)" \
	-r "$s" --tls-ca-file "$ca_" --tls-server-name wrong.example api=100/s
check "a wrong IP address" 1 \
	"TLS: certificate verification failed: IP address mismatch: it is not for 127.0.0.2" \
	-r "$s" --tls-ca-file "$ca_" --tls-server-name 127.0.0.2 api=100/s
check "rediss:// to the plain-text port" 1 \
	"rlsyncd: redis rediss://127.0.0.1:$port: TLS handshake: no answer in 3000 ms (a plain-text port? rediss:// needs the server's tls-port)" \
	-r "rediss://127.0.0.1:$port" --tls-ca-file "$ca_" api=100/s
check "redis:// to the TLS port" 1 \
	"(a TLS port? give a rediss:// URL)" -r "redis://127.0.0.1:$tport" api=100/s
check "tls-verify = no: a warning, and it connects" 0 \
	"rlsyncd: api: warning: tls-verify = no: the server's certificate is not checked" \
	-r "$s" --tls-ca-file "$tmp/other.crt" --tls-verify no api=100/s

# A server that wants a certificate of its CA from each client.
cli CONFIG SET tls-auth-clients yes >/dev/null
# The server's alert, or its reset first (then the alert is lost): the
# line says what is likely wrong either way.
check "client certificates wanted, none given" 1 \
	"give tls-cert-file and tls-key-file)" \
	-r "$s" --tls-ca-file "$ca_" api=100/s
check "client certificates wanted, one of another CA" 1 \
	"the certificate of tls-cert-file" \
	-r "$s" --tls-ca-file "$ca_" --tls-cert-file "$tmp/stranger.crt" \
	--tls-key-file "$tmp/stranger.key" api=100/s
check "client certificates wanted, the right one" 0 "" -r "$s" \
	--tls-ca-file "$ca_" --tls-cert-file "$tmp/client.crt" \
	--tls-key-file "$tmp/client.key" api=100/s
check "a key that is not the certificate's" 1 \
	"rlsyncd: redis $s: TLS: tls-key-file $tmp/stranger.key: key values mismatch" \
	-r "$s" --tls-ca-file "$ca_" --tls-cert-file "$tmp/client.crt" \
	--tls-key-file "$tmp/stranger.key" api=100/s
check "a CA file that holds no certificate" 1 \
	"rlsyncd: redis $s: TLS: tls-ca-file $tmp/client.key: no certificate or crl found" \
	-r "$s" --tls-ca-file "$tmp/client.key" api=100/s

# The key through systemd's LoadCredential=: %d/NAME.
printf '[global api]\nredis = %s\ntls-ca-file = %s\ntls-cert-file = %s\ntls-key-file = %%d/client.key\nrate = 100/s\n' \
	"$s" "$ca_" "$tmp/client.crt" >"$tmp/cred.conf"
CREDENTIALS_DIRECTORY=$tmp check "tls-key-file = %d/NAME" 0 "" -c "$tmp/cred.conf"

# Bad values refused at load, with FILE:LINE.
bad()
{
	printf '[global api]\nrate = 100/s\n%s\n' "$1" >"$tmp/bad.conf"
	check "refused at load: $1" 1 "bad.conf:3: [global api]: $2" -c "$tmp/bad.conf"
}
bad "redis = rediss://h:65536" "bad redis 'rediss://h:65536': the port must be a number 1..65535"
bad "redis = rediss://h:6379x" "bad redis 'rediss://h:6379x': the port must be a number 1..65535"
bad "redis = rediss://[::1]:6379x" "bad redis 'rediss://[::1]:6379x': the port must be a number 1..65535"
bad "redis = rediss://::1" "bad redis 'rediss://::1': an IPv6 address goes in brackets"
bad "redis = rediss://[::1" "bad redis 'rediss://[::1': no ']' after an IPv6 address"
bad "redis = rediss://u:pw@h" "bad redis URL: a password in the URL is refused"
bad "tls-ca-file = $tmp/none.crt" "tls-ca-file $tmp/none.crt: No such file or directory"
bad "tls-verify = maybe" "bad tls-verify 'maybe': yes or no"
bad "tls-server-name = a b" "bad tls-server-name 'a b'"
bad "tls-ca-file = $ca_" "tls-ca-file without a rediss:// URL"
printf '[global api]\nredis = %s\nrate = 100/s\ntls-key-file = %s\n' "$s" \
	"$tmp/client.key" >"$tmp/bad.conf"
check "refused at load: a key without a certificate" 1 \
	"bad.conf:4: [global api]: tls-key-file without tls-cert-file" -c "$tmp/bad.conf"

# An agent over TLS with a client certificate and a password, from a
# file: it loads the library and gets shares; its connection is killed:
# it connects again at once (rlsyncd(8): only a failed reconnect is an
# error line); a reload of the same file keeps its connection.
cli FUNCTION FLUSH >/dev/null
cli FLUSHALL >/dev/null
printf '[global api]\nredis = rediss://localhost:%s/2\npassword-file = %s\ntls-ca-file = %s\ntls-cert-file = %s\ntls-key-file = %s\nrate = 1000/s\nlease = 1s\nrefresh = 100ms\n' \
	"$tport" "$tmp/pw" "$ca_" "$tmp/client.crt" "$tmp/client.key" >"$tmp/agent.conf"
RLS_FAKE_DEMAND=$tmp/demand RLS_FAKE_OUT=$tmp/rates "$d" --lua "$lua" \
	-c "$tmp/agent.conf" -S "$tmp" >"$tmp/agent.out" 2>"$tmp/agent.all" &
apid=$!
echo 1000 >"$tmp/demand"
# the simulated limiter has no kernel lease: rlsyncd says so, not counted
errs() { grep -v "the module has no kernel lease" "$tmp/agent.all" >"$tmp/agent.err"; }
i=0
until grep -q '^redis_up=1' "$tmp/api" 2>/dev/null &&
	[ -n "$(cli -n 2 KEYS 'rl:{api}:*')" ]; do
	i=$((i + 1))
	[ "$i" -lt 60 ] || break
	sleep 0.1
done
errs
if grep -q '^redis_up=1' "$tmp/api" 2>/dev/null && [ ! -s "$tmp/agent.err" ] &&
	[ "$(cli FUNCTION LIST LIBRARYNAME ratelimit | grep -c '^rl_')" -gt 0 ] &&
	[ -n "$(cli -n 2 KEYS 'rl:{api}:*')" ] &&
	cli CLIENT LIST | grep -q 'db=2'; then
	echo "ok - tls an agent over TLS with a client certificate: library loaded, keys in db 2"
else
	echo "not ok - tls an agent over TLS: $(cat "$tmp/agent.err")"
fi
# its connection over TLS, by client id
conn() { cli CLIENT LIST | sed -n "s/^id=\([0-9]*\) .*laddr=[^ ]*:$tport .*/\1/p"; }
was=$(conn)
cli CLIENT KILL ID "${was:-0}" >/dev/null
i=0
until [ -n "$(conn)" ] && [ "$(conn)" != "$was" ] &&
	grep -q '^redis_up=1' "$tmp/api" 2>/dev/null; do
	i=$((i + 1))
	[ "$i" -lt 50 ] || break
	sleep 0.1
done
errs
now=$(conn)
if [ -n "$was" ] && [ -n "$now" ] && [ "$now" != "$was" ] &&
	[ ! -s "$tmp/agent.err" ] && grep -q '^redis_up=1' "$tmp/api"; then
	echo "ok - tls a connection killed: the agent connects again over TLS (client $was, then $now), no error"
else
	echo "not ok - tls a connection killed: client $was, then $now:"
	sed 's/^/#   /' "$tmp/agent.err" "$tmp/agent.out"
fi

# A reload (SIGHUP) of the same file keeps the link and its connection.
kill -HUP "$apid"
i=0
until grep -q "^rlsyncd: reloaded" "$tmp/agent.out"; do
	i=$((i + 1))
	[ "$i" -lt 50 ] || break
	sleep 0.1
done
sleep 0.3
errs
if grep -q "^rlsyncd: reloaded $tmp/agent.conf: 1 links$" "$tmp/agent.out" &&
	[ "$(conn)" = "$now" ] && [ ! -s "$tmp/agent.err" ]; then
	echo "ok - tls a reload of the same file keeps the TLS connection (client $now)"
else
	echo "not ok - tls a reload: client $now, then $(conn):"
	sed 's/^/#   /' "$tmp/agent.err" "$tmp/agent.out"
fi
kill "$apid" 2>/dev/null
wait "$apid" 2>/dev/null
apid=''
