"""Lambda Cloud mock: firewall rulesets (spec 1.10), the global ruleset, and rulesets named at launch."""

from __future__ import annotations

from typing import Any

import pytest
from mock_clouds.lambda_cloud.testing import OTHER_ACCOUNT, LambdaApi, error, invalid_parameters

SSH = {"protocol": "tcp", "port_range": [22, 22], "source_network": "0.0.0.0/0", "description": "Allow SSH"}
PING = {"protocol": "icmp", "source_network": "203.0.113.7", "description": "Ping from the office"}
NOT_FOUND = error(
    "global/object-does-not-exist",
    "Firewall ruleset does not exist or you do not have permission to access it.",
    "Check your firewall ruleset ID and try again.",
)


@pytest.fixture
def api(mock_clouds_factory) -> LambdaApi:
    return LambdaApi.start(mock_clouds_factory)


def created(api: LambdaApi, name: str = "web", region: str = "us-east-1", rules: Any = None) -> dict[str, Any]:
    response = api.post("/firewall-rulesets", {"name": name, "region": region, "rules": rules or [SSH]})
    assert response.status_code == 200, response.text
    return response.json()["data"]


def test_create_get_list_patch_delete(api: LambdaApi) -> None:
    ruleset = created(api, rules=[SSH, PING])
    assert set(ruleset) == {"id", "name", "region", "rules", "created", "instance_ids"}
    assert (ruleset["name"], ruleset["region"]["name"], ruleset["instance_ids"]) == ("web", "us-east-1", [])
    assert ruleset["rules"] == [SSH, {**PING, "source_network": "203.0.113.7/32"}]  # a bare address is a /32
    path = f"/firewall-rulesets/{ruleset['id']}"
    assert api.get(path).json()["data"] == ruleset
    assert [r["id"] for r in api.get("/firewall-rulesets").json()["data"]] == [ruleset["id"]]

    renamed = api.call("PATCH", path, json={"name": "web-2"}).json()["data"]
    assert (renamed["name"], renamed["rules"]) == ("web-2", ruleset["rules"])  # rules left out: unchanged
    emptied = api.call("PATCH", path, json={"rules": []}).json()["data"]
    assert (emptied["name"], emptied["rules"]) == ("web-2", [])

    assert api.delete(path).json() == {"data": {}}
    assert (api.get(path).status_code, api.get(path).json()) == (404, NOT_FOUND)
    assert api.get("/firewall-rulesets").json()["data"] == []


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({**SSH, "port_range": None}, "port_range is required for the tcp protocol."),
        ({**PING, "port_range": [1, 2]}, "port_range is not allowed for the icmp protocol."),
        ({**SSH, "port_range": [443, 80]}, "port_range must be [min, max]."),
        ({**SSH, "source_network": "example.com"}, "source_network must be an IPv4 network in CIDR notation."),
    ],
)
def test_rules_are_validated(api: LambdaApi, rule: dict[str, Any], message: str) -> None:
    response = api.post("/firewall-rulesets", {"name": "bad", "region": "us-east-1", "rules": [rule]})
    assert response.status_code == 400
    assert response.json() == invalid_parameters(f"Error in request body at 'rules[0]': {message}")
    assert api.get("/firewall-rulesets").json()["data"] == []


def test_schema_violations_and_unknown_region_are_400(api: LambdaApi) -> None:
    for body in (
        {"name": "x", "region": "us-east-1", "rules": [{**SSH, "protocol": "sctp"}]},
        {"name": "x", "region": "us-east-1", "rules": [{**SSH, "port_range": [0, 22]}]},
        {"name": "x" * 65, "region": "us-east-1", "rules": []},
        {"name": "x", "region": "mars-1", "rules": []},
        {"name": "x", "rules": []},
    ):
        response = api.post("/firewall-rulesets", body)
        assert response.status_code == 400 and response.json()["error"]["code"] == "global/invalid-parameters"


def test_unknown_or_malformed_ids(api: LambdaApi) -> None:
    assert api.get("/firewall-rulesets/" + "0" * 32).json() == NOT_FOUND
    assert api.call("PATCH", "/firewall-rulesets/" + "0" * 32, json={}).status_code == 404
    malformed = api.delete("/firewall-rulesets/nope")
    assert malformed.status_code == 400 and "Input should be a valid UUID" in malformed.json()["error"]["message"]


def test_rulesets_are_per_account(api: LambdaApi) -> None:
    ruleset = created(api)
    other = api.as_account(OTHER_ACCOUNT)
    assert other.get("/firewall-rulesets").json()["data"] == []
    assert other.get(f"/firewall-rulesets/{ruleset['id']}").status_code == 404


def test_global_ruleset(api: LambdaApi) -> None:
    assert api.get("/firewall-rulesets/global").json()["data"] == {
        "id": "global", "name": "Global Firewall Rules", "rules": []}
    patched = api.call("PATCH", "/firewall-rulesets/global", json={"rules": [PING]}).json()["data"]
    assert patched["rules"] == [{**PING, "source_network": "203.0.113.7/32"}]
    assert api.call("PATCH", "/firewall-rulesets/global", json={}).json()["data"] == patched


def test_launch_with_a_ruleset_shows_it_and_keeps_it_in_use(api: LambdaApi) -> None:
    ruleset = created(api)
    instance_id = api.launch(firewall_rulesets=[{"id": ruleset["id"]}])
    assert api.instance(instance_id)["firewall_rulesets"] == [{"id": ruleset["id"]}]
    assert "firewall_rulesets" not in api.instance(api.launch())  # none named: the field is left out
    path = f"/firewall-rulesets/{ruleset['id']}"
    assert api.get(path).json()["data"]["instance_ids"] == [instance_id]
    in_use = api.delete(path)
    assert (in_use.status_code, in_use.json()["error"]["code"]) == (400, "firewall-rulesets/firewall-ruleset-in-use")
    assert api.post("/instance-operations/terminate", {"instance_ids": [instance_id]}).status_code == 200
    api.wait_status(instance_id, "terminated")
    assert api.get(path).json()["data"]["instance_ids"] == []
    assert api.delete(path).status_code == 200


def test_launch_refuses_unknown_rulesets_and_rulesets_of_another_region(api: LambdaApi) -> None:
    elsewhere = created(api, region="us-west-1")
    wrong_region = api.post(
        "/instance-operations/launch",
        {"region_name": "us-east-1", "instance_type_name": "gpu_1x_a10", "ssh_key_names": ["default"],
         "firewall_rulesets": [{"id": elsewhere["id"]}]},
    )
    assert wrong_region.status_code == 400 and "is in region us-west-1" in wrong_region.json()["error"]["message"]
    unknown = api.post(
        "/instance-operations/launch",
        {"region_name": "us-east-1", "instance_type_name": "gpu_1x_a10", "ssh_key_names": ["default"],
         "firewall_rulesets": [{"id": "f" * 32}]},
    )
    assert (unknown.status_code, unknown.json()) == (404, NOT_FOUND)
    assert api.listed_ids() == []


DEFAULT_RULES = [SSH, {"protocol": "icmp", "source_network": "0.0.0.0/0", "description": "Allow ICMP"}]
WEB = {"protocol": "tcp", "port_range": [8080, 8081], "source_network": "0.0.0.0/0", "description": "web"}


def test_put_firewall_rules_replaces_every_rule_and_get_shows_them(api: LambdaApi) -> None:
    """PUT /firewall-rules (spec 1.10 firewallRulesSet, research lambda.md section 2): the body `{"data":
    [FirewallRule]}` replaces all rules, the answer is the rules in force, and GET /firewall-rules shows the
    same. SkyPilot opens ports exactly so: it reads the rules, appends its own and PUTs the whole list
    (sky/provision/lambda_cloud/lambda_utils.py:329-333, open_ports)."""
    assert api.get("/firewall-rules").json() == {"data": DEFAULT_RULES}
    put = api.call("PUT", "/firewall-rules", json={"data": [*DEFAULT_RULES, WEB, PING]})
    assert put.status_code == 200, put.text
    expected = [*DEFAULT_RULES, WEB, {**PING, "source_network": "203.0.113.7/32"}]
    assert put.json() == {"data": expected}
    assert api.get("/firewall-rules").json() == {"data": expected}
    assert api.as_account(OTHER_ACCOUNT).get("/firewall-rules").json() == {"data": DEFAULT_RULES}  # per account
    emptied = api.call("PUT", "/firewall-rules", json={"data": []})
    assert emptied.json() == {"data": []} and api.get("/firewall-rules").json() == {"data": []}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"data": [{**SSH, "port_range": None}]}, "Error in request body at 'data[0]': port_range is required "
                                                  "for the tcp protocol."),
        ({"data": [SSH, {**PING, "port_range": [1, 2]}]}, "Error in request body at 'data[1]': port_range is not "
                                                         "allowed for the icmp protocol."),
        ({"data": [{**SSH, "source_network": "office"}]}, "Error in request body at 'data[0]': source_network "
                                                          "must be an IPv4 network in CIDR notation."),
    ],
)
def test_put_firewall_rules_refuses_a_malformed_rule_and_changes_nothing(api: LambdaApi, body: Any,
                                                                          message: str) -> None:
    """The spec's FirewallRule: port_range required but for icmp, where it is not allowed; source_network a
    CIDR (research lambda.md section 4). A refused PUT leaves the rules as they were."""
    response = api.call("PUT", "/firewall-rules", json=body)
    assert (response.status_code, response.json()) == (400, invalid_parameters(message))
    assert api.get("/firewall-rules").json() == {"data": DEFAULT_RULES}


def test_put_firewall_rules_without_data_is_invalid(api: LambdaApi) -> None:
    """`data` is required (FirewallRulesPutRequest, spec 1.10): the bare list is refused."""
    response = api.call("PUT", "/firewall-rules", json=[SSH])
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "global/invalid-parameters"
