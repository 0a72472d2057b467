"""Creating a fleet: place every VM, fail over on capacity, and never lose track of one.

The fleet gets a random id first (naming.py); every VM is created with a name and labels that carry it. Each slot
attempt follows the steps of attempts.py: record the intent (store) -> call the cloud -> record the ids -> wait ->
record the outcome; a create that fails ambiguously (lost response, 5xx, timeout) is resolved by looking the member
up by its name (a VM found there counts only if it carries the fleet's id) before anything is retried, and a final
sweep looks again for every unresolved attempt, so a VM that shows up late is adopted or destroyed, never doubled.
Where the slots go is a policy over those attempts: spread_place.py (the strategy's placement, each failed slot
placed again as soon as its failure is known) or cluster_place.py (`--placement cluster`: all in one place).
Below `min_count` the fleet rolls back: every VM it created is destroyed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..calls import DEFAULT_TIMEOUT
from ..catalog import default_catalog
from ..errors import AuthError, Transient, UsageError, VmError
from ..hints import Command, Hint
from ..model import Instance, Offer
from ..plugins import DEFAULT_CREATE_CONCURRENCY
from ..provider import Provider, SupportsAccount
from . import members as mem
from . import spot
from .attempts import MIN_CLEANUP_TIMEOUT, Attempts, Context
from .budget import check_budget
from .cluster_place import ClusterPlacer, plan_for
from .destroy import FleetDestroyer
from .eligibility import enforced
from .lease import lease, user_at_host
from .naming import FleetIdentity, check_fleet_name, new_fleet_id
from .offers import OfferCache, OfferSet, held_by_members
from .placement import Placement
from .spec import FleetSpec, spec_of
from .spread_place import SpreadPlacer
from .store import FleetExists, FleetRecord, FleetState, FleetStore, MemberRecord
from .strategies import Blocked, Strategy, unlisted_reservation

__all__ = ["CreateReport", "FleetCreator", "FleetSpec", "PlaceReport", "accounts", "spec_of"]


@dataclass
class CreateReport:
    fleet: FleetRecord
    running: list[Instance]
    notes: list[str] = field(default_factory=list)  # per attempt, what went wrong
    errors: list[VmError] = field(default_factory=list)  # the failures behind the notes, for the exit code
    rolled_back: bool = False
    interrupted: bool = False
    unresolved: list[str] = field(default_factory=list)  # VMs that may exist and could not be cleaned up


@dataclass
class PlaceReport:
    """What placing slots into an existing fleet did: the running VMs by slot, and what went wrong."""

    running: dict[int, Instance]
    notes: list[str] = field(default_factory=list)
    errors: list[VmError] = field(default_factory=list)
    interrupted: bool = False


class FleetCreator:
    """Blocking; safe to interrupt with `stop` (no new creates start; the fleet is left `interrupted`)."""

    def __init__(self, store: FleetStore, providers: Mapping[str, Provider], strategy: Strategy, *,
                 offers: OfferCache | None = None, progress: mem.Progress = lambda _: None,
                 timeout: float = DEFAULT_TIMEOUT, concurrency: Mapping[str, int] | None = None,
                 profile: str = "") -> None:
        self.store, self.providers, self.profile = store, providers, profile
        self.strategy = enforced(strategy, on_drop=progress)  # the engine's rules, whatever the strategy answers
        self.identity = FleetIdentity("", "")  # set when the fleet is registered
        self.offers = offers or OfferCache()
        self.progress, self.timeout = progress, timeout
        # concurrent create calls per provider: what its plugin declares (the caller reads it from the session)
        self.caps = {name: (concurrency or {}).get(name, DEFAULT_CREATE_CONCURRENCY) for name in providers}
        self.stop = threading.Event()
        self.errors: list[VmError] = []  # the failures of the last placement, for the exit code

    @property
    def cleanup_timeout(self) -> float:
        return max(self.timeout, MIN_CLEANUP_TIMEOUT)

    def plan(self, spec: FleetSpec, held: Sequence[MemberRecord] = ()) -> tuple[list[Offer], OfferSet]:
        """The placement the strategy would choose now (for --dry-run); changes nothing. `held`: the members of
        the fleet a dry grow adds to (what they hold of a sized reservation is not free: `held_by_members`).
        Raises UsageError where `create` would (a region where no provider sells the GPU)."""
        offers = held_by_members(self.gather(spec), held, self.providers)
        return self._planned(spec, offers), offers

    def _planned(self, spec: FleetSpec, offers: OfferSet) -> list[Offer]:
        blocked = Blocked(providers=frozenset(offers.problems))
        if not spec.spot:
            return self.strategy(offers.offers, spec.request(spec.count, offers.unterminable_reservations), blocked)
        slots = range(spec.count)  # a spot fleet's members over the offers of their kinds (spot.py)
        return [offer for _, offer in spot.place_priced(
            slots, spot.slot_choices(spec, slots), offers.offers,
            lambda kind, n: self.strategy(kind, spec.request(n, offers.unterminable_reservations), blocked))]

    def create(self, spec: FleetSpec) -> CreateReport:
        """Create the fleet, holding its lease (lease.py) from before it is recorded to the end. Raises UsageError
        when the name exists or another process holds its lease, BudgetError (before anything is recorded) when
        the plan costs more than spec.max_price; otherwise reports what happened. Failover never goes above the
        cap either: a slot that only fits above it stays empty."""
        check_fleet_name(spec.name)
        offers = self.gather(spec)
        _check_reachable(offers)
        if spec.placement is Placement.CLUSTER:
            _check_cluster(spec, offers)
        if spec.max_price is not None:
            over = check_budget(self._planned(spec, offers), spec.max_price)
            if over is not None:
                raise over
        with lease(self.store, spec.name, "fleet create", on_lost=self.stop.set):
            self.register(spec)
            running, notes, failure = self._place(spec, offers, range(spec.count))
            report = self._finish(spec, list(running.values()), notes)
            if failure and report.rolled_back:
                report.fleet = self.store.update_fleet(spec.name, message=f"{failure}; rolled back")
            return report

    def place(self, record: FleetRecord, spec: FleetSpec, slots: Sequence[int]) -> PlaceReport:
        """Place `slots` (new slot numbers) into the existing fleet `record` with the machinery of `create`
        (intent first, the fleet's id on every VM, failover, retries, final sweep); `spec` describes the fleet
        (see `spec_of`), the fleet's members taken off the sized reservations they hold (`held_by_members`).
        The caller holds the fleet's lease and settles the fleet record. Raises like `create` before anything is
        recorded (no provider usable, region not sold)."""
        self.identity = FleetIdentity(record.name, record.fleet_id)
        offers = held_by_members(self.gather(spec), self.store.members(record.name), self.providers)
        _check_reachable(offers)
        running, notes, _ = self._place(spec, offers, slots)
        return PlaceReport(running, notes, list(self.errors), interrupted=self.stop.is_set())

    def _place(self, spec: FleetSpec, offers: OfferSet,
               slots: Iterable[int]) -> tuple[dict[int, Instance], list[str], str]:
        """Place every slot (all in one place with cluster placement), then sweep its unresolved attempts; the
        running VMs by slot, what went wrong, and why a cluster could not be placed ('' otherwise)."""
        notes = [*offers.left_out.values(), *(f"{n}: no offers ({why})" for n, why in offers.problems.items())]
        for note in notes:
            self.progress(note)
        ctx = Context(self.store, self.providers, self.identity, self.offers, self.progress, self.timeout,
                      self.stop)
        attempts = Attempts(ctx, spec, self.caps, errors=offers.errors.values(),
                            unlisted_reservation=unlisted_reservation(offers.offers, spec.reservation))
        self.errors = attempts.errors
        wanted, blocked, failure = list(slots), Blocked(providers=frozenset(offers.problems)), ""
        with attempts.open():
            if spec.placement is Placement.CLUSTER:
                placer = ClusterPlacer(attempts, spec, offers, notes)
                running, failure = placer.place(blocked), placer.failure
            else:
                running = SpreadPlacer(attempts, spec, offers, self.strategy, blocked, notes).run(wanted)
        running.update(attempts.sweep(wanted, len(running)))
        return running, notes, failure

    def gather(self, spec: FleetSpec) -> OfferSet:
        """The offers of the fleet's one size from the providers that sell it; the others are left out with a
        note. Raises UsageError, before anything is recorded, when no provider sells the size (the catalog
        decides without a call), the region sells none of the GPU, or the spot members of a spot fleet no provider
        can hold (spot.py: a spot fleet also gathers the spot offers of the providers that sell spot)."""
        spot.check_spot(spec)
        left_out = _left_out(spec, self.providers)
        spot.check_sold(spec, {n: p for n, p in self.providers.items() if n not in left_out})
        offers = self.offers.gather({n: p for n, p in self.providers.items() if n not in left_out}, spec.gpu,
                                    spec.gpu_count)
        offers.left_out = left_out
        if spec.spot:
            offers = spot.with_spot_offers(offers, {n: p for n, p in self.providers.items() if n not in left_out},
                                           spec.gpu, spec.gpu_count)
        _check_region(spec, offers)
        return offers

    def register(self, spec: FleetSpec, *, state: FleetState = FleetState.CREATING, wait_until: float | None = None,
                 message: str = "") -> None:
        """Record the new fleet of `spec` with a new fleet id, in `state` (a fleet waiting for capacity: WAITING
        until `wait_until`); the caller holds its lease. UsageError when the name is taken."""
        check_fleet_name(spec.name)
        self.identity = FleetIdentity(spec.name, new_fleet_id())
        record = FleetRecord(name=spec.name, gpu=spec.gpu, gpu_count=spec.gpu_count, count=spec.count,
                             min_count=spec.min_count, strategy=spec.strategy, providers=spec.providers,
                             region=spec.region, reservation=spec.reservation, placement=spec.placement,
                             owner_pid=os.getpid(), fleet_id=self.identity.fleet_id, profile=self.profile,
                             accounts=accounts(self.providers), created_by=user_at_host(),
                             max_price=spec.max_price, machine=spec.machine, maintain=spec.maintain,
                             spot=spec.spot, on_demand_base=spec.on_demand_base, spot_fallback=spec.spot_fallback,
                             state=state, wait_until=wait_until, message=message, budget=spec.budget,
                             on_budget=spec.on_budget)
        if spec.ttl is not None:
            record = replace(record, expires_at=record.created_at + spec.ttl)
        try:
            self.store.create_fleet(record)
        except FleetExists as exc:
            raise UsageError(f"a fleet named {spec.name!r} already exists",
                             suggestion=Hint.say("see {}, or pick another name",
                                                         Command.of("fleet", "status", spec.name))) from exc

    def _finish(self, spec: FleetSpec, running: list[Instance], notes: list[str]) -> CreateReport:
        if self.stop.is_set():
            record = self.store.update_fleet(spec.name, state=FleetState.INTERRUPTED,
                                             message=f"interrupted with {len(running)} of {spec.count} running")
            return CreateReport(record, running, notes, self.errors, interrupted=True)
        if len(running) >= spec.min_count:
            state = FleetState.ACTIVE if len(running) == spec.count else FleetState.DEGRADED
            record = self.store.update_fleet(spec.name, state=state,
                                             message=f"{len(running)} of {spec.count} running")
            return CreateReport(record, running, notes, self.errors)
        return self._roll_back(spec, running, notes)

    def _roll_back(self, spec: FleetSpec, running: list[Instance], notes: list[str]) -> CreateReport:
        self.progress(f"only {len(running)} of {spec.count} VMs (minimum {spec.min_count}): rolling back")
        record = self.store.update_fleet(spec.name, state=FleetState.ROLLING_BACK)
        result = FleetDestroyer(self.store, self.providers, progress=self.progress, timeout=self.cleanup_timeout)
        report = result.destroy_members(record)
        unresolved = report.failures + [a.line() for a in report.released]
        record = self.store.update_fleet(
            spec.name, state=FleetState.FAILED,
            message=f"{len(running)} of {spec.count} could be created (minimum {spec.min_count}); rolled back")
        return CreateReport(record, [], notes, self.errors, rolled_back=True, unresolved=unresolved)


def accounts(providers: Mapping[str, Provider]) -> dict[str, str]:
    """Each provider's account fingerprint ('' where a provider cannot tell)."""
    return {name: p.account() if isinstance(p, SupportsAccount) else "" for name, p in providers.items()}


def _check_reachable(offers: OfferSet) -> None:
    """Before anything is recorded: when no provider answered, the error of them all (every credential
    refused: AuthError, exit 4; every provider unreachable: Transient, exit 8)."""
    if offers.offers or not offers.errors:
        return
    errors = list(offers.errors.values())
    for kind in (AuthError, Transient):
        if all(isinstance(e, kind) for e in errors):
            raise kind("no provider could be used: " + "; ".join(f"{n}: {e.message}" for n, e in
                                                                 offers.errors.items()))


def _left_out(spec: FleetSpec, providers: Mapping[str, Provider]) -> dict[str, str]:
    """Provider -> why it cannot host the fleet's size, from the catalog (e.g. "crusoe sells H100 only as
    H100:8"). UsageError when that leaves no provider (third-party providers are never left out: their offers
    decide)."""
    catalog = default_catalog()
    left_out = {name: note for name in providers
                if (note := catalog.size_note(name, spec.gpu, spec.gpu_count)) is not None}
    if providers and len(left_out) == len(providers):
        raise UsageError(f"no provider sells {spec.gpu}:{spec.gpu_count} VMs: {'; '.join(left_out.values())}",
                         suggestion=Hint.say("see {} for the sizes sold", Command.of("offers", "--gpu", spec.gpu)))
    return left_out


def _check_cluster(spec: FleetSpec, offers: OfferSet) -> None:
    """CapacityError (before anything is recorded) when no single place can hold a cluster fleet."""
    refusal = plan_for(spec, offers).failure()
    if refusal is not None:
        raise refusal


def _check_region(spec: FleetSpec, offers: OfferSet) -> None:
    """UsageError (before anything is recorded) for a region where no provider sells the GPU at all."""
    sold = sorted({o.region for o in offers.offers if o.gpu == spec.gpu})
    if spec.region is not None and spec.region not in sold:
        raise UsageError(f"no provider sells {spec.gpu} in region {spec.region!r}; regions that do: "
                         f"{', '.join(sold) or 'none'}")
