"""`/projects/{project_id}/storage/disks[/{disk_id}]` and `.../storage/disks/operations[/{operation_id}]`.

Shapes are the swagger's (`DiskV1Alpha5`, `DisksPostRequestV1Alpha5`, `AsyncOperationResponse`, `Operation`).
Create and delete answer `{"operation"}` at once, IN_PROGRESS with `metadata.id` = the disk id, and finish after
the scenario's `update` duration (mock choice: the real durations are not published); a created disk is listed
at once, a deleted one until its operation finishes. A disk attached to a live VM (a create's
`disks: [{disk_id, mode, attachment_type: "data"}]`, as dstack sends it: backends/crusoe/compute.py
create_instance) shows it in `attached_to` and cannot be deleted; the VM's deletion detaches it (the OS disk goes
with the VM, data disks stay). Operations of other projects or unknown ids answer 403, as VM operations do.
"""

from __future__ import annotations

import re
import secrets
import uuid
from typing import Any, Literal

from ..core.models import Provider, VMState
from ..core.world import World
from ..http import Response
from . import access, render
from .access import Call
from .errors import bad_request, not_found, unauthorized
from .models import _Body

CRUSOE = Provider.CRUSOE
_DISKS = "crusoe_disks"  # world.state.extra_state: disk id -> record
_OPS = "crusoe_disk_operations"  # operation id -> record
_SIZE = re.compile(r"^(\d+)(GiB|TiB)$")


class DisksPostRequest(_Body):
    name: str
    size: str = ""
    location: str = ""
    type: Literal["persistent-ssd", "shared-volume", ""] = "persistent-ssd"
    block_size: int = 4096
    snapshot_id: str = ""


def _table(world: World, key: str) -> dict[str, dict[str, Any]]:
    table = world.state.extra_state.setdefault(key, {})
    assert isinstance(table, dict)
    return table


def _settle(world: World) -> None:
    """Finish the operations that are due: a finished delete removes its disk."""
    now, disks = world.now(), _table(world, _DISKS)
    for op in _table(world, _OPS).values():
        if op["completed_at"] is None and now >= op["due_at"]:
            op["completed_at"] = now
            if op["kind"] == "delete":
                disks.pop(op["disk_id"], None)


def _begin(call: Call, project: str, disk: dict[str, Any], kind: str) -> dict[str, Any]:
    now = call.world.now()
    op = {"id": str(uuid.uuid4()).upper(), "project": project, "disk_id": disk["id"], "kind": kind,
          "started_at": now, "due_at": now + call.world.scaled(call.world.config(CRUSOE).durations.update),
          "completed_at": None, "result": dict(disk)}
    _table(call.world, _OPS)[op["id"]] = op
    return op


def _operation(op: dict[str, Any]) -> dict[str, object]:
    done = op["completed_at"] is not None
    body: dict[str, object] = {
        "operation_id": op["id"], "state": "SUCCEEDED" if done else "IN_PROGRESS",
        "metadata": {"id": op["disk_id"]}, "started_at": render.timestamp(op["started_at"]),
        "completed_at": render.timestamp(op["completed_at"]) if done else "",
    }
    if done:
        body["result"] = {} if op["kind"] == "delete" else op["result"]
    return body


def attached_to(world: World, disk: dict[str, Any]) -> list[dict[str, str]]:
    """`VMAttachmentV1Alpha5` of the live VMs the disk is attached to."""
    return [a for a in disk["attached_to"] if _live(world, a["vm_id"])]


def _live(world: World, vm_id: str) -> bool:
    vm = world.vm(CRUSOE, vm_id)
    return vm is not None and vm.state not in (VMState.DELETING, VMState.DELETED)


def _render(world: World, disk: dict[str, Any]) -> dict[str, object]:
    return {**{k: v for k, v in disk.items() if k != "project"}, "attached_to": attached_to(world, disk)}


def _disk(call: Call) -> dict[str, Any]:
    proj = access.project(call)
    _settle(call.world)
    disk_id = access.require_uuid(call.params["disk_id"], "disk id")
    disk = _table(call.world, _DISKS).get(disk_id)
    if disk is None or disk["project"] != proj.id:
        raise not_found(f"disk {disk_id} not found")
    return disk


def create_disk(call: Call) -> Response:
    proj = access.project(call)
    body: DisksPostRequest = call.body(DisksPostRequest)
    if not body.name.strip():
        raise bad_request("name must not be empty")
    if body.location not in call.world.config(CRUSOE).regions:
        raise bad_request(f"invalid location {body.location!r}")
    if not _SIZE.match(body.size):
        raise bad_request(f"invalid size {body.size!r}: use e.g. 10GiB or 1TiB")
    if body.snapshot_id:
        raise bad_request(f"snapshot {body.snapshot_id} not found")  # the mock has no snapshots
    _settle(call.world)
    if any(d["name"] == body.name and d["project"] == proj.id for d in _table(call.world, _DISKS).values()):
        raise bad_request(f"a disk named {body.name!r} already exists in this project")
    stamp = render.timestamp(call.world.now())
    disk: dict[str, Any] = {
        "id": str(uuid.uuid4()), "project": proj.id, "name": body.name, "type": body.type or "persistent-ssd",
        "size": body.size, "location": body.location, "block_size": body.block_size, "created_at": stamp,
        "updated_at": stamp, "serial_number": secrets.token_hex(10)[:19].upper(), "attached_to": [],
    }
    _table(call.world, _DISKS)[disk["id"]] = disk
    op = _begin(call, proj.id, _render(call.world, disk), "create")
    return Response(200, {"operation": _operation(op)})


def list_disks(call: Call) -> Response:
    """`?disk_ids=`, `?disk_names=` (comma-separated), `?location=`; `exclude_os` changes nothing (the OS disks
    of VMs are listed with their VMs, not here: mock limitation)."""
    proj = access.project(call)
    _settle(call.world)
    ids, names, location = call.query_list("disk_ids"), call.query_list("disk_names"), call.query("location")
    disks = [d for d in _table(call.world, _DISKS).values() if d["project"] == proj.id
             and (not ids or d["id"] in ids) and (not names or d["name"] in names)
             and (not location or d["location"] == location)]
    return Response(200, {"items": [_render(call.world, d) for d in disks]})


def get_disk(call: Call) -> Response:
    return Response(200, _render(call.world, _disk(call)))


def delete_disk(call: Call) -> Response:
    """404 when the disk does not exist (clients treat it as already gone); 400 while it is attached."""
    disk = _disk(call)
    if attached_to(call.world, disk):
        raise bad_request(f"disk {disk['id']} is attached to a VM: detach it or delete the VM first")
    pending = next((op for op in _table(call.world, _OPS).values()
                    if op["disk_id"] == disk["id"] and op["kind"] == "delete" and op["completed_at"] is None), None)
    return Response(200, {"operation": _operation(pending or _begin(call, disk["project"], disk, "delete"))})


def get_operation(call: Call) -> Response:
    proj = access.project(call)
    _settle(call.world)
    op_id = call.params["operation_id"]
    op = _table(call.world, _OPS).get(op_id.upper())
    if op is None or op["project"] != proj.id:
        raise unauthorized(f"operation {op_id} does not exist, was not initiated by this user, or has expired")
    return Response(200, _operation(op))


def list_operations(call: Call) -> Response:
    proj = access.project(call)
    _settle(call.world)
    resource_id, states = call.query("resource_id"), call.query_list("state")
    ops = [_operation(op) for op in _table(call.world, _OPS).values() if op["project"] == proj.id
           and (not resource_id or op["disk_id"] == resource_id)]
    return Response(200, {"items": [op for op in ops if not states or op["state"] in states]})


def attach_at_create(call: Call, project: str, location: str, attachments: list[Any]) -> list[dict[str, str]]:
    """Check a create's `disks` (each a data disk of `project` in `location`, not attached elsewhere unless
    shared); returns the attachment records to add once the VM id is known. 400 otherwise."""
    _settle(call.world)
    found = []
    for attachment in attachments:
        disk = _table(call.world, _DISKS).get(attachment.disk_id)
        if disk is None or disk["project"] != project:
            raise bad_request(f"disk {attachment.disk_id} not found")
        if attachment.attachment_type == "os":
            raise bad_request(f"disk {attachment.disk_id}: attachment_type os is not supported")  # mock limitation
        if disk["location"] != location:
            raise bad_request(f"disk {disk['id']} is in {disk['location']}, not {location}")
        if attached_to(call.world, disk) and disk["type"] != "shared-volume":
            raise bad_request(f"disk {disk['id']} is already attached to a VM")
        found.append({"disk_id": disk["id"], "mode": attachment.mode or "read-write"})
    return found


def record_attachments(world: World, vm_id: str, attachments: list[dict[str, str]]) -> None:
    for attachment in attachments:
        disk = _table(world, _DISKS)[attachment["disk_id"]]
        disk["attached_to"].append({"vm_id": vm_id, "attachment_type": "data", "mode": attachment["mode"]})


def remove_attachments(world: World, vm_id: str, disk_ids: list[str]) -> None:
    for disk_id in disk_ids:
        disk = _table(world, _DISKS)[disk_id]
        disk["attached_to"] = [a for a in disk["attached_to"] if a["vm_id"] != vm_id]


def vm_data_disks(world: World, vm_id: str) -> list[dict[str, object]]:
    """The data disks attached to a VM, as `AttachedDiskV1Alpha5` items of the instance's `disks`."""
    disks = []
    for disk in _table(world, _DISKS).values():
        for a in disk["attached_to"]:
            if a["vm_id"] == vm_id:
                fields = {k: v for k, v in disk.items() if k not in ("project", "attached_to")}
                disks.append({**fields, "attachment_type": "data", "mode": a["mode"]})
    return disks

