"""`nebius.compute.v1.InstanceService`: Get, GetByName, BatchGet, List, ListInstancesByNVLInstanceGroup,
Create, Update, Delete, Start, Stop, ListOperationsByParent.

Mutating calls return an Operation at once (research §3) and honour `x-idempotency-key`: a repeated call with
the same key by the same tenant returns the same operation instead of acting again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import betterproto2
import msgspec

from ..core.models import VM, CreateFailure, Operation, OpError, OpKind, Project, Provider, VMState
from ..core.placement import ON_DEMAND_ONLY, ReservationChoice
from ..core.world import World, WorldError
from . import auth, catalog, errors, fieldmask, images, paging, references, render, updates, validate, wire
from ._pb.google.rpc import Status
from ._pb.nebius.common import v1 as common
from ._pb.nebius.compute import v1 as compute
from .call import Call
from .records import InstanceRecord, OperationRecord

NEBIUS = Provider.NEBIUS
Policy = compute.ReservationPolicyPolicy


def _vm_key(vm: VM) -> paging.SortKey:
    return vm.created_at, vm.id


def _raise_if(violations: list[validate.Violation]) -> None:
    if violations:
        raise errors.bad_request(violations)


# ------------------------------------------------------------------------------------------------ reads
def get(call: Call, request: compute.GetInstanceRequest) -> compute.Instance:
    with call.world.read() as world:
        return render.instance(world, auth.instance(world, call.owner, request.id))


def get_by_name(call: Call, request: common.GetByNameRequest) -> compute.Instance:
    with call.world.read() as world:
        project = auth.project(world, call.owner, request.parent_id, "parent_id")
        if not request.name:
            raise errors.bad_request([("name", "name is required")])
        vm = world.vm_by_name(NEBIUS, project.id, request.name)
        if vm is None:
            raise errors.not_found(request.name, "instance")
        return render.instance(world, vm)


def list_instances(call: Call, request: compute.ListInstancesRequest) -> wire.Encoded:
    """A page of the project's instances, as a ListInstancesResponse on the wire."""
    with call.world.read() as world:
        project = auth.project(world, call.owner, request.parent_id, "parent_id")
        vms, token = paging.page(
            world.vms(NEBIUS, project.id), _vm_key, request.page_size, request.page_token
        )
        kept = [render.kept_or_unrendered(world, vm) for vm in vms]
    return wire.list_instances_response([render.encoded(k) for k in kept], token)


MAX_BATCH = 1000  # validation rule of BatchGetRequest.instance_ids


def batch_get(call: Call, request: compute.BatchGetRequest) -> wire.Encoded:
    """Each requested ID maps to its instance or to the error a Get of it would give (NOT_FOUND, ...);
    a repeated ID appears once. An empty or oversized list is INVALID_ARGUMENT. Sent as a BatchGetResponse
    on the wire, each instance's encoding reused while it is unchanged, the others encoded once the world's
    lock is released (render.kept_or_unrendered)."""
    ids = list(dict.fromkeys(request.instance_ids))
    if not ids:
        raise errors.bad_request([("instance_ids", "value is required")])
    if len(request.instance_ids) > MAX_BATCH:
        raise errors.bad_request([("instance_ids", f"value must contain no more than {MAX_BATCH} item(s)")])
    results: list[tuple[str, bytes | render.Unrendered | Status]] = []
    with call.world.read() as world:
        for instance_id in ids:
            try:
                vm = auth.instance(world, call.owner, instance_id)
                results.append((instance_id, render.kept_or_unrendered(world, vm)))
            except errors.ApiError as exc:
                results.append((instance_id, exc.status()))
    return wire.batch_get_response([(i, r if isinstance(r, Status) else render.encoded(r)) for i, r in results])


def list_by_nvl_instance_group(
    call: Call, request: compute.ListInstancesByNvlInstanceGroupRequest
) -> compute.ListInstancesResponse:
    """The caller's instances whose `spec.nvl_instance_group_id` is the requested group (the mock keeps no
    group objects: an ID no instance names lists nothing)."""
    group = request.nvl_instance_group_id
    if not group:
        raise errors.bad_request([("nvl_instance_group_id", "value is required")])
    with call.world.read() as world:
        members = [
            vm
            for vm in world.vms(NEBIUS)
            if auth.owns_scope(world, call.owner, vm.scope)
            and InstanceRecord.of(vm).instance_spec().nvl_instance_group_id == group
        ]
        vms, token = paging.page(members, _vm_key, request.page_size, request.page_token)
        return compute.ListInstancesResponse(
            items=[render.instance(world, vm) for vm in vms], next_page_token=token
        )


def _newest_first(op: Operation) -> paging.SortKey:
    return -op.created_at, op.id


def list_operations_by_parent(
    call: Call, request: compute.ListOperationsByParentRequest
) -> common.ListOperationsResponse:
    """The project's operations, newest first. The proto states no order; SkyPilot takes the first one listed for
    an instance as its most recent (`sky/provision/nebius/utils.py:741`), which it learned on the live API (an
    inference)."""
    with call.world.read() as world:
        project = auth.project(world, call.owner, request.parent_id, "parent_id")
        ops = sorted(world.operations(NEBIUS, scope=project.id), key=_newest_first)
        chosen, token = paging.page(ops, _newest_first, request.page_size, request.page_token)
        return common.ListOperationsResponse(
            operations=[render.operation(op) for op in chosen], next_page_token=token
        )


# ------------------------------------------------------------------------------------------------ mutations
def _mutate(call: Call, request: betterproto2.Message, act: Callable[[World], Operation]) -> common.Operation:
    """Run `act` once per idempotency key, remember how the operation was requested, and render it."""
    with call.world.tx() as world:
        key = call.idempotency_key
        replayed = world.replay_idempotent(NEBIUS, call.owner, key) if key else None
        if replayed is not None:
            return render.operation(replayed)
        try:
            op = act(world)
        except WorldError as exc:
            raise errors.from_world_error(exc) from None
        record = OperationRecord.of(op)
        if not record.request_id:  # a repeated Delete returns the delete already in flight
            record = msgspec.structs.replace(
                record,
                **OperationRecord.packed(request, call.raw),
                request_headers=call.request_headers(),
                request_id=call.request_id,
            )
            record.save(op)
        if key:
            world.record_idempotency(NEBIUS, call.owner, key, op)
        return render.operation(op)


def create(call: Call, request: compute.CreateInstanceRequest) -> common.Operation:
    def act(world: World) -> Operation:
        project, metadata, spec = _checked_create(world, call.owner, request)
        vm, op = world.create_vm(
            NEBIUS,
            scope=project.id,
            region=project.region,
            shape=_shape_key(spec),
            name=metadata.name,
            choice=reservation_choice(spec),
            on_failure=CreateFailure.STOP,
            fail_fast=False,
            start=not spec.stopped,
            native=msgspec.to_builtins(InstanceRecord(spec=spec.to_dict(), labels=dict(metadata.labels))),
            idempotency_key=call.idempotency_key,
            created_by=call.owner,
            spot=validate.is_preemptible(spec),
        )
        _explain_failure(world, vm, op)
        encoded = wire.sole_message_field(call.raw, 2)  # CreateInstanceRequest.spec as received
        if encoded is not None:
            render.remember_spec(world, vm, spec, encoded)
        return op

    return _mutate(call, request, act)


def _checked_create(
    world: World, owner: str, request: compute.CreateInstanceRequest
) -> tuple[Project, common.ResourceMetadata, compute.InstanceSpec]:
    """The project, metadata and spec of a valid Create; the parent is authorized before anything else."""
    metadata, spec = request.metadata, request.spec
    project = None
    if metadata is not None and metadata.parent_id:
        project = auth.project(world, owner, metadata.parent_id, "metadata.parent_id")
    _raise_if(validate.create_metadata(metadata) + validate.spec(spec))
    assert project is not None and metadata is not None and spec is not None and spec.resources is not None
    _raise_if(validate.shape(world, project.region, spec.resources) + images.boot_disk(world, project.region, spec))
    references.check(world, project, spec)
    existing = world.vm_by_name(NEBIUS, project.id, metadata.name)
    if existing is not None:
        raise errors.already_exists(existing.id, metadata.name)
    return project, metadata, spec


def _shape_key(spec: compute.InstanceSpec) -> str:
    resources = spec.resources or compute.ResourcesSpec()
    return catalog.shape_key(resources.platform, resources.preset or "")


def reservation_choice(spec: compute.InstanceSpec) -> ReservationChoice:
    """ReservationPolicy -> placement rule (research §4 enum comments). Preemptible VMs never use blocks."""
    policy = spec.reservation_policy or compute.ReservationPolicy()
    candidates = list(policy.reservation_ids) or None
    if validate.is_preemptible(spec) or policy.policy == Policy.FORBID:
        return ON_DEMAND_ONLY
    return ReservationChoice(candidates=candidates, on_demand_fallback=policy.policy == Policy.AUTO)


def _explain_failure(world: World, vm: VM, op: Operation) -> None:
    """Keep what a failed operation's ServiceError names (the preset; the quota and its numbers)."""
    record = OperationRecord.of(op)
    platform, record.preset = catalog.split_key(vm.shape)
    if op.error == OpError.QUOTA:
        shape = world.shape(NEBIUS, vm.shape)
        assert shape is not None  # a VM's shape is one of the catalog's
        quota = next(
            (q for q in world.config(NEBIUS).quotas if q.scope == vm.scope and q.family == shape.family), None
        )
        record.quota = catalog.quota_name(platform)
        record.quota_limit = quota.max_gpus if quota else 0
        record.quota_requested = world.quota_used(NEBIUS, vm.scope, shape.family) + shape.gpus
    record.save(op)


def delete(call: Call, request: compute.DeleteInstanceRequest) -> common.Operation:
    """Always accepted while the instance exists: an operation in flight is aborted (OperationAborted)."""

    def act(world: World) -> Operation:
        vm = auth.instance(world, call.owner, request.id)
        pending = world.pending_operation(NEBIUS, vm.id)
        op = world.begin(
            NEBIUS, vm.id, OpKind.DELETE, created_by=call.owner, idempotency_key=call.idempotency_key
        )
        if pending is not None and pending.id != op.id:
            aborted = OperationRecord.of(pending)
            aborted.aborted_by = op.id
            aborted.save(pending)
        return op

    return _mutate(call, request, act)


def start(call: Call, request: compute.StartInstanceRequest) -> common.Operation:
    def act(world: World) -> Operation:
        vm = auth.instance(world, call.owner, request.id)
        op = world.begin(
            NEBIUS, vm.id, OpKind.START, created_by=call.owner, idempotency_key=call.idempotency_key
        )
        record = InstanceRecord.of(vm)
        record.starts += 1
        record.save(vm)
        _explain_failure(world, vm, op)
        return op

    return _mutate(call, request, act)


def stop(call: Call, request: compute.StopInstanceRequest) -> common.Operation:
    def act(world: World) -> Operation:
        vm = auth.instance(world, call.owner, request.id)
        return world.begin(
            NEBIUS, vm.id, OpKind.STOP, created_by=call.owner, idempotency_key=call.idempotency_key
        )

    return _mutate(call, request, act)


def update(call: Call, request: compute.UpdateInstanceRequest) -> common.Operation:
    """Full replace under X-ResetMask; completes synchronously (the returned operation is already done)."""

    def act(world: World) -> Operation:
        metadata = request.metadata or common.ResourceMetadata()
        vm = auth.instance(world, call.owner, metadata.id, "metadata.id")
        change = _planned_update(world, call, vm, metadata, request.spec)
        op = _begin_synchronous_update(world, call, vm)
        if op.error is None:
            change.apply(vm, op.finished_at)
        return op

    return _mutate(call, request, act)


@dataclass
class _Change:
    """A validated Update, applied once its operation is known to succeed."""

    record: InstanceRecord
    spec: compute.InstanceSpec
    name: str
    changed: bool
    placement_changed: bool

    def apply(self, vm: VM, at: float) -> None:
        if self.changed:
            self.record.resource_version += 1
        self.record.spec = self.spec.to_dict()
        self.record.save(vm)
        vm.name, vm.updated_at = self.name, at
        if self.placement_changed:  # only while stopped: the VM holds no capacity
            choice = reservation_choice(self.spec)
            vm.shape = _shape_key(self.spec)
            vm.reservation_candidates, vm.use_reservations = choice.candidates, choice.use_reservations
            vm.on_demand_fallback, vm.last_reservation_id = choice.on_demand_fallback, ""


def _planned_update(
    world: World, call: Call, vm: VM, metadata: common.ResourceMetadata, spec: compute.InstanceSpec | None
) -> _Change:
    """Validate an Update against the current instance and work out the result (nothing is changed yet)."""
    record = InstanceRecord.of(vm)
    _check_identity(vm, record, metadata)
    try:
        mask = call.reset_mask()
    except fieldmask.MaskSyntaxError as exc:
        raise errors.bad_request([("x-resetmask", str(exc))]) from exc
    old_spec = record.instance_spec()
    new_spec = updates.merge(old_spec, spec, mask, "spec") if spec is not None else old_spec
    name = metadata.name or vm.name
    labels = dict(metadata.labels) if metadata.labels or mask.resets("metadata.labels") else record.labels
    _raise_if(validate.name(name) + validate.spec(new_spec) + updates.immutable_changes(old_spec, new_spec))
    assert new_spec.resources is not None
    project = world.project(NEBIUS, vm.scope)
    assert project is not None  # a VM's scope is its project
    _raise_if(validate.shape(world, project.region, new_spec.resources))
    other = world.vm_by_name(NEBIUS, vm.scope, name)
    if other is not None and other.id != vm.id:
        raise errors.already_exists(other.id, name)
    placement_changed = _placement(old_spec) != _placement(new_spec)
    if placement_changed and vm.state != VMState.STOPPED:
        raise errors.bad_resource_state(
            vm.id, "stop the instance before changing its preset or reservation policy"
        )
    changed = bytes(old_spec) != bytes(new_spec) or name != vm.name or labels != record.labels
    record.labels = labels
    return _Change(
        record=record, spec=new_spec, name=name, changed=changed, placement_changed=placement_changed
    )


def _check_identity(vm: VM, record: InstanceRecord, metadata: common.ResourceMetadata) -> None:
    """The parent cannot change; a non-zero resource_version must be the current one (research §2)."""
    if metadata.parent_id and metadata.parent_id != vm.scope:
        raise errors.bad_request([("metadata.parent_id", "parent_id cannot be changed")])
    if metadata.resource_version and metadata.resource_version != record.resource_version:
        raise errors.resource_conflict(
            vm.id,
            f"resource_version {metadata.resource_version} is stale, current is {record.resource_version}",
        )


def _placement(spec: compute.InstanceSpec) -> tuple[bytes, bytes]:
    resources = spec.resources or compute.ResourcesSpec()
    return bytes(resources), bytes(spec.reservation_policy or compute.ReservationPolicy())


def _begin_synchronous_update(world: World, call: Call, vm: VM) -> Operation:
    """An update operation that is already complete (the real API may return synchronous operations done)."""
    return world.begin(
        NEBIUS, vm.id, OpKind.UPDATE, created_by=call.owner, idempotency_key=call.idempotency_key,
        synchronous=True,
    )
