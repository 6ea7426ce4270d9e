# SPDX-License-Identifier: LGPL-2.1-or-later
"""ratelimit: rate and concurrency limiters of the kernel's /dev/ratelimit.

    import kratelimit
    with kratelimit.Limiter.private(100) as lim:   # 100 tokens per second
        lim.acquire()                             # sleeps in the kernel
        with lim.permit(): ...

    import kratelimit.aio                          # asyncio
    alim = kratelimit.aio.AsyncLimiter(kratelimit.Limiter.attach("api"))
    await alim.acquire(5)

Pure Python over fcntl.ioctl; see Documentation/python.md and
ratelimit(4) for the semantics.
"""

from ._abi import (ABI_VERSION, DEADLINE_NONE, NAME_MAX, PRIO_DEFAULT,
                   PRIO_HIGH, PRIO_LOW, PRIO_MID, PRIO_USER)
from ._core import (DEFAULT_MODE, DEVICE, Client, Config, Features, Grant,
                    Limiter, Stats, features)

__version__ = "0.1.0"

__all__ = [
    "ABI_VERSION", "DEADLINE_NONE", "DEFAULT_MODE", "DEVICE", "NAME_MAX",
    "PRIO_DEFAULT",
    "PRIO_HIGH", "PRIO_LOW", "PRIO_MID", "PRIO_USER", "Client", "Config",
    "Features", "Grant", "Limiter", "Stats", "features",
]
