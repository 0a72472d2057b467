"""Lookups made once (or once per time-to-live) per key, one at a time: what a provider reads or registers in its
cloud and may then reuse (regions, platforms, account keys)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """`memo(key)` is `compute(key)`, remembered for `ttl` seconds after it was computed (None: for good). Calls
    run one at a time, so concurrent callers wait for the one computing instead of computing it again. A
    `compute` that raises remembers nothing."""

    def __init__(self, compute: Callable[[K], V], *, ttl: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._compute = compute
        self._ttl = ttl
        self._clock = clock
        self._values: dict[K, tuple[float, V]] = {}
        self._lock = threading.Lock()

    def __call__(self, key: K) -> V:
        with self._lock:
            found = self._values.get(key)
            if found is None or (self._ttl is not None and self._clock() - found[0] >= self._ttl):
                value = self._compute(key)
                found = self._values[key] = (self._clock(), value)
            return found[1]
