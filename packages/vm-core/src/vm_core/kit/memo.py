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
            found = self._young(key)
            return found[1] if found is not None else self._computed(key)

    def remembered(self, key: K) -> tuple[V] | None:
        """`(value,)` while the remembered value is young enough, else None; computes nothing."""
        with self._lock:
            found = self._young(key)
            return None if found is None else (found[1],)

    def fresh(self, key: K) -> V:
        """`compute(key)` now, remembered in place of any earlier value."""
        with self._lock:
            return self._computed(key)

    def forget(self, key: K) -> None:
        """The next call computes again."""
        with self._lock:
            self._values.pop(key, None)

    def _young(self, key: K) -> tuple[float, V] | None:
        found = self._values.get(key)
        if found is None or (self._ttl is not None and self._clock() - found[0] >= self._ttl):
            return None
        return found

    def _computed(self, key: K) -> V:
        value = self._compute(key)
        self._values[key] = (self._clock(), value)
        return value
