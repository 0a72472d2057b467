"""Backoff policies of request retries and operation polling (pure; the clock is injected).

Delays use "equal jitter" by default: a random point in the upper half of the exponential step, so concurrent
clients spread out but a delay never collapses to zero. A server's Retry-After always wins over a shorter delay.
"""

from __future__ import annotations

import email.utils
import random
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Backoff:
    """Exponential backoff: step n (1-based) is `initial * multiplier**(n-1)` capped at `maximum`; a random
    `jitter` fraction of it is taken off (`jitter=0.5`: equal jitter, `0`: none)."""

    initial: float
    maximum: float
    multiplier: float
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.initial < 0 or self.maximum < self.initial or self.multiplier < 1 or not 0 <= self.jitter <= 1:
            raise ValueError(f"invalid backoff {self}")

    def delay(self, attempt: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds to sleep after attempt (or poll) number `attempt` (1-based); a longer Retry-After wins."""
        step = min(self.maximum, self.initial * self.multiplier ** (attempt - 1))
        return max(step * (1 - self.jitter * (rng or random).random()), retry_after or 0.0)


@dataclass(frozen=True, kw_only=True)
class RetryPolicy(Backoff):
    """How one request is retried (the shape shared by the three SDKs: README "Operations, pagers, retries").

    What is retried: reads and deletes (GET, DELETE) on 429, 5xx but 501, and lost connections; creates and
    actions (POST, PATCH) only when the request was never sent. `max_attempts` counts the first try (1 disables
    retries). A Retry-After longer than `max_retry_after` is not waited for: the RateLimited error is raised.
    """

    max_attempts: int = 4
    initial: float = 0.5
    maximum: float = 8.0
    multiplier: float = 2.0
    max_retry_after: float = 60.0


@dataclass(frozen=True, kw_only=True)
class PollPolicy(Backoff):
    """How an Operation polls, and `timeout`: the deadline of `wait()`/`result()` when the caller passes none
    (30 minutes: Crusoe boots take minutes, an H100 boot can take longer than 10).

    What is retried: a poll that fails with 429, a 5xx or a lost connection is polled again until the deadline.
    """

    initial: float = 1.0
    maximum: float = 15.0
    multiplier: float = 1.5
    timeout: float = 1800.0


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
