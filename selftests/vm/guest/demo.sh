#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# `make run`: one program, rlpace, paced by /dev/ratelimit at three rates:
# a slow one, a fast one shared by four threads, and a byte rate taken in
# 64 KiB chunks. rlpace prints the target and the achieved rate and how
# long it waited. Then two separate programs share one named limiter,
# watched with rlctl.
# Under software emulation the achieved rate is close to, not at, target.
set -e

command -v rlpace >/dev/null || { echo "demo: rlpace is not built"; exit 1; }

pace()
{
	echo
	echo "\$ rlpace $*"
	rlpace "$@"
}

echo "ratelimit demo: module loaded, $(stat -c '%n mode %a' /dev/ratelimit)"
pace -r 50/s -n 100
pace -r 1000/s -n 2000 -t 4
pace -r 4MiB/s -n 8MiB -s 64KiB

echo
echo "# Two programs share the named limiter 'shared' at 200/s:"
echo "\$ rlctl create shared 200/s --burst 10 --mode 0666 --persist"
rlctl create shared 200/s --burst 10 --mode 0666 --persist
rlpace -N shared -n 200 -q > /tmp/a.out &
a=$!
rlpace -N shared -n 200 -q > /tmp/b.out &
b=$!
sleep 1
echo "\$ rlctl show shared      # while both run"
rlctl show shared
wait $a $b
echo "program A: $(cat /tmp/a.out)"
echo "program B: $(cat /tmp/b.out)"
echo "\$ rlctl show shared      # afterwards"
rlctl show shared
echo "\$ rlctl rm shared"
rlctl rm shared

echo
echo "# A concurrency limit: at most one job at a time, and kill -9 gives the permit back."
echo "\$ rlctl create jobs unlimited --concurrency 1 --persist --mode 0666"
rlctl create jobs unlimited --concurrency 1 --persist --mode 0666
start=$(date +%s)
for i in 1 2 3; do
	rlrun -n jobs -- sh -c "echo \"job $i starts at +\$((\$(date +%s) - $start)) s\"; sleep 1" &
done
wait
rlrun -n jobs -- sleep 60 &
holder=$!
sleep 1
echo "held while a job runs: $(sed -n 's/^held //p' /sys/kernel/ratelimit/jobs/stat)"
kill -9 $holder
wait $holder 2>/dev/null || true
echo "held after kill -9 of its holder: $(sed -n 's/^held //p' /sys/kernel/ratelimit/jobs/stat)"
rlctl rm jobs

echo
echo "# Two pipes share one 256 KiB/s bandwidth budget:"
rlctl create uplink 256KiB/s --persist --mode 0666
head -c 262144 /dev/zero | rlpipe -n uplink > /tmp/p1 &
head -c 262144 /dev/zero | rlpipe -n uplink > /tmp/p2 &
sleep 1
rlctl show uplink | grep -A3 PID
wait
echo "copied $(cat /tmp/p1 /tmp/p2 | wc -c) bytes; granted $(sed -n 's/^granted //p' /sys/kernel/ratelimit/uplink/stat)"
rlctl rm uplink
echo
echo "demo: done"
