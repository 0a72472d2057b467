"""GPU clusters for `--placement cluster` fleets: the Nebius placement group (`SupportsPlacementGroups`).

An 8-GPU instance (the presets with `allow_gpu_clustering`) joins a GPU cluster through `InstanceSpec.gpu_cluster`;
a cluster is an InfiniBand fabric, and each fabric serves one platform in one region
(docs.nebius.com/compute/clusters/gpu#fabrics; SkyPilot and gpuhunt keep the same table, `FABRICS`). A cluster
fleet's VMs in a place join the one cluster carrying the fleet's identity labels there (made on first need, named
after the fleet's id), and the fleet's destroy deletes the clusters carrying them: never a cluster without them.
A place whose platform has no fabric in its region, or a preset of fewer GPUs, needs no cluster.

Every call blocks, with a deadline (`WAIT`); errors are vm_core errors. Importing this module imports neither
nebius_sdk nor grpc.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ._nebius_map import ErrorContext, translated

if TYPE_CHECKING:
    from nebius_sdk import NebiusClient
    from nebius_sdk.models import GpuCluster

CLUSTER_GPUS = 8  # Preset.allow_gpu_clustering: the 8-GPU presets
WAIT = 600.0  # seconds a cluster create or delete may take

# (platform, region) -> its fabrics, in the documented order (the first is used)
FABRICS: dict[tuple[str, str], tuple[str, ...]] = {
    ("gpu-h100-sxm", "eu-north1"): ("fabric-2", "fabric-3", "fabric-4", "fabric-6"),
    ("gpu-h200-sxm", "eu-west1"): ("fabric-5",),
    ("gpu-h200-sxm", "eu-north1"): ("fabric-7",),
    ("gpu-h200-sxm", "eu-north2"): ("eu-north2-a",),
    ("gpu-b200-sxm-a", "me-west1"): ("me-west1-a",),
    ("gpu-b300-sxm", "uk-south1"): ("uk-south1-a",),
    ("gpu-h200-sxm", "us-central1"): ("us-central1-a",),
    ("gpu-b200-sxm", "us-central1"): ("us-central1-b",),
}


def fabric_for(platform: str, region: str, gpus: int) -> str | None:
    """The fabric a cluster of `platform` VMs of `gpus` GPUs uses in `region`; None when they need none."""
    fabrics = FABRICS.get((platform, region), ())
    return fabrics[0] if fabrics and gpus >= CLUSTER_GPUS else None


def carries(cluster: GpuCluster, labels: Mapping[str, str]) -> bool:
    """Whether `cluster` carries every one of the fleet's identity `labels`."""
    found = cluster.metadata.labels if cluster.metadata is not None else {}
    return bool(labels) and all(found.get(key) == value for key, value in labels.items())


def cluster_name(labels: Mapping[str, str], platform: str) -> str:
    """A name unique to the fleet (its identity labels) and platform: names are unique per project."""
    digest = hashlib.sha256(repr(sorted(labels.items())).encode()).hexdigest()[:12]
    return f"vm-cluster-{digest}-{platform}"


def ensure(client: NebiusClient, project: str, region: str, labels: Mapping[str, str], platform: str,
           fabric: str) -> str:
    """The id of the fleet's cluster on `fabric` in `project`: the one carrying `labels`, else a new one."""
    with translated(ErrorContext(region=region, project=project)):
        for cluster in client.list_gpu_clusters(project):
            if carries(cluster, labels) and cluster.spec is not None and cluster.spec.infiniband_fabric == fabric:
                return cluster.metadata.id if cluster.metadata is not None else ""
        made = client.begin_create_gpu_cluster(cluster_name(labels, platform), fabric, parent_id=project,
                                               labels=labels).result(timeout=WAIT)
    return made.metadata.id if made.metadata is not None else ""


def delete_all(client: NebiusClient, projects: Mapping[str, str], labels: Mapping[str, str]) -> list[str]:
    """Delete the clusters carrying `labels` in every project (region -> project); the ids deleted."""
    deleted = []
    for region, project in projects.items():
        with translated(ErrorContext(region=region, project=project)):
            ids = [c.metadata.id for c in client.list_gpu_clusters(project) if c.metadata and carries(c, labels)]
            for cluster_id in ids:
                client.begin_delete_gpu_cluster(cluster_id).wait(WAIT)
        deleted += ids
    return deleted
