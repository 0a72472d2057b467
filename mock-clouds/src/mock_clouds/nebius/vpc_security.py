"""`nebius.vpc.v1.SecurityGroupService` (Get, GetByName, List, ListByNetwork, Create, Delete) and
`nebius.vpc.v1.SecurityRuleService` (Get, GetByName, List, Create, Delete).

SkyPilot makes a security group per cluster in the project's network and opens ports with rules (at most 8
ports and 8 CIDRs per rule, the validation rules of `nebius/vpc/v1/security_rule.proto`), then deletes the rules
and the group. Every network also has its default group (`status.default` true, named `default-security-group`:
the name is an inference), created with the project's network. A group's parent is a project, its
`spec.network_id` one of the project's networks (INVALID_ARGUMENT otherwise); a rule's parent is a group. Names
follow the Create rules of both services: `^[a-zA-Z0-9][-_./a-zA-Z0-9]{1,254}$`. Deleting a group deletes its
rules (inference); the default group cannot be deleted (FAILED_PRECONDITION, inference). Unknown or deleted ids
answer NOT_FOUND; a group or rule of another tenant PERMISSION_DENIED. Errors name service "vpc".
"""

from __future__ import annotations

import ipaddress
import re

from ..core.models import Project, Provider
from ..core.world import World
from . import errors, paging, stored, vpc
from ._pb.nebius.common import v1 as common
from ._pb.nebius.vpc import v1 as v
from .call import Call

NEBIUS = Provider.NEBIUS
GROUPS, RULES = "security_group", "security_rule"
DEFAULT_NAME = "default-security-group"
DEFAULT_PRIORITY = 500  # SecurityRuleSpec.priority: "If not specified or set to 0, defaults to 500"
MAX_ITEMS = 8
_NAME = re.compile(r"[a-zA-Z0-9][-_./a-zA-Z0-9]{1,254}")
Violation = tuple[str, str]


# ------------------------------------------------------------------------------------------------ groups
def get_group(call: Call, request: v.GetSecurityGroupRequest) -> v.SecurityGroup:
    with call.world.read() as world:
        return _group(world, _own_group(world, call.owner, request.id))


def get_group_by_name(call: Call, request: v.GetSecurityGroupByNameRequest) -> v.SecurityGroup:
    with call.world.read() as world:
        project = _project(world, call.owner, request.parent_id)
        found = next((g for g in groups_of(world, project) if g.name == request.name), None)
        if found is None:
            raise _vpc(errors.not_found(request.name, "security group"))
        return _group(world, found)


def list_groups(call: Call, request: v.ListSecurityGroupsRequest) -> v.ListSecurityGroupsResponse:
    with call.world.read() as world:
        return _page(world, groups_of(world, _project(world, call.owner, request.parent_id)), request)


def list_groups_by_network(
    call: Call, request: v.ListSecurityGroupsByNetworkRequest
) -> v.ListSecurityGroupsResponse:
    with call.world.read() as world:
        if not request.network_id:
            raise _bad([("network_id", "value is required")])
        mine = [g for p in world.config(NEBIUS).projects if p.owner == call.owner for g in groups_of(world, p)]
        return _page(world, [g for g in mine if _network(g) == request.network_id], request)


def create_group(call: Call, request: v.CreateSecurityGroupRequest) -> common.Operation:
    with call.world.tx() as world:
        metadata = request.metadata
        project = _project(world, call.owner, metadata.parent_id if metadata else "")
        assert metadata is not None
        network = request.spec.network_id if request.spec else ""
        violations = _name(metadata.name)
        if not network:
            violations.append(("spec.network_id", "value is required"))
        elif network not in networks_of(world, project):
            violations.append(("spec.network_id", f"network {network} is not a network of {project.id}"))
        if violations:
            raise _bad(violations)
        assert request.spec is not None
        taken = next((g for g in groups_of(world, project) if g.name == metadata.name), None)
        if taken is not None:
            raise _vpc(errors.already_exists(taken.id, metadata.name))
        made = stored.add(world, GROUPS, "vpcsecuritygroup", metadata, request.spec)
        return stored.operation(world, owner=call.owner, scope=project.id, resource_id=made.id,
                                description="Create security group", request=request)


def delete_group(call: Call, request: v.DeleteSecurityGroupRequest) -> common.Operation:
    with call.world.tx() as world:
        found = _own_group(world, call.owner, request.id)
        if _is_default(found):
            raise _vpc(errors.bad_resource_state(found.id, "the default security group cannot be deleted"))
        for rule in stored.all_of(world, RULES, found.id):
            stored.remove(world, RULES, rule.id)
        stored.remove(world, GROUPS, found.id)
        return stored.operation(world, owner=call.owner, scope=found.parent_id, resource_id=found.id,
                                description="Delete security group", request=request)


# ------------------------------------------------------------------------------------------------ rules
def get_rule(call: Call, request: v.GetSecurityRuleRequest) -> v.SecurityRule:
    with call.world.read() as world:
        return _rule(_own_rule(world, call.owner, request.id))


def get_rule_by_name(call: Call, request: v.GetSecurityRuleByNameRequest) -> v.SecurityRule:
    with call.world.read() as world:
        group = _own_group(world, call.owner, request.parent_id, field="parent_id")
        found = stored.by_name(world, RULES, group.id, request.name)
        if found is None:
            raise _vpc(errors.not_found(request.name, "security rule"))
        return _rule(found)


def list_rules(call: Call, request: v.ListSecurityRulesRequest) -> v.ListSecurityRulesResponse:
    with call.world.read() as world:
        group = _own_group(world, call.owner, request.parent_id, field="parent_id")
        chosen, token = stored.page(world, RULES, group.id, request.page_size, request.page_token)
        return v.ListSecurityRulesResponse(items=[_rule(r) for r in chosen], next_page_token=token)


def create_rule(call: Call, request: v.CreateSecurityRuleRequest) -> common.Operation:
    with call.world.tx() as world:
        metadata = request.metadata or common.ResourceMetadata()
        group = _own_group(world, call.owner, metadata.parent_id, field="metadata.parent_id")
        violations = _name(metadata.name) + rule_violations(request.spec)
        if violations:
            raise _bad(violations)
        assert request.spec is not None
        made = stored.add(world, RULES, "vpcsecurityrule", metadata, request.spec)
        return stored.operation(world, owner=call.owner, scope=_scope(group), resource_id=made.id,
                                description="Create security rule", request=request)


def delete_rule(call: Call, request: v.DeleteSecurityRuleRequest) -> common.Operation:
    with call.world.tx() as world:
        found = _own_rule(world, call.owner, request.id)
        stored.remove(world, RULES, found.id)
        group = _find_group(world, found.parent_id)
        return stored.operation(world, owner=call.owner, scope=_scope(group) if group else "", resource_id=found.id,
                                description="Delete security rule", request=request)


def rule_violations(spec: v.SecurityRuleSpec | None) -> list[Violation]:
    """The Create rules of `SecurityRuleSpec`: access, protocol and one match required; priority in [0, 1000];
    at most 8 CIDRs (valid IPv4 prefixes) and 8 ports (1-65535) per match."""
    if spec is None:
        return [("spec", "value is required")]
    found: list[Violation] = []
    if spec.access == v.RuleAccessAction.ACCESS_UNSPECIFIED:
        found.append(("spec.access", "value is required"))
    if spec.protocol == v.RuleProtocol.PROTOCOL_UNSPECIFIED:
        found.append(("spec.protocol", "value is required"))
    if not 0 <= spec.priority <= 1000:
        found.append(("spec.priority", "value must be greater than or equal to 0 and less than or equal to 1000"))
    if spec.ingress is not None:
        found += _match("spec.ingress", spec.ingress.source_cidrs, "source_cidrs", spec.ingress.destination_ports)
    elif spec.egress is not None:
        found += _match("spec.egress", spec.egress.destination_cidrs, "destination_cidrs",
                        spec.egress.destination_ports)
    else:
        found.append(("spec.match", "exactly one field is required in oneof"))
    return found


def _match(path: str, cidrs: list[str], cidr_field: str, ports: list[int]) -> list[Violation]:
    found: list[Violation] = []
    if len(cidrs) > MAX_ITEMS:
        found.append((f"{path}.{cidr_field}", f"value must contain no more than {MAX_ITEMS} item(s)"))
    for i, cidr in enumerate(cidrs):
        if not _is_ipv4_prefix(cidr):
            found.append((f"{path}.{cidr_field}[{i}]", "value must be a valid CIDR"))
    if len(ports) > MAX_ITEMS:
        found.append((f"{path}.destination_ports", f"value must contain no more than {MAX_ITEMS} item(s)"))
    for i, port in enumerate(ports):
        if not 1 <= port <= 65535:
            found.append((f"{path}.destination_ports[{i}]",
                          "value must be greater than or equal to 1 and less than or equal to 65535"))
    return found


def _is_ipv4_prefix(cidr: str) -> bool:
    try:
        return "/" in cidr and ipaddress.ip_network(cidr, strict=True).version == 4
    except ValueError:
        return False


# ------------------------------------------------------------------------------------------------ reads
def networks_of(world: World, project: Project) -> list[str]:
    return sorted({vpc.network_of(s) for s in vpc.subnets_of(world, project)})


def groups_of(world: World, project: Project) -> list[stored.Stored]:
    """The project's groups, sorted by id: each network's default group and those created."""
    defaults = [stored.Stored(id=vpc.derived_id("vpcsecuritygroup", project.id, network), parent_id=project.id,
                              name=DEFAULT_NAME, spec={"networkId": network})
                for network in networks_of(world, project)]
    return sorted(defaults + stored.all_of(world, GROUPS, project.id), key=lambda g: g.id)


def _find_group(world: World, group_id: str) -> stored.Stored | None:
    found = stored.find(world, GROUPS, group_id)
    if found is not None:
        return found
    all_projects = world.config(NEBIUS).projects
    return next((g for p in all_projects for g in groups_of(world, p) if g.id == group_id and _is_default(g)), None)


def _own_group(world: World, owner: str, group_id: str, field: str = "id") -> stored.Stored:
    if not group_id:
        raise _bad([(field, "value is required")])
    found = _find_group(world, group_id)
    if found is None:
        raise _vpc(errors.not_found(group_id, "security group"))
    _check_owner(world, owner, found.parent_id, group_id)
    return found


def _own_rule(world: World, owner: str, rule_id: str) -> stored.Stored:
    if not rule_id:
        raise _bad([("id", "value is required")])
    found = stored.find(world, RULES, rule_id)
    group = _find_group(world, found.parent_id) if found is not None else None
    if found is None or group is None:
        raise _vpc(errors.not_found(rule_id, "security rule"))
    _check_owner(world, owner, group.parent_id, rule_id)
    return found


def _check_owner(world: World, owner: str, project_id: str, resource_id: str) -> None:
    project = world.project(NEBIUS, project_id)
    if project is None or project.owner != owner:
        raise _vpc(errors.permission_denied(resource_id))


def _project(world: World, owner: str, project_id: str) -> Project:
    if not project_id:
        raise _bad([("parent_id", "value is required")])
    found = world.project(NEBIUS, project_id)
    if found is None or found.owner != owner:
        raise _vpc(errors.permission_denied(project_id))
    return found


def _scope(group: stored.Stored) -> str:
    return group.parent_id


def _network(group: stored.Stored) -> str:
    return v.SecurityGroupSpec.from_dict(group.spec).network_id


def _is_default(group: stored.Stored) -> bool:
    return group.name == DEFAULT_NAME and group.created_at == 0.0


def _group(world: World, record: stored.Stored) -> v.SecurityGroup:
    return v.SecurityGroup(
        metadata=record.metadata() if record.created_at else common.ResourceMetadata(
            id=record.id, parent_id=record.parent_id, name=record.name, resource_version=1),
        spec=v.SecurityGroupSpec.from_dict(record.spec),
        status=v.SecurityGroupStatus(state=v.SecurityGroupStatusState.READY, default=_is_default(record)),
    )


def _rule(record: stored.Stored) -> v.SecurityRule:
    spec = v.SecurityRuleSpec.from_dict(record.spec)
    if spec.ingress is not None:
        direction = v.RuleDirection.INGRESS
        source = v.RuleMatchStatus(security_group_id=spec.ingress.source_security_group_id,
                                   cidrs=list(spec.ingress.source_cidrs))
        destination = v.RuleMatchStatus(security_group_id=record.parent_id, ports=list(spec.ingress.destination_ports))
    else:
        egress = spec.egress or v.RuleEgress()
        direction = v.RuleDirection.EGRESS
        source = v.RuleMatchStatus(security_group_id=record.parent_id)
        destination = v.RuleMatchStatus(security_group_id=egress.destination_security_group_id,
                                        cidrs=list(egress.destination_cidrs), ports=list(egress.destination_ports))
    return v.SecurityRule(
        metadata=record.metadata(),
        spec=spec,
        status=v.SecurityRuleStatus(state=v.SecurityRuleStatusState.READY,
                                    effective_priority=spec.priority or DEFAULT_PRIORITY, direction=direction,
                                    source=source, destination=destination),
    )


def _page(world: World, groups: list[stored.Stored],
          request: v.ListSecurityGroupsRequest | v.ListSecurityGroupsByNetworkRequest) -> v.ListSecurityGroupsResponse:
    chosen, token = paging.page(groups, lambda g: (0.0, g.id), request.page_size, request.page_token)
    return v.ListSecurityGroupsResponse(items=[_group(world, g) for g in chosen], next_page_token=token)


def _name(value: str) -> list[Violation]:
    if _NAME.fullmatch(value):
        return []
    return [("metadata.name", "'name' must start with a letter or digit, allow '-', '_', '.', '/', and have a "
                              "length between 2 and 255 characters.")]


def _bad(violations: list[Violation]) -> errors.ApiError:
    return errors.bad_request(violations, service=vpc.SERVICE)


def _vpc(error: errors.ApiError) -> errors.ApiError:
    if error.error is not None:
        error.error.service = vpc.SERVICE
    return error
