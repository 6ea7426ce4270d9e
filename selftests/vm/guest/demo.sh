#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# `make run`: one program, rlpace, paced by /dev/ratelimit at three rates:
# a slow one, a fast one shared by four threads, and a byte rate taken in
# 64 KiB chunks. rlpace prints the target and the achieved rate and how
# long it waited.
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
echo "demo: done"
