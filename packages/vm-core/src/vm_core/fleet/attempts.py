"""The attempts of one placement: each slot attempt from its intent to its end, and their results as one stream.

One attempt of one slot on one offer goes: record the intent (store; the attempts' writes are group-committed,
group_writes.py) -> call the cloud (`begin_create`, in the provider's bounded pool) -> record the ids -> follow the
boot (the provider's follower, follower.py: one read per round for every VM of the provider, no thread per VM) ->
record the outcome. It ends *settled* (running), *refused* (no VM: the scope the error names is blocked),
*ambiguous* (no clear answer: the VM is looked up by its name, and followed when found, else the member stays
UNKNOWN for the final sweep), or *cleaned up* (accepted but never came up: destroyed before the slot is placed
again). Every attempt delivers exactly one `Attempt` to the result queue, in the order they end, so a placement
policy handles each failure as soon as it is known (spread_place.py, cluster_place.py): no batch waits for its
slowest VM.

Threads stay bounded whatever the fleet's size: create calls run in a pool per provider (its create_concurrency),
and what follows a boot (recording, cleanup, resolving by name) runs in a pool of FINISH_WORKERS.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import AuthError, CapacityError, Interrupted, QuotaError, Scope, Timeout, Transient, VmError
from ..model import CreateSpec, Instance, Offer, ReservationMode, ReservationRequest
from ..provider import Completes, Pending, Provider
from . import members as mem
from .follower import CreateFollow, Follower
from .group_writes import GroupWrites
from .naming import FleetIdentity
from .offers import OfferCache
from .spec import FleetSpec
from .steps import Step, StepKind
from .store import FleetStore, MemberRecord, MemberState
from .strategies import Blocked

MAX_ATTEMPTS_PER_SLOT = 6
# A policy's failures in a row that ruled nothing out (transient failures only) are retried after this backoff
# (seconds, doubling); the attempt limit per slot bounds the retries.
RETRY_BACKOFF, MAX_RETRY_BACKOFF = 0.5, 8.0
# Cleaning up a VM that did not come up in time may take longer than the create's own --timeout.
MIN_CLEANUP_TIMEOUT = 600.0
# Threads that finish attempts: record a running VM, ask a failed create's Pending why, clean up after it, or
# resolve an ambiguous create by name.
FINISH_WORKERS = 16
# A policy waiting for results looks at `stop` at least this often (seconds).
WAKE_INTERVAL = 0.2


def retry_delay(idle: int) -> float:
    """Seconds to wait before placing again after `idle` (>= 1) failures in a row that ruled nothing out."""
    return min(RETRY_BACKOFF * 2.0 ** (idle - 1), MAX_RETRY_BACKOFF)


@dataclass
class Attempt:
    """The result of one placement attempt of one slot."""

    slot: int
    instance: Instance | None = None
    block: Blocked | None = None  # a new blocklist when the attempt ruled out a scope
    note: str = ""
    error: VmError | None = None  # why the attempt failed
    interrupted: bool = False  # never sent: the create was stopped (Ctrl-C) before its call went out


Deliver = Callable[["Attempt | BaseException"], None]


@dataclass
class Context:
    """What every attempt of one placement shares."""

    store: FleetStore
    providers: Mapping[str, Provider]
    identity: FleetIdentity
    offers: OfferCache
    progress: mem.Progress
    timeout: float
    stop: threading.Event

    @property
    def cleanup_timeout(self) -> float:
        return max(self.timeout, MIN_CLEANUP_TIMEOUT)


class Attempts:
    """The slot attempts of one placement of `spec` (see the module docstring). Use inside `open()`; `launch`
    returns at once and `next_result` blocks at most its timeout. Thread-safe."""

    def __init__(self, ctx: Context, spec: FleetSpec, caps: Mapping[str, int], *,
                 unlisted_reservation: bool = False, errors: Collection[VmError] = ()) -> None:
        self.ctx, self.spec, self._caps = ctx, spec, caps
        self.unlisted_reservation = unlisted_reservation  # the fleet's --reservation ID is in no offer
        self.errors: list[VmError] = list(errors)  # every failure so far, for the exit code
        # (provider, region, shape) -> the placement group VMs created there join (cluster_place.py)
        self.placement_groups: dict[tuple[str, str, str], str] = {}
        self.results: queue.SimpleQueue[Attempt | BaseException] = queue.SimpleQueue()
        self._made: dict[int, int] = defaultdict(int)  # slot -> attempts made (names the member)
        self._lock = threading.Lock()
        self._booting: set[int] = set()  # slots whose create the cloud accepted: only their boot is awaited
        self._abandoned = threading.Event()  # interrupted: boots still awaited are left to the cloud (recorded)
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self._after = ThreadPoolExecutor(max_workers=1)
        self._followers: dict[str, Follower] = {}
        self._writes = GroupWrites(ctx.store, spec.name)  # the intents, ids and running VMs, group-committed

    @contextmanager
    def open(self) -> Iterator[Attempts]:
        """The pools, open while attempts run; on leaving, no thread is joined (every result was delivered or
        its boot abandoned)."""
        self._pools = {name: ThreadPoolExecutor(max_workers=self._caps[name], thread_name_prefix=name)
                       for name in self.ctx.providers}
        self._after = ThreadPoolExecutor(max_workers=FINISH_WORKERS, thread_name_prefix="finish")
        try:
            yield self
        finally:
            for pool in [*self._pools.values(), self._after]:
                pool.shutdown(wait=False)

    def made(self, slot: int) -> int:
        """How many attempts of `slot` were started."""
        with self._lock:
            return self._made[slot]

    def launch(self, slot: int, offer: Offer, deliver: Deliver | None = None) -> None:
        """Start one attempt of `slot` on `offer`; returns at once. Its `Attempt` (or the exception of a bug) is
        delivered exactly once, from another thread, to `deliver` (default: the `results` queue)."""
        self._pools[offer.provider].submit(_guarded, deliver or self.results.put, slot, self._begin, slot, offer,
                                           deliver or self.results.put)

    def next_result(self, timeout: float = WAKE_INTERVAL) -> Attempt | None:
        """The next result from the queue, or None after `timeout` seconds; raises the exception of a bug."""
        try:
            result = self.results.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(result, BaseException):
            raise result
        with self._lock:
            self._booting.discard(result.slot)
        return result

    def abandon_if_booting(self, in_flight: Collection[int]) -> bool:
        """After `stop`: when every slot in flight has had its create accepted (only its boot is awaited), leave
        those boots to the cloud (each member stays recorded `creating` with its instance id) and say True."""
        if not self.ctx.stop.is_set():
            return False
        with self._lock:
            if not set(in_flight) <= self._booting:
                return False
        self._abandoned.set()
        return True

    # ------------------------------------------------------------------------------------------ one attempt
    def _begin(self, slot: int, offer: Offer, deliver: Deliver) -> Attempt | None:
        """Record the intent, call the cloud, record the ids, and hand the wait to the watcher (None: the watcher
        delivers the result later)."""
        ctx = self.ctx
        if ctx.stop.is_set():
            return _not_started(slot)
        member = self._record_intent(slot, offer)
        provider = ctx.providers[offer.provider]
        if ctx.stop.is_set():
            mem.record(ctx.store, member, state=MemberState.FAILED, error="interrupted before the call")
            return _not_started(slot)
        ctx.progress(Step(f"{offer.provider}: creating {member.name} in {offer.region} ({offer.shape}"
                          f"{', reserved' if offer.reserved else ''})", slot=slot, kind=StepKind.CREATING))
        try:
            pending = provider.begin_create(self._create_spec(member, offer))
        except Interrupted:  # stopped while the create waited to be sent (a cloud's pacing): it was not sent
            mem.record(ctx.store, member, state=MemberState.FAILED, error="interrupted before the call")
            return _not_started(slot)
        except (Transient, Timeout) as exc:
            self._after.submit(_guarded, deliver, slot, self._ambiguous, member, provider, offer, exc, deliver)
            return None
        except VmError as exc:
            return self._refused(member, offer, exc)
        member = self._writes.update(member, state=MemberState.CREATING, instance_id=pending.resource_id,
                                     operation_id=pending.id)
        self._follow(member, provider, offer, pending, deliver)
        return None

    def _record_intent(self, slot: int, offer: Offer) -> MemberRecord:
        with self._lock:
            self._made[slot] += 1
            attempt = self._made[slot]
        member = MemberRecord(fleet=self.spec.name, slot=slot, attempt=attempt, provider=offer.provider,
                              name=self.ctx.identity.member_name(slot, attempt), region=offer.region,
                              shape=offer.shape, reservation_id=offer.reservation_id,
                              price_per_hour=offer.price_per_hour, spot=offer.spot)
        self._writes.add(member)
        return member

    def _create_spec(self, member: MemberRecord, offer: Offer) -> CreateSpec:
        spec = self.spec
        if offer.reserved:
            reservation = ReservationRequest(ReservationMode.ID, offer.reservation_id, strict=True)
        elif offer.spot:
            reservation = ReservationRequest(ReservationMode.NONE)  # spot VMs never use reserved capacity
        elif spec.reservation.mode is ReservationMode.ID and self.unlisted_reservation:
            reservation = spec.reservation  # no offer lists it: the cloud places the VM on it, or refuses
        elif spec.reservation.mode is ReservationMode.AUTO:
            reservation = ReservationRequest(ReservationMode.AUTO)
        else:
            reservation = ReservationRequest(ReservationMode.NONE)
        return CreateSpec(name=member.name, gpu=spec.gpu, gpu_count=offer.gpu_count, region=offer.region,
                          shape=offer.shape, reservation=reservation, labels=self.ctx.identity.labels(),
                          ssh_public_key=spec.ssh_public_key, abort=self.ctx.stop, machine=spec.machine,
                          spot=offer.spot,
                          placement_group=self.placement_groups.get((offer.provider, offer.region, offer.shape)))

    def _follow(self, member: MemberRecord, provider: Provider, offer: Offer, pending: Pending[Instance] | None,
                deliver: Deliver, deadline: float | None = None) -> None:
        """Hand the wait for the member's VM (`pending` None: a VM found by name) to the provider's follower; the
        result is delivered when it settles, unless the placement was interrupted and its boots abandoned
        meanwhile."""
        deadline = time.monotonic() + self.ctx.timeout if deadline is None else deadline
        with self._lock:
            self._booting.add(member.slot)
        follow = CreateFollow(pending)

        def settled(_by_read: bool) -> None:
            if self._abandoned.is_set():
                return
            self._after.submit(_guarded, deliver, member.slot, self._settled, member, provider, offer, follow,
                               deadline, deliver)

        assert member.instance_id
        self._follower(offer.provider).follow(member.instance_id, follow, max(deadline - time.monotonic(), 0.0),
                                              settled)

    def _follower(self, provider: str) -> Follower:
        with self._lock:
            if provider not in self._followers:
                self._followers[provider] = Follower(self.ctx.providers[provider])
            return self._followers[provider]

    def _settled(self, member: MemberRecord, provider: Provider, offer: Offer, follow: CreateFollow,
                 deadline: float, deliver: Deliver) -> Attempt | None:
        """The follower's answer: the VM runs (its Pending makes the result, or its `wait` does), or ask the
        Pending how it ended (it says at once). None: followed again (not complete yet)."""
        pending, left = follow.pending, max(deadline - time.monotonic(), 0.0)
        try:
            if pending is None:
                instance = follow.instance or _not_running(provider, member, follow)
            elif follow.instance is not None and isinstance(pending, Completes):
                completed = pending.completed(follow.instance, left)
                if completed is None:
                    self._follow(member, provider, offer, pending, deliver, deadline)
                    return None
                instance = completed
            else:
                instance = pending.wait(left)
        except VmError as exc:  # capacity too: an adapter's cleanup of what the cloud kept can itself fail
            return self._cleaned_up(member, provider, offer, exc)
        return self.running(member, instance)

    def running(self, member: MemberRecord, instance: Instance) -> Attempt:
        """Record `member` running as `instance` (one store write) and say so."""
        self._writes.update(member, state=MemberState.RUNNING, instance_id=instance.id,
                            price_per_hour=instance.price_per_hour, reservation_id=instance.reservation_id)
        self.ctx.progress(Step(f"{member.provider}: {member.name} running ({instance.id})", slot=member.slot,
                               kind=StepKind.RUNNING))
        return Attempt(member.slot, instance=instance)

    def _refused(self, member: MemberRecord, offer: Offer, exc: VmError) -> Attempt:
        """The cloud refused or failed the create and no VM exists: block the scope it names."""
        mem.record(self.ctx.store, member, state=MemberState.FAILED, error=exc.message)
        self.ctx.offers.invalidate(offer.provider)
        return Attempt(member.slot, block=block_for(exc, offer), error=exc,
                       note=f"{member.name} ({offer.provider} {offer.region}): {exc.message}")

    def _ambiguous(self, member: MemberRecord, provider: Provider, offer: Offer, exc: VmError,
                   deliver: Deliver) -> Attempt | None:
        """No clear answer: the VM may exist. Look it up by name (it must carry the fleet's id) before anything
        is retried; a VM found is followed like any create (None: the watcher delivers)."""
        try:
            found = mem.find_claimed(provider, member.name, self.ctx.identity)
        except VmError:
            found = None
        if found is None:
            mem.record(self.ctx.store, member, state=MemberState.UNKNOWN, error=exc.message)
            return Attempt(member.slot, error=exc, note=f"{member.name}: {exc.message}; not found by name, retried")
        member = mem.record(self.ctx.store, member, state=MemberState.CREATING, instance_id=found.id)
        self._follow(member, provider, offer, None, deliver)
        return None

    def _cleaned_up(self, member: MemberRecord, provider: Provider, offer: Offer, exc: VmError) -> Attempt:
        """The VM was accepted but did not come up: destroy it (destroy is idempotent, so this costs one call
        when nothing is left) before the slot is re-placed, and block the scope the error names."""
        ctx = self.ctx
        outcome = mem.destroy(ctx.store, provider, member, ctx.identity, ctx.cleanup_timeout)
        if outcome.ok:
            mem.record(ctx.store, outcome.member, state=MemberState.FAILED, error=exc.message)
        ctx.offers.invalidate(offer.provider)
        note = f"{member.name} ({offer.provider}): {exc.message}"
        return Attempt(member.slot, block=block_for(exc, offer), error=exc, note=note if outcome.ok
                       else f"{note}; cleanup failed: {outcome.message}")


    # ------------------------------------------------------------------------------------------ endgame
    def sweep(self, slots: Collection[int], running_count: int) -> dict[int, Instance]:
        """Look once more for every attempt of `slots` whose create was ambiguous (members UNKNOWN): adopt its VM
        while a slot still needs one (waiting for it to run, up to the timeout), else destroy it. Returns the
        adopted instances by slot. Not after an interruption: those attempts stay unresolved (recorded), for
        destroy, repair and reconcile to look again. A lookup that fails leaves its member UNKNOWN."""
        ctx, adopted = self.ctx, dict[int, Instance]()
        if ctx.stop.is_set():
            return adopted
        needed, wanted = len(slots) - running_count, set(slots)
        for member in ctx.store.members(self.spec.name):
            if member.state is not MemberState.UNKNOWN or member.slot not in wanted:
                continue
            provider = ctx.providers[member.provider]
            try:
                found = mem.locate(provider, member, ctx.identity)
            except VmError:
                continue  # still unresolved: the member stays UNKNOWN, so destroy/reconcile look again
            if found is None:
                mem.record(ctx.store, member, state=MemberState.FAILED, error=member.error or "never created")
            elif needed > 0 and member.slot not in adopted and not self._slot_running(member.slot):
                member = mem.record(ctx.store, member, state=MemberState.CREATING, instance_id=found.id)
                instance = self._adopt(member, provider)
                self.running(member, instance)
                adopted[member.slot] = instance
                needed -= 1
            else:
                mem.destroy(ctx.store, provider, member, ctx.identity, ctx.cleanup_timeout)
        return adopted

    def _adopt(self, member: MemberRecord, provider: Provider) -> Instance:
        """Block until the member's VM (found by name) runs, followed by the provider's follower like every
        create, at most the create's timeout; raises VmError when it can no longer run, is gone, or is late."""
        follow, settled = CreateFollow(None), threading.Event()
        assert member.instance_id
        self._follower(member.provider).follow(member.instance_id, follow, self.ctx.timeout,
                                               lambda _by_read: settled.set())
        settled.wait()
        return follow.instance or _not_running(provider, member, follow)

    def _slot_running(self, slot: int) -> bool:
        return any(m.slot == slot and m.state is MemberState.RUNNING for m in self.ctx.store.members(self.spec.name))


def _not_running(provider: Provider, member: MemberRecord, follow: CreateFollow) -> Instance:
    """The error of a VM followed without a Pending (found by name) that settled without running: NotFound when
    it is gone, a VmError naming its state when it can no longer run, Timeout at the deadline."""
    from ..errors import NotFound

    if follow.ended is not None:
        raise VmError(f"instance {member.instance_id} is {follow.ended.value}", provider=provider.name)
    if follow.seen_gone:
        raise NotFound(f"instance {member.instance_id} no longer exists", provider=provider.name)
    raise Timeout(f"instance {member.instance_id} was not running in time", provider=provider.name)


def _not_started(slot: int) -> Attempt:
    """The attempt of a slot whose create was never sent because the create was interrupted."""
    return Attempt(slot, note=f"slot {slot}: not started (interrupted)", interrupted=True)


def _guarded(deliver: Deliver, slot: int, step: Callable[..., Attempt | None], *args: object) -> None:
    """Run one step of an attempt in a pool thread and deliver its result (None: a later step delivers). An
    exception is delivered too: it is a bug, and the policy's thread raises it."""
    try:
        result = step(*args)
    except BaseException as exc:  # noqa: BLE001 - handed to the policy's thread, which raises it
        deliver(exc)
        return
    if result is not None:
        deliver(result)


def block_for(exc: VmError, offer: Offer) -> Blocked:
    """Capacity errors block their scope; quota and auth errors block the whole provider; anything else the
    offer."""
    if isinstance(exc, QuotaError | AuthError):
        return Blocked().with_provider(offer.provider)
    if isinstance(exc, CapacityError):
        if exc.scope is Scope.PROVIDER:
            return Blocked().with_provider(offer.provider)
        if exc.scope is Scope.REGION:
            return Blocked().with_region(offer.provider, exc.region or offer.region)
    return Blocked().with_offer(offer)
