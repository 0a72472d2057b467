"""`nebius.vpc.v1.SubnetService` (Get, GetByName, List): the subnets of a project (`nebius/vpc/v1/subnet.proto`).

On the real cloud this service is `vpc.api.nebius.cloud:443`; the mock serves it on its one port. Creating a
project pre-creates its network resources ("When you create a project, Virtual Networks automatically provides
you with the required networking resources", docs.nebius.com/vpc/overview), among them the subnet whose name
starts with `default-subnet` that dstack picks (`get_default_subnet`).

The subnets of a project are the scenario's `[nebius.extra] subnets` entries of that project (`{id, project,
name?, network?, cidr?}`); a project with no entry has one default subnet derived from its id, the one its
creation made. So a test (`MockClouds(configure=...)`) that gives a project its own entries replaces that
default: two entries named otherwise make a project with two subnets and no default. An entry without a name is
named `default-subnet-<suffix>`, as the cloud names the one it creates. Every subnet is READY, in its project's
default network unless the entry names one, and takes its addresses from the network's pools.

Reads follow `auth`: a subnet of a project the caller may not use is PERMISSION_DENIED, an unknown subnet id
NOT_FOUND. List pages as the other lists do.
"""

from __future__ import annotations

import hashlib

import msgspec

from ..core.models import Project, Provider
from ..core.world import World
from . import errors, paging
from ._pb.nebius.common import v1 as common
from ._pb.nebius.vpc import v1 as vpc
from .call import Call

NEBIUS = Provider.NEBIUS
SERVICE = "vpc"  # ServiceError.service of these errors (inference: no real one was seen)
DEFAULT_PREFIX = "default-subnet"
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


class SubnetRecord(msgspec.Struct, kw_only=True):
    """A subnet as the scenario gives it (`[nebius.extra] subnets`)."""

    id: str  # vpcsubnet-e00...
    project: str  # the project it belongs to
    name: str = ""  # "": named default-subnet-<suffix>
    network: str = ""  # vpcnetwork-...; "": the project's default network
    cidr: str = "10.0.0.0/16"  # its private addresses


def get(call: Call, request: vpc.GetSubnetRequest) -> vpc.Subnet:
    if not request.id:
        raise errors.bad_request([("id", "id is required")], service=SERVICE)
    with call.world.read() as world:
        found = next((s for s in all_subnets(world) if s.id == request.id), None)
        if found is None:
            raise _ours(errors.not_found(request.id, "subnet"))
        _project(world, call.owner, found.project)
        return subnet(found)


def get_by_name(call: Call, request: vpc.GetSubnetByNameRequest) -> vpc.Subnet:
    with call.world.read() as world:
        project = _project(world, call.owner, request.parent_id)
        if not request.name:
            raise errors.bad_request([("name", "name is required")], service=SERVICE)
        found = next((s for s in subnets_of(world, project) if s.name == request.name), None)
        if found is None:
            raise _ours(errors.not_found(request.name, "subnet"))
        return subnet(found)


def list_subnets(call: Call, request: vpc.ListSubnetsRequest) -> vpc.ListSubnetsResponse:
    with call.world.read() as world:
        project = _project(world, call.owner, request.parent_id)
        chosen, token = paging.page(subnets_of(world, project), lambda s: (0.0, s.id), request.page_size,
                                    request.page_token)
        return vpc.ListSubnetsResponse(items=[subnet(s) for s in chosen], next_page_token=token)


def all_subnets(world: World) -> list[SubnetRecord]:
    """Every project's subnets (`subnets_of`)."""
    return [s for p in world.config(NEBIUS).projects for s in subnets_of(world, p)]


def subnets_of(world: World, project: Project) -> list[SubnetRecord]:
    """The project's subnets, sorted by id: its scenario entries (named), else its derived default subnet."""
    raw = world.config(NEBIUS).extra.get("subnets", [])
    given = [s for s in msgspec.convert(raw, list[SubnetRecord]) if s.project == project.id]
    if not given:
        given = [SubnetRecord(id=_derived_id("vpcsubnet", project.id, DEFAULT_PREFIX), project=project.id)]
    named = [s if s.name else msgspec.structs.replace(s, name=f"{DEFAULT_PREFIX}-{_suffix(s.id)}") for s in given]
    return sorted(named, key=lambda s: s.id)


def subnet(record: SubnetRecord) -> vpc.Subnet:
    """The Subnet message of a record: READY, in its network, using the network's address pools."""
    network = network_of(record)
    return vpc.Subnet(
        metadata=common.ResourceMetadata(id=record.id, parent_id=record.project, name=record.name,
                                         resource_version=1),
        spec=vpc.SubnetSpec(
            network_id=network,
            ipv4_private_pools=vpc.IPv4PrivateSubnetPools(use_network_pools=True),
            ipv4_public_pools=vpc.IPv4PublicSubnetPools(use_network_pools=True),
        ),
        status=vpc.SubnetStatus(
            state=vpc.SubnetStatusState.READY,
            ipv4_private_cidrs=[record.cidr],
            route_table=vpc.SubnetAssociatedRouteTable(id=_derived_id("vpcroutetable", network), default=True),
            ipv4_private_pools=[vpc.SubnetStatusPool(pool_id=_derived_id("vpcpool", network), cidrs=[record.cidr])],
        ),
    )


def network_of(record: SubnetRecord) -> str:
    """The network of a subnet: the entry's, else its project's default network."""
    return record.network or _derived_id("vpcnetwork", record.project, "default-network")


def derived_id(kind: str, near: str, *parts: str) -> str:
    """A stable Nebius-style id of `kind` in the region of the id `near` (`_derived_id`)."""
    return _derived_id(kind, near, *parts)


def _project(world: World, owner: str, project_id: str) -> Project:
    """The caller's project `project_id` (as `auth.project`, answered by this service)."""
    if not project_id:
        raise errors.bad_request([("parent_id", "parent_id is required")], service=SERVICE)
    found = world.project(NEBIUS, project_id)
    if found is None or found.owner != owner:
        raise _ours(errors.permission_denied(project_id))
    return found


def _ours(error: errors.ApiError) -> errors.ApiError:
    """`error` as this service reports it (`ServiceError.service`)."""
    if error.error is not None:
        error.error.service = SERVICE
    return error


def _base36(*parts: str, length: int) -> str:
    digest = hashlib.sha256("/".join(parts).encode()).digest()
    return "".join(_BASE36[b % 36] for b in digest[:length])


def _derived_id(kind: str, near: str, *parts: str) -> str:
    """A stable Nebius-style id (`<kind>-<routing code><15 base36>`) in the region of the id `near`."""
    return f"{kind}-{near.partition('-')[2][:3]}{_base36(kind, near, *parts, length=15)}"


def _suffix(subnet_id: str) -> str:
    """The generated part of a default subnet's name (mock extension: derived from its id)."""
    return _base36("name", subnet_id, length=8)
