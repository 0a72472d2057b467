"""The duties every pass runs (duty.py says how to add one), in order:

    expire    a fleet whose TTL passed is destroyed exactly as `vm fleet reap` destroys it (fleet/reap.py), and a
              `reaped` event (or `destroy_refused`) recorded
    budget    a fleet that reached its spend budget (--budget) is stopped, or destroyed, exactly as `vm fleet
              reap` enforces it (fleet/budget_enforce.py); `budget_reached` (and `destroyed`) recorded
    wait      a fleet waiting for capacity (`--wait-for-capacity`) is checked once, as re-running its create
              does (fleet/waiting.py check_waiting): placed whole when the clouds have room, given up at its end
    maintain  a maintained fleet (`--maintain`): its members found stopped or failed in their cloud are deleted
              (lost.py: a preempted Nebius VM shows as stopped), then it is repaired to its requested count
              exactly as `vm fleet repair` repairs it (fleet/scale.py: settled against the clouds, then a
              replacement placed for each member preempted, failed or gone outside vm, with the fleet's placement,
              strategy, price cap and machine options; min_count kept). Events: member_preempted for each member
              lost, replaced, degraded (with details.next_try_at when it could not be brought back: retries.py)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import VmError
from ..fleet.store import FleetRecord, FleetState
from .duty import Done, Duty, DutyContext, DutyResult

if TYPE_CHECKING:
    from ..events.model import Event
    from ..fleet.scale import FleetScaler

# A maintained fleet in these states is left alone: stopped on purpose, not placed yet, failed or going.
NOT_MAINTAINED = frozenset({FleetState.STOPPED, FleetState.WAITING, FleetState.FAILED, FleetState.DESTROYING,
                            FleetState.DESTROYED, FleetState.ROLLING_BACK})


def _expired(context: DutyContext, fleet: FleetRecord) -> bool:
    from ..fleet.expiry import expired

    return expired(fleet, context.now)


def expire(context: DutyContext, fleet: FleetRecord) -> DutyResult:
    """Reap the expired fleet as `vm fleet reap` does; its events told to the fleet's profile's webhooks."""
    from ..events import verbs as events
    from ..fleet import reap as reaping

    aimed = reaping.target(fleet, context.store, fleet, context.providers, context.session.profile.name)
    if isinstance(aimed, reaping.Outcome):
        outcome = aimed
    else:
        context.progress(f"fleet {fleet.name}: its TTL passed: destroying it")
        outcome = reaping.reap(aimed, timeout=context.timeout, progress=context.progress)
    context.tell(events.reaped([outcome], context.actor))
    said = f"{outcome.result.value}: {outcome.reason}" if outcome.reason else outcome.result.value
    if outcome.result is reaping.Result.DESTROYED:
        said = f"reaped: {outcome.vms} VM(s) destroyed"
    gone = outcome.result in (reaping.Result.DESTROYED, reaping.Result.GONE)
    return DutyResult("expire", Done.ACTED if outcome.ok else Done.FAILED, said, finished=gone)


def _maintained(context: DutyContext, fleet: FleetRecord) -> bool:
    """Maintained, in a state that is, and not backing off (in this process, or as another watchdog recorded)."""
    from .retries import recorded

    if not fleet.maintain or fleet.state in NOT_MAINTAINED or not context.retries.ready(fleet.fleet_id, context.now):
        return False
    return recorded(context.store, fleet.name, context.now)[0] <= context.now


def maintain(context: DutyContext, fleet: FleetRecord) -> DutyResult:
    """Repair the maintained fleet as `vm fleet repair` does; back off when it stays short of its count."""
    from ..events import verbs as events
    from ..fleet.report import Verb
    from .lost import retire_lost

    try:
        retired = retire_lost(context, fleet)
        report = _scaler(context, fleet).repair(fleet.name)
    except VmError as exc:
        return _short(context, fleet, exc.message, [])
    preempted = [(a.provider, a.name, a.instance_id, "preempted") for a in report.actions
                 if a.verb is Verb.DESTROYED and a.why == "preempted"]
    preempted += [(a.provider, a.name, a.instance_id, seen.instance.state.value if seen.instance else "")
                  for seen, a in retired]
    told = _preempted(context, fleet, preempted) + events.repaired(report, context.actor)
    created = sum(a.verb is Verb.CREATED for a in report.actions)
    after = report.view.fleet
    if after.state in (FleetState.ACTIVE, FleetState.STOPPED):
        context.retries.succeeded(fleet.fleet_id)
        context.tell(told)
        if not report.actions:
            return DutyResult("maintain", Done.IDLE, f"{after.count} of {after.count} running")
        return DutyResult("maintain", Done.ACTED, f"replaced {created} VM(s)" if created else
                          f"settled {len(report.actions)} record(s)")
    return _short(context, fleet, after.message or after.state.value, told, created)


def _short(context: DutyContext, fleet: FleetRecord, why: str, told: list[Event], created: int = 0) -> DutyResult:
    """The repair left the fleet short of its count: back off, and say when it is tried again (in its degraded
    event: details.next_try_at)."""
    from dataclasses import replace

    from ..events.kinds import EventKind
    from ..events.model import Event
    from .retries import recorded

    before = recorded(context.store, fleet.name, context.now)[1]
    at = context.retries.failed(fleet.fleet_id, context.now, context.interval, before=before)
    tries = context.retries.failures[fleet.fleet_id]
    if not any(e.kind is EventKind.DEGRADED for e in told):
        told.append(Event(EventKind.DEGRADED, fleet.name, context.actor,
                          {"message": why, "count": fleet.count}))
    context.tell([replace(e, details={**e.details, "next_try_at": at, "tries": tries})
                  if e.kind is EventKind.DEGRADED else e for e in told])
    placed = f"replaced {created} VM(s), " if created else ""
    return DutyResult("maintain", Done.FAILED, f"{placed}still short: {why}; tried again in {at - context.now:.0f} s",
                      next_try_at=at)


def _scaler(context: DutyContext, fleet: FleetRecord) -> FleetScaler:
    """The scaler `vm fleet repair` uses, over the fleet's own store and accounts; a second signal stops it
    starting VMs."""
    from ..api.fleets import create_concurrency
    from ..fleet.create import FleetCreator
    from ..fleet.scale import FleetScaler
    from ..fleet.service import fleet_strategy

    creator = FleetCreator(context.store, context.providers, fleet_strategy(context.store, fleet),
                           progress=context.progress, timeout=context.timeout,
                           concurrency=create_concurrency(context.session, context.providers),
                           profile=fleet.profile)
    context.interrupts.append(creator.stop.set)  # losing the lease stops it too: the repair's own (nested) lease
    return FleetScaler(creator)


def _preempted(context: DutyContext, fleet: FleetRecord, lost: list[tuple[str, str, str, str]]) -> list[Event]:
    """A member_preempted event for each member lost to its cloud ((provider, name, id, the state it was
    found in): `preempted` as Lambda says it, `stopped` as Nebius shows a preempted VM, `error`)."""
    from ..events.kinds import EventKind
    from ..events.model import Event

    return [Event(EventKind.MEMBER_PREEMPTED, fleet.name, context.actor, {"name": name, "found": found},
                  provider=provider, instance_id=instance_id) for provider, name, instance_id, found in lost]


def _waiting(context: DutyContext, fleet: FleetRecord) -> bool:
    """Waiting for capacity (--wait-for-capacity): each pass checks whether the clouds have room now."""
    return fleet.state is FleetState.WAITING


def place_waiting(context: DutyContext, fleet: FleetRecord) -> DutyResult:
    """One check of a waiting fleet, as re-running its `vm fleet create` does (fleet/waiting.py check_waiting):
    placed whole within its price cap when the clouds have room, given up (nothing left) at its wait's end."""
    from ..api.fleets import create_concurrency
    from ..events import verbs as events
    from ..fleet.waiting import check_waiting

    try:
        report = check_waiting(context.store, context.providers, fleet, progress=context.progress,
                               timeout=context.timeout, concurrency=create_concurrency(context.session,
                                                                                       context.providers))
    except VmError as exc:
        return DutyResult("wait", Done.FAILED, exc.message)
    if report.gave_up:
        return DutyResult("wait", Done.ACTED, f"gave up: {report.fleet.message}")
    if report.placed is not None and not report.waiting:
        context.tell(events.created(report.placed, context.actor))
        return DutyResult("wait", Done.ACTED, f"placed: {report.fleet.state.value}, {report.fleet.message}")
    return DutyResult("wait", Done.IDLE, f"waiting: {report.placeable} of {fleet.count} VM(s) placeable")


def _budgeted(context: DutyContext, fleet: FleetRecord) -> bool:
    """A fleet with a spend budget that is not stopped already (whether it reached it is read when leased)."""
    return fleet.budget is not None and fleet.state is not FleetState.STOPPED


def enforce_budget(context: DutyContext, fleet: FleetRecord) -> DutyResult:
    """At 100 % of its budget the fleet is stopped, or destroyed (--on-budget, or a member that cannot stop), as
    `vm fleet reap` enforces it (fleet/budget_enforce.py); below it, nothing."""
    from ..api.spend import billing_rules
    from ..fleet import reap as reaping
    from ..fleet.budget_enforce import enforce_fleet

    enforced = enforce_fleet(context.store, fleet, context.providers, profile=context.session.profile.name,
                             rules=billing_rules(context.session), now=context.session.clock(), actor=context.actor,
                             timeout=context.timeout, progress=context.progress, warn=context.warn)
    if enforced is None:
        return DutyResult("budget", Done.IDLE, "below its budget")
    context.tell(enforced.events(context.actor))
    outcome = enforced.outcome
    said = f"{outcome.result.value}: {outcome.reason}" if outcome.reason else outcome.result.value
    gone = outcome.result in (reaping.Result.DESTROYED, reaping.Result.GONE)
    return DutyResult("budget", Done.ACTED if outcome.ok else Done.FAILED, said, finished=gone)


DUTIES: list[Duty] = [Duty("expire", _expired, expire), Duty("budget", _budgeted, enforce_budget),
                      Duty("wait", _waiting, place_waiting), Duty("maintain", _maintained, maintain)]
"""What every pass does to each fleet, in this order (append or insert a Duty to add one: duty.py)."""
