"""The boot image of a Nebius VM: an image family per platform, resolved through ImageService.

Nebius keeps its public images under one parent per region (`project-{routing code}public-images`); a family
(`ubuntu22.04-cuda12`) has versions, and `ImageService.GetLatestByFamily` answers the newest. vm boots, per
platform (as dstack and SkyPilot choose; Blackwell needs a driver of CUDA 12.8 or newer):

| platform | family |
|---|---|
| gpu-b200-sxm, gpu-b200-sxm-a, gpu-b300-sxm | ubuntu24.04-cuda12.8 |
| gpu-h100-sxm, gpu-h200-sxm, gpu-l40s-a, gpu-l40s-d | ubuntu22.04-cuda12 |
| any other GPU platform | ubuntu24.04-cuda12.8 |
| cpu-* | ubuntu22.04-driverless |

`--image` takes a family (its latest image in the VM's region) or an image id (`computeimage-...`, which must be
one of that region's); an image whose `unsupported_platforms` names the platform is refused. The boot disk is
DEFAULT_DISK_GIB, or `--disk-size`, and at least the image's `min_disk_size_bytes`.
"""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
from ..hints import Command, Hint
from ..machine import ImageInfo
from ._nebius_map import NAME

DEFAULT_DISK_GIB = 100
GIB = 1 << 30
MAX_USER_DATA = 32768  # InstanceSpec.cloud_init_user_data: max_len 32768 (research nebius.md)
BLACKWELL_FAMILY = "ubuntu24.04-cuda12.8"
HOPPER_FAMILY = "ubuntu22.04-cuda12"
CPU_FAMILY = "ubuntu22.04-driverless"
FAMILIES = {
    "gpu-b200-sxm": BLACKWELL_FAMILY,
    "gpu-b200-sxm-a": BLACKWELL_FAMILY,
    "gpu-b300-sxm": BLACKWELL_FAMILY,
    "gpu-h100-sxm": HOPPER_FAMILY,
    "gpu-h200-sxm": HOPPER_FAMILY,
    "gpu-l40s-a": HOPPER_FAMILY,
    "gpu-l40s-d": HOPPER_FAMILY,
}


def default_family(platform: str) -> str:
    if platform.startswith("cpu-"):
        return CPU_FAMILY
    return FAMILIES.get(platform, BLACKWELL_FAMILY)


def public_parent(project_id: str) -> str:
    return f"project-{project_id.removeprefix('project-')[:3]}public-images"


def is_image_id(value: str) -> bool:
    return value.startswith("computeimage-")


def min_disk_gib(image: Any) -> int:
    size = image.status.min_disk_size_bytes if image.status is not None else 0
    return -(-size // GIB)


def unsupported(image: Any, platform: str) -> str:
    """Why `image` cannot boot `platform` ("" when it can)."""
    reasons = image.spec.unsupported_platforms if image.spec is not None else {}
    return str(reasons.get(platform, "")) if platform else ""


def latest_per_family(images: list[Any]) -> list[Any]:
    """The newest image of each family (by creation time), sorted by family."""
    newest: dict[str, Any] = {}
    for image in images:
        family = image.spec.image_family if image.spec is not None else ""
        stamp = image.metadata.created_at if image.metadata is not None else None
        have = newest.get(family)
        have_stamp = have.metadata.created_at if have is not None and have.metadata is not None else None
        if have is None or (stamp is not None and (have_stamp is None or stamp > have_stamp)):
            newest[family] = image
    return [newest[f] for f in sorted(newest)]


def info(image: Any, region: str, default_family_name: str) -> ImageInfo:
    family = image.spec.image_family if image.spec is not None else ""
    return ImageInfo(NAME, family, image.spec.description if image.spec is not None else "", (region,),
                     family == default_family_name, image.metadata.id if image.metadata is not None else "",
                     min_disk_gib(image))


def check_disk(image: Any, disk_gib: int | None, platform: str, wanted: str) -> int:
    """The boot disk size for `image` (UsageError when the image cannot boot `platform` or `disk_gib` is below
    its minimum)."""
    why = unsupported(image, platform)
    if why:
        family = image.spec.image_family if image.spec is not None else wanted
        named = wanted if family == wanted else f"{wanted} ({family})"
        raise UsageError(f"Nebius image {named} does not boot {platform}: {why}", provider=NAME,
                         suggestion=Hint.say(f"leave out --image (vm boots {default_family(platform)} there), or "
                                             "see {}", Command.of("images", "--provider", NAME)))
    least = min_disk_gib(image)
    if disk_gib is not None and disk_gib < least:
        raise UsageError(f"--disk-size {disk_gib}: Nebius image {wanted} needs a boot disk of at least {least} GiB",
                         provider=NAME, suggestion=f"--disk-size {least} or more")
    return disk_gib if disk_gib is not None else max(DEFAULT_DISK_GIB, least)
