# SPDX-License-Identifier: LGPL-2.1-or-later
"""Limiter: one open file description of /dev/ratelimit, through
libratelimit.so.1 (lib/libratelimit.h)."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import dataclasses
import errno
import functools
import inspect
import os
import time
import weakref
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterator, Optional,
                    Tuple, TypeVar, Union, cast)

from . import _lib
from ._lib import lib

if TYPE_CHECKING:
    from .aio import AsyncLimiter

F = TypeVar("F", bound=Callable[..., Any])

DEVICE = "/dev/ratelimit"
# The permission bits of a named limiter created without a mode, as the
# tools have it (ratelimit(4)): everyone may attach and acquire, only the
# owner (and root) reconfigure.
DEFAULT_MODE = 0o644

# What an errno means for a call, where the generic strerror says too
# little. Keys: (library function or "*", errno).
_HINTS: Dict[Tuple[str, int], str] = {
    ("*", errno.EBADFD): "the fd is no client of a limiter yet "
                         "(configure() or attach() first)",
    ("*", errno.ENOTTY): "not a /dev/ratelimit fd, or a module without "
                         "this ioctl (see features())",
    ("rl_attach", errno.ENOENT): "no limiter of that name "
                                 "(create=... makes one)",
    ("rl_attach", errno.EEXIST): "a limiter of that name exists "
                                 "(exclusive=True)",
    ("rl_attach", errno.EBUSY): "the fd is a client of a limiter already",
    ("rl_attach", errno.EACCES): "the limiter's mode denies access",
    ("rl_attach", errno.ENOSPC): "too many named limiters "
                                 "(module parameter max_named)",
    ("rl_attach", errno.EDQUOT): "too many named limiters of this user "
                                 "(max_named_per_user)",
    ("rl_unlink", errno.ENOENT): "no limiter of that name",
    ("rl_unlink", errno.EPERM): "only the owner or CAP_SYS_ADMIN may unlink",
    ("rl_acquire_ex", errno.EPERM): "a HIGH or USER priority needs the "
                                    "right to reconfigure the limiter or "
                                    "CAP_SYS_NICE",
    ("rl_set_client", errno.EPERM): "a priority above MID or a weight "
                                    "above 1 needs the right to "
                                    "reconfigure the limiter or "
                                    "CAP_SYS_NICE",
    ("rl_set_config", errno.EPERM): "no write permission on the named "
                                    "limiter",
    ("rl_set_config", errno.EACCES): "no write permission on the named "
                                     "limiter",
    ("rl_set_config", errno.EBUSY): "concurrency between 0 and non-zero "
                                    "while other clients are attached",
    ("rl_release", errno.EINVAL): "more permits than this fd holds",
    ("rl_refund", errno.EINVAL): "more tokens than this fd acquired and "
                                 "did not refund",
    ("rl_cycle_ex", errno.EINVAL): "more permits than this fd holds, or "
                                   "a count above the concurrency limit",
    ("rl_deposit", errno.EINVAL): "the limiter is not fed (Config(fed="
                                  "True))",
    ("rl_deposit", errno.EPERM): "no right to reconfigure the limiter",
    ("rl_set_lease", errno.EPERM): "no right to reconfigure the limiter",
    ("rl_set_parent", errno.EACCES): "no write permission on the limiter "
                                     "or the parent",
    ("rl_set_parent", errno.ENOENT): "no limiter of that name",
    ("rl_set_parent", errno.ELOOP): "the parent is in the limiter's own "
                                    "subtree",
    ("rl_set_parent", errno.EMLINK): "more than 4 ancestors",
    ("rl_set_parent", errno.EINVAL): "a private limiter, a bad name or "
                                     "weight",
    ("rl_set_perm", errno.EPERM): "only the owner may change the mode "
                                  "and group, CAP_SYS_ADMIN the owner",
    ("rl_set_perm", errno.EINVAL): "a private limiter, or bad ids or mode",
    ("rl_submit", errno.EBUSY): "RL_QUEUED_MAX requests outstanding on "
                                "this fd",
    ("rl_parse_rate", errno.EINVAL): "not unlimited or "
                                     "RATE[/PERIOD][:BURST], e.g. 100/s:10",
    ("rl_parse_rate", errno.ERANGE): "a number out of range",
}


def _error(what: str, err: int, detail: str = "") -> OSError:
    """An OSError of the subclass errno @err maps to, with a message that
    says which call failed and what the errno means there."""
    hint = _HINTS.get((what, err)) or _HINTS.get(("*", err))
    msg = f"{what}{detail}: {os.strerror(err)}"
    if hint:
        msg += f" ({hint})"
    return OSError(err, msg)


def _check(what: str, rc: int, detail: str = "") -> int:
    """@rc of library function @what: itself, or raised as OSError."""
    if rc < 0:
        raise _error(what, -rc, detail)
    return rc


def _parsed(what: str, rc: int, arg: str) -> int:
    """@rc of parser @what of @arg: itself, or raised as ValueError."""
    if rc < 0:
        raise ValueError(str(_error(what, -rc, f" {arg!r}")))
    return rc


def _name(name: str) -> bytes:
    return name.encode()


@dataclasses.dataclass(frozen=True)
class Config:
    """Limits of a limiter (struct rl_config, see ratelimit(4)).

    rate tokens per period_ns; burst 0 picks the kernel's default (100 ms
    of tokens); concurrency 0 is no permit limit; unlimited grants
    everything at once (with concurrency, a pure concurrency limiter);
    fed: only deposit() adds tokens. Config.parse("100/s:10") reads a rate
    string (ValueError when malformed); str(config) writes one (rate,
    period and burst only).
    """

    rate: int = 0
    period_ns: int = 1_000_000_000
    burst: int = 0
    unlimited: bool = False
    catchup: int = 0
    concurrency: int = 0
    backlog: int = 0
    fairness: int = 0
    fed: bool = False

    @classmethod
    def parse(cls, spec: str, **limits: Any) -> "Config":
        """The Config of rate string @spec ("unlimited" or
        "RATE[/PERIOD][:BURST]": "100/s:10", "10MiB/s", "1/10s"; see
        libratelimit(3)), with the other fields from @limits."""
        c = _lib.rl_config()
        _parsed("rl_parse_rate", lib.rl_parse_rate(spec.encode(),
                                                   ctypes.byref(c)), spec)
        return dataclasses.replace(cls._from(c), **limits)

    def __str__(self) -> str:
        buf = ctypes.create_string_buffer(_lib.RATE_STRLEN)
        _check("rl_format_rate", lib.rl_format_rate(
            ctypes.byref(self._c()), buf, len(buf)))
        return buf.value.decode()

    def _c(self) -> _lib.rl_config:
        return _lib.rl_config(
            rate=self.rate, period_ns=self.period_ns, burst=self.burst,
            flags=((_lib.CONFIG_UNLIMITED if self.unlimited else 0) |
                   (_lib.CONFIG_FED if self.fed else 0)),
            catchup=self.catchup, concurrency=self.concurrency,
            backlog=self.backlog, fairness=self.fairness)

    @classmethod
    def _from(cls, c: _lib.rl_config) -> "Config":
        return cls(rate=int(c.rate), period_ns=int(c.period_ns),
                   burst=int(c.burst),
                   unlimited=bool(c.flags & _lib.CONFIG_UNLIMITED),
                   catchup=int(c.catchup), concurrency=int(c.concurrency),
                   backlog=int(c.backlog), fairness=int(c.fairness),
                   fed=bool(c.flags & _lib.CONFIG_FED))


# What every call that takes a Config takes: a Config or a rate string.
ConfigLike = Union[Config, str]


def to_config(config: ConfigLike) -> Config:
    """@config itself, or the Config of a rate string."""
    return Config.parse(config) if isinstance(config, str) else config


@dataclasses.dataclass(frozen=True)
class Grant:
    """What an acquire reports (struct rl_acquire's outputs).

    granted is False only from try_acquire(); then ready_ns is the
    predicted CLOCK_MONOTONIC time (time.monotonic_ns()) the request could
    be granted at, DEADLINE_NONE when the limiter is paused. A Grant is
    true when granted. A grant from the fd's reservation page (no system
    call; see libratelimit(3) rl_fast_map()) has wait_ns, ready_ns and
    lag_ns 0.
    """

    granted: bool
    count: int
    wait_ns: int = 0
    ready_ns: int = 0
    lag_ns: int = 0

    def __bool__(self) -> bool:
        return self.granted


def _fields(cls: Any, c: Any) -> Any:
    return cls(**{f.name: int(getattr(c, f.name))
                  for f in dataclasses.fields(cls)})


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
class Demand:
    """What the limiter's clients ask for (struct rl_demand): tokens asked
    and refused since creation, queued now, time with a sleeper, and the
    CLOCK_MONOTONIC time of the snapshot."""

    asked: int
    refused: int
    queued: int
    busy_ns: int
    now_ns: int


@dataclasses.dataclass(frozen=True)
class Parent:
    """The limiter's place in its tree (struct rl_parent): the parent's
    name ("" for a root), its weight there, its ancestors and children."""

    name: str
    weight: int
    depth: int
    children: int


@dataclasses.dataclass(frozen=True)
class Features:
    """What the loaded module supports (struct rl_features)."""

    version: int
    flags: int
    ioctls: int
    config_flags: int
    acquire_flags: int
    attach_flags: int

    def has_ioctl(self, name: str) -> bool:
        """Does the module know ioctl @name, e.g. "RL_IOC_REFUND"?"""
        return bool(self.ioctls >> _lib.IOCTL_NR[name] & 1)

    @property
    def queued(self) -> bool:
        """Has the module the queued acquire (RL_FEATURE_QUEUED)?"""
        return bool(self.flags & _lib.FEATURE_QUEUED)

    @property
    def fast(self) -> bool:
        """Has the module reservation pages (RL_FEATURE_FAST)?"""
        return bool(self.flags & _lib.FEATURE_FAST)


def _deadline(timeout: Optional[float], deadline_ns: Optional[int]) -> int:
    if timeout is not None and deadline_ns is not None:
        raise ValueError("give timeout or deadline_ns, not both")
    if timeout is not None:
        return time.monotonic_ns() + max(0, int(timeout * 1e9))
    return _lib.DEADLINE_NONE if deadline_ns is None else deadline_ns


class Limiter:
    """A client of one limiter: an open file description of /dev/ratelimit.

    Make one with Limiter.private() or Limiter.attach(), or Limiter() and
    then configure() or attach_to(). The fd is pollable (fileno()):
    readable when an acquire of one token would be granted at once.
    Closing it (close(), contextlib.closing, or the process's death)
    gives back the permits it holds. Methods may be called from several
    threads at once; a blocking acquire() releases the GIL.
    """

    _fd = -1
    _aios: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncLimiter]"

    def __init__(self, path: str = DEVICE) -> None:
        """Open @path (/dev/ratelimit); the fd has no limiter yet."""
        if path == DEVICE:
            rc = lib.rl_open(0)
        else:
            try:
                rc = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            except OSError as e:
                rc = -(e.errno or errno.EIO)
        if rc < 0:
            raise OSError(-rc, f"open {path}: {os.strerror(-rc)}"
                          " (is the ratelimit module loaded?)", path)
        self._fd = int(rc)
        self._aios = weakref.WeakKeyDictionary()

    @classmethod
    def private(cls, rate: Union[int, ConfigLike] = 0,
                period_ns: int = 1_000_000_000, **limits: Any) -> "Limiter":
        """A new private limiter of @rate tokens per @period_ns.

        @rate may be a rate string ("100/s:10") or a Config instead.
        @limits are the other Config fields (burst, unlimited, catchup,
        concurrency, backlog, fairness, fed).
        """
        if isinstance(rate, str):
            config = Config.parse(rate, **limits)
        elif isinstance(rate, Config):
            config = dataclasses.replace(rate, **limits)
        else:
            config = Config(rate=rate, period_ns=period_ns, **limits)
        lim = cls()
        try:
            lim.configure(config)
        except BaseException:
            lim.close()
            raise
        return lim

    @classmethod
    def attach(cls, name: str, create: Optional[ConfigLike] = None, *,
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
        _check("rl_unlink", lib.rl_unlink(-1, _name(name)), f" {name!r}")

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
            lib.rl_close(fd)

    def __del__(self) -> None:
        if self._fd >= 0:
            # (at the interpreter's exit the library may be gone: the
            # kernel closes the fd then anyway)
            with contextlib.suppress(Exception):
                self.close()

    # One token (and, with a concurrency limit, one permit) for a with
    # block: "with limiter:" / "async with limiter:" / @limiter.limit().
    def __enter__(self) -> Grant:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self._done(1)

    async def __aenter__(self) -> Grant:
        return await self._aio().acquire()

    async def __aexit__(self, *exc: object) -> None:
        self._aio().done(1)

    def _aio(self) -> "AsyncLimiter":
        """The AsyncLimiter of this Limiter and the running loop."""
        from .aio import AsyncLimiter
        loop = asyncio.get_running_loop()
        alim = self._aios.get(loop)
        if alim is None:
            alim = self._aios[loop] = AsyncLimiter(self)
        return alim

    def _done(self, count: int) -> None:
        """The end of a block that took @count tokens: its permits go
        back if the limiter counts permits (a concurrency limit)."""
        if self._fd >= 0 and self.config().concurrency:
            self.release(count)

    @contextlib.contextmanager
    def permit(self, count: int = 1, **acquire: Any) -> Iterator[Grant]:
        """Take @count tokens for a with block; with a concurrency limit
        they are permits, released however the block ends (and by the
        kernel should the process die inside it).

        @acquire are acquire()'s keyword arguments.
        """
        grant = self.acquire(count, **acquire)
        try:
            yield grant
        finally:
            self._done(count)

    def limit(self, count: Union[int, F] = 1, **acquire: Any) -> Any:
        """A decorator: each call of the function takes @count tokens
        first (and holds them as permits during the call, with a
        concurrency limit). For a coroutine function the tokens come
        from this loop's AsyncLimiter, never blocking the loop; for
        others from acquire(). @acquire are acquire()'s keyword
        arguments. @limiter.limit and @limiter.limit(5) both work."""
        if not isinstance(count, int):
            return _decorate(self, count, 1, acquire)
        n = count

        def deco(fn: F) -> F:
            return _decorate(self, fn, n, acquire)
        return deco

    def configure(self, config: ConfigLike) -> None:
        """Create the fd's private limiter, or change the limits in force.

        A reconfiguration is atomic and keeps tokens, queued waiters and
        held permits; a named limiter needs write permission.
        """
        c = to_config(config)._c()
        _check("rl_set_config", lib.rl_set_config(self.fileno(),
                                                  ctypes.byref(c)))

    def config(self) -> Config:
        """The limits in force (burst, fairness: the values picked)."""
        c = _lib.rl_config()
        _check("rl_get_config", lib.rl_get_config(self.fileno(),
                                                  ctypes.byref(c)))
        return Config._from(c)

    def attach_to(self, name: str, create: Optional[ConfigLike] = None, *,
                  exclusive: bool = False, persist: bool = False,
                  mode: int = DEFAULT_MODE) -> None:
        """Make this fresh fd a client of the named limiter @name.

        With @create (a Config or a rate string), a missing limiter is
        created with those limits and permission bits @mode (read: attach
        and acquire, write: reconfigure; default DEFAULT_MODE, 0o644, as
        the tools'); @exclusive fails with FileExistsError if it exists;
        @persist makes a new one outlive its fds until unlink().
        """
        flags = 0
        if create is not None:
            flags |= _lib.ATTACH_CREATE
        elif exclusive or persist:
            raise ValueError("exclusive and persist need create=Config")
        flags |= _lib.ATTACH_EXCL if exclusive else 0
        flags |= _lib.ATTACH_PERSIST if persist else 0
        cfg = None if create is None else ctypes.byref(
            to_config(create)._c())
        _check("rl_attach", lib.rl_attach(self.fileno(), _name(name), flags,
                                          mode, cfg), f" {name!r}")

    def unlink_name(self, name: str) -> None:
        """Remove the name @name (any fd of /dev/ratelimit may do it)."""
        _check("rl_unlink", lib.rl_unlink(self.fileno(), _name(name)),
               f" {name!r}")

    def _acquire(self, count: int, deadline: int, flags: int,
                 priority: int) -> Grant:
        fd = self.fileno()
        # The fd's reservation page (RL_FEATURE_FAST), no system call: a
        # grant at once of the default priority, ready and lag unknown (0).
        if not priority and not flags & _lib.ACQUIRE_PREDICT and \
                lib.rl_fast_take(fd, count) == 1:
            return Grant(True, count)
        req = _lib.rl_acquire(count=count, deadline_ns=deadline, flags=flags,
                              priority=priority)
        while True:
            # The GIL is released in the call. A signal makes it return
            # -EINTR (Python's handlers are not SA_RESTART) with nothing
            # consumed; the loop's next turn runs the handler, which
            # raises (SIGINT: KeyboardInterrupt) or returns: then the
            # call goes on, with the same absolute deadline.
            rc = lib.rl_acquire_ex(fd, ctypes.byref(req))
            if rc != -errno.EINTR:
                break
        if rc < 0:
            e = _error("rl_acquire_ex", -rc, f" of {count}")
            e.ready_ns = int(req.ready_ns)  # type: ignore[attr-defined]
            raise e
        return Grant(True, count, int(req.wait_ns), int(req.ready_ns),
                     int(req.lag_ns))

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
                             _lib.ACQUIRE_PREDICT if predict else 0,
                             priority)

    def try_acquire(self, count: int = 1, *, priority: int = 0) -> Grant:
        """Take @count tokens if that is possible now, without sleeping.

        Returns a true Grant, or a false one whose ready_ns is when the
        request could be granted (DEADLINE_NONE: the limiter is paused).
        """
        try:
            return self._acquire(count, _lib.DEADLINE_NONE,
                                 _lib.ACQUIRE_NONBLOCK, priority)
        except BlockingIOError as e:
            return Grant(False, count,
                         ready_ns=getattr(e, "ready_ns", _lib.DEADLINE_NONE))

    def release(self, count: int = 1) -> None:
        """Give back @count concurrency permits this fd holds."""
        _check("rl_release", lib.rl_release(self.fileno(), count),
               f" of {count}")

    def refund(self, count: int) -> None:
        """Give back @count rate tokens acquired here and not used."""
        _check("rl_refund", lib.rl_refund(self.fileno(), count),
               f" of {count}")

    def cycle(self, release: int, count: int = 1, *,
              timeout: Optional[float] = None,
              deadline_ns: Optional[int] = None,
              priority: int = 0) -> Grant:
        """Give back @release permits and acquire @count, atomically
        (RL_IOC_CYCLE): waiters are served from what comes back first.
        On TimeoutError or KeyboardInterrupt the permits are given back
        all the same."""
        req = _lib.rl_cycle(release=release)
        req.acquire.count = count
        req.acquire.deadline_ns = _deadline(timeout, deadline_ns)
        req.acquire.priority = priority
        fd = self.fileno()
        while True:
            rc = lib.rl_cycle_ex(fd, ctypes.byref(req))
            if rc != -errno.EINTR:
                break
            req.release = 0         # given back already: retry the rest
        _check("rl_cycle_ex", rc, f" of {release} for {count}")
        a = req.acquire
        return Grant(True, count, int(a.wait_ns), int(a.ready_ns),
                     int(a.lag_ns))

    def stats(self) -> Stats:
        """The limiter's counters, as of now."""
        st = _lib.rl_stats()
        _check("rl_get_stats", lib.rl_get_stats(self.fileno(),
                                                ctypes.byref(st)))
        s: Stats = _fields(Stats, st)
        return s

    def client(self) -> Client:
        """This fd's priority, weight, cap, held permits and grants."""
        cc = _lib.rl_client_config()
        _check("rl_get_client", lib.rl_get_client(self.fileno(),
                                                  ctypes.byref(cc)))
        c: Client = _fields(Client, cc)
        return c

    def set_client(self, priority: int = 0, weight: int = 0,
                   cap: int = 0) -> None:
        """Set this fd's default priority (0: MID), fair-share weight
        (0: 1) and cap (tokens per period, 0: none)."""
        cc = _lib.rl_client_config(priority=priority, weight=weight, cap=cap)
        _check("rl_set_client", lib.rl_set_client(self.fileno(),
                                                  ctypes.byref(cc)))

    def features(self) -> Features:
        """What the loaded module supports."""
        f = _lib.rl_features()
        _check("rl_get_features", lib.rl_get_features(self.fileno(),
                                                      ctypes.byref(f)))
        feat: Features = _fields(Features, f)
        return feat

    def deposit(self, count: int) -> int:
        """Feed @count tokens to this fed limiter (Config(fed=True)); needs
        the right to reconfigure it. Returns the tokens that did not fit
        under the burst (they were not added)."""
        excess = ctypes.c_uint64()
        _check("rl_deposit", lib.rl_deposit(self.fileno(), count,
                                            ctypes.byref(excess)),
               f" of {count}")
        return int(excess.value)

    def set_lease(self, config: ConfigLike, fallback: ConfigLike, *,
                  timeout: Optional[float] = None,
                  expires_ns: Optional[int] = None) -> None:
        """Apply @config now and @fallback when the lease ends: after
        @timeout seconds, at @expires_ns (time.monotonic_ns()), or when
        this fd closes. A later call renews it; timeout=0 ends it now."""
        if (timeout is None) == (expires_ns is None):
            raise ValueError("give timeout or expires_ns")
        if timeout is not None:
            expires_ns = (time.monotonic_ns() + int(timeout * 1e9)
                          if timeout > 0 else 0)
        lease = _lib.rl_lease(expires_ns=expires_ns,
                              config=to_config(config)._c(),
                              fallback=to_config(fallback)._c())
        _check("rl_set_lease", lib.rl_set_lease(self.fileno(),
                                                ctypes.byref(lease)))

    def demand(self) -> Demand:
        """What the limiter's clients ask for, as of now."""
        d = _lib.rl_demand()
        _check("rl_get_demand", lib.rl_get_demand(self.fileno(),
                                                  ctypes.byref(d)))
        dem: Demand = _fields(Demand, d)
        return dem

    def set_parent(self, parent: Optional[str], weight: int = 0) -> None:
        """Put this named limiter under the named limiter @parent (None:
        make it a root), with @weight among the parent's children."""
        _check("rl_set_parent", lib.rl_set_parent(
            self.fileno(), None if parent is None else _name(parent),
            weight), "" if parent is None else f" {parent!r}")

    def parent(self) -> Parent:
        """The limiter's parent ("" for a root), weight, depth and
        children."""
        p = _lib.rl_parent()
        buf = ctypes.create_string_buffer(_lib.NAME_MAX)
        _check("rl_get_parent", lib.rl_get_parent(self.fileno(),
                                                  ctypes.byref(p), buf))
        return Parent(buf.value.decode(), int(p.weight), int(p.depth),
                      int(p.children))

    def set_perm(self, *, uid: Optional[int] = None,
                 gid: Optional[int] = None,
                 mode: Optional[int] = None) -> None:
        """Change the owner, group or mode of this named limiter in place
        (as chown and chmod; attached fds keep working)."""
        flags = ((_lib.PERM_UID if uid is not None else 0) |
                 (_lib.PERM_GID if gid is not None else 0) |
                 (_lib.PERM_MODE if mode is not None else 0))
        if not flags:
            raise ValueError("give uid, gid or mode")
        _check("rl_set_perm", lib.rl_set_perm(
            self.fileno(), uid or 0, gid or 0, mode or 0, flags))


def _decorate(lim: Any, fn: F, count: int, acquire: Dict[str, Any]) -> F:
    """@fn, taking @count tokens of @lim (a Limiter or AsyncLimiter)
    around each call."""
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def acall(*args: Any, **kwargs: Any) -> Any:
            alim = lim._aio() if isinstance(lim, Limiter) else lim
            async with alim.permit(count, **acquire):
                return await fn(*args, **kwargs)
        return cast(F, acall)
    if not isinstance(lim, Limiter):
        raise TypeError("AsyncLimiter.limit() decorates coroutine "
                        "functions (Limiter.limit() decorates both)")

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with lim.permit(count, **acquire):
            return fn(*args, **kwargs)
    return cast(F, call)


def features() -> Features:
    """What the loaded module supports (opens /dev/ratelimit once)."""
    lim = Limiter()
    try:
        return lim.features()
    finally:
        lim.close()


def name_valid(name: str) -> bool:
    """Is @name a valid limiter name (1 to 63 of [A-Za-z0-9._-], not
    starting with ".")?"""
    return bool(lib.rl_name_valid(_name(name)))


def parse_amount(arg: str) -> int:
    """A token count with a rate string's suffixes: "10k", "64KiB"."""
    v = ctypes.c_uint64()
    _parsed("rl_parse_amount", lib.rl_parse_amount(arg.encode(),
                                                   ctypes.byref(v)), arg)
    return int(v.value)


def parse_priority(arg: str) -> int:
    """PRIO_LOW .. PRIO_USER of "low", "mid", "high", "user" or "1".."4"."""
    return _parsed("rl_parse_priority",
                   lib.rl_parse_priority(arg.encode()), arg)


def now_ns() -> int:
    """CLOCK_MONOTONIC in ns: the clock of deadlines and ready times (that
    of time.monotonic_ns())."""
    return int(lib.rl_now_ns())
