"""Core records -> Nebius messages (Instance, Operation, Platform). Call inside `world.tx()` or `world.read()`.

Instance states follow research §5: a new instance shows STOPPED with reconciling=true, then STARTING, then
RUNNING when the create operation succeeds. STARTING means the capacity was obtained, so a create or start that
finds no capacity (or quota) stays STOPPED with reconciling=true until its operation fails, and then shows STOPPED
with reconciling=false. Nebius never shows CREATING or UPDATING here.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import weakref
from dataclasses import dataclass

import grpc
import msgspec

from ..core.models import VM, Operation, OpError, OpKind, Provider, Shape, VMState
from ..core.world import World
from . import catalog, errors, wire
from ._pb.google.rpc import Status
from ._pb.nebius.common import v1 as common
from ._pb.nebius.compute import v1 as compute
from .records import InstanceRecord, OperationRecord

NEBIUS = Provider.NEBIUS
State = compute.InstanceStatusInstanceState

_STATES: dict[VMState, State] = {
    VMState.CREATING: State.STARTING,
    VMState.STARTING: State.STARTING,
    VMState.RUNNING: State.RUNNING,
    VMState.REBOOTING: State.STARTING,  # no reboot RPC on Nebius; unreachable
    VMState.STOPPING: State.STOPPING,
    VMState.STOPPED: State.STOPPED,
    VMState.DELETING: State.DELETING,
    VMState.DELETED: State.DELETING,  # never rendered: deleted instances are NOT_FOUND
    VMState.ERROR: State.ERROR,
}
_UNPLACED = frozenset({OpError.CAPACITY, OpError.QUOTA})  # failures of an operation that never got capacity
_PUBLIC_IP_STATES = frozenset({State.STARTING, State.RUNNING, State.STOPPING})
# Public addresses (mock extension: real ones are Nebius's own) come from 198.18.0.0/15, reserved for benchmarks,
# which routes nowhere: `vm ssh` to a mock VM never reaches a real host.
_PUBLIC_BASE = ipaddress.IPv4Address("198.18.0.0")
_PUBLIC_SIZE = 1 << 17

# mock extension: the real descriptions are not documented.
_DESCRIPTIONS: dict[OpKind, str] = {
    OpKind.CREATE: "Create instance",
    OpKind.UPDATE: "Update instance",
    OpKind.DELETE: "Delete instance",
    OpKind.START: "Start instance",
    OpKind.STOP: "Stop instance",
}


def timestamp(epoch: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC)


# ------------------------------------------------------------------------------------------------ instances
# Speed only (not observable on the wire): each instance's encoded message per world, reused while
# everything it is rendered from is unchanged, so listing thousands of instances does not re-encode each
# one in pure Python every time.
_ENCODED: weakref.WeakKeyDictionary[World, dict[str, tuple[bytes, bytes]]] = weakref.WeakKeyDictionary()
# Speed only: each instance's spec, parsed from its record and encoded (as field 2 of an Instance) once per
# resource_version (an Update that changes the spec bumps it), for rendering the same VM again.
_SPECS: weakref.WeakKeyDictionary[World, dict[str, tuple[int, compute.InstanceSpec, bytes]]] = (
    weakref.WeakKeyDictionary()
)


def instance_bytes(world: World, vm: VM) -> bytes:
    """`bytes(instance(world, vm))`, under the world's lock (see `kept_or_unrendered`)."""
    return encoded(kept_or_unrendered(world, vm))


def encoded(kept: bytes | Unrendered) -> bytes:
    """An instance's encoding: the one kept, else rendered now (outside the world's lock, when called there)."""
    return kept if isinstance(kept, bytes) else kept.render()


def kept_or_unrendered(world: World, vm: VM) -> bytes | Unrendered:
    """The instance's encoding when it is kept, else what renders it (call `render()` after releasing the world's
    lock: a read of many instances then does not hold up every other call while it encodes them). Called under
    the lock. The rendering depends only on the VM record, the state shown and whether an operation is pending,
    so the encoding is kept per VM under exactly that key."""
    pending = world.pending_operation(NEBIUS, vm.id)
    state = instance_state(world, vm, pending)
    key = msgspec.json.encode((vm, state, pending is not None))
    cached = _ENCODED.setdefault(world, {}).get(vm.id)
    if cached is not None and cached[0] == key:
        return cached[1]
    return Unrendered(world, key)


@dataclass(frozen=True)
class Unrendered:
    """One instance to encode, as it was under the world's lock: `key` holds the VM record (a copy), the state
    shown and whether an operation was pending. An Instance's encoding is its metadata's, its spec's and its
    status's, one after the other: the spec part is encoded once per resource version (`_spec`)."""

    world: World
    key: bytes

    def render(self) -> bytes:
        """The encoding, kept for the next read of the same VM in the same state. Needs no lock."""
        vm, state, reconciling = msgspec.json.decode(self.key, type=tuple[VM, State, bool])
        record = InstanceRecord.of(vm)
        spec, spec_bytes = _spec(self.world, vm, record)
        status = _status(vm, record, spec, state, reconciling)
        encoded = bytes(compute.Instance(metadata=_metadata(vm, record))) + spec_bytes + bytes(
            compute.Instance(status=status))
        _ENCODED.setdefault(self.world, {})[vm.id] = (self.key, encoded)
        return encoded


def remember_spec(world: World, vm: VM, spec: compute.InstanceSpec, encoded: bytes) -> None:
    """Keep `spec`, just created from the request, with `encoded`, its encoding as the request carried it, for
    rendering the VM (speed only: a VM's first rendering need not encode its spec again). The record's spec is
    the same message (InstanceRecord.spec is this spec in proto-JSON)."""
    record = InstanceRecord.of(vm)
    _SPECS.setdefault(world, {})[vm.id] = (record.resource_version, spec, wire.delimited(2, encoded))


def warm(world: World) -> int:
    """Encode every live instance once (speed only: a server started on a big persisted world answers its first
    List or BatchGet as fast as the later ones, as a running service does). Returns how many were encoded."""
    with world.read():
        live = world.vms(NEBIUS)
        for vm in live:
            instance_bytes(world, vm)
    return len(live)


def _spec(world: World, vm: VM, record: InstanceRecord) -> tuple[compute.InstanceSpec, bytes]:
    """The VM's spec (not to be changed: it is shared) and its encoding as an Instance's field 2."""
    specs = _SPECS.setdefault(world, {})
    cached = specs.get(vm.id)
    if cached is None or cached[0] != record.resource_version:
        spec = record.instance_spec()
        cached = (record.resource_version, spec, bytes(compute.Instance(spec=spec)))
        specs[vm.id] = cached
    return cached[1], cached[2]


def instance(world: World, vm: VM) -> compute.Instance:
    record = InstanceRecord.of(vm)
    spec = record.instance_spec()
    return compute.Instance(metadata=_metadata(vm, record), spec=spec,
                            status=instance_status(world, vm, record, spec))


def _metadata(vm: VM, record: InstanceRecord) -> common.ResourceMetadata:
    return common.ResourceMetadata(
        id=vm.id,
        parent_id=vm.scope,
        name=vm.name,
        resource_version=record.resource_version,
        created_at=timestamp(vm.created_at),
        updated_at=timestamp(vm.updated_at),
        labels=dict(record.labels),
    )


def instance_status(
    world: World, vm: VM, record: InstanceRecord, spec: compute.InstanceSpec
) -> compute.InstanceStatus:
    pending = world.pending_operation(NEBIUS, vm.id)
    return _status(vm, record, spec, instance_state(world, vm, pending), pending is not None)


def _status(vm: VM, record: InstanceRecord, spec: compute.InstanceSpec, state: State,
            reconciling: bool) -> compute.InstanceStatus:
    return compute.InstanceStatus(
        state=state,
        network_interfaces=[
            _nic_status(vm, i, nic, record.starts, state) for i, nic in enumerate(spec.network_interfaces)
        ],
        reconciling=reconciling,
        reservation_id=vm.reservation_id if vm.holds_capacity else "",
        disk_attachments=_disk_attachments(vm, spec),
    )


def instance_state(world: World, vm: VM, pending: Operation | None) -> State:
    """The first third of a create shows STOPPED (scheduling), the rest STARTING (research §5). A create or
    start that will fail for capacity or quota shows STOPPED throughout: clients read STARTING as "capacity
    obtained" (SkyPilot `sky/provision/nebius/utils.py:722-728`, dstack `_wait_for_instance`)."""
    if pending is not None and pending.error in _UNPLACED and pending.kind in (OpKind.CREATE, OpKind.START):
        return State.STOPPED
    if vm.state == VMState.CREATING and pending is not None:
        scheduled_at = pending.created_at + (pending.due_at - pending.created_at) / 3
        if world.now() < scheduled_at:
            return State.STOPPED
    return _STATES[vm.state]


def _digest(*parts: object) -> bytes:
    return hashlib.sha256("/".join(map(str, parts)).encode()).digest()


def _derived_id(kind: str, near: str, *parts: object) -> str:
    """A stable Nebius-style id (`<kind>-<routing code><15 base36>`) in the region of the id `near`."""
    routing = near.partition("-")[2][:3]
    digits = "".join("0123456789abcdefghijklmnopqrstuvwxyz"[b % 36] for b in _digest(kind, *parts)[:15])
    return f"{kind}-{routing}{digits}"


def _nic_status(
    vm: VM, index: int, nic: compute.NetworkInterfaceSpec, starts: int, state: State
) -> compute.NetworkInterfaceStatus:
    """Addresses carry a /32 suffix as on the real API (mock extension: values derive from the id)."""
    private = _digest(vm.id, "private", index)
    status = compute.NetworkInterfaceStatus(
        index=index,
        name=nic.name,
        ip_address=compute.IpAddressStatus(address=f"10.0.{private[0]}.{private[1] % 250 + 3}/32"),
        mac_address=":".join(f"{b:02x}" for b in (0x02, *_digest(vm.id, "mac", index)[:5])),
    )
    public = nic.public_ip_address
    if public is not None and (public.static or state in _PUBLIC_IP_STATES):
        generation = 0 if public.static else starts
        host = int.from_bytes(_digest(vm.id, "public", index, generation)[:4], "big") % (_PUBLIC_SIZE - 2)
        status.public_ip_address = compute.PublicIpAddressStatus(
            address=f"{_PUBLIC_BASE + 1 + host}/32", static=public.static
        )
    return status


def managed_disk_id(vm: VM, slot: str) -> str:
    """mock extension: DiskService is not modelled, so a managed disk's id derives from its instance."""
    return _derived_id("computedisk", vm.id, vm.id, slot)


def _disk_attachments(vm: VM, spec: compute.InstanceSpec) -> list[compute.DiskAttachmentStatus]:
    disks = [("boot", spec.boot_disk)] if spec.boot_disk is not None else []
    disks += [(f"secondary-{i}", d) for i, d in enumerate(spec.secondary_disks)]
    attachments = []
    for slot, disk in disks:
        if disk.managed_disk is not None:
            attachments.append(
                compute.DiskAttachmentStatus(
                    id=managed_disk_id(vm, slot), name=disk.managed_disk.name, is_managed=True
                )
            )
        elif disk.existing_disk is not None:
            attachments.append(compute.DiskAttachmentStatus(id=disk.existing_disk.id))
    return attachments


# ------------------------------------------------------------------------------------------------ operations
def operation(op: Operation) -> common.Operation:
    record = OperationRecord.of(op)
    return common.Operation(
        id=op.id,
        description=_DESCRIPTIONS.get(op.kind, f"{op.kind.value.capitalize()} instance"),
        created_at=timestamp(op.created_at),
        created_by=op.created_by,  # mock extension: the tenant id (the mock has no user accounts)
        finished_at=timestamp(op.finished_at) if op.done else None,
        request=record.request_any(),
        request_headers={
            k: common.OperationRequestHeader(values=v) for k, v in record.request_headers.items()
        },
        resource_id=op.resource_id,
        status=operation_status(op, record) if op.done else None,
    )


def operation_status(op: Operation, record: OperationRecord) -> Status:
    """Status{code 0} for success, else the failure code with its ServiceError (research §3, §6)."""
    if op.error is None:
        return Status(code=grpc.StatusCode.OK.value[0])
    return _failure(op, record).status()


def _failure(op: Operation, record: OperationRecord) -> errors.ApiError:
    if op.error == OpError.CAPACITY:
        return errors.not_enough_resources(record.preset)
    if op.error == OpError.QUOTA:
        return errors.quota_failure(record.quota, record.quota_limit, record.quota_requested)
    if op.error == OpError.ABORTED:
        return errors.operation_aborted(op.id, record.aborted_by, op.resource_id)
    return errors.internal(record.request_id, op.message or "internal error")


# ------------------------------------------------------------------------------------------------ platforms
def platform(project_id: str, name: str, shapes: list[Shape]) -> compute.Platform:
    """mock extension: platform ids are derived from the name; gpu_count_quota_type uses the quota name. The GPU
    memory (catalog.gpu_memory_gigabytes) is per GPU, as the clients read it."""
    gpus = shapes[0].gpus > 0
    presets = [_preset(s) for s in shapes]
    spec = compute.PlatformSpec(
        presets=presets,
        gpu_count_quota_type=catalog.quota_name(name) if gpus else "",
        human_readable_name=shapes[0].description or name,
        allow_preset_change=True,
        short_human_readable_name=name,
        # field 11 is deprecated but still read (SkyPilot 0.14's catalog fetcher); the same number is an inference
        gpu_memory_gibibytes=catalog.gpu_memory_gigabytes(name),
        gpu_memory_gigabytes=catalog.gpu_memory_gigabytes(name),
    )
    return compute.Platform(
        metadata=common.ResourceMetadata(
            id=_derived_id("computeplatform", project_id, name),
            parent_id=project_id,
            name=name,
            resource_version=1,
        ),
        spec=spec,
        status=compute.PlatformStatus(allowed_for_preemptibles=gpus),
    )


def _preset(shape: Shape) -> compute.Preset:
    _, name = catalog.split_key(shape.key)
    resources = compute.PresetResources(
        vcpu_count=shape.vcpus, memory_gibibytes=shape.memory_gb, gpu_count=shape.gpus
    )
    return compute.Preset(name=name, resources=resources, allow_gpu_clustering=shape.gpus >= 8)
