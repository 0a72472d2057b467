"""The one-line sentence of an event (vm_core.events.text), for events recorded now and before schema 8."""

from __future__ import annotations

from vm_core.events.model import Event, EventKind
from vm_core.events.text import sentence


def test_a_created_event_says_how_many_of_its_count_run() -> None:
    made = Event(EventKind.CREATED, "train", "ana@lab", {"state": "degraded", "count": 4, "running": 3})
    assert sentence(made) == "fleet train created: 3 of 4 VMs running, degraded (by ana@lab)"


def test_an_event_recorded_before_the_count_was_named_count_reads_the_same() -> None:
    old = Event(EventKind.CREATED, "train", "ana@lab", {"state": "active", "requested_count": 4, "running": 4})
    assert sentence(old) == "fleet train created: 4 of 4 VMs running (by ana@lab)"
