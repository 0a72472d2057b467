"""Lambda Cloud mock: the instance lifecycle over the wire (launch, boot, rename, restart, terminate), failed
launches, all-or-nothing terminate/restart and account isolation."""

from __future__ import annotations

import pytest
import requests
from mock_clouds.core.models import WorldState
from mock_clouds.lambda_cloud.testing import (
    HEX32,
    INSTANCE_NOT_FOUND,
    OTHER_ACCOUNT,
    LambdaApi,
    invalid_parameters,
)

ACTIONS = ("migrate", "rebuild", "restart", "cold_reboot", "terminate")
REQUIRED_FIELDS = {"id", "status", "ssh_key_names", "file_system_names", "region", "instance_type", "actions"}
UNKNOWN_ID = "0" * 32


def unavailable(code: str, description: str) -> dict[str, object]:
    return {"available": False, "reason_code": code, "reason_description": description}


@pytest.fixture
def api(mock_clouds_factory) -> LambdaApi:
    return LambdaApi.start(mock_clouds_factory)


@pytest.fixture
def slow_api(mock_clouds_factory) -> LambdaApi:
    """Create takes 3.6 s and restart 1.2 s, so transitional states can be observed on a slow machine."""
    return LambdaApi.start(mock_clouds_factory, time_scale=0.02)


def test_full_lifecycle(slow_api: LambdaApi) -> None:
    api = slow_api
    response = api.post(
        "/instance-operations/launch",
        {
            "region_name": "us-east-1",
            "instance_type_name": "gpu_1x_a10",
            "ssh_key_names": ["default"],
            "name": "trainer",
            "quantity": 1,
            "tags": [{"key": "team", "value": "ml"}],
        },
    )
    assert response.status_code == 200
    (instance_id,) = response.json()["data"]["instance_ids"]
    assert HEX32.match(instance_id)

    booting = api.instance(instance_id)
    assert booting == {
        "id": instance_id,
        "name": "trainer",
        "status": "booting",
        "ssh_key_names": ["default"],
        "file_system_names": [],
        "region": {"name": "us-east-1", "description": "Virginia, USA"},
        "instance_type": {
            "name": "gpu_1x_a10",
            "description": "1x A10 (24 GB PCIe)",
            "gpu_description": "A10 (24 GB PCIe)",
            "price_cents_per_hour": 75,
            "specs": {"vcpus": 30, "memory_gib": 200, "storage_gib": 1400, "gpus": 1},
        },
        "is_reserved": False,
        "actions": {
            a: unavailable("vm-has-not-launched", "The instance has not launched yet.") for a in ACTIONS
        },
        "tags": [{"key": "team", "value": "ml"}],
    }

    active = api.wait_status(instance_id, "active")
    assert active["actions"] == {a: {"available": True} for a in ACTIONS}
    assert active["hostname"] == active["ip"]
    assert active["private_ip"].startswith("10.")
    assert active["jupyter_url"] == (
        f"https://jupyter-{instance_id}.lambdaspaces.com/?token={active['jupyter_token']}"
    )

    renamed = api.post(f"/instances/{instance_id}", {"name": "renamed"})
    assert renamed.status_code == 200
    assert renamed.json()["data"]["name"] == "renamed"
    assert api.instance(instance_id)["name"] == "renamed"

    restarted = api.post("/instance-operations/restart", {"instance_ids": [instance_id]})
    assert restarted.status_code == 200
    (instance,) = restarted.json()["data"]["restarted_instances"]
    assert instance["status"] == "active"
    assert instance["actions"]["restart"] == unavailable(
        "vm-action-in-progress", "A restart of the instance is in progress."
    )
    assert instance["actions"]["terminate"] == {"available": True}
    api.wait_status(instance_id, "active")

    terminated = api.post("/instance-operations/terminate", {"instance_ids": [instance_id]})
    assert terminated.status_code == 200
    (instance,) = terminated.json()["data"]["terminated_instances"]
    assert instance["status"] == "terminating"
    assert instance["ip"] == active["ip"]
    assert instance["actions"]["terminate"]["reason_code"] == "vm-is-terminating"

    api.wait_status(instance_id, "terminated")
    assert instance_id not in api.listed_ids()


def test_list_and_get_return_the_same_objects(api: LambdaApi) -> None:
    first, second = api.launch(name="a"), api.launch(name="b")
    expected = [api.wait_status(first, "active"), api.wait_status(second, "active")]
    listed = api.get("/instances").json()["data"]
    assert listed == expected
    assert all(set(instance) >= REQUIRED_FIELDS for instance in listed)
    assert len({i["ip"] for i in listed}) == 2


def test_unknown_and_malformed_instance_ids(api: LambdaApi) -> None:
    response = api.get(f"/instances/{UNKNOWN_ID}")
    assert (response.status_code, response.json()) == (404, INSTANCE_NOT_FOUND)
    response = api.post("/instance-operations/terminate", {"instance_ids": [UNKNOWN_ID]})
    assert (response.status_code, response.json()) == (404, INSTANCE_NOT_FOUND)
    response = api.post("/instance-operations/restart", {"instance_ids": ["not-an-id"]})
    assert (response.status_code, response.json()) == (404, INSTANCE_NOT_FOUND)


def test_terminating_twice_is_refused(api: LambdaApi) -> None:
    instance_id = api.launch()
    assert api.post("/instance-operations/terminate", {"instance_ids": [instance_id]}).status_code == 200
    again = api.post("/instance-operations/terminate", {"instance_ids": [instance_id]})
    assert again.status_code == 400
    assert again.json() == invalid_parameters(f"Instance '{instance_id}' is already terminating.")
    api.wait_status(instance_id, "terminated")
    after = api.post("/instance-operations/terminate", {"instance_ids": [instance_id]})
    assert (after.status_code, after.json()) == (
        400, invalid_parameters(f"Instance '{instance_id}' is already terminated.")
    )


def test_empty_instance_ids_act_on_nothing(api: LambdaApi) -> None:
    terminated = api.post("/instance-operations/terminate", {"instance_ids": []})
    restarted = api.post("/instance-operations/restart", {"instance_ids": []})
    assert (terminated.status_code, terminated.json()) == (200, {"data": {"terminated_instances": []}})
    assert (restarted.status_code, restarted.json()) == (200, {"data": {"restarted_instances": []}})


def test_unknown_request_fields_are_ignored(api: LambdaApi) -> None:
    response = api.post("/instance-operations/terminate", {"instance_ids": [], "color": "blue"})
    assert response.status_code == 200


def test_terminate_is_all_or_nothing(api: LambdaApi) -> None:
    keep = api.launch()
    api.wait_status(keep, "active")
    response = api.post("/instance-operations/terminate", {"instance_ids": [keep, UNKNOWN_ID]})
    assert (response.status_code, response.json()) == (404, INSTANCE_NOT_FOUND)
    assert api.instance(keep)["status"] == "active"


def test_terminate_refuses_a_batch_holding_an_instance_already_terminating(api: LambdaApi) -> None:
    gone, keep = api.launch(), api.launch()
    assert api.post("/instance-operations/terminate", {"instance_ids": [gone]}).status_code == 200
    response = api.post("/instance-operations/terminate", {"instance_ids": [keep, gone]})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "global/invalid-parameters"
    assert api.instance(keep)["status"] in ("booting", "active")  # nothing in the request was terminated


def test_restart_requires_an_active_instance(slow_api: LambdaApi) -> None:
    instance_id = slow_api.launch()
    response = slow_api.post("/instance-operations/restart", {"instance_ids": [instance_id]})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "global/conflict"
    assert set(response.json()["error"]) == {"code", "message"}
    assert slow_api.instance(instance_id)["status"] == "booting"


def test_rename_validates_the_name(api: LambdaApi) -> None:
    instance_id = api.launch(name="keep")
    response = api.post(f"/instances/{instance_id}", {"name": "x" * 65})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "global/invalid-parameters"
    assert api.instance(instance_id)["name"] == "keep"
    unnamed = api.post(f"/instances/{instance_id}", {"name": ""}).json()["data"]
    assert "name" not in unnamed


def test_a_failed_launch_leaves_an_unhealthy_instance(mock_clouds_factory) -> None:
    def always_fail(state: WorldState) -> None:
        state.providers["lambda"].faults.op_failure_rate = 1.0

    api = LambdaApi.start(mock_clouds_factory, configure=always_fail)
    instance_id = api.launch()
    unhealthy = api.wait_status(instance_id, "unhealthy")
    assert "ip" not in unhealthy
    assert unhealthy["actions"]["restart"] == unavailable(
        "vm-has-not-launched", "The instance failed to launch."
    )
    assert unhealthy["actions"]["terminate"] == {"available": True}
    assert api.post("/instance-operations/terminate", {"instance_ids": [instance_id]}).status_code == 200
    api.wait_status(instance_id, "terminated")


def test_accounts_are_isolated(api: LambdaApi) -> None:
    other = api.as_account(OTHER_ACCOUNT)
    mine = api.launch()
    theirs = other.launch()
    assert api.listed_ids() == [mine]
    assert other.listed_ids() == [theirs]
    for response in (
        other.get(f"/instances/{mine}"),
        other.post(f"/instances/{mine}", {"name": "stolen"}),
        other.post("/instance-operations/terminate", {"instance_ids": [mine]}),
        other.post("/instance-operations/restart", {"instance_ids": [mine]}),
    ):
        assert (response.status_code, response.json()) == (404, INSTANCE_NOT_FOUND)
    assert api.instance(mine)["status"] in ("booting", "active")
    assert "name" not in api.instance(mine)


def test_a_preempted_instance_reports_preempted_and_can_be_terminated(api: LambdaApi) -> None:
    """`preempted` (InstanceStatus since 1.8) appears once the cloud takes the capacity back; the mock's admin
    API triggers it."""
    instance_id = api.launch()
    api.wait_status(instance_id, "active")
    admin = api.clouds.endpoints["admin"]
    headers = {"Authorization": f"Bearer {admin['token']}"}
    url = f"{admin['url']}/preempt/lambda/{instance_id}"
    assert requests.post(url, headers=headers, timeout=5).json()["preempted"] is True
    assert api.get(f"/instances/{instance_id}").json()["data"]["status"] == "preempted"
    again = requests.post(url, headers=headers, timeout=5)
    assert again.status_code == 409  # only a running instance can be preempted
    restart = api.post("/instance-operations/restart", {"instance_ids": [instance_id]})
    assert restart.status_code == 409 and "status preempted" in restart.json()["error"]["message"]
    assert api.post("/instance-operations/terminate", {"instance_ids": [instance_id]}).status_code == 200
    api.wait_status(instance_id, "terminated")


def _visible_after(seconds: float):
    def configure(state) -> None:
        state.providers["lambda"].extra["visibility_delay"] = seconds

    return configure


def test_a_new_instance_is_invisible_for_the_visibility_delay(mock_clouds_factory) -> None:
    """`visibility_delay` (scenario [lambda.extra]): a new instance is 404 `global/object-does-not-exist` by id
    and absent from the listing until the delay has passed; dstack waits through this, treating an instance its
    listing does not show as not ready yet (backends/lambdalabs/compute.py, _get_instance_info; research
    lambda.md section 7). At time scale 1 a 3600 s delay cannot pass during the test; a delay of 0 shows it at
    once."""
    from mock_clouds.lambda_cloud.testing import INSTANCE_NOT_FOUND

    hidden = LambdaApi.start(mock_clouds_factory, time_scale=1.0, configure=_visible_after(3600.0))
    instance_id = hidden.launch()
    response = hidden.get(f"/instances/{instance_id}")
    assert (response.status_code, response.json()) == (404, INSTANCE_NOT_FOUND)
    assert hidden.listed_ids() == []

    shown = LambdaApi.start(mock_clouds_factory, time_scale=1.0, configure=_visible_after(0.0))
    launched = shown.launch()
    assert shown.instance(launched)["status"] == "booting" and shown.listed_ids() == [launched]
