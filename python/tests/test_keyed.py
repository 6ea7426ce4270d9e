# SPDX-License-Identifier: GPL-2.0-only
"""Keyed limiters: Limiter.acquire_key(), try_acquire_key(), key_state(),
keys_stats(), AsyncLimiter.acquire_key(), Config.keyed and keys, and the
WSGI example of Documentation/keyed.md (python/examples/keyed_wsgi.py)
serving from several processes."""

import asyncio
import encodings.idna
import errno
import http.client
import importlib
import os
import re
import signal
import socket
import subprocess
import sys
import unittest
from contextlib import closing

import kratelimit
from kratelimit import Config, Limiter
from kratelimit._values import _key
from kratelimit.aio import AsyncLimiter
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer
from util import SEC, name, need_device, need_socketpair, now

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")
TOP = os.path.join(HERE, "..", "..")
HOUR = 3600 * SEC
# http.client's getaddrinfo() encodes the host with the idna codec: named
# here, selftests/vm/python_files.py puts it into the guest.
_CODECS = (encodings.idna,)


class Keys(unittest.TestCase):
    """What a key may be (no module needed)."""

    def test_bytes_and_str(self):
        self.assertEqual(_key("10.0.0.1"), b"10.0.0.1")
        self.assertEqual(_key(b"\x00\xff"), b"\x00\xff")
        self.assertEqual(_key(bytearray(b"k")), b"k")
        self.assertEqual(_key(memoryview(b"k")), b"k")
        self.assertEqual(_key("é" * 32), "é".encode() * 32)    # 64 bytes
        self.assertEqual(_key(b"k" * 64), b"k" * 64)

    def test_lengths_and_types(self):
        for bad in ("", b"", b"k" * 65, "é" * 33):
            with self.assertRaises(ValueError):
                _key(bad)
        for bad in (None, 1, ["k"]):
            with self.assertRaises(TypeError):
                _key(bad)           # type: ignore[arg-type]

    def test_config_fields(self):
        c = Config.parse("10/s:20", keyed=True, keys=1000)
        self.assertTrue(c.keyed)
        self.assertEqual(c.keys, 1000)
        raw = c._c()
        self.assertEqual(raw.flags, kratelimit._lib.CONFIG_KEYED)
        self.assertEqual(raw.keys, 1000)
        self.assertEqual(Config._from(raw), c)

    def test_retry_after(self):
        g = kratelimit.Grant(False, 1, ready_ns=10 * SEC + 1)
        self.assertEqual(g.retry_after(now_ns=8 * SEC), 3)
        self.assertEqual(g.retry_after(now_ns=10 * SEC), 1)
        self.assertEqual(g.retry_after(now_ns=20 * SEC), 1)
        self.assertEqual(kratelimit.Grant(
            False, 1, ready_ns=kratelimit.DEADLINE_NONE).retry_after(), 86400)


class Docs(unittest.TestCase):
    """The code of Documentation/keyed.md is the examples' own: each of
    its python and js blocks is in the example file as written."""

    def test_blocks_are_the_examples(self):
        doc = os.path.join(TOP, "Documentation", "keyed.md")
        files = {"python": os.path.join(EXAMPLES, "keyed_wsgi.py"),
                 "js": os.path.join(TOP, "node", "examples",
                                    "keyed_cluster.js")}
        if not os.path.exists(doc) or \
                not all(map(os.path.exists, files.values())):
            self.skipTest("no Documentation/ or node/ beside python/")
        with open(doc, encoding="utf-8") as f:
            text = f.read()
        n = 0
        for lang, path in files.items():
            with open(path, encoding="utf-8") as f:
                src = f.read()
            for block in re.findall(rf"^```{lang}\n(.*?)^```$", text,
                                    re.M | re.S):
                self.assertIn(block, src, f"keyed.md's {lang} block is "
                              f"not in {os.path.basename(path)}")
                n += 1
        self.assertGreaterEqual(n, 2)


def need_keyed(cls):
    """Skip where the module has no keyed limiters."""
    if os.path.exists(kratelimit.DEVICE) and not kratelimit.features().keyed:
        return unittest.skip("a module without keyed limiters")(cls)
    return cls


@need_device
@need_keyed
class Keyed(unittest.TestCase):
    def test_config_round_trip(self):
        with closing(Limiter.private("10/s:5", keyed=True,
                                     keys=1000)) as lim:
            c = lim.config()
            self.assertTrue(c.keyed)
            self.assertEqual(c.keys, 1000)
            self.assertEqual((c.rate, c.burst), (10, 5))
        with closing(Limiter.private("10/s:5", keyed=True)) as lim:
            # 0 as given, or the default it stands for
            self.assertIn(lim.config().keys, (0, kratelimit.KEYS_DEFAULT))
            self.assertEqual(lim.keys_stats().keys_max,
                             kratelimit.KEYS_DEFAULT)

    def test_try_burst_then_ready_ns(self):
        with closing(Limiter.private("10/s:5", keyed=True)) as lim:
            for _ in range(5):
                self.assertTrue(lim.try_acquire_key("10.0.0.1"))
            t = now()
            g = lim.try_acquire_key(b"10.0.0.1")    # the same key
            self.assertFalse(g)
            # one token per 100 ms
            self.assertGreater(g.ready_ns, t)
            self.assertLessEqual(g.ready_ns, t + 110_000_000)
            self.assertEqual(g.retry_after(), 1)
            # another key has its own bucket
            self.assertTrue(lim.try_acquire_key("10.0.0.2", 5))
            self.assertFalse(lim.try_acquire_key("10.0.0.2"))
            st = lim.stats()
            self.assertEqual(st.granted, 10)

    def test_key_state_and_keys_stats(self):
        with closing(Limiter.private(1, HOUR, burst=5, keyed=True,
                                     keys=100)) as lim:
            s = lim.key_state("nobody")
            self.assertEqual((s.available, s.full_ns, s.waiters, s.kept),
                             (5, 0, 0, False))
            self.assertEqual(lim.keys_stats().keys, 0)   # not created
            lim.acquire_key("a", 2)
            lim.try_acquire_key(b"b")
            s = lim.key_state(b"a")
            self.assertEqual(s.key, b"a")
            self.assertEqual(s.available, 3)
            self.assertTrue(s.kept)
            self.assertGreater(s.full_ns, now() + HOUR)
            ks = lim.keys_stats()
            self.assertEqual((ks.keys, ks.keys_max, ks.created, ks.refused,
                              ks.waiters), (2, 100, 2, 0, 0))

    def test_acquire_waits_for_its_key(self):
        with closing(Limiter.private("20/s:1", keyed=True)) as lim:
            lim.acquire_key("k")
            t = now()
            g = lim.acquire_key("k")
            waited = now() - t
            self.assertTrue(g)
            self.assertGreater(waited, 30_000_000)
            self.assertLess(waited, 500_000_000)
            self.assertGreater(g.wait_ns, 30_000_000)
            # another key: at once (the kernel's measure of the wait)
            self.assertLess(lim.acquire_key("other").wait_ns, 30_000_000)

    def test_timeout_takes_nothing(self):
        with closing(Limiter.private(1, HOUR, burst=1, keyed=True)) as lim:
            lim.acquire_key("k")
            t = now()
            with self.assertRaises(TimeoutError) as cm:
                lim.acquire_key("k", timeout=0.05)
            self.assertGreaterEqual(now() - t, 40_000_000)
            self.assertGreater(cm.exception.ready_ns, now())
            with self.assertRaises(TimeoutError):
                lim.acquire_key("k", timeout=10, predict=True)
            self.assertEqual(lim.key_state("k").waiters, 0)

    def test_errors(self):
        with closing(Limiter.private("10/s:5", keyed=True)) as lim:
            with self.assertRaises(OSError) as cm:
                lim.acquire_key("k", 6)         # above the burst
            self.assertEqual(cm.exception.errno, errno.EINVAL)
            with self.assertRaises(OSError) as cm:
                lim.acquire()                   # by key only
            self.assertEqual(cm.exception.errno, errno.EINVAL)
            with self.assertRaises(ValueError):
                lim.acquire_key(b"")
            with self.assertRaises(ValueError):
                lim.try_acquire_key("k" * 65)
            with self.assertRaises(OSError) as cm:
                lim.configure(Config.parse("10/s:5"))   # keyed is fixed
            self.assertEqual(cm.exception.errno, errno.EINVAL)
        with closing(Limiter.private("10/s:5")) as lim:
            for call in (lambda: lim.acquire_key("k"),
                         lambda: lim.try_acquire_key("k"),
                         lambda: lim.key_state("k"), lim.keys_stats):
                with self.assertRaises(OSError) as cm:
                    call()
                self.assertEqual(cm.exception.errno, errno.EINVAL)
                self.assertIn("not keyed", str(cm.exception))

    def test_full_table_is_enospc(self):
        # Keys that carry state (a token an hour) fill a table of 2.
        with closing(Limiter.private(1, HOUR, burst=2, keyed=True,
                                     keys=2)) as lim:
            lim.acquire_key("a")
            lim.acquire_key("b")
            for call in (lambda: lim.acquire_key("c"),
                         lambda: lim.try_acquire_key("c")):
                with self.assertRaises(OSError) as cm:
                    call()
                self.assertEqual(cm.exception.errno, errno.ENOSPC)
                self.assertGreater(cm.exception.ready_ns, now())
            self.assertTrue(lim.try_acquire_key("a"))  # kept keys go on
            self.assertEqual(lim.keys_stats().refused, 2)

    def test_one_budget_across_processes(self):
        nm = name("keyed")
        with closing(Limiter.attach(nm, Config(rate=1, period_ns=HOUR,
                                               burst=10, keyed=True))) \
                as lim:
            r, w = os.pipe()

            def child() -> int:
                with closing(Limiter.attach(nm)) as c:
                    got = sum(bool(c.try_acquire_key("shared"))
                              for _ in range(10))
                    os.write(w, bytes([got]))
                return 0
            pids = []
            for _ in range(4):
                pid = os.fork()
                if pid == 0:
                    rc = 99
                    try:
                        rc = child()
                    finally:
                        os._exit(rc)
                pids.append(pid)
            for pid in pids:
                _, status = os.waitpid(pid, 0)
                self.assertEqual(os.waitstatus_to_exitcode(status), 0)
            os.close(w)
            got = sum(os.read(r, 16))
            os.close(r)
            self.assertEqual(got, 10)
            self.assertEqual(lim.key_state("shared").available, 0)
            Limiter.unlink(nm)


@need_device
@need_keyed
@need_socketpair
class AsyncKeyed(unittest.TestCase):
    def test_in_order_and_loop_free(self):
        async def main():
            lim = Limiter.private("50/s:1", keyed=True)
            alim = AsyncLimiter(lim)
            order = []

            async def one(i):
                g = await alim.acquire_key("k")
                self.assertTrue(g)
                order.append(i)
            start = now()
            await asyncio.gather(*(one(i) for i in range(5)))
            took = now() - start
            # 1 at once, 4 more at 50/s
            self.assertGreater(took, 70_000_000)
            self.assertEqual(order, list(range(5)))
            lim.close()
            # Another key does not wait while "k" waits 2 s for its
            # token, and the loop runs meanwhile: a blocked one would not
            # tick at all, a running one some 400 times (2 s: the margin
            # for a slow machine, whose process may stall for 600 ms).
            lim = Limiter.private(1, 2 * SEC, burst=1, keyed=True)
            alim = AsyncLimiter(lim)
            ticks = 0
            done = []

            async def ticker():
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.005)
                    ticks += 1

            async def key(k):
                g = await alim.acquire_key(k)
                done.append((k, g.wait_ns))
            await alim.acquire_key("k")
            t = asyncio.ensure_future(ticker())
            await asyncio.gather(key("k"), key(b"j"))
            t.cancel()
            self.assertEqual([k for k, _ in done], [b"j", "k"])
            # the kernel's own measure: "j" never waited
            self.assertLess(dict(done)[b"j"], 100_000_000)
            self.assertGreater(ticks, 20)
            lim.close()
        asyncio.run(main())

    def test_timeout_and_cancel(self):
        async def main():
            lim = Limiter.private(1, HOUR, burst=1, keyed=True)
            alim = AsyncLimiter(lim)
            await alim.acquire_key("k")
            with self.assertRaises(TimeoutError) as cm:
                await alim.acquire_key("k", timeout=0.05)
            self.assertGreater(cm.exception.ready_ns, now())
            # a waiter behind a waiter times out in the FIFO
            first = asyncio.ensure_future(alim.acquire_key("k"))
            await asyncio.sleep(0.01)
            with self.assertRaises(TimeoutError):
                await alim.acquire_key("k", timeout=0.02)
            first.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await first
            self.assertEqual((alim._keys, alim._out), ({}, {}))
            self.assertEqual(lim.key_state("k").waiters, 0)
            with self.assertRaises(ValueError):
                await alim.acquire_key("")
            lim.close()
        asyncio.run(main())


@need_device
@need_keyed
@need_socketpair
class AsyncKeyedQueued(unittest.TestCase):
    """AsyncLimiter.acquire_key() on the queued acquire of a key
    (rl_submit_key()): its requests wait in the kernel's line of the key,
    1 token per 200 ms, burst 1."""

    def setUp(self):
        self.lim = Limiter.private(1, 200_000_000, burst=1, keyed=True)
        self.alim = AsyncLimiter(self.lim)
        self.assertTrue(self.alim._keyed_queued)

    def tearDown(self):
        self.lim.close()

    def test_in_order_other_keys_at_once(self):
        async def main():
            lim, alim = self.lim, self.alim
            done = []

            async def one(key, i):
                await alim.acquire_key(key)
                done.append((i, now()))
            start = now()
            tasks = [asyncio.ensure_future(one("a", i)) for i in range(3)]
            await asyncio.sleep(0.05)
            # the first at once; two in the kernel's line of "a"
            self.assertEqual([i for i, _ in done], [0])
            self.assertEqual(lim.key_state("a").waiters, 2)
            self.assertEqual(len(alim._out), 2)
            await asyncio.wait_for(one("b", 9), 0.05)
            await asyncio.gather(*tasks)
            self.assertEqual([i for i, _ in done], [0, 9, 1, 2])
            t = {i: at - start for i, at in done}
            self.assertLess(t[0], 50_000_000)
            self.assertLess(t[9], 100_000_000)
            self.assertGreater(t[1], 180_000_000)
            self.assertLess(t[1], 320_000_000)
            self.assertGreater(t[2] - t[1], 150_000_000)
            self.assertLess(t[2] - t[1], 320_000_000)
            self.assertEqual(lim.key_state("a").waiters, 0)
            self.assertEqual(alim._out, {})
        asyncio.run(main())

    def test_timeout_takes_nothing(self):
        async def main():
            lim, alim = self.lim, self.alim
            await alim.acquire_key("k")
            start = now()
            with self.assertRaises(TimeoutError) as cm:
                await alim.acquire_key("k", timeout=0.05)
            # the kernel's ready time: the next token, 200 ms after the
            # first
            self.assertGreater(cm.exception.ready_ns, now())
            self.assertLess(cm.exception.ready_ns, start + 250_000_000)
            self.assertEqual(lim.key_state("k").waiters, 0)
            # nothing taken: the next is granted when the token comes
            await alim.acquire_key("k")
            took = now() - start
            self.assertGreater(took, 120_000_000)
            self.assertLess(took, 300_000_000)
        asyncio.run(main())

    def test_cancel_withdraws(self):
        async def main():
            lim, alim = self.lim, self.alim
            await alim.acquire_key("k")
            start = now()
            t = asyncio.ensure_future(alim.acquire_key("k"))
            await asyncio.sleep(0.02)
            self.assertEqual(lim.key_state("k").waiters, 1)
            t.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await t
            self.assertEqual(lim.key_state("k").waiters, 0)
            self.assertEqual(alim._out, {})
            # withdrawn, it took nothing: the next gets the token
            await alim.acquire_key("k")
            self.assertLess(now() - start, 300_000_000)
        asyncio.run(main())

    def test_errors(self):
        async def main():
            lim, alim = self.lim, self.alim
            with self.assertRaises(OSError) as cm:
                await alim.acquire_key("k", 2)      # above the burst
            self.assertEqual(cm.exception.errno, errno.EINVAL)
            plain = Limiter.private("10/s")
            with self.assertRaises(OSError) as cm:
                await AsyncLimiter(plain).acquire_key("k")
            self.assertEqual(cm.exception.errno, errno.EINVAL)
            self.assertIn("not keyed", str(cm.exception))
            plain.close()
            full = Limiter.private(1, HOUR, burst=1, keyed=True, keys=2)
            afull = AsyncLimiter(full)
            await afull.acquire_key("a")
            await afull.acquire_key("b")
            with self.assertRaises(OSError) as cm:
                await afull.acquire_key("c")
            self.assertEqual(cm.exception.errno, errno.ENOSPC)
            self.assertGreater(cm.exception.ready_ns, now())
            full.close()
            self.assertFalse(lim.closed)
        asyncio.run(main())


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _listen(test: unittest.TestCase) -> socket.socket:
    """A listening TCP socket on 127.0.0.1; the rig's guest boots with its
    loopback down: up it once (as its bench.sh does), else skip."""
    for attempt in range(2):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind(("127.0.0.1", 0))
            sock.listen(64)
            return sock
        except OSError as e:
            sock.close()
            if attempt or e.errno not in (errno.EADDRNOTAVAIL,
                                          errno.ENETUNREACH):
                test.skipTest(f"no loopback here ({e.strerror})")
            for cmd in (["ip", "link", "set", "lo", "up"],
                        ["ifconfig", "lo", "127.0.0.1", "up"]):
                try:
                    if subprocess.run(cmd, capture_output=True).returncode \
                            == 0:
                        break
                except OSError:
                    pass
    raise AssertionError("not reached")


def _example():
    """python/examples/keyed_wsgi.py, imported (skip where missing)."""
    if not os.path.isdir(EXAMPLES):
        raise unittest.SkipTest("no python/examples here")
    sys.path.insert(0, EXAMPLES)
    try:
        return importlib.import_module("keyed_wsgi")
    finally:
        sys.path.remove(EXAMPLES)


@need_device
@need_keyed
class WsgiExample(unittest.TestCase):
    """The example of Documentation/keyed.md: its app() called as a WSGI
    server calls it, from 3 worker processes at once."""

    def test_workers_share_each_address_budget(self):
        ex = _example()
        nm = name("wsgi")
        # "rlctl create NAME 1/h:4 --keyed": 4 requests per address
        with closing(Limiter.attach(nm, Config(rate=1, period_ns=HOUR,
                                               burst=4, keyed=True))):
            ex.NAME = nm
            r, w = os.pipe()

            def worker() -> int:
                ex._limiter = None
                out = []
                for addr in ("192.0.2.1", "192.0.2.2") * 3:
                    got = []

                    def start(status, headers):
                        got.append((status, dict(headers)))
                    body = b"".join(ex.app({"REMOTE_ADDR": addr}, start))
                    status, headers = got[0]
                    code = status.split()[0]
                    if code == "429":
                        ra = int(headers["Retry-After"])
                        if not 3000 < ra <= 3600:
                            return 1
                        if b"too many" not in body:
                            return 2
                    out.append(f"{addr} {code}\n")
                os.write(w, "".join(out).encode())
                return 0
            pids = []
            for _ in range(3):
                pid = os.fork()
                if pid == 0:
                    rc = 99
                    try:
                        rc = worker()
                    finally:
                        os._exit(rc)
                pids.append(pid)
            for pid in pids:
                _, status = os.waitpid(pid, 0)
                self.assertEqual(os.waitstatus_to_exitcode(status), 0)
            os.close(w)
            data = b""
            while True:
                chunk = os.read(r, 4096)
                if not chunk:
                    break
                data += chunk
            os.close(r)
            lines = data.decode().split()
            # 3 workers x 3 requests per address: 4 served, 5 refused
            for addr in ("192.0.2.1", "192.0.2.2"):
                codes = [lines[i + 1] for i in range(0, len(lines), 2)
                         if lines[i] == addr]
                self.assertEqual(len(codes), 9)
                self.assertEqual(codes.count("200"), 4, addr)
                self.assertEqual(codes.count("429"), 5, addr)
            Limiter.unlink(nm)

    def test_served_by_prefork_workers(self):
        """The example served over HTTP by 3 forked wsgiref servers on one
        listening socket (gunicorn's model): 12 requests of one address
        on new connections, 5 served on a limiter of 1/h:5."""
        ex = _example()
        sock = _listen(self)
        port = sock.getsockname()[1]
        nm = name("http")
        lim = Limiter.attach(nm, Config(rate=1, period_ns=HOUR, burst=5,
                                        keyed=True))
        ex.NAME = nm
        pids = []
        try:
            for _ in range(3):
                pid = os.fork()
                if pid == 0:
                    try:
                        ex._limiter = None
                        srv = WSGIServer(("127.0.0.1", port), _Quiet,
                                         bind_and_activate=False)
                        srv.socket.close()
                        srv.socket = sock
                        # (what server_bind() sets, for the environ)
                        srv.server_address = sock.getsockname()
                        srv.server_name, srv.server_port = "127.0.0.1", port
                        srv.setup_environ()
                        srv.set_app(ex.app)
                        srv.serve_forever()
                    finally:
                        os._exit(0)
                pids.append(pid)
            sock.close()
            answers = []
            for _ in range(12):
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
                c.request("GET", "/")
                r = c.getresponse()
                r.read()
                answers.append((r.status, r.getheader("Retry-After"),
                                r.getheader("X-Worker")))
                c.close()
            codes = [a[0] for a in answers]
            self.assertEqual(codes.count(200), 5, codes)
            self.assertEqual(codes.count(429), 7, codes)
            for status, ra, _ in answers:
                if status == 429:
                    self.assertTrue(3000 < int(ra) <= 3600, ra)
            self.assertEqual(lim.key_state("127.0.0.1").available, 0)
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            Limiter.unlink(nm)
            lim.close()

    def test_check(self):
        ex = _example()
        with closing(Limiter.private("2/s:2", keyed=True)) as lim:
            self.assertIsNone(ex.check(lim, "198.51.100.7"))
            self.assertIsNone(ex.check(lim, "198.51.100.7"))
            status, headers = ex.check(lim, "198.51.100.7")
            self.assertTrue(status.startswith("429"))
            self.assertEqual(dict(headers)["Retry-After"], "1")
            self.assertIsNone(ex.check(lim, "198.51.100.8", 2))
        # a full table refuses new keys with a Retry-After, too
        with closing(Limiter.private(1, HOUR, burst=1, keyed=True,
                                     keys=1)) as lim:
            self.assertIsNone(ex.check(lim, "a"))
            status, headers = ex.check(lim, "b")
            self.assertTrue(status.startswith("429"))
            self.assertGreater(int(dict(headers)["Retry-After"]), 3000)


if __name__ == "__main__":
    unittest.main()
