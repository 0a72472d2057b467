"""`GET /compute/images` and `GET /compute/images/{image_id}`: the public images VMs boot from.

Items are `{"id", "name", "description", "tags", "created_at", "locations"}` (swagger v1alpha5, research
crusoe.md); a create names one as `"<name>:<tag>"` (`ubuntu22.04-nvidia-sxm-docker:latest`). The scenario's
`[crusoe.extra] images` lists the `name:tag` strings (default `PUBLIC`); each name is one image, offered in every
location. `product_group` (e.g. `h100`) is accepted and, in the mock, narrows nothing: every image boots every type.
"""

from __future__ import annotations

import uuid
from typing import cast

from ..core.models import Provider
from ..core.world import World
from ..http import Response
from .access import Call
from .errors import not_found

CRUSOE = Provider.CRUSOE
DEFAULT_IMAGE = "ubuntu22.04:latest"
_NAMESPACE = uuid.UUID("0b7f3c1e-55a2-4d8e-9c61-696d61676573")
_CREATED_AT = "2025-06-01T00:00:00Z"
_DESCRIPTIONS = {
    "nvidia-sxm-docker": "Ubuntu with NVIDIA drivers, CUDA, Fabric Manager and Docker, for SXM GPUs",
    "nvidia-pcie-docker": "Ubuntu with NVIDIA drivers, CUDA and Docker, for PCIe GPUs",
    "rocm": "Ubuntu with AMD ROCm",
}


# Public images seen in Crusoe's Terraform docs and dstack (research crusoe.md): what a scenario without its own
# `images` list offers.
PUBLIC = [DEFAULT_IMAGE, "ubuntu22.04-nvidia-sxm-docker:latest", "ubuntu22.04-nvidia-pcie-docker:latest",
          "ubuntu20.04:latest"]


def names(world: World) -> list[str]:
    """Every `name:tag` a create may send (the scenario's list, else PUBLIC)."""
    return cast("list[str]", world.config(CRUSOE).extra.get("images", PUBLIC))


def _items(world: World) -> list[dict[str, object]]:
    by_name: dict[str, list[str]] = {}
    for entry in names(world):
        name, _, tag = entry.partition(":")
        by_name.setdefault(name, []).append(tag or "latest")
    regions = list(world.config(CRUSOE).regions)
    return [
        {
            "id": str(uuid.uuid5(_NAMESPACE, name)),
            "name": name,
            "description": next((d for k, d in _DESCRIPTIONS.items() if k in name), "Ubuntu"),
            "tags": tags,
            "created_at": _CREATED_AT,
            "locations": regions,
        }
        for name, tags in by_name.items()
    ]


def list_images(call: Call) -> Response:
    """`GET /compute/images[?product_group=...]` -> `{"items": [Image]}`."""
    return Response(200, {"items": _items(call.world)})


def get_image(call: Call) -> Response:
    image_id = call.params["image_id"]
    found = next((i for i in _items(call.world) if i["id"] == image_id), None)
    if found is None:
        raise not_found(f"image {image_id} not found")
    return Response(200, found)
