"""`/firewall-rulesets[/{id}]` and `/firewall-rulesets/global` (spec 1.10): per-account rulesets that launches
may name in `firewall_rulesets`, and the account's global rules; `/firewall-rules` (firewallRulesList and
firewallRulesSet), the account's inbound rules, which "do not apply to the us-south-1 region".

Rulesets are bookkeeping only: the mock has no network, so rules are validated and stored, never enforced.
"""

from __future__ import annotations

import ipaddress
import uuid

from ..core.models import Provider
from . import render
from .context import Ctx
from .errors import firewall_ruleset_in_use, firewall_ruleset_not_found, invalid_parameters
from .models import (
    FirewallRule,
    FirewallRulesetCreateRequest,
    FirewallRulesetPatchRequest,
    FirewallRulesPutRequest,
    GlobalFirewallRulesetPatchRequest,
    decode,
    parse_path_id,
)
from .state import FirewallRuleRecord, FirewallRulesetRecord, instance_details

LAMBDA = Provider.LAMBDA
# Spec 1.8.3 fixes the global ruleset's name to this constant (1.10 only gives an example name), so clients
# generated from 1.8.3 refuse any other.
GLOBAL_NAME = "Global Firewall Rules"


def list_rulesets(ctx: Ctx) -> list[dict[str, object]]:
    return [_render(ctx, r) for r in ctx.resources.firewall_rulesets]


def create_ruleset(ctx: Ctx) -> dict[str, object]:
    body = decode(ctx.request, FirewallRulesetCreateRequest)
    if body.region not in ctx.config.regions:
        raise invalid_parameters(f"Error in request body at 'region': unknown region '{body.region}'.")
    record = FirewallRulesetRecord(
        id=uuid.uuid4().hex, name=body.name, region=body.region, rules=_rules(body.rules), created=ctx.world.now()
    )
    ctx.resources.firewall_rulesets.append(record)
    return _render(ctx, record)


def get_ruleset(ctx: Ctx) -> dict[str, object]:
    return _render(ctx, ruleset(ctx, ctx.request.params["id"]))


def update_ruleset(ctx: Ctx) -> dict[str, object]:
    """PATCH: `name` and/or `rules`; what is left out is unchanged."""
    record = ruleset(ctx, ctx.request.params["id"])
    body = decode(ctx.request, FirewallRulesetPatchRequest)
    if body.name is not None:
        record.name = body.name
    if body.rules is not None:
        record.rules = _rules(body.rules)
    return _render(ctx, record)


def delete_ruleset(ctx: Ctx) -> dict[str, object]:
    """Refused (400 firewall-ruleset-in-use) while an instance that is not terminated uses it."""
    record = ruleset(ctx, ctx.request.params["id"])
    if _instance_ids(ctx, record.id):
        raise firewall_ruleset_in_use()
    ctx.resources.firewall_rulesets.remove(record)
    return {}


def get_global(ctx: Ctx) -> dict[str, object]:
    return _render_global(ctx)


def update_global(ctx: Ctx) -> dict[str, object]:
    body = decode(ctx.request, GlobalFirewallRulesetPatchRequest)
    if body.rules is not None:
        ctx.resources.global_firewall_rules = _rules(body.rules)
    return _render_global(ctx)


def list_rules(ctx: Ctx) -> list[dict[str, object]]:
    """GET /firewall-rules: the account's inbound rules (SSH and ICMP open to everyone until a PUT)."""
    return [render.firewall_rule(rule) for rule in ctx.resources.firewall_rules]


def set_rules(ctx: Ctx) -> list[dict[str, object]]:
    """PUT /firewall-rules: `{"data": [FirewallRule]}` replaces every rule (an empty list closes every port);
    answers the rules now in force. A malformed rule is 400 global/invalid-parameters and changes nothing."""
    body = decode(ctx.request, FirewallRulesPutRequest)
    ctx.resources.firewall_rules = _rules(body.data, at="data")
    return list_rules(ctx)


def ruleset(ctx: Ctx, raw_id: str) -> FirewallRulesetRecord:
    """The caller's ruleset with the path's id; 400 for a malformed id, 404 for an unknown one."""
    found = find(ctx, parse_path_id(raw_id))
    if found is None:
        raise firewall_ruleset_not_found()
    return found


def find(ctx: Ctx, ruleset_id: str) -> FirewallRulesetRecord | None:
    """The caller's ruleset with this id (any case, hyphens allowed), else None."""
    wanted = ruleset_id.replace("-", "").lower()
    return next((r for r in ctx.resources.firewall_rulesets if r.id == wanted), None)


def _rules(rules: list[FirewallRule], at: str = "rules") -> list[FirewallRuleRecord]:
    return [_rule(rule, f"{at}[{index}]") for index, rule in enumerate(rules)]


def _rule(rule: FirewallRule, at: str) -> FirewallRuleRecord:
    """Checks the spec leaves to prose: port_range [min, max] for every protocol but icmp (where it is not
    allowed), min <= max, and a public IPv4 source network (a bare address means /32)."""
    where = f"Error in request body at '{at}'"
    if rule.protocol == "icmp" and rule.port_range is not None:
        raise invalid_parameters(f"{where}: port_range is not allowed for the icmp protocol.")
    if rule.protocol != "icmp" and rule.port_range is None:
        raise invalid_parameters(f"{where}: port_range is required for the {rule.protocol} protocol.")
    if rule.port_range is not None and rule.port_range[0] > rule.port_range[1]:
        raise invalid_parameters(f"{where}: port_range must be [min, max].")
    try:
        network = ipaddress.IPv4Network(rule.source_network, strict=False)
    except ValueError:
        raise invalid_parameters(f"{where}: source_network must be an IPv4 network in CIDR notation.") from None
    return FirewallRuleRecord(
        protocol=rule.protocol, source_network=str(network), description=rule.description,
        port_range=list(rule.port_range) if rule.port_range is not None else None,
    )


def _instance_ids(ctx: Ctx, ruleset_id: str) -> list[str]:
    """The caller's instances (not yet terminated) launched with this ruleset."""
    return [
        vm.id for vm in ctx.world.vms(LAMBDA, ctx.scope) if ruleset_id in instance_details(vm).firewall_ruleset_ids
    ]


def _render(ctx: Ctx, record: FirewallRulesetRecord) -> dict[str, object]:
    """FirewallRuleset (every field required)."""
    return {
        "id": record.id,
        "name": record.name,
        "region": render.region(ctx.world, record.region),
        "rules": [render.firewall_rule(rule) for rule in record.rules],
        "created": render.iso(record.created),
        "instance_ids": _instance_ids(ctx, record.id),
    }


def _render_global(ctx: Ctx) -> dict[str, object]:
    """GlobalFirewallRuleset: id is always "global"."""
    return {
        "id": "global",
        "name": GLOBAL_NAME,
        "rules": [render.firewall_rule(rule) for rule in ctx.resources.global_firewall_rules],
    }
