"""What an instance's spec refers to by id, checked on Create: existing disks, its GPU cluster, its pricing policy.

* `ExistingDisk.id` (boot or secondary) of a disk made with DiskService must be in the instance's project
  (NOT_FOUND otherwise) and not used by another live instance (FAILED_PRECONDITION: inference, a disk has one
  `read_write_attachment` in `nebius/compute/v1/disk.proto`). dstack boots every VM this way
  (`backends/nebius/resources.py:283`). An id the DiskService never made is accepted as it stands (mock
  leniency: the mock's own tests boot many instances from one such id; the real API answers NOT_FOUND).
* `gpu_cluster.id` must be a GPU cluster of the project (NOT_FOUND otherwise), the preset must allow GPU
  clustering (`Preset.allow_gpu_clustering`, the 8-GPU presets) and the cluster's InfiniBand fabric must serve
  the instance's platform (docs.nebius.com/compute/clusters/gpu#fabrics: each fabric has one platform; SkyPilot
  and gpuhunt keep that table, `fabrics`); otherwise INVALID_ARGUMENT.
* `spot_pricing_policy.id` of a policy made with PricingPolicyService must be of the project (NOT_FOUND otherwise)
  and for the instance's platform (INVALID_ARGUMENT); an id the service never made is accepted (the same
  leniency as for disks).
"""

from __future__ import annotations

from ..core.models import VM, Project, Provider
from ..core.world import World
from . import catalog, errors, fabrics, stored
from ._pb.nebius.billing import v1 as billing_v1
from ._pb.nebius.compute import v1 as compute
from .records import InstanceRecord

NEBIUS = Provider.NEBIUS


def check(world: World, project: Project, spec: compute.InstanceSpec) -> None:
    """Raise the error of the first reference of `spec` that the project cannot honour (see the module)."""
    for path, disk_id in _existing_disks(spec):
        _check_disk(world, project, path, disk_id)
    resources = spec.resources or compute.ResourcesSpec()
    if spec.gpu_cluster is not None and spec.gpu_cluster.id:
        _check_cluster(world, project, spec.gpu_cluster.id, resources)
    if spec.spot_pricing_policy is not None and spec.spot_pricing_policy.id:
        _check_policy(world, project, spec.spot_pricing_policy.id, resources.platform)


def disk_user(world: World, disk_id: str) -> str:
    """The live instance whose spec attaches `disk_id` as an existing disk, else ""."""
    return next((vm.id for vm in world.vms(NEBIUS) if disk_id in dict(_existing_disks(_spec(vm))).values()), "")


def cluster_members(world: World, cluster_id: str) -> list[str]:
    """The live instances in GPU cluster `cluster_id`, by creation."""
    return [vm.id for vm in world.vms(NEBIUS) if (_spec(vm).gpu_cluster or compute.InstanceGpuClusterSpec()).id
            == cluster_id]


def policy_users(world: World, policy_id: str) -> list[str]:
    """The live instances that a pricing policy `policy_id` backs."""
    return [vm.id for vm in world.vms(NEBIUS)
            if (_spec(vm).spot_pricing_policy or compute.SpotPricingPolicySpec()).id == policy_id]


def _spec(vm: VM) -> compute.InstanceSpec:
    return InstanceRecord.of(vm).instance_spec()


def _existing_disks(spec: compute.InstanceSpec) -> list[tuple[str, str]]:
    found = []
    if spec.boot_disk is not None and spec.boot_disk.existing_disk is not None:
        found.append(("spec.boot_disk.existing_disk.id", spec.boot_disk.existing_disk.id))
    for i, disk in enumerate(spec.secondary_disks):
        if disk.existing_disk is not None:
            found.append((f"spec.secondary_disks[{i}].existing_disk.id", disk.existing_disk.id))
    return found


def _check_disk(world: World, project: Project, path: str, disk_id: str) -> None:
    found = stored.find(world, "disk", disk_id)
    if found is None:
        return  # not made here: see the module
    if found.parent_id != project.id:
        raise errors.not_found(disk_id, "disk")
    user = disk_user(world, disk_id)
    if user:
        raise errors.bad_resource_state(disk_id, f"{path}: disk {disk_id} is already attached to instance {user}")


def _check_cluster(world: World, project: Project, cluster_id: str, resources: compute.ResourcesSpec) -> None:
    found = stored.find(world, "gpu_cluster", cluster_id)
    if found is None or found.parent_id != project.id:
        raise errors.not_found(cluster_id, "gpu cluster")
    shape = world.shape(NEBIUS, catalog.shape_key(resources.platform, resources.preset or ""))
    fabric = fabrics.of(found)
    if shape is not None and shape.gpus < 8:
        raise errors.bad_request([("spec.gpu_cluster", f"preset {resources.preset} does not allow GPU clustering")])
    if fabrics.platform(world, fabric) != resources.platform:
        raise errors.bad_request([("spec.gpu_cluster", f"fabric {fabric} of GPU cluster {cluster_id} does not serve "
                                                       f"platform {resources.platform}")])


def _check_policy(world: World, project: Project, policy_id: str, platform: str) -> None:
    found = stored.find(world, "pricing_policy", policy_id)
    if found is None:
        return  # not made here: see the module
    if found.parent_id != project.id:
        raise errors.not_found(policy_id, "pricing policy")
    pricing = billing_v1.PricingPolicySpec.from_dict(found.spec).compute_instance_spec
    policy_platform = pricing.v1.platform if pricing is not None and pricing.v1 is not None else ""
    if policy_platform != platform:
        raise errors.bad_request([("spec.spot_pricing_policy.id",
                                   f"pricing policy {policy_id} is for platform {policy_platform}")])
