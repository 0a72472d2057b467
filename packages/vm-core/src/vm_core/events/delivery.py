"""Webhook delivery: at least once, deduplicated by event id, retried with exponential backoff.

Each pending delivery (store.py) due now is claimed, then POSTed once: the event's body (model.py) with its
signature headers (signing.py) and `X-Vm-Event-Id`. A 2xx answer marks it delivered, and it is never sent again;
anything else (another status, a connection error, a timeout) is an attempt that failed: the next one is due
1, 2, 4, ... seconds later (at most MAX_DELAY), and after MAX_ATTEMPTS the delivery is recorded `failed`. A
receiver may still see an event twice (its 2xx was lost, or a sender died between sending and recording): it
keeps the ids it has seen, which is what the id is for.

`deliver_pending` is the one entry point: the watchdog calls it every round; a command run by a person calls it
once at its end for the events it recorded, bounded to about two seconds (recording.py), leaving what is not
delivered pending for the watchdog.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from .signing import signed_headers
from .store import Delivery, DeliveryState, EventLog
from .webhooks import Webhook

MAX_ATTEMPTS = 8  # attempts of one delivery before it is recorded failed
FIRST_DELAY = 1.0  # seconds from the first failed attempt to the second; doubled after each failure
MAX_DELAY = 300.0  # the longest wait between two attempts
CLAIM_SECONDS = 60.0  # how long a claimed delivery is not due for other senders (longer than any request)
REQUEST_TIMEOUT = 10.0  # seconds one request may take
BATCH, MAX_BATCHES = 100, 100  # due deliveries read at a time, and at most this many reads in one round

# send(url, body, headers, timeout) -> the HTTP status the receiver answered; raises when there was no answer
Send = Callable[[str, bytes, Mapping[str, str], float], int]


@dataclass
class DeliveryRound:
    """What one call of deliver_pending did: the deliveries now delivered, to be retried, and given up."""

    delivered: list[Delivery] = field(default_factory=list)
    retrying: list[Delivery] = field(default_factory=list)
    failed: list[Delivery] = field(default_factory=list)


def post(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> int:
    """POST `body` with `headers` to `url` (no redirect followed) and return the answer's status."""
    import requests

    return requests.post(url, data=body, headers=dict(headers), timeout=timeout, allow_redirects=False).status_code


def retry_delay(attempts: int) -> float:
    """Seconds until the next attempt after `attempts` failed ones: 1, 2, 4, ... at most MAX_DELAY."""
    return float(min(FIRST_DELAY * 2 ** max(attempts - 1, 0), MAX_DELAY))


def deliver_pending(store: EventLog, targets: Sequence[Webhook], *, now: float, send: Send = post,
                    event_ids: Collection[str] | None = None, deadline: float | None = None,
                    timeout: float = REQUEST_TIMEOUT) -> DeliveryRound:
    """Send every pending delivery to one of `targets` that is due at `now` (epoch seconds; of `event_ids` only,
    when given; at most BATCH * MAX_BATCHES), each once, oldest event first; deliveries to other targets are left
    to whoever has their webhook. `deadline` (time.monotonic() seconds) stops the round early: what is not sent
    stays pending, as it was. Each request may take `timeout` seconds (less near the deadline). Never raises for
    a receiver's failure: it is recorded in the delivery (`last_error`: the status or the error's class, never the
    URL or secret); a store error propagates. The signature's timestamp is this machine's clock when sending."""
    hooks = {hook.target: hook for hook in reversed(targets)}  # one per target: the first one listed wins
    done = DeliveryRound()
    for _ in range(MAX_BATCHES):
        batch = store.due_deliveries(list(hooks), now=now, event_ids=event_ids, limit=BATCH)
        for delivery in batch:
            left = timeout if deadline is None else min(timeout, deadline - time.monotonic())
            if left <= 0.05:
                return done
            if not store.claim_delivery(delivery, until=now + CLAIM_SECONDS):
                continue  # another sender has it
            _settle(store, delivery, _attempt(hooks[delivery.target], delivery, send, left), now, done)
        if len(batch) < BATCH:
            break
    return done


def _attempt(hook: Webhook, delivery: Delivery, send: Send, timeout: float) -> str:
    """One request; "" when the receiver answered 2xx, else what went wrong (no URL, no secret)."""
    body = delivery.event.encoded()
    headers = {"Content-Type": "application/json", "User-Agent": "vm-events",
               "X-Vm-Event-Id": delivery.event.id, "X-Vm-Delivery-Attempt": str(delivery.attempts + 1),
               **signed_headers(hook.secret, int(time.time()), body)}
    try:
        status = send(hook.url, body, headers, timeout)
    except Exception as exc:  # noqa: BLE001 - any failure to get an answer is a failed attempt, retried
        return type(exc).__name__
    return "" if 200 <= status < 300 else f"HTTP {status}"


def _settle(store: EventLog, delivery: Delivery, error: str, now: float, done: DeliveryRound) -> None:
    attempts = delivery.attempts + 1
    if not error:
        state, due, into = DeliveryState.DELIVERED, now, done.delivered
    elif attempts >= MAX_ATTEMPTS:
        state, due, into = DeliveryState.FAILED, now, done.failed
    else:
        state, due, into = DeliveryState.PENDING, now + retry_delay(attempts), done.retrying
    store.settle_delivery(delivery.event.id, delivery.target, state=state, attempts=attempts, next_attempt_at=due,
                          last_error=error)
    into.append(Delivery(delivery.event, delivery.target, state, attempts, due, error))
