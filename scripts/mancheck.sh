#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# mancheck.sh LIB MANDIR: every function LIB (libratelimit.so.1) exports
# has a page in MANDIR/man3 (its own, or a link to the page that
# documents it, as make install-man puts there), man finds it, and no
# rl_* page is left there for a function the library does not export.
# make mancheck runs it on a scratch install; make check does too.
set -eu

lib=$1
mandir=$2
rc=0

syms=$(nm -D --defined-only "$lib" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }')
[ -n "$syms" ] || { echo "mancheck: $lib exports no function" >&2; exit 1; }
n=0
for s in $syms; do
	n=$((n + 1))
	if [ ! -e "$mandir/man3/$s.3" ]; then
		echo "mancheck: $s: no $mandir/man3/$s.3" >&2
		rc=1
	elif command -v man >/dev/null &&
	     ! man -M "$mandir" -w 3 "$s" >/dev/null 2>&1; then
		echo "mancheck: $s: man -M $mandir 3 $s finds no page" >&2
		rc=1
	fi
done
for p in "$mandir"/man3/rl_*.3; do
	[ -e "$p" ] || [ -L "$p" ] || continue
	f=${p##*/}
	f=${f%.3}
	echo "$syms" | grep -qx "$f" || {
		echo "mancheck: $p documents $f, which $lib does not export" >&2
		rc=1
	}
done
[ $rc != 0 ] || echo "mancheck: $n exported functions, each with a man page"
exit $rc
