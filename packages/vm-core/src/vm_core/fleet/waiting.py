"""Waiting for capacity (`vm fleet create --wait-for-capacity DURATION`): a fleet that cannot be placed now is
recorded `waiting` and placed when the clouds have room.

The fleet is recorded first (state WAITING, `wait_until` = now + DURATION, no member), under its lease as any
create. Each *check* (`FleetWaiter.check`) reads the offers afresh and asks the strategy for a plan: while the plan
holds fewer VMs than the fleet asks for, or costs more than its price cap (--max-price), the fleet goes on waiting
and its message says how many are placeable now and until when it waits; nothing is created. Once a plan holds
them all within the cap, the fleet is placed with the machinery of `vm fleet create` (FleetCreator.place: intent
first, the fleet's id on every VM, failover, final sweep). All or nothing: a placement that ends below the fleet's
minimum count is rolled back (every VM it created destroyed) and the fleet waits again. At `wait_until` the wait
gives up: the fleet is `failed` and nothing of it is left.

Offers are where the clouds publish capacity (Crusoe's capacity, Lambda's regions with capacity): no create
probes those. A cloud that publishes none (Nebius: its offers are always available, capacity unknown) is only
learnt about by creating there, so a plan that counts on it is placed and rolled back if the cloud refuses. Checks
are `poll_interval` apart: POLL_ROUNDS of the slowest provider's follower interval (30 s on the real clouds, each
within its documented rate limits; scaled with the mock clouds' time scale), at least MIN_POLL seconds.

Resuming: the check holds no state outside the store, so re-running the same create from any machine (after Ctrl-C,
or a laptop closed) finds the waiting record and goes on (`wait` under the lease), and the watchdog calls `check`
once per round (`check_waiting`; for a Python caller, api/fleet_maintain.py `advance_waiting`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from ..calls import DEFAULT_TIMEOUT
from ..errors import AuthError, UsageError, VmError
from ..hints import Command, Hint
from ..model import Instance
from ..provider import Provider
from .budget import check_budget
from .create import CreateReport, FleetCreator
from .destroy import FleetDestroyer
from .follower import poll_interval
from .lease import lease
from .naming import check_fleet_name
from .offers import OfferCache, OfferSet
from .placement import Placement
from .scale import new_slots
from .spec import FleetSpec, spec_of
from .store import FleetRecord, FleetState, FleetStore

POLL_ROUNDS = 30  # checks are this many of the slowest provider's poll intervals apart
MIN_POLL = 0.2  # seconds: never closer than this


def poll_every(providers: Mapping[str, Provider]) -> float:
    """Seconds between two checks of a waiting fleet over `providers` (see the module docstring)."""
    slowest = max((poll_interval(p) for p in providers.values()), default=1.0)
    return max(POLL_ROUNDS * slowest, MIN_POLL)


@dataclass
class WaitReport:
    """Where a wait stands after a check (or a wait that ended): `placed` is the create's report once the fleet
    was placed (or rolled back); `placeable` how many VMs the last plan held; `interrupted` when a Ctrl-C ended
    the wait (the fleet stays waiting, resumable); `gave_up` when the wait reached `wait_until`."""

    fleet: FleetRecord
    placeable: int = 0
    placed: CreateReport | None = None
    interrupted: bool = False
    gave_up: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def waiting(self) -> bool:
        return self.fleet.state is FleetState.WAITING


class FleetWaiter:
    """Waits for capacity through `creator` (its store, providers, strategy, progress and `stop`). `clock` is
    the epoch clock `wait_until` is measured on (injectable for tests)."""

    def __init__(self, creator: FleetCreator, *, clock: Callable[[], float] = time.time) -> None:
        self.creator, self.clock = creator, clock
        self.store = creator.store

    def create(self, spec: FleetSpec) -> WaitReport:
        """Record the fleet waiting (UsageError when the name exists or its lease is held, as `create`; the
        checks of `create` before anything is recorded are made first: names, sizes, region, spot options), then
        `wait`. Blocks until the fleet is placed, the wait gives up, or `stop` is set."""
        assert spec.wait is not None
        check_fleet_name(spec.name)
        _check_credentials(self.creator.gather(spec))  # raises what create would, before anything is recorded
        with lease(self.store, spec.name, "fleet create", on_lost=self.creator.stop.set):
            # a --ttl counts from the placement: recorded after the whole wait, so `vm fleet reap` leaves a waiting
            # fleet alone, and set from the placement once placed (`_place`)
            ttl = None if spec.ttl is None else spec.ttl + spec.wait
            self.creator.register(replace(spec, ttl=ttl), state=FleetState.WAITING,
                                  wait_until=self.clock() + spec.wait, message="waiting for capacity")
            return self._wait(spec)

    def resume(self, record: FleetRecord, spec: FleetSpec) -> WaitReport:
        """Go on waiting for the recorded waiting fleet `record`, as the same create asked again (`spec`: its
        options; UsageError when they are not the recorded fleet's). Blocks as `create`."""
        _check_same(record, spec)
        with lease(self.store, record.name, "fleet create", on_lost=self.creator.stop.set):
            return self._wait(spec)

    def advance(self, record: FleetRecord) -> WaitReport:
        """One check of the waiting fleet `record` under its lease, with the options it was recorded with (the
        providers' default SSH keys: the record keeps none). UsageError while another process holds the lease."""
        with lease(self.store, record.name, "fleet wait", on_lost=self.creator.stop.set):
            return self.check(waiting_spec(record))

    def _wait(self, spec: FleetSpec) -> WaitReport:
        every = poll_every(self.creator.providers)
        while True:
            report = self.check(spec)
            if not report.waiting:
                return report
            if self.creator.stop.wait(every):
                report.interrupted = True
                return report

    def check(self, spec: FleetSpec) -> WaitReport:
        """One check of the waiting fleet named `spec.name` (the caller holds its lease): give up at its
        `wait_until`; otherwise place it when a plan holds every VM within the price cap, else say how many are
        placeable and go on waiting. Never raises for capacity: the report says."""
        record = self.store.get_fleet(spec.name)
        if record is None or record.state is not FleetState.WAITING:
            raise UsageError(f"fleet {spec.name} is not waiting for capacity",
                             suggestion=Hint.run("fleet", "status", spec.name))
        if self.clock() >= (record.wait_until or 0.0):
            return self._give_up(record)
        self.creator.offers = OfferCache()  # each check reads the clouds afresh
        try:
            planned, _ = self.creator.plan(spec)
        except VmError as exc:  # every provider unreachable, for now: wait on
            return self._still(record, spec, 0, f"no offers: {exc.message}")
        over = check_budget(planned, spec.max_price) if planned else None
        if len(planned) < spec.count or over is not None:
            return self._still(record, spec, len(planned), over.message if over is not None else "")
        return self._place(record, spec)

    def _still(self, record: FleetRecord, spec: FleetSpec, placeable: int, why: str) -> WaitReport:
        until = datetime.fromtimestamp(record.wait_until or 0.0, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        message = (f"waiting for capacity: {placeable} of {spec.count} {spec.gpu}:{spec.gpu_count} placeable now"
                   f"{f' ({why})' if why else ''}; until {until}")
        if message != record.message:
            self.creator.progress(message)
            record = self.store.update_fleet(record.name, message=message)
        return WaitReport(record, placeable=placeable)

    def _place(self, record: FleetRecord, spec: FleetSpec) -> WaitReport:
        """Place every VM of the fleet; below its minimum, roll back and wait again."""
        self.creator.progress(f"capacity for {spec.count} VM(s): placing fleet {record.name}")
        slots = new_slots(self.store.members(record.name), spec.count)
        record = self.store.update_fleet(record.name, state=FleetState.CREATING, message="placing")
        try:
            placed = self.creator.place(record, spec, slots)
        except VmError as exc:  # refused before any call (no provider usable now): wait on
            record = self.store.update_fleet(record.name, state=FleetState.WAITING)
            return self._still(record, spec, 0, exc.message)
        running = list(placed.running.values())
        if placed.interrupted:
            record = self.store.update_fleet(record.name, state=FleetState.INTERRUPTED,
                                             message=f"interrupted with {len(running)} of {spec.count} running")
            return WaitReport(record, spec.count, _report(record, running, placed.notes, placed.errors, True))
        if len(running) >= spec.min_count:
            state = FleetState.ACTIVE if len(running) == spec.count else FleetState.DEGRADED
            record = self.store.update_fleet(record.name, state=state, expires_at=_expiry(record, self.clock()),
                                             message=f"{len(running)} of {spec.count} running")
            return WaitReport(record, spec.count, _report(record, running, placed.notes, placed.errors))
        return self._short(record, spec, len(running), placed.notes)

    def _short(self, record: FleetRecord, spec: FleetSpec, running: int, notes: list[str]) -> WaitReport:
        """A placement below the minimum: destroy what it created, and wait again."""
        self.creator.progress(f"only {running} of {spec.count} VMs (minimum {spec.min_count}): rolling back, "
                              "waiting again")
        destroyed = FleetDestroyer(self.store, self.creator.providers, progress=self.creator.progress,
                                   timeout=self.creator.cleanup_timeout).destroy_members(record)
        left = [a.line() for a in destroyed.released] + destroyed.failures
        record = self.store.update_fleet(record.name, state=FleetState.WAITING,
                                         message=f"{running} of {spec.count} could be placed; rolled back"
                                                 + (f", {len(left)} VM(s) not destroyed" if left else ""))
        return WaitReport(record, running, notes=notes + left)

    def _give_up(self, record: FleetRecord) -> WaitReport:
        """The wait reached `wait_until`: destroy whatever may be left of the fleet, and mark it failed."""
        left: list[str] = []
        if any(m.state.may_run for m in self.store.members(record.name)):
            destroyed = FleetDestroyer(self.store, self.creator.providers, progress=self.creator.progress,
                                       timeout=self.creator.cleanup_timeout).destroy_members(record)
            left = [a.line() for a in destroyed.released] + destroyed.failures
        waited = _duration((record.wait_until or record.created_at) - record.created_at)
        record = self.store.update_fleet(record.name, state=FleetState.FAILED,
                                         message=f"gave up waiting for capacity after {waited}")
        self.creator.progress(f"fleet {record.name}: {record.message}")
        report = _report(record, [], [], [])
        report.rolled_back, report.unresolved = True, left
        return WaitReport(record, placed=report, gave_up=True, notes=left)


def check_waiting(store: FleetStore, providers: Mapping[str, Provider], record: FleetRecord, *,
                  progress: Callable[[str], None] = lambda _: None, timeout: float = DEFAULT_TIMEOUT,
                  concurrency: Mapping[str, int] | None = None) -> WaitReport:
    """One check of the waiting fleet `record` over `providers` (the fleet's own accounts), under its lease
    (nested in the caller's when the caller holds it): what a watchdog duty runs for a WAITING fleet each pass.
    Gives up at its `wait_until`, places it when the clouds have room within its cap, else records how many VMs
    are placeable. Raises UsageError while another process holds the lease or when the fleet is not waiting."""
    from .service import strategy_named

    chosen = strategy_named("cheapest" if record.placement is Placement.CLUSTER else record.strategy)
    creator = FleetCreator(store, providers, chosen, progress=progress, timeout=timeout, concurrency=concurrency,
                           profile=record.profile)
    return FleetWaiter(creator).advance(record)


def _check_credentials(offers: OfferSet) -> None:
    """AuthError (exit 4, before anything is recorded) when every provider refused its credentials: no capacity
    will ever be seen through them. Providers that could not be reached are waited for."""
    errors = list(offers.errors.values())
    if not offers.offers and errors and all(isinstance(e, AuthError) for e in errors):
        raise AuthError("no provider could be used: " + "; ".join(f"{n}: {e.message}" for n, e in
                                                                 offers.errors.items()))


def waiting_spec(record: FleetRecord) -> FleetSpec:
    """The spec of a recorded waiting fleet: every VM it asks for, with its placement, price cap and spot
    options (its whole on-demand base: nothing of it runs yet)."""
    spec = spec_of(record, record.count, on_demand=record.on_demand_base)
    return replace(spec, min_count=record.min_count, placement=record.placement, max_price=record.max_price,
                   wait=(record.wait_until or record.created_at) - record.created_at)


def _check_same(record: FleetRecord, spec: FleetSpec) -> None:
    """UsageError unless `spec` asks for the fleet `record` records (its GPU, size and count)."""
    asked = (spec.gpu, spec.gpu_count, spec.count)
    recorded = (record.gpu, record.gpu_count or 1, record.count)
    if asked != recorded:
        raise UsageError(f"fleet {record.name} is waiting for {recorded[2]} x {recorded[0]}:{recorded[1]}, not "
                         f"{asked[2]} x {asked[0]}:{asked[1]}",
                         suggestion=Hint.say("re-run its own create to go on waiting, or see {}",
                                             Command.of("fleet", "status", record.name)))


def _expiry(record: FleetRecord, placed_at: float) -> float | None:
    """When a fleet placed at `placed_at` expires: its ttl (recorded as counted from the end of the wait) from
    then; None without a ttl."""
    if record.expires_at is None:
        return None
    return placed_at + record.expires_at - (record.wait_until or record.created_at)


def _report(record: FleetRecord, running: list[Instance], notes: list[str], errors: list[VmError],
            interrupted: bool = False) -> CreateReport:
    return CreateReport(record, running, list(notes), list(errors), interrupted=interrupted)


def _duration(seconds: float) -> str:
    """A wait's length as the option spells one: 2h, 30m, 1h30m, 45s."""
    whole, parts = int(round(seconds)), []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if whole >= size:
            parts.append(f"{whole // size}{unit}")
            whole %= size
    return "".join(parts) or "0s"
