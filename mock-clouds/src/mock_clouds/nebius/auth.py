"""Who is calling and what they may touch.

Every call carries `authorization: Bearer <IAM token>` (research §7). Two kinds of token are accepted: the
tenant's static credential (`endpoints.json` `nebius.token`, the mock's fixed credential, which never expires;
it stands for a token from `nebius iam get-access-token`), and an access token the token exchange issued to one
of the tenant's service accounts, until it expires (`tokens.py`). A token belongs to a tenant; a tenant
may use only its own projects. A project that is unknown *or* belongs to another tenant answers
PERMISSION_DENIED: Nebius authorizes every call against the IAM hierarchy of the parent before resolving it,
and answering the two cases alike means the API is no oracle for other tenants' project ids. Resources
addressed by id (instances, operations) answer NOT_FOUND when unknown and PERMISSION_DENIED when they live in
another tenant's project.
"""

from __future__ import annotations

from ..core.models import VM, Operation, Project, Provider
from ..core.world import World
from . import errors

NEBIUS = Provider.NEBIUS
_BEARER = "bearer "


def authenticate(world: World, metadata: dict[str, str]) -> str:
    """The tenant id the call's bearer token belongs to; raises ApiError(UNAUTHENTICATED)."""
    header = metadata.get("authorization", "")
    if not header:
        raise errors.unauthenticated("missing authorization metadata")
    if not header.lower().startswith(_BEARER) or not header[len(_BEARER) :].strip():
        raise errors.unauthenticated("authorization metadata must be 'Bearer <token>'")
    token = header[len(_BEARER) :].strip()
    owner = world.owner_of(NEBIUS, token) or world.token_owner(token)
    if owner is None:
        raise errors.unauthenticated("invalid or expired access token")
    return owner


def project(world: World, owner: str, project_id: str, field: str) -> Project:
    """The caller's project `project_id`; `field` names the request field for a missing value."""
    if not project_id:
        raise errors.bad_request([(field, "parent_id is required")])
    found = world.project(NEBIUS, project_id)
    if found is None or found.owner != owner:
        raise errors.permission_denied(project_id)
    return found


def owns_scope(world: World, owner: str, scope: str) -> bool:
    found = world.project(NEBIUS, scope)
    return found is not None and found.owner == owner


def instance(world: World, owner: str, instance_id: str, field: str = "id") -> VM:
    """The caller's live instance `instance_id` (NOT_FOUND when unknown or deleted)."""
    if not instance_id:
        raise errors.bad_request([(field, "id is required")])
    vm = world.vm(NEBIUS, instance_id)
    if vm is None:
        raise errors.not_found(instance_id, "instance")
    if not owns_scope(world, owner, vm.scope):
        raise errors.permission_denied(instance_id)
    return vm


def operation(world: World, owner: str, operation_id: str) -> Operation:
    if not operation_id:
        raise errors.bad_request([("id", "id is required")])
    op = world.operation(NEBIUS, operation_id)
    if op is None:
        raise errors.not_found(operation_id, "operation")
    if not owns_scope(world, owner, op.scope):
        raise errors.permission_denied(operation_id)
    return op
