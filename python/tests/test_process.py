# SPDX-License-Identifier: GPL-2.0-only
"""Threads, signals, process death, and sharing with the C tool rlpace."""

import os
from contextlib import closing
import signal
import subprocess
import threading
import time
import unittest

from kratelimit import Config, Limiter
from util import SEC, in_child, name, need_device, now, tool


@need_device
class Blocking(unittest.TestCase):
    def test_gil_released_while_waiting(self):
        ticks = [0]
        stop = threading.Event()

        def spin():
            while not stop.is_set():
                ticks[0] += 1

        with closing(Limiter.private(2, burst=1)) as lim:
            lim.acquire()
            t = threading.Thread(target=spin)
            t.start()
            before = ticks[0]
            lim.acquire()           # about 0.5 s in the kernel
            during = ticks[0] - before
            stop.set()
            t.join()
        self.assertGreater(during, 1000)

    def test_keyboard_interrupt(self):
        with closing(Limiter.private(0, burst=1)) as lim:  # paused: waits forever
            lim.try_acquire()
            before = lim.stats()
            timer = threading.Timer(0.2, os.kill, (os.getpid(),
                                                   signal.SIGINT))
            t = time.monotonic()
            timer.start()
            with self.assertRaises(KeyboardInterrupt):
                lim.acquire()
            took = time.monotonic() - t
            timer.join()
            st = lim.stats()
        self.assertLess(took, 3)
        self.assertEqual(st.interrupted, 1)
        self.assertEqual((st.granted, st.waiters), (before.granted, 0))
        self.assertEqual(st.available, before.available)

    def test_signal_handler_restarts_with_deadline(self):
        got = []
        old = signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
        try:
            with closing(Limiter.private(1, 10 * SEC, burst=1)) as lim:
                lim.acquire()
                timer = threading.Timer(0.1, os.kill, (os.getpid(),
                                                       signal.SIGUSR1))
                timer.start()
                t = time.monotonic()
                with self.assertRaises(TimeoutError):
                    lim.acquire(timeout=0.4)
                took = time.monotonic() - t
                timer.join()
                st = lim.stats()
        finally:
            signal.signal(signal.SIGUSR1, old)
        self.assertEqual(got, [1])
        self.assertGreaterEqual(took, 0.39)     # the deadline held
        self.assertLess(took, 5)
        self.assertEqual((st.interrupted, st.timeouts, st.granted), (1, 1, 1))

    def test_kernel_releases_permits_of_killed_process(self):
        nm = name("killed")
        with closing(Limiter.attach(nm, Config(unlimited=True, concurrency=2))) as lim:
            def child():
                held = Limiter.attach(nm)
                held.acquire(2)
                os.kill(os.getpid(), signal.SIGKILL)
                return 1
            rc = in_child(child)
            self.assertEqual(rc, -signal.SIGKILL)
            self.assertEqual(lim.stats().held, 0)
            with lim.permit(2):
                self.assertEqual(lim.stats().held, 2)


@need_device
class Rlpace(unittest.TestCase):
    RATE = 200
    BURST = 10

    def test_shared_with_rlpace(self):
        """Python and rlpace take from one named limiter at once: together
        they get no more than the token bucket allows, and both get some."""
        nm = name("pace")
        cfg = Config(rate=self.RATE, burst=self.BURST)
        with closing(Limiter.attach(nm, cfg, mode=0o666)) as lim:
            t0 = now()
            pace = subprocess.Popen([tool("rlpace"), "-N", nm, "-n", "300",
                                     "-q"], stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            mine = 0
            while pace.poll() is None and now() - t0 < 20 * SEC:
                mine += lim.acquire(timeout=5).count
            out = pace.communicate(timeout=30)[0]
            t1 = now()
            st = lim.stats()
        self.assertEqual(pace.returncode, 0, out)
        self.assertEqual(st.granted, mine + 300)
        bound = self.BURST + self.RATE * (t1 - t0) / SEC
        self.assertLessEqual(st.granted, bound)
        # The two clients are served round-robin: Python got a fair part.
        self.assertGreater(mine, 300 // 4, out)
