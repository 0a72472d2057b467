"""Wire JSON of Crusoe objects (swagger v1alpha5 / v1 definitions, research notes sections 2-6)."""

from __future__ import annotations

from datetime import UTC, datetime

from ..core.models import VM, Operation, OpError, OpKind, Project, Provider, Reservation, Shape, VMState
from ..core.world import World
from . import storage, vmdata

CRUSOE = Provider.CRUSOE

# Crusoe's `state` is a libvirt-derived string. STATE_RUNNING/STOPPED/SHUTOFF/SHUTDOWN/DELETING/DELETED are seen in
# clients of the real API; INITIALIZING/STARTING/ERROR are inferred from the console's state names. A stopped VM is
# STATE_SHUTOFF (libvirt "shut off"), the state the official Terraform provider and cloud controller manager test
# for (Terraform also accepts STATE_STOPPED).
STATE_NAMES: dict[VMState, str] = {
    VMState.CREATING: "STATE_INITIALIZING",  # inferred
    VMState.STARTING: "STATE_STARTING",  # inferred
    VMState.RUNNING: "STATE_RUNNING",
    VMState.REBOOTING: "STATE_RUNNING",  # a rebooting or reset guest keeps its libvirt domain running
    VMState.STOPPING: "STATE_SHUTDOWN",  # libvirt "shutdown": the domain is being shut down
    VMState.STOPPED: "STATE_SHUTOFF",
    VMState.DELETING: "STATE_DELETING",
    VMState.DELETED: "STATE_DELETED",
    VMState.ERROR: "STATE_ERROR",  # inferred
}

# Failed operations carry `result: {"code", "message"}`. `out_of_stock` is the real capacity code;
# `internal_error` is the real 500 slug; `quota_exceeded` and `aborted` are mock extensions (mock-clouds/README.md):
# the real codes for a quota refusal and an operation cut short are not published.
OP_ERROR_CODES: dict[OpError, str] = {
    OpError.CAPACITY: "out_of_stock",
    OpError.INTERNAL: "internal_error",
    OpError.QUOTA: "quota_exceeded",
    OpError.ABORTED: "aborted",
}

OP_STATES = ("IN_PROGRESS", "SUCCEEDED", "FAILED")


def timestamp(seconds: float) -> str:
    """RFC 3339 in UTC with second precision, as the real API writes it ("2021-12-03T19:58:34Z")."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def instance(world: World, vm: VM) -> dict[str, object]:
    """`InstanceV1Alpha5`: every required field always present; `reservation_id` is "" when on-demand."""
    extras = vmdata.load(vm)
    return {
        "id": vm.id,
        "project_id": vm.scope,
        "name": vm.name,
        "type": vm.shape,
        "location": vm.region,
        "state": STATE_NAMES[vm.state],
        "created_at": timestamp(vm.created_at),
        "updated_at": timestamp(vm.updated_at),
        "billing_type": "On-demand",  # the enum's other values (Spot, PoC) do not apply to API-created VMs
        "reservation_id": vm.reservation_id,
        "maintenance_policy": extras.maintenance_policy,
        "disks": [_os_disk(vm, extras.os_disk), *storage.vm_data_disks(world, vm.id)],
        "network_interfaces": [_network_interface(vm, extras.nic)],
        "host_channel_adapters": _slice(world, [_host_channel_adapter(h) for h in extras.host_channel_adapters]),
        "instance_group_id": "",
        "instance_template_id": "",
        "nvlink_domain_id": extras.nvlink_domain_id,
        "pod_id": "",
        "commitment_period": 0,
        "commitment_end": "",
        "virtualization_features": {"nested_virtualization": extras.nested_virtualization},
    }


def _slice(world: World, items: list[dict[str, object]]) -> list[dict[str, object]] | None:
    """A list member as a Go server writes a slice field without `omitempty`: `[]` when the server built an
    empty slice, `null` when it left it nil. Which one the real server does is not known (research real-clouds.md
    Part 3 R1); `[crusoe.extra] nil_slices = true` makes the mock write `null` for empty slices."""
    return None if not items and world.config(CRUSOE).extra.get("nil_slices", False) else items


def _os_disk(vm: VM, disk: vmdata.DiskRecord) -> dict[str, object]:
    return {
        "id": disk.id,
        "name": disk.name,
        "type": "persistent-ssd",
        "size": vmdata.OS_DISK_SIZE,
        "location": vm.region,
        "block_size": 4096,
        "created_at": timestamp(vm.created_at),
        "updated_at": timestamp(vm.created_at),
        "serial_number": disk.serial_number,
        "attachment_type": "os",
        "mode": "read-write",
    }


# A dynamic public address is released when the VM stops and a new one is given when it starts (actions.py), as
# on the real cloud: while it is shut down or shut off the VM has none (`address` ""; mock choice of the shape).
_NO_DYNAMIC_ADDRESS = frozenset({VMState.STOPPING, VMState.STOPPED})


def _network_interface(vm: VM, nic: vmdata.NicRecord) -> dict[str, object]:
    released = nic.public.type == "dynamic" and vm.state in _NO_DYNAMIC_ADDRESS
    public = {"address": "" if released else nic.public.address, "id": nic.public.id, "type": nic.public.type}
    return {
        "id": nic.id,
        "name": "network-interface-1",
        "network": nic.network,
        "subnet": nic.subnet,
        "interface_type": "ethernet",
        "mac_address": nic.mac_address,
        "external_dns_name": "",
        "ips": [{"private_ipv4": {"address": nic.private_address}, "public_ipv4": public}],
    }


def _host_channel_adapter(hca: vmdata.HcaRecord) -> dict[str, object]:
    return {
        "type": "infiniband",
        "guid": hca.guid,
        "ib_network_id": hca.ib_network_id,
        "ib_partition_id": hca.transport_partition_id,
        "transport_network_id": hca.ib_network_id,
        "transport_partition_id": hca.transport_partition_id,
    }


def operation_state(op: Operation) -> str:
    if not op.done:
        return "IN_PROGRESS"
    return "FAILED" if op.error is not None else "SUCCEEDED"


def operation(world: World, op: Operation) -> dict[str, object]:
    """Operation: `completed_at` is "" while in progress; `result` is the VM (SUCCEEDED), `{}` for a delete,
    or `{"code", "message"}` (FAILED). In-progress operations have no `result`."""
    body: dict[str, object] = {
        "operation_id": op.id,
        "state": operation_state(op),
        "metadata": {"id": op.resource_id},
        "started_at": timestamp(op.created_at),
        "completed_at": timestamp(op.finished_at) if op.done else "",
    }
    if op.done:
        body["result"] = _operation_result(world, op)
    return body


def _operation_result(world: World, op: Operation) -> dict[str, object]:
    if op.error is not None:
        return {"code": OP_ERROR_CODES[op.error], "message": op.message}
    vm = world.vm(CRUSOE, op.resource_id, include_deleted=True)
    if op.kind == OpKind.DELETE or vm is None:
        return {}
    return instance(world, vm)


def project(world: World, proj: Project, *, with_resources: bool = True) -> dict[str, object]:
    """Project; `resources` is null when the caller skips loading them (Go pointer without omitempty)."""
    resources = None
    if with_resources:
        vms = len(world.vms(CRUSOE, proj.id))
        resources = {
            "instances": {"count": vms},
            "disks": {"count": vms},  # each VM's OS disk
            "snapshots": {"count": 0},
            "images": {"count": 0},
            "vpc_networks": {"count": 1},  # the default VPC network
        }
    return {
        "id": proj.id,
        "organization_id": proj.owner,
        "name": proj.name,
        "relation": "owner",
        "resources": resources,
    }


def vm_type(shape: Shape) -> dict[str, object]:
    return {
        "product_name": shape.key,
        "description": shape.description,
        "cpu_cores": shape.vcpus,
        "cpu_type": shape.cpu_type,
        "memory_gb": shape.memory_gb,
        "memory_type": "RAM",
        "disk_gb": shape.disk_gb,
        "disk_type": "SSD",
        "num_gpu": shape.gpus,
        "gpu_type": shape.gpu_type,
    }


def quota_type(shape_or_family: str) -> str:
    """A `PROJECT_QUOTA_TYPE_...` name; the real names encode the slice (mock approximation)."""
    return "PROJECT_QUOTA_TYPE_" + shape_or_family.upper().replace("-", "_").replace(".", "_")


# Reservations without contract dates in the scenario get these (mock choice: an effective contract).
DEFAULT_CONTRACT_START = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
DEFAULT_CONTRACT_END = datetime(2030, 1, 1, tzinfo=UTC).timestamp()
_SECONDS_PER_MONTH = 365.25 * 86400 / 12


def contract_period(res: Reservation) -> tuple[float, float]:
    start = res.start or DEFAULT_CONTRACT_START
    return start, res.end or max(start, DEFAULT_CONTRACT_END)


def reservation(world: World, res: Reservation, org_projects: list[str]) -> dict[str, object]:
    """Reservation as seen by one organisation: `projects` and `vm_ids` are limited to its projects."""
    start, end = contract_period(res)
    projects = [p for p in org_projects if not res.scopes or p in res.scopes]
    return {
        "id": res.id,
        "reservation_type": res.reservation_type,
        "product_line": res.family,
        "duration": round((end - start) / _SECONDS_PER_MONTH, 1),
        "quantity": res.quantity,
        "used_quantity": world.reservation_used(CRUSOE, res.id),
        "locations": list(res.regions),
        "projects": projects,
        "contract_start_date": timestamp(start),
        "contract_end_date": timestamp(end),
        "delivery_deadline": timestamp(start),
        "date_delivered": timestamp(start),
        "vm_ids": [vm.id for vm in world.reservation_vms(CRUSOE, res.id) if vm.scope in projects],
        "price": f"{res.price_cents_per_gpu_hour / 100:.2f}",
    }
