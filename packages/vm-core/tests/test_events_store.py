"""The event log in the fleet store, on both backends: appended in `seq` order (also by concurrent processes),
read back filtered, and the deliveries of each event claimed by one sender at a time."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from vm_core.events.kinds import EventKind
from vm_core.events.model import Event
from vm_core.events.store import DeliveryState, EventLog
from vm_core.fleet.location import store_at


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str | None, Path]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    return url, tmp_path


@pytest.fixture
def opener(where: tuple[str | None, Path]) -> Callable[[], EventLog]:
    def open_log() -> EventLog:
        store = store_at(*where)
        assert isinstance(store, EventLog)
        return store

    return open_log


def event(kind: EventKind = EventKind.CREATED, fleet: str = "train", **changes: object) -> Event:
    return Event(kind, fleet, "ana@lab", **changes)  # type: ignore[arg-type]


def test_events_are_numbered_in_order_and_read_back_as_written(opener: Callable[[], EventLog]) -> None:
    log = opener()
    first = log.add_event(event(details={"running": 4, "count": 4}, at=1000.0))
    second = log.add_event(event(EventKind.DESTROY_REFUSED, provider="lambda", instance_id="i-1", at=2000.0))
    third = log.add_event(event(EventKind.SCALED, fleet="other", at=3000.0))
    assert [first.seq, second.seq, third.seq] == [1, 2, 3]
    again = opener().list_events()
    assert again == [first, second, third]
    assert again[0].details == {"running": 4, "count": 4} and again[1].instance_id == "i-1"
    assert [e.seq for e in log.list_events(fleet="train")] == [1, 2]
    assert [e.seq for e in log.list_events(since=2000.0)] == [2, 3]
    assert [e.seq for e in log.list_events(after=1)] == [2, 3]
    assert [e.seq for e in log.list_events(fleet="train", after=1, since=0)] == [2]
    assert [e.seq for e in log.list_events(limit=1)] == [1]


APPEND = """
import sys
from vm_core.events.kinds import EventKind
from vm_core.events.model import Event
from vm_core.fleet.location import store_at
from pathlib import Path
store = store_at(sys.argv[1] or None, Path(sys.argv[2]))
for n in range(int(sys.argv[3])):
    store.add_event(Event(EventKind.SCALED, "race", sys.argv[4], {"n": n}))
"""


def test_concurrent_processes_append_without_a_gap_or_a_repeated_seq(where: tuple[str | None, Path],
                                                                     opener: Callable[[], EventLog]) -> None:
    opener()  # the store exists before the writers race
    url, state_dir = where
    writers = [subprocess.Popen([sys.executable, "-c", APPEND, url or "", str(state_dir), "15", f"w{n}"])
               for n in range(3)]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0]
    events = opener().list_events()
    assert [e.seq for e in events] == list(range(1, 46))
    for n in range(3):  # each writer's events in the order it wrote them
        assert [e.details["n"] for e in events if e.actor == f"w{n}"] == list(range(15))


def test_an_event_of_a_kind_this_vm_does_not_know_is_left_out(where: tuple[str | None, Path],
                                                              opener: Callable[[], EventLog]) -> None:
    log = opener()
    log.add_event(event())
    with log._write() as db:  # a newer vm's kind
        db.execute("INSERT INTO events (id, seq, at, actor, kind, fleet, provider, instance_id, details) "
                   "VALUES ('x', 2, 1.0, 'a', 'teleported', 'train', '', '', '{}')")
    log.add_event(event(EventKind.DESTROYED))
    assert [(e.seq, e.kind) for e in log.list_events()] == [(1, EventKind.CREATED), (3, EventKind.DESTROYED)]


def test_a_delivery_is_recorded_with_its_event_once_and_claimed_by_one_sender(
        opener: Callable[[], EventLog]) -> None:
    log = opener()
    recorded = log.add_event(event(at=50.0), ["wh-a", "wh-b"])
    log.enqueue([recorded.id], ["wh-a", "wh-c"], now=60.0)  # wh-a exists: left as it is
    assert [(d.target, d.state, d.attempts, d.next_attempt_at) for d in log.deliveries(recorded.id)] == [
        ("wh-a", DeliveryState.PENDING, 0, 50.0), ("wh-b", DeliveryState.PENDING, 0, 50.0),
        ("wh-c", DeliveryState.PENDING, 0, 60.0)]
    assert log.due_deliveries(["wh-a", "wh-c"], now=55.0) == [log.deliveries(recorded.id)[0]]
    due = log.due_deliveries(["wh-a"], now=55.0)[0]
    other = opener()
    assert log.claim_delivery(due, until=115.0) is True
    assert other.claim_delivery(due, until=115.0) is False  # the same row, read before the claim: taken
    assert log.due_deliveries(["wh-a"], now=100.0) == []
    log.settle_delivery(recorded.id, "wh-a", state=DeliveryState.DELIVERED, attempts=1, next_attempt_at=56.0)
    assert log.due_deliveries(["wh-a"], now=1e12) == []
    assert [d.state for d in other.deliveries(recorded.id)] == [DeliveryState.DELIVERED, DeliveryState.PENDING,
                                                                DeliveryState.PENDING]
