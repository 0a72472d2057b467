"""Reaping: what happens to each fleet whose time to live has passed (`vm fleet reap`), as data. The same pass
enforces spend budgets (spend_budget.py): a fleet that reached its budget is stopped or destroyed, its Outcome's
`cause` BUDGET.

Each expired fleet is acted on through its own accounts (the caller connects them: `Target`), under its own lease,
exactly as a destroy would. A fleet that cannot be acted on (a provider it used cannot be reached, another process
holds its lease, it was replaced or its expiry changed meanwhile) is skipped with the reason; the others go on.
Nothing here prints or asks: the caller shows the `Outcome`s and decides the exit code (`Outcome.ok`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from ..errors import NotFound, VmError
from ..provider import Provider
from . import members as mem
from .destroy import DestroyReport, FleetDestroyer
from .expiry import expired
from .lease import LeaseRefused, live_lease
from .report import Action
from .store import FleetRecord, FleetStore

GONE_MEANWHILE = "removed by another vm process meanwhile"
REPLACED = "another fleet of that name was created meanwhile"
EXPIRED, BUDGET = "expired", "budget"  # why a fleet is reaped (Outcome.cause)


class Result(StrEnum):
    """What became of a reaped fleet (its JSON `result`)."""

    DESTROYED = "destroyed"
    STOPPED = "stopped"  # a budget reached: every member that can stop is stopped
    LEFT = "left"  # something of it may still run
    SKIPPED = "skipped"
    WOULD_DESTROY = "would-destroy"  # a dry run
    WOULD_STOP = "would-stop"  # a dry run (a budget reached)
    GONE = "gone"  # removed meanwhile


@dataclass
class Outcome:
    """What reaping did (or, in a dry run, would do) to one expired fleet, or (`cause` BUDGET) one that reached
    its spend budget."""

    fleet: FleetRecord  # the record as listed
    result: Result
    reason: str = ""
    vms: int = 0  # VMs destroyed or stopped (would be: recorded VMs that may exist)
    actions: list[Action] = field(default_factory=list)
    cause: str = EXPIRED

    @property
    def ok(self) -> bool:
        return self.result in (Result.DESTROYED, Result.STOPPED, Result.GONE, Result.WOULD_DESTROY,
                               Result.WOULD_STOP)


@dataclass
class Target:
    """An expired fleet ready to be acted on: its current record, its store and its connected providers."""

    record: FleetRecord
    store: FleetStore
    providers: Mapping[str, Provider]

    @property
    def live(self) -> int:
        """Its recorded VMs that are, or may be, running."""
        return sum(1 for m in self.store.members(self.record.name) if m.state.may_run)


def due(store: FleetStore, now: float | None = None) -> list[FleetRecord]:
    """The fleets whose ttl has passed (at `now`, default the current time)."""
    moment = time.time() if now is None else now
    return [f for f in store.list_fleets() if expired(f, moment)]


def gone(listed: FleetRecord) -> Outcome:
    """The outcome of a fleet that was removed after it was listed."""
    return Outcome(listed, Result.GONE, GONE_MEANWHILE)


def skipped(listed: FleetRecord, why: str) -> Outcome:
    return Outcome(listed, Result.SKIPPED, why)


def target(listed: FleetRecord, store: FleetStore, current: FleetRecord, providers: Mapping[str, Provider],
           profile: str) -> Target | Outcome:
    """The Target of `listed` (`current`: its record now; `providers`: those `profile` connected), else the
    Outcome of skipping it: a provider it uses could not be connected, or it was replaced meanwhile."""
    needed = {m.provider for m in store.members(listed.name) if m.state.may_run} | set(current.accounts)
    unreachable = sorted(needed - set(providers))
    if unreachable:
        return skipped(listed, f"profile {profile} cannot reach {', '.join(unreachable)}, which the fleet uses")
    if current.fleet_id != listed.fleet_id:
        return skipped(listed, REPLACED)
    return Target(current, store, providers)


def preview(target: Target) -> Outcome:
    """What reaping `target` would do (a dry run): destroy its live VMs, or skip it while its lease is held."""
    held = live_lease(target.store, target.record.name)
    if held is not None:
        return skipped(target.record, f"being changed by {held.holder} ({held.operation})")
    return Outcome(target.record, Result.WOULD_DESTROY, vms=target.live)


def reap(target: Target, *, timeout: float, progress: mem.Progress = lambda _: None) -> Outcome:
    """Destroy `target` as a fleet destroy does, unless, once its lease is held, it is another fleet or no
    longer expired. Never raises a VmError: every failure is an Outcome."""
    record = target.record

    def still_due(now: FleetRecord) -> str:
        if now.fleet_id != record.fleet_id:
            return REPLACED
        return "" if expired(now) else "its expiry was changed meanwhile"

    return destroy(target, still_due, timeout=timeout, progress=progress)


def destroy(target: Target, guard: Callable[[FleetRecord], str], *, timeout: float,
            progress: mem.Progress = lambda _: None, cause: str = EXPIRED) -> Outcome:
    """Destroy `target` as a fleet destroy does, unless `guard`, called on its record once its lease is held,
    says why not (the Outcome is then skipped). Never raises a VmError: every failure is an Outcome."""
    record = target.record
    destroyer = FleetDestroyer(target.store, target.providers, progress=progress, timeout=timeout)
    try:
        report = destroyer.destroy(record.name, guard=guard)
    except LeaseRefused as exc:
        return replace(skipped(record, f"being changed by {exc.lease.holder} ({exc.lease.operation})"), cause=cause)
    except NotFound:
        return replace(gone(record), cause=cause)
    except VmError as exc:
        return Outcome(record, Result.LEFT, exc.message, cause=cause)
    return replace(_outcome(record, report), cause=cause)


def _outcome(record: FleetRecord, report: DestroyReport) -> Outcome:
    if report.skipped:
        return skipped(record, report.skipped)
    if report.forgotten:
        return Outcome(record, Result.DESTROYED, vms=report.destroyed, actions=report.actions)
    why = "; ".join(report.failures) or f"{len(report.released)} VM(s) released: their cloud refuses to delete them"
    return Outcome(record, Result.LEFT, why, vms=report.destroyed, actions=report.actions)


def in_order(outcomes: Sequence[Outcome]) -> list[Outcome]:
    """Outcomes oldest fleet first (then by name), as they are shown."""
    return sorted(outcomes, key=lambda o: (o.fleet.created_at, o.fleet.name))
