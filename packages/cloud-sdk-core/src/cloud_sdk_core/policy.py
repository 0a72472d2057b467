"""Retry and poll policies: exponential backoff with jitter, and the server's Retry-After (pure; callers sleep).
Each SDK subclasses RetryPolicy and PollPolicy with its defaults; its RetryPolicy docstring says what it retries.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Backoff:
    """Exponential backoff: step n (1-based) is `initial * multiplier**(n-1)` capped at `maximum`; a random
    `jitter` fraction of it is taken off (`0.5`: "equal jitter", half fixed and half random, so concurrent clients
    spread out but a delay never collapses to zero; `0`: none). `Backoff(initial=1.0, maximum=15.0,
    multiplier=1.5, jitter=0)` gives 1, 1.5, 2.25, ... 15, 15 seconds. Nonsense raises ValueError."""

    initial: float = 1.0
    maximum: float = 15.0
    multiplier: float = 1.5
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if self.initial < 0 or self.maximum < self.initial or self.multiplier < 1 or not 0 <= self.jitter <= 1:
            raise ValueError(f"invalid backoff {self}")

    def delay(self, attempt: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds to sleep after attempt (or poll) number `attempt` (1-based); a longer `retry_after` wins."""
        step = min(self.maximum, self.initial * self.multiplier ** max(attempt - 1, 0))
        return max(step * (1 - self.jitter * (rng or random).random()), retry_after or 0.0)


@dataclass(frozen=True, kw_only=True)
class RetryPolicy(Backoff):
    """How one call is retried. `max_attempts` counts the first try (1 disables retries; below 1 is refused)."""

    max_attempts: int = 4
    initial: float = 0.5
    maximum: float = 8.0
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1: {self}")


@dataclass(frozen=True, kw_only=True)
class PollPolicy(Backoff):
    """How an operation polls, and `timeout`: the deadline of `wait()`/`result()` when the caller passes none (30
    minutes in every SDK: GPU VMs may take many minutes to be scheduled and to boot). What is retried: a poll
    that fails with an error the SDK's operation calls transient is polled again until the deadline."""

    timeout: float = 1800.0


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a Retry-After value (delta-seconds, fractions allowed, or an HTTP date, counted from `now`,
    default the current time), never negative; None when absent or unparseable."""
    if not value:
        return None
    try:
        return max(float(value.strip()), 0.0)
    except ValueError:
        return _seconds_until(value.strip(), time.time() if now is None else now)


def _seconds_until(http_date: str, now: float) -> float | None:
    """Seconds from `now` until an HTTP date, never negative; None when it is not one."""
    import email.utils  # only for the rare HTTP-date form: keeps importing the SDKs cheap

    try:
        when = email.utils.parsedate_to_datetime(http_date)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - now, 0.0)
