# SPDX-License-Identifier: GPL-2.0-only
"""kratelimit.aio: the event loop keeps running, FIFO service, fairness,
the rate bound, cancellation and async permits."""

import asyncio
from contextlib import closing
import time
import unittest

from kratelimit import Config, Limiter
from kratelimit.aio import AsyncLimiter
from util import SEC, jain, need_device, need_socketpair, now


def run(coro):
    return asyncio.run(coro)


@need_device
@need_socketpair
class Aio(unittest.TestCase):
    def test_immediate_and_waiting(self):
        async def main():
            with closing(Limiter.private(20, burst=2)) as lim:
                alim = AsyncLimiter(lim)
                t = time.monotonic()
                for _ in range(4):
                    await alim.acquire()
                took = time.monotonic() - t
                return took, lim.stats()
        took, st = run(main())
        self.assertEqual(st.granted, 4)
        self.assertGreaterEqual(took, 0.09)     # 2 tokens at 20/s
        self.assertEqual(st.waiters, 0)         # never slept in the kernel
        self.assertEqual(st.waited, 0)

    def test_loop_not_blocked(self):
        """A ticker keeps ticking while tasks wait for tokens."""
        async def ticker(stop, ticks):
            while not stop.is_set():
                ticks.append(time.monotonic())
                await asyncio.sleep(0.01)

        async def main():
            with closing(Limiter.private(10, burst=1)) as lim:
                alim = AsyncLimiter(lim)
                stop, ticks = asyncio.Event(), []
                tick = asyncio.create_task(ticker(stop, ticks))
                await asyncio.gather(*(alim.acquire() for _ in range(6)))
                stop.set()
                await tick
                return ticks
        ticks = run(main())
        self.assertGreater(len(ticks), 10)
        gaps = [b - a for a, b in zip(ticks, ticks[1:])]
        self.assertLess(max(gaps), 0.3)

    def test_fifo(self):
        async def main():
            with closing(Limiter.private(50, burst=2)) as lim:
                alim = AsyncLimiter(lim)
                order = []

                async def one(i, n):
                    await alim.acquire(n)
                    order.append(i)
                await asyncio.gather(*(one(i, 1 + i % 2) for i in range(8)))
                return order
        self.assertEqual(run(main()), list(range(8)))

    def test_above_burst_in_chunks(self):
        async def main():
            with closing(Limiter.private(1000, burst=10)) as lim:
                alim = AsyncLimiter(lim)
                g = await alim.acquire(35)
                return g, lim.stats()
        g, st = run(main())
        self.assertTrue(g)
        self.assertEqual(g.count, 35)
        self.assertEqual(st.granted, 35)

    def test_thousand_tasks_rate_and_fairness(self):
        """1,000 tasks acquiring in a loop: the grants stay within the
        token bucket bound, and the tasks share them fairly (Jain)."""
        rate, burst, ntasks = 500, 10, 1000
        window = 15.0

        async def main():
            with closing(Limiter.private(rate, burst=burst)) as lim:
                alim = AsyncLimiter(lim)
                counts = [0] * ntasks
                t0 = now()

                async def worker(i):
                    while True:
                        await alim.acquire()
                        counts[i] += 1

                tasks = [asyncio.create_task(worker(i))
                         for i in range(ntasks)]
                # Long enough for some 7 grants a task at the speed this
                # machine serves them (emulated guests are slow): with
                # FIFO service each has k or k + 1, Jain >= 0.994 for
                # k >= 7 wherever the window ends.
                await asyncio.sleep(2)
                speed = sum(counts) / 2
                await asyncio.sleep(min(40, max(window,
                                                7 * ntasks / speed)) - 2)
                snap = list(counts)
                t1 = now()
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                return snap, t1 - t0, lim.stats()
        counts, ns, st = run(main())
        total = sum(counts)
        print(f"# 1000 tasks: {total} grants in {ns / SEC:.2f} s "
              f"(rate {rate}/s), Jain {jain(counts):.4f}, "
              f"min {min(counts)} max {max(counts)}")
        self.assertLessEqual(total, burst + rate * ns / SEC)
        self.assertGreater(total, rate * window / 8)
        self.assertGreaterEqual(jain(counts), 0.99)
        self.assertEqual(st.granted, st.requests - st.rejected)

    def test_cancel_while_waiting_consumes_nothing(self):
        async def main():
            with closing(Limiter.private(1, 10 * SEC, burst=1)) as lim:
                alim = AsyncLimiter(lim)
                await alim.acquire()
                task = asyncio.create_task(alim.acquire())
                await asyncio.sleep(0.05)
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await task
                self.assertEqual(alim._queue, type(alim._queue)())
                lim.configure(Config(unlimited=True))
                return lim.stats()
        st = run(main())
        self.assertEqual(st.granted, 1)

    def test_cancel_after_grant_gives_back(self):
        """Cancelled as its grant arrives: the tokens go back."""
        async def main():
            with closing(Limiter.private(1, 10 * SEC, burst=1)) as lim:
                alim = AsyncLimiter(lim)
                await alim.acquire()
                task = asyncio.create_task(alim.acquire())
                await asyncio.sleep(0.05)
                lim.refund(1)               # a token to serve it with
                alim._serve(False)          # the grant, before it runs
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await task
                return lim.stats()
        st = run(main())
        self.assertEqual(st.refunded, 2)
        self.assertEqual(st.available, 1)

    def test_timeout_consumes_nothing(self):
        async def main():
            with closing(Limiter.private(1, 10 * SEC, burst=1)) as lim:
                alim = AsyncLimiter(lim)
                await alim.acquire()
                with self.assertRaises(asyncio.TimeoutError):
                    await alim.acquire(timeout=0.1)
                with self.assertRaises(asyncio.TimeoutError):
                    await asyncio.wait_for(alim.acquire(3), 0.1)
                return lim.stats()
        st = run(main())
        self.assertEqual((st.granted, st.refunded), (1, 0))

    def test_cancel_big_request_gives_back_chunks(self):
        async def main():
            with closing(Limiter.private(20, burst=10)) as lim:
                alim = AsyncLimiter(lim)
                with self.assertRaises(asyncio.TimeoutError):
                    await alim.acquire(50, timeout=0.3)
                st = lim.stats()
                return st
        st = run(main())
        self.assertEqual(st.granted, st.refunded)
        self.assertGreaterEqual(st.granted, 10)

    def test_async_permit(self):
        async def main():
            with closing(Limiter.private(unlimited=True, concurrency=1)) as lim:
                alim = AsyncLimiter(lim)
                inside, most = [0], [0]

                async def one():
                    async with alim.permit():
                        inside[0] += 1
                        most[0] = max(most[0], inside[0])
                        await asyncio.sleep(0.02)
                        inside[0] -= 1
                await asyncio.gather(*(one() for _ in range(5)))
                with self.assertRaises(KeyError):
                    async with alim.permit():
                        raise KeyError("boom")
                return most[0], lim.stats()
        most, st = run(main())
        self.assertEqual(most, 1)
        self.assertEqual((st.held, st.granted), (0, 6))

    def test_async_with(self):
        """async with limiter: (the Limiter's own AsyncLimiter for this
        loop) and async with alim: take a token, and a permit only with
        a concurrency limit."""
        async def main():
            with closing(Limiter.private("100/s:10")) as lim:
                async with lim as g:
                    self.assertEqual(g.count, 1)
                async with AsyncLimiter(lim):
                    pass
                self.assertIs(lim._aio(), lim._aio())
                rate = lim.stats()
            with closing(Limiter.private(unlimited=True,
                                         concurrency=1)) as lim:
                async with lim:
                    held = lim.client().held
                return rate, held, lim.client().held
        rate, held, after = run(main())
        self.assertEqual((rate.granted, rate.held), (2, 0))
        self.assertEqual((held, after), (1, 0))

    def test_decorator(self):
        async def main():
            with closing(Limiter.private(unlimited=True,
                                         concurrency=2)) as lim:
                inside, most = [0], [0]

                @lim.limit
                async def one(i):
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                    await asyncio.sleep(0.01)
                    inside[0] -= 1
                    return i
                got = await asyncio.gather(*(one(i) for i in range(6)))
                alim = AsyncLimiter(lim)

                @alim.limit(2)
                async def two():
                    return lim.client().held
                held = await two()
                with self.assertRaises(TypeError):
                    alim.limit(lambda: None)
                return got, most[0], held, lim.stats()
        got, most, held, st = run(main())
        self.assertEqual(got, list(range(6)))
        self.assertEqual((most, held), (2, 2))
        self.assertEqual((st.granted, st.held), (8, 0))

    def test_errors_reach_the_waiter(self):
        async def main():
            with closing(Limiter.private(10, burst=1)) as lim:
                alim = AsyncLimiter(lim)
                await alim.acquire()
                with self.assertRaises(OSError):
                    await alim.acquire(priority=9)
                return await alim.acquire()
        self.assertTrue(run(main()))
