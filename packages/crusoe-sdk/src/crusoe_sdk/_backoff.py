"""Backoff policies shared by request retries and operation polling (pure; the clock is injected).

Delays use "equal jitter": a random point in the upper half of the exponential step, so concurrent clients
spread out but a delay never collapses to zero. A server's Retry-After always wins over a shorter delay.
"""

from __future__ import annotations

import email.utils
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    """How reads and idempotent calls are retried on 429, 5xx and connection errors.

    `max_attempts` counts the first try (1 disables retries). A Retry-After longer than `max_retry_after`
    is not waited for: the RateLimited error is raised instead.
    """

    max_attempts: int = 4
    initial_backoff: float = 0.5
    max_backoff: float = 8.0
    multiplier: float = 2.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: float | None = None, rng: random.Random | None = None,
              ) -> float:
        """Seconds to sleep after failed attempt number `attempt` (1-based)."""
        step = jittered(self.initial_backoff * self.multiplier ** (attempt - 1), self.max_backoff, rng)
        return max(step, retry_after or 0.0)


@dataclass(frozen=True)
class PollPolicy:
    """How an Operation polls: intervals grow from `initial_interval` to `max_interval`.

    `default_timeout` is the deadline of `wait()`/`result()` when the caller passes none (30 minutes: Crusoe
    boots take minutes, an H100 boot can take longer than 10).
    """

    initial_interval: float = 1.0
    max_interval: float = 15.0
    multiplier: float = 1.5
    default_timeout: float = 1800.0

    def delay(self, poll: int, retry_after: float | None = None, rng: random.Random | None = None,
              ) -> float:
        """Seconds to sleep after poll number `poll` (1-based)."""
        step = jittered(self.initial_interval * self.multiplier ** (poll - 1), self.max_interval, rng)
        return max(step, retry_after or 0.0)


def jittered(step: float, ceiling: float, rng: random.Random | None = None) -> float:
    """A random delay in [step/2, step], with `step` capped at `ceiling`."""
    step = min(step, ceiling)
    return step * (0.5 + (rng or random).random() / 2)


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: either delta-seconds or an HTTP date. None when absent or unparseable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    import datetime as _dt

    return max(0.0, (moment - _dt.datetime.now(_dt.UTC)).total_seconds())
