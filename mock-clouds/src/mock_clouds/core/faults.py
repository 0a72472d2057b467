"""Seeded fault injection for one provider: errors, failed operations, latency and dropped responses.

A dropped response is the dangerous case for clients: the action happens, but the client sees an error or a
broken connection and may believe nothing was done.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence
from typing import TypeVar

from .models import Faults

T = TypeVar("T")


class FaultInjector:
    def __init__(self, config: Faults) -> None:
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {"error": 0, "op_failure": 0, "drop": 0, "latency": 0}
        self.configure(config)

    def configure(self, config: Faults) -> None:
        """Replace the fault settings; the random sequence restarts from the new seed."""
        with self._lock:
            self.config = config
            self._rng = random.Random(config.seed)

    def _roll(self, rate: float, counter: str) -> bool:
        if rate <= 0:
            return False
        with self._lock:
            hit = self._rng.random() < rate
            if hit:
                self.counts[counter] += 1
            return hit

    def roll_error(self) -> bool:
        return self._roll(self.config.error_rate, "error")

    def roll_op_failure(self) -> bool:
        return self._roll(self.config.op_failure_rate, "op_failure")

    def roll_drop(self) -> bool:
        return self._roll(self.config.drop_rate, "drop")

    def pick(self, choices: Sequence[T]) -> T:
        with self._lock:
            return self._rng.choice(choices)

    def latency_seconds(self) -> float:
        ms = self.config.latency_ms
        if ms > 0:
            with self._lock:
                self.counts["latency"] += 1
        return ms / 1000.0
