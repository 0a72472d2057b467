"""`/organizations/projects[/{project_id}]`: the projects of the caller's organisation."""

from __future__ import annotations

from ..http import Response
from . import access, render
from .access import Call
from .errors import bad_request, unauthorized

_BOOLEANS = {"": False, "false": False, "0": False, "true": True, "1": True}  # Go strconv.ParseBool subset


def list_projects(call: Call) -> Response:
    """`?org_id=` must be the caller's organisation (403 otherwise); `?project_name=` filters by exact name;
    `?skip_loading_project_resources=true` returns `resources: null`."""
    org_id = call.query("org_id")
    if org_id and org_id != call.owner:
        raise unauthorized(f"not authorized to access organization {org_id}")
    name = call.query("project_name")
    with_resources = not _boolean(call, "skip_loading_project_resources")
    projects = [p for p in access.org_projects(call) if not name or p.name == name]
    return Response(
        200, {"items": [render.project(call.world, p, with_resources=with_resources) for p in projects]}
    )


def get_project(call: Call) -> Response:
    return Response(200, render.project(call.world, access.project(call)))


def _boolean(call: Call, name: str) -> bool:
    raw = call.query(name)
    if raw.lower() not in _BOOLEANS:
        raise bad_request(f"invalid {name} {raw!r}: must be a boolean")
    return _BOOLEANS[raw.lower()]
