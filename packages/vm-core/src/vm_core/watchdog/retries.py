"""When a maintained fleet that could not be brought back to its count is tried again: the next pass after a
first failure, then after twice as long each time (at most MAX_DELAY). This process keeps it in memory, keyed by
the fleet's id (a fleet recreated under the same name starts afresh); the `degraded` event of each failed try
records it for the other watchdogs of the store (details.next_try_at, details.tries), which wait for it too
(`recorded`), so several watchdogs try no more often than one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..fleet.store import FleetStore

MAX_DELAY = 3600.0  # seconds: the longest wait between two tries


@dataclass
class Retries:
    """Failures so far and the next try, per fleet id."""

    failures: dict[str, int] = field(default_factory=dict)
    next_at: dict[str, float] = field(default_factory=dict)

    def ready(self, fleet_id: str, now: float) -> bool:
        """Whether the fleet may be tried at `now`."""
        return self.next_at.get(fleet_id, 0.0) <= now

    def failed(self, fleet_id: str, now: float, interval: float, *, before: int = 0) -> float:
        """Count a failed try at `now` (after at least `before` failed ones: another watchdog's); returns when
        the next try is due: `interval`, 2x, 4x ... later."""
        failures = max(self.failures.get(fleet_id, 0), before) + 1
        self.failures[fleet_id] = failures
        at = now + min(interval * 2.0 ** (failures - 1), MAX_DELAY)
        self.next_at[fleet_id] = at
        return at

    def succeeded(self, fleet_id: str) -> None:
        self.failures.pop(fleet_id, None)
        self.next_at.pop(fleet_id, None)


def recorded(store: FleetStore, fleet: str, now: float) -> tuple[float, int]:
    """(when the fleet is tried again, failed tries so far) as the last watchdog `degraded` event of the fleet
    records them, when that event is the fleet's latest of the kinds that change its count and is from the last
    MAX_DELAY seconds; (0, 0) otherwise (or for a store without an event log)."""
    from ..events.kinds import EventKind
    from ..events.store import EventLog

    if not isinstance(store, EventLog):
        return 0.0, 0
    counted = (EventKind.CREATED, EventKind.SCALED, EventKind.REPLACED, EventKind.STARTED, EventKind.DEGRADED)
    events = [e for e in store.list_events(fleet=fleet, since=now - MAX_DELAY) if e.kind in counted]
    if not events or events[-1].kind is not EventKind.DEGRADED:
        return 0.0, 0
    details = events[-1].details
    at, tries = details.get("next_try_at"), details.get("tries")
    if not isinstance(at, (int, float)) or not isinstance(tries, int):
        return 0.0, 0
    return float(at), tries
