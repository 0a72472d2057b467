"""Exponential backoff with jitter, shared by call retries and operation polling."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Delays `initial * multiplier**n`, capped at `maximum`, each scaled by a random factor in
    [1-jitter, 1+jitter].

    `Backoff(initial=1.0, maximum=15.0)` gives about 1, 1.5, 2.25, ... 15, 15 seconds.
    """

    initial: float = 1.0
    maximum: float = 15.0
    multiplier: float = 1.5
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if self.initial < 0 or self.maximum < self.initial or self.multiplier < 1 or not 0 <= self.jitter < 1:
            raise ValueError(f"invalid backoff {self}")

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """The delay before retry number `attempt` (0-based), jittered."""
        base = min(self.maximum, self.initial * self.multiplier**attempt)
        factor = (rng or random).uniform(1 - self.jitter, 1 + self.jitter)
        return base * factor

    def delays(self, rng: random.Random | None = None) -> Iterator[float]:
        """An endless sequence of jittered delays."""
        attempt = 0
        while True:
            yield self.delay(attempt, rng)
            attempt += 1
