"""The human sentence of an event (the `text` of its webhook body and of `vm events`): who did what to which
fleet, from the kind and the details documented per kind in docs/events.md. A detail that is absent is left out
of the sentence, never an error: events are recorded by several versions of vm."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .kinds import EventKind

if TYPE_CHECKING:
    from .model import Event


def sentence(event: Event) -> str:
    """`event` in words, e.g. "fleet train created: 4 of 4 VMs running (by ana@lab)"."""
    say = _SENTENCES.get(event.kind)
    words = say(event, event.details) if say is not None else f"fleet {event.fleet}: {event.kind.value}"
    if not event.actor:
        return words
    return f"{words} ({'seen by' if event.kind in _SEEN else 'by'} {event.actor})"


# Kinds the actor did not cause but found: "(seen by ...)" rather than "(by ...)".
_SEEN = frozenset({EventKind.MEMBER_PREEMPTED, EventKind.DEGRADED, EventKind.BUDGET_WARNING,
                   EventKind.BUDGET_REACHED, EventKind.DESTROY_REFUSED})


def _vm(event: Event) -> str:
    return f"VM {event.instance_id} ({event.provider})" if event.instance_id else "a VM"


def _count(details: dict[str, Any], key: str) -> str:
    value = details.get(key)
    return f" {value}" if isinstance(value, int) else ""


def _created(e: Event, d: dict[str, Any]) -> str:
    running, count = d.get("running"), d.get("count", d.get("requested_count"))  # the key before schema 8
    counts = f": {running} of {count} VMs running" if running is not None and count is not None else ""
    state = d.get("state")
    return f"fleet {e.fleet} created{counts}" + (f", {state}" if state and state != "active" else "")


def _scaled(e: Event, d: dict[str, Any]) -> str:
    before, after = d.get("from"), d.get("to")
    return f"fleet {e.fleet} scaled" + (f" from {before} to {after} VMs" if before is not None else "")


def _replaced(e: Event, d: dict[str, Any]) -> str:
    return f"fleet {e.fleet}:{_count(d, 'replaced') or ' missing'} VM(s) replaced"


def _budget(e: Event, d: dict[str, Any], what: str) -> str:
    spent, budget = d.get("spent"), d.get("budget")
    money = f": ${spent:.2f} of ${budget:.2f}" if isinstance(spent, (int, float)) and \
        isinstance(budget, (int, float)) else ""
    return f"fleet {e.fleet} {what}{money}"


def _refused(e: Event, d: dict[str, Any]) -> str:
    reason = d.get("reason")
    vm = f"VM {e.instance_id}" if e.instance_id else "a VM"
    return f"{e.provider or 'the cloud'} refused to destroy {vm} of fleet {e.fleet}; it still runs" + \
        (f": {reason}" if reason else "")


def _lease(e: Event, d: dict[str, Any]) -> str:
    previous = d.get("previous")
    return f"fleet {e.fleet}: its lease was taken over" + (f" from {previous}" if previous else "") + \
        (f" for {d['operation']}" if d.get("operation") else "")


def _degraded(e: Event, d: dict[str, Any]) -> str:
    message = d.get("message")
    return f"fleet {e.fleet} is degraded" + (f": {message}" if message else "")


_SENTENCES: dict[EventKind, Callable[[Event, dict[str, Any]], str]] = {
    EventKind.CREATED: _created,
    EventKind.SCALED: _scaled,
    EventKind.MEMBER_PREEMPTED: lambda e, d: f"{_vm(e)} of fleet {e.fleet} was preempted",
    EventKind.REPLACED: _replaced,
    EventKind.STOPPED: lambda e, d: f"fleet {e.fleet} stopped",
    EventKind.STARTED: lambda e, d: f"fleet {e.fleet} started",
    EventKind.REAPED: lambda e, d: f"fleet {e.fleet} reaped: its time to live had passed",
    EventKind.BUDGET_WARNING: lambda e, d: _budget(e, d, "is nearing its budget"),
    EventKind.BUDGET_REACHED: lambda e, d: _budget(e, d, "reached its budget"),
    EventKind.DESTROY_REFUSED: _refused,
    EventKind.LEASE_TAKEN_OVER: _lease,
    EventKind.DESTROYED: lambda e, d: f"fleet {e.fleet} destroyed",
    EventKind.DEGRADED: _degraded,
}
