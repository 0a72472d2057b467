"""`nebius.iam.v1.TenantService` (Get, List): the caller's tenant as an IAM `Container`.

On the real cloud this service is `cpl.iam.api.nebius.cloud:443` (`api_service_name` "cpl.iam" in
`nebius/iam/v1/tenant_service.proto`); the mock serves it on its one port. gpuhunt's `get_sample_projects`
(`gpuhunt/providers/nebius.py`) and dstack's `list_tenant_projects` list the tenants, expect exactly one, and list
its projects (`ProjectService.List(parent_id=tenant)`). A token belongs to one tenant, so List answers that one
tenant; Get of another tenant (or an unknown id) is PERMISSION_DENIED, as for projects. A tenant has no region, and
its name is its id (mock extension: the mock has no tenant names). `filter` has no documented syntax, so a
non-empty one is refused (INVALID_ARGUMENT), as ProjectService.List does.
"""

from __future__ import annotations

from . import errors, paging
from ._pb.nebius.common import v1 as common
from ._pb.nebius.iam import v1 as iam
from .call import Call
from .iam_projects import SERVICE


def get(call: Call, request: iam.GetTenantRequest) -> iam.Container:
    if not request.id:
        raise errors.bad_request([("id", "id is required")], service=SERVICE)
    if request.id != call.owner:
        error = errors.permission_denied(request.id)
        if error.error is not None:
            error.error.service = SERVICE
        raise error
    return tenant(call.owner)


def list_tenants(call: Call, request: iam.ListTenantsRequest) -> iam.ListTenantsResponse:
    if request.filter:
        raise errors.bad_request([("filter", "filters are not supported by the mock")], service=SERVICE)
    chosen, token = paging.page([call.owner], lambda t: (0.0, t), request.page_size, request.page_token)
    return iam.ListTenantsResponse(items=[tenant(t) for t in chosen], next_page_token=token)


def tenant(tenant_id: str) -> iam.Container:
    return iam.Container(
        metadata=common.ResourceMetadata(id=tenant_id, name=tenant_id, resource_version=1),
        status=iam.ContainerStatus(suspension_state=iam.SuspensionState.NONE, container_state=iam.State.ACTIVE),
    )
