"""Retry and poll policies: exponential backoff with jitter (the shape shared by the three SDKs of this
repository, README "Operations, pagers, retries")."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Backoff:
    """Step n (1-based) is `initial * multiplier**(n-1)` capped at `maximum`; a random `jitter` fraction of it is
    taken off (`jitter=0`: no jitter).

    `Backoff(initial=1.0, maximum=15.0, multiplier=1.5, jitter=0)` gives 1, 1.5, 2.25, ... 15, 15 seconds.
    """

    initial: float = 1.0
    maximum: float = 15.0
    multiplier: float = 1.5
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if self.initial < 0 or self.maximum < self.initial or self.multiplier < 1 or not 0 <= self.jitter <= 1:
            raise ValueError(f"invalid backoff {self}")

    def delay(self, attempt: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """The delay after attempt (or poll) number `attempt` (1-based), jittered; a longer `retry_after` wins."""
        step = min(self.maximum, self.initial * self.multiplier ** max(attempt - 1, 0))
        return max(step * (1 - self.jitter * (rng or random).random()), retry_after or 0.0)


@dataclass(frozen=True, kw_only=True)
class RetryPolicy(Backoff):
    """How one call is retried. What is retried: Unavailable (UNAVAILABLE, DEADLINE_EXCEEDED), RateLimited,
    RequestNotSent and errors whose ServiceError says `retry_type: CALL`, for every call; mutating calls carry
    one idempotency key shared by all their attempts. `max_attempts` counts the first try (1 disables
    retries)."""

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
    """How an Operation polls, and `timeout`: the deadline of `wait()`/`result()` when the caller passes none
    (30 minutes: Nebius GPU VMs may take minutes to be scheduled). What is retried: a poll that fails
    transiently (as RetryPolicy) is polled again until the deadline."""

    timeout: float = 30 * 60.0
