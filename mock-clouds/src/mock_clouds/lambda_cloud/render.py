"""Wire shapes of Lambda objects (research/lambda.md section 4). Call inside world.tx().

Optional fields the real API leaves out (name, ip, private_ip, hostname, jupyter_*, file_system_mounts) are
omitted rather than null, so strict clients generated from the spec accept them.
"""

from __future__ import annotations

import datetime
import uuid

from ..core.models import VM, OpKind, Provider, Reservation, Shape, VMState
from ..core.world import World
from .state import (
    FileSystemRecord,
    FirewallRuleRecord,
    ImageRecord,
    InstanceDetails,
    SSHKeyRecord,
    instance_details,
)

LAMBDA = Provider.LAMBDA

STATUS: dict[VMState, str] = {
    VMState.CREATING: "booting",
    VMState.STARTING: "booting",
    VMState.RUNNING: "active",
    VMState.REBOOTING: "active",  # a restart in progress: the spec's restart example shows "active"
    VMState.DELETING: "terminating",
    VMState.DELETED: "terminated",
    VMState.ERROR: "unhealthy",  # a failed launch (CreateFailure.ERROR)
    VMState.STOPPING: "unhealthy",  # not reachable through the Lambda API
    VMState.STOPPED: "unhealthy",
}



def status(vm: VM) -> str:
    """`InstanceStatus`: `preempted` once the cloud has taken the instance's capacity back (`World.preempt`)."""
    return "preempted" if vm.preempted and vm.state == VMState.STOPPED else STATUS[vm.state]


ACTIONS = ("migrate", "rebuild", "restart", "cold_reboot", "terminate")
_NOT_TERMINATE = frozenset(ACTIONS) - {"terminate"}
_NOT_LAUNCHED = ("vm-has-not-launched", "The instance has not launched yet.")
_TERMINATING = ("vm-is-terminating", "The instance is terminating or has been terminated.")

# State -> (blocked actions, reason_code, reason_description). Unlisted states allow every action.
_BLOCKED: dict[VMState, tuple[frozenset[str], str, str]] = {
    VMState.CREATING: (frozenset(ACTIONS), *_NOT_LAUNCHED),
    VMState.STARTING: (frozenset(ACTIONS), *_NOT_LAUNCHED),
    VMState.REBOOTING: (_NOT_TERMINATE, "vm-action-in-progress", "A restart of the instance is in progress."),
    VMState.DELETING: (frozenset(ACTIONS), *_TERMINATING),
    VMState.DELETED: (frozenset(ACTIONS), *_TERMINATING),
    VMState.ERROR: (_NOT_TERMINATE, "vm-has-not-launched", "The instance failed to launch."),
    VMState.STOPPING: (_NOT_TERMINATE, *_NOT_LAUNCHED),
    VMState.STOPPED: (_NOT_TERMINATE, *_NOT_LAUNCHED),
}
# Mock extension: reserved instances cannot be terminated through the API ("vm-is-reserved" is invented; the
# spec types reason_code as enum-or-string, so a new code stays schema-valid).
RESERVED_REASON = (
    "vm-is-reserved",
    "The instance runs on reserved capacity; contact Lambda Support to release it.",
)


def iso(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, datetime.UTC).isoformat(timespec="seconds")


def region(world: World, name: str) -> dict[str, str]:
    return {"name": name, "description": world.config(LAMBDA).regions.get(name, name)}


def instance_type(shape: Shape) -> dict[str, object]:
    return {
        "name": shape.key,
        "description": shape.description,
        "gpu_description": shape.gpu_description,
        "price_cents_per_hour": shape.price_cents_per_hour,
        "specs": {
            "vcpus": shape.vcpus,
            "memory_gib": shape.memory_gb,
            "storage_gib": shape.disk_gb,
            "gpus": shape.gpus,
        },
    }


def is_reserved(vm: VM) -> bool:
    """True while the instance occupies reserved capacity."""
    return bool(vm.reservation_id)


def actions(vm: VM) -> dict[str, dict[str, object]]:
    blocked, code, description = _BLOCKED.get(vm.state, (frozenset(), "", ""))
    result: dict[str, dict[str, object]] = {}
    for action in ACTIONS:
        if action in blocked:
            result[action] = {"available": False, "reason_code": code, "reason_description": description}
        else:
            result[action] = {"available": True}
    if is_reserved(vm) and vm.state not in (VMState.DELETING, VMState.DELETED):
        result["terminate"] = {
            "available": False,
            "reason_code": RESERVED_REASON[0],
            "reason_description": RESERVED_REASON[1],
        }
    return result


def has_launched(world: World, vm: VM) -> bool:
    """Whether the instance ever booted, i.e. has addresses. Terminating instances keep them unless the launch
    itself was aborted or failed."""
    if vm.state in (VMState.RUNNING, VMState.REBOOTING):
        return True
    if vm.state not in (VMState.DELETING, VMState.DELETED):
        return False
    creates = [op for op in world.operations(LAMBDA, resource_id=vm.id) if op.kind == OpKind.CREATE]
    return all(op.done and op.error is None for op in creates)


def instance(world: World, vm: VM) -> dict[str, object]:
    details = instance_details(vm)
    shape = world.shape(LAMBDA, vm.shape)
    body: dict[str, object] = {"id": vm.id}
    if vm.name:
        body["name"] = vm.name
    launched = has_launched(world, vm)
    if launched:
        body |= {"ip": details.ip, "private_ip": details.private_ip}
    body |= {
        "status": status(vm),
        "ssh_key_names": list(details.ssh_key_names),
        "file_system_names": list(details.file_system_names),
    }
    if details.firewall_ruleset_ids:
        body["firewall_rulesets"] = [{"id": ruleset_id} for ruleset_id in details.firewall_ruleset_ids]
    if details.file_system_mounts:
        body["file_system_mounts"] = [
            {"mount_point": m.mount_point, "file_system_id": m.file_system_id}
            for m in details.file_system_mounts
        ]
    body["region"] = region(world, vm.region)
    body["instance_type"] = instance_type(shape) if shape else {"name": vm.shape}
    body |= _network(vm, details, launched)
    body["is_reserved"] = is_reserved(vm)
    body["actions"] = actions(vm)
    body["tags"] = [{"key": t.key, "value": t.value} for t in details.tags]
    return body


def _network(vm: VM, details: InstanceDetails, launched: bool) -> dict[str, str]:
    """hostname (requested, else the IP) and the JupyterLab fields, once the instance has booted."""
    fields: dict[str, str] = {}
    if details.hostname or launched:
        fields["hostname"] = details.hostname or details.ip
    if launched:
        fields["jupyter_token"] = details.jupyter_token
        fields["jupyter_url"] = f"https://jupyter-{vm.id}.lambdaspaces.com/?token={details.jupyter_token}"
    return fields


def ssh_key(record: SSHKeyRecord) -> dict[str, str]:
    return {"id": record.id, "name": record.name, "public_key": record.public_key}


def firewall_rule(rule: FirewallRuleRecord) -> dict[str, object]:
    """FirewallRule; `port_range` only where the protocol has ports."""
    body: dict[str, object] = {"protocol": rule.protocol}
    if rule.port_range is not None:
        body["port_range"] = list(rule.port_range)
    return body | {"source_network": rule.source_network, "description": rule.description}


def file_system(world: World, account: str, record: FileSystemRecord, in_use: bool) -> dict[str, object]:
    """Filesystem; `created_by` is a user derived from the account (mock extension: invented identity)."""
    return {
        "id": record.id,
        "name": record.name,
        "mount_point": f"/lambda/nfs/{record.name}",
        "created": iso(record.created),
        "created_by": {
            "id": uuid.uuid5(uuid.NAMESPACE_URL, f"lambda-user:{account}").hex,
            "email": f"{account}@example.com",
            "status": "active",
        },
        "is_in_use": in_use,
        "region": region(world, record.region),
        "bytes_used": record.bytes_used,
    }


def image(world: World, record: ImageRecord, region_name: str) -> dict[str, object]:
    return {
        "id": record.id,
        "created_time": record.created_time,
        "updated_time": record.updated_time,
        "name": record.name,
        "description": record.description or record.name,
        "family": record.family,
        "version": record.version,
        "architecture": record.architecture,
        "region": region(world, region_name),
    }


def reservation(world: World, res: Reservation, scope: str) -> dict[str, object]:
    """Mock extension (no reservation API exists): reserved capacity counted in GPUs.

    `region` is the reservation's (first) region: Lambda reserved capacity sits in one data centre.
    `instance_type_names` are the types that fit on it; `instance_ids` lists only the caller's instances
    while `used_quantity` counts every GPU in use.
    """
    used = world.reservation_used(LAMBDA, res.id)
    shapes = [s for s in world.config(LAMBDA).shapes if s.family == res.family and 0 < s.gpus <= res.quantity]
    body: dict[str, object] = {
        "id": res.id,
        "name": res.name or res.id,
        "region": region(world, res.regions[0] if res.regions else ""),
        "instance_type_family": res.family,
        "gpu_description": shapes[0].gpu_description if shapes else "",
        "instance_type_names": [s.key for s in shapes],
        "quantity": res.quantity,
        "used_quantity": used,
        "available_quantity": max(0, res.quantity - used),
        "instance_ids": [vm.id for vm in world.reservation_vms(LAMBDA, res.id) if vm.scope == scope],
        "price_cents_per_gpu_hour": res.price_cents_per_gpu_hour,
    }
    if res.start:
        body["start_time"] = iso(res.start)
    if res.end:
        body["end_time"] = iso(res.end)
    return body
