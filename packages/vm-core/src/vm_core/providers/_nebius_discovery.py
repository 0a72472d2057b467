"""Where a Nebius tenant creates, as the API says it: each region's project, and a project's subnet.

A Nebius project lives in one region (`status.region` of its IAM Container), and a tenant may have projects in
several regions; instances need a VPC subnet of their own project. dstack and SkyPilot read both from the API
(`ProjectService.List(parent_id=tenant)`, `SubnetService.List(parent_id=project)`), and so does vm when the
profile's `projects` and `subnet_id` settings do not say. The choices, with what was left out, are logged at debug
level (`vm --debug`). Importing this module imports neither nebius_sdk nor grpc.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._nebius_map import NAME

if TYPE_CHECKING:
    from nebius_sdk.models import Project, Subnet

log = logging.getLogger(__name__)

DEFAULT_SUBNET = "default-subnet"  # the subnet a project is created with is named default-subnet-...


def region_projects(default: Project, listed: Iterable[Project]) -> dict[str, str]:
    """region -> project id of the tenant's projects `listed`, the default project's region first and the others
    by name. A region with several projects uses the default project if it is one of them, else the first by name;
    a project without a region is not used (both logged). The default project is always used, under "" when the API
    gives it no region."""
    projects = {p.id: p for p in listed} | {default.id: default}
    by_region: dict[str, list[Project]] = {}
    for project in sorted(projects.values(), key=lambda p: (p.id != default.id, p.name, p.id)):
        if project.region or project.id == default.id:
            by_region.setdefault(project.region, []).append(project)
        else:
            log.debug("Nebius project %s (%s) is not used: the API gives it no region", project.id, project.name)
    chosen = {region: group[0].id for region, group in by_region.items()}
    for region, group in by_region.items():
        for other in group[1:]:
            log.debug("Nebius project %s (%s) is not used: %s is the project of %s", other.id, other.name,
                      group[0].id, region)
    ordered = {default.region: default.id} | {r: chosen[r] for r in sorted(chosen) if r != default.region}
    log.debug("Nebius tenant %s: %s", default.tenant_id,
              ", ".join(f"{region or '(no region)'}={project}" for region, project in ordered.items()))
    return ordered


def project_subnet(subnets: Sequence[Subnet], project: str, region: str) -> str:
    """The subnet of new instances in `project` (in `region`): the one whose name starts with `default-subnet` (the
    first by name if several do, as dstack's `get_default_subnet`), else the only one. Raises ConfigError for a
    project with none, or with several and none of them the default, naming them."""
    defaults = sorted((s for s in subnets if s.name.startswith(DEFAULT_SUBNET)), key=lambda s: (s.name, s.id))
    chosen = defaults[0] if defaults else subnets[0] if len(subnets) == 1 else None
    where = f"Nebius project {project}{f' ({region})' if region else ''}"
    if chosen is None:
        named = ", ".join(f"{s.name} ({s.id})" for s in sorted(subnets, key=lambda s: (s.name, s.id)))
        found = (f"has {len(subnets)} subnets and none is named {DEFAULT_SUBNET}...: {named}" if subnets
                 else "has no VPC subnet")
        raise ConfigError(f"{where} {found}; set the profile's subnet_id (one id, or a region -> subnet id table)",
                          provider=NAME,
                          suggestion=f"list them with `nebius vpc subnet list --parent-id {project}`")
    log.debug("%s: new instances use subnet %s (%s)", where, chosen.id, chosen.name)
    return chosen.id
