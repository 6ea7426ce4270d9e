# SPDX-License-Identifier: LGPL-2.1-or-later
"""libratelimit.so.1 through ctypes: the uapi structs, the constants and
the library's functions (lib/libratelimit.h).

The structs of uapi/linux/ratelimit_dev.h are ctypes Structures: the
library takes them by pointer. python/tests/test_abi.py compares every
size, field offset and constant here with what a C compiler makes of the
header. The library is found as libratelimit.so.1 by the dynamic loader
(Debian's libratelimit1), or at the path $KRATELIMIT_LIBRARY names (a
build tree's build/lib/libratelimit.so.1).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from typing import Any, Dict, List, Tuple, Type

ABI_VERSION = 1
DEADLINE_NONE = (1 << 64) - 1
PERIOD_MAX_NS = 86400 * 1000000000
BURST_PERIOD_MAX = 1 << 63
NAME_MAX = 64
DEPTH_MAX = 4
RATE_STRLEN = 80

CONFIG_UNLIMITED = 1 << 0
CONFIG_FED = 1 << 1
CONFIG_KEYED = 1 << 2
CONFIG_FAIR_PER_USER = 1 << 3
ACQUIRE_NONBLOCK = 1 << 0
ACQUIRE_PREDICT = 1 << 1
ATTACH_CREATE = 1 << 0
ATTACH_EXCL = 1 << 1
ATTACH_PERSIST = 1 << 2
PERM_UID = 1 << 0
PERM_GID = 1 << 1
PERM_MODE = 1 << 2
FEATURE_URING_CMD = 1 << 0
FEATURE_QUEUED = 1 << 1
FEATURE_FAST = 1 << 2
FEATURE_KEYED = 1 << 3
KEY_MAX = 64
KEYS_DEFAULT = 65536
KEYS_USER_MAX = 1 << 20
KEYS_MAX = 1 << 26
KEY_RATE_MAX = 0xffffffff
QUEUED_MAX = 64

PRIO_DEFAULT = 0
PRIO_LOW = 1
PRIO_MID = 2
PRIO_HIGH = 3
PRIO_USER = 4

CATCHUP_STRICT = 1000
CATCHUP_MAX = 100000
FAIRNESS_DEFAULT = 10
FAIRNESS_MAX = 1000000
WEIGHT_MAX = 1000

# The ioctl numbers' nr parts, for Features.has_ioctl() (the bits of
# struct rl_features.ioctls).
IOCTL_NR = {
    "RL_IOC_GET_FEATURES": 0, "RL_IOC_SET_CONFIG": 1,
    "RL_IOC_GET_CONFIG": 2, "RL_IOC_ACQUIRE": 3, "RL_IOC_GET_STATS": 4,
    "RL_IOC_ATTACH": 5, "RL_IOC_UNLINK": 6, "RL_IOC_RELEASE": 7,
    "RL_IOC_REFUND": 8, "RL_IOC_SET_CLIENT": 9, "RL_IOC_GET_CLIENT": 10,
    "RL_IOC_DEPOSIT": 11, "RL_IOC_SET_LEASE": 12, "RL_IOC_GET_DEMAND": 13,
    "RL_IOC_SET_PARENT": 14, "RL_IOC_GET_PARENT": 15, "RL_IOC_CYCLE": 16,
    "RL_IOC_SET_PERM": 18, "RL_IOC_SUBMIT": 19, "RL_IOC_COLLECT": 20,
    "RL_IOC_CANCEL": 21, "RL_IOC_ACQUIRE_KEY": 22, "RL_IOC_GET_KEY": 23,
    "RL_IOC_GET_KEYS": 24, "RL_IOC_SUBMIT_KEY": 25,
}

_u32 = ctypes.c_uint32
_u64 = ctypes.c_uint64
_s32 = ctypes.c_int32


class rl_config(ctypes.Structure):
    _fields_ = [("rate", _u64), ("period_ns", _u64), ("burst", _u64),
                ("flags", _u32), ("catchup", _u32), ("concurrency", _u64),
                ("backlog", _u64), ("fairness", _u32), ("reserved0", _u32),
                ("keys", _u64)]


class rl_acquire(ctypes.Structure):
    _fields_ = [("count", _u64), ("deadline_ns", _u64), ("flags", _u32),
                ("priority", _u32), ("wait_ns", _u64), ("ready_ns", _u64),
                ("lag_ns", _u64), ("reserved", _u64 * 2)]


class rl_stats(ctypes.Structure):
    _fields_ = [("flags", _u32), ("reserved0", _u32)] + [
        (f, _u64) for f in ("granted", "requests", "immediate", "waited",
                            "wait_ns_total", "wait_ns_max", "timeouts",
                            "interrupted", "rejected", "waiters",
                            "available", "held", "clients", "backlog",
                            "refunded")]


class rl_client_config(ctypes.Structure):
    _fields_ = [("priority", _u32), ("weight", _u32), ("cap", _u64),
                ("flags", _u32), ("reserved0", _u32), ("held", _u64),
                ("granted", _u64), ("reserved", _u64 * 3)]


class rl_features(ctypes.Structure):
    _fields_ = [("version", _u32), ("flags", _u32), ("ioctls", _u64),
                ("config_flags", _u64), ("acquire_flags", _u64),
                ("attach_flags", _u64), ("reserved", _u64 * 3)]


class rl_lease(ctypes.Structure):
    _fields_ = [("expires_ns", _u64), ("flags", _u32), ("reserved0", _u32),
                ("config", rl_config), ("fallback", rl_config),
                ("reserved", _u64 * 2)]


class rl_demand(ctypes.Structure):
    _fields_ = [("flags", _u32), ("reserved0", _u32), ("asked", _u64),
                ("refused", _u64), ("queued", _u64), ("busy_ns", _u64),
                ("now_ns", _u64), ("reserved", _u64 * 4)]


class rl_parent(ctypes.Structure):
    _fields_ = [("name_ptr", _u64), ("weight", _u32), ("flags", _u32),
                ("depth", _u32), ("children", _u32), ("reserved", _u64 * 2)]


class rl_cycle(ctypes.Structure):
    _fields_ = [("release", _u64), ("flags", _u32), ("reserved0", _u32),
                ("acquire", rl_acquire), ("reserved", _u64 * 2)]


class rl_queued(ctypes.Structure):
    _fields_ = [("ticket", _u64), ("count", _u64), ("deadline_ns", _u64),
                ("flags", _u32), ("priority", _u32), ("result", _s32),
                ("reserved0", _u32), ("wait_ns", _u64), ("ready_ns", _u64),
                ("lag_ns", _u64), ("user_data", _u64), ("reserved", _u64)]


class rl_key_acquire(ctypes.Structure):
    _fields_ = [("acquire", rl_acquire), ("key_len", _u32), ("flags", _u32),
                ("reserved", _u64 * 3), ("key", ctypes.c_uint8 * KEY_MAX)]


class rl_key_queued(ctypes.Structure):
    _fields_ = [("queued", rl_queued), ("key_len", _u32), ("flags", _u32),
                ("reserved", _u64 * 3), ("key", ctypes.c_uint8 * KEY_MAX)]


class rl_key_state(ctypes.Structure):
    _fields_ = [("key_len", _u32), ("flags", _u32),
                ("key", ctypes.c_uint8 * KEY_MAX), ("available", _u64),
                ("full_ns", _u64), ("waiters", _u64), ("kept", _u32),
                ("reserved0", _u32), ("reserved", _u64 * 3)]


class rl_keys_stats(ctypes.Structure):
    _fields_ = [("flags", _u32), ("reserved0", _u32)] + [
        (f, _u64) for f in ("keys", "keys_max", "created", "evicted",
                            "refused", "waiters")] + [
        ("reserved", _u64 * 9)]


# The structs test_abi.py checks, by their C names. (rl_release,
# rl_attach, rl_unlink, rl_deposit and rl_perm are the library's business:
# no function takes them.)
STRUCTS: Dict[str, Type[ctypes.Structure]] = {
    c.__name__: c for c in (rl_config, rl_acquire, rl_stats,
                            rl_client_config, rl_features, rl_lease,
                            rl_demand, rl_parent, rl_cycle, rl_queued,
                            rl_key_acquire, rl_key_queued, rl_key_state,
                            rl_keys_stats)}

_P = ctypes.POINTER
_int = ctypes.c_int
_str = ctypes.c_char_p
# name: (restype, argtypes). The io_uring calls (rl_*_async) take
# liburing's rings, which Python has not; rl_batch_* keep per-thread state
# for C programs that count nanoseconds; rl_open_named() is rl_open() and
# rl_attach(), rl_acquire(), rl_try_acquire() and rl_acquire_timeout()
# are rl_acquire_ex().
PROTOTYPES: Dict[str, Tuple[Any, List[Any]]] = {
    "rl_open": (_int, [_int]),
    "rl_close": (_int, [_int]),
    "rl_set_config": (_int, [_int, _P(rl_config)]),
    "rl_get_config": (_int, [_int, _P(rl_config)]),
    "rl_acquire_ex": (_int, [_int, _P(rl_acquire)]),
    "rl_release": (_int, [_int, _u64]),
    "rl_cycle_ex": (_int, [_int, _P(rl_cycle)]),
    "rl_refund": (_int, [_int, _u64]),
    "rl_set_client": (_int, [_int, _P(rl_client_config)]),
    "rl_get_client": (_int, [_int, _P(rl_client_config)]),
    "rl_get_stats": (_int, [_int, _P(rl_stats)]),
    "rl_get_features": (_int, [_int, _P(rl_features)]),
    "rl_deposit": (_int, [_int, _u64, _P(_u64)]),
    "rl_set_lease": (_int, [_int, _P(rl_lease)]),
    "rl_get_demand": (_int, [_int, _P(rl_demand)]),
    "rl_name_valid": (_int, [_str]),
    "rl_attach": (_int, [_int, _str, _u32, _u32, _P(rl_config)]),
    "rl_unlink": (_int, [_int, _str]),
    "rl_set_perm": (_int, [_int, _u32, _u32, _u32, _u32]),
    "rl_set_parent": (_int, [_int, _str, _u32]),
    "rl_get_parent": (_int, [_int, _P(rl_parent), ctypes.c_char_p]),
    "rl_fast_take": (_int, [_int, _u64]),
    "rl_fast_map": (_int, [_int]),
    "rl_fast_unmap": (_int, [_int]),
    "rl_now_ns": (_u64, []),
    "rl_parse_rate": (_int, [_str, _P(rl_config)]),
    "rl_parse_amount": (_int, [_str, _P(_u64)]),
    "rl_parse_priority": (_int, [_str]),
    "rl_format_rate": (_int, [_P(rl_config), ctypes.c_char_p,
                              ctypes.c_size_t]),
}
# The queued acquire (RL_IOC_SUBMIT, COLLECT, CANCEL; rl_submit(3)): an
# older libratelimit.so.1 without it leaves AsyncLimiter on non-blocking
# acquires.
QUEUED: Dict[str, Tuple[Any, List[Any]]] = {
    "rl_submit": (_int, [_int, _P(rl_queued)]),
    "rl_collect": (_int, [_int, _P(rl_queued)]),
    "rl_cancel": (_int, [_int, _u64]),
}

# Keyed limiters (RL_IOC_ACQUIRE_KEY, GET_KEY, GET_KEYS; LIBRATELIMIT_1.1):
# a libratelimit.so.1 without them has the package make the same ioctls
# itself (ioctl_key()), as the library would.
KEYED: Dict[str, Tuple[Any, List[Any]]] = {
    "rl_acquire_key_ex": (_int, [_int, _P(rl_key_acquire)]),
    "rl_get_key": (_int, [_int, ctypes.c_void_p, ctypes.c_size_t,
                          _P(rl_key_state)]),
    "rl_get_keys": (_int, [_int, _P(rl_keys_stats)]),
}

# The queued acquire of a key (RL_IOC_SUBMIT_KEY; LIBRATELIMIT_1.1, after
# the other keyed calls): without it, AsyncLimiter.acquire_key() waits
# with non-blocking tries.
KEYED_QUEUED: Dict[str, Tuple[Any, List[Any]]] = {
    "rl_submit_key": (_int, [_int, _P(rl_key_queued)]),
}


def _ioc_wr(nr: int, size: int) -> int:
    """_IOWR(RL_IOC_MAGIC, @nr, a struct of @size bytes) (asm-generic)."""
    return 3 << 30 | size << 16 | 0xBA << 8 | nr


# The keyed ioctls' numbers, for ioctl_key(); test_abi.py checks them.
IOC_ACQUIRE_KEY = _ioc_wr(22, ctypes.sizeof(rl_key_acquire))
IOC_GET_KEY = _ioc_wr(23, ctypes.sizeof(rl_key_state))
IOC_GET_KEYS = _ioc_wr(24, ctypes.sizeof(rl_keys_stats))

SONAME = "libratelimit.so.1"
ENV = "KRATELIMIT_LIBRARY"


def load() -> Any:
    """The library, its functions typed; ImportError when missing."""
    path = os.environ.get(ENV) or SONAME
    try:
        lib = ctypes.CDLL(path, use_errno=False)
    except OSError as e:
        found = ctypes.util.find_library("ratelimit")
        if path != SONAME or not found:
            raise ImportError(
                f"kratelimit needs {SONAME} (Debian: apt install "
                f"libratelimit1; from the source tree: make lib, then "
                f"{ENV}=build/lib/{SONAME}): {e}") from None
        lib = ctypes.CDLL(found)
    for name, (res, args) in PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    for name, (res, args) in {**QUEUED, **KEYED, **KEYED_QUEUED}.items():
        if hasattr(lib, name):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
    return lib


lib = load()
# Has the library the queued acquire's calls?
has_queued = all(hasattr(lib, name) for name in QUEUED)
# Has the library the keyed calls (else ioctl_key() makes the ioctls)?
has_keyed = all(hasattr(lib, name) for name in KEYED)
# Has the library the queued acquire of a key (rl_submit_key)?
has_submit_key = has_queued and all(hasattr(lib, n) for n in KEYED_QUEUED)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.ioctl.restype = _int
_libc.ioctl.argtypes = [_int, ctypes.c_ulong, ctypes.c_void_p]


def ioctl_key(fd: int, request: int, arg: Any) -> int:
    """ioctl(@fd, @request, &@arg), 0 or -errno as the library's calls
    return (the GIL is released during the call)."""
    if _libc.ioctl(fd, request, ctypes.byref(arg)) < 0:
        return -ctypes.get_errno()
    return 0


def acquire_key_ex(fd: int, req: rl_key_acquire) -> int:
    """rl_acquire_key_ex(), or its ioctl with an older library."""
    if has_keyed:
        return int(lib.rl_acquire_key_ex(fd, ctypes.byref(req)))
    if not 1 <= req.key_len <= KEY_MAX:
        return -errno.EINVAL    # without a system call, as the library
    return ioctl_key(fd, IOC_ACQUIRE_KEY, req)


def get_key(fd: int, key: bytes, st: rl_key_state) -> int:
    """rl_get_key(), or its ioctl with an older library."""
    if has_keyed:
        return int(lib.rl_get_key(fd, key, len(key), ctypes.byref(st)))
    if not 1 <= len(key) <= KEY_MAX:
        return -errno.EINVAL
    ctypes.memset(ctypes.byref(st), 0, ctypes.sizeof(st))
    st.key_len = len(key)
    ctypes.memmove(st.key, key, len(key))
    return ioctl_key(fd, IOC_GET_KEY, st)


def get_keys(fd: int, st: rl_keys_stats) -> int:
    """rl_get_keys(), or its ioctl with an older library."""
    if has_keyed:
        return int(lib.rl_get_keys(fd, ctypes.byref(st)))
    ctypes.memset(ctypes.byref(st), 0, ctypes.sizeof(st))
    return ioctl_key(fd, IOC_GET_KEYS, st)
