"""Platforms and presets, derived from the scenario shapes whose key is "<platform>/<preset>".

A region offers a shape when the scenario gives it on-demand capacity there (even zero) or a capacity block
group of the shape's platform lives there.
"""

from __future__ import annotations

from ..core.models import Provider, Shape
from ..core.world import World, region_matches

NEBIUS = Provider.NEBIUS


def shape_key(platform: str, preset: str) -> str:
    return f"{platform}/{preset}"


def split_key(key: str) -> tuple[str, str]:
    platform, _, preset = key.partition("/")
    return platform, preset


def offered(world: World, region: str, shape: Shape) -> bool:
    config = world.config(NEBIUS)
    if any(c.region == region and c.shape == shape.key for c in config.capacity):
        return True
    return any(r.family == shape.family and region_matches(region, r.regions) for r in config.reservations)


def platforms(world: World, region: str) -> dict[str, list[Shape]]:
    """Platform name -> its presets offered in `region`, both sorted by name."""
    found: dict[str, list[Shape]] = {}
    for shape in world.config(NEBIUS).shapes:
        if offered(world, region, shape):
            found.setdefault(split_key(shape.key)[0], []).append(shape)
    return {name: sorted(found[name], key=lambda s: s.key) for name in sorted(found)}


# Memory of one GPU in GB (10^9 bytes), by the GPU part of the platform name (`gpu-<gpu>-...`). gpuhunt keeps a
# platform's GPUs only when `PlatformSpec.gpu_memory_gigabytes` equals its own table (`providers/nebius.py:168-179`;
# H100 80, H200 141, B200 180, L40S 48, RTXPRO6000 96, which its live-catalog integrity tests find). B300: 288, the
# GPU's published size (gpuhunt's table says 270 and its live tests do not check B300: an inference).
_GPU_MEMORY_GB = {"h100": 80, "h200": 141, "b200": 180, "b300": 288, "l40s": 48, "rtx6000": 96}


def gpu_memory_gigabytes(platform: str) -> int:
    """The memory of one GPU of `platform` in GB; 0 for a CPU platform (and a GPU this table does not know)."""
    parts = platform.split("-")
    return _GPU_MEMORY_GB.get(parts[1], 0) if parts[0] == "gpu" and len(parts) > 1 else 0


def quota_name(platform: str) -> str:
    """`compute.instance.gpu.h100` for gpu-h100-sxm; CPU platforms count vCPUs (research §6 quota names)."""
    parts = platform.split("-")
    if parts[0] == "gpu" and len(parts) > 1:
        return f"compute.instance.gpu.{parts[1]}"
    return "compute.instance.non-gpu.vcpu"
