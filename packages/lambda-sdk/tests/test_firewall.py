"""Account firewall rules through the mock Lambda: GET and PUT /firewall-rules (spec 1.10 firewallRulesList and
firewallRulesSet, research lambda.md section 2)."""

from __future__ import annotations

import pytest
from lambda_sdk import FirewallProtocol, FirewallRule, InvalidParameters, LambdaClient

SSH = FirewallRule(FirewallProtocol.TCP, "0.0.0.0/0", "Allow SSH", (22, 22))
ICMP = FirewallRule(FirewallProtocol.ICMP, "0.0.0.0/0", "Allow ICMP")


def test_set_firewall_rules_replaces_them_and_the_listing_agrees(client: LambdaClient) -> None:
    """As SkyPilot's open_ports does (sky/provision/lambda_cloud/lambda_utils.py:329-333): read the rules, add a
    port, PUT the whole list; the answer and a later GET are the rules sent."""
    assert list(client.list_firewall_rules()) == [SSH, ICMP]  # Lambda's defaults
    web = FirewallRule(FirewallProtocol.TCP, "0.0.0.0/0", "web", (8080, 8080))
    office = FirewallRule(FirewallProtocol.ALL, "203.0.113.0/24", "office", (1, 65535))
    wanted = [*client.list_firewall_rules(), web, office]
    assert client.set_firewall_rules(wanted) == wanted
    assert list(client.list_firewall_rules()) == wanted
    assert client.set_firewall_rules([]) == [] and list(client.list_firewall_rules()) == []


def test_a_malformed_rule_is_invalid_parameters_and_changes_nothing(client: LambdaClient) -> None:
    """port_range is required for tcp (spec 1.10 FirewallRule; research lambda.md section 4)."""
    with pytest.raises(InvalidParameters) as err:
        client.set_firewall_rules([SSH, FirewallRule(FirewallProtocol.TCP, "0.0.0.0/0", "no ports")])
    assert err.value.status == 400 and err.value.code == "global/invalid-parameters"
    assert list(client.list_firewall_rules()) == [SSH, ICMP]
