"""What every handler gets (`Call`) and the checks that scope a request to the caller's organisation.

An access key belongs to one organisation (credential owner == organisation id == project owner). A project
that does not exist or belongs to another organisation answers 403 `unauthorized`: the swagger declares 403
(not 404) on project-scoped endpoints, and the API answers 403 for operations that do not exist or are not the
caller's, so the mock never reveals whether another organisation's project exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgspec

from ..core.models import VM, Project, Provider, Reservation
from ..core.world import World
from ..http import BadRequestBody, Request
from .errors import bad_request, not_found, unauthorized
from .models import drop_nulls

CRUSOE = Provider.CRUSOE
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


@dataclass(frozen=True)
class Call:
    """One authenticated request: the world (inside `world.tx()`), the caller's organisation, the request."""

    world: World
    owner: str
    request: Request
    params: dict[str, str]

    def query(self, name: str) -> str:
        return self.request.query_one(name)

    def query_list(self, name: str) -> list[str]:
        """A multi-valued parameter: comma-separated (as the Go client sends arrays) and/or repeated."""
        values = self.request.query.get(name, [])
        return [item for value in values for item in value.split(",") if item]

    def body(self, type_: Any) -> Any:
        """The JSON body decoded into `type_`, nulls read as absent (Go semantics, `models.drop_nulls`);
        a 400 `bad_request` names what is wrong."""
        try:
            return msgspec.convert(drop_nulls(self.request.json()), type_)
        except BadRequestBody as exc:
            raise bad_request(str(exc)) from exc
        except msgspec.ValidationError as exc:  # wrong types, missing required fields
            raise bad_request(str(exc)) from exc


def require_uuid(value: str, what: str) -> str:
    """`value` if it is a UUID (any case), else a 400 naming `what`."""
    if not _UUID.match(value):
        raise bad_request(f"invalid {what} {value!r}: not a UUID")
    return value


def organization(call: Call) -> str:
    """The `{organization_id}` path parameter, which must be the caller's organisation."""
    org_id = require_uuid(call.params["organization_id"], "organization id")
    if org_id != call.owner:
        raise unauthorized(f"not authorized to access organization {org_id}")
    return org_id


def project(call: Call) -> Project:
    """The `{project_id}` path parameter as a project of the caller's organisation."""
    return project_by_id(call, call.params["project_id"])


def project_by_id(call: Call, project_id: str) -> Project:
    require_uuid(project_id, "project id")
    found = call.world.project(CRUSOE, project_id)
    if found is None or found.owner != call.owner:
        raise unauthorized(f"not authorized to access project {project_id}")
    return found


def org_projects(call: Call) -> list[Project]:
    return [p for p in call.world.config(CRUSOE).projects if p.owner == call.owner]


def instance(call: Call, proj: Project) -> VM:
    """The `{vm_id}` path parameter as a live VM of `proj`; 404 `not_found` otherwise."""
    vm_id = require_uuid(call.params["vm_id"], "vm id")
    vm = call.world.vm(CRUSOE, vm_id)
    if vm is None or vm.scope != proj.id:
        raise not_found(f"instance {vm_id} not found")
    return vm


def reservation_visible(call: Call, res: Reservation) -> bool:
    """A reservation is the caller's when it is open to every project or names one of its projects."""
    return not res.scopes or any(p.id in res.scopes for p in org_projects(call))
