"""`vm fleet scale` and `vm fleet repair`: change an existing fleet's size, or bring it back to it.

Growing places new slots, numbered after the fleet's highest slot, with the create machinery (create.py: intent
recorded before every call, the fleet's id on every VM, failover, retries, final sweep). The new requested count
is recorded, and the fleet is `creating`, before the first call: a scale or repair that is killed leaves an
`interrupted` fleet that `vm fleet repair`, `reconcile` or `destroy` resolves like a killed create.

A grow that ends with at least the fleet's min_count running keeps every VM it created (the fleet is degraded
when it is below the new count; `vm fleet repair` tries again later). Below min_count (only possible when
`--min-count` raised it, or the fleet was below it already) it destroys the VMs it created and restores the
previous counts: all-or-nothing, like create.

Shrinking destroys running members, on-demand before reserved, the most expensive first; never below min_count.
Repair first settles the records against the clouds (reconcile) and then places a replacement for every VM the
requested count lacks.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import UsageError, VmError
from ..hints import Command, Hint, Setting
from ..model import InstanceState, Offer
from ..provider import Provider
from . import members as mem
from .create import FleetCreator
from .destroy import PARALLEL, identity_of, recorded_fleet, removed_meanwhile
from .inspect import (
    SETTLED,
    FleetInspector,
    FleetView,
    mark_abandoned,
    recorded_running,
    running_message,
    settled_state,
)
from .lease import lease
from .offers import OfferSet
from .reconcile import FleetReconciler
from .report import Action, Verb
from .spec import FleetSpec, spec_of
from .spot import on_demand_missing
from .store import FleetRecord, FleetState, FleetStore, MemberRecord, MemberState

if TYPE_CHECKING:
    import threading

# A fleet in these states is being torn down: it is neither scaled nor repaired.
GOING = frozenset({FleetState.DESTROYING, FleetState.ROLLING_BACK})


class ScaleProblem(enum.Enum):
    """Why a scale is refused before anything changes (the CLI words each with its option names)."""

    MINIMUM_OUT_OF_RANGE = "minimum_out_of_range"  # the new minimum is not from 1 to the count
    BELOW_MINIMUM = "below_minimum"  # the count is below the fleet's minimum (recorded, or the new one)


class ScaleRefused(UsageError):
    """A scale refused for `problem` (exit 2, nothing changed), about `count` VMs and the `minimum` in force."""

    def __init__(self, problem: ScaleProblem, fleet: str, count: int, minimum: int, *,
                 suggestion: Hint | None = None) -> None:
        text = {ScaleProblem.MINIMUM_OUT_OF_RANGE: f"the minimum must be from 1 to the count ({count}), not {minimum}",
                ScaleProblem.BELOW_MINIMUM: f"a count of {count} is below fleet {fleet}'s minimum of {minimum}"}
        super().__init__(text[problem], suggestion=suggestion)
        self.problem, self.fleet, self.count, self.minimum = problem, fleet, count, minimum


@dataclass
class Plan:
    """What a dry run would place: the new slots, the fleet's spec for them and the strategy's placements."""

    spec: FleetSpec
    slots: list[int]
    placements: list[Offer]
    offers: OfferSet


@dataclass
class ScaleReport:
    view: FleetView  # the fleet afterwards (as it is, for a dry run)
    actions: list[Action] = field(default_factory=list)  # one per VM created, destroyed, adopted, marked
    notes: list[str] = field(default_factory=list)  # per failed attempt, what went wrong
    errors: list[VmError] = field(default_factory=list)
    plan: Plan | None = None  # a dry run that would place VMs
    dry_run: bool = False
    interrupted: bool = False
    rolled_back: bool = False
    summary: str = ""  # why a grow was rolled back

    @property
    def failures(self) -> list[Action]:
        """VMs that may still exist although they were to go, or still run because their cloud refuses."""
        return [a for a in self.actions if a.verb in (Verb.FAILED, Verb.RELEASED)]


class FleetScaler:
    """Scale and repair through `creator` (its store, providers, strategy, progress, timeout and `stop`)."""

    def __init__(self, creator: FleetCreator, *, ssh_public_key: str | None = None) -> None:
        self.creator, self.ssh_public_key = creator, ssh_public_key
        self.store: FleetStore = creator.store
        self.providers: Mapping[str, Provider] = creator.providers
        self.progress = creator.progress

    @property
    def stop(self) -> threading.Event:
        """The creator's stop event, for the CLI's interrupt handling."""
        return self.creator.stop

    # ------------------------------------------------------------------------------------------ scale
    def scale(self, name: str, count: int, min_count: int | None = None, *, dry_run: bool = False) -> ScaleReport:
        """Grow or shrink the fleet to `count` running VMs, holding its lease. Raises NotFound for an unknown
        fleet, UsageError (nothing changed) for a count below the minimum, a fleet that is not settled, or a
        grow of a fleet recorded before fleet ids."""
        with removed_meanwhile(name), lease(self.store, name, "fleet scale", on_lost=self.stop.set):
            mark_abandoned(self.store, name)  # under its lease nobody creates it: `creating` is a killed run's
            view = FleetInspector(self.store, self.providers).view(name)
            record = recorded_fleet(self.store, name)
            minimum = _check_scale(record, count, min_count)
            running = [v.member for v in view.members if v.running and v.member.state is MemberState.RUNNING]
            if count > len(running):
                return self._grow(record, count, minimum, len(running), dry_run)
            return self._shrink(record, view, running, count, minimum, dry_run)

    def _grow(self, record: FleetRecord, count: int, minimum: int, current: int, dry_run: bool) -> ScaleReport:
        _check_identity(record, "grow")
        slots = new_slots(self.store.members(record.name), count - current)
        spec = spec_of(record, len(slots), self.ssh_public_key)
        if dry_run:
            return self._planned(record.name, spec, slots, [])
        self.store.update_fleet(record.name, state=FleetState.CREATING, count=count, min_count=minimum,
                                message=f"scaling from {current} to {count}")
        try:
            report = self._place(record, spec, slots)
        except VmError:  # refused before any call (no provider usable): the fleet keeps its counts
            self.store.update_fleet(record.name, count=record.count, min_count=record.min_count)
            self._settle(record.name, interrupted=False)
            raise
        running = recorded_running(self.store.members(record.name))
        if not report.interrupted and running < minimum:
            self._roll_back(record, slots, report)
            left = recorded_running(self.store.members(record.name))
            self.store.update_fleet(record.name, state=settled_state(record.count, left),
                                    count=record.count, min_count=record.min_count,
                                    message=running_message(record, left))
            report.summary = (f"only {running} of {count} could run (minimum {minimum}): the VMs this scale "
                              f"created were destroyed again; the fleet keeps {left} of {record.count}")
        else:
            self._settle(record.name, report.interrupted)
        report.view = FleetInspector(self.store, self.providers).view(record.name)
        return report

    def _shrink(self, record: FleetRecord, view: FleetView, running: list[MemberRecord], count: int, minimum: int,
                dry_run: bool) -> ScaleReport:
        victims = shrink_order(running)[:len(running) - count]
        if dry_run:
            actions = [Action(Verb.DESTROYED, m.provider, m.name, m.instance_id, _why(m)) for m in victims]
            for action in actions:
                self.progress(action.line(dry_run=True))
            return ScaleReport(view, actions, dry_run=True)
        self.store.update_fleet(record.name, count=count, min_count=minimum)
        identity = identity_of(record)

        def destroy(member: MemberRecord) -> Action:
            outcome = mem.destroy(self.store, self.providers.get(member.provider), member, identity,
                                  self.creator.timeout)
            action = outcome.action
            self.progress(action.line())
            return action

        actions = []
        if victims:
            with ThreadPoolExecutor(max_workers=min(len(victims), PARALLEL)) as pool:
                actions = list(pool.map(destroy, victims))
        self._settle(record.name, interrupted=False)
        return ScaleReport(FleetInspector(self.store, self.providers).view(record.name), actions)

    # ------------------------------------------------------------------------------------------ repair
    def repair(self, name: str, *, dry_run: bool = False) -> ScaleReport:
        """Settle the fleet against the clouds (reconcile), then place a VM for every one its requested count
        lacks, holding its lease. Raises NotFound, UsageError for a fleet being destroyed, stopped or waiting for
        capacity, or (when VMs are needed) one recorded before fleet ids."""
        with removed_meanwhile(name), lease(self.store, name, "fleet repair", on_lost=self.stop.set):
            record = recorded_fleet(self.store, name)
            if record.state in GOING:
                raise UsageError(f"fleet {name} is {record.state.value}: it is not repaired",
                                 suggestion=Hint.run("fleet", "destroy", name))
            if record.state is FleetState.STOPPED:
                raise _stopped(record, "repairing")
            if record.state is FleetState.WAITING:  # placed all at once by its create (waiting.py), not piecemeal
                raise UsageError(f"fleet {name} is waiting for capacity ({record.message}): it is not repaired",
                                 suggestion=Hint.say("re-run its create (with {}) to go on waiting, or see {}",
                                                     Setting("wait_for_capacity"), Command.of("fleet", "status", name)))
            settled = FleetReconciler(self.store, self.providers, progress=self.progress,
                                      timeout=self.creator.timeout).settle(name, dry_run=dry_run)
            view = settled.view
            if not dry_run and self._wait_booting(view):
                view = self._seen(name)  # the view before the wait shows the VMs as they were: still booting
            missing = record.count - settled.kept
            if missing <= 0:
                return ScaleReport(view, settled.actions, dry_run=dry_run)
            _check_identity(record, "repair")
            slots = new_slots(self.store.members(name), missing)
            running = [v.instance for v in view.members if v.running and v.instance is not None]
            spec = spec_of(record, missing, self.ssh_public_key, on_demand=on_demand_missing(record, running))
            if dry_run:
                return self._planned(name, spec, slots, settled.actions, view)
            self.store.update_fleet(name, state=FleetState.CREATING, message=f"repairing: placing {missing} VM(s)")
            report = self._place(record, spec, slots)
            self._settle(name, report.interrupted)
            report.actions = settled.actions + report.actions
            report.view = FleetInspector(self.store, self.providers).view(name)
            return report

    def _wait_booting(self, view: FleetView) -> bool:
        """Wait for the kept VMs that are still coming up (e.g. those of an interrupted create or scale); one
        that does not come up stays as it is (not running: the fleet stays degraded, and a re-run looks again).
        True when there were any: `view` is then out of date."""
        booting = [v.member for v in view.members if v.instance is not None and v.member.state is MemberState.RUNNING
                   and v.instance.state in (InstanceState.CREATING, InstanceState.STARTING)]

        def wait(member: MemberRecord) -> None:
            self.progress(f"{member.provider}: waiting for {member.name} ({member.instance_id}) to come up")
            try:
                mem.wait_running(self.providers[member.provider], member.instance_id, self.creator.timeout)
            except VmError as exc:
                self.progress(f"{member.provider}: {member.name}: {exc.message}")

        if booting:
            with ThreadPoolExecutor(max_workers=min(len(booting), PARALLEL)) as pool:
                list(pool.map(wait, booting))
        return bool(booting)

    def _seen(self, name: str) -> FleetView:
        """The fleet as its clouds show it now, its record's state and message made to agree with what was
        seen (so `vm fleet list` says the same)."""
        view = FleetInspector(self.store, self.providers).view(name)
        if view.fleet.state in SETTLED:
            self.store.update_fleet(name, state=view.fleet.state, message=view.fleet.message)
        return view

    # ------------------------------------------------------------------------------------------ shared
    def _planned(self, name: str, spec: FleetSpec, slots: list[int], actions: list[Action],
                 view: FleetView | None = None) -> ScaleReport:
        placements, offers = self.creator.plan(spec, held=self.store.members(name))
        for slot, offer in zip(slots, placements, strict=False):
            self.progress(f"{offer.provider}: slot {slot}: would create in {offer.region} ({offer.shape}, "
                          f"${offer.price_per_hour}/h)")
        view = view or FleetInspector(self.store, self.providers).view(name)
        return ScaleReport(view, actions, plan=Plan(spec, slots, placements, offers), dry_run=True)

    def _place(self, record: FleetRecord, spec: FleetSpec, slots: list[int]) -> ScaleReport:
        """Place the slots; if placing raises before any call (no provider usable), the fleet's state is
        settled again before the error goes on."""
        try:
            placed = self.creator.place(record, spec, slots)
        except BaseException:
            self._settle(record.name, interrupted=False)
            raise
        actions = [Action(Verb.CREATED, i.provider, i.name, i.id) for _, i in sorted(placed.running.items())]
        return ScaleReport(FleetInspector(self.store, self.providers).view(record.name), actions, placed.notes,
                           placed.errors, interrupted=placed.interrupted)

    def _settle(self, name: str, interrupted: bool) -> None:
        record = recorded_fleet(self.store, name)
        running = recorded_running(self.store.members(name))
        state = FleetState.INTERRUPTED if interrupted else settled_state(record.count, running)
        self.store.update_fleet(name, state=state, message=running_message(record, running))

    def _roll_back(self, record: FleetRecord, slots: list[int], report: ScaleReport) -> None:
        """Destroy every VM the scale created (its own slots only) and say so per VM."""
        identity, wanted = identity_of(record), set(slots)
        targets = [m for m in self.store.members(record.name) if m.slot in wanted and m.state.may_exist]
        self.progress(f"below the minimum of the fleet: destroying the {len(targets)} VM(s) this scale created")
        for member in targets:
            action = mem.destroy(self.store, self.providers.get(member.provider), member, identity,
                                 self.creator.timeout).action
            self.progress(action.line())
            report.actions.append(action)
        report.rolled_back = True


def _stopped(record: FleetRecord, doing: str) -> UsageError:
    """The refusal to change a stopped fleet's size: its members are kept, stopped, until `vm fleet start`."""
    return UsageError(f"fleet {record.name} is stopped: start it before {doing} it",
                      suggestion=Hint.run("fleet", "start", record.name))


def _check_scale(record: FleetRecord, count: int, min_count: int | None) -> int:
    """The fleet's minimum after the scale; UsageError (nothing changed) when the scale is not allowed."""
    if record.state is FleetState.STOPPED:
        raise _stopped(record, "scaling")
    if record.state not in SETTLED:
        raise UsageError(f"fleet {record.name} is {record.state.value} ({record.message or 'not settled'}): "
                         "repair it before scaling it", suggestion=Hint.run("fleet", "repair", record.name))
    if min_count is not None and not 1 <= min_count <= count:
        raise ScaleRefused(ScaleProblem.MINIMUM_OUT_OF_RANGE, record.name, count, min_count)
    minimum = record.min_count if min_count is None else min_count
    if count < minimum:
        raise ScaleRefused(ScaleProblem.BELOW_MINIMUM, record.name, count, minimum,
                           suggestion=Hint.run("fleet", "scale", record.name, "--count", count, "--min-count", count))
    return minimum


def _check_identity(record: FleetRecord, what: str) -> None:
    if not record.fleet_id:
        gpu = f"{record.gpu}:{record.gpu_count or 1}"
        raise UsageError(f"fleet {record.name} was recorded before fleet ids: it cannot {what} (its new VMs could "
                         "not be told apart from look-alikes); create a new fleet instead",
                         suggestion=Hint.run("fleet", "create", "--gpu", gpu, "--count", record.count))


def new_slots(members: Sequence[MemberRecord], count: int) -> list[int]:
    """`count` slot numbers after the highest the fleet ever used (a slot's member names stay unique)."""
    first = max((m.slot for m in members), default=-1) + 1
    return list(range(first, first + count))


def shrink_order(running: Sequence[MemberRecord]) -> list[MemberRecord]:
    """The order in which a shrink destroys members: on-demand before reserved, the most expensive first, the
    newest slot first among equals."""
    return sorted(running, key=lambda m: (bool(m.reservation_id), -(m.price_per_hour or 0.0), -m.slot))


def _why(member: MemberRecord) -> str:
    kind = f"reserved ({member.reservation_id})" if member.reservation_id else "on-demand"
    price = "price unknown" if member.price_per_hour is None else f"${member.price_per_hour}/h"
    return f"{kind}, {price}"
