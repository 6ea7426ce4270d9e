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
from typing import (Any, Callable, Dict, Iterator, Optional, TypeVar, Union,
                    cast)

from . import _lib
from ._lib import lib
from ._values import (Client, Config, ConfigLike, Demand, Features, Grant,
                      KeyLike, KeysStats, KeyState, Parent, Stats, _check,
                      _error, _fields, _key, _name, _parsed, to_config)
from .aio import AsyncLimiter, _limited

F = TypeVar("F", bound=Callable[..., Any])

DEVICE = "/dev/ratelimit"
# The permission bits of a named limiter created without a mode, as the
# tools have it (ratelimit(4)): everyone may attach and acquire, only the
# owner (and root) reconfigure.
DEFAULT_MODE = 0o644

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
        concurrency, backlog, fairness, fed, keyed, keys).
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

    def _aio(self) -> AsyncLimiter:
        """The AsyncLimiter of this Limiter and the running loop."""
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

    # Keyed limiters (Config(keyed=True)): a token bucket per key.

    def _acquire_key(self, key: KeyLike, count: int, deadline: int,
                     flags: int) -> Grant:
        k = _key(key)
        fd = self.fileno()
        req = _lib.rl_key_acquire(key_len=len(k))
        req.acquire.count = count
        req.acquire.deadline_ns = deadline
        req.acquire.flags = flags
        ctypes.memmove(req.key, k, len(k))
        while True:
            # As in _acquire(): the GIL is released in the call, and a
            # signal's -EINTR (nothing taken) runs the handler here,
            # then the call goes on with the same deadline.
            rc = _lib.acquire_key_ex(fd, req)
            if rc != -errno.EINTR:
                break
        if rc < 0:
            e = _error("rl_acquire_key_ex", -rc, f" of {count} for key {k!r}")
            e.ready_ns = int(req.acquire.ready_ns)  # type: ignore[attr-defined]
            raise e
        a = req.acquire
        return Grant(True, count, int(a.wait_ns), int(a.ready_ns), 0)

    def acquire_key(self, key: KeyLike, count: int = 1, *,
                    timeout: Optional[float] = None,
                    deadline_ns: Optional[int] = None,
                    predict: bool = False) -> Grant:
        """Take @count tokens of @key's bucket on a keyed limiter,
        sleeping in the kernel until they exist.

        @key is 1 to KEY_MAX (64) bytes, or a str (encoded UTF-8);
        ValueError else. Requests of one key are served in arrival order;
        other keys never wait for it. @count is at most the burst
        (OSError EINVAL above). @timeout, @deadline_ns and @predict as for
        acquire(): TimeoutError with nothing taken and the ready time in
        its ready_ns attribute. A new key when the limiter keeps as many
        keys as Config.keys allows, all carrying state: OSError ENOSPC at
        once, its ready_ns when room comes back at the latest.
        """
        return self._acquire_key(key, count, _deadline(timeout, deadline_ns),
                                 _lib.ACQUIRE_PREDICT if predict else 0)

    def try_acquire_key(self, key: KeyLike, count: int = 1) -> Grant:
        """Take @count tokens of @key's bucket if they are there now.

        Returns a true Grant, or a false one whose ready_ns is when the
        request could be granted (behind the key's sleepers): what an
        HTTP server answers a 429 with, as Retry-After (Grant.retry_after()).
        ENOSPC as for acquire_key().
        """
        try:
            return self._acquire_key(key, count, _lib.DEADLINE_NONE,
                                     _lib.ACQUIRE_NONBLOCK)
        except BlockingIOError as e:
            return Grant(False, count,
                         ready_ns=getattr(e, "ready_ns", _lib.DEADLINE_NONE))

    def key_state(self, key: KeyLike) -> KeyState:
        """@key's state on this keyed limiter, read without creating it."""
        k = _key(key)
        st = _lib.rl_key_state()
        _check("rl_get_key", _lib.get_key(self.fileno(), k, st),
               f" {k!r}")
        return KeyState(k, int(st.available), int(st.full_ns),
                        int(st.waiters), bool(st.kept))

    def keys_stats(self) -> KeysStats:
        """The counts of this keyed limiter's keys, as of now."""
        st = _lib.rl_keys_stats()
        _check("rl_get_keys", _lib.get_keys(self.fileno(), st))
        ks: KeysStats = _fields(KeysStats, st)
        return ks

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


def _decorate(lim: Limiter, fn: F, count: int, acquire: Dict[str, Any]) -> F:
    """@fn, taking @count tokens of @lim around each call: a coroutine
    function's from the running loop's AsyncLimiter."""
    if inspect.iscoroutinefunction(fn):
        return _limited(lim._aio, fn, count, acquire)

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
