"""The events of the fleet verbs a person runs (vm_core/api/fleets.py), made from their reports, and `tell`,
which records and delivers them through the session's profile (recording.announce).

What each verb records (details per kind: docs/events.md):

    fleet create    created (any end state), and degraded when it ended below its requested count
    fleet scale     scaled (not for a dry run, nor when nothing changed)
    fleet repair    replaced when it placed VMs, degraded when the fleet is still short
    fleet destroy   destroyed once forgotten; destroy_refused for each VM its cloud refuses to delete
    fleet reap      reaped for each fleet destroyed; destroy_refused as destroy
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..fleet.report import Action, Verb
from ..fleet.store import FleetState
from .kinds import EventKind
from .model import Event

if TYPE_CHECKING:
    from ..fleet.create import CreateReport
    from ..fleet.destroy import DestroyReport
    from ..fleet.reap import Outcome
    from ..fleet.scale import ScaleReport
    from ..session import Session


def tell(session: Session, store: object, make: Callable[[str], Sequence[Event]],
         warn: Callable[[str], None]) -> None:
    """Record the events `make(actor)` returns (`actor`: `user@host`, or `watchdog user@host` in the watchdog)
    and deliver them to the webhooks of the session's profile (for at most about two seconds). Never raises: the
    verb has acted, and its events are history. The webhooks' URLs and secrets join the session's secrets, so no
    output or log shows them."""
    import logging

    from ..fleet.lease import actor
    from .recording import announce

    hooks = session.profile.notify
    session.secrets.update(value for hook in hooks for value in (hook.url, hook.secret))
    try:
        events = list(make(actor()))
    except Exception:  # noqa: BLE001 - a report this vm cannot describe must not fail the verb
        logging.getLogger("vm_core.events").debug("describing the verb's events failed", exc_info=True)
        warn("the events of this command could not be recorded")
        return
    announce(store, events, hooks, warn=warn)


def created(report: CreateReport, actor: str) -> list[Event]:
    fleet = report.fleet
    details = {"state": fleet.state.value, "count": fleet.count, "running": len(report.running),
               "min_count": fleet.min_count, "gpu": fleet.gpu, "gpu_count": fleet.gpu_count,
               "providers": sorted({i.provider for i in report.running}), "fleet_id": fleet.fleet_id}
    events = [Event(EventKind.CREATED, fleet.name, actor, details)]
    if fleet.state is FleetState.DEGRADED:
        events.append(_degraded(fleet.name, actor, fleet.message, fleet.count, len(report.running)))
    return events


def scaled(before: int, report: ScaleReport, actor: str) -> list[Event]:
    fleet = report.view.fleet
    counts = _counts(report.actions)
    if report.dry_run or before == fleet.count and not counts["created"] + counts["destroyed"]:
        return []
    running = sum(m.running for m in report.view.members)
    events = [Event(EventKind.SCALED, fleet.name, actor, {"from": before, "to": fleet.count,
                                                           "running": running, **counts})]
    return events + _refused(fleet.name, report.actions, actor)


def repaired(report: ScaleReport, actor: str) -> list[Event]:
    if report.dry_run:
        return []
    fleet = report.view.fleet
    counts = _counts(report.actions)
    running = sum(m.running for m in report.view.members)
    events = []
    if counts["created"]:
        events.append(Event(EventKind.REPLACED, fleet.name, actor, {"replaced": counts["created"],
                                                                     "running": running, **counts}))
    if fleet.state is FleetState.DEGRADED:
        events.append(_degraded(fleet.name, actor, fleet.message, fleet.count, running))
    return events + _refused(fleet.name, report.actions, actor)


def destroyed(report: DestroyReport, actor: str) -> list[Event]:
    events = _refused(report.fleet, report.actions, actor)
    if report.forgotten and not report.skipped:
        events.append(Event(EventKind.DESTROYED, report.fleet, actor, {"destroyed": report.destroyed}))
    return events


def reaped(outcomes: Sequence[Outcome], actor: str) -> list[Event]:
    from ..fleet.reap import Result

    events: list[Event] = []
    for outcome in outcomes:
        events += _refused(outcome.fleet.name, outcome.actions, actor)
        if outcome.result is Result.DESTROYED:
            events.append(Event(EventKind.REAPED, outcome.fleet.name, actor,
                                {"destroyed": outcome.vms, "expires_at": outcome.fleet.expires_at}))
    return events


def _degraded(fleet: str, actor: str, message: str, count: int, running: int) -> Event:
    return Event(EventKind.DEGRADED, fleet, actor, {"message": message, "count": count, "running": running})


def _counts(actions: Sequence[Action]) -> dict[str, int]:
    return {verb.name.lower(): sum(a.verb is verb for a in actions)
            for verb in (Verb.CREATED, Verb.DESTROYED, Verb.ADOPTED, Verb.MISSING)}


def _refused(fleet: str, actions: Sequence[Action], actor: str) -> list[Event]:
    """destroy_refused for each VM whose cloud refuses to delete it (Verb.RELEASED)."""
    return [Event(EventKind.DESTROY_REFUSED, fleet, actor, {"name": a.name, "reason": a.why},
                  provider=a.provider, instance_id=a.instance_id) for a in actions if a.verb is Verb.RELEASED]
