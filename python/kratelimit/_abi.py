# SPDX-License-Identifier: LGPL-2.1-or-later
"""The ABI of /dev/ratelimit (uapi/linux/ratelimit_dev.h) in struct formats.

Every struct is packed native-endian with no padding ("=" formats): the
header's structs use only naturally aligned __u32/__u64 fields and no
implicit padding, so these byte layouts are the C layouts. The ioctl
numbers are computed from the generic Linux _IOC encoding and the struct
sizes, exactly as <asm-generic/ioctl.h> does. The tests compare both with
what a C compiler makes of the header (python/tests/abi_dump.c).
"""

import struct

ABI_VERSION = 1
DEADLINE_NONE = (1 << 64) - 1
PERIOD_MAX_NS = 86400 * 1000000000
BURST_PERIOD_MAX = 1 << 63
NAME_MAX = 64

CONFIG_UNLIMITED = 1 << 0
CONFIG_FED = 1 << 1
ACQUIRE_NONBLOCK = 1 << 0
ACQUIRE_PREDICT = 1 << 1
ATTACH_CREATE = 1 << 0
ATTACH_EXCL = 1 << 1
ATTACH_PERSIST = 1 << 2

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

# Field names and formats, in the header's order. "Q" is __u64, "I" __u32;
# reserved fields are named reserved* and always packed as zero.
CONFIG = (("rate", "Q"), ("period_ns", "Q"), ("burst", "Q"), ("flags", "I"),
          ("catchup", "I"), ("concurrency", "Q"), ("backlog", "Q"),
          ("fairness", "I"), ("reserved0", "I"), ("reserved", "Q"))
ACQUIRE = (("count", "Q"), ("deadline_ns", "Q"), ("flags", "I"),
           ("priority", "I"), ("wait_ns", "Q"), ("ready_ns", "Q"),
           ("lag_ns", "Q"), ("reserved", "2Q"))
STATS = (("flags", "I"), ("reserved0", "I"), ("granted", "Q"),
         ("requests", "Q"), ("immediate", "Q"), ("waited", "Q"),
         ("wait_ns_total", "Q"), ("wait_ns_max", "Q"), ("timeouts", "Q"),
         ("interrupted", "Q"), ("rejected", "Q"), ("waiters", "Q"),
         ("available", "Q"), ("held", "Q"), ("clients", "Q"),
         ("backlog", "Q"), ("refunded", "Q"))
RELEASE = (("count", "Q"), ("flags", "I"), ("reserved0", "I"),
           ("reserved", "2Q"))
CLIENT = (("priority", "I"), ("weight", "I"), ("cap", "Q"), ("flags", "I"),
          ("reserved0", "I"), ("held", "Q"), ("granted", "Q"),
          ("reserved", "3Q"))
FEATURES = (("version", "I"), ("flags", "I"), ("ioctls", "Q"),
            ("config_flags", "Q"), ("acquire_flags", "Q"),
            ("attach_flags", "Q"), ("reserved", "3Q"))
ATTACH = (("name_ptr", "Q"), ("flags", "I"), ("mode", "I"),
          ("config", CONFIG), ("reserved", "4Q"))
UNLINK = (("name_ptr", "Q"), ("flags", "I"), ("reserved0", "I"),
          ("reserved", "2Q"))


def fmt(fields) -> str:
    """The struct module format of a field list (nested structs inlined)."""
    out = "="
    for _, f in fields:
        out += fmt(f)[1:] if isinstance(f, tuple) else f
    return out


def offsets(fields, base: int = 0) -> dict:
    """Offset of every field, nested ones as "outer.inner"."""
    out = {}
    off = base
    for name, f in fields:
        out[name] = off
        if isinstance(f, tuple):
            for k, v in offsets(f, off).items():
                out[name + "." + k] = v
        off += struct.calcsize(fmt(f) if isinstance(f, tuple) else "=" + f)
    return out


S_CONFIG = struct.Struct(fmt(CONFIG))
S_ACQUIRE = struct.Struct(fmt(ACQUIRE))
S_STATS = struct.Struct(fmt(STATS))
S_RELEASE = struct.Struct(fmt(RELEASE))
S_CLIENT = struct.Struct(fmt(CLIENT))
S_FEATURES = struct.Struct(fmt(FEATURES))
S_ATTACH = struct.Struct(fmt(ATTACH))
S_UNLINK = struct.Struct(fmt(UNLINK))

# <asm-generic/ioctl.h>, which x86, arm64 and riscv use.
_IOC_NRBITS, _IOC_TYPEBITS, _IOC_SIZEBITS = 8, 8, 14
_IOC_TYPESHIFT = _IOC_NRBITS
_IOC_SIZESHIFT = _IOC_TYPESHIFT + _IOC_TYPEBITS
_IOC_DIRSHIFT = _IOC_SIZESHIFT + _IOC_SIZEBITS
_IOC_WRITE, _IOC_READ = 1, 2
IOC_MAGIC = 0xBA


def _ioc(direction: int, nr: int, size: int) -> int:
    return (direction << _IOC_DIRSHIFT | size << _IOC_SIZESHIFT |
            IOC_MAGIC << _IOC_TYPESHIFT | nr)


def _ior(nr: int, s: struct.Struct) -> int:
    return _ioc(_IOC_READ, nr, s.size)


def _iow(nr: int, s: struct.Struct) -> int:
    return _ioc(_IOC_WRITE, nr, s.size)


def _iowr(nr: int, s: struct.Struct) -> int:
    return _ioc(_IOC_READ | _IOC_WRITE, nr, s.size)


IOC_GET_FEATURES = _ior(0, S_FEATURES)
IOC_SET_CONFIG = _iow(1, S_CONFIG)
IOC_GET_CONFIG = _ior(2, S_CONFIG)
IOC_ACQUIRE = _iowr(3, S_ACQUIRE)
IOC_GET_STATS = _iowr(4, S_STATS)
IOC_ATTACH = _iow(5, S_ATTACH)
IOC_UNLINK = _iow(6, S_UNLINK)
IOC_RELEASE = _iow(7, S_RELEASE)
IOC_REFUND = _iow(8, S_RELEASE)
IOC_SET_CLIENT = _iow(9, S_CLIENT)
IOC_GET_CLIENT = _ior(10, S_CLIENT)

IOCTLS = {
    "RL_IOC_GET_FEATURES": IOC_GET_FEATURES,
    "RL_IOC_SET_CONFIG": IOC_SET_CONFIG,
    "RL_IOC_GET_CONFIG": IOC_GET_CONFIG,
    "RL_IOC_ACQUIRE": IOC_ACQUIRE,
    "RL_IOC_GET_STATS": IOC_GET_STATS,
    "RL_IOC_ATTACH": IOC_ATTACH,
    "RL_IOC_UNLINK": IOC_UNLINK,
    "RL_IOC_RELEASE": IOC_RELEASE,
    "RL_IOC_REFUND": IOC_REFUND,
    "RL_IOC_SET_CLIENT": IOC_SET_CLIENT,
    "RL_IOC_GET_CLIENT": IOC_GET_CLIENT,
}

STRUCTS = {
    "rl_config": CONFIG, "rl_acquire": ACQUIRE, "rl_stats": STATS,
    "rl_release": RELEASE, "rl_client_config": CLIENT,
    "rl_features": FEATURES, "rl_attach": ATTACH, "rl_unlink": UNLINK,
}
