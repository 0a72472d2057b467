"""PATCH `/projects/{project_id}/compute/vms/instances/{vm_id}`: `{"action": ...}`.

Real actions: START, STOP, RESET (hard reset), UPDATE (resize when stopped, maintenance policy, public IP type
when running), RESERVE and UNRESERVE (synchronous: their operation has already SUCCEEDED in the 200 response).
RESERVE is accepted and ignored, as the backend ignores a reservation named at create: terraform-provider-crusoe
warns "Reservation assignment during VM update is deprecated. The requested reservation_id was ignored by the
backend" when the VM is on none after it (internal/vm/vm_by_template_resource.go:616-618). Its body is still
checked (id required, a UUID, a reservation the caller sees: an inference); the VM stays where it is.
Mock extensions: REBOOT (guest reboot, keeps the reservation) and RESTART (stop then start: the reservation is
released, then reclaimed if it still has room, else on-demand, else the operation FAILS `out_of_stock`).
Anything else, including lower-case names or a missing action, is 400 "invalid action", as on the real API.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.models import VM, Operation, OpKind, Provider, VMState
from ..core.world import World, WorldError
from ..http import Response
from . import access, render, vmdata
from .access import Call
from .errors import ApiError, bad_request, not_found
from .models import InstancesPatchRequest, NetworkInterfaceSpec, PatchAction

CRUSOE = Provider.CRUSOE
ActionHandler = Callable[[Call, VM, InstancesPatchRequest], Operation]


def patch_instance(call: Call) -> Response:
    proj = access.project(call)
    handler = ACTIONS.get(call.body(PatchAction).action)
    if handler is None:
        raise bad_request("invalid action")
    body: InstancesPatchRequest = call.body(InstancesPatchRequest)
    op = handler(call, access.instance(call, proj), body)
    return Response(200, {"operation": render.operation(call.world, op)})


def _lifecycle(kind: OpKind, *, renews_public_ip: bool = False) -> ActionHandler:
    """An asynchronous power action; a start gets a new dynamic public IP, as on the real service."""

    def run(call: Call, vm: VM, body: InstancesPatchRequest) -> Operation:
        op = begin(call, vm, kind, body.action)
        if renews_public_ip:
            _renew_public_ip(call.world, vm)
        return op

    return run


def _update(call: Call, vm: VM, body: InstancesPatchRequest) -> Operation:
    """UPDATE: `type` (same family, VM stopped), `maintenance_policy`, public IP `type` (VM running)."""
    new_type = _checked_resize(call.world, vm, body.type_) if body.type_ is not None else None
    public_type = _checked_public_ip_type(vm, body.network_interfaces)
    if body.host_channel_adapters is not None:
        raise bad_request("updating host_channel_adapters is not supported")  # mock limitation
    if body.commitment_period:
        raise bad_request("commitment is no longer supported")
    if new_type is None and public_type is None and body.maintenance_policy is None:
        raise bad_request("nothing to update: give type, maintenance_policy or network_interfaces")
    op = begin(call, vm, OpKind.UPDATE, body.action)
    if new_type is not None:
        call.world.resize(CRUSOE, vm.id, new_type)
    extras = vmdata.load(vm)
    extras.maintenance_policy = body.maintenance_policy or extras.maintenance_policy
    extras.nic.public.type = public_type or extras.nic.public.type
    vmdata.store(vm, extras)
    return op


def _checked_resize(world: World, vm: VM, new_type: str) -> str:
    if world.shape(CRUSOE, new_type) is None:
        raise bad_request(f"invalid vm type {new_type!r}")
    if new_type.split(".")[0] != vm.shape.split(".")[0]:
        raise bad_request(f"cannot change type from {vm.shape} to {new_type}: only sizes of the same family")
    if vm.state != VMState.STOPPED:
        raise bad_request("the instance must be stopped to change its type")
    return new_type


def _checked_public_ip_type(vm: VM, interfaces: list[NetworkInterfaceSpec] | None) -> str | None:
    if interfaces is None:
        return None
    if vm.state != VMState.RUNNING:
        raise bad_request("the instance must be running to update its network interfaces")
    public = [ip.public_ipv4 for nic in interfaces for ip in nic.ips if ip.public_ipv4 is not None]
    if not public:
        raise bad_request("network_interfaces: give ips[0].public_ipv4.type")
    return public[0].type or "dynamic"


def _reserve(call: Call, vm: VM, body: InstancesPatchRequest) -> Operation:
    if not body.reservation_id:
        raise bad_request("reservation_id is required for RESERVE")
    reservation_id = access.require_uuid(body.reservation_id, "reservation id")
    res = call.world.reservation(CRUSOE, reservation_id)
    if res is None or not access.reservation_visible(call, res):
        raise bad_request(f"reservation {reservation_id} not found")
    _require_idle(call, vm)
    return _synchronous_operation(call, vm, "RESERVE")


def _unreserve(call: Call, vm: VM, body: InstancesPatchRequest) -> Operation:
    _require_idle(call, vm)
    _set_reservation(call, vm, None)
    return _synchronous_operation(call, vm, "UNRESERVE")


ACTIONS: dict[str, ActionHandler] = {
    "START": _lifecycle(OpKind.START, renews_public_ip=True),
    "STOP": _lifecycle(OpKind.STOP),
    "RESET": _lifecycle(OpKind.RESET),
    "REBOOT": _lifecycle(OpKind.REBOOT),  # mock extension
    "RESTART": _lifecycle(OpKind.RESTART, renews_public_ip=True),  # mock extension
    "UPDATE": _update,
    "RESERVE": _reserve,
    "UNRESERVE": _unreserve,
}

# How refusals of the core are answered: the real PATCH endpoint declares 400, 401, 403 and 500 only.
_WORLD_ERRORS: dict[str, Callable[[str], ApiError]] = {"not_found": not_found}


def _world_error(exc: WorldError) -> ApiError:
    return _WORLD_ERRORS.get(exc.kind, bad_request)(exc.message)


def begin(call: Call, vm: VM, kind: OpKind, action: str) -> Operation:
    """Start an asynchronous operation; a refusal names the Crusoe action and state, not the core's."""
    state = render.STATE_NAMES[vm.state]
    try:
        return call.world.begin(CRUSOE, vm.id, kind, created_by=call.owner)
    except WorldError as exc:
        if exc.kind == "conflict" and exc.operation_id:
            raise bad_request(f"operation {exc.operation_id} is in progress on instance {vm.id}") from exc
        if exc.kind == "conflict":
            raise bad_request(f"cannot {action} instance {vm.id} in state {state}") from exc
        raise _world_error(exc) from exc


def _set_reservation(call: Call, vm: VM, reservation_id: str | None) -> None:
    try:
        call.world.set_reservation(CRUSOE, vm.id, reservation_id)
    except WorldError as exc:
        raise _world_error(exc) from exc


def _require_idle(call: Call, vm: VM) -> None:
    pending = call.world.pending_operation(CRUSOE, vm.id)
    if pending is not None:
        raise bad_request(f"operation {pending.id} is in progress on instance {vm.id}")


def _renew_public_ip(world: World, vm: VM) -> None:
    extras = vmdata.load(vm)
    if extras.nic.public.type == "dynamic":
        extras.nic.public.address = vmdata.public_address(world)
        vmdata.store(vm, extras)


def _synchronous_operation(call: Call, vm: VM, action: str) -> Operation:
    """A finished operation for RESERVE/UNRESERVE, pollable like any other."""
    try:
        return call.world.begin(CRUSOE, vm.id, OpKind.UPDATE, created_by=call.owner, op_native={"action": action},
                                synchronous=True)
    except WorldError as exc:
        raise _world_error(exc) from exc


