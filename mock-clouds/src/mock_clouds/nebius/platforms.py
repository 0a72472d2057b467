"""`nebius.compute.v1.PlatformService` (GetByName, List): platforms and presets of the project's region, or of the
region whose public-images parent `parent_id` names (`images.scope_region`)."""

from __future__ import annotations

from . import catalog, errors, images, paging, render
from ._pb.nebius.common import v1 as common
from ._pb.nebius.compute import v1 as compute
from .call import Call


def get_by_name(call: Call, request: common.GetByNameRequest) -> compute.Platform:
    with call.world.read() as world:
        region = images.scope_region(world, call.owner, request.parent_id, "parent_id")
        if not request.name:
            raise errors.bad_request([("name", "name is required")])
        shapes = catalog.platforms(world, region).get(request.name)
        if shapes is None:
            raise errors.not_found(request.name, "platform")
        return render.platform(request.parent_id, request.name, shapes)


def list_platforms(call: Call, request: compute.ListPlatformsRequest) -> compute.ListPlatformsResponse:
    with call.world.read() as world:
        region = images.scope_region(world, call.owner, request.parent_id, "parent_id")
        names = list(catalog.platforms(world, region).items())
        chosen, token = paging.page(names, lambda item: (0.0, item[0]), request.page_size, request.page_token)
        items = [render.platform(request.parent_id, name, shapes) for name, shapes in chosen]
        return compute.ListPlatformsResponse(items=items, next_page_token=token)
