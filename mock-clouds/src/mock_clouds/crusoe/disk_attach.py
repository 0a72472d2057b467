"""POST `/projects/{project_id}/compute/vms/instances/{vm_id}/attach-disks` and `.../detach-disks` (client-go
`VMsApi.UpdateInstanceAttachDisks` / `UpdateInstanceDetachDisks`; swagger `InstancesAttachDiskPostRequestV1Alpha5`
`{"attach_disks": [DiskAttachment]}` and `InstancesDetachDiskPostRequest` `{"detach_disks": [disk id]}`), each
answered 200 with `{"operation": ...}`, a VM operation (research crusoe.md §2).

Attaching or detaching needs no stop: "Disk attach/detach does not require stopping" (terraform-provider-crusoe
CHANGELOG, research crusoe.md §3), so a RUNNING or STOPPED VM takes it (another state, or an operation in
flight, is 400, as for UPDATE). An attached disk follows the create-time rules (`storage.attach_at_create`: a
data disk of the project in the VM's location, attached to no other VM unless it is a shared volume) and shows
at once in the VM's `disks` and the disk's `attached_to`; detaching a disk not attached to this VM is 400
(inference: the real message is not published).
"""

from __future__ import annotations

from ..core.models import OpKind
from ..http import Response
from . import access, render, storage
from .access import Call
from .actions import begin
from .errors import bad_request
from .models import DiskAttachment, _Body


class AttachDisksRequest(_Body):
    attach_disks: list[DiskAttachment]


class DetachDisksRequest(_Body):
    detach_disks: list[str]


def attach_disks(call: Call) -> Response:
    proj = access.project(call)
    vm = access.instance(call, proj)
    body: AttachDisksRequest = call.body(AttachDisksRequest)
    if not body.attach_disks:
        raise bad_request("attach_disks must name at least one disk")
    found = storage.attach_at_create(call, proj.id, vm.region, body.attach_disks)
    op = begin(call, vm, OpKind.UPDATE, "attach disks to")
    storage.record_attachments(call.world, vm.id, found)
    return Response(200, {"operation": render.operation(call.world, op)})


def detach_disks(call: Call) -> Response:
    proj = access.project(call)
    vm = access.instance(call, proj)
    body: DetachDisksRequest = call.body(DetachDisksRequest)
    if not body.detach_disks:
        raise bad_request("detach_disks must name at least one disk")
    attached = {d["id"] for d in storage.vm_data_disks(call.world, vm.id)}
    for disk_id in body.detach_disks:
        if disk_id not in attached:
            raise bad_request(f"disk {disk_id} is not attached to instance {vm.id}")
    op = begin(call, vm, OpKind.UPDATE, "detach disks from")
    storage.remove_attachments(call.world, vm.id, body.detach_disks)
    return Response(200, {"operation": render.operation(call.world, op)})
