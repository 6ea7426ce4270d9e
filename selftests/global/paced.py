#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
#
# paced.py SOCKET RATE N RANGE COMMAND...: COMMAND sent N times to the
# redis-server on the unix SOCKET, RATE times a second on a fixed
# schedule (one client, each reply read before the next call), with
# __rand_int__ in its arguments replaced by a random number below RANGE
# of 12 digits, as redis-benchmark -r does, and __next_int__ by the
# call's number modulo RANGE (hosts in turn, each once every RANGE
# calls, as a fleet's hosts renew once a refresh each: drawn at random,
# a host is now and then not drawn for longer than its lease).
# redis-benchmark calls as fast as it can: Redis then runs with warm
# caches; a fleet's calls come apart, at the rate of its hosts. Prints
# the calls made a second.
#
# Copyright (C) 2026 The ratelimit authors
"""Calls to Redis at a given rate (selftests/global/calls.sh)."""

import random
import socket
import sys
import time


def request(args):
    """One command in RESP, its arguments as bulk strings."""
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        b = a.encode()
        out.append(b'$%d\r\n%s\r\n' % (len(b), b))
    return b''.join(out)


def reply(f):
    """Read one reply; exit on an error reply."""
    line = f.readline()
    kind = line[:1]
    if kind == b'-':
        sys.exit('paced: ' + line[1:].decode().strip())
    if kind == b'$':
        n = int(line[1:])
        if n >= 0:
            f.read(n + 2)
    elif kind == b'*':
        for _ in range(max(0, int(line[1:]))):
            reply(f)
    elif kind not in (b'+', b':'):
        sys.exit('paced: no reply')


def main():
    """Make the calls, then print the rate they came at."""
    if len(sys.argv) < 6:
        sys.exit('usage: paced.py SOCKET RATE N RANGE COMMAND...')
    path, rate, n, span = sys.argv[1], float(sys.argv[2]), \
        int(sys.argv[3]), int(sys.argv[4])
    cmd = sys.argv[5:]
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    f = s.makefile('rb')
    t0 = time.monotonic()
    for i in range(n):
        r = '%012d' % random.randrange(span)
        q = '%012d' % (i % span)
        s.sendall(request([a.replace('__rand_int__', r)
                           .replace('__next_int__', q) for a in cmd]))
        reply(f)
        wait = t0 + (i + 1) / rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)
    print('%.0f' % (n / (time.monotonic() - t0)))


main()
