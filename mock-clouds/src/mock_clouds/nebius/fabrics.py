"""InfiniBand fabrics: the GPU clusters' `spec.infiniband_fabric`, each serving one platform in one region.

The table is Nebius's (docs.nebius.com/compute/clusters/gpu#fabrics), as gpuhunt keeps it
(`gpuhunt/providers/nebius.py` `INFINIBAND_FABRICS`) and SkyPilot (`sky/provision/nebius/constants.py`). A
scenario may replace it with `[nebius.extra] infiniband_fabrics = [{name, platform, region}, ...]`.
"""

from __future__ import annotations

import msgspec

from ..core.models import Provider
from ..core.world import World
from ._pb.nebius.compute import v1 as compute
from .stored import Stored

NEBIUS = Provider.NEBIUS


class Fabric(msgspec.Struct, kw_only=True, frozen=True):
    name: str
    platform: str
    region: str


DOCUMENTED = (
    Fabric(name="fabric-2", platform="gpu-h100-sxm", region="eu-north1"),
    Fabric(name="fabric-3", platform="gpu-h100-sxm", region="eu-north1"),
    Fabric(name="fabric-4", platform="gpu-h100-sxm", region="eu-north1"),
    Fabric(name="fabric-5", platform="gpu-h200-sxm", region="eu-west1"),
    Fabric(name="fabric-6", platform="gpu-h100-sxm", region="eu-north1"),
    Fabric(name="fabric-7", platform="gpu-h200-sxm", region="eu-north1"),
    Fabric(name="eu-north2-a", platform="gpu-h200-sxm", region="eu-north2"),
    Fabric(name="me-west1-a", platform="gpu-b200-sxm-a", region="me-west1"),
    Fabric(name="uk-south1-a", platform="gpu-b300-sxm", region="uk-south1"),
    Fabric(name="us-central1-a", platform="gpu-h200-sxm", region="us-central1"),
    Fabric(name="us-central1-b", platform="gpu-b200-sxm", region="us-central1"),
)


def all_fabrics(world: World) -> tuple[Fabric, ...]:
    raw = world.config(NEBIUS).extra.get("infiniband_fabrics")
    return DOCUMENTED if raw is None else tuple(msgspec.convert(raw, list[Fabric]))


def find(world: World, name: str) -> Fabric | None:
    return next((f for f in all_fabrics(world) if f.name == name), None)


def platform(world: World, name: str) -> str:
    """The platform fabric `name` serves ("" for an unknown fabric)."""
    found = find(world, name)
    return found.platform if found is not None else ""


def of(cluster: Stored) -> str:
    """The fabric of a stored GPU cluster."""
    return compute.GpuClusterSpec.from_dict(cluster.spec).infiniband_fabric
