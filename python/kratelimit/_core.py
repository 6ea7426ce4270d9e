# SPDX-License-Identifier: LGPL-2.1-or-later
"""Limiter: one open file description of /dev/ratelimit, and its ioctls."""

from __future__ import annotations

import array
import contextlib
import dataclasses
import errno
import fcntl
import os
import time
from typing import Iterator, Optional

from . import _abi

DEVICE = "/dev/ratelimit"
# The permission bits of a named limiter created without a mode, as the
# tools have it (ratelimit(4)): everyone may attach and acquire, only the
# owner (and root) reconfigure.
DEFAULT_MODE = 0o644

# What an errno means for a call, where the generic strerror says too
# little. Keys: (ioctl name or "*", errno).
_HINTS = {
    ("*", errno.EBADFD): "the fd is no client of a limiter yet "
                         "(configure() or attach() first)",
    ("*", errno.ENOTTY): "not a /dev/ratelimit fd, or a module without "
                         "this ioctl (see features())",
    ("*", errno.EFAULT): "bad address",
    ("RL_IOC_ATTACH", errno.ENOENT): "no limiter of that name "
                                     "(create=... makes one)",
    ("RL_IOC_ATTACH", errno.EEXIST): "a limiter of that name exists "
                                     "(exclusive=True)",
    ("RL_IOC_ATTACH", errno.EBUSY): "the fd is a client of a limiter "
                                    "already",
    ("RL_IOC_ATTACH", errno.EACCES): "the limiter's mode denies access",
    ("RL_IOC_ATTACH", errno.ENOSPC): "too many named limiters "
                                     "(module parameter max_named)",
    ("RL_IOC_ATTACH", errno.EDQUOT): "too many named limiters of this "
                                     "user (max_named_per_user)",
    ("RL_IOC_UNLINK", errno.ENOENT): "no limiter of that name",
    ("RL_IOC_UNLINK", errno.EPERM): "only the owner or CAP_SYS_ADMIN "
                                    "may unlink",
    ("RL_IOC_ACQUIRE", errno.EPERM): "a HIGH or USER priority needs "
                                     "the right to reconfigure the "
                                     "limiter or CAP_SYS_NICE",
    ("RL_IOC_SET_CLIENT", errno.EPERM): "a priority above MID or a "
                                        "weight above 1 needs the right "
                                        "to reconfigure the limiter or "
                                        "CAP_SYS_NICE",
    ("RL_IOC_SET_CONFIG", errno.EPERM): "no write permission on the "
                                        "named limiter",
    ("RL_IOC_SET_CONFIG", errno.EACCES): "no write permission on the "
                                         "named limiter",
    ("RL_IOC_RELEASE", errno.EINVAL): "more permits than this fd holds",
    ("RL_IOC_REFUND", errno.EINVAL): "more tokens than this fd acquired "
                                     "and did not refund",
}


def _error(what: str, err: int, detail: str = "") -> OSError:
    """An OSError of the subclass errno @err maps to, with a message."""
    hint = _HINTS.get((what, err)) or _HINTS.get(("*", err))
    msg = f"{what}{detail}: {os.strerror(err)}"
    if hint:
        msg += f" ({hint})"
    return OSError(err, msg)


def _ioctl(fd: int, what: str, buf: bytearray, detail: str = "") -> None:
    """ioctl @what on @fd with @buf in and out; errors raised as OSError.

    fcntl.ioctl releases the GIL while the kernel works. A signal whose
    handler raises (SIGINT: KeyboardInterrupt) comes out of it as that
    exception; one whose handler returns is retried (PEP 475).
    """
    while True:
        try:
            fcntl.ioctl(fd, _abi.IOCTLS[what], buf, True)
            return
        except InterruptedError:
            continue
        except OSError as e:
            raise _error(what, e.errno, detail) from None


def _pack(s, fields, values: dict) -> bytearray:
    args = []
    for name, f in fields:
        if isinstance(f, tuple):
            args.extend(values[name])
        elif f[0].isdigit():
            args.extend([0] * int(f[:-1]))
        else:
            args.append(values.get(name, 0))
    return bytearray(s.pack(*args))


def _unpack(s, fields, buf) -> dict:
    it = iter(s.unpack(buf))
    out = {}
    for name, f in fields:
        if isinstance(f, tuple):
            out[name] = [next(it) for _ in f]
        elif f[0].isdigit():
            for _ in range(int(f[:-1])):
                next(it)
        elif name.startswith("reserved"):
            next(it)
        else:
            out[name] = next(it)
    return out


@dataclasses.dataclass(frozen=True)
class Config:
    """Limits of a limiter (struct rl_config, see ratelimit(4)).

    rate tokens per period_ns; burst 0 picks the kernel's default (100 ms
    of tokens); concurrency 0 is no permit limit; unlimited grants
    everything at once (with concurrency, a pure concurrency limiter).
    """

    rate: int = 0
    period_ns: int = 1_000_000_000
    burst: int = 0
    unlimited: bool = False
    catchup: int = 0
    concurrency: int = 0
    backlog: int = 0
    fairness: int = 0

    def _values(self) -> list:
        return [self.rate, self.period_ns, self.burst,
                _abi.CONFIG_UNLIMITED if self.unlimited else 0,
                self.catchup, self.concurrency, self.backlog,
                self.fairness, 0, 0]

    @classmethod
    def _from(cls, v: dict) -> "Config":
        return cls(rate=v["rate"], period_ns=v["period_ns"],
                   burst=v["burst"],
                   unlimited=bool(v["flags"] & _abi.CONFIG_UNLIMITED),
                   catchup=v["catchup"], concurrency=v["concurrency"],
                   backlog=v["backlog"], fairness=v["fairness"])


@dataclasses.dataclass(frozen=True)
class Grant:
    """What an acquire reports (struct rl_acquire's outputs).

    granted is False only from try_acquire(); then ready_ns is the
    predicted CLOCK_MONOTONIC time (time.monotonic_ns()) the request could
    be granted at, DEADLINE_NONE when the limiter is paused. A Grant is
    true when granted.
    """

    granted: bool
    count: int
    wait_ns: int = 0
    ready_ns: int = 0
    lag_ns: int = 0

    def __bool__(self) -> bool:
        return self.granted


@dataclasses.dataclass(frozen=True)
class Stats:
    """Counters of a limiter (struct rl_stats)."""

    granted: int
    requests: int
    immediate: int
    waited: int
    wait_ns_total: int
    wait_ns_max: int
    timeouts: int
    interrupted: int
    rejected: int
    waiters: int
    available: int
    held: int
    clients: int
    backlog: int
    refunded: int


@dataclasses.dataclass(frozen=True)
class Client:
    """This fd's place in its limiter (struct rl_client_config)."""

    priority: int
    weight: int
    cap: int
    held: int
    granted: int


@dataclasses.dataclass(frozen=True)
class Features:
    """What the loaded module supports (struct rl_features)."""

    version: int
    ioctls: int
    config_flags: int
    acquire_flags: int
    attach_flags: int

    def has_ioctl(self, name: str) -> bool:
        """Does the module know ioctl @name, e.g. "RL_IOC_REFUND"?"""
        return bool(self.ioctls >> (_abi.IOCTLS[name] & 0xff) & 1)


def _name_buf(name: str) -> array.array:
    """A NUL-terminated copy of @name whose address the kernel can read."""
    return array.array("B", name.encode() + b"\0")


def _deadline(timeout: Optional[float], deadline_ns: Optional[int]) -> int:
    if timeout is not None and deadline_ns is not None:
        raise ValueError("give timeout or deadline_ns, not both")
    if timeout is not None:
        return time.monotonic_ns() + max(0, int(timeout * 1e9))
    return _abi.DEADLINE_NONE if deadline_ns is None else deadline_ns


class Limiter:
    """A client of one limiter: an open file description of /dev/ratelimit.

    Make one with Limiter.private() or Limiter.attach(), or Limiter() and
    then configure() or attach_to(). The fd is pollable (fileno()):
    readable when an acquire of one token would be granted at once.
    Closing it (close(), the with statement, or the process's death)
    gives back the permits it holds. Methods may be called from several
    threads at once; a blocking acquire() releases the GIL.
    """

    def __init__(self, path: str = DEVICE) -> None:
        """Open @path (/dev/ratelimit); the fd has no limiter yet."""
        try:
            self._fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except OSError as e:
            raise OSError(e.errno, f"open {path}: {os.strerror(e.errno)}"
                          " (is the ratelimit module loaded?)",
                          path) from None

    @classmethod
    def private(cls, rate: int = 0, period_ns: int = 1_000_000_000,
                **limits) -> "Limiter":
        """A new private limiter of @rate tokens per @period_ns.

        @limits are the other Config fields (burst, unlimited, catchup,
        concurrency, backlog, fairness).
        """
        lim = cls()
        try:
            lim.configure(Config(rate=rate, period_ns=period_ns, **limits))
        except BaseException:
            lim.close()
            raise
        return lim

    @classmethod
    def attach(cls, name: str, create: Optional[Config] = None, *,
               exclusive: bool = False, persist: bool = False,
               mode: int = DEFAULT_MODE) -> "Limiter":
        """A client of the named limiter @name (see attach_to())."""
        lim = cls()
        try:
            lim.attach_to(name, create, exclusive=exclusive,
                          persist=persist, mode=mode)
        except BaseException:
            lim.close()
            raise
        return lim

    @staticmethod
    def unlink(name: str) -> None:
        """Remove the name @name; attached fds keep working until closed."""
        with Limiter() as lim:
            lim.unlink_name(name)

    def fileno(self) -> int:
        """The fd, for poll/select/epoll and the event loop."""
        if self._fd < 0:
            raise ValueError("I/O operation on a closed Limiter")
        return self._fd

    @property
    def closed(self) -> bool:
        """Is the fd closed?"""
        return self._fd < 0

    def close(self) -> None:
        """Close the fd: the kernel gives back the permits it holds."""
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def __enter__(self) -> "Limiter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            self.close()

    def configure(self, config: Config) -> None:
        """Create the fd's private limiter, or change the limits in force.

        A reconfiguration is atomic and keeps tokens, queued waiters and
        held permits; a named limiter needs write permission.
        """
        buf = bytearray(_abi.S_CONFIG.pack(*config._values()))
        _ioctl(self.fileno(), "RL_IOC_SET_CONFIG", buf)

    def config(self) -> Config:
        """The limits in force (burst, fairness: the values picked)."""
        buf = bytearray(_abi.S_CONFIG.size)
        _ioctl(self.fileno(), "RL_IOC_GET_CONFIG", buf)
        return Config._from(_unpack(_abi.S_CONFIG, _abi.CONFIG, buf))

    def attach_to(self, name: str, create: Optional[Config] = None, *,
                  exclusive: bool = False, persist: bool = False,
                  mode: int = DEFAULT_MODE) -> None:
        """Make this fresh fd a client of the named limiter @name.

        With @create, a missing limiter is created with those limits and
        permission bits @mode (read: attach and acquire, write:
        reconfigure; default DEFAULT_MODE, 0o644, as the tools'); @exclusive fails with FileExistsError if it exists;
        @persist makes a new one outlive its fds until unlink().
        """
        flags = 0
        if create is not None:
            flags |= _abi.ATTACH_CREATE
        elif exclusive or persist:
            raise ValueError("exclusive and persist need create=Config")
        flags |= _abi.ATTACH_EXCL if exclusive else 0
        flags |= _abi.ATTACH_PERSIST if persist else 0
        nb = _name_buf(name)
        cfg = (create or Config(period_ns=1))._values()
        buf = bytearray(_abi.S_ATTACH.pack(nb.buffer_info()[0], flags, mode,
                                           *cfg, 0, 0, 0, 0))
        _ioctl(self.fileno(), "RL_IOC_ATTACH", buf, f" {name!r}")

    def unlink_name(self, name: str) -> None:
        """Remove the name @name (any fd of /dev/ratelimit may do it)."""
        nb = _name_buf(name)
        buf = bytearray(_abi.S_UNLINK.pack(nb.buffer_info()[0], 0, 0, 0, 0))
        _ioctl(self.fileno(), "RL_IOC_UNLINK", buf, f" {name!r}")

    def _acquire(self, count: int, deadline: int, flags: int,
                 priority: int) -> Grant:
        # The hot path: struct rl_acquire packed and read back directly
        # (count, deadline_ns, flags, priority, wait_ns, ready_ns, lag_ns,
        # reserved[2]).
        buf = bytearray(_abi.S_ACQUIRE.pack(count, deadline, flags, priority,
                                            0, 0, 0, 0, 0))
        try:
            _ioctl(self.fileno(), "RL_IOC_ACQUIRE", buf, f" of {count}")
        except (BlockingIOError, TimeoutError) as e:
            e.ready_ns = _abi.S_ACQUIRE.unpack(buf)[5]
            raise
        v = _abi.S_ACQUIRE.unpack(buf)
        return Grant(True, count, v[4], v[5], v[6])

    def acquire(self, count: int = 1, *, timeout: Optional[float] = None,
                deadline_ns: Optional[int] = None, priority: int = 0,
                predict: bool = False) -> Grant:
        """Take @count tokens, sleeping in the kernel until they exist.

        @timeout (seconds) or @deadline_ns (absolute, time.monotonic_ns())
        bound the wait: TimeoutError then, with nothing consumed and the
        predicted grant time in its ready_ns attribute. @predict fails at
        once when that time is past the deadline. @priority is one of
        PRIO_LOW .. PRIO_USER, 0 for the fd's. Ctrl-C (SIGINT) raises
        KeyboardInterrupt at once, with nothing consumed.
        """
        return self._acquire(count, _deadline(timeout, deadline_ns),
                             _abi.ACQUIRE_PREDICT if predict else 0,
                             priority)

    def try_acquire(self, count: int = 1, *, priority: int = 0) -> Grant:
        """Take @count tokens if that is possible now, without sleeping.

        Returns a true Grant, or a false one whose ready_ns is when the
        request could be granted (DEADLINE_NONE: the limiter is paused).
        """
        try:
            return self._acquire(count, _abi.DEADLINE_NONE,
                                 _abi.ACQUIRE_NONBLOCK, priority)
        except BlockingIOError as e:
            return Grant(False, count, ready_ns=e.ready_ns)

    def release(self, count: int = 1) -> None:
        """Give back @count concurrency permits this fd holds."""
        buf = bytearray(_abi.S_RELEASE.pack(count, 0, 0, 0, 0))
        _ioctl(self.fileno(), "RL_IOC_RELEASE", buf, f" of {count}")

    def refund(self, count: int) -> None:
        """Give back @count rate tokens acquired here and not used."""
        buf = bytearray(_abi.S_RELEASE.pack(count, 0, 0, 0, 0))
        _ioctl(self.fileno(), "RL_IOC_REFUND", buf, f" of {count}")

    @contextlib.contextmanager
    def permit(self, count: int = 1, **acquire) -> Iterator[Grant]:
        """Hold @count permits for a with block; released however it ends.

        @acquire are acquire()'s keyword arguments. Should the process
        die inside the block, the kernel releases them when it closes the
        fd.
        """
        grant = self.acquire(count, **acquire)
        try:
            yield grant
        finally:
            self.release(count)

    def stats(self) -> Stats:
        """The limiter's counters, as of now."""
        buf = bytearray(_abi.S_STATS.size)
        _ioctl(self.fileno(), "RL_IOC_GET_STATS", buf)
        v = _unpack(_abi.S_STATS, _abi.STATS, buf)
        del v["flags"]
        return Stats(**v)

    def client(self) -> Client:
        """This fd's priority, weight, cap, held permits and grants."""
        buf = bytearray(_abi.S_CLIENT.size)
        _ioctl(self.fileno(), "RL_IOC_GET_CLIENT", buf)
        v = _unpack(_abi.S_CLIENT, _abi.CLIENT, buf)
        del v["flags"]
        return Client(**v)

    def set_client(self, priority: int = 0, weight: int = 0,
                   cap: int = 0) -> None:
        """Set this fd's default priority (0: MID), fair-share weight
        (0: 1) and cap (tokens per period, 0: none)."""
        buf = _pack(_abi.S_CLIENT, _abi.CLIENT, {
            "priority": priority, "weight": weight, "cap": cap})
        _ioctl(self.fileno(), "RL_IOC_SET_CLIENT", buf)

    def features(self) -> Features:
        """What the loaded module supports."""
        buf = bytearray(_abi.S_FEATURES.size)
        _ioctl(self.fileno(), "RL_IOC_GET_FEATURES", buf)
        v = _unpack(_abi.S_FEATURES, _abi.FEATURES, buf)
        del v["flags"]
        return Features(**v)


def features() -> Features:
    """What the loaded module supports (opens /dev/ratelimit once)."""
    with Limiter() as lim:
        return lim.features()
