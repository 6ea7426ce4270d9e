# SPDX-License-Identifier: LGPL-2.1-or-later
"""The library's values in Python: Config, Grant, Stats, Client, Demand,
Parent, Features, KeyState and KeysStats (frozen dataclasses of its
structs), and the OSError of a failed call (libratelimit.so.1,
lib/libratelimit.h)."""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import os
import time
from typing import Any, Dict, Optional, Tuple, Union

from . import _lib
from ._lib import lib

# What an errno means for a call, where the generic strerror says too
# little. Keys: (library function or "*", errno).
_HINTS: Dict[Tuple[str, int], str] = {
    ("*", errno.EBADFD): "the fd is no client of a limiter yet "
                         "(configure() or attach() first)",
    ("*", errno.ENOTTY): "not a /dev/ratelimit fd, or a module without "
                         "this ioctl (see features())",
    ("rl_attach", errno.ENOENT): "no limiter of that name "
                                 "(create=... makes one)",
    ("rl_attach", errno.EEXIST): "a limiter of that name exists "
                                 "(exclusive=True)",
    ("rl_attach", errno.EBUSY): "the fd is a client of a limiter already",
    ("rl_attach", errno.EACCES): "the limiter's mode denies access",
    ("rl_attach", errno.ENOSPC): "too many named limiters "
                                 "(module parameter max_named)",
    ("rl_attach", errno.EDQUOT): "too many named limiters of this user "
                                 "(max_named_per_user)",
    ("rl_unlink", errno.ENOENT): "no limiter of that name",
    ("rl_unlink", errno.EPERM): "only the owner or CAP_SYS_ADMIN may unlink",
    ("rl_acquire_ex", errno.EPERM): "a HIGH or USER priority needs the "
                                    "right to reconfigure the limiter or "
                                    "CAP_SYS_NICE",
    ("rl_acquire_ex", errno.EINVAL): "a count above the burst, or a keyed "
                                     "limiter (acquire_key())",
    ("rl_acquire_key_ex", errno.EINVAL): "a limiter that is not keyed, or "
                                         "a count above the burst",
    ("rl_acquire_key_ex", errno.ENOSPC): "a new key, and the limiter keeps "
                                         "state for as many keys as "
                                         "Config.keys allows (ready_ns: "
                                         "when room comes back at the "
                                         "latest)",
    ("rl_get_key", errno.EINVAL): "a limiter that is not keyed",
    ("rl_get_keys", errno.EINVAL): "a limiter that is not keyed",
    ("rl_set_client", errno.EPERM): "a priority above MID or a weight "
                                    "above 1 needs the right to "
                                    "reconfigure the limiter or "
                                    "CAP_SYS_NICE",
    ("rl_set_config", errno.EPERM): "no write permission on the named "
                                    "limiter, or keys above KEYS_USER_MAX "
                                    "without CAP_SYS_RESOURCE",
    ("rl_set_config", errno.EINVAL): "limits out of range, or keyed "
                                     "changed on an existing limiter, or "
                                     "keyed with a mode or limit it does "
                                     "not take",
    ("rl_set_config", errno.EACCES): "no write permission on the named "
                                     "limiter",
    ("rl_set_config", errno.EBUSY): "concurrency between 0 and non-zero "
                                    "while other clients are attached",
    ("rl_release", errno.EINVAL): "more permits than this fd holds",
    ("rl_refund", errno.EINVAL): "more tokens than this fd acquired and "
                                 "did not refund",
    ("rl_cycle_ex", errno.EINVAL): "more permits than this fd holds, or "
                                   "a count above the concurrency limit",
    ("rl_deposit", errno.EINVAL): "the limiter is not fed (Config(fed="
                                  "True))",
    ("rl_deposit", errno.EPERM): "no right to reconfigure the limiter",
    ("rl_set_lease", errno.EPERM): "no right to reconfigure the limiter",
    ("rl_set_parent", errno.EACCES): "no write permission on the limiter "
                                     "or the parent",
    ("rl_set_parent", errno.ENOENT): "no limiter of that name",
    ("rl_set_parent", errno.ELOOP): "the parent is in the limiter's own "
                                    "subtree",
    ("rl_set_parent", errno.EMLINK): "more than 4 ancestors",
    ("rl_set_parent", errno.EINVAL): "a private limiter, a bad name or "
                                     "weight",
    ("rl_set_perm", errno.EPERM): "only the owner may change the mode "
                                  "and group, CAP_SYS_ADMIN the owner",
    ("rl_set_perm", errno.EINVAL): "a private limiter, or bad ids or mode",
    ("rl_submit", errno.EBUSY): "RL_QUEUED_MAX requests outstanding on "
                                "this fd",
    ("rl_submit_key", errno.EINVAL): "a limiter that is not keyed, or "
                                     "a count above the burst",
    ("rl_submit_key", errno.ENOSPC): "a new key, and the limiter keeps "
                                     "state for as many keys as "
                                     "Config.keys allows (ready_ns: "
                                     "when room comes back at the latest)",
    ("rl_parse_rate", errno.EINVAL): "not unlimited or "
                                     "RATE[/PERIOD][:BURST], e.g. 100/s:10",
    ("rl_parse_rate", errno.ERANGE): "a number out of range",
}


def _error(what: str, err: int, detail: str = "") -> OSError:
    """An OSError of the subclass errno @err maps to, with a message that
    says which call failed and what the errno means there."""
    hint = _HINTS.get((what, err)) or _HINTS.get(("*", err))
    msg = f"{what}{detail}: {os.strerror(err)}"
    if hint:
        msg += f" ({hint})"
    return OSError(err, msg)


def _check(what: str, rc: int, detail: str = "") -> int:
    """@rc of library function @what: itself, or raised as OSError."""
    if rc < 0:
        raise _error(what, -rc, detail)
    return rc


def _parsed(what: str, rc: int, arg: str) -> int:
    """@rc of parser @what of @arg: itself, or raised as ValueError."""
    if rc < 0:
        raise ValueError(str(_error(what, -rc, f" {arg!r}")))
    return rc


def _name(name: str) -> bytes:
    return name.encode()


@dataclasses.dataclass(frozen=True)
class Config:
    """Limits of a limiter (struct rl_config, see ratelimit(4)).

    rate tokens per period_ns; burst 0 picks the kernel's default (100 ms
    of tokens); concurrency 0 is no permit limit; unlimited grants
    everything at once (with concurrency, a pure concurrency limiter);
    fed: only deposit() adds tokens; keyed: a token bucket of these limits
    per key (acquire_key(); fixed at creation), keys: the most keys it
    keeps state for at once (0: KEYS_DEFAULT; above KEYS_USER_MAX it takes
    CAP_SYS_RESOURCE); fair_per_user: fair shares per user, not per fd
    (the fds of one user count as one). Config.parse("100/s:10") reads a rate
    string (ValueError when malformed); str(config) writes one (rate,
    period and burst only).
    """

    rate: int = 0
    period_ns: int = 1_000_000_000
    burst: int = 0
    unlimited: bool = False
    catchup: int = 0
    concurrency: int = 0
    backlog: int = 0
    fairness: int = 0
    fed: bool = False
    keyed: bool = False
    keys: int = 0
    fair_per_user: bool = False

    @classmethod
    def parse(cls, spec: str, **limits: Any) -> "Config":
        """The Config of rate string @spec ("unlimited" or
        "RATE[/PERIOD][:BURST]": "100/s:10", "10MiB/s", "1/10s"; see
        libratelimit(3)), with the other fields from @limits."""
        c = _lib.rl_config()
        _parsed("rl_parse_rate", lib.rl_parse_rate(spec.encode(),
                                                   ctypes.byref(c)), spec)
        return dataclasses.replace(cls._from(c), **limits)

    def __str__(self) -> str:
        buf = ctypes.create_string_buffer(_lib.RATE_STRLEN)
        _check("rl_format_rate", lib.rl_format_rate(
            ctypes.byref(self._c()), buf, len(buf)))
        return buf.value.decode()

    def _c(self) -> _lib.rl_config:
        return _lib.rl_config(
            rate=self.rate, period_ns=self.period_ns, burst=self.burst,
            flags=((_lib.CONFIG_UNLIMITED if self.unlimited else 0) |
                   (_lib.CONFIG_FED if self.fed else 0) |
                   (_lib.CONFIG_KEYED if self.keyed else 0) |
                   (_lib.CONFIG_FAIR_PER_USER if self.fair_per_user else 0)),
            catchup=self.catchup, concurrency=self.concurrency,
            backlog=self.backlog, fairness=self.fairness, keys=self.keys)

    @classmethod
    def _from(cls, c: _lib.rl_config) -> "Config":
        return cls(rate=int(c.rate), period_ns=int(c.period_ns),
                   burst=int(c.burst),
                   unlimited=bool(c.flags & _lib.CONFIG_UNLIMITED),
                   catchup=int(c.catchup), concurrency=int(c.concurrency),
                   backlog=int(c.backlog), fairness=int(c.fairness),
                   fed=bool(c.flags & _lib.CONFIG_FED),
                   keyed=bool(c.flags & _lib.CONFIG_KEYED),
                   keys=int(c.keys),
                   fair_per_user=bool(c.flags & _lib.CONFIG_FAIR_PER_USER))


# What every call that takes a Config takes: a Config or a rate string.
ConfigLike = Union[Config, str]


def to_config(config: ConfigLike) -> Config:
    """@config itself, or the Config of a rate string."""
    return Config.parse(config) if isinstance(config, str) else config


@dataclasses.dataclass(frozen=True)
class Grant:
    """What an acquire reports (struct rl_acquire's outputs).

    granted is False only from try_acquire(); then ready_ns is the
    predicted CLOCK_MONOTONIC time (time.monotonic_ns()) the request could
    be granted at, DEADLINE_NONE when the limiter is paused. A Grant is
    true when granted. A grant from the fd's reservation page (no system
    call; see libratelimit(3) rl_fast_map()) has wait_ns, ready_ns and
    lag_ns 0.
    """

    granted: bool
    count: int
    wait_ns: int = 0
    ready_ns: int = 0
    lag_ns: int = 0

    def __bool__(self) -> bool:
        return self.granted

    def retry_after(self, now_ns: Optional[int] = None) -> int:
        """Whole seconds from @now_ns (default: now) to ready_ns, rounded
        up and at least 1: an HTTP Retry-After for a refused request (a
        day for DEADLINE_NONE)."""
        if self.ready_ns == _lib.DEADLINE_NONE:
            return 86400
        now = time.monotonic_ns() if now_ns is None else now_ns
        return max(1, -(-(self.ready_ns - now) // 1_000_000_000))


def _key(key: Union[bytes, bytearray, memoryview, str]) -> bytes:
    """The bytes of a key: itself, or a str encoded UTF-8; ValueError
    unless 1 to KEY_MAX (64) bytes long."""
    if isinstance(key, str):
        b = key.encode()
    elif isinstance(key, (bytes, bytearray, memoryview)):
        b = bytes(key)
    else:
        raise TypeError(f"a key is bytes or str, not {type(key).__name__}")
    if not 1 <= len(b) <= _lib.KEY_MAX:
        raise ValueError(f"a key is 1 to {_lib.KEY_MAX} bytes, not {len(b)}")
    return b


# What every call that takes a key takes.
KeyLike = Union[bytes, bytearray, memoryview, str]


def _fields(cls: Any, c: Any) -> Any:
    return cls(**{f.name: int(getattr(c, f.name))
                  for f in dataclasses.fields(cls)})


@dataclasses.dataclass(frozen=True)
class Stats:
    """Counters of a limiter (struct rl_stats)."""

    granted: int
    requests: int
    immediate: int
    waited: int
    wait_ns_total: int
    wait_ns_max: int
    timeouts: int
    interrupted: int
    rejected: int
    waiters: int
    available: int
    held: int
    clients: int
    backlog: int
    refunded: int


@dataclasses.dataclass(frozen=True)
class Client:
    """This fd's place in its limiter (struct rl_client_config)."""

    priority: int
    weight: int
    cap: int
    held: int
    granted: int


@dataclasses.dataclass(frozen=True)
class Demand:
    """What the limiter's clients ask for (struct rl_demand): tokens asked
    and refused since creation, queued now, time with a sleeper, and the
    CLOCK_MONOTONIC time of the snapshot."""

    asked: int
    refused: int
    queued: int
    busy_ns: int
    now_ns: int


@dataclasses.dataclass(frozen=True)
class Parent:
    """The limiter's place in its tree (struct rl_parent): the parent's
    name ("" for a root), its weight there, its ancestors and children."""

    name: str
    weight: int
    depth: int
    children: int


@dataclasses.dataclass(frozen=True)
class Features:
    """What the loaded module supports (struct rl_features)."""

    version: int
    flags: int
    ioctls: int
    config_flags: int
    acquire_flags: int
    attach_flags: int

    def has_ioctl(self, name: str) -> bool:
        """Does the module know ioctl @name, e.g. "RL_IOC_REFUND"?"""
        return bool(self.ioctls >> _lib.IOCTL_NR[name] & 1)

    @property
    def queued(self) -> bool:
        """Has the module the queued acquire (RL_FEATURE_QUEUED)?"""
        return bool(self.flags & _lib.FEATURE_QUEUED)

    @property
    def fast(self) -> bool:
        """Has the module reservation pages (RL_FEATURE_FAST)?"""
        return bool(self.flags & _lib.FEATURE_FAST)

    @property
    def keyed(self) -> bool:
        """Has the module keyed limiters (RL_FEATURE_KEYED)?"""
        return bool(self.flags & _lib.FEATURE_KEYED)


@dataclasses.dataclass(frozen=True)
class KeyState:
    """One key of a keyed limiter (struct rl_key_state), read without
    creating it: the tokens its bucket holds (the burst for a key without
    state), the CLOCK_MONOTONIC time it is full again (0: full now), the
    requests sleeping on it, and whether the limiter keeps state for it."""

    key: bytes
    available: int
    full_ns: int
    waiters: int
    kept: bool


@dataclasses.dataclass(frozen=True)
class KeysStats:
    """The keys of a keyed limiter (struct rl_keys_stats), counts only:
    keys with state now and at most, keys given state and dropped (their
    buckets full) since creation, requests refused for want of room
    (ENOSPC), and requests sleeping now on all keys."""

    keys: int
    keys_max: int
    created: int
    evicted: int
    refused: int
    waiters: int
