# SPDX-License-Identifier: GPL-2.0-only
"""Every call of kratelimit.Limiter, and its error paths, on the module."""

import errno
from contextlib import closing
import os
import time
import unittest

import kratelimit
from kratelimit import Config, Limiter
from util import SEC, in_child, name, need_device, now


def sysfs_key(nm: str, key: str) -> str:
    """Line KEY of limiter NM's sysfs stat, its value."""
    with open(f"/sys/kernel/ratelimit/{nm}/stat") as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition(" ")
            if k == key:
                return v
    raise KeyError(key)


@need_device
class Private(unittest.TestCase):
    def test_fresh_fd_has_no_limiter(self):
        with closing(Limiter()) as lim:
            for call in (lim.config, lim.stats, lim.try_acquire):
                with self.assertRaises(OSError) as cm:
                    call()
                self.assertEqual(cm.exception.errno, errno.EBADFD)
                self.assertIn("configure() or attach() first",
                              str(cm.exception))

    def test_fast_page(self):
        # The fd's reservation page (RL_FEATURE_FAST): acquire() and
        # try_acquire() take from it, without a system call. One token an
        # hour, so that none comes during the test.
        if not kratelimit.features().fast:
            self.skipTest("no reservation pages (RL_FEATURE_FAST)")
        # The guest's Python has no mmap module: libc's, through ctypes.
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                              ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        with closing(Limiter.private(1, 3600 * SEC, burst=800)) as lim:
            addr = libc.mmap(None, 4096, 3, 1, lim.fileno(), 0)  # RW, SHARED
            self.assertNotEqual(addr, ctypes.c_void_p(-1).value)
            word = ctypes.c_uint64.from_address(addr)

            def tokens() -> int:
                return int(word.value)
            self.assertEqual(tokens(), 0)
            lim.acquire()               # the ioctl: a chunk, burst / 8
            self.assertEqual(tokens(), 100)
            g = lim.try_acquire(3)
            self.assertTrue(g)
            self.assertEqual((g.wait_ns, g.ready_ns), (0, 0))
            lim.acquire(2)
            self.assertEqual(tokens(), 95)
            st = lim.stats()
            self.assertEqual((st.granted, st.requests), (6, 3))
            # A priority goes to the kernel (which tops the page up).
            lim.acquire(1, priority=kratelimit.PRIO_HIGH)
            self.assertEqual(tokens(), 100)
            self.assertEqual(lim.stats().requests, 4)
            libc.munmap(addr, 4096)

    def test_configure_and_config(self):
        with closing(Limiter.private(50, burst=7, concurrency=3)) as lim:
            c = lim.config()
            self.assertEqual((c.rate, c.period_ns, c.burst, c.concurrency),
                             (50, SEC, 7, 3))
            self.assertFalse(c.unlimited)
            self.assertEqual(c.fairness, 10)    # 0 picks the default
            lim.configure(Config(unlimited=True, concurrency=2))
            self.assertTrue(lim.config().unlimited)

    def test_default_burst(self):
        with closing(Limiter.private(1000)) as lim:
            self.assertEqual(lim.config().burst, 100)   # 100 ms of tokens

    def test_invalid_config(self):
        for cfg in (Config(rate=1, period_ns=0),
                    Config(rate=1, catchup=5),
                    Config(rate=1, fairness=0, burst=1 << 62)):
            with self.assertRaises(OSError) as cm:
                Limiter.private(cfg.rate, cfg.period_ns, burst=cfg.burst,
                                catchup=cfg.catchup)
            self.assertEqual(cm.exception.errno, errno.EINVAL, cfg)
            self.assertIn("rl_set_config", str(cm.exception))

    def test_try_acquire_and_ready_time(self):
        with closing(Limiter.private(10, burst=5)) as lim:
            g = lim.try_acquire(5)
            self.assertTrue(g)
            self.assertEqual(g.count, 5)
            t = now()
            g = lim.try_acquire(1)
            self.assertFalse(g)
            self.assertGreater(g.ready_ns, t)
            self.assertLess(g.ready_ns, t + SEC // 10 + SEC // 20)
            self.assertEqual(lim.stats().rejected, 1)

    def test_try_acquire_above_burst_is_einval(self):
        with closing(Limiter.private(10, burst=5)) as lim:
            with self.assertRaises(OSError) as cm:
                lim.try_acquire(6)
            self.assertEqual(cm.exception.errno, errno.EINVAL)

    def test_paused_limiter_ready_never(self):
        with closing(Limiter.private(1, burst=1)) as lim:
            lim.acquire()
            lim.configure(Config(rate=0, burst=1))
            g = lim.try_acquire()
            self.assertFalse(g)
            self.assertEqual(g.ready_ns, kratelimit.DEADLINE_NONE)

    def test_blocking_acquire_waits(self):
        with closing(Limiter.private(100, burst=1)) as lim:
            lim.acquire()
            g = lim.acquire()
            self.assertTrue(g)
            self.assertGreater(g.wait_ns, SEC // 1000)
            st = lim.stats()
            self.assertEqual((st.granted, st.waited, st.immediate), (2, 1, 1))

    def test_acquire_above_burst_in_chunks(self):
        with closing(Limiter.private(1000, burst=10)) as lim:
            lim.acquire(35)
            self.assertEqual(lim.stats().granted, 35)

    def test_timeout(self):
        with closing(Limiter.private(1, 10 * SEC, burst=1)) as lim:
            lim.acquire()
            t = time.monotonic()
            with self.assertRaises(TimeoutError) as cm:
                lim.acquire(timeout=0.1)
            took = time.monotonic() - t
            self.assertGreaterEqual(took, 0.09)
            self.assertLess(took, 5)
            self.assertGreater(cm.exception.ready_ns, now())
            self.assertEqual(cm.exception.errno, errno.ETIMEDOUT)
            st = lim.stats()
            self.assertEqual((st.timeouts, st.granted, st.waiters), (1, 1, 0))

    def test_deadline_predict_fails_at_once(self):
        with closing(Limiter.private(1, 10 * SEC, burst=1)) as lim:
            lim.acquire()
            t = time.monotonic()
            with self.assertRaises(TimeoutError):
                lim.acquire(deadline_ns=now() + 5 * SEC, predict=True)
            self.assertLess(time.monotonic() - t, 2)

    def test_deadline_in_the_past(self):
        with closing(Limiter.private(1, 10 * SEC, burst=1)) as lim:
            lim.acquire()
            with self.assertRaises(TimeoutError):
                lim.acquire(deadline_ns=1)
            with self.assertRaises(ValueError):
                lim.acquire(timeout=1, deadline_ns=1)

    def test_priority(self):
        with closing(Limiter.private(100, burst=10)) as lim:
            for p in (kratelimit.PRIO_LOW, kratelimit.PRIO_MID,
                      kratelimit.PRIO_HIGH, kratelimit.PRIO_USER):
                self.assertTrue(lim.acquire(priority=p))
            with self.assertRaises(OSError) as cm:
                lim.acquire(priority=9)
            self.assertEqual(cm.exception.errno, errno.EINVAL)

    def test_refund(self):
        with closing(Limiter.private(1, 10 * SEC, burst=4)) as lim:
            lim.acquire(4)
            lim.refund(3)
            st = lim.stats()
            self.assertEqual((st.refunded, st.available), (3, 3))
            with self.assertRaises(OSError) as cm:
                lim.refund(2)
            self.assertEqual(cm.exception.errno, errno.EINVAL)
            self.assertIn("did not refund", str(cm.exception))

    def test_release_without_permits(self):
        with closing(Limiter.private(unlimited=True, concurrency=2)) as lim:
            with self.assertRaises(OSError) as cm:
                lim.release(1)
            self.assertEqual(cm.exception.errno, errno.EINVAL)
            self.assertIn("more permits than this fd holds",
                          str(cm.exception))

    def test_with_takes_a_token(self):
        """with limiter: one token; on a limiter without a concurrency
        limit nothing is released at the end (no EINVAL: the README's
        first example)."""
        with closing(Limiter.private("10/s:5")) as lim:
            with lim as g:
                self.assertEqual(g.count, 1)
            with lim.permit(2):
                pass
            st = lim.stats()
            self.assertEqual((st.granted, st.held), (3, 0))

    def test_with_holds_a_permit(self):
        with closing(Limiter.private(unlimited=True, concurrency=1)) as lim:
            with lim:
                self.assertEqual(lim.client().held, 1)
                self.assertFalse(lim.try_acquire())
            self.assertEqual(lim.client().held, 0)
            with self.assertRaises(KeyError):
                with lim:
                    raise KeyError("boom")
            self.assertEqual(lim.client().held, 0)

    def test_decorator(self):
        with closing(Limiter.private(unlimited=True, concurrency=2)) as lim:
            @lim.limit(2)
            def double(x):
                """doc"""
                self.assertEqual(lim.client().held, 2)
                return 2 * x

            @lim.limit
            def fails():
                raise KeyError("boom")
            self.assertEqual(double(3), 6)
            self.assertEqual((double.__name__, double.__doc__),
                             ("double", "doc"))
            with self.assertRaises(KeyError):
                fails()
            st = lim.stats()
            self.assertEqual((st.granted, st.held), (3, 0))
        with closing(Limiter.private(1, 10 * SEC, burst=1)) as lim:
            @lim.limit(timeout=0.05)
            def once():
                return 1
            self.assertEqual(once(), 1)
            with self.assertRaises(TimeoutError):
                once()

    def test_permit_context(self):
        with closing(Limiter.private(unlimited=True, concurrency=2)) as lim:
            with lim.permit() as g:
                self.assertTrue(g)
                self.assertEqual(lim.stats().held, 1)
                self.assertEqual(lim.client().held, 1)
                with lim.permit():
                    self.assertFalse(lim.try_acquire())
            self.assertEqual(lim.stats().held, 0)

    def test_permit_released_on_exception(self):
        with closing(Limiter.private(unlimited=True, concurrency=1)) as lim:
            with self.assertRaises(KeyError):
                with lim.permit():
                    raise KeyError("boom")
            self.assertEqual(lim.stats().held, 0)
            self.assertTrue(lim.try_acquire())

    def test_permit_timeout(self):
        with closing(Limiter.private(unlimited=True, concurrency=1)) as lim:
            lim.acquire()
            with self.assertRaises(TimeoutError):
                with lim.permit(timeout=0.05):
                    self.fail("got a permit that is held")
            self.assertEqual(lim.stats().held, 1)

    def test_permits_back_when_fd_closes(self):
        lim = Limiter.private(unlimited=True, concurrency=1)
        nm = name("close")
        lim.close()
        self.assertTrue(lim.closed)
        with self.assertRaises(ValueError):
            lim.acquire()
        cfg = Config(unlimited=True, concurrency=1)
        with closing(Limiter.attach(nm, cfg)) as a:
            b = Limiter.attach(nm)
            b.acquire()
            self.assertFalse(a.try_acquire())
            b.close()
            self.assertTrue(a.try_acquire())

    def test_stats_fields(self):
        # 1/s: the 3 tokens taken are not back before stats() reads the
        # bucket, however slow the kernel (at 1000/s the debug kernel
        # under emulation refilled them first).
        with closing(Limiter.private(1, burst=10)) as lim:
            lim.acquire(3)
            st = lim.stats()
            self.assertEqual((st.granted, st.requests, st.clients), (3, 1, 1))
            self.assertEqual(st.available, 7)

    def test_client_settings(self):
        with closing(Limiter.private(100, burst=10)) as lim:
            c = lim.client()
            self.assertEqual((c.priority, c.weight, c.cap), (2, 1, 0))
            lim.set_client(kratelimit.PRIO_LOW, 3, 50)
            lim.acquire(2)
            c = lim.client()
            self.assertEqual((c.priority, c.weight, c.cap, c.granted),
                             (1, 3, 50, 2))
            for bad in ({"weight": 5000}, {"priority": 7}):
                with self.assertRaises(OSError) as cm:
                    lim.set_client(**bad)
                self.assertEqual(cm.exception.errno, errno.EINVAL)

    def test_not_a_ratelimit_fd(self):
        with closing(Limiter("/dev/null")) as lim:
            with self.assertRaises(OSError) as cm:
                lim.config()
            self.assertEqual(cm.exception.errno, errno.ENOTTY)
            self.assertIn("not a /dev/ratelimit fd", str(cm.exception))

    def test_rate_strings(self):
        with closing(Limiter.private("100/s:10", concurrency=2)) as lim:
            c = lim.config()
            self.assertEqual((c.rate, c.burst, c.concurrency), (100, 10, 2))
            lim.configure("50/s:5")
            self.assertEqual(str(lim.config()), "50/s:5")
        with self.assertRaises(ValueError):
            Limiter.private("fast")

    def test_cycle(self):
        with closing(Limiter.private(unlimited=True, concurrency=2)) as lim:
            lim.acquire(2)
            g = lim.cycle(1, 1)
            self.assertTrue(g)
            self.assertEqual(lim.client().held, 2)
            with self.assertRaises(OSError) as cm:
                lim.cycle(3, 1)
            self.assertEqual(cm.exception.errno, errno.EINVAL)
            self.assertIn("rl_cycle_ex", str(cm.exception))
            with self.assertRaises(TimeoutError):
                lim.cycle(0, 1, timeout=0.05)
            self.assertEqual(lim.client().held, 2)

    def test_deposit(self):
        with closing(Limiter.private(Config(rate=0, burst=10, fed=True))) as lim:
            self.assertTrue(lim.config().fed)
            lim.try_acquire(lim.stats().available)  # starts full
            self.assertFalse(lim.try_acquire())
            self.assertEqual(lim.deposit(15), 5)
            self.assertEqual(lim.stats().available, 10)
            self.assertTrue(lim.try_acquire(10))
        with closing(Limiter.private(10)) as lim:
            with self.assertRaises(OSError) as cm:
                lim.deposit(1)
            self.assertEqual(cm.exception.errno, errno.EINVAL)
            self.assertIn("not fed", str(cm.exception))

    def test_lease(self):
        with closing(Limiter.private("10/s")) as lim:
            lim.set_lease("100/s", "1/s", timeout=3600)
            self.assertEqual(lim.config().rate, 100)
            lim.set_lease("200/s", Config(rate=2), timeout=0)  # ends now
            self.assertEqual(lim.config().rate, 2)
            with self.assertRaises(ValueError):
                lim.set_lease("1/s", "1/s")

    def test_demand(self):
        with closing(Limiter.private(1, 10 * SEC, burst=1)) as lim:
            lim.acquire()
            self.assertFalse(lim.try_acquire(1))
            d = lim.demand()
            self.assertEqual((d.asked, d.refused, d.queued), (2, 1, 0))
            self.assertGreater(d.now_ns, 0)

    def test_features(self):
        f = kratelimit.features()
        self.assertEqual(f.version, kratelimit.ABI_VERSION)
        for n in ("RL_IOC_ACQUIRE", "RL_IOC_REFUND", "RL_IOC_GET_CLIENT",
                  "RL_IOC_DEPOSIT", "RL_IOC_CYCLE", "RL_IOC_SET_PERM"):
            self.assertTrue(f.has_ioctl(n), n)
        self.assertEqual(f.acquire_flags, 3)
        self.assertEqual(f.attach_flags, 7)
        # UNLIMITED, FED, KEYED, FAIR_PER_USER
        self.assertEqual(f.config_flags, 15)


@need_device
class Named(unittest.TestCase):
    def test_create_attach_unlink(self):
        nm = name("cau")
        with self.assertRaises(FileNotFoundError) as cm:
            Limiter.attach(nm)
        self.assertIn(repr(nm), str(cm.exception))
        with closing(Limiter.attach(nm, Config(rate=100, burst=9))) as a:
            with closing(Limiter.attach(nm)) as b:
                self.assertEqual(b.config().burst, 9)
                self.assertEqual(a.stats().clients, 2)
                b.acquire(4)
                self.assertEqual(a.stats().available, 5)

    def test_fair_per_user(self):
        nm = name("fpu")
        with closing(Limiter.attach(nm, Config(rate=100,
                                               fair_per_user=True))) as a:
            with closing(Limiter.attach(nm)) as b:
                self.assertTrue(b.config().fair_per_user)
            a.configure(Config(rate=100))
            self.assertFalse(a.config().fair_per_user)
        # A keyed limiter's keys have no clients to share between.
        with self.assertRaises(OSError) as cm:
            Limiter.private("10/s:5", keyed=True, fair_per_user=True)
        self.assertEqual(cm.exception.errno, errno.EINVAL)

    def test_exclusive(self):
        nm = name("excl")
        with closing(Limiter.attach(nm, Config(rate=1), exclusive=True)):
            with self.assertRaises(FileExistsError):
                Limiter.attach(nm, Config(rate=1), exclusive=True)
        with self.assertRaises(ValueError):
            Limiter.attach(nm, exclusive=True)

    def test_attach_twice_is_ebusy(self):
        with closing(Limiter.private(1)) as lim:
            with self.assertRaises(OSError) as cm:
                lim.attach_to(name("busy"), Config(rate=1))
            self.assertEqual(cm.exception.errno, errno.EBUSY)

    def test_bad_names(self):
        for bad in ("", ".hidden", "a/b", "count", "x" * 64):
            with self.assertRaises(OSError, msg=bad) as cm:
                Limiter.attach(bad, Config(rate=1))
            self.assertEqual(cm.exception.errno, errno.EINVAL, bad)

    def test_persist_and_unlink(self):
        nm = name("persist")
        Limiter.attach(nm, Config(rate=5), persist=True).close()
        with closing(Limiter.attach(nm)) as lim:
            self.assertEqual(lim.config().rate, 5)
            Limiter.unlink(nm)
            self.assertEqual(lim.config().rate, 5)    # keeps working
        with self.assertRaises(FileNotFoundError):
            Limiter.attach(nm)
        with self.assertRaises(FileNotFoundError):
            Limiter.unlink(nm)

    def test_rate_string_create(self):
        nm = name("str")
        with closing(Limiter.attach(nm, "20/s:4")) as lim:
            self.assertEqual(str(lim.config()), "20/s:4")

    def test_parent(self):
        top, sub = name("top"), name("sub")
        with closing(Limiter.attach(top, "100/s")) as t, \
                closing(Limiter.attach(sub, "50/s")) as s:
            self.assertEqual(s.parent(), kratelimit.Parent("", 1, 0, 0))
            s.set_parent(top, weight=3)
            self.assertEqual(s.parent(), kratelimit.Parent(top, 3, 1, 0))
            self.assertEqual(t.parent().children, 1)
            s.set_parent(None)
            self.assertEqual(s.parent().name, "")
            with self.assertRaises(FileNotFoundError) as cm:
                s.set_parent(name("missing"))
            self.assertIn("rl_set_parent", str(cm.exception))
            with self.assertRaises(OSError) as cm:
                t.set_parent(top)
            self.assertIn(cm.exception.errno, (errno.ELOOP, errno.EINVAL))

    def test_set_perm(self):
        nm = name("chmod")
        with closing(Limiter.attach(nm, "5/s")) as lim:
            lim.set_perm(mode=0o600)
            self.assertEqual(sysfs_key(nm, "mode"), "0600")
            with self.assertRaises(ValueError):
                lim.set_perm()
        with closing(Limiter.private(5)) as lim:
            with self.assertRaises(OSError) as cm:
                lim.set_perm(mode=0o600)
            self.assertEqual(cm.exception.errno, errno.EINVAL)

    def test_non_persistent_dies_with_last_fd(self):
        nm = name("dies")
        Limiter.attach(nm, Config(rate=5)).close()
        with self.assertRaises(FileNotFoundError):
            Limiter.attach(nm)

    def test_default_mode_0644(self):
        # The default of every entry point (ratelimit(4)), as the tools'.
        nm = name("mode")
        with closing(Limiter.attach(nm, Config(rate=5))):
            self.assertEqual(sysfs_key(nm, "mode"), "0644")
        self.assertEqual(kratelimit.DEFAULT_MODE, 0o644)

    def test_permissions(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to drop to another user")
        nm = name("perm")
        with closing(Limiter.attach(nm, Config(rate=5), mode=0o644)):
            self.assertEqual(in_child(lambda: _as_nobody(nm)), 0)

    def test_no_access(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to drop to another user")
        nm = name("noacc")
        with closing(Limiter.attach(nm, Config(rate=5), mode=0o600)):
            self.assertEqual(in_child(lambda: _denied(nm)), 0)


def _as_nobody(nm: str) -> int:
    """As nobody on a 0644 limiter: acquire yes, reconfigure and unlink no."""
    os.setgid(65534)
    os.setuid(65534)
    with closing(Limiter.attach(nm)) as lim:
        lim.acquire()
        try:
            lim.configure(Config(rate=6))
            return 1
        except PermissionError:
            pass
        try:
            lim.set_client(priority=kratelimit.PRIO_HIGH)
            return 2
        except PermissionError:
            pass
    try:
        Limiter.unlink(nm)
        return 3
    except PermissionError as e:
        return 0 if "only the owner" in str(e) else 4


def _denied(nm: str) -> int:
    os.setgid(65534)
    os.setuid(65534)
    try:
        Limiter.attach(nm)
        return 1
    except PermissionError as e:
        return 0 if "mode denies" in str(e) else 2
