"""`nebius.compute.v1.ImageService` (Get, GetByName, GetLatestByFamily, List, ListPublic): the public boot images.

Nebius keeps its public images under one parent per region, `project-{routing code}public-images` (e.g.
`project-e00public-images` for eu-north1: SkyPilot's `fetch_nebius.py`, research nebius.md); an image family
(`ubuntu22.04-cuda12`) has versions, and `GetLatestByFamily` answers the newest READY one. Each image says which
platforms it is recommended for and which it does not support (`ImageSpec.recommended_platforms`,
`unsupported_platforms`), and the smallest disk made from it (`ImageStatus.min_disk_size_bytes`).

The mock's public catalog is `PUBLIC` (the families dstack and SkyPilot boot, with the CUDA 12.8+ families that
Blackwell platforms need), offered in every region of the scenario. A project holds no images of its own: `List`
of a project the caller owns is empty. Any caller may read the public images; an empty `parent_id` of
`GetLatestByFamily` means the public images of the first region (the real endpoint's own region, mock choice).
"""

from __future__ import annotations

import datetime
import hashlib
from dataclasses import dataclass

from ..core.models import Provider
from ..core.world import World
from . import auth, errors, paging
from ._pb.nebius.common import v1 as common
from ._pb.nebius.compute import v1 as compute
from .call import Call

NEBIUS = Provider.NEBIUS
GIB = 1 << 30
_BLACKWELL = ("gpu-b200-sxm", "gpu-b200-sxm-a", "gpu-b300-sxm")
_HOPPER_ADA = ("gpu-h100-sxm", "gpu-h200-sxm", "gpu-l40s-a", "gpu-l40s-d")
_OLD_DRIVER = "the driver of this image does not support Blackwell GPUs: use a CUDA 12.8 or newer family"


@dataclass(frozen=True)
class PublicImage:
    family: str
    version: str
    human: str
    cuda: str  # label cuda_toolkit; "" for an image without GPU drivers
    driver: str  # label nvidia_gpu_drivers
    min_disk_gib: int
    recommended: tuple[str, ...] = ()
    unsupported: tuple[str, ...] = ()
    created: int = 1_740_000_000  # epoch seconds; a newer version of a family has a later one


PUBLIC: tuple[PublicImage, ...] = (
    PublicImage("ubuntu22.04-cuda12", "20250210", "Ubuntu 22.04 LTS for NVIDIA GPUs (CUDA 12)", "12.4", "550",
                50, _HOPPER_ADA, _BLACKWELL, 1_739_000_000),
    PublicImage("ubuntu22.04-cuda12", "20250612", "Ubuntu 22.04 LTS for NVIDIA GPUs (CUDA 12)", "12.4", "550",
                50, _HOPPER_ADA, _BLACKWELL, 1_749_700_000),
    PublicImage("ubuntu24.04-cuda12.8", "20250701", "Ubuntu 24.04 LTS for NVIDIA GPUs (CUDA 12.8)", "12.8",
                "570", 50, _HOPPER_ADA + _BLACKWELL, (), 1_751_300_000),
    PublicImage("ubuntu24.04-cuda13.0", "20251015", "Ubuntu 24.04 LTS for NVIDIA GPUs (CUDA 13.0)", "13.0",
                "580", 50, _BLACKWELL, (), 1_760_500_000),
    PublicImage("ubuntu22.04-driverless", "20250612", "Ubuntu 22.04 LTS", "", "", 8, (), (), 1_749_700_000),
    PublicImage("ubuntu24.04-driverless", "20250701", "Ubuntu 24.04 LTS", "", "", 8, (), (), 1_751_300_000),
)


def routing_code(world: World, region: str) -> str:
    """The routing code of `region`: that of its projects' ids (`project-e00...` -> `e00`), else `e00`."""
    for project in world.config(NEBIUS).projects:
        if project.region == region:
            return project.id.removeprefix("project-")[:3]
    return "e00"


def public_parent(world: World, region: str) -> str:
    return f"project-{routing_code(world, region)}public-images"


def _region_of_parent(world: World, parent_id: str) -> str | None:
    return next((r for r in world.config(NEBIUS).regions if public_parent(world, r) == parent_id), None)


def image_id(world: World, region: str, image: PublicImage) -> str:
    digest = hashlib.sha256(f"{region}/{image.family}/{image.version}".encode()).digest()
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
    return f"computeimage-{routing_code(world, region)}" + "".join(alphabet[b % 36] for b in digest[:15])


def render(world: World, region: str, image: PublicImage) -> compute.Image:
    labels = {"os_name": "Ubuntu", "os_version": image.family[6:11] + " LTS"}
    if image.cuda:
        labels |= {"cuda_toolkit": image.cuda, "nvidia_gpu_drivers": image.driver}
    created = datetime.datetime.fromtimestamp(image.created, tz=datetime.UTC)
    return compute.Image(
        metadata=common.ResourceMetadata(
            id=image_id(world, region, image), parent_id=public_parent(world, region),
            name=f"{image.family}-{image.version}", resource_version=1, created_at=created, updated_at=created,
            labels=labels,
        ),
        spec=compute.ImageSpec(
            description=image.human, image_family=image.family, version=image.version,
            source_disk_id=f"computedisk-{routing_code(world, region)}publicsource0",
            cpu_architecture=compute.ImageSpecCpuArchitecture.AMD64,
            image_family_human_readable=image.human, recommended_platforms=list(image.recommended),
            unsupported_platforms={p: _OLD_DRIVER for p in image.unsupported},
        ),
        status=compute.ImageStatus(
            state=compute.ImageStatusState.READY, storage_size_bytes=image.min_disk_gib * GIB // 2,
            min_disk_size_bytes=image.min_disk_gib * GIB,
        ),
    )


def in_region(world: World, region: str) -> list[tuple[str, PublicImage]]:
    """(id, image) of every public image of `region`, sorted by id."""
    return sorted(((image_id(world, region, i), i) for i in PUBLIC), key=lambda pair: pair[0])


def latest(region_images: list[tuple[str, PublicImage]], family: str) -> PublicImage | None:
    versions = [i for _, i in region_images if i.family == family]
    return max(versions, key=lambda i: i.created) if versions else None


def find(world: World, wanted_id: str) -> tuple[str, PublicImage] | None:
    """(region, image) of the public image `wanted_id`."""
    for region in world.config(NEBIUS).regions:
        for found_id, image in in_region(world, region):
            if found_id == wanted_id:
                return region, image
    return None


def scope_region(world: World, owner: str, parent_id: str, field: str) -> str:
    """The region of `parent_id`: that of a project of the caller's, or the region whose public-images parent
    (`project-{code}public-images`) it is. Any caller may read the platforms and prices of a public parent:
    SkyPilot's catalog fetcher lists PlatformService and prices presets with billing EstimateBatch under it
    (`sky/catalog/data_fetchers/fetch_nebius.py` `PARENT_ID_TEMPLATE`, `fetch_platforms_for_project`), run
    against the live API with ordinary credentials (SkyPilot PR #9829). PERMISSION_DENIED for another tenant's
    project or an unknown id; INVALID_ARGUMENT when `parent_id` is empty."""
    region = _region_of_parent(world, parent_id) if parent_id else None
    return region if region is not None else auth.project(world, owner, parent_id, field).region


def _parent_region(world: World, owner: str, parent_id: str) -> str | None:
    """The region whose public images `parent_id` names; None for a project of the caller's (no images)."""
    region = _region_of_parent(world, parent_id)
    if region is None:
        auth.project(world, owner, parent_id, "parent_id")  # PERMISSION_DENIED for others' and unknown ids
    return region


def get(call: Call, request: compute.GetImageRequest) -> compute.Image:
    if not request.id:
        raise errors.bad_request([("id", "id is required")])
    with call.world.read() as world:
        found = find(world, request.id)
        if found is None:
            raise errors.not_found(request.id, "image")
        return render(world, *found)


def get_by_name(call: Call, request: common.GetByNameRequest) -> compute.Image:
    with call.world.read() as world:
        if not request.parent_id:
            raise errors.bad_request([("parent_id", "parent_id is required")])
        region = _parent_region(world, call.owner, request.parent_id)
        if region is not None:
            for _, image in in_region(world, region):
                if f"{image.family}-{image.version}" == request.name:
                    return render(world, region, image)
        raise errors.not_found(request.name, "image")


def get_latest_by_family(call: Call, request: compute.GetImageLatestByFamilyRequest) -> compute.Image:
    if not request.image_family:
        raise errors.bad_request([("image_family", "image_family is required")])
    with call.world.read() as world:
        if request.parent_id:
            region = _parent_region(world, call.owner, request.parent_id)
        else:
            region = next(iter(world.config(NEBIUS).regions), None)
        found = latest(in_region(world, region), request.image_family) if region is not None else None
        if found is None or region is None:
            raise errors.not_found(request.image_family, "image family")
        return render(world, region, found)


def list_images(call: Call, request: compute.ListImagesRequest) -> compute.ListImagesResponse:
    if not request.parent_id:
        raise errors.bad_request([("parent_id", "parent_id is required")])
    with call.world.read() as world:
        region = _parent_region(world, call.owner, request.parent_id)
        return _page(world, region, request.page_size, request.page_token)


def list_public(call: Call, request: compute.ListPublicRequest) -> compute.ListImagesResponse:
    if not request.region:
        raise errors.bad_request([("region", "region is required")])
    with call.world.read() as world:
        if request.region not in world.config(NEBIUS).regions:
            raise errors.bad_request([("region", f"unknown region {request.region!r}")])
        return _page(world, request.region, request.page_size, request.page_token)


def _page(world: World, region: str | None, page_size: int, page_token: str) -> compute.ListImagesResponse:
    items = in_region(world, region) if region is not None else []
    chosen, token = paging.page(items, lambda pair: (0.0, pair[0]), page_size, page_token)
    assert region is not None or not chosen
    return compute.ListImagesResponse(
        items=[render(world, region, image) for _, image in chosen] if region else [], next_page_token=token
    )


def boot_disk(world: World, region: str, spec: compute.InstanceSpec) -> list[tuple[str, str]]:
    """Violations of the boot disk's source and size: the image (id, or family under the public images of the
    project's region) exists there, and the disk is at least the image's minimum size."""
    disk = spec.boot_disk.managed_disk if spec.boot_disk is not None else None
    if disk is None or disk.spec is None:
        return []
    path = "spec.boot_disk.managed_disk.spec"
    region_images = in_region(world, region)
    image: PublicImage | None = None
    if disk.spec.source_image_id:
        image = next((i for found_id, i in region_images if found_id == disk.spec.source_image_id), None)
        if image is None:
            return [(f"{path}.source_image_id", f"image {disk.spec.source_image_id} not found in {region}")]
    elif disk.spec.source_image_family is not None:
        family = disk.spec.source_image_family
        parent = family.parent_id or public_parent(world, region)
        image = latest(region_images, family.image_family) if parent == public_parent(world, region) else None
        if image is None:
            return [(f"{path}.source_image_family.image_family",
                     f"image family {family.image_family!r} not found under {parent}")]
    size = _size_bytes(disk.spec)
    if image is not None and size is not None and size < image.min_disk_gib * GIB:
        return [(f"{path}.size", f"the disk must be at least {image.min_disk_gib} GiB for image "
                 f"{image.family} ({size // GIB} GiB asked)")]
    return []


def _size_bytes(spec: compute.DiskSpec) -> int | None:
    for value, unit in ((spec.size_bytes, 1), (spec.size_kibibytes, 1 << 10), (spec.size_mebibytes, 1 << 20),
                        (spec.size_gibibytes, GIB)):
        if value is not None:
            return value * unit
    return None
