"""Webhook delivery through the wire, to a receiver on 127.0.0.1 (tests/webhook_receiver.py), on both store
backends: each event arrives once with a valid signature, a receiver that fails three times still gets it once,
retries back off and give up, and neither the URL nor the secret is recorded or sent."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from vm_core.events import delivery
from vm_core.events.kinds import EventKind
from vm_core.events.model import Event
from vm_core.events.recording import announce
from vm_core.events.signing import verify
from vm_core.events.store import DeliveryState, EventLog
from vm_core.events.webhooks import Webhook
from vm_core.fleet.location import store_at
from webhook_receiver import Receiver

SECRET = "s3cr3t-signing-key-of-the-tests"
BODY_KEYS = {"id", "at", "actor", "kind", "fleet", "provider", "instance_id", "details", "text"}


@pytest.fixture(params=["sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], EventLog]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None

    def open_log() -> EventLog:
        store = store_at(url, tmp_path)
        assert isinstance(store, EventLog)
        return store

    return open_log


def record(log: EventLog, hook: Webhook, count: int = 2) -> list[Event]:
    return [log.add_event(Event(EventKind.CREATED, f"f{n}", "ana@lab", {"running": 2, "count": 2}),
                          [hook.target]) for n in range(count)]


def test_each_event_arrives_once_signed_and_without_the_secret(opener: Callable[[], EventLog]) -> None:
    log = opener()
    with Receiver() as receiver:
        hook = Webhook(receiver.url, SECRET)
        events = record(log, hook)
        done = delivery.deliver_pending(log, [hook], now=time.time())
        again = delivery.deliver_pending(log, [hook], now=time.time() + 3600)
    assert len(done.delivered) == 2 and not done.retrying and not again.delivered
    assert receiver.seen() == [e.id for e in events]
    for (headers, body), sent in zip(receiver.accepted(), events, strict=True):
        assert verify(SECRET, headers, body, now=time.time())
        stamp = headers["X-Vm-Timestamp"]  # the documented scheme, computed independently
        expected = hmac.new(SECRET.encode(), f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
        assert headers["X-Vm-Signature"] == f"v1={expected}" and headers["X-Vm-Event-Id"] == sent.id
        assert not verify("another secret", headers, body, now=time.time())
        assert not verify(SECRET, headers, body + b" ", now=time.time())
        assert not verify(SECRET, headers, body, now=time.time() + 3600)  # a replay an hour later
        document = json.loads(body)
        assert set(document) == BODY_KEYS and document["kind"] == "created" and document["at"].endswith("Z")
        assert document["text"] == f"fleet {sent.fleet} created: 2 of 2 VMs running (by ana@lab)"
        assert SECRET not in body.decode() and SECRET not in json.dumps(headers)
    states = [(d.state, d.attempts, d.last_error, d.target) for e in events for d in log.deliveries(e.id)]
    assert states == [(DeliveryState.DELIVERED, 1, "", hook.target)] * 2
    assert hook.target.startswith("wh-") and "127.0.0.1" not in hook.target and receiver.url not in repr(hook)


def test_a_receiver_failing_three_times_then_succeeding_gets_each_event_once(
        opener: Callable[[], EventLog]) -> None:
    log = opener()
    with Receiver(failures=3) as receiver:
        hook = Webhook(receiver.url, SECRET)
        (event,) = record(log, hook, count=1)
        start = event.at
        rounds = [delivery.deliver_pending(log, [hook], now=start + offset) for offset in (0, 0.5, 1, 2, 3, 6.9, 7, 8)]
    assert [(len(r.delivered), len(r.retrying)) for r in rounds] == [
        (0, 1), (0, 0), (0, 1), (0, 0), (0, 1), (0, 0), (1, 0), (0, 0)]  # retried after 1, 2 and 4 s
    assert [status for _, _, status in receiver.requests] == [500, 500, 500, 200]
    assert receiver.seen() == [event.id]
    attempts = [h["X-Vm-Delivery-Attempt"] for h, _, _ in receiver.requests]
    assert attempts == ["1", "2", "3", "4"]
    (settled,) = log.deliveries(event.id)
    assert settled.state is DeliveryState.DELIVERED and settled.attempts == 4


def test_a_receiver_that_never_succeeds_is_given_up_after_the_last_attempt(opener: Callable[[], EventLog]) -> None:
    log = opener()
    with Receiver(failures=100) as receiver:
        hook = Webhook(receiver.url, SECRET)
        (event,) = record(log, hook, count=1)
        now = time.time()
        for _ in range(delivery.MAX_ATTEMPTS + 2):
            delivery.deliver_pending(log, [hook], now=now)
            now += delivery.MAX_DELAY
    assert len(receiver.requests) == delivery.MAX_ATTEMPTS and receiver.seen() == []
    (given_up,) = log.deliveries(event.id)
    assert (given_up.state, given_up.attempts, given_up.last_error) == (DeliveryState.FAILED,
                                                                      delivery.MAX_ATTEMPTS, "HTTP 500")
    assert [delivery.retry_delay(n) for n in (1, 2, 3, 4, 12)] == [1, 2, 4, 8, delivery.MAX_DELAY]


def test_two_senders_at_once_deliver_each_event_once(opener: Callable[[], EventLog]) -> None:
    log = opener()
    with Receiver() as receiver:
        hook = Webhook(receiver.url, SECRET)
        events = record(log, hook, count=12)
        logs = [opener(), opener()]
        now = time.time()
        senders = [threading.Thread(target=delivery.deliver_pending, args=(each, [hook]), kwargs={"now": now})
                   for each in logs]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join(timeout=60)
    assert sorted(receiver.seen()) == sorted(e.id for e in events)


def test_an_unreachable_receiver_is_an_attempt_that_failed_named_without_its_url(
        opener: Callable[[], EventLog]) -> None:
    log = opener()
    with Receiver() as receiver:
        url = receiver.url
    hook = Webhook(url, SECRET)  # nothing listens there any more
    (event,) = record(log, hook, count=1)
    round_ = delivery.deliver_pending(log, [hook], now=time.time(), timeout=2)
    (retry,) = round_.retrying
    assert retry.last_error == "ConnectionError" and retry.attempts == 1
    assert log.deliveries(event.id)[0].state is DeliveryState.PENDING


def test_announce_records_and_sends_only_the_kinds_a_webhook_wants(opener: Callable[[], EventLog]) -> None:
    log = opener()
    warnings: list[str] = []
    with Receiver() as everything, Receiver() as some:
        hooks = [Webhook(everything.url, SECRET), Webhook(some.url, "other", frozenset({EventKind.DESTROYED}))]
        made = [Event(EventKind.CREATED, "t", "ana@lab"), Event(EventKind.DESTROYED, "t", "ana@lab")]
        recorded = announce(log, made, hooks, warn=warnings.append)
    assert [e.seq for e in recorded] == [1, 2] and warnings == []
    assert everything.seen() == [made[0].id, made[1].id] and some.seen() == [made[1].id]


def test_a_command_spends_at_most_its_bound_delivering_and_leaves_the_rest_pending(
        opener: Callable[[], EventLog]) -> None:
    log = opener()
    slow = threading.Event()

    def send(url: str, body: bytes, headers: object, timeout: float) -> int:
        slow.wait(timeout)  # a receiver that never answers in time
        raise TimeoutError("no answer")

    started = time.monotonic()
    hook = Webhook("https://hooks.example.invalid/T0/B0/xyz", SECRET)
    recorded = [log.add_event(Event(EventKind.SCALED, "t", "ana@lab"), [hook.target]) for _ in range(5)]
    done = delivery.deliver_pending(log, [hook], now=time.time(), send=send, deadline=time.monotonic() + 1.0,
                                    event_ids=[e.id for e in recorded])
    assert time.monotonic() - started < 2.5
    assert 1 <= len(done.retrying) < 5 and all(d.last_error == "TimeoutError" for d in done.retrying)
    assert all(d.state is DeliveryState.PENDING for e in recorded for d in log.deliveries(e.id))


def test_one_round_sends_more_than_one_batch(opener: Callable[[], EventLog], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(delivery, "BATCH", 3)  # batches of 3, so 8 events take three reads
    log = opener()
    with Receiver() as receiver:
        hook = Webhook(receiver.url, SECRET)
        events = record(log, hook, count=8)
        done = delivery.deliver_pending(log, [hook], now=time.time())
    assert len(done.delivered) == len(events) and receiver.seen() == [e.id for e in events]
