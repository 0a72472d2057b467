"""`vm events` in the Python API: the request, the report, and the reading behind Client.events and
Client.events_followed (the event log: vm_core/events, docs/events.md).

`since` is written as on the command line: an ISO 8601 date or date and time (`2026-12-01`,
`2026-12-01T09:30`, `2026-12-01T09:30:00+02:00`; without an offset, UTC) or a duration back from now (`90s`,
`30m`, `1h`, `2d`, `1h30m`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .outcome import Outcome

if TYPE_CHECKING:
    from ..events.model import Event
    from .client import Client

_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class EventsRequest:
    """`vm events`: the recorded events in order, of one fleet (`fleet`), since a time (`since`, see the
    module), after a sequence number (`after`: only events with a greater `seq`)."""

    fleet: str | None = None
    since: str | None = None
    after: int | None = None


@dataclass
class EventList(Outcome):
    """Events in `seq` order; `to_json()` is one object per event (`vm events -o json` prints each on a line)."""

    events: list[Event] = field(default_factory=list)

    def to_json(self) -> list[dict[str, Any]]:
        return [event.to_json() for event in self.events]


def since_time(text: str, now: float) -> float:
    """Epoch seconds of a `since` (see the module) at `now`; UsageError for anything else."""
    value = text.strip()
    if value and _DURATION.sub("", value) == "" and _DURATION.match(value):
        return now - sum(float(n) * _UNIT[unit] for n, unit in _DURATION.findall(value))
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        raise UsageError(f"--since {text!r} is neither a date/time (2026-12-01T09:30, UTC unless an offset is given) "
                         "nor a duration (90s, 30m, 1h, 2d, 1h30m)") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def event_lists(client: Client, request: EventsRequest) -> Iterator[EventList]:
    """The events of `request`, then at each `next()` those recorded since (by `seq`), over one store handle.
    An empty list while no store exists yet (the local SQLite file is created by the first fleet)."""
    from ..events.store import EventLog
    from ..fleet.location import existing_store

    since = None if request.since is None else since_time(request.since, client.session.clock())
    after = request.after
    store = None
    while True:
        store = store or existing_store(client.session)
        found: list[Event] = store.list_events(fleet=request.fleet, since=since, after=after) \
            if isinstance(store, EventLog) else []
        if found:
            after = found[-1].seq
        yield EventList(events=found)
