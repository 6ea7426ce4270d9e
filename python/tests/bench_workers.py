#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""make bench's "workers" section: N worker processes sharing one limit of
RATE/s, through the module (one named limiter, each worker its own fd,
blocking acquire()) and through Redis (the `limits` library's
RedisStorage on a unix socket, the way its users share a limit between
processes): grants/s, the spread of the workers' shares, CPU per grant
and the worst 1 s sliding window against the limit.

    bench_workers.py OUTDIR [SCALE]    run it (in the guest: bench.sh)
    bench_workers.py --files           the files of Debian's python3-limits,
                                       python3-redis and what they import
                                       (python.sh copies them to the guest)

Each worker loops for the run's duration: take one token, record the time
(CLOCK_MONOTONIC). Redis clients retry as a user of `limits` would:
MovingWindowRateLimiter.hit() is retried after one token interval (1/RATE
s; its get_window_stats() reset time has a resolution of a second);
FixedWindowRateLimiter.hit() after the window's reset time of
get_window_stats(). CPU: each worker's process time over its loop, plus
redis-server's (/proc/PID/stat) for Redis.

Appends "workers" rows to OUTDIR/results.csv (rlbench's format; the
header if rlbench did not run), writes OUTDIR/workers.csv (one line a
run) and prints a table. Not a test: no assertions.
"""

import importlib
import os
import signal
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..")]
DIST = "/usr/lib/python3/dist-packages"

RATE = 200                      # per second: binds under TCG for both
SOCK = "/tmp/rl-workers-redis.sock"
REDIS = os.environ.get("RL_REDIS_SERVER", "/redis/redis-server")


def have_redis_client() -> bool:
    """Import what the Redis workers use: are Debian's python3-limits
    and python3-redis there?"""
    try:
        for mod in ("limits.storage", "limits.strategies", "redis"):
            importlib.import_module(mod)
    except ImportError:
        return False
    return True


def files() -> None:
    """Print the files python3-limits and python3-redis need: their
    packages whole (limits reads its Lua scripts as package data) and the
    dist-packages and stdlib modules they import, with bytecode."""
    import sysconfig
    sys.path.append(DIST)
    if not have_redis_client():
        return                  # not installed: the section skips
    stdlib = sysconfig.get_paths()["stdlib"]
    tag = sys.implementation.cache_tag
    # imported if there, not needed: they would bring libssl, libbz2 ...
    optional = {"ssl", "cryptography", "bz2", "lzma"}
    out = set()
    tops = set()
    for mod in list(sys.modules.values()):
        path = getattr(mod, "__file__", None)
        if not path or mod.__name__.split(".")[0].lstrip("_") in optional:
            continue
        if path.startswith(DIST + "/"):
            tops.add(path[len(DIST) + 1:].split("/")[0])
        elif path.startswith(stdlib + "/"):
            out.add(path)
            d, base = os.path.split(path)
            pyc = os.path.join(d, "__pycache__", f"{base[:-3]}.{tag}.pyc")
            if path.endswith(".py") and os.path.exists(pyc):
                out.add(pyc)
    names = {t.split(".")[0].lower().replace("-", "_") for t in tops}
    for entry in os.listdir(DIST):
        # the distributions' metadata, which pkg_resources reads
        if entry.endswith((".dist-info", ".egg-info")) and \
                entry.split("-")[0].lower() in names:
            tops.add(entry)
    for top in tops:
        p = os.path.join(DIST, top)
        if os.path.isdir(p):
            for d, _, fs in os.walk(p):
                out.update(os.path.join(d, f) for f in fs)
        else:
            out.add(p)
    print("\n".join(sorted(out)))


def worker(kind: str, n: int, t0: float, t1: float, out: str) -> None:
    """One worker process: take tokens until t1, write "CPU\\n" and one
    timestamp a line to @out."""
    stamps = []
    if kind == "kratelimit":
        from kratelimit import Limiter
        lim = Limiter.attach(f"workers{n}")

        def take() -> None:
            lim.acquire()
    else:
        from limits import parse
        from limits.storage import RedisStorage
        from limits.strategies import (FixedWindowRateLimiter,
                                       MovingWindowRateLimiter)
        storage = RedisStorage(f"redis+unix://{SOCK}")
        item = parse(f"{RATE}/second")
        key = f"{kind}-{n}"
        if kind == "redis_moving":
            mw = MovingWindowRateLimiter(storage)

            def take() -> None:
                while not mw.hit(item, key):
                    time.sleep(1 / RATE)
        else:
            fw = FixedWindowRateLimiter(storage)

            def take() -> None:
                while not fw.hit(item, key):
                    reset, _ = fw.get_window_stats(item, key)
                    time.sleep(max(0.001, reset - time.time()))
    while time.monotonic() < t0:
        time.sleep(0.005)
    cpu = time.process_time()
    while True:
        take()
        now = time.monotonic()
        if now >= t1:
            break
        stamps.append(now)
    cpu = time.process_time() - cpu
    with open(out, "w") as f:
        f.write(f"{cpu}\n")
        f.write("\n".join(f"{t:.6f}" for t in stamps))


def proc_cpu(pid: int) -> float:
    """utime + stime of @pid, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worst_window(stamps: list) -> int:
    """The most timestamps in any half-open 1 s window."""
    best = j = 0
    for i, t in enumerate(stamps):
        while stamps[j] <= t - 1.0:
            j += 1
        best = max(best, i - j + 1)
    return best


def run(kind: str, n: int, secs: float, redis_pid: int) -> dict:
    burst = 0
    lim = None
    if kind == "kratelimit":
        from kratelimit import Config, Limiter
        try:
            Limiter.unlink(f"workers{n}")
        except OSError:
            pass
        lim = Limiter.attach(f"workers{n}", Config(rate=RATE))
        burst = lim.config().burst
    t0 = time.monotonic() + 1.0 + 0.2 * n  # after the forks, under TCG
    t1 = t0 + secs
    pids = []
    outs = [f"/tmp/rl-workers-{kind}-{n}-{i}" for i in range(n)]
    for out in outs:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                worker(kind, n, t0, t1, out)
            except BaseException as e:  # noqa: B902: report, then exit
                print(f"workers: {kind} worker: {e!r}", file=sys.stderr)
                code = 1
            os._exit(code)
        pids.append(pid)
    rcpu0 = proc_cpu(redis_pid) if kind != "kratelimit" else 0.0
    failed = 0
    for pid in pids:
        failed += os.waitpid(pid, 0)[1] != 0
    rcpu = proc_cpu(redis_pid) - rcpu0 if kind != "kratelimit" else 0.0
    if lim is not None:
        lim.close()             # the name goes with its last fd
    if failed:
        raise RuntimeError(f"{failed} of {n} {kind} workers failed")
    cpu = 0.0
    stamps = []
    shares = []
    for out in outs:
        with open(out) as f:
            lines = f.read().split()
        os.unlink(out)
        cpu += float(lines[0])
        shares.append(len(lines) - 1)
        stamps.extend(float(t) for t in lines[1:])
    stamps.sort()
    grants = len(stamps)
    mean = grants / n
    worst = worst_window(stamps) if stamps else 0
    return {
        "backend": kind, "workers": n, "secs": secs, "rate": RATE,
        "burst": burst, "grants": grants, "grants_per_s": grants / secs,
        "share_min": min(shares), "share_max": max(shares),
        "spread_pct": 100 * (max(shares) - min(shares)) / mean if mean else 0,
        "cpu_us_per_grant": 1e6 * cpu / grants if grants else 0,
        "redis_cpu_us_per_grant": 1e6 * rcpu / grants if grants else 0,
        "worst_1s": worst, "bound": RATE + burst,
        "worst_vs_bound": worst / (RATE + burst),
    }


def start_redis() -> "subprocess.Popen[bytes]":
    try:
        os.unlink(SOCK)
    except FileNotFoundError:
        pass
    env = dict(os.environ, LD_LIBRARY_PATH="/lib/x86_64-linux-gnu")
    p = subprocess.Popen([REDIS, "--port", "0", "--unixsocket", SOCK,
                          "--unixsocketperm", "700", "--save", "",
                          "--appendonly", "no", "--logfile",
                          "/tmp/rl-workers-redis.log"], env=env)
    for _ in range(100):
        if os.path.exists(SOCK):
            return p
        time.sleep(0.1)
    p.kill()
    raise RuntimeError("redis-server did not open its socket "
                       "(/tmp/rl-workers-redis.log)")


def main() -> int:
    if sys.argv[1:] == ["--files"]:
        files()
        return 0
    outdir = sys.argv[1]
    scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    secs = max(2.0, 5.0 * scale)
    kinds = ["kratelimit"]
    redis = None
    sys.path.append(DIST)
    if not have_redis_client():
        print("workers: no python3-limits/python3-redis (scripts/deps.sh "
              "bench): kratelimit only")
    elif not os.access(REDIS, os.X_OK):
        print("workers: no redis-server in the guest: kratelimit only")
    else:
        kinds += ["redis_moving", "redis_fixed"]
    if len(kinds) > 1:
        redis = start_redis()
    res = []
    try:
        for n in (4, 8):
            for kind in kinds:
                r = run(kind, n, secs, redis.pid if redis else 0)
                res.append(r)
                print(f"workers: {kind:12} N={n}: {r['grants_per_s']:7.1f}"
                      f" grants/s of {RATE}/s, shares {r['share_min']}.."
                      f"{r['share_max']}, CPU {r['cpu_us_per_grant']:.0f}"
                      f" + redis {r['redis_cpu_us_per_grant']:.0f} us/grant,"
                      f" worst 1 s {r['worst_1s']} (bound {r['bound']})",
                      flush=True)
    finally:
        if redis:
            redis.send_signal(signal.SIGTERM)
            redis.wait()
    with open(os.path.join(outdir, "workers.csv"), "w") as f:
        cols = list(res[0])
        f.write(",".join(cols) + "\n")
        for r in res:
            f.write(",".join(f"{r[c]:.6g}" if isinstance(r[c], float)
                             else str(r[c]) for c in cols) + "\n")
    csv = os.path.join(outdir, "results.csv")
    new = not os.path.exists(csv)
    base = {r["workers"]: r for r in res if r["backend"] == "kratelimit"}
    with open(csv, "a") as f:
        if new:
            f.write("section,name,value,unit,baseline,baseline_value,"
                    "ratio,goal,verdict\n")

        def row(name, val, unit, bname="", bval=None):
            ratio = f"{val / bval:.6g}" if bval else ""
            f.write(f'workers,"{name}",{val:.6g},{unit},"{bname}",'
                    f'{"" if bval is None else f"{bval:.6g}"},{ratio},'
                    '"",info\n')
        for r in res:
            what = f"{r['backend']} N={r['workers']}"
            b = base[r["workers"]]
            row(f"{what} grants/s", r["grants_per_s"], "/s", "limit", RATE)
            row(f"{what} share spread", r["spread_pct"], "%")
            total = r["cpu_us_per_grant"] + r["redis_cpu_us_per_grant"]
            row(f"{what} CPU per grant (+redis-server)", total, "us",
                "kratelimit", b["cpu_us_per_grant"])
            row(f"{what} worst 1 s window", r["worst_1s"], "grants",
                "rate + burst", r["bound"])
    print("\n| backend | N | grants/s | shares min..max | CPU us/grant "
          "(workers + redis) | worst 1 s / bound |")
    print("|---|---|---|---|---|---|")
    for r in res:
        print(f"| {r['backend']} | {r['workers']} | {r['grants_per_s']:.1f}"
              f" | {r['share_min']}..{r['share_max']}"
              f" | {r['cpu_us_per_grant']:.0f} + "
              f"{r['redis_cpu_us_per_grant']:.0f}"
              f" | {r['worst_1s']} / {r['bound']}"
              f" ({r['worst_vs_bound']:.3f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
