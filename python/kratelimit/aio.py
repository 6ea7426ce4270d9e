# SPDX-License-Identifier: LGPL-2.1-or-later
"""asyncio: acquires that never block the event loop.

With the queued acquire (libratelimit's rl_submit(), rl_collect(),
rl_cancel(); RL_FEATURE_QUEUED), a task's acquire takes its place in the
kernel's queue, in the same order of service as a process sleeping in a
blocking acquire, and returns at once; the fd polls readable when a
request is granted (loop.add_reader) and the loop collects the grants.
At most QUEUED_MAX requests are in the kernel per fd: the others wait in
this AsyncLimiter's FIFO. A task cancelled while queued cancels its
request (nothing consumed); one cancelled as its grant comes gives the
tokens back.

Without it (an older module or library), the loop's waiters form a FIFO
whose head is served with non-blocking acquires (RL_ACQUIRE_NONBLOCK),
waiting for the predicted grant time or for the fd to poll readable; the
kernel then serves its sleepers first.

acquire_key() takes the same path with the queued acquire of a key
(rl_submit_key(), RL_IOC_SUBMIT_KEY): the request waits in line on its
key in the kernel, with the key's sleepers, and is collected as any
other. A task cancelled while in line withdraws it (nothing taken); one
cancelled as its grant comes keeps the tokens taken (a key's bucket takes
nothing back). With a library without rl_submit_key(), acquire_key()
serves each key's waiters of the loop in order (a FIFO per key) with
non-blocking acquires of the key, waiting for the ready time the kernel
predicts; the kernel serves the key's sleepers in blocking acquires
first.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import errno
import functools
import inspect
import itertools
import time
import weakref
from typing import (Any, AsyncIterator, Callable, Deque, Dict, Iterator,
                    Optional, Protocol, TypeVar, Union, cast)

from . import _lib
from ._values import Config, Features, Grant, KeyLike, _error, _key

F = TypeVar("F", bound=Callable[..., Any])

# After a wake-up by poll that still found the head unservable (it wants
# more than the one token or permit poll reports), wait this long before
# the next try rather than spin on a readable fd.
_POLL_BACKOFF = 0.001
# A keyed waiter refused tries again at the ready time the kernel
# predicted, and at least this often (seconds): a reconfiguration may
# bring the time closer.
_KEY_RETRY_MAX = 1.0


class _Sync(Protocol):
    """What an AsyncLimiter asks of its Limiter: its fd and non-blocking
    calls (the tests give it a simulation)."""

    @property
    def closed(self) -> bool: ...
    def fileno(self) -> int: ...
    def features(self) -> Features: ...
    def config(self) -> Config: ...
    def try_acquire(self, count: int, *, priority: int) -> Grant: ...
    def try_acquire_key(self, key: KeyLike, count: int) -> Grant: ...
    def refund(self, count: int) -> None: ...
    def release(self, count: int) -> None: ...


class _Ops:
    """The queued acquire's library calls (rl_submit, rl_collect,
    rl_cancel), -errno returns; the tests put a simulation
    of the kernel in their place."""

    def submit(self, fd: int, q: _lib.rl_queued) -> int:
        return int(_lib.lib.rl_submit(fd, ctypes.byref(q)))

    def collect(self, fd: int, q: _lib.rl_queued) -> int:
        return int(_lib.lib.rl_collect(fd, ctypes.byref(q)))

    def cancel(self, fd: int, ticket: int) -> int:
        return int(_lib.lib.rl_cancel(fd, ticket))

    def submit_key(self, fd: int, kq: _lib.rl_key_queued) -> int:
        return int(_lib.lib.rl_submit_key(fd, ctypes.byref(kq)))


# The requests' user_data, unique in the process: an fd may have several
# AsyncLimiters (a loop per thread), and a collect returns any result of
# the fd; it goes to the AsyncLimiter that submitted the request.
_uids: Iterator[int] = itertools.count(1)
_owners: "weakref.WeakValueDictionary[int, AsyncLimiter]" = \
    weakref.WeakValueDictionary()


class _Request:
    """A task's queued acquire: in the FIFO (ticket 0) or in the kernel;
    key: the key of a keyed limiter's request, else None."""

    __slots__ = ("fut", "count", "prio", "deadline", "uid", "ticket", "key")

    def __init__(self, fut: "asyncio.Future[Grant]", count: int, prio: int,
                 deadline: int, uid: int,
                 key: Optional[bytes] = None) -> None:
        self.fut = fut
        self.count = count
        self.prio = prio
        self.deadline = deadline
        self.uid = uid
        self.ticket = 0
        self.key = key


class _Waiter:
    """A task's request in the queue; taken: tokens of its chunks so far."""

    __slots__ = ("fut", "count", "prio", "taken", "chunk")

    def __init__(self, fut: "asyncio.Future[Grant]", count: int, prio: int) -> None:
        self.fut = fut
        self.count = count
        self.prio = prio
        self.taken = 0
        self.chunk = 0


class AsyncLimiter:
    """Acquires of a Limiter for the tasks of one event loop.

    Use one AsyncLimiter per Limiter and loop; the Limiter stays usable
    from threads (blocking acquires queue in the kernel beside this
    loop's non-blocking ones).
    """

    def __init__(self, limiter: _Sync) -> None:
        self.limiter = limiter
        self._queue: Deque[_Waiter] = collections.deque()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._reader = False
        self._timer: Optional[asyncio.Handle] = None
        # The queued acquire's state: the library calls (None: not
        # there), requests not submitted yet, requests in the kernel by
        # user_data.
        self._ops: Optional[_Ops] = None
        if _lib.has_queued and limiter.features().queued:
            self._ops = _Ops()
        self._fifo: Deque[_Request] = collections.deque()
        self._out: Dict[int, _Request] = {}
        # Do acquire_key()s take the same path (rl_submit_key())?
        self._keyed_queued = self._ops is not None and _lib.has_submit_key
        # Else acquire_key()'s waiters, a FIFO per key: the head tries.
        self._keys: Dict[bytes, Deque["asyncio.Future[None]"]] = {}

    @property
    def queued(self) -> bool:
        """Do acquires take a place in the kernel's queue (the queued
        acquire), rather than only non-blocking tries?"""
        return self._ops is not None

    async def acquire(self, count: int = 1, *, priority: int = 0,
                      timeout: Optional[float] = None) -> Grant:
        """Take @count tokens; other tasks run meanwhile.

        Requests of this loop are served in the kernel's order (first
        come, first served at one priority; this fd is one flow beside
        the limiter's other clients). A @count above the burst is
        served in chunks, all or nothing. @timeout (seconds) raises
        TimeoutError with nothing consumed.
        """
        loop = asyncio.get_running_loop()
        self._bind(loop)
        if self._ops is not None:
            deadline = _lib.DEADLINE_NONE
            if timeout is not None:
                deadline = time.monotonic_ns() + max(0, int(timeout * 1e9))
            return await self._acquire_queued(loop, count, priority,
                                              deadline)
        if timeout is not None:
            return await asyncio.wait_for(
                self.acquire(count, priority=priority), timeout)
        start = time.monotonic_ns()
        if not self._queue:
            grant = self._fast(count, priority)
            if grant:
                # Let the loop run: a task that takes grants in a loop
                # must not keep the others (and this loop's waiters
                # still to come) from running.
                try:
                    await asyncio.sleep(0)
                except asyncio.CancelledError:
                    self._give_back(count)
                    raise
                return grant
        w = _Waiter(loop.create_future(), count, priority)
        self._queue.append(w)
        if len(self._queue) == 1:
            # A new head; behind one, the wake-up the head waits for
            # serves this waiter too.
            self._schedule(0)
        try:
            got = await w.fut
        except asyncio.CancelledError:
            self._cancelled(w)
            raise
        return Grant(True, count, time.monotonic_ns() - start,
                     got.ready_ns, got.lag_ns)

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Make @loop this AsyncLimiter's, the first time (or once its
        last loop is closed and nothing waits)."""
        busy = bool(self._queue or self._fifo or self._out or self._keys)
        if self._loop is None or (self._loop.is_closed() and not busy):
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError("AsyncLimiter used from two event loops")

    async def acquire_key(self, key: KeyLike, count: int = 1, *,
                          timeout: Optional[float] = None) -> Grant:
        """Take @count tokens of @key's bucket on a keyed limiter; other
        tasks run meanwhile.

        @key is bytes or str (UTF-8), 1 to KEY_MAX bytes (ValueError
        else). Requests of one key are served in arrival order, this
        loop's in the kernel's line of the key with the key's sleepers
        in blocking acquire_key(), and never wait for other keys'.
        @timeout (seconds) raises TimeoutError with nothing taken
        (ready_ns attribute: the time the request could have been
        granted at, as the kernel says); OSError ENOSPC (with ready_ns)
        and EINVAL at once, as Limiter.acquire_key(). A task cancelled
        while its request waits withdraws it, nothing taken; the tokens
        of a grant that comes as it is cancelled stay taken (a key takes
        nothing back).
        """
        k = _key(key)
        loop = asyncio.get_running_loop()
        self._bind(loop)
        start = time.monotonic_ns()
        deadline = _lib.DEADLINE_NONE
        if timeout is not None:
            deadline = start + max(0, int(timeout * 1e9))
        if self._keyed_queued:
            return await self._acquire_queued(loop, count, 0, deadline, k)
        # A library without rl_submit_key(): tries at the ready time.
        q = self._keys.setdefault(k, collections.deque())
        turn: "asyncio.Future[None]" = loop.create_future()
        q.append(turn)
        try:
            if len(q) == 1:
                # The head at once: let the loop run before the try, so
                # that a task taking grants in a loop cannot keep the
                # others from it (a grant of a key cannot be given back).
                turn.set_result(None)
                await asyncio.sleep(0)
            elif timeout is None:
                await turn
            else:
                try:
                    await asyncio.wait_for(
                        turn, max(0, deadline - time.monotonic_ns()) / 1e9)
                except asyncio.TimeoutError:
                    raise self._key_timeout(k, count,
                                            _lib.DEADLINE_NONE) from None
            while True:
                grant = self.limiter.try_acquire_key(k, count)
                now = time.monotonic_ns()
                if grant:
                    return Grant(True, count, now - start, grant.ready_ns)
                if now >= deadline:
                    raise self._key_timeout(k, count, grant.ready_ns)
                wake = min(grant.ready_ns, deadline)
                await asyncio.sleep(min(max(0, wake - now) / 1e9,
                                        _KEY_RETRY_MAX))
        finally:
            head = bool(q) and q[0] is turn
            with contextlib.suppress(ValueError):
                q.remove(turn)
            if not q:
                if self._keys.get(k) is q:
                    del self._keys[k]
            elif head and not q[0].done():
                q[0].set_result(None)

    @staticmethod
    def _key_timeout(key: bytes, count: int, ready_ns: int) -> OSError:
        e = _error("rl_acquire_key_ex", errno.ETIMEDOUT,
                   f" of {count} for key {key!r}")
        e.ready_ns = ready_ns  # type: ignore[attr-defined]
        return e

    async def _acquire_queued(self, loop: asyncio.AbstractEventLoop,
                              count: int, prio: int, deadline: int,
                              key: Optional[bytes] = None) -> Grant:
        r = _Request(loop.create_future(), count, prio, deadline,
                     next(_uids), key)
        if not self._fifo and len(self._out) < _lib.QUEUED_MAX:
            self._submit(r)
        else:
            self._fifo.append(r)
        now = r.fut.done()
        try:
            grant = await r.fut
            if now:
                # Granted at once: let the loop run, so that a task that
                # takes grants in a loop cannot keep the others from it.
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            self._withdraw(r)
            raise
        return grant

    def _submit(self, r: _Request) -> None:
        """Hand @r to the kernel: granted at once, queued there, or back
        to the head of the FIFO (the fd has QUEUED_MAX outstanding)."""
        assert self._ops is not None
        fd = self.limiter.fileno()
        if r.key is None:
            q = _lib.rl_queued(count=r.count, deadline_ns=r.deadline,
                               priority=r.prio, user_data=r.uid)
            rc = self._ops.submit(fd, q)
        else:
            kq = _lib.rl_key_queued(key_len=len(r.key))
            ctypes.memmove(kq.key, r.key, len(r.key))
            q = kq.queued
            q.count, q.deadline_ns, q.user_data = r.count, r.deadline, r.uid
            rc = self._ops.submit_key(fd, kq)
        if rc == -errno.EBUSY:
            self._fifo.appendleft(r)    # another loop's requests: later
            self._watch()
        elif rc < 0:
            r.fut.set_exception(self._failed(
                "rl_submit_key" if r.key is not None else "rl_submit",
                -rc, r, q))
        elif q.ticket == 0:
            r.fut.set_result(Grant(True, r.count, int(q.wait_ns),
                                   int(q.ready_ns), int(q.lag_ns)))
        else:
            r.ticket = int(q.ticket)
            self._out[r.uid] = r
            _owners[r.uid] = self
            self._watch()

    def _watch(self) -> None:
        """Watch the fd while requests are in the kernel."""
        if not self._reader and self._loop is not None:
            self._loop.add_reader(self.limiter.fileno(), self._collect)
            self._reader = True

    def _collect(self) -> None:
        """The fd is readable: collect the finished requests, then submit
        what waits in the FIFO."""
        assert self._ops is not None and self._loop is not None
        fd = self.limiter.fileno()
        got = 0
        while True:
            q = _lib.rl_queued()
            rc = self._ops.collect(fd, q)
            if rc == -errno.EAGAIN:
                break
            if rc < 0:
                self._fail_all(_error("rl_collect", -rc))
                return
            got += 1
            owner = _owners.pop(int(q.user_data), None)
            if owner is None or owner is self:
                self._deliver(q)
            elif owner._loop is not None and not owner._loop.is_closed():
                owner._loop.call_soon_threadsafe(owner._deliver, q)
            elif q.result == 0:         # its loop is gone: give it back
                self._give_back_queued(int(q.count))
        self._refill()
        if not self._out and self._reader:
            self._loop.remove_reader(fd)
            self._reader = False
        elif not got and self._reader:
            # Readable for the old reason (a token for a try) while this
            # fd's requests wait for more: poll again a little later
            # rather than spin.
            self._loop.remove_reader(fd)
            self._reader = False
            self._loop.call_later(_POLL_BACKOFF, self._rewatch)

    def _deliver(self, q: _lib.rl_queued) -> None:
        """A collected result: to its task, or back to the limiter when
        the task is gone."""
        r = self._out.pop(int(q.user_data), None)
        if r is None:
            return
        if q.result == 0:
            if r.fut.done():            # cancelled meanwhile
                self._give_back_queued(r.count)
            else:
                r.fut.set_result(Grant(True, r.count, int(q.wait_ns),
                                       int(q.ready_ns), int(q.lag_ns)))
        elif not r.fut.done():
            r.fut.set_exception(self._failed("rl_collect", -int(q.result),
                                             r, q))
        if self._loop is not None and not self._out and self._reader:
            self._loop.remove_reader(self.limiter.fileno())
            self._reader = False
        self._refill()

    def _rewatch(self) -> None:
        if self.limiter.closed:
            return
        self._refill()
        if self._out or self._fifo:
            self._watch()

    def _refill(self) -> None:
        while self._fifo and len(self._out) < _lib.QUEUED_MAX:
            r = self._fifo.popleft()
            if not r.fut.done():
                self._submit(r)
                if r in self._fifo:     # EBUSY: stop for now
                    break

    def _withdraw(self, r: _Request) -> None:
        """A task cancelled: its request leaves the FIFO or the kernel's
        queue; tokens it was granted go back."""
        assert self._ops is not None
        if r.ticket == 0:
            with contextlib.suppress(ValueError):
                self._fifo.remove(r)
        elif self._out.pop(r.uid, None) is not None:
            rc = self._ops.cancel(self.limiter.fileno(), r.ticket)
            if rc == -errno.ENOENT:
                # Finished, not collected yet: the collect gives it back.
                self._out[r.uid] = r
                return
            _owners.pop(r.uid, None)
            if rc < 0:
                raise _error("rl_cancel", -rc)
            self._refill()
            return
        if r.fut.done() and not r.fut.cancelled() and \
                r.fut.exception() is None:
            self._give_back_queued(r.count)
        self._refill()

    @staticmethod
    def _failed(call: str, err: int, r: _Request,
                q: _lib.rl_queued) -> OSError:
        """The error of @r, refused by @call with errno @err; a keyed
        request's carries the kernel's ready_ns (ETIMEDOUT, ENOSPC), for
        a Retry-After, as Limiter.acquire_key()'s."""
        if r.key is None:
            return _error(call, err, f" of {r.count}")
        e = _error(call, err, f" of {r.count} for key {r.key!r}")
        e.ready_ns = int(q.ready_ns)  # type: ignore[attr-defined]
        return e

    def _give_back_queued(self, count: int) -> None:
        """Tokens granted to a request whose task is gone go back; a
        keyed limiter's stay taken (a key's bucket takes nothing back: a
        refund could let a later request of the key through early)."""
        cfg = self.limiter.config()
        if cfg.keyed:
            return
        if not cfg.unlimited:
            self.limiter.refund(count)
        if cfg.concurrency:
            self.limiter.release(count)

    def _fail_all(self, e: OSError) -> None:
        for r in list(self._out.values()) + list(self._fifo):
            if not r.fut.done():
                r.fut.set_exception(e)
        self._out.clear()
        self._fifo.clear()

    def _fast(self, count: int, prio: int) -> Optional[Grant]:
        """A grant at once, if nobody of this loop waits and it is there."""
        try:
            return self.limiter.try_acquire(count, priority=prio)
        except OSError as e:
            if e.errno != errno.EINVAL:     # above the burst: queue it
                raise
            return None

    def _cancelled(self, w: _Waiter) -> None:
        """A waiter cancelled: leave the queue, give back what it got."""
        head = bool(self._queue) and self._queue[0] is w
        with contextlib.suppress(ValueError):
            self._queue.remove(w)
        got = w.taken
        if w.fut.done() and not w.fut.cancelled() and not w.fut.exception():
            got = w.count
        w.taken = 0
        if got:
            self._give_back(got)
        elif head:
            self._schedule(0)

    def _give_back(self, count: int) -> None:
        cfg = self.limiter.config()
        if not cfg.unlimited:
            self.limiter.refund(count)
        if cfg.concurrency:
            self.limiter.release(count)
        self._schedule(0)

    @contextlib.asynccontextmanager
    async def permit(self, count: int = 1,
                     **acquire: Any) -> AsyncIterator[Grant]:
        """Take @count tokens for an async with block; with a concurrency
        limit they are permits, released however it ends (and by the
        kernel should the process die)."""
        grant = await self.acquire(count, **acquire)
        try:
            yield grant
        finally:
            self.done(count)

    def done(self, count: int) -> None:
        """The end of a block that took @count tokens: its permits go
        back if the limiter counts permits (a concurrency limit)."""
        if not self.limiter.closed and self.limiter.config().concurrency:
            self.limiter.release(count)
            if self._ops is None:
                self._schedule(0)

    async def __aenter__(self) -> Grant:
        return await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.done(1)

    def limit(self, count: Union[int, F] = 1, **acquire: Any) -> Any:
        """A decorator of coroutine functions: each call takes @count
        tokens first (held as permits during the call, with a
        concurrency limit). @alim.limit and @alim.limit(5) both work."""
        if not isinstance(count, int):
            return _limited(lambda: self, count, 1, acquire)
        n = count

        def deco(fn: F) -> F:
            return _limited(lambda: self, fn, n, acquire)
        return deco

    def _schedule(self, delay: float) -> None:
        """Serve the queue after @delay seconds (0: soon), once."""
        if self._loop is None:
            return
        self._unwatch()
        if not self._queue:
            return
        if delay <= 0:
            self._timer = self._loop.call_soon(self._serve, False)
        else:
            self._timer = self._loop.call_later(delay, self._serve, False)

    def _unwatch(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._reader and self._loop is not None:
            self._loop.remove_reader(self.limiter.fileno())
            self._reader = False

    def _serve(self, polled: bool) -> None:
        """Grant what can be granted from the head of the queue on."""
        self._unwatch()
        while self._queue:
            w = self._queue[0]
            if w.fut.done():
                self._queue.popleft()
                continue
            try:
                grant = self._take(w)
            except Exception as e:  # an error is the head waiter's own
                self._queue.popleft()
                self._fail(w, e)
                continue
            if grant is None:
                # A chunk of a request above the burst: the others go
                # first, as in the kernel.
                self._queue.rotate(-1)
            elif not grant:
                self._wait(grant.ready_ns, polled)
                return
            else:
                self._queue.popleft()
                w.fut.set_result(grant)

    def _fail(self, w: "_Waiter", e: Exception) -> None:
        if w.taken:
            self._give_back(w.taken)
            w.taken = 0
        w.fut.set_exception(e)

    def _take(self, w: "_Waiter") -> Optional[Grant]:
        """A non-blocking acquire for @w: its Grant, a false one with the
        ready time, or None when a chunk of a big request was taken."""
        want = w.count - w.taken
        if w.chunk:
            want = min(want, w.chunk)
        try:
            grant = self.limiter.try_acquire(want, priority=w.prio)
        except OSError as e:
            # RL_ACQUIRE_NONBLOCK is EINVAL above the burst: in chunks.
            if e.errno != errno.EINVAL or w.chunk:
                raise
            w.chunk = self.limiter.config().burst
            if want <= w.chunk:
                raise
            return None
        if not grant:
            return grant
        w.taken += want
        if w.taken < w.count:
            return None
        return Grant(True, w.count, 0, grant.ready_ns, grant.lag_ns)

    def _wait(self, ready_ns: int, polled: bool) -> None:
        """Wake up at @ready_ns, or when the fd polls readable."""
        assert self._loop is not None
        now = time.monotonic_ns()
        if ready_ns != _lib.DEADLINE_NONE and ready_ns > now:
            self._timer = self._loop.call_later((ready_ns - now) / 1e9,
                                                self._serve, False)
        elif polled:
            self._timer = self._loop.call_later(_POLL_BACKOFF,
                                                self._serve, False)
        else:
            self._loop.add_reader(self.limiter.fileno(), self._serve, True)
            self._reader = True


def _limited(alim: Callable[[], AsyncLimiter], fn: F, count: int,
            acquire: Dict[str, Any]) -> F:
    """@fn, a coroutine function, taking @count tokens of alim() (called
    in the running loop) around each call: AsyncLimiter.limit(), and
    Limiter.limit() for coroutine functions."""
    if not inspect.iscoroutinefunction(fn):
        raise TypeError("AsyncLimiter.limit() decorates coroutine "
                        "functions (Limiter.limit() decorates both)")

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        async with alim().permit(count, **acquire):
            return await fn(*args, **kwargs)
    return cast(F, call)
