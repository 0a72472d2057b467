"""Crusoe mock: attaching and detaching data disks on an existing VM, as client-go sends it
(`VMsApi.UpdateInstanceAttachDisks`, `UpdateInstanceDetachDisks`: POST `.../instances/{vm_id}/attach-disks`
`{"attach_disks": [DiskAttachment]}` and `.../detach-disks` `{"detach_disks": [id]}`, each answering
`{"operation"}`; crusoecloud/client-go swagger/v1alpha5 api_vms.go @e23c062, research crusoe.md §2). No stop is
needed: "Disk attach/detach does not require stopping" (terraform-provider-crusoe CHANGELOG, crusoe.md §3)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from mock_clouds.crusoe.testing import (
    L40S,
    POLL_DEADLINE,
    CrusoeEnv,
    create_vm,
    get_vm,
    start_env,
    vm_path,
    wait_operation,
)

ICELAND, EAST = "eu-iceland1-a", "us-east1-a"


def disks(env: CrusoeEnv) -> str:
    return f"/projects/{env.project}/storage/disks"


def new_disk(env: CrusoeEnv, name: str, location: str = ICELAND) -> dict[str, Any]:
    """A data disk, its create operation waited out (POST /storage/disks, GET .../operations/{id})."""
    response = env.client.post(disks(env), {"name": name, "size": "100GiB", "location": location,
                                            "type": "persistent-ssd"})
    assert response.status_code == 200, response.text
    op_path = f"{disks(env)}/operations/{response.json()['operation']['operation_id']}"
    deadline = time.monotonic() + POLL_DEADLINE
    while (op := env.client.get(op_path).json())["state"] == "IN_PROGRESS" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert op["state"] == "SUCCEEDED", op
    return dict(op["result"])


@pytest.fixture
def crusoe(mock_clouds_factory) -> CrusoeEnv:
    return start_env(mock_clouds_factory)


def _post(env: CrusoeEnv, vm_id: str, verb: str, body: dict[str, Any]) -> Any:
    return env.client.post(f"{vm_path(env.project, vm_id)}/{verb}-disks", body)


def _done(env: CrusoeEnv, response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    op = wait_operation(env.client, env.project, response.json()["operation"]["operation_id"])
    assert op["state"] == "SUCCEEDED", op
    return op


def _data_disks(env: CrusoeEnv, vm_id: str) -> list[str]:
    return [d["id"] for d in get_vm(env.client, env.project, vm_id)["disks"] if d["attachment_type"] == "data"]


def test_attach_and_detach_on_a_running_vm(crusoe: CrusoeEnv) -> None:
    vm = create_vm(crusoe.client, crusoe.project, "hot", type_=L40S, location=ICELAND)
    disk = new_disk(crusoe, "later")
    _done(crusoe, _post(crusoe, vm["id"], "attach",
                        {"attach_disks": [{"disk_id": disk["id"], "mode": "read-write", "attachment_type": "data"}]}))
    assert _data_disks(crusoe, vm["id"]) == [disk["id"]]
    assert get_vm(crusoe.client, crusoe.project, vm["id"])["state"] == "STATE_RUNNING"
    read = crusoe.client.get(f"{disks(crusoe)}/{disk['id']}").json()
    assert read["attached_to"] == [{"vm_id": vm["id"], "attachment_type": "data", "mode": "read-write"}]
    assert crusoe.client.delete(f"{disks(crusoe)}/{disk['id']}").status_code == 400  # attached

    _done(crusoe, _post(crusoe, vm["id"], "detach", {"detach_disks": [disk["id"]]}))
    assert _data_disks(crusoe, vm["id"]) == []
    assert crusoe.client.get(f"{disks(crusoe)}/{disk['id']}").json()["attached_to"] == []


def test_attach_to_a_stopped_vm(crusoe: CrusoeEnv) -> None:
    vm = create_vm(crusoe.client, crusoe.project, "cold", type_=L40S, location=ICELAND)
    stop = crusoe.client.patch(vm_path(crusoe.project, vm["id"]), {"action": "STOP"}).json()["operation"]
    wait_operation(crusoe.client, crusoe.project, stop["operation_id"])
    disk = new_disk(crusoe, "cold-data")
    _done(crusoe, _post(crusoe, vm["id"], "attach", {"attach_disks": [{"disk_id": disk["id"]}]}))
    assert _data_disks(crusoe, vm["id"]) == [disk["id"]]
    assert get_vm(crusoe.client, crusoe.project, vm["id"])["state"] == "STATE_SHUTOFF"


def test_refusals(crusoe: CrusoeEnv) -> None:
    """The create-time rules: a disk in another location, one attached elsewhere, an unknown one; detaching a
    disk the VM does not have; an empty list. All 400, nothing changed."""
    vm = create_vm(crusoe.client, crusoe.project, "picky", type_=L40S, location=ICELAND)
    other = create_vm(crusoe.client, crusoe.project, "other", type_=L40S, location=ICELAND)
    far, taken = new_disk(crusoe, "far", location=EAST), new_disk(crusoe, "taken")
    _done(crusoe, _post(crusoe, other["id"], "attach", {"attach_disks": [{"disk_id": taken["id"]}]}))
    for body in ({"attach_disks": [{"disk_id": far["id"]}]}, {"attach_disks": [{"disk_id": taken["id"]}]},
                 {"attach_disks": [{"disk_id": "44701f9e-845c-4005-9240-adee6401b8d3"}]}, {"attach_disks": []}):
        response = _post(crusoe, vm["id"], "attach", body)
        assert (response.status_code, response.json()["code"]) == (400, "bad_request"), body
    for body in ({"detach_disks": [taken["id"]]}, {"detach_disks": []}):
        assert _post(crusoe, vm["id"], "detach", body).status_code == 400, body
    assert _data_disks(crusoe, vm["id"]) == [] and _data_disks(crusoe, other["id"]) == [taken["id"]]
    missing = _post(crusoe, "44701f9e-845c-4005-9240-adee6401b8d3", "attach", {"attach_disks": []})
    assert missing.status_code == 404
