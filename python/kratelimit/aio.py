# SPDX-License-Identifier: LGPL-2.1-or-later
"""asyncio: acquires that never block the event loop.

An AsyncLimiter keeps a FIFO of the loop's waiting tasks and serves its
head with non-blocking acquires (RL_ACQUIRE_NONBLOCK): when one fails, it
waits for the predicted grant time (loop.call_at) or, when only a permit
or a reconfiguration can help, for the fd to poll readable
(loop.add_reader). A task cancelled while it waits consumes nothing; one
cancelled as its grant comes gives the tokens back.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import time
from typing import Any, AsyncIterator, Deque, Optional, Union

from . import _lib
from ._core import F, Grant, Limiter, _decorate

# After a wake-up by poll that still found the head unservable (it wants
# more than the one token or permit poll reports), wait this long before
# the next try rather than spin on a readable fd.
_POLL_BACKOFF = 0.001



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

    def __init__(self, limiter: Limiter) -> None:
        self.limiter = limiter
        self._queue: Deque[_Waiter] = collections.deque()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._reader = False
        self._timer: Optional[asyncio.Handle] = None

    async def acquire(self, count: int = 1, *, priority: int = 0,
                      timeout: Optional[float] = None) -> Grant:
        """Take @count tokens; other tasks run meanwhile.

        Waiters of this loop are served first come, first served. A
        @count above the burst is served in chunks, all or nothing.
        @timeout (seconds) raises TimeoutError with nothing consumed.
        """
        if timeout is not None:
            return await asyncio.wait_for(
                self.acquire(count, priority=priority), timeout)
        loop = asyncio.get_running_loop()
        if self._loop is None or (self._loop.is_closed() and
                                  not self._queue):
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError("AsyncLimiter used from two event loops")
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
            return _decorate(self, count, 1, acquire)
        n = count

        def deco(fn: F) -> F:
            return _decorate(self, fn, n, acquire)
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

