# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
#
# TAP for the guest's shell selftests (ratelimit_rlsyncd_test,
# ratelimit_sentinel_test), sourced from /guest/tap.sh, which
# selftests/vm/run.sh copies in. Each line is "ok N - $tap_prefix...";
# the caller ends with echo "1..$n".
#   ok WHAT, notok WHAT, skip WHAT WHY
#   check NAME CONDITION FIGURES   ok or not ok as the awk CONDITION holds
#   timed NAME CONDITION FIGURES   the same for a check of time alone (how
#       soon a share comes, how full a failover runs): with
#       KSFT_MACHINE_SLOW=yes (the rig sets it on the debug kernel, as the
#       kernel's CI does for its own selftests) a failure is expected, an
#       ok "# XFAIL" with its figures. A bound or a count is a check.
n=0
tap_prefix=${tap_prefix:-}

ok() { n=$((n + 1)); echo "ok $n - $tap_prefix$*"; }
notok() { n=$((n + 1)); echo "not ok $n - $tap_prefix$*"; }
skip() { n=$((n + 1)); echo "ok $n - $tap_prefix$1 # SKIP $2"; }

check()
{
	if awk "BEGIN { exit !($2) }"; then ok "$1: $3"; else notok "$1: $3"; fi
}

timed()
{
	if awk "BEGIN { exit !($2) }"; then
		ok "$1: $3"
	elif [ "${KSFT_MACHINE_SLOW:-}" = yes ]; then
		ok "$1: $3 # XFAIL timing on a slow machine (KSFT_MACHINE_SLOW)"
	else
		notok "$1: $3"
	fi
}
