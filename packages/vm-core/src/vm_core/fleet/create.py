"""Creating a fleet: place every VM, fail over on capacity, and never lose track of one.

The fleet gets a random id first (naming.py); every VM is created with a name and labels that carry it. For each
slot the order is always: record the intent (store) -> call the cloud -> record the ids -> wait -> record the
outcome. A create that fails ambiguously (lost response, 5xx, timeout) is resolved by looking the member up by
its name (a VM found there counts only if it carries the fleet's id) before anything is retried; a final sweep
looks again for every unresolved attempt, so a VM that shows up late is adopted or destroyed, never doubled.
Below `min_count` the fleet rolls back: every VM it created is destroyed.

Threads stay bounded whatever the fleet's size: create calls run in a pool per provider (create_concurrency),
the boots are followed by one watcher per provider (create_watch.py: one listing or batch read per round for all of
them, or each Pending's `done()` for providers without that capability), and what follows a boot (recording,
cleanup of a failed create) runs in a small pool. A slot whose attempt fails is placed again as soon as the
failure is known, not when the rest of its batch has booted (`_Placing`).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from ..actions import DEFAULT_TIMEOUT
from ..catalog import default_catalog
from ..errors import (
    AuthError,
    CapacityError,
    Interrupted,
    QuotaError,
    Scope,
    StrategyError,
    Timeout,
    Transient,
    UsageError,
    VmError,
)
from ..hints import Command, Hint, phrase
from ..machine import MachineOptions
from ..model import CreateSpec, Instance, Offer, ReservationMode, ReservationRequest
from ..plugins import create_concurrency
from ..provider import Pending, Provider, SupportsAccount
from . import members as mem
from .budget import check_budget
from .cluster import Placement
from .create_watch import CreateWatcher, Located
from .eligibility import enforced
from .lease import lease, user_at_host
from .naming import FleetIdentity, check_fleet_name, new_fleet_id
from .offers import OfferCache, OfferSet, held_by_members
from .steps import Step, StepKind
from .store import FleetExists, FleetRecord, FleetState, FleetStore, MemberRecord, MemberState
from .strategies import Blocked, FleetRequest, Strategy, offer_key, unlisted_reservation

MAX_ATTEMPTS_PER_SLOT = 6
# A round in which nothing succeeded and nothing was ruled out (transient failures only) is retried after this
# backoff (seconds, doubling); the attempt limit per slot bounds the retries.
RETRY_BACKOFF, MAX_RETRY_BACKOFF = 0.5, 8.0
# Cleaning up a VM that did not come up in time may take longer than the create's own --timeout.
MIN_CLEANUP_TIMEOUT = 600.0
# Create calls run in a pool per provider of its plugin's `create_concurrency` threads (the SDKs' own limiters
# pace requests within these). Waiting for a VM to boot holds no thread: one watcher per provider follows them all
# (create_watch.py).
# Threads that finish attempts: record a running VM, ask a failed create's Pending why, clean up after it, or
# resolve an ambiguous create by name.
FINISH_WORKERS = 16
# The placing thread looks at `stop` at least this often (seconds) while it waits for results.
WAKE_INTERVAL = 0.2


@dataclass(frozen=True)
class FleetSpec:
    name: str
    gpu: str
    count: int
    min_count: int
    strategy: str = "spread"
    gpu_count: int = 1  # GPUs per VM: every member of a fleet has the same size
    providers: tuple[str, ...] | None = None
    region: str | None = None
    reservation: ReservationRequest = ReservationRequest()
    allow_unterminable: bool = False
    ssh_public_key: str | None = None  # installed on every member (None: each provider's own default)
    placement: Placement = Placement.ANY  # CLUSTER: every member in one place (cluster_place.py)
    ttl: float | None = None  # seconds until `vm fleet reap` may destroy it (None: never)
    max_price: float | None = None  # the cap on the fleet's total $/h (budget.py)
    machine: MachineOptions = MachineOptions()  # image, boot disk and startup script of every member (recorded)

    def request(self, count: int, unterminable: frozenset[str]) -> FleetRequest:
        return FleetRequest(gpu=self.gpu, count=count, gpu_count=self.gpu_count, region=self.region,
                            providers=self.providers, reservation=self.reservation,
                            allow_unterminable=self.allow_unterminable, unterminable_reservations=unterminable)


@dataclass
class _Attempt:
    """The result of one placement attempt of one slot."""

    slot: int
    instance: Instance | None = None
    block: Blocked | None = None  # a new blocklist when the attempt ruled out a scope
    note: str = ""
    error: VmError | None = None  # why the attempt failed
    interrupted: bool = False  # never sent: the create was stopped (Ctrl-C) before its call went out


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
        self._caps = {**create_concurrency(providers), **(concurrency or {})}  # each plugin's create_concurrency
        self._pools: dict[str, ThreadPoolExecutor] = {}  # create calls, per provider (open while placing)
        self._after = ThreadPoolExecutor(max_workers=1)  # replaced while placing (see _open_pools)
        self._watchers: dict[str, CreateWatcher] = {}
        self.stop = threading.Event()
        self._errors: list[VmError] = []
        self._unlisted_reservation = False
        # (provider, region, shape) -> the placement group a cluster fleet's VMs there join (cluster_place.py)
        self.placement_groups: dict[tuple[str, str, str], str] = {}
        self._attempts: dict[int, int] = defaultdict(int)
        self._lock = threading.Lock()
        self._booting: set[int] = set()  # slots whose create the cloud accepted: only their boot is awaited
        self._abandoned = threading.Event()  # interrupted: boots still awaited are left to the cloud (recorded)

    @property
    def _cleanup_timeout(self) -> float:
        return max(self.timeout, MIN_CLEANUP_TIMEOUT)

    def plan(self, spec: FleetSpec, held: Sequence[MemberRecord] = ()) -> tuple[list[Offer], OfferSet]:
        """The placement the strategy would choose now (for --dry-run); changes nothing. `held`: the members of
        the fleet a dry grow adds to (what they hold of a sized reservation is not free: `held_by_members`).
        Raises UsageError where `create` would (a region where no provider sells the GPU)."""
        offers = held_by_members(self._gather(spec), held, self.providers)
        return self._planned(spec, offers), offers

    def _planned(self, spec: FleetSpec, offers: OfferSet) -> list[Offer]:
        blocked = Blocked(providers=frozenset(offers.problems))
        return self.strategy(offers.offers, spec.request(spec.count, offers.unterminable_reservations), blocked)

    def create(self, spec: FleetSpec) -> CreateReport:
        """Create the fleet, holding its lease (lease.py) from before it is recorded to the end. Raises UsageError
        when the name exists or another process holds its lease, BudgetError (before anything is recorded) when
        the plan costs more than spec.max_price; otherwise reports what happened. Failover never goes above the
        cap either: a slot that only fits above it stays empty."""
        check_fleet_name(spec.name)
        offers = self._gather(spec)
        _check_reachable(offers)
        if spec.placement is Placement.CLUSTER:
            _check_cluster(spec, offers)
        if spec.max_price is not None:
            over = check_budget(self._planned(spec, offers), spec.max_price)
            if over is not None:
                raise over
        with lease(self.store, spec.name, "fleet create", on_lost=self.stop.set):
            self._register(spec)
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
        offers = held_by_members(self._gather(spec), self.store.members(record.name), self.providers)
        _check_reachable(offers)
        running, notes, _ = self._place(spec, offers, slots)
        return PlaceReport(running, notes, list(self._errors), interrupted=self.stop.is_set())

    def _place(self, spec: FleetSpec, offers: OfferSet,
               slots: Iterable[int]) -> tuple[dict[int, Instance], list[str], str]:
        """Place every slot (all in one place with cluster placement), then sweep its unresolved attempts; the
        running VMs by slot, what went wrong, and why a cluster could not be placed ('' otherwise)."""
        notes = [*offers.left_out.values(), *(f"{n}: no offers ({why})" for n, why in offers.problems.items())]
        for note in notes:
            self.progress(note)
        self._errors = list(offers.errors.values())
        self._unlisted_reservation = unlisted_reservation(offers.offers, spec.reservation)
        wanted, blocked, failure = list(slots), Blocked(providers=frozenset(offers.problems)), ""
        self._open_pools()
        try:
            if spec.placement is Placement.CLUSTER:
                from .cluster_place import ClusterPlacer

                placer = ClusterPlacer(self, spec, offers, notes)
                running, failure = placer.place(blocked), placer.failure
            else:
                running = self._place_all(spec, offers, blocked, notes, wanted)
        finally:
            self._close_pools()
        running.update(self._sweep_unresolved(spec, wanted, len(running)))
        return running, notes, failure

    def _open_pools(self) -> None:
        self._pools = {name: ThreadPoolExecutor(max_workers=self._caps[name], thread_name_prefix=name)
                       for name in self.providers}
        self._after = ThreadPoolExecutor(max_workers=FINISH_WORKERS, thread_name_prefix="finish")

    def _close_pools(self) -> None:
        """Every attempt has delivered its result by now: the pools are idle."""
        for pool in [*self._pools.values(), self._after]:
            pool.shutdown(wait=False)

    def _gather(self, spec: FleetSpec) -> OfferSet:
        """The offers of the fleet's one size from the providers that sell it; the others are left out with a
        note. Raises UsageError, before anything is recorded, when no provider sells the size (the catalog
        decides without a call) or the region sells none of the GPU."""
        left_out = _left_out(spec, self.providers)
        offers = self.offers.gather({n: p for n, p in self.providers.items() if n not in left_out}, spec.gpu,
                                    spec.gpu_count)
        offers.left_out = left_out
        _check_region(spec, offers)
        return offers

    def _register(self, spec: FleetSpec) -> None:
        check_fleet_name(spec.name)
        self.identity = FleetIdentity(spec.name, new_fleet_id())
        record = FleetRecord(name=spec.name, gpu=spec.gpu, gpu_count=spec.gpu_count, requested_count=spec.count,
                             min_count=spec.min_count, strategy=spec.strategy, providers=spec.providers,
                             region=spec.region, reservation=_reservation_text(spec.reservation),
                             owner_pid=os.getpid(), fleet_id=self.identity.fleet_id, profile=self.profile,
                             accounts=accounts(self.providers), created_by=user_at_host(),
                             max_price=spec.max_price, machine=spec.machine)
        if spec.ttl is not None:
            record = replace(record, expires_at=record.created_at + spec.ttl)
        try:
            self.store.create_fleet(record)
        except FleetExists as exc:
            raise UsageError(f"a fleet named {spec.name!r} already exists",
                             suggestion=Hint.say("see {}, or pick another name",
                                                         Command.of("fleet", "status", spec.name))) from exc

    # ------------------------------------------------------------------------------------------ placement
    def _place_all(self, spec: FleetSpec, offers: OfferSet, blocked: Blocked, notes: list[str],
                   slots: list[int]) -> dict[int, Instance]:
        """Place every slot, re-placing each failed one as soon as its failure is known (see `_Placing`)."""
        return _Placing(self, spec, offers, blocked, notes).run(slots)

    def _run_batch(self, spec: FleetSpec, batch: list[tuple[int, Offer]]) -> list[_Attempt]:
        """Run one attempt per (slot, offer), all at once, and return their results in batch order."""
        results: queue.SimpleQueue[_Attempt | BaseException] = queue.SimpleQueue()
        for slot, offer in batch:
            self._launch(spec, slot, offer, results.put)
        done: dict[int, _Attempt] = {}
        while len(done) < len(batch):
            result = results.get()
            if isinstance(result, BaseException):
                raise result
            done[result.slot] = result
        return [done[slot] for slot, _ in batch]

    def _launch(self, spec: FleetSpec, slot: int, offer: Offer, deliver: _Deliver) -> None:
        """Start one attempt of `slot` on `offer`; returns at once. `deliver` gets its `_Attempt` exactly once
        (or the exception of a bug), from another thread. The create call runs in the provider's bounded pool;
        the wait costs no thread (the provider's watcher follows it)."""
        self._pools[offer.provider].submit(_guarded, deliver, slot, self._begin, spec, slot, offer, deliver)

    def _begin(self, spec: FleetSpec, slot: int, offer: Offer, deliver: _Deliver) -> _Attempt | None:
        """Record the intent, call the cloud, record the ids, and hand the wait to the watcher (None: the watcher
        delivers the result later)."""
        if self.stop.is_set():
            return _not_started(slot)
        member = self._record_intent(spec, slot, offer)
        provider = self.providers[offer.provider]
        if self.stop.is_set():
            mem.record(self.store, member, state=MemberState.FAILED, error="interrupted before the call")
            return _not_started(slot)
        self.progress(Step(f"{offer.provider}: creating {member.name} in {offer.region} ({offer.shape}"
                           f"{', reserved' if offer.reserved else ''})", slot=slot, kind=StepKind.CREATING))
        try:
            pending = provider.begin_create(self._create_spec(spec, member, offer))
        except Interrupted:  # stopped while the create waited to be sent (a cloud's pacing): it was not sent
            mem.record(self.store, member, state=MemberState.FAILED, error="interrupted before the call")
            return _not_started(slot)
        except (CapacityError, QuotaError) as exc:
            return self._refused(member, offer, exc)
        except (Transient, Timeout) as exc:
            self._after.submit(_guarded, deliver, slot, self._ambiguous, member, provider, offer, exc, deliver)
            return None
        except VmError as exc:
            return self._refused(member, offer, exc)
        member = mem.record(self.store, member, state=MemberState.CREATING, instance_id=pending.resource_id,
                            operation_id=pending.id)
        self._follow(member, provider, offer, pending, deliver)
        return None

    def _follow(self, member: MemberRecord, provider: Provider, offer: Offer, pending: Pending[Instance],
                deliver: _Deliver) -> None:
        """Hand the wait for `pending` to the provider's watcher; the result is delivered when it settles,
        unless the create was interrupted and its boots abandoned meanwhile (the member stays recorded
        `creating`, with its instance id: repair, reconcile and destroy take it from there)."""
        deadline = time.monotonic() + self.timeout
        with self._lock:
            self._booting.add(member.slot)

        def settled(instance: Instance | None) -> None:
            if self._abandoned.is_set():
                return
            self._after.submit(_guarded, deliver, member.slot, self._settled, member, provider, offer, pending,
                               instance, deadline)

        self._watcher(offer.provider).follow(pending, self.timeout, settled)

    def _settled(self, member: MemberRecord, provider: Provider, offer: Offer, pending: Pending[Instance],
                 instance: Instance | None, deadline: float) -> _Attempt:
        """The watcher's answer: the running VM, or ask the Pending how it ended (it says at once)."""
        if instance is None:
            try:
                instance = pending.wait(max(deadline - time.monotonic(), 0.0))
            except VmError as exc:  # capacity too: an adapter's cleanup of what the cloud kept can itself fail
                return self._failed_after_accept(member, provider, offer, exc)
        return self._running(member, instance)

    def _watcher(self, provider: str) -> CreateWatcher:
        with self._lock:
            if provider not in self._watchers:
                self._watchers[provider] = CreateWatcher(self.providers[provider])
            return self._watchers[provider]

    def _record_intent(self, spec: FleetSpec, slot: int, offer: Offer) -> MemberRecord:
        with self._lock:
            self._attempts[slot] += 1
            attempt = self._attempts[slot]
        member = MemberRecord(fleet=spec.name, slot=slot, attempt=attempt, provider=offer.provider,
                              name=self.identity.member_name(slot, attempt), region=offer.region, shape=offer.shape,
                              reservation_id=offer.reservation_id, price_per_hour=offer.price_per_hour)
        self.store.add_member(member)
        return member

    def _create_spec(self, spec: FleetSpec, member: MemberRecord, offer: Offer) -> CreateSpec:
        if offer.reserved:
            reservation = ReservationRequest(ReservationMode.ID, offer.reservation_id, strict=True)
        elif spec.reservation.mode is ReservationMode.ID and self._unlisted_reservation:
            reservation = spec.reservation  # no offer lists it: the cloud places the VM on it, or refuses
        elif spec.reservation.mode is ReservationMode.AUTO:
            reservation = ReservationRequest(ReservationMode.AUTO)
        else:
            reservation = ReservationRequest(ReservationMode.NONE)
        return CreateSpec(name=member.name, gpu=spec.gpu, gpu_count=offer.gpu_count, region=offer.region,
                          shape=offer.shape, reservation=reservation, labels=self.identity.labels(),
                          ssh_public_key=spec.ssh_public_key, abort=self.stop, machine=spec.machine,
                          placement_group=self.placement_groups.get((offer.provider, offer.region, offer.shape)))

    def _running(self, member: MemberRecord, instance: Instance) -> _Attempt:
        mem.record(self.store, member, state=MemberState.RUNNING, instance_id=instance.id,
                   price_per_hour=instance.price_per_hour, reservation_id=instance.reservation_id)
        self.progress(Step(f"{member.provider}: {member.name} running ({instance.id})", slot=member.slot,
                           kind=StepKind.RUNNING))
        return _Attempt(member.slot, instance=instance)

    def _refused(self, member: MemberRecord, offer: Offer, exc: VmError) -> _Attempt:
        """The cloud refused or failed the create and no VM exists: block the scope it names."""
        mem.record(self.store, member, state=MemberState.FAILED, error=exc.message)
        self.offers.invalidate(offer.provider)
        block = _block_for(exc, offer)
        return _Attempt(member.slot, block=block, error=exc, note=f"{member.name} ({offer.provider} {offer.region}): "
                                                       f"{exc.message}")

    def _ambiguous(self, member: MemberRecord, provider: Provider, offer: Offer, exc: VmError,
                   deliver: _Deliver) -> _Attempt | None:
        """No clear answer: the VM may exist. Look it up by name (it must carry the fleet's id) before anything
        is retried; a VM found is followed like any create (None: the watcher delivers)."""
        try:
            found = mem.find_claimed(provider, member.name, self.identity)
        except VmError:
            found = None
        if found is None:
            mem.record(self.store, member, state=MemberState.UNKNOWN, error=exc.message)
            return _Attempt(member.slot, error=exc, note=f"{member.name}: {exc.message}; not found by name, retried")
        member = mem.record(self.store, member, state=MemberState.CREATING, instance_id=found.id)
        self._follow(member, provider, offer, Located(provider, found.id), deliver)
        return None

    def _failed_after_accept(self, member: MemberRecord, provider: Provider, offer: Offer,
                             exc: VmError) -> _Attempt:
        """The VM was accepted but did not come up: destroy it (destroy is idempotent, so this costs one call
        when nothing is left) before the slot is re-placed, and block the scope the error names."""
        outcome = mem.destroy(self.store, provider, member, self.identity, self._cleanup_timeout)
        if outcome.ok:
            mem.record(self.store, outcome.member, state=MemberState.FAILED, error=exc.message)
        self.offers.invalidate(offer.provider)
        note = f"{member.name} ({offer.provider}): {exc.message}"
        return _Attempt(member.slot, block=_block_for(exc, offer), error=exc, note=note if outcome.ok
                        else f"{note}; cleanup failed: {outcome.message}")

    # ------------------------------------------------------------------------------------------ endgame
    def _sweep_unresolved(self, spec: FleetSpec, slots: list[int], running_count: int) -> dict[int, Instance]:
        """Look once more for every attempt of `slots` whose create was ambiguous: adopt it if a slot still
        needs a VM, else destroy it. Returns the adopted instances by slot. Not after an interruption: those
        attempts stay unresolved (recorded), for destroy, repair and reconcile to look again."""
        adopted: dict[int, Instance] = {}
        if self.stop.is_set():
            return adopted
        needed = len(slots) - running_count
        wanted = set(slots)
        for member in self.store.members(spec.name):
            if member.state is not MemberState.UNKNOWN or member.slot not in wanted:
                continue
            provider = self.providers[member.provider]
            try:
                found = mem.locate(provider, member, self.identity)
            except VmError:
                continue  # still unresolved: the member stays UNKNOWN, so destroy/reconcile look again
            if found is None:
                mem.record(self.store, member, state=MemberState.FAILED, error=member.error or "never created")
            elif needed > 0 and member.slot not in adopted and not self._slot_running(spec.name, member.slot):
                member = mem.record(self.store, member, state=MemberState.CREATING, instance_id=found.id)
                instance = mem.wait_running(provider, found.id, self.timeout)
                self._running(member, instance)
                adopted[member.slot] = instance
                needed -= 1
            else:
                mem.destroy(self.store, provider, member, self.identity, self._cleanup_timeout)
        return adopted

    def _slot_running(self, fleet: str, slot: int) -> bool:
        return any(m.slot == slot and m.state is MemberState.RUNNING for m in self.store.members(fleet))

    def _finish(self, spec: FleetSpec, running: list[Instance], notes: list[str]) -> CreateReport:
        if self.stop.is_set():
            record = self.store.update_fleet(spec.name, state=FleetState.INTERRUPTED,
                                             message=f"interrupted with {len(running)} of {spec.count} running")
            return CreateReport(record, running, notes, self._errors, interrupted=True)
        if len(running) >= spec.min_count:
            state = FleetState.ACTIVE if len(running) == spec.count else FleetState.DEGRADED
            record = self.store.update_fleet(spec.name, state=state,
                                             message=f"{len(running)} of {spec.count} running")
            return CreateReport(record, running, notes, self._errors)
        return self._roll_back(spec, running, notes)

    def _roll_back(self, spec: FleetSpec, running: list[Instance], notes: list[str]) -> CreateReport:
        self.progress(f"only {len(running)} of {spec.count} VMs (minimum {spec.min_count}): rolling back")
        record = self.store.update_fleet(spec.name, state=FleetState.ROLLING_BACK)
        from .destroy import FleetDestroyer

        result = FleetDestroyer(self.store, self.providers, progress=self.progress, timeout=self._cleanup_timeout)
        report = result.destroy_members(record)
        unresolved = report.failures + [a.line() for a in report.released]
        record = self.store.update_fleet(
            spec.name, state=FleetState.FAILED,
            message=f"{len(running)} of {spec.count} could be created (minimum {spec.min_count}); rolled back")
        return CreateReport(record, [], notes, self._errors, rolled_back=True, unresolved=unresolved)


_Deliver = Callable[["_Attempt | BaseException"], None]


def _not_started(slot: int) -> _Attempt:
    """The attempt of a slot whose create was never sent because the create was interrupted."""
    return _Attempt(slot, note=f"slot {slot}: not started (interrupted)", interrupted=True)


def _guarded(deliver: _Deliver, slot: int, step: Callable[..., _Attempt | None], *args: object) -> None:
    """Run one step of an attempt in a pool thread and deliver its result (None: a later step delivers). An
    exception is delivered too: it is a bug, and the placing thread raises it."""
    try:
        result = step(*args)
    except BaseException as exc:  # noqa: BLE001 - handed to the placing thread, which raises it
        deliver(exc)
        return
    if result is not None:
        deliver(result)


class _Placing:
    """One placement of slots: the strategy is asked for the slots still to place, their attempts start at
    once, and each result is handled as soon as it arrives. A failed slot is placed again right away with the
    scope it ruled out blocked (after a backoff when it ruled nothing out: only transient failures, so the
    retries of a flapping cloud are spaced); VMs running or in flight are taken off their offers' capacity and
    count towards the budget cap. A strategy that fails (StrategyError) stops the placing: the creates in
    flight are followed to their end (recorded running, or cleaned up), then its error is raised."""

    def __init__(self, creator: FleetCreator, spec: FleetSpec, offers: OfferSet, blocked: Blocked,
                 notes: list[str]) -> None:
        self.c, self.spec, self.offers, self.blocked, self.notes = creator, spec, offers, blocked, notes
        self.running: dict[int, Instance] = {}
        self.in_flight: dict[int, Offer] = {}
        self.used: Counter[tuple[str, str, str, str]] = Counter()  # VMs running or in flight, per offer
        self.results: queue.SimpleQueue[_Attempt | BaseException] = queue.SimpleQueue()
        self.ready: list[int] = []  # slots to place now
        self.later: list[tuple[float, int]] = []  # (monotonic time, slot): slots to place after a backoff
        self.idle = 0  # failures in a row that ruled nothing out
        self.halted = False  # no more placements (the budget cap, a failed strategy)
        self.failure: StrategyError | None = None  # the strategy's failure, raised once nothing is in flight
        self.changed = True  # a result arrived since the strategy was last asked

    def run(self, slots: list[int]) -> dict[int, Instance]:
        """Place `slots`; the running VMs by slot. Once `stop` is set no create is sent any more, and the run
        ends as soon as no create call is in flight: VMs the clouds accepted and still boot are left booting
        (each recorded with its instance id), so an interrupted create ends within seconds of its last call."""
        self.ready = list(slots)
        while self.in_flight or ((self.ready or self.later) and not self.halted and not self.c.stop.is_set()):
            if self.c.stop.is_set() and self._only_booting():
                self.c._abandoned.set()
                break
            self._start_due()
            if not self.in_flight and not self.later and self.ready:
                break  # the strategy placed none of them and nothing in flight can change that
            self._handle(self._next_result())
        if self.failure is not None:
            raise self.failure
        if (self.ready or self.later) and not self.halted and not self.c.stop.is_set():
            self.notes.append(f"no offer left for {len(self.ready) + len(self.later)} VM(s) after failover")
        return self.running

    def _start_due(self) -> None:
        """Place the slots that are due, if placing is still allowed and anything changed since the strategy
        was last asked."""
        now = time.monotonic()
        due = [slot for when, slot in self.later if when <= now]
        self.later = [(when, slot) for when, slot in self.later if when > now]
        self.ready += due
        self.changed = self.changed or bool(due)
        if not self.ready or not self.changed or self.halted or self.c.stop.is_set():
            return
        self.changed = False
        request = self.spec.request(len(self.ready), self.offers.unterminable_reservations)
        try:
            placements = self.c.strategy(_remaining(self.offers.offers, self.used), request, self.blocked)
        except StrategyError as exc:
            self.failure, self.halted = exc, True
            return
        committed = [i.price_per_hour for i in self.running.values()] + [o.price_per_hour
                                                                         for o in self.in_flight.values()]
        over = check_budget(placements, self.spec.max_price, committed=committed) if placements else None
        if over is not None:
            self.notes.append(phrase(f"failover of {len(self.ready) + len(self.later)} VM(s) stopped: ", over.message))
            self.c.progress(f"failed: {self.notes[-1]}")
            self.c._errors.append(over)
            self.halted = True
            return
        for slot, offer in zip(self.ready, placements, strict=False):
            self.in_flight[slot] = offer
            self.used[offer_key(offer)] += 1
            self.c._launch(self.spec, slot, offer, self.results.put)
        self.ready = self.ready[len(placements):]

    def _only_booting(self) -> bool:
        """Whether every slot in flight has had its create accepted (only its boot is awaited)."""
        with self.c._lock:
            return set(self.in_flight) <= self.c._booting

    def _next_result(self) -> _Attempt | None:
        """The next attempt's result; None when a backoff ended (or the wait was cut short to look at `stop`)."""
        timeout = WAKE_INTERVAL
        if self.later:
            timeout = min(timeout, max(min(when for when, _ in self.later) - time.monotonic(), 0.0))
        try:
            result = self.results.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(result, BaseException):
            raise result
        return result

    def _handle(self, result: _Attempt | None) -> None:
        if result is None:
            return
        self.changed = True
        offer = self.in_flight.pop(result.slot)
        with self.c._lock:
            self.c._booting.discard(result.slot)
        if result.instance is not None:
            self.running[result.slot] = result.instance
            self.idle = 0
            return
        self.used[offer_key(offer)] -= 1
        self.notes.append(result.note)
        if result.interrupted:  # never sent: said as it is, and not placed again
            self.c.progress(result.note)
            return
        self.c.progress(Step(f"failed: {result.note}", slot=result.slot, kind=StepKind.FAILED))
        self.c._errors += [result.error] if result.error is not None else []
        merged = self.blocked.merge(result.block) if result.block is not None else self.blocked
        ruled_out, self.blocked = merged != self.blocked, merged
        if self.c._attempts[result.slot] >= MAX_ATTEMPTS_PER_SLOT:
            return
        if ruled_out:
            self.idle = 0
            self.ready.append(result.slot)
        else:
            self.idle += 1
            backoff = min(RETRY_BACKOFF * 2 ** (self.idle - 1), MAX_RETRY_BACKOFF)
            self.later.append((time.monotonic() + backoff, result.slot))


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
    from .cluster_place import plan_for

    refusal = plan_for(spec, offers).failure()
    if refusal is not None:
        raise refusal


def _check_region(spec: FleetSpec, offers: OfferSet) -> None:
    """UsageError (before anything is recorded) for a region where no provider sells the GPU at all."""
    sold = sorted({o.region for o in offers.offers if o.gpu == spec.gpu})
    if spec.region is not None and spec.region not in sold:
        raise UsageError(f"no provider sells {spec.gpu} in region {spec.region!r}; regions that do: "
                         f"{', '.join(sold) or 'none'}")


def _remaining(offers: list[Offer], used: Counter[tuple[str, str, str, str]]) -> list[Offer]:
    """The offers with the VMs this fleet already placed on them taken off their stated capacity."""
    adjusted = []
    for offer in offers:
        taken = used.get(offer_key(offer), 0)
        if taken and offer.capacity is not None:
            left = max(offer.capacity - taken, 0)
            offer = replace(offer, capacity=left, available=offer.available and left > 0)
        adjusted.append(offer)
    return adjusted


def _block_for(exc: VmError, offer: Offer) -> Blocked:
    """Capacity errors block their scope; quota and auth errors block the whole provider."""
    if isinstance(exc, QuotaError | AuthError):
        return Blocked().with_provider(offer.provider)
    if isinstance(exc, CapacityError):
        if exc.scope is Scope.PROVIDER:
            return Blocked().with_provider(offer.provider)
        if exc.scope is Scope.REGION:
            return Blocked().with_region(offer.provider, exc.region or offer.region)
    return Blocked().with_offer(offer)


def spec_of(record: FleetRecord, count: int, ssh_public_key: str | None = None) -> FleetSpec:
    """The spec of a recorded fleet with `count` VMs (its size, strategy, providers, region, reservation and
    machine: the image, boot disk and startup script its members were created with)."""
    text = record.reservation.removesuffix(" (strict)")
    reservation = ReservationRequest.parse(text, strict=text != record.reservation)
    return FleetSpec(name=record.name, gpu=record.gpu, count=count, min_count=min(record.min_count, count),
                     strategy=record.strategy, gpu_count=record.gpu_count or 1, providers=record.providers,
                     region=record.region, reservation=reservation, ssh_public_key=ssh_public_key,
                     machine=record.machine)


def _reservation_text(reservation: ReservationRequest) -> str:
    text = reservation.reservation_id if reservation.mode is ReservationMode.ID else reservation.mode.value
    return f"{text} (strict)" if reservation.strict else text
