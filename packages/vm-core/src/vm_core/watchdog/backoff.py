"""When a maintained fleet that could not be brought back to its count is tried again: the next pass after a
first failure, then after twice as long each time (at most MAX_DELAY), in this process's memory, keyed by the
fleet's id (a fleet recreated under the same name starts afresh). Another watchdog process keeps its own; the
`degraded` event of each failed try says when this one tries next (details.next_try_at)."""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_DELAY = 3600.0  # seconds: the longest wait between two tries


@dataclass
class Backoff:
    """Failures so far and the next try, per fleet id."""

    failures: dict[str, int] = field(default_factory=dict)
    next_at: dict[str, float] = field(default_factory=dict)

    def ready(self, fleet_id: str, now: float) -> bool:
        """Whether the fleet may be tried at `now`."""
        return self.next_at.get(fleet_id, 0.0) <= now

    def failed(self, fleet_id: str, now: float, interval: float) -> float:
        """Count a failed try at `now`; returns when the next try is due: `interval`, 2x, 4x ... later."""
        failures = self.failures.get(fleet_id, 0) + 1
        self.failures[fleet_id] = failures
        at = now + min(interval * 2.0 ** (failures - 1), MAX_DELAY)
        self.next_at[fleet_id] = at
        return at

    def succeeded(self, fleet_id: str) -> None:
        self.failures.pop(fleet_id, None)
        self.next_at.pop(fleet_id, None)
