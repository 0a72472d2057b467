"""`nebius.compute.v1.DiskService` (Get, GetByName, List, Create, Delete, ListOperationsByParent).

dstack creates each VM's boot disk with `DiskService.Create` (`backends/nebius/resources.py:283`), attaches it
as an `ExistingDisk`, and deletes it after the instance (`compute.py:334-336`, tolerating only NOT_FOUND). A
disk is READY once created (its operation is complete when returned, `stored`); its `read_write_attachment` is
the live instance that boots from it (`references`). Deleting a disk a live instance uses is FAILED_PRECONDITION
(inference: the real API refuses to delete an attached disk; the exact code is not published); deleting an
unknown or already deleted disk is NOT_FOUND. The spec is checked as `nebius/compute/v1/disk.proto` rules it:
one size is required, as is a type; `block_size_bytes` is a power of two in [4096, 131072] (0 = 4096).
"""

from __future__ import annotations

from ..core.world import World
from . import auth, errors, references, stored, validate
from ._pb.nebius.common import v1 as common
from ._pb.nebius.compute import v1 as compute
from .call import Call

KIND = "disk"
PREFIX = "computedisk"
GIB = 1 << 30
DEFAULT_BLOCK = 4096


def get(call: Call, request: compute.GetDiskRequest) -> compute.Disk:
    with call.world.read() as world:
        return disk(world, own(world, call.owner, request.id))


def get_by_name(call: Call, request: common.GetByNameRequest) -> compute.Disk:
    with call.world.read() as world:
        project = auth.project(world, call.owner, request.parent_id, "parent_id")
        found = stored.named(world, KIND, project.id, request.name, "disk")
        return disk(world, found)


def list_disks(call: Call, request: compute.ListDisksRequest) -> compute.ListDisksResponse:
    with call.world.read() as world:
        project = auth.project(world, call.owner, request.parent_id, "parent_id")
        chosen, token = stored.page(world, KIND, project.id, request.page_size, request.page_token)
        return compute.ListDisksResponse(items=[disk(world, s) for s in chosen], next_page_token=token)


def create(call: Call, request: compute.CreateDiskRequest) -> common.Operation:
    with call.world.tx() as world:
        metadata = request.metadata
        if metadata is not None and metadata.parent_id:
            auth.project(world, call.owner, metadata.parent_id, "metadata.parent_id")
        violations = validate.create_metadata(metadata) + spec_violations(request.spec)
        if violations:
            raise errors.bad_request(violations)
        assert metadata is not None and request.spec is not None
        made = stored.add(world, KIND, PREFIX, metadata, request.spec)
        return stored.operation(world, owner=call.owner, scope=made.parent_id, resource_id=made.id,
                                description="Create disk", request=request)


def delete(call: Call, request: compute.DeleteDiskRequest) -> common.Operation:
    with call.world.tx() as world:
        found = own(world, call.owner, request.id)
        user = attachment(world, found.id)
        if user:
            raise errors.bad_resource_state(found.id, f"disk {found.id} is attached to instance {user}")
        stored.remove(world, KIND, found.id)
        return stored.operation(world, owner=call.owner, scope=found.parent_id, resource_id=found.id,
                                description="Delete disk", request=request)


def list_operations_by_parent(
    call: Call, request: compute.ListOperationsByParentRequest
) -> common.ListOperationsResponse:
    """The project's disk operations are not listed (mock simplification: they are complete when returned)."""
    with call.world.read() as world:
        auth.project(world, call.owner, request.parent_id, "parent_id")
        return common.ListOperationsResponse(operations=[], next_page_token="")


def own(world: World, owner: str, disk_id: str) -> stored.Stored:
    """The caller's disk `disk_id`: NOT_FOUND when unknown or deleted, PERMISSION_DENIED in another tenant."""
    if not disk_id:
        raise errors.bad_request([("id", "id is required")])
    found = stored.find(world, KIND, disk_id)
    if found is None:
        raise errors.not_found(disk_id, "disk")
    if not auth.owns_scope(world, owner, found.parent_id):
        raise errors.permission_denied(disk_id)
    return found


def attachment(world: World, disk_id: str) -> str:
    """The live instance that uses `disk_id` as an ExistingDisk (boot or secondary), else ""."""
    return references.disk_user(world, disk_id)


def spec_violations(spec: compute.DiskSpec | None) -> list[validate.Violation]:
    if spec is None:
        return [("spec", "spec is required")]
    found: list[validate.Violation] = []
    if size_bytes(spec) <= 0:
        found.append(("spec.size", "one of size_bytes, size_kibibytes, size_mebibytes, size_gibibytes is required"))
    if spec.type == compute.DiskSpecDiskType.UNSPECIFIED:
        found.append(("spec.type", "value is required"))
    block = spec.block_size_bytes
    if block and (block < DEFAULT_BLOCK or block > 131072 or block & (block - 1)):
        found.append(("spec.block_size_bytes", "must be a power of two between 4096 and 131072"))
    return found


def size_bytes(spec: compute.DiskSpec) -> int:
    """The size the spec asks for, in bytes (0 when no size is set)."""
    for value, unit in ((spec.size_bytes, 1), (spec.size_kibibytes, 1 << 10), (spec.size_mebibytes, 1 << 20),
                        (spec.size_gibibytes, GIB)):
        if value:
            return value * unit
    return 0


def disk(world: World, record: stored.Stored) -> compute.Disk:
    spec = compute.DiskSpec.from_dict(record.spec)
    return compute.Disk(
        metadata=record.metadata(),
        spec=spec,
        status=compute.DiskStatus(
            state=compute.DiskStatusState.READY,
            read_write_attachment=attachment(world, record.id),
            source_image_id=spec.source_image_id or "",
            size_bytes=size_bytes(spec),
            block_size_bytes=spec.block_size_bytes or DEFAULT_BLOCK,
        ),
    )
