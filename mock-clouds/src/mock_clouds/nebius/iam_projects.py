"""`nebius.iam.v1.ProjectService` (Get, GetByName, List): the tenant's projects as IAM `Container`s.

On the real cloud this service is `cpl.iam.api.nebius.cloud:443` (`api_service_name` "cpl.iam" in
`nebius/iam/v1/project_service.proto`); the mock serves it on its one port. A project is the scenario's
`[[nebius.projects]]` record rendered as `Container{metadata{id project-..., parent_id tenant-..., name},
spec{region}, status{container_state ACTIVE, suspension_state NONE, region}}` (`nebius/iam/v1/container.proto`):
`status.region` is what dstack and SkyPilot read to map regions to projects.

A caller sees only its own tenant, as `auth` rules it for projects: listing or reading by name under another
tenant, or reading a project that is unknown or another tenant's, is PERMISSION_DENIED (the API is no oracle
for other tenants' ids). List pages as the other lists do; its default page size is 10, the comment of
`ListProjectsRequest.page_size`. `filter` has no documented syntax, so the mock refuses a non-empty one
(INVALID_ARGUMENT) rather than ignore it (mock extension).
"""

from __future__ import annotations

from ..core.models import Project, Provider
from ..core.world import World
from . import errors, paging
from ._pb.nebius.common import v1 as common
from ._pb.nebius.iam import v1 as iam
from .call import Call

NEBIUS = Provider.NEBIUS
SERVICE = errors.IAM_SERVICE  # ServiceError.service of these errors
DEFAULT_PAGE_SIZE = 10  # ListProjectsRequest.page_size: "Default value: 10"


def get(call: Call, request: iam.GetProjectRequest) -> iam.Container:
    if not request.id:
        raise errors.bad_request([("id", "id is required")], service=SERVICE)
    with call.world.read() as world:
        return container(_own(world, call.owner, request.id))


def get_by_name(call: Call, request: iam.GetProjectByNameRequest) -> iam.Container:
    with call.world.read() as world:
        _tenant(call.owner, request.parent_id)
        if not request.name:
            raise errors.bad_request([("name", "name is required")], service=SERVICE)
        found = next((p for p in projects_of(world, call.owner) if p.name == request.name), None)
        if found is None:
            raise _iam(errors.not_found(request.name, "project"))
        return container(found)


def list_projects(call: Call, request: iam.ListProjectsRequest) -> iam.ListProjectsResponse:
    if request.filter:
        raise errors.bad_request([("filter", "filters are not supported by the mock")], service=SERVICE)
    with call.world.read() as world:
        _tenant(call.owner, request.parent_id)
        chosen, token = paging.page(projects_of(world, call.owner), lambda p: (0.0, p.id),
                                    request.page_size or DEFAULT_PAGE_SIZE, request.page_token)
        return iam.ListProjectsResponse(items=[container(p) for p in chosen], next_page_token=token)


def projects_of(world: World, tenant: str) -> list[Project]:
    """The tenant's projects, sorted by id (the order List pages them in)."""
    return sorted((p for p in world.config(NEBIUS).projects if p.owner == tenant), key=lambda p: p.id)


def container(project: Project) -> iam.Container:
    """The IAM Container of a project: its tenant is the parent, its region in spec and status."""
    return iam.Container(
        metadata=common.ResourceMetadata(id=project.id, parent_id=project.owner, name=project.name,
                                         resource_version=1),
        spec=iam.ContainerSpec(region=project.region),
        status=iam.ContainerStatus(suspension_state=iam.SuspensionState.NONE,
                                   container_state=iam.State.ACTIVE, region=project.region),
    )


def _own(world: World, tenant: str, project_id: str) -> Project:
    found = world.project(NEBIUS, project_id)
    if found is None or found.owner != tenant:
        raise _iam(errors.permission_denied(project_id))
    return found


def _tenant(owner: str, parent_id: str) -> None:
    """The request's `parent_id` must be the caller's own tenant."""
    if not parent_id:
        raise errors.bad_request([("parent_id", "parent_id is required")], service=SERVICE)
    if parent_id != owner:
        raise _iam(errors.permission_denied(parent_id))


def _iam(error: errors.ApiError) -> errors.ApiError:
    """`error` as this service reports it (`ServiceError.service`)."""
    if error.error is not None:
        error.error.service = SERVICE
    return error
