"""Acting on fleets that reached their spend budget (the rules: spend_budget.py), for `vm fleet reap` and the
watchdog: which fleets are due (`reached`), what would be done (`preview`) and doing it (`enforce`), each fleet
under its own lease, through the engines of `vm fleet stop` (power.py) and `vm fleet destroy` (reap.destroy).
Every result is a reap Outcome whose `cause` is BUDGET.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..errors import NotFound, VmError
from ..provider import Provider, SupportsStopStart
from . import members as mem
from .budget import price_total
from .lease import LeaseRefused, live_lease
from .power import stop_fleet
from .reap import BUDGET, GONE_MEANWHILE, REPLACED, Outcome, Result, Target, destroy
from .spend_budget import Enforcement, Standing, enforcement, fleet_standing, unkillable
from .store import FleetRecord, FleetState, FleetStore, MemberRecord, MemberState, OnBudget

if TYPE_CHECKING:
    from ..events.model import Event
    from ..spend.ledger import Ledger
    from ..spend.rules import BillingRule


@dataclass(frozen=True)
class BudgetTarget:
    """A fleet that reached its budget, ready to be acted on (`target`: its record, store and connected
    providers), with its standing and what reaching the budget does to it."""

    target: Target
    standing: Standing
    plan: Enforcement

    @property
    def reason(self) -> str:
        why = f"; {self.plan.why}" if self.plan.why else ""
        return f"reached its budget: {self.standing.text()}{why}"


@dataclass(frozen=True)
class Enforced:
    """What enforcing one fleet's budget did: the `standing` it was enforced at and the reap `outcome`."""

    standing: Standing
    outcome: Outcome

    def events(self, actor: str) -> list[Event]:
        """budget_reached when it acted (details spent, budget, result), destroyed for a fleet destroyed and
        forgotten, destroy_refused for each VM whose cloud refused to delete it; none for a dry run or a skip."""
        from ..events.kinds import EventKind
        from ..events.model import Event
        from .report import Verb

        outcome, name = self.outcome, self.outcome.fleet.name
        if outcome.result not in (Result.STOPPED, Result.DESTROYED, Result.LEFT):
            return []
        events = [Event(EventKind.BUDGET_REACHED, name, actor, {"spent": round(self.standing.spent, 2),
                                                                 "budget": self.standing.budget,
                                                                 "result": outcome.result.value})]
        events += [Event(EventKind.DESTROY_REFUSED, name, actor, {"name": a.name, "reason": a.why},
                         provider=a.provider, instance_id=a.instance_id)
                   for a in outcome.actions if a.verb is Verb.RELEASED]
        if outcome.result is Result.DESTROYED:
            events.append(Event(EventKind.DESTROYED, name, actor, {"destroyed": outcome.vms}))
        return events


def reached(store: Ledger, fleets: Iterable[FleetRecord], members: Callable[[str], list[MemberRecord]], *,
            now: float, rules: Mapping[str, BillingRule]) -> list[tuple[FleetRecord, Standing]]:
    """The fleets that reached their budget and may still bill: a member may run (exist, or released) and the
    fleet is not stopped already (a stopped fleet was enforced; started again, it is enforced again). Reads the
    store."""
    found = []
    for record in fleets:
        if record.budget is None or record.state is FleetState.STOPPED:
            continue
        if not any(m.state.may_run for m in members(record.name)):
            continue
        standing = fleet_standing(store, record, now=now, rules=rules)
        if standing is not None and standing.reached:
            found.append((record, standing))
    return found


def budget_target(target: Target, standing: Standing) -> BudgetTarget:
    """`target` with what reaching its budget does (the providers as connected decide who can stop)."""
    def can_stop(provider: str) -> bool:
        return isinstance(target.providers.get(provider), SupportsStopStart)

    plan = enforcement(target.record, target.store.members(target.record.name), can_stop)
    return BudgetTarget(target, standing, plan)


def preview(due: BudgetTarget) -> Outcome:
    """What enforcing would do (a dry run): stop or destroy its live VMs, or skip it while its lease is held."""
    record = due.target.record
    held = live_lease(due.target.store, record.name)
    if held is not None:
        return Outcome(record, Result.SKIPPED, f"being changed by {held.holder} ({held.operation})", cause=BUDGET)
    would = Result.WOULD_STOP if due.plan.action is OnBudget.STOP else Result.WOULD_DESTROY
    return Outcome(record, would, due.reason, vms=due.target.live, cause=BUDGET)


def enforce(due: BudgetTarget, *, actor: str, timeout: float, progress: mem.Progress = lambda _: None,
            warn: mem.Progress | None = None) -> Outcome:
    """Stop or destroy the fleet as `due.plan` says (a stop that finds a member unable to stop goes on to
    destroy), under its lease, unless it was replaced meanwhile. Members that can be neither stopped nor
    destroyed are said in the reason, with their rate. Never raises a VmError: every failure is an Outcome."""
    record = due.target.record
    if due.plan.action is OnBudget.STOP:
        stopped = _stop(due, actor=actor, timeout=timeout, progress=progress, warn=warn)
        if stopped is not None:
            return stopped
    outcome = destroy(due.target, lambda now: REPLACED if now.fleet_id != record.fleet_id else "",
                      timeout=timeout, progress=progress, cause=BUDGET)
    return _with_reason(due, outcome)


def _stop(due: BudgetTarget, *, actor: str, timeout: float, progress: mem.Progress,
          warn: mem.Progress | None) -> Outcome | None:
    """The Outcome of stopping the fleet; None when a member turned out unable to stop (then it is destroyed)."""
    target, record = due.target, due.target.record
    try:
        report = stop_fleet(target.store, record, target.providers, actor=actor, progress=progress, warn=warn,
                            timeout=timeout)
    except LeaseRefused as exc:
        return Outcome(record, Result.SKIPPED, f"being changed by {exc.lease.holder} ({exc.lease.operation})",
                       cause=BUDGET)
    except NotFound:
        return Outcome(record, Result.GONE, GONE_MEANWHILE, cause=BUDGET)
    except VmError as exc:
        return Outcome(record, Result.LEFT, f"{due.reason}; {exc.message}", cause=BUDGET)
    if report.skipped:
        return Outcome(record, Result.SKIPPED, report.skipped, cause=BUDGET)
    if report.cannot_stop:
        return None
    if report.failures:
        failed = "; ".join(r.line() for r in report.failures)
        return Outcome(record, Result.LEFT, f"{due.reason}; {failed}", vms=len(report.acted), cause=BUDGET)
    return Outcome(record, Result.STOPPED, due.reason, vms=len(report.acted), cause=BUDGET)


def _with_reason(due: BudgetTarget, outcome: Outcome) -> Outcome:
    """A destroy's Outcome, its reason the budget's; members its cloud refused to delete said with their rate."""
    if outcome.result is Result.DESTROYED:
        return replace(outcome, reason=due.reason)
    if outcome.result is not Result.LEFT:
        return outcome
    released = [m for m in due.target.store.members(due.target.record.name) if m.state is MemberState.RELEASED]
    if not released:
        return replace(outcome, reason=f"{due.reason}; {outcome.reason}")
    billing, known = price_total(m.price_per_hour for m in released)
    said = unkillable([m.name for m in released], billing if known else None)
    return replace(outcome, reason=f"{due.reason}; {said}")


def enforce_fleet(store: FleetStore, record: FleetRecord, providers: Mapping[str, Provider], *, profile: str,
                  rules: Mapping[str, BillingRule], now: float, actor: str, timeout: float,
                  progress: mem.Progress = lambda _: None, warn: mem.Progress | None = None,
                  dry_run: bool = False) -> Enforced | None:
    """Enforce one fleet's budget through `providers` (connected in its own accounts, by `profile`): None when
    it has no budget, has not reached it at `now`, is stopped already or has nothing that may bill; else what
    stopping or destroying it did (with `dry_run`, would do), whose `events(actor)` are to be told. The watchdog's
    entry point (a caller holding the fleet's lease may call it: its own lease is extended). Never raises a
    VmError."""
    from .reap import target as aim

    found = reached(store, [record], store.members, now=now, rules=rules)
    if not found:
        return None
    standing = found[0][1]
    aimed = aim(record, store, record, providers, profile)
    if isinstance(aimed, Outcome):
        return Enforced(standing, replace(aimed, cause=BUDGET))
    due = budget_target(aimed, standing)
    if dry_run:
        return Enforced(standing, preview(due))
    progress(f"fleet {record.name} {due.reason}: {'stopping' if due.plan.action is OnBudget.STOP else 'destroying'} it")
    return Enforced(standing, enforce(due, actor=actor, timeout=timeout, progress=progress, warn=warn))
