"""Token buckets keyed by (provider, credential owner, bucket name)."""

from __future__ import annotations

import threading
import time


class RateLimiter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str, str], tuple[float, float]] = {}  # key -> (tokens, stamp)

    def acquire(self, key: tuple[str, str, str], *, interval: float, burst: int) -> float:
        """Take one token. Returns 0.0 when granted, else the seconds until a token is available.

        `interval` is the seconds per token (0 disables the bucket); `burst` is the bucket size.
        """
        if interval <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            tokens, stamp = self._buckets.get(key, (float(burst), now))
            tokens = min(float(burst), tokens + (now - stamp) / interval)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) * interval
