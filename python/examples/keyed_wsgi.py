# SPDX-License-Identifier: LGPL-2.1-or-later
"""A WSGI app that allows each client address 10 requests a second (a
burst of 20), counted across all the worker processes that serve it,
and answers the others 429 Too Many Requests with a Retry-After.

    rlctl create api_per_ip 10/s:20 --keyed --keys 1000000
    gunicorn -w 4 keyed_wsgi:app                  # or uwsgi, mod_wsgi ...
    python3 keyed_wsgi.py [PORT]                  # one process, wsgiref

Every worker attaches to the one keyed limiter "api_per_ip" (RL_LIMITER
names another): a token bucket per client address lives in the kernel,
so the limit holds whichever worker a request reaches, and whatever
worker is killed or restarted. Behind a reverse proxy, take the client's
address from the header the proxy sets (X-Forwarded-For, its last hop)
rather than REMOTE_ADDR. Documentation/keyed.md.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, Callable, Iterable, List, Optional, Tuple

import kratelimit

NAME = os.environ.get("RL_LIMITER", "api_per_ip")

Headers = List[Tuple[str, str]]
StartResponse = Callable[[str, Headers], Any]

_limiter: Optional[kratelimit.Limiter] = None
_pid = 0


def limiter() -> kratelimit.Limiter:
    """This process's client of the keyed limiter, attached on first use
    (after the fork of a pre-forking server, so each worker has its own
    fd; one inherited would work too)."""
    global _limiter, _pid
    if _limiter is None or _pid != os.getpid():
        _limiter = kratelimit.Limiter.attach(NAME)
        _pid = os.getpid()
    return _limiter


def client_key(environ: dict) -> str:
    """The key a request is counted under: the client's address."""
    return environ.get("REMOTE_ADDR") or "unknown"


def check(lim: kratelimit.Limiter, key: str,
          cost: int = 1) -> Optional[Tuple[str, Headers]]:
    """None when @key may have @cost more requests now, else the status
    and headers of the refusal: 429 with Retry-After, in whole seconds,
    from the time the kernel says the request could be granted. A new key
    when the limiter keeps as many keys as it may, all of them busy
    (ENOSPC), is refused the same way, until room comes back."""
    try:
        grant = lim.try_acquire_key(key, cost)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        grant = kratelimit.Grant(False, cost, ready_ns=e.ready_ns)  # type: ignore[attr-defined]
    if grant:
        return None
    return ("429 Too Many Requests",
            [("Retry-After", str(grant.retry_after())),
             ("Content-Type", "text/plain")])


def app(environ: dict, start_response: StartResponse) -> Iterable[bytes]:
    """The WSGI application."""
    refused = check(limiter(), client_key(environ))
    # (which worker answered: the budget is the same in all)
    worker = ("X-Worker", str(os.getpid()))
    if refused:
        status, headers = refused
        start_response(status, headers + [worker])
        return [b"too many requests, retry later\n"]
    start_response("200 OK", [("Content-Type", "text/plain"), worker])
    return [b"hello\n"]


if __name__ == "__main__":
    from wsgiref.simple_server import make_server
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    with make_server("", port, app) as httpd:
        print(f"serving on port {port}, limiter {NAME!r}")
        httpd.serve_forever()
