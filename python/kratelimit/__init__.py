# SPDX-License-Identifier: LGPL-2.1-or-later
"""kratelimit: rate and concurrency limiters of the kernel's /dev/ratelimit.

    import kratelimit
    lim = kratelimit.Limiter.private("100/s:10")   # 100 tokens per second
    lim.acquire()                                  # sleeps in the kernel
    with lim: ...                                  # one token (and permit)

    from kratelimit.aio import AsyncLimiter        # asyncio
    alim = AsyncLimiter(kratelimit.Limiter.attach("api"))
    await alim.acquire(5)

    per_ip = kratelimit.Limiter.attach("api_per_ip")   # keyed: a bucket
    if not per_ip.try_acquire_key(client_addr): ...   # per key

ctypes over libratelimit.so.1 (lib/libratelimit.h); see
Documentation/python.md and ratelimit(4) for the semantics.
"""

from ._lib import (ABI_VERSION, DEADLINE_NONE, KEY_MAX, KEYS_DEFAULT,
                   KEYS_MAX, KEYS_USER_MAX, NAME_MAX, PRIO_DEFAULT,
                   PRIO_HIGH, PRIO_LOW, PRIO_MID, PRIO_USER, QUEUED_MAX)
from ._values import (Client, Config, ConfigLike, Demand, Features, Grant,
                      KeyLike, KeysStats, KeyState, Parent, Stats, to_config)
from ._core import (DEFAULT_MODE, DEVICE, Limiter, features, name_valid,
                    now_ns, parse_amount, parse_priority)

__version__ = "0.1.0"

__all__ = [
    "ABI_VERSION", "DEADLINE_NONE", "DEFAULT_MODE", "DEVICE", "KEY_MAX",
    "KEYS_DEFAULT", "KEYS_MAX", "KEYS_USER_MAX", "NAME_MAX",
    "PRIO_DEFAULT", "PRIO_HIGH", "PRIO_LOW", "PRIO_MID", "PRIO_USER",
    "QUEUED_MAX", "Client", "Config", "ConfigLike", "Demand", "Features",
    "Grant", "KeyLike", "KeyState", "KeysStats", "Limiter", "Parent",
    "Stats", "features", "name_valid",
    "now_ns", "parse_amount", "parse_priority", "to_config",
]
