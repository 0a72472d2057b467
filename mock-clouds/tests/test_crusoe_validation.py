"""Bad input to the Crusoe mock always gets Crusoe's 4xx error body, never a 5xx."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mock_clouds.crusoe.testing import (
    CHEAP_RESERVATION,
    L40S,
    CrusoeEnv,
    create_body,
    create_vm,
    env_for,
    get_vm,
    instances_path,
    vm_path,
    wait_operation,
)
from mock_clouds.runner import MockClouds
from mock_clouds.testing import TEST_TIME_SCALE

PREFIX = "bad request, check request parameters: "


@pytest.fixture(scope="module")
def crusoe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CrusoeEnv]:
    with MockClouds(
        tmp_path_factory.mktemp("crusoe"), providers=("crusoe",), time_scale=TEST_TIME_SCALE
    ) as clouds:
        yield env_for(clouds)


@pytest.fixture(scope="module")
def vm(crusoe: CrusoeEnv) -> dict[str, Any]:
    return create_vm(crusoe.client, crusoe.project, "validation-target")


def bad_request(detail: str) -> dict[str, str]:
    return {"code": "bad_request", "message": PREFIX + detail}


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b"{not json", "JSON is malformed: object keys must be strings (byte 1)"),
        (b"", "request body is empty"),
        (b"[]", "Expected `object`, got `array`"),
        (b'{"name": 5}', "Expected `str`, got `int` - at `$.name`"),
        (
            b'{"name": "a", "type": "l40s-48gb.1x", "location": "eu-iceland1-a"}',
            "Object missing required field `ssh_public_key`",
        ),
    ],
)
def test_create_body_decoding_errors(crusoe: CrusoeEnv, body: bytes, detail: str) -> None:
    response = crusoe.client.request("POST", instances_path(crusoe.project), data=body)
    assert response.status_code == 400
    assert response.json() == bad_request(detail)


@pytest.mark.parametrize(
    ("overrides", "detail"),
    [
        ({"type": "a100.1x"}, "invalid vm type 'a100.1x'"),
        ({"location": "mars-1a"}, "invalid location 'mars-1a'"),
        ({"name": "  "}, "name must not be empty"),
        ({"ssh_public_key": "not a key"}, "invalid ssh_public_key"),
        ({"image": "windows:latest"}, "invalid image 'windows:latest'"),
        (
            {"image": "ubuntu22.04:latest", "custom_image": "x"},
            "either image or custom_image should be supplied, not both",
        ),
        (
            {"reservation_specification": {"selection_strategy": "cheapest"}},
            "Invalid enum value 'cheapest' - at `$.reservation_specification.selection_strategy`",
        ),
        (
            {"reservation_specification": {"selection_strategy": "on_demand", "id": CHEAP_RESERVATION}},
            "reservation_specification: id and selection_strategy are mutually exclusive",
        ),
        ({"install_crusoe_watch_agent": "yes"}, "Expected `bool`, got `str` - at `$.install_crusoe_watch_agent`"),
        ({"network_interfaces": [{"subnet": "default"}]}, "invalid subnet id 'default': not a UUID"),
        ({"commitment_period": 12}, "commitment is no longer supported"),
    ],
)
def test_create_field_validation(crusoe: CrusoeEnv, overrides: dict[str, Any], detail: str) -> None:
    response = crusoe.client.post(instances_path(crusoe.project), {**create_body("invalid"), **overrides})
    assert response.status_code == 400
    assert response.json() == bad_request(detail)


def test_duplicate_name_in_a_project_is_rejected(crusoe: CrusoeEnv, vm: dict[str, Any]) -> None:
    response = crusoe.client.post(instances_path(crusoe.project), create_body(vm["name"]))
    assert response.status_code == 400
    assert response.json() == bad_request(f"an instance named {vm['name']!r} already exists in this project")


@pytest.mark.parametrize(
    "body",
    [{"state": "stopped"}, {"action": "stop"}, {"action": "SHUTDOWN"}, {"action": 3}, {}],
)
def test_invalid_action(crusoe: CrusoeEnv, vm: dict[str, Any], body: dict[str, Any]) -> None:
    response = crusoe.client.patch(vm_path(crusoe.project, vm["id"]), body)
    assert response.status_code == 400
    if body.get("action") == 3:
        assert response.json() == bad_request("Expected `str`, got `int` - at `$.action`")
    else:
        assert response.json() == bad_request("invalid action")


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"action": "RESERVE"}, "reservation_id is required for RESERVE"),
        ({"action": "RESERVE", "reservation_id": "x"}, "invalid reservation id 'x': not a UUID"),
        ({"action": "UPDATE"}, "nothing to update: give type, maintenance_policy or network_interfaces"),
        ({"action": "UPDATE", "type": "l40s-48gb.3x"}, "invalid vm type 'l40s-48gb.3x'"),
        ({"action": "START"}, "cannot START instance {id} in state STATE_RUNNING"),
    ],
)
def test_patch_validation(crusoe: CrusoeEnv, vm: dict[str, Any], body: dict[str, Any], detail: str) -> None:
    response = crusoe.client.patch(vm_path(crusoe.project, vm["id"]), body)
    assert response.status_code == 400
    assert response.json() == bad_request(detail.format(id=vm["id"]))


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_malformed_vm_id_is_a_bad_request(crusoe: CrusoeEnv, method: str) -> None:
    response = crusoe.client.request(method, vm_path(crusoe.project, "not-a-uuid"), json={"action": "STOP"})
    assert response.status_code == 400
    assert response.json() == bad_request("invalid vm id 'not-a-uuid': not a UUID")


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_unknown_vm_is_not_found(crusoe: CrusoeEnv, method: str) -> None:
    vm_id = "11111111-2222-4333-8444-555555555555"
    response = crusoe.client.request(method, vm_path(crusoe.project, vm_id), json={"action": "STOP"})
    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "message": f"instance {vm_id} not found"}


def test_malformed_project_id_is_a_bad_request(crusoe: CrusoeEnv) -> None:
    response = crusoe.client.get(instances_path("default"))
    assert response.status_code == 400
    assert response.json() == bad_request("invalid project id 'default': not a UUID")


def test_huge_body_is_rejected_with_413(crusoe: CrusoeEnv) -> None:
    body = b'{"name": "' + b"x" * (1 << 20) + b'"}'
    response = crusoe.client.request("POST", instances_path(crusoe.project), data=body)
    assert response.status_code == 413
    assert response.json() == bad_request("request body larger than 1048576 bytes")


def test_unknown_path_and_wrong_method(crusoe: CrusoeEnv) -> None:
    unknown = crusoe.client.get("/compute/nothing-here")
    assert unknown.status_code == 404
    assert unknown.json() == {"code": "not_found", "message": "no such path /v1alpha5/compute/nothing-here"}
    unversioned = crusoe.client.get("/locations", prefix="/v2")
    assert unversioned.status_code == 404 and unversioned.json()["code"] == "not_found"
    wrong_method = crusoe.client.delete("/locations")
    assert wrong_method.status_code == 405
    assert wrong_method.json() == {
        "code": "method_not_allowed",
        "message": "method DELETE is not allowed on this path",
    }


def test_bad_query_parameters(crusoe: CrusoeEnv) -> None:
    path = instances_path(crusoe.project)
    cases = {
        ("limit", "0"): "invalid limit '0': must be a positive integer",
        ("limit", "ten"): "invalid limit 'ten': must be a positive integer",
        ("sort", "-name"): "invalid sort '-name': use one of created_at, name",
        ("next_token", "%%%"): "invalid next_token",
        ("prev_token", "bm9wZQ"): "invalid prev_token",
    }
    for (name, value), detail in cases.items():
        response = crusoe.client.get(path, params={name: value})
        assert response.status_code == 400, (name, value)
        assert response.json() == bad_request(detail)
    projects = crusoe.client.get(
        "/organizations/projects", params={"skip_loading_project_resources": "maybe"}
    )
    assert projects.json() == bad_request("invalid skip_loading_project_resources 'maybe': must be a boolean")


def test_the_server_survives_all_of_it(crusoe: CrusoeEnv) -> None:
    assert crusoe.client.get(instances_path(crusoe.project)).status_code == 200
    assert L40S in {
        t["product_name"]
        for t in crusoe.client.get(f"/projects/{crusoe.project}/compute/vms/types").json()["items"]
    }


def test_nulls_and_unknown_fields_are_read_as_go_reads_them(crusoe: CrusoeEnv) -> None:
    """The real server is written in Go: `null` leaves a field at its zero value and unknown fields are ignored,
    so a body with both is accepted and means the same as one without them."""
    body = create_body(
        "go-zero-values",
        image=None,
        custom_image=None,
        startup_script=None,
        shutdown_script=None,
        install_crusoe_watch_agent=None,
        crusoe_watch_agent_install_mode=None,
        reservation_specification=None,
        virtualization_features=None,
        maintenance_policy=None,
        network_interfaces=[{"subnet": "", "ips": None, "id": "", "name": ""}],
        disks=None,
        host_channel_adapters=None,
        colour="blue",
    )
    op = crusoe.client.post(instances_path(crusoe.project), body)
    assert op.status_code == 200, op.text
    created = wait_operation(crusoe.client, crusoe.project, op.json()["operation"]["operation_id"])
    assert created["state"] == "SUCCEEDED"
    vm = get_vm(crusoe.client, crusoe.project, created["metadata"]["id"])
    assert (vm["maintenance_policy"], vm["state"]) == ("unspecified", "STATE_RUNNING")
    assert vm["network_interfaces"][0]["ips"][0]["public_ipv4"]["type"] == "dynamic"


def test_empty_public_ipv4_type_means_dynamic(crusoe: CrusoeEnv) -> None:
    nic = {"subnet": "", "ips": [{"private_ipv4": None, "public_ipv4": {"address": "", "id": "", "type": ""}}]}
    vm = create_vm(crusoe.client, crusoe.project, "empty-ip-type", network_interfaces=[nic])
    assert vm["network_interfaces"][0]["ips"][0]["public_ipv4"]["type"] == "dynamic"


def test_maintenance_policy_is_a_free_string(crusoe: CrusoeEnv) -> None:
    vm = create_vm(crusoe.client, crusoe.project, "free-policy", maintenance_policy="live-migrate")
    assert vm["maintenance_policy"] == "live-migrate"


def test_patch_ignores_unknown_fields_and_nulls(crusoe: CrusoeEnv) -> None:
    vm = create_vm(crusoe.client, crusoe.project, "patch-nulls")
    body = {"action": "STOP", "colour": 1, "reservation_id": None, "network_interfaces": None}
    stopped = crusoe.client.patch(vm_path(crusoe.project, vm["id"]), body)
    assert stopped.status_code == 200, stopped.text
    op = wait_operation(crusoe.client, crusoe.project, stopped.json()["operation"]["operation_id"])
    assert op["state"] == "SUCCEEDED" and op["result"]["state"] == "STATE_SHUTOFF"
