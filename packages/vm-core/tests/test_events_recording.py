"""What the verbs record, on both store backends: a lease taken over is an event, held in the process until the
next announce (which knows the webhooks) delivers it; a store that cannot record warns and fails nothing."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from vm_core.events.kinds import EventKind
from vm_core.events.model import Event
from vm_core.events.recording import announce
from vm_core.events.store import EventLog
from vm_core.events.webhooks import Webhook
from vm_core.fleet.lease import lease
from vm_core.fleet.location import store_at
from vm_core.fleet.store import FleetStore
from webhook_receiver import Receiver


@pytest.fixture(params=["sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], FleetStore]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    return lambda: store_at(url, tmp_path)


def test_a_lease_taken_over_is_recorded_and_sent_with_the_next_announce(opener: Callable[[], FleetStore]) -> None:
    store = opener()
    assert isinstance(store, EventLog)
    store.acquire_lease("train", "bob@gone:41", "fleet create", 0.05)  # a holder that died: it renews no more
    time.sleep(0.2)  # its lease lapses (the store's clock)
    with lease(store, "train", "fleet destroy") as held:
        assert held.previous == "bob@gone:41"
    (taken,) = store.list_events(fleet="train")
    assert taken.kind is EventKind.LEASE_TAKEN_OVER and taken.details["previous"] == "bob@gone:41"
    assert taken.details["operation"] == "fleet destroy" and "@" in taken.actor
    assert store.deliveries(taken.id) == []  # no webhook known yet
    warnings: list[str] = []
    with Receiver() as receiver:
        hook = Webhook(receiver.url, "k")
        announce(store, [Event(EventKind.DESTROYED, "train", "ana@lab")], [hook], warn=warnings.append)
    assert receiver.seen()[0] == taken.id and len(receiver.seen()) == 2 and warnings == []


def test_a_store_that_cannot_record_is_a_warning_without_the_webhook_url(opener: Callable[[], FleetStore]) -> None:
    store = opener()
    assert isinstance(store, EventLog)
    with store._write() as db:  # a store whose event log is gone (a role without its grants fails alike)
        db.execute("DROP TABLE events")
    warnings: list[str] = []
    hook = Webhook("https://hooks.example.invalid/T/B/secret-path", "secret-key")
    recorded = announce(store, [Event(EventKind.CREATED, "train", "ana@lab")], [hook], warn=warnings.append)
    assert recorded == [] and len(warnings) == 1 and "not all recorded" in warnings[0]
    assert "secret-path" not in warnings[0] and "secret-key" not in warnings[0]
