#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# `make bench`: rlbench in the guest, with Redis running on loopback when
# the rig copied it in. Every file rlbench writes is printed between
# "@@rl file-begin NAME" and "@@rl file-end NAME" for run.sh to extract.
# Kernel command line: rl.bench.scale=X scales durations and sample
# counts; rl.bench.sections=a,b runs only those sections (global: the
# global limits' section, global_bench.sh, after rlbench's; workers: N
# Python worker processes sharing one limit through the module and
# through Redis, python/tests/bench_workers.py).

scale=1
sections=
# shellcheck disable=SC2013 # the words of the command line are wanted
for arg in $(cat /proc/cmdline); do
	case $arg in
	rl.bench.scale=*) scale=${arg#*=} ;;
	rl.bench.sections=*) sections=$(echo "${arg#*=}" | tr , ' ') ;;
	esac
done

command -v rlbench >/dev/null || { echo "bench: rlbench is not built"; exit 1; }
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm	# for sem_open()

redis=
if [ -x /redis/redis-server ]; then
	# On CPU 0, with its clients: see pin_cpu0() in rlbench.c.
	LD_LIBRARY_PATH=/lib/x86_64-linux-gnu taskset 1 /redis/redis-server --port 6379 \
		--bind 127.0.0.1 --save '' --appendonly no --protected-mode no \
		--logfile /tmp/redis.log &
	redis=$!
	sleep 2
	kill -0 "$redis" 2>/dev/null || { cat /tmp/redis.log; redis=; }
	echo "bench: redis-server pid ${redis:-(failed)}"
else
	echo "bench: no redis-server in the guest (apt-get install redis-tools)"
fi

echo "bench: $(uname -r), $(nproc) CPUs, scale $scale"
rc=0
# rlbench writes to a file that tail shows on the console: a write to the
# emulated serial console can stall (one full run stopped for good while
# printing its table on a loaded host), and then only the display waits,
# not the benchmark. The file is also one of the results (rlbench.out).
mkdir -p /tmp/bench
: > /tmp/bench/rlbench.out
tail -f /tmp/bench/rlbench.out &
shown=$!
# rlbench's sections: those asked for but global and workers (none: all)
rlsections=$(echo " $sections " |
	sed 's/ global / /g; s/ workers / /g; s/^ *//; s/ *$//')
if [ -z "$sections" ] || [ -n "$rlsections" ]; then
	# shellcheck disable=SC2086 # the list of sections is split on purpose
	rlbench -s "$scale" -o /tmp/bench $rlsections >/tmp/bench/rlbench.out 2>&1 || rc=$?
fi
sleep 1
kill "$shown"
# A console message rewrites the UART's interrupt enable register, which
# makes it raise the transmitter interrupt a stalled write waits for.
echo "<3>bench: rlbench ended (rc=$rc), results follow" > /dev/kmsg

[ -n "$redis" ] && kill "$redis"
# Global limits (global_bench.sh), when asked for or with every section.
case " ${sections:-global} " in
*" global "*) sh /guest/global_bench.sh /tmp/bench "$scale" || rc=1 ;;
esac
# The Python row (python/tests/bench.py, python.csv), when the rig gave
# the guest python3 (selftests/vm/python.sh).
if [ -x /usr/bin/python3 ] && [ -f /python/tests/bench.py ]; then
	/usr/bin/python3 -S -B /python/tests/bench.py /tmp/bench "$scale" || rc=1
fi
# Worker processes sharing one limit, module vs Redis
# (python/tests/bench_workers.py; workers.csv and rows of results.csv).
case " ${sections:-workers} " in
*" workers "*)
	if [ -x /usr/bin/python3 ] && [ -f /python/tests/bench_workers.py ]; then
		/usr/bin/python3 -S -B /python/tests/bench_workers.py /tmp/bench \
			"$scale" || rc=1
	else
		echo "bench: workers: no python3 in the guest"
	fi ;;
esac
for f in /tmp/bench/*; do
	[ -f "$f" ] || continue
	echo "@@rl file-begin ${f##*/}"
	cat "$f"
	echo "@@rl file-end ${f##*/}"
done
exit $rc
