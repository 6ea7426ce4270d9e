# SPDX-License-Identifier: GPL-2.0-only
#
# selftests/global/ports.sh: loopback ports for the scripts of make
# check-global-redis that start redis-server on TCP (sourced).
# shellcheck shell=sh

# port_base OFFSET...: a port P such that P + each OFFSET is free on the
# loopback, all below the kernel's ephemeral range, where no outgoing
# connection can hold one (a port that answers no PING can still be the
# local end of one; cluster's bus ports, +10000, once were). Chosen by
# process id (or $port_seed, which a retry changes), so two suites
# started together differ; a port that takes a connection (redis or not)
# is in use.
port_base()
{
	lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
	[ "${lo:-0}" -ge 20000 ] 2>/dev/null || lo=32768
	top=0
	for o in "$@"; do [ "$o" -le "$top" ] || top=$o; done
	span=$((lo - 10000 - top - 1))
	b=$((10000 + ${port_seed:-$$} % span))
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		used=0
		for o in "$@"; do
			if ! timeout 2 redis-cli -p $((b + o)) PING 2>&1 |
				grep -q 'Connection refused'; then
				used=1
			fi
		done
		[ "$used" = 1 ] || break
		b=$((10000 + (b - 10000 + 97) % span))
	done
	echo "$b"
}
