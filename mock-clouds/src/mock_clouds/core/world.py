"""The shared simulation: VMs, operations, capacity and reservations of all three clouds.

Time is simulated lazily: an operation records when it is due, and every transaction first applies the
operations whose time has come (`advance`). No background thread mutates the world, so what a client sees
depends only on the world clock and the requests made, and a restart simply resumes the schedule.

The world clock (`now`) is the wall clock plus a persisted offset that only grows (`advance_clock`, the admin
API's `POST /clock`, a mock control): a test scripts a day in seconds, and VM timestamps, operations and billing
move with it. Credentials stay on the wall clock (`wall_now`): Nebius access tokens expire, Crusoe request
signatures are checked and records are purged by wall time, so moving the clock never fails a client.
Every change of a VM's state or pricing is noted in its billing log (core/billing.py).

All methods must be called inside `World.tx()`, which holds one re-entrant lock. Capacity and reservation usage
are derived from the VMs that hold them, so the books cannot drift from the inventory.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator

from . import billing, ids
from .faults import FaultInjector
from .holdings import Held, Holdings
from .models import (
    VM,
    CreateFailure,
    Faults,
    Operation,
    OpError,
    OpKind,
    Project,
    Provider,
    ProviderConfig,
    Reservation,
    Shape,
    VMState,
    WorldState,
)
from .placement import Placement, PlacementError, ReservationChoice, choose_placement
from .ratelimit import RateLimiter
from .tokens import TokenBook

# Records of deleted VMs and finished operations are kept this long (real seconds) before being purged.
RETENTION_SECONDS = 3600.0
MAX_CLOCK_STEP = 366 * 86400.0  # the most one `advance_clock` moves the world clock (a sanity bound)
BILLING_RETENTION_SECONDS = 31 * 86400.0  # a deleted VM's billing log is kept this long (wall seconds)
PURGE_EVERY_SECONDS = 10.0  # expired records are looked for at most this often (they may outlive RETENTION by it)

# kind -> (states it may start from, state while it runs; None keeps the current state)
_TRANSITIONS: dict[OpKind, tuple[frozenset[VMState], VMState | None]] = {
    OpKind.START: (frozenset({VMState.STOPPED}), VMState.STARTING),
    OpKind.STOP: (frozenset({VMState.RUNNING}), VMState.STOPPING),
    OpKind.REBOOT: (frozenset({VMState.RUNNING}), VMState.REBOOTING),
    OpKind.RESET: (frozenset({VMState.RUNNING}), VMState.REBOOTING),
    OpKind.RESTART: (frozenset({VMState.RUNNING}), VMState.STOPPING),
    OpKind.UPDATE: (frozenset({VMState.RUNNING, VMState.STOPPED}), None),
}


class WorldError(Exception):
    """A request the world refuses; front ends render it in the provider's error shape."""

    def __init__(self, kind: str, message: str, *, resource_id: str = "", operation_id: str = "") -> None:
        super().__init__(message)
        self.kind = kind  # "not_found" | "conflict" | "capacity" | "quota" | "invalid"
        self.message = message
        self.resource_id = resource_id
        self.operation_id = operation_id


class World:
    def __init__(self, state: WorldState, *, on_change: Callable[[], None] | None = None) -> None:
        self.state = state
        self._lock = threading.RLock()
        self._on_change = on_change or (lambda: None)
        self.faults = {p: FaultInjector(state.providers[p].faults) for p in state.providers}
        self.rate_limiter = RateLimiter()
        self.tokens = TokenBook(state.token_service)  # Nebius IAM's issued access tokens
        # Speed only: each resource's operations ("provider:resource id" -> operations), kept as operations are
        # added and purged, so finding a VM's pending operation does not scan every operation of the world.
        self._ops_of: dict[str, list[Operation]] = {}
        # Speed only: operations not done yet, by due time (done ones are dropped when they come up), so that a
        # transaction finds the due operations without scanning every operation of the world.
        self._due: list[tuple[float, int, Operation]] = []
        self._order = itertools.count()
        self._next_purge = 0.0
        # Speed only: every VM record (deleted ones included) by provider, scope and name (neither ever changes),
        # so a create's name check does not scan every VM; see `_named`.
        self._names: dict[tuple[str, str, str], list[VM]] = {}
        self._names_size = -1  # len(state.vms) when `_names` was last complete; -1: rebuild
        self._holdings = Holdings()
        if not state.billing_since:
            state.billing_since = self.now()
        for vm in state.vms.values():
            if vm.holds_capacity:
                self._holdings.take(_key(vm), self._held(vm))
        for op in state.operations.values():
            self._ops_of.setdefault(f"{op.provider}:{op.resource_id}", []).append(op)
            if not op.done:
                heapq.heappush(self._due, (op.due_at, next(self._order), op))

    # ----------------------------------------------------------------- transactions and time
    @contextlib.contextmanager
    def tx(self) -> Iterator[World]:
        """Hold the world lock, apply due operations first, and persist changes afterwards."""
        with self._lock:
            self.advance()
            yield self
            self._on_change()

    @contextlib.contextmanager
    def read(self) -> Iterator[World]:
        """`tx()` for a caller that changes nothing: the world is persisted only when applying due operations
        (or purging expired records) changed it, so a stream of reads does not rewrite the snapshot."""
        with self._lock:
            changed = self.advance()
            yield self
            if changed:
                self._on_change()

    def now(self) -> float:
        """The world clock: epoch seconds, ahead of the wall clock by the offset `advance_clock` added."""
        return time.time() + self.state.clock_offset

    def wall_now(self) -> float:
        """The wall clock, for what must not move with the world clock (credential lifetimes, purges): the world
        clock less its offset, so a test that replaces `now` moves both."""
        return self.now() - self.state.clock_offset

    def advance_clock(self, seconds: float) -> float:
        """Move the world clock forward by `seconds` (persisted), applying the operations that fall due; returns
        the new offset. Raises ValueError unless 0 < seconds <= MAX_CLOCK_STEP."""
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds <= MAX_CLOCK_STEP:
            raise ValueError(f"advance_seconds must be a number of seconds in (0, {MAX_CLOCK_STEP:.0f}]")
        with self._lock:
            self.state.clock_offset += float(seconds)
            self.advance()
            self._on_change()
            return self.state.clock_offset

    def snapshot(self) -> bytes:
        """The whole world as JSON, taken under the lock so it is consistent."""
        import msgspec

        with self._lock:
            return msgspec.json.encode(self.state)

    def configure_faults(self, provider: Provider, faults: Faults) -> None:
        """Replace a provider's fault settings at runtime (persisted with the world)."""
        with self._lock:
            self.state.providers[provider].faults = faults
            self.faults[provider].configure(faults)
            self._on_change()

    def scaled(self, seconds: float) -> float:
        return seconds * self.state.time_scale

    def advance(self) -> bool:
        """Complete the operations that are due and purge expired records; True when anything changed."""
        now = self.now()
        completed = False
        while self._due and self._due[0][0] <= now:
            _, _, op = heapq.heappop(self._due)
            if not op.done:
                self._complete(op, op.due_at)
                completed = True
        return self._purge(now) or completed

    # ----------------------------------------------------------------- configuration reads
    def config(self, provider: Provider) -> ProviderConfig:
        return self.state.providers[provider]

    def shape(self, provider: Provider, key: str) -> Shape | None:
        return next((s for s in self.config(provider).shapes if s.key == key), None)

    def project(self, provider: Provider, project_id: str) -> Project | None:
        return next((p for p in self.config(provider).projects if p.id == project_id), None)

    def owner_of(self, provider: Provider, secret: str, key_id: str = "") -> str | None:
        """The owner a credential authenticates as, or None. Constant-time comparison of secrets."""
        import hmac

        for cred in self.state.credentials.get(provider, []):
            if key_id and cred.key_id != key_id:
                continue
            if hmac.compare_digest(cred.secret.encode(), secret.encode()):
                return cred.owner
        return None

    def token_owner(self, token: str) -> str | None:
        """The owner an access token issued by the token exchange authenticates as, or None when it is unknown
        or has expired. Takes the world lock itself (authentication runs before any transaction)."""
        with self._lock:
            return self.tokens.owner_of(token, self.wall_now())

    # ----------------------------------------------------------------- inventory reads
    def vms(self, provider: Provider, scope: str | None = None) -> list[VM]:
        """Live VMs (not deleted), oldest first."""
        return sorted(self._live(provider, scope), key=_age)

    def _live(self, provider: Provider, scope: str | None = None) -> list[VM]:
        """Live VMs in no particular order (for counting and lookups: no sort)."""
        return [
            vm
            for vm in self.state.vms.values()
            if vm.provider == provider and vm.state != VMState.DELETED and (scope is None or vm.scope == scope)
        ]

    def vm(self, provider: Provider, vm_id: str, *, include_deleted: bool = False) -> VM | None:
        vm = self.state.vms.get(f"{provider}:{vm_id}")
        if vm is None or (vm.state == VMState.DELETED and not include_deleted):
            return None
        return vm

    def vm_by_name(self, provider: Provider, scope: str, name: str) -> VM | None:
        """The oldest live VM of that name in the scope."""
        named = self._named().get((provider, scope, name), ())
        return min((v for v in named if v.state != VMState.DELETED and self.state.vms.get(_key(v)) is v),
                   key=_age, default=None)

    def _named(self) -> dict[tuple[str, str, str], list[VM]]:
        """The name index, rebuilt whenever records were added other than by `create_vm` (a test or a seeding
        script may insert VMs into `state.vms` itself) or purged."""
        if self._names_size != len(self.state.vms):
            self._names = {}
            for vm in self.state.vms.values():
                self._names.setdefault((vm.provider, vm.scope, vm.name), []).append(vm)
            self._names_size = len(self.state.vms)
        return self._names

    def operation(self, provider: Provider, op_id: str) -> Operation | None:
        return self.state.operations.get(f"{provider}:{op_id}")

    def operations(self, provider: Provider, *, scope: str | None = None,
                   resource_id: str | None = None) -> list[Operation]:
        ops = [
            op
            for op in self.state.operations.values()
            if op.provider == provider
            and (scope is None or op.scope == scope)
            and (resource_id is None or op.resource_id == resource_id)
        ]
        return sorted(ops, key=lambda o: (o.created_at, o.id))

    def pending_operation(self, provider: Provider, vm_id: str) -> Operation | None:
        """The VM's oldest operation not done yet."""
        ops = self._ops_of.get(f"{provider}:{vm_id}", ())
        return min((o for o in ops if not o.done), key=lambda o: (o.created_at, o.id), default=None)

    # ----------------------------------------------------------------- capacity reads
    def on_demand_total(self, provider: Provider, region: str, shape: str) -> int:
        return sum(c.quantity for c in self.config(provider).capacity if c.region == region and c.shape == shape)

    def on_demand_used(self, provider: Provider, region: str, shape: str) -> int:
        return self._holdings.on_demand_vms(provider, region, shape)

    def on_demand_free(self, provider: Provider, region: str, shape: str) -> int:
        return max(0, self.on_demand_total(provider, region, shape) - self.on_demand_used(provider, region, shape))

    def reservation(self, provider: Provider, reservation_id: str) -> Reservation | None:
        return next((r for r in self.config(provider).reservations if r.id == reservation_id), None)

    def reservation_vms(self, provider: Provider, reservation_id: str) -> list[VM]:
        return [vm for vm in self.vms(provider) if vm.holds_capacity and vm.reservation_id == reservation_id]

    def reservation_used(self, provider: Provider, reservation_id: str) -> int:
        """GPUs of the reservation held by VMs right now."""
        return self._holdings.reservation_gpus(provider, reservation_id)

    def quota_used(self, provider: Provider, scope: str, family: str) -> int:
        """GPUs of `family` held by the scope's VMs right now."""
        return self._holdings.quota_gpus(provider, scope, family)

    # ----------------------------------------------------------------- mutations
    def create_vm(
        self,
        provider: Provider,
        *,
        scope: str,
        region: str,
        shape: str,
        name: str,
        choice: ReservationChoice,
        on_failure: CreateFailure,
        fail_fast: bool = False,
        start: bool = True,
        native: dict[str, object] | None = None,
        op_native: dict[str, object] | None = None,
        idempotency_key: str = "",
        created_by: str = "",
        vm_id: str | None = None,
        spot: bool = False,
    ) -> tuple[VM, Operation]:
        """Create a VM and the operation that finishes it.

        Placement happens now, so concurrent creates see consistent capacity. Without room, a `fail_fast`
        create raises WorldError("capacity"|"quota") and changes nothing (Lambda); otherwise the operation is
        scheduled to fail after the create duration (Crusoe, Nebius), as the real services do. A `spot` VM
        bills at the spot price (core/billing.py).
        """
        now = self.now()
        vm = VM(
            provider=provider,
            id=vm_id or ids.vm_id(provider),
            name=name,
            scope=scope,
            region=region,
            shape=shape,
            state=VMState.CREATING if start else VMState.STOPPED,
            created_at=now,
            updated_at=now,
            reservation_candidates=choice.candidates,
            use_reservations=choice.use_reservations,
            on_demand_fallback=choice.on_demand_fallback,
            native=native or {},
            spot=spot,
        )
        error: tuple[OpError, str] | None = None
        if start:
            try:
                self._hold(vm, self._place(vm, preferred=""))
            except PlacementError as exc:
                if fail_fast:
                    raise WorldError(exc.kind, exc.message) from exc
                error = (OpError(exc.kind), exc.message)
        indexed = self._names_size == len(self.state.vms)
        self.state.vms[_key(vm)] = vm
        if indexed:
            self._names.setdefault((vm.provider, vm.scope, vm.name), []).append(vm)
            self._names_size += 1
        billing.note(self, vm, now)
        op = self._new_op(vm, OpKind.CREATE, error, op_native, idempotency_key, created_by, immediate=not start)
        op.native["on_failure"] = on_failure.value
        return vm, op

    def begin(
        self, provider: Provider, vm_id: str, kind: OpKind, *, created_by: str = "",
        op_native: dict[str, object] | None = None, idempotency_key: str = "", synchronous: bool = False,
    ) -> Operation:
        """Start a lifecycle operation (start/stop/reboot/reset/restart/update/delete) on a VM.

        A `synchronous` operation (e.g. Crusoe RESERVE, Nebius Update) is returned already completed and is
        never failed by fault injection.

        Raises WorldError("not_found") for an unknown VM and WorldError("conflict") when the VM is in a state
        that forbids the action or another operation is in flight. A delete is always accepted: it aborts the
        operation in flight, so a half-created VM can always be cleaned up.
        """
        vm = self.vm(provider, vm_id)
        if vm is None:
            raise WorldError("not_found", f"instance {vm_id} not found", resource_id=vm_id)
        pending = self.pending_operation(provider, vm_id)
        if kind == OpKind.DELETE:
            return self._begin_delete(vm, pending, created_by, op_native, idempotency_key)
        if pending is not None:
            raise WorldError(
                "conflict", f"operation {pending.id} is in progress on {vm_id}",
                resource_id=vm_id, operation_id=pending.id,
            )
        allowed, transitional = _TRANSITIONS[kind]
        if vm.state not in allowed:
            raise WorldError("conflict", f"cannot {kind.value} instance {vm_id} in state {vm.state.value}",
                             resource_id=vm_id)
        error = None
        if kind == OpKind.START:
            try:
                self._hold(vm, self._place(vm, preferred=vm.last_reservation_id))
            except PlacementError as exc:
                error = (OpError(exc.kind), exc.message)
        elif kind == OpKind.RESTART:
            self._release(vm)
        if transitional is not None:
            self._set_state(vm, transitional)
        op = self._new_op(vm, kind, error, op_native, idempotency_key, created_by, roll_faults=not synchronous,
                          immediate=synchronous)
        if synchronous:
            self._complete(op, op.created_at)
        return op

    def resize(self, provider: Provider, vm_id: str, shape: str) -> VM:
        """Change the shape of a stopped VM (it holds no capacity, so nothing else changes)."""
        vm = self.vm(provider, vm_id)
        if vm is None:
            raise WorldError("not_found", f"instance {vm_id} not found", resource_id=vm_id)
        if self.shape(provider, shape) is None:
            raise WorldError("invalid", f"unknown shape {shape}")
        if vm.state != VMState.STOPPED or vm.holds_capacity:
            raise WorldError("conflict", f"instance {vm_id} must be stopped to change its shape", resource_id=vm_id)
        vm.shape, vm.updated_at = shape, self.now()
        billing.note(self, vm, vm.updated_at)
        return vm

    def preempt(self, provider: Provider, vm_id: str) -> VM:
        """The cloud takes a running VM's capacity back: it stops at once, holds nothing and is marked
        `preempted` until it is started again. Only a running VM with no operation in flight can be preempted."""
        vm = self.vm(provider, vm_id)
        if vm is None:
            raise WorldError("not_found", f"instance {vm_id} not found", resource_id=vm_id)
        if vm.state != VMState.RUNNING or self.pending_operation(provider, vm_id) is not None:
            raise WorldError("conflict", f"instance {vm_id} is not running", resource_id=vm_id)
        self._release(vm)
        vm.preempted = True
        self._set_state(vm, VMState.STOPPED)
        return vm

    def set_reservation(self, provider: Provider, vm_id: str, reservation_id: str | None) -> VM:
        """Crusoe RESERVE/UNRESERVE: move a running VM into (or out of) a reservation, synchronously."""
        vm = self.vm(provider, vm_id)
        if vm is None:
            raise WorldError("not_found", f"instance {vm_id} not found", resource_id=vm_id)
        if not reservation_id:
            if vm.holds_capacity and vm.reservation_id:
                self._release(vm)
                self._hold(vm, self._place_on_demand(vm))
            vm.last_reservation_id = ""
            billing.note(self, vm, self.now())
            return vm
        res = self.reservation(provider, reservation_id)
        if res is None:
            raise WorldError("not_found", f"reservation {reservation_id} not found")
        if not self._fits(vm, res):
            raise WorldError("capacity", f"reservation {reservation_id} cannot host {vm.shape}")
        was_holding = vm.holds_capacity
        self._release(vm)
        if was_holding:
            self._hold(vm, Placement(reservation_id=reservation_id))
        vm.last_reservation_id = reservation_id
        billing.note(self, vm, self.now())
        return vm

    def record_idempotency(self, provider: Provider, owner: str, key: str, op: Operation) -> None:
        self.state.idempotency[f"{provider}:{owner}:{key}"] = f"{provider}:{op.id}"

    def replay_idempotent(self, provider: Provider, owner: str, key: str) -> Operation | None:
        op_key = self.state.idempotency.get(f"{provider}:{owner}:{key}")
        return self.state.operations.get(op_key) if op_key else None

    # ----------------------------------------------------------------- internals
    def _begin_delete(self, vm: VM, pending: Operation | None, created_by: str,
                      op_native: dict[str, object] | None, idempotency_key: str) -> Operation:
        if vm.state == VMState.DELETING and pending is not None and pending.kind == OpKind.DELETE:
            return pending
        if pending is not None:
            pending.done, pending.finished_at = True, self.now()
            pending.error, pending.message = OpError.ABORTED, "aborted by a delete of the same resource"
        self._set_state(vm, VMState.DELETING)
        return self._new_op(vm, OpKind.DELETE, None, op_native, idempotency_key, created_by)

    def _new_op(self, vm: VM, kind: OpKind, error: tuple[OpError, str] | None,
                native: dict[str, object] | None, idempotency_key: str, created_by: str,
                *, roll_faults: bool = True, immediate: bool = False) -> Operation:
        """A new operation on `vm`, due after the provider's duration for `kind` (`immediate`: due now)."""
        now = self.now()
        duration = 0.0 if immediate else self.scaled(getattr(self.config(vm.provider).durations, kind.value))
        op = Operation(
            provider=vm.provider, id=ids.operation_id(vm.provider), scope=vm.scope, kind=kind,
            resource_id=vm.id, created_at=now, due_at=now + duration, native=dict(native or {}),
            idempotency_key=idempotency_key, created_by=created_by,
        )
        if error is not None:
            op.error, op.message = error
        elif roll_faults and kind != OpKind.DELETE and self.faults[vm.provider].roll_op_failure():
            op.error, op.message = OpError.INTERNAL, "injected operation failure"
        self.state.operations[f"{vm.provider}:{op.id}"] = op
        self._ops_of.setdefault(f"{op.provider}:{op.resource_id}", []).append(op)
        heapq.heappush(self._due, (op.due_at, next(self._order), op))
        return op

    def _complete(self, op: Operation, at: float) -> None:
        op.done, op.finished_at = True, at
        vm = self.state.vms.get(f"{op.provider}:{op.resource_id}")
        if vm is None or vm.state == VMState.DELETED:
            return
        if op.error is not None:
            self._fail(vm, op)
        else:
            self._succeed(vm, op)
        vm.updated_at = at
        billing.note(self, vm, at)

    def _succeed(self, vm: VM, op: Operation) -> None:
        if op.kind == OpKind.DELETE:
            self._release(vm)
            vm.state, vm.deleted_at = VMState.DELETED, op.finished_at
        elif op.kind == OpKind.STOP:
            self._release(vm)
            vm.state = VMState.STOPPED
        elif op.kind == OpKind.RESTART:
            try:
                self._hold(vm, self._place(vm, preferred=vm.last_reservation_id))
                vm.state = VMState.RUNNING
            except PlacementError as exc:
                vm.state = VMState.STOPPED
                op.error, op.message = OpError(exc.kind), exc.message
        elif op.kind == OpKind.UPDATE or (op.kind == OpKind.CREATE and vm.state == VMState.STOPPED):
            return  # an update keeps the state; a VM created stopped on purpose stays stopped
        else:
            vm.state, vm.preempted = VMState.RUNNING, False

    def _fail(self, vm: VM, op: Operation) -> None:
        if op.kind == OpKind.CREATE:
            failure = CreateFailure(str(op.native.get("on_failure", CreateFailure.REMOVE.value)))
            self._release(vm)
            if failure == CreateFailure.REMOVE:
                vm.state, vm.deleted_at = VMState.DELETED, op.finished_at
            elif failure == CreateFailure.STOP:
                vm.state = VMState.STOPPED
            else:
                vm.state = VMState.ERROR
        elif op.kind == OpKind.START:
            self._release(vm)
            vm.state = VMState.STOPPED
        elif op.kind == OpKind.RESTART:
            vm.state = VMState.STOPPED
        elif op.kind != OpKind.UPDATE:
            vm.state = VMState.RUNNING if vm.holds_capacity else VMState.STOPPED

    def _place(self, vm: VM, *, preferred: str) -> Placement:
        shape = self.shape(vm.provider, vm.shape)
        if shape is None:
            raise PlacementError("capacity", f"unknown shape {vm.shape}")
        return choose_placement(self, vm, shape, preferred=preferred)

    def _place_on_demand(self, vm: VM) -> Placement:
        if self.on_demand_free(vm.provider, vm.region, vm.shape) <= 0:
            raise WorldError("capacity", f"no on-demand capacity for {vm.shape} in {vm.region}")
        return Placement(reservation_id="")

    def _fits(self, vm: VM, res: Reservation) -> bool:
        shape = self.shape(vm.provider, vm.shape)
        if shape is None or shape.family != res.family or not region_matches(vm.region, res.regions):
            return False
        if res.scopes and vm.scope not in res.scopes:
            return False
        return res.quantity - self.reservation_used(vm.provider, res.id) >= shape.gpus

    def _hold(self, vm: VM, placement: Placement) -> None:
        vm.holds_capacity = True
        vm.reservation_id = placement.reservation_id
        if placement.reservation_id:
            vm.last_reservation_id = placement.reservation_id
        self._holdings.take(_key(vm), self._held(vm))

    def _release(self, vm: VM) -> None:
        vm.holds_capacity = False
        vm.reservation_id = ""
        self._holdings.release(_key(vm))

    def _held(self, vm: VM) -> Held:
        """What `vm` holds now (a shape the provider no longer sells counts no GPUs)."""
        shape = self.shape(vm.provider, vm.shape)
        family, gpus = (shape.family, shape.gpus) if shape else ("", 0)
        return Held(vm.provider, vm.scope, vm.region, vm.shape, vm.reservation_id, family, gpus)

    def _set_state(self, vm: VM, state: VMState) -> None:
        vm.state, vm.updated_at = state, self.now()
        billing.note(self, vm, vm.updated_at)

    def _purge(self, now: float) -> bool:
        """Forget deleted VMs and finished operations older than the retention in wall-clock time (a record
        made before the clock moved is kept longer, never shorter), and expired access tokens (looked for at
        most every PURGE_EVERY_SECONDS of wall time); True when any were. A deleted VM's billing log is kept
        for BILLING_RETENTION_SECONDS."""
        wall = now - self.state.clock_offset  # the wall clock of `now`
        if wall < self._next_purge:
            return False
        self._next_purge = wall + PURGE_EVERY_SECONDS
        cutoff = wall - RETENTION_SECONDS
        vms = [key for key, vm in self.state.vms.items() if vm.state == VMState.DELETED and vm.deleted_at < cutoff]
        ops = [key for key, op in self.state.operations.items() if op.done and op.finished_at < cutoff]
        for key in vms:
            del self.state.vms[key]
        if vms:
            self._names_size = -1
        for key in ops:
            op = self.state.operations.pop(key)
            resource = f"{op.provider}:{op.resource_id}"
            self._ops_of[resource].remove(op)
            if not self._ops_of[resource]:
                del self._ops_of[resource]
        tokens = self.tokens.purge(wall)
        bills = billing.purge(self.state, wall - BILLING_RETENTION_SECONDS)
        return bool(vms or ops or tokens or bills)


def _key(vm: VM) -> str:
    return f"{vm.provider}:{vm.id}"


def _age(vm: VM) -> tuple[float, str]:
    return vm.created_at, vm.id


def region_matches(region: str, allowed: list[str]) -> bool:
    """Crusoe reservations name regions ("us-east1") while VMs name zones ("us-east1-a")."""
    return any(region == r or region.startswith(r + "-") for r in allowed)
