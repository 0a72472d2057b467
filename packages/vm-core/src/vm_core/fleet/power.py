"""`vm fleet stop | start`: every member that can stop is stopped (or started again); one whose cloud cannot
stop VMs (Lambda) is said, with the $/h it keeps billing.

The fleet's lease is held throughout (lease.py), so a person and the watchdog never act on one fleet at once. Only
members recorded `running` with an instance id are acted on: that id was recorded when the cloud accepted the
create of a VM named with the fleet's id, the proof destroy and reconcile go by too. A member whose VM is gone is
recorded missing (as `vm fleet status` records it); one not settled (an intent, a create or a delete under way) is
left alone and makes the action fall short (`vm fleet reconcile` settles it); a released one (it runs outside the
fleet) is not touched. A stopped member keeps the member state `running`: its record says the VM exists and is
the fleet's, its cloud says it is stopped.

Each member's stop or start is its provider's own (`SupportsStopStart`), sent and waited for as `vm stop` and
`vm start` do (calls.start, calls.wait), PARALLEL at a time per provider. A start that could not go back to its
reservation runs on-demand: it is warned about with both prices (the Pending's note), and the member's record
takes its new price and reservation.

The fleet's state afterwards: `stopped` after a stop in which every member that can stop stopped (or already
was); unchanged after a stop that fell short (`vm fleet status` then derives degraded) or that found nothing that
can stop. After a start: active or degraded by how many run (inspect.settled_state), still `stopped` when none
runs and some member could not be started; a fleet that was not settled (interrupted) keeps its state for repair
or reconcile to settle.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..calls import DEFAULT_TIMEOUT, Tracker, fan_out, start, wait
from ..errors import UsageError, VmError
from ..hints import Hint
from ..model import Instance, InstanceState
from ..provider import Explained, Pending, Provider, SupportsStopStart
from ..spend.observe import observe_members
from . import members as mem
from .destroy import recorded_fleet, removed_meanwhile
from .inspect import SETTLED, FleetInspector, MemberView, mark_abandoned, running_message, settled_state
from .lease import lease
from .store import FleetRecord, FleetState, FleetStore, MemberRecord, MemberState

PARALLEL = 16  # members of one provider acted on at once
STOP, START = "stop", "start"
UNSETTLED_STATES = frozenset({MemberState.INTENT, MemberState.CREATING, MemberState.UNKNOWN, MemberState.DESTROYING})
REFUSED = {FleetState.DESTROYING: "being destroyed", FleetState.ROLLING_BACK: "rolling back",
           FleetState.WAITING: "waiting for capacity: nothing of it was placed yet"}


class Result(enum.StrEnum):
    """What a stop or start did to one member."""

    STOPPED = "stopped"
    STARTED = "started"
    ALREADY = "already"  # already in the state asked for: nothing sent (the detail names the state)
    CANNOT_STOP = "cannot stop"  # its cloud has no stop: it keeps running and billing
    CANNOT_START = "cannot start"  # its cloud has no start, and the VM does not run
    MISSING = "missing"  # recorded, but its cloud no longer has it
    UNSETTLED = "unsettled"  # its create or delete is not settled: not acted on
    UNCHECKED = "unchecked"  # its provider could not be asked
    FAILED = "failed"  # the action failed or timed out (a re-run retries)


FAILURES = frozenset({Result.CANNOT_START, Result.UNSETTLED, Result.UNCHECKED, Result.FAILED})


@dataclass(frozen=True, slots=True)
class MemberResult:
    """One member's result, with its VM as last read (None: gone or not read) and why (the note of a start
    that fell back to on-demand, an error's message)."""

    result: Result
    member: MemberRecord
    instance: Instance | None = None
    detail: str = ""

    @property
    def price_per_hour(self) -> float | None:
        """What the VM bills per hour now (None: nothing, or unknown)."""
        return self.instance.running_price if self.instance is not None else None

    @property
    def running(self) -> bool:
        return self.instance is not None and self.instance.state is InstanceState.RUNNING

    def line(self) -> str:
        """`PROVIDER: NAME (ID): RESULT[: DETAIL]`, as fleet/report.Action lines read."""
        m = self.member
        vm = f"{m.name} ({m.instance_id})" if m.instance_id else m.name
        return f"{m.provider}: {vm}: {self.result.value}" + (f": {self.detail}" if self.detail else "")

    def to_json(self) -> dict[str, Any]:
        m = self.member
        return {"action": self.result.value, "provider": m.provider, "name": m.name, "id": m.instance_id or None,
                "state": self.instance.state.value if self.instance is not None else None,
                "price_per_hour": self.price_per_hour, "detail": self.detail or None}


@dataclass
class PowerReport:
    """A fleet stop or start: the fleet afterwards, who acted, and one result per member acted on or looked at
    (in slot order). `skipped` says why nothing was done (the fleet was no longer the one the caller meant)."""

    fleet: FleetRecord
    verb: str  # STOP or START
    actor: str
    members: list[MemberResult] = field(default_factory=list)
    skipped: str = ""

    def of(self, *results: Result) -> list[MemberResult]:
        return [r for r in self.members if r.result in results]

    @property
    def acted(self) -> list[MemberResult]:
        """The members this run stopped or started."""
        return self.of(Result.STOPPED, Result.STARTED)

    @property
    def cannot_stop(self) -> list[MemberResult]:
        """Members whose cloud cannot stop them: they keep running and billing."""
        return self.of(Result.CANNOT_STOP)

    @property
    def failures(self) -> list[MemberResult]:
        """Members that could not be acted on or whose action failed: they may not be as asked."""
        return [r for r in self.members if r.result in FAILURES]

    @property
    def complete(self) -> bool:
        """Every member that can stop (start) now is stopped (runs): nothing failed."""
        return not self.failures and not self.skipped

    @property
    def still_billing(self) -> float:
        """$/h of the members that cannot stop (a stop) or of every running member (a start)."""
        billing = self.cannot_stop if self.verb == STOP else self.members
        return round(sum(r.price_per_hour or 0.0 for r in billing), 4)


class FleetPower:
    """Stops and starts fleets through `providers` (the fleet's own accounts, connected). `progress` gets a line
    per action and state change, `warn` what a person must know (a member that cannot stop, a start on-demand)."""

    def __init__(self, store: FleetStore, providers: Mapping[str, Provider], *,
                 progress: mem.Progress = lambda _: None, warn: mem.Progress | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self.store, self.providers, self.timeout = store, providers, timeout
        self.progress, self.warn = progress, warn or progress
        self._halt = threading.Event()  # the lease was lost: no new action is sent

    def stop(self, name: str, *, actor: str, fleet_id: str | None = None) -> PowerReport:
        """Stop every member that can stop; see the module docstring. Raises NotFound for an unknown fleet (also
        when another process forgets it meanwhile), LeaseRefused while another process holds its lease,
        UsageError for a fleet being destroyed or waiting for capacity, Interrupted on Ctrl-C (the actions
        sent go on in the cloud). `fleet_id`: act only if the fleet still has this id (else `skipped`)."""
        return self._run(name, STOP, actor, fleet_id)

    def start(self, name: str, *, actor: str, fleet_id: str | None = None) -> PowerReport:
        """Start every stopped member again; as `stop` for what it raises."""
        return self._run(name, START, actor, fleet_id)

    def _run(self, name: str, verb: str, actor: str, fleet_id: str | None) -> PowerReport:
        self._halt.clear()
        with removed_meanwhile(name), lease(self.store, name, f"fleet {verb}", on_lost=self._halt.set):
            record = mark_abandoned(self.store, name)  # under its lease nobody creates it
            if fleet_id is not None and record.fleet_id != fleet_id:
                return PowerReport(record, verb, actor, skipped=f"fleet {name} was replaced by another of its name")
            if record.state in REFUSED:
                raise UsageError(f"fleet {name} is {REFUSED[record.state]}: nothing to {verb}",
                                 suggestion=Hint.run("fleet", "status", name))
            view = FleetInspector(self.store, self.providers).view(name)
            results = self._results(view.members, verb)
            observe_members(self.store, [r.instance for r in results if r.instance], record.accounts,
                            f"fleet {verb}", self.warn)
            report = PowerReport(record, verb, actor, results)
            report.fleet = self._settle(record, report)
            return report

    def _results(self, views: Sequence[MemberView], verb: str) -> list[MemberResult]:
        """One result per member looked at, in the views' order: the members to act on are acted on."""
        decided: list[MemberResult | MemberView] = [self._decide(v, verb) for v in views
                                                    if v.member.state is not MemberState.RELEASED]
        todo = [v for v in decided if isinstance(v, MemberView)]
        done = {(r.member.slot, r.member.attempt): r for r in self._act_all(todo, verb)}
        return [d if isinstance(d, MemberResult) else done[(d.member.slot, d.member.attempt)] for d in decided]

    def _decide(self, view: MemberView, verb: str) -> MemberResult | MemberView:
        """The member's result when nothing is to be sent, else the view itself (to act on)."""
        member, instance = view.member, view.instance
        if member.state in UNSETTLED_STATES:
            return MemberResult(Result.UNSETTLED, member, instance,
                                f"recorded {member.state.value}: its create or delete is not settled")
        if not view.checked:
            return MemberResult(Result.UNCHECKED, member, None, "its provider could not be asked")
        if instance is None or member.state is MemberState.MISSING or instance.state.gone:
            return MemberResult(Result.MISSING, member, instance, "gone from the cloud")
        provider = self.providers[member.provider]
        goal = InstanceState.STOPPED if verb == STOP else InstanceState.RUNNING
        if instance.state is goal or (verb == STOP and instance.state.not_billed):
            return MemberResult(Result.ALREADY, member, instance, instance.state.value)
        if not isinstance(provider, SupportsStopStart):
            return self._cannot(member, instance, verb)
        return view

    def _cannot(self, member: MemberRecord, instance: Instance, verb: str) -> MemberResult:
        """A member on a provider without stop/start: said, with what it bills."""
        if verb == START:
            return MemberResult(Result.CANNOT_START, member, instance,
                                f"{member.provider} cannot start VMs, and it is {instance.state.value}")
        price = instance.running_price
        rate = f"${price:.2f}/h" if price is not None else "its price (unknown)"
        result = MemberResult(Result.CANNOT_STOP, member, instance,
                              f"{member.provider} has no stop (only destroy): it keeps running and billing {rate}")
        self.warn(result.line())
        return result

    def _act_all(self, todo: Sequence[MemberView], verb: str) -> list[MemberResult]:
        """Act on every member, PARALLEL lanes per provider (one member after the other in a lane); Ctrl-C is
        Interrupted, naming the actions that go on in the cloud."""
        if not todo:
            return []
        tracker = Tracker()
        lanes = _lanes(todo)
        try:
            outcomes = fan_out(lambda lane: [self._act(v, verb, tracker) for v in lane], lanes)
        except KeyboardInterrupt:
            raise tracker.interrupted(sorted({v.member.provider for v in todo})) from None
        results: list[MemberResult] = []
        for lane, outcome in zip(lanes, outcomes, strict=True):
            if outcome.value is not None:
                results += outcome.value
            else:  # a bug below the provider's calls: every member of the lane is unknown
                why = outcome.error.message if outcome.error is not None else "no result"
                results += [MemberResult(Result.FAILED, v.member, v.instance, why) for v in lane]
        return results

    def _act(self, view: MemberView, verb: str, tracker: Tracker) -> MemberResult:
        """Send one member's stop or start and wait for it; a failure is its result."""
        member = view.member
        if self._halt.is_set():
            return MemberResult(Result.FAILED, member, view.instance, "not sent: the fleet's lease was taken over")
        provider = self.providers[member.provider]
        assert isinstance(provider, SupportsStopStart)
        begin: Callable[[str], Pending[Instance]] = provider.begin_stop if verb == STOP else provider.begin_start
        try:
            pending, accepted = start(provider, verb, lambda: begin(member.instance_id), tracker, self.progress,
                                      member.name)
            instance = wait(pending, provider, accepted, timeout=self.timeout, progress=self.progress,
                            warn=self.warn)
        except VmError as exc:
            return MemberResult(Result.FAILED, member, view.instance, exc.message)
        note = pending.note if isinstance(pending, Explained) else ""
        if verb == START:
            member = mem.record(self.store, member, price_per_hour=instance.price_per_hour,
                                reservation_id=instance.reservation_id)
        return MemberResult(Result.STOPPED if verb == STOP else Result.STARTED, member, instance, note)

    def _settle(self, record: FleetRecord, report: PowerReport) -> FleetRecord:
        """Record the fleet's state and message after the action (see the module docstring)."""
        name, by = record.name, f" by {report.actor}" if report.actor else ""
        if report.verb == STOP:
            stoppable = report.of(Result.STOPPED, Result.ALREADY)
            if report.failures:
                message = f"stop{by}: {len(report.failures)} VM(s) could not be stopped"
                return self.store.update_fleet(name, message=message)
            if not stoppable:
                return recorded_fleet(self.store, name)
            return self.store.update_fleet(name, state=FleetState.STOPPED, message=_stopped(report, by))
        running = sum(1 for r in report.members if r.running)
        if record.state not in SETTLED | {FleetState.STOPPED}:  # e.g. interrupted: repair or reconcile settle it
            return self.store.update_fleet(name, message=f"start{by}: {running} VM(s) running")
        if running == 0 and report.failures and record.state is FleetState.STOPPED:
            return self.store.update_fleet(name, message=f"start{by}: no VM could be started")
        return self.store.update_fleet(name, state=settled_state(record.count, running),
                                       message=running_message(record, running))


def _stopped(report: PowerReport, by: str) -> str:
    stopped = len(report.of(Result.STOPPED, Result.ALREADY))
    text = f"stopped{by}: {stopped} VM(s) stopped"
    if report.cannot_stop:
        text += f"; {len(report.cannot_stop)} cannot stop and keep billing ${report.still_billing:.2f}/h"
    return text


def _lanes(views: Sequence[MemberView]) -> list[list[MemberView]]:
    """The members split into at most PARALLEL lanes per provider, round robin, in order."""
    lanes: list[list[MemberView]] = []
    by_provider: dict[str, list[MemberView]] = {}
    for view in views:
        by_provider.setdefault(view.member.provider, []).append(view)
    for members in by_provider.values():
        count = min(len(members), PARALLEL)
        lanes += [list(members[i::count]) for i in range(count)]
    return lanes


def stop_fleet(store: FleetStore, record: FleetRecord, providers: Mapping[str, Provider], *, actor: str,
               progress: mem.Progress = lambda _: None, warn: mem.Progress | None = None,
               timeout: float = DEFAULT_TIMEOUT) -> PowerReport:
    """Stop `record`'s fleet (the watchdog's and budget enforcement's entry point; the same path as
    `vm fleet stop`): `providers` connected in the fleet's own accounts, `actor` who acts (`user@host`, or the
    watchdog). The report says whether every member that can stop stopped (`complete`) and which cannot
    (`cannot_stop`, still billing). Nothing is done (`skipped`) when the fleet of that name is no longer this
    record's (another id). Raises as FleetPower.stop."""
    power = FleetPower(store, providers, progress=progress, warn=warn, timeout=timeout)
    return power.stop(record.name, actor=actor, fleet_id=record.fleet_id)
