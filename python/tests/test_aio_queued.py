# SPDX-License-Identifier: GPL-2.0-only
"""kratelimit.aio on the queued acquire (rl_submit, rl_collect,
rl_cancel), against a simulation of the kernel's side of the contract:
FIFO service, the fd readable while a result waits, at most QUEUED_MAX
outstanding per fd, cancellation, deadlines. Needs no module: on the
build machine and in the guest."""

import asyncio
import errno
import os
import threading
import unittest

from kratelimit import QUEUED_MAX, Config
from kratelimit.aio import AsyncLimiter
from util import need_socketpair


class FakeKernel:
    """One fd's queued requests; a pipe is the fd the loop polls."""

    def __init__(self, tokens=0):
        self.rd, self.wr = os.pipe()
        os.set_blocking(self.rd, False)
        self.tokens = tokens
        self.queue = []         # [q fields] waiting, in order
        self.done = []          # finished, not collected
        self.tickets = 0
        self.most = 0
        self.calls = []
        self.refunded = 0
        self.lock = threading.Lock()    # two loops' threads may call

    # the library calls (-errno returns)
    def submit(self, fd, q):
        with self.lock:
            return self._submit(fd, q)

    def collect(self, fd, q):
        with self.lock:
            return self._collect(fd, q)

    def cancel(self, fd, ticket):
        with self.lock:
            return self._cancel(fd, ticket)

    def submit_key(self, fd, kq):
        """A keyed limiter's request: one key's line is all this fake
        has."""
        with self.lock:
            self.calls.append(("key", bytes(kq.key[:kq.key_len])))
            return self._submit(fd, kq.queued)

    def _submit(self, fd, q):
        self.calls.append(("submit", q.user_data))
        if len(self.queue) + len(self.done) >= QUEUED_MAX:
            return -errno.EBUSY
        if q.priority > 4:
            return -errno.EPERM
        if not self.queue and self.tokens >= q.count:
            self.tokens -= q.count
            q.ticket = 0
            return 0
        self.tickets += 1
        q.ticket = self.tickets
        self.queue.append({"ticket": q.ticket, "count": q.count,
                           "user_data": q.user_data, "result": 0})
        self.most = max(self.most, len(self.queue) + len(self.done))
        return 0

    def _collect(self, fd, q):
        if not self.done:
            try:
                os.read(self.rd, 4096)
            except BlockingIOError:
                pass
            return -errno.EAGAIN
        r = self.done.pop(0)
        q.ticket, q.count = r["ticket"], r["count"]
        q.result, q.user_data = r["result"], r["user_data"]
        return 0

    def _cancel(self, fd, ticket):
        self.calls.append(("cancel", ticket))
        for lst in (self.queue, self.done):
            for r in lst:
                if r["ticket"] == ticket:
                    lst.remove(r)
                    if lst is self.done and r["result"] == 0:
                        self.tokens += r["count"]
                    return 0
        return -errno.ENOENT

    # the test's side
    def add(self, n):
        """@n tokens arrive: serve the queue in order."""
        with self.lock:
            self._add(n)

    def _add(self, n):
        self.tokens += n
        while self.queue and self.queue[0]["count"] <= self.tokens:
            r = self.queue.pop(0)
            self.tokens -= r["count"]
            self._finish(r)

    def expire(self):
        """The deadline of the queue's head passes."""
        r = self.queue.pop(0)
        r["result"] = -errno.ETIMEDOUT
        self._finish(r)

    def _finish(self, r):
        self.done.append(r)
        os.write(self.wr, b"x")

    def close(self):
        os.close(self.rd)
        os.close(self.wr)


class FakeLimiter:
    """What AsyncLimiter asks of its Limiter."""

    closed = False

    def __init__(self, kernel, keyed=False):
        self.kernel = kernel
        self.keyed = keyed

    def fileno(self):
        return self.kernel.rd

    def features(self):
        class F:
            queued = False
        return F()

    def config(self):
        return Config(rate=10, keyed=self.keyed)

    def refund(self, n):
        self.kernel.refunded += n
        self.kernel.tokens += n

    def release(self, n):
        raise AssertionError("no concurrency limit here")


def setup(tokens=0, keyed=False):
    k = FakeKernel(tokens)
    alim = AsyncLimiter(FakeLimiter(k, keyed))
    alim._ops = k
    alim._keyed_queued = True
    return k, alim


async def settle():
    for _ in range(5):
        await asyncio.sleep(0.01)


@need_socketpair
class Queued(unittest.TestCase):
    def test_granted_at_once(self):
        async def main():
            k, alim = setup(tokens=3)
            g = await alim.acquire(2)
            return k, alim, g
        k, alim, g = asyncio.run(main())
        self.assertTrue(alim.queued)
        self.assertEqual((g.count, k.tokens, k.tickets), (2, 1, 0))
        self.assertFalse(alim._reader)
        k.close()

    def test_fifo_through_the_kernel(self):
        async def main():
            k, alim = setup()
            order = []

            async def one(i):
                await alim.acquire(1 + i % 2)
                order.append(i)
            tasks = [asyncio.create_task(one(i)) for i in range(6)]
            await settle()
            self.assertEqual((order, len(k.queue)), ([], 6))
            self.assertTrue(alim._reader)
            k.add(9)
            await asyncio.gather(*tasks)
            return k, alim, order
        k, alim, order = asyncio.run(main())
        self.assertEqual(order, list(range(6)))
        self.assertFalse(alim._reader)      # nothing outstanding
        k.close()

    def test_at_most_queued_max_in_the_kernel(self):
        n = QUEUED_MAX + 36

        async def main():
            k, alim = setup()
            tasks = [asyncio.create_task(alim.acquire()) for _ in range(n)]
            await settle()
            self.assertEqual((len(k.queue), len(alim._fifo)),
                             (QUEUED_MAX, 36))
            for _ in range(n):
                k.add(1)
                await asyncio.sleep(0)
            await asyncio.wait_for(asyncio.gather(*tasks), 10)
            return k
        k = asyncio.run(main())
        self.assertEqual(k.most, QUEUED_MAX)
        self.assertEqual(k.tickets, n)
        # never an EBUSY: the FIFO kept the rest
        self.assertEqual([c[0] for c in k.calls], ["submit"] * n)
        k.close()

    def test_cancel_while_queued(self):
        async def main():
            k, alim = setup()
            t = asyncio.create_task(alim.acquire(2))
            t2 = asyncio.create_task(alim.acquire(1))
            await settle()
            t.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await t
            self.assertIn(("cancel", 1), k.calls)
            k.add(1)        # serves t2 now that t left the queue
            await asyncio.wait_for(t2, 5)
            return k, alim
        k, alim = asyncio.run(main())
        self.assertEqual((k.queue, k.done, k.tokens), ([], [], 0))
        self.assertEqual((alim._out, len(alim._fifo)), ({}, 0))
        k.close()

    def test_cancel_in_the_fifo(self):
        async def main():
            k, alim = setup()
            tasks = [asyncio.create_task(alim.acquire())
                     for _ in range(QUEUED_MAX + 1)]
            await settle()
            last = tasks[-1]
            last.cancel()
            await asyncio.gather(last, return_exceptions=True)
            k.add(QUEUED_MAX)
            await asyncio.wait_for(asyncio.gather(*tasks[:-1]), 5)
            return k
        k = asyncio.run(main())
        self.assertEqual(k.tickets, QUEUED_MAX)     # never submitted
        self.assertNotIn("cancel", [c[0] for c in k.calls])
        k.close()

    def test_cancel_after_grant_gives_back(self):
        """Granted in the kernel, cancelled before the loop collects:
        the cancel gives the tokens back there."""
        async def main():
            k, alim = setup()
            t = asyncio.create_task(alim.acquire(2))
            await settle()
            k.add(2)        # granted, readable, not collected
            t.cancel()
            await asyncio.gather(t, return_exceptions=True)
            await settle()
            return k
        k = asyncio.run(main())
        self.assertEqual((k.tokens, k.done), (2, []))
        k.close()

    def test_cancel_after_collect_gives_back(self):
        async def main():
            k, alim = setup()
            t = asyncio.create_task(alim.acquire(3))
            await settle()
            k.add(3)
            alim._collect()         # the grant, before the task runs
            t.cancel()
            await asyncio.gather(t, return_exceptions=True)
            return k
        k = asyncio.run(main())
        self.assertEqual(k.refunded, 3)
        k.close()

    def test_keyed_same_path_nothing_given_back(self):
        """acquire_key() takes the same path (submit_key); a key's
        grant collected for a cancelled task is not refunded: a key's
        bucket takes nothing back."""
        async def main():
            k, alim = setup(keyed=True)
            t = asyncio.create_task(alim.acquire_key("10.0.0.1"))
            t2 = asyncio.create_task(alim.acquire_key(b"k", 2))
            await settle()
            self.assertEqual(len(alim._out), 2)
            k.add(1)
            alim._collect()         # the grant, before the task runs
            t.cancel()
            await asyncio.gather(t, return_exceptions=True)
            k.add(2)
            g = await asyncio.wait_for(t2, 5)
            self.assertEqual(g.count, 2)
            return k, alim
        k, alim = asyncio.run(main())
        self.assertIn(("key", b"10.0.0.1"), k.calls)
        self.assertIn(("key", b"k"), k.calls)
        self.assertEqual((k.refunded, k.tokens, alim._out), (0, 0, {}))
        k.close()

    def test_deadline(self):
        async def main():
            k, alim = setup()
            t = asyncio.create_task(alim.acquire(timeout=5))
            await settle()
            self.assertNotEqual(k.queue, [])
            k.expire()
            with self.assertRaises(TimeoutError) as cm:
                await t
            return k, cm.exception
        k, e = asyncio.run(main())
        self.assertEqual(e.errno, errno.ETIMEDOUT)
        self.assertIn("rl_collect", str(e))
        k.close()

    def test_submit_error_reaches_the_task(self):
        async def main():
            k, alim = setup()
            with self.assertRaises(PermissionError) as cm:
                await alim.acquire(priority=9)
            return k, cm.exception
        k, e = asyncio.run(main())
        self.assertIn("rl_submit", str(e))
        k.close()

    def test_two_loops_one_fd(self):
        """Two threads' loops on one fd: a collect may return the other
        loop's result, which goes to the AsyncLimiter that submitted it."""
        k = FakeKernel()
        lim = FakeLimiter(k)
        a1, a2 = AsyncLimiter(lim), AsyncLimiter(lim)
        a1._ops = a2._ops = k
        got = {}

        def other():
            async def main():
                got["a1"] = await asyncio.wait_for(asyncio.gather(
                    *(a1.acquire() for _ in range(5))), 10)
            asyncio.run(main())
        th = threading.Thread(target=other)
        th.start()

        async def main():
            t = asyncio.gather(*(a2.acquire() for _ in range(5)))
            for _ in range(500):
                if len(k.queue) == 10:
                    break
                await asyncio.sleep(0.01)
            self.assertEqual(len(k.queue), 10)
            k.add(10)
            return await asyncio.wait_for(t, 10)
        got["a2"] = asyncio.run(main())
        th.join(10)
        self.assertEqual((len(got["a1"]), len(got["a2"])), (5, 5))
        self.assertEqual((k.queue, k.done, k.tokens), ([], [], 0))
        k.close()
