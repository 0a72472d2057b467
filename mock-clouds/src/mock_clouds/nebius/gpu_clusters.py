"""`nebius.compute.v1.GpuClusterService` (Get, GetByName, List, Create, Delete, ListOperationsByParent).

A GPU cluster is an InfiniBand fabric (`spec.infiniband_fabric`, required and IMMUTABLE) that a project's 8-GPU
instances join through `InstanceSpec.gpu_cluster` (checked by `references`); its `status.instances` are the live
instances in it. SkyPilot makes one per cluster (`sky/provision/nebius/utils.py`), picking the fabric of the
platform and region from its table (`fabrics`). Create refuses an unknown fabric, or one of another region than the
project's, with INVALID_ARGUMENT (inference: the real message is not published). Delete while instances remain
is FAILED_PRECONDITION (inference); deleting an unknown or deleted cluster is NOT_FOUND.
"""

from __future__ import annotations

from ..core.models import Project
from ..core.world import World
from . import auth, errors, fabrics, references, stored, validate
from ._pb.nebius.common import v1 as common
from ._pb.nebius.compute import v1 as compute
from .call import Call

KIND = "gpu_cluster"
PREFIX = "computegpucluster"


def get(call: Call, request: compute.GetGpuClusterRequest) -> compute.GpuCluster:
    with call.world.read() as world:
        return cluster(world, own(world, call.owner, request.id))


def get_by_name(call: Call, request: common.GetByNameRequest) -> compute.GpuCluster:
    with call.world.read() as world:
        project = auth.project(world, call.owner, request.parent_id, "parent_id")
        found = stored.named(world, KIND, project.id, request.name, "gpu cluster")
        return cluster(world, found)


def list_clusters(call: Call, request: compute.ListGpuClustersRequest) -> compute.ListGpuClustersResponse:
    with call.world.read() as world:
        project = auth.project(world, call.owner, request.parent_id, "parent_id")
        chosen, token = stored.page(world, KIND, project.id, request.page_size, request.page_token)
        return compute.ListGpuClustersResponse(items=[cluster(world, s) for s in chosen], next_page_token=token)


def create(call: Call, request: compute.CreateGpuClusterRequest) -> common.Operation:
    with call.world.tx() as world:
        metadata = request.metadata
        project = None
        if metadata is not None and metadata.parent_id:
            project = auth.project(world, call.owner, metadata.parent_id, "metadata.parent_id")
        violations = validate.create_metadata(metadata)
        if project is not None:
            violations += _fabric_violations(world, project, request.spec)
        if violations:
            raise errors.bad_request(violations)
        assert metadata is not None and request.spec is not None
        made = stored.add(world, KIND, PREFIX, metadata, request.spec)
        return stored.operation(world, owner=call.owner, scope=made.parent_id, resource_id=made.id,
                                description="Create GPU cluster", request=request)


def delete(call: Call, request: compute.DeleteGpuClusterRequest) -> common.Operation:
    with call.world.tx() as world:
        found = own(world, call.owner, request.id)
        members = references.cluster_members(world, found.id)
        if members:
            raise errors.bad_resource_state(found.id, f"GPU cluster {found.id} still has instances: "
                                                      + ", ".join(members))
        stored.remove(world, KIND, found.id)
        return stored.operation(world, owner=call.owner, scope=found.parent_id, resource_id=found.id,
                                description="Delete GPU cluster", request=request)


def list_operations_by_parent(
    call: Call, request: compute.ListOperationsByParentRequest
) -> common.ListOperationsResponse:
    """No operations are listed (mock simplification: they are complete when returned)."""
    with call.world.read() as world:
        auth.project(world, call.owner, request.parent_id, "parent_id")
        return common.ListOperationsResponse(operations=[], next_page_token="")


def own(world: World, owner: str, cluster_id: str) -> stored.Stored:
    """The caller's GPU cluster: NOT_FOUND when unknown or deleted, PERMISSION_DENIED in another tenant."""
    if not cluster_id:
        raise errors.bad_request([("id", "id is required")])
    found = stored.find(world, KIND, cluster_id)
    if found is None:
        raise errors.not_found(cluster_id, "gpu cluster")
    if not auth.owns_scope(world, owner, found.parent_id):
        raise errors.permission_denied(cluster_id)
    return found


def _fabric_violations(world: World, project: Project, spec: compute.GpuClusterSpec | None) -> list[validate.Violation]:
    name = spec.infiniband_fabric if spec is not None else ""
    if not name:
        return [("spec.infiniband_fabric", "value is required")]
    fabric = fabrics.find(world, name)
    if fabric is None:
        return [("spec.infiniband_fabric", f"unknown InfiniBand fabric {name}")]
    if fabric.region != project.region:
        return [("spec.infiniband_fabric", f"fabric {name} is in {fabric.region}, not in {project.region}")]
    return []


def cluster(world: World, record: stored.Stored) -> compute.GpuCluster:
    return compute.GpuCluster(
        metadata=record.metadata(),
        spec=compute.GpuClusterSpec.from_dict(record.spec),
        status=compute.GpuClusterStatus(instances=references.cluster_members(world, record.id)),
    )
