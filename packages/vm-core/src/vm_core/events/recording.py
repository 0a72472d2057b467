"""Recording the events of a verb, and delivering them at its end: what a command run by a person does.

`announce` is called once by each fleet verb that changed something (vm_core/api/fleets.py), after its result is
known. It never fails the verb: a store that cannot record is a warning. The profile's webhooks that want an
event get a pending delivery of it in the same transaction, and are sent it right away, the whole attempt bounded
to PERSON_SECONDS; what is not delivered by then stays pending for the watchdog (delivery.deliver_pending).

A lease taken over deep inside a verb (fleet/lease.py) is recorded by `lease_taken_over`, which knows no
webhooks: the event waits in this process until the verb's `announce`, which has them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .kinds import EventKind
from .model import Event
from .store import EventLog

if TYPE_CHECKING:
    from ..fleet.store import Lease
    from .webhooks import Webhook

PERSON_SECONDS = 2.0  # how long a command run by a person spends delivering its own events
_log = logging.getLogger("vm_core.events")
# Recorded here with no webhook known yet (a lease taken over), by the location of their store.
_unannounced: list[tuple[str, Event]] = []


def announce(store: object, events: Sequence[Event], webhooks: Sequence[Webhook], *,
             warn: Callable[[str], None], seconds: float = PERSON_SECONDS) -> list[Event]:
    """Record `events` (each with a pending delivery to every webhook that wants its kind), then try to
    deliver them, and any event this process recorded earlier without webhooks, for at most `seconds`. Returns
    the events recorded (numbered). Never raises: a store without an event log records nothing; a store error
    is said through `warn` (without any URL or secret)."""
    if not isinstance(store, EventLog):
        return []
    recorded: list[Event] = []
    earlier: list[Event] = []
    try:
        for event in events:
            recorded.append(store.add_event(event, [h.target for h in webhooks if h.wants(event.kind)]))
        earlier = [event for where, event in _unannounced if where == store.location]
        for event in earlier:
            store.enqueue([event.id], [h.target for h in webhooks if h.wants(event.kind)], now=event.at)
        _unannounced[:] = [(where, event) for where, event in _unannounced if where != store.location]
    except Exception as exc:  # noqa: BLE001 - recording must never fail the verb that acted
        warn(f"the events of this command were not all recorded in the fleet store: {type(exc).__name__}")
        _log.debug("recording events failed", exc_info=True)
    if webhooks and (recorded or earlier):
        _deliver(store, webhooks, [e.id for e in [*recorded, *earlier]], seconds, warn)
    return recorded


def _deliver(store: EventLog, webhooks: Sequence[Webhook], ids: list[str], seconds: float,
             warn: Callable[[str], None]) -> None:
    from .delivery import deliver_pending

    try:
        done = deliver_pending(store, webhooks, now=time.time(), event_ids=ids, timeout=seconds,
                               deadline=time.monotonic() + seconds)
    except Exception as exc:  # noqa: BLE001 - the deliveries stay pending for the watchdog
        warn(f"events were recorded but not sent to the webhooks: {type(exc).__name__}")
        return
    if done.retrying or done.failed:
        warn(f"{len(done.retrying) + len(done.failed)} webhook delivery(ies) did not succeed "
             f"({', '.join(sorted({d.last_error for d in done.retrying + done.failed}))}); "
             "the watchdog retries them")


def lease_taken_over(store: object, lease: Lease, actor: str) -> None:
    """Record that `lease` (just acquired by `actor`) took over its previous holder's. Never raises."""
    if not isinstance(store, EventLog) or not lease.previous:
        return
    event = Event(EventKind.LEASE_TAKEN_OVER, lease.fleet, actor,
                  {"previous": lease.previous, "holder": lease.holder, "operation": lease.operation})
    try:
        _unannounced.append((store.location, store.add_event(event)))
    except Exception:  # noqa: BLE001 - the lease is taken either way; the event is only history
        _log.debug("recording a lease taken over failed", exc_info=True)
