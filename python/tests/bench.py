#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""make bench's Python row: what an acquire of an unlimited limiter costs
from Python (mean over many calls), against the C library's in the same
guest: rlbench's "ACQUIRE(1) unlimited p50" of OUTDIR/results.csv when the
floor section ran, and rlpace's mean (its start-up amortised; it also
records every wait, so it is an upper bound of the C cost).

    bench.py OUTDIR [SCALE]

Writes OUTDIR/python.csv: "what,acquires,ns_per_acquire,x_c_floor" lines,
and prints them. Not a test: no assertions.
"""

import asyncio
from contextlib import closing
import os
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..")]

from kratelimit import Limiter  # noqa: E402
from kratelimit.aio import AsyncLimiter  # noqa: E402
from util import tool  # noqa: E402


def per_call(fn, n: int) -> float:
    t = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.perf_counter_ns() - t) / n


def c_library(n: int) -> float:
    """ns per acquire of rlpace (libratelimit's rl_acquire()), minus the
    cost of a run of one acquire (exec, open, configure)."""
    def run(count):
        t = time.perf_counter_ns()
        subprocess.run([tool("rlpace"), "-r", "unlimited", "-n", str(count),
                        "-q"], check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter_ns() - t
    return (run(n) - run(1)) / (n - 1)


async def aio_calls(lim: Limiter, n: int) -> float:
    alim = AsyncLimiter(lim)
    t = time.perf_counter_ns()
    for _ in range(n):
        await alim.acquire()
    return (time.perf_counter_ns() - t) / n


def c_floor(out: str) -> float:
    """rlbench's p50 of an acquire of one token, unlimited; 0 if absent."""
    key = 'floor,"ACQUIRE(1) unlimited p50",'
    try:
        with open(os.path.join(out, "results.csv")) as f:
            for line in f:
                if line.startswith(key):
                    return float(line[len(key):].split(",")[0])
    except (OSError, ValueError):
        pass
    return 0.0


def main() -> None:
    out = sys.argv[1]
    n = max(1000, int(20000 * float(sys.argv[2] if len(sys.argv) > 2
                                    else 1)))
    rows = [("c_rlpace", c_library(n))]
    with closing(Limiter.private(unlimited=True)) as lim:
        rows.append(("python_acquire", per_call(lim.acquire, n)))
        rows.append(("python_try_acquire", per_call(lim.try_acquire, n)))
        rows.append(("python_async_acquire",
                     asyncio.run(aio_calls(lim, n))))
    floor = c_floor(out)
    if floor:
        rows.insert(0, ("c_rlbench_floor_p50", floor))
    with open(os.path.join(out, "python.csv"), "w") as f:
        f.write("what,acquires,ns_per_acquire,x_c_floor\n")
        for what, ns in rows:
            x = f"{ns / floor:.1f}" if floor else ""
            f.write(f"{what},{n},{ns:.0f},{x}\n")
            print(f"python bench: {what:22} {ns:10.0f} ns per acquire"
                  + (f" ({x}x rlbench's C p50)" if floor else ""))

if __name__ == "__main__":
    main()
