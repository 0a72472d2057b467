"""Crusoe VM lifecycle over the wire: create, operations, power actions, update, delete, and the VM shape."""

from __future__ import annotations

import re

import pytest
from mock_clouds.core.models import CreateFailure, Provider, WorldState
from mock_clouds.core.placement import ReservationChoice
from mock_clouds.crusoe.testing import (
    H100,
    L40S,
    L40S_8X,
    CrusoeEnv,
    act,
    create_vm,
    get_vm,
    instances_path,
    start_create,
    start_env,
    vm_path,
    wait_operation,
)

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
OP_ID = re.compile(r"^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$")
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.fixture
def crusoe(mock_clouds_factory) -> CrusoeEnv:
    return start_env(mock_clouds_factory)


def slow_operations(state: WorldState) -> None:
    """Every operation takes ~100 s even at the test time scale, so in-progress states can be observed."""
    durations = state.providers["crusoe"].durations
    for kind in ("create", "start", "stop", "reboot", "reset", "restart", "update"):
        setattr(durations, kind, 50_000.0)


def test_create_returns_an_in_progress_operation_with_the_vm_id(mock_clouds_factory) -> None:
    env = start_env(mock_clouds_factory, configure=slow_operations)
    response = env.client.post(
        instances_path(env.project),
        {
            "name": "slow",
            "type": L40S,
            "location": "eu-iceland1-a",
            "ssh_public_key": "ssh-rsa AAAAB3Nza test",
        },
    )
    assert response.status_code == 200
    assert list(response.json()) == ["operation"]
    op = response.json()["operation"]
    assert set(op) == {"operation_id", "state", "metadata", "started_at", "completed_at"}
    assert OP_ID.match(op["operation_id"]) and UUID.match(op["metadata"]["id"])
    assert (op["state"], op["completed_at"]) == ("IN_PROGRESS", "")
    assert STAMP.match(op["started_at"])
    vm = get_vm(env.client, env.project, op["metadata"]["id"])
    assert vm["state"] == "STATE_INITIALIZING"
    assert wait_operation(env.client, env.project, op["operation_id"])["state"] == "IN_PROGRESS"


def test_running_vm_has_the_full_instance_shape(crusoe: CrusoeEnv) -> None:
    vm = create_vm(crusoe.client, crusoe.project, "shape-check", type_=L40S, image="ubuntu22.04:latest")
    assert vm == get_vm(crusoe.client, crusoe.project, vm["id"])
    assert set(vm) == {
        "id",
        "project_id",
        "name",
        "type",
        "location",
        "state",
        "created_at",
        "updated_at",
        "billing_type",
        "reservation_id",
        "maintenance_policy",
        "disks",
        "network_interfaces",
        "host_channel_adapters",
        "instance_group_id",
        "instance_template_id",
        "nvlink_domain_id",
        "pod_id",
        "commitment_period",
        "commitment_end",
        "virtualization_features",
    }
    assert (vm["project_id"], vm["name"], vm["type"], vm["location"]) == (
        crusoe.project,
        "shape-check",
        L40S,
        "eu-iceland1-a",
    )
    assert (vm["state"], vm["billing_type"], vm["reservation_id"]) == ("STATE_RUNNING", "On-demand", "")
    assert vm["maintenance_policy"] == "unspecified"
    assert vm["virtualization_features"] == {"nested_virtualization": False}
    assert STAMP.match(vm["created_at"]) and STAMP.match(vm["updated_at"])
    (disk,) = vm["disks"]
    assert (disk["attachment_type"], disk["mode"], disk["type"], disk["location"]) == (
        "os",
        "read-write",
        "persistent-ssd",
        "eu-iceland1-a",
    )
    assert isinstance(disk["block_size"], int) and disk["size"].endswith("GiB")
    (nic,) = vm["network_interfaces"]
    (ips,) = nic["ips"]
    assert ips["private_ipv4"]["address"].startswith("172.27.")
    assert ips["public_ipv4"]["type"] == "dynamic" and UUID.match(ips["public_ipv4"]["id"])
    assert nic["interface_type"] == "ethernet" and UUID.match(nic["subnet"]) and UUID.match(nic["network"])
    assert vm["host_channel_adapters"] == []


def test_infiniband_partition_is_echoed_in_host_channel_adapters(crusoe: CrusoeEnv) -> None:
    """The partition must exist on the location's IB network (POST /networking/ib-partitions, as dstack makes
    one before an IB create: backends/crusoe/compute.py create_placement_group)."""
    networks = crusoe.client.get(f"/projects/{crusoe.project}/networking/ib-networks").json()["items"]
    east = next(n["id"] for n in networks if n["location"] == "us-east1-a")
    partition = crusoe.client.post(f"/projects/{crusoe.project}/networking/ib-partitions",
                                   {"name": "echo", "ib_network_id": east}).json()["id"]
    vm = create_vm(
        crusoe.client,
        crusoe.project,
        "ib",
        type_=H100,
        location="us-east1-a",
        host_channel_adapters=[{"transport_partition_id": partition}],
    )
    (hca,) = vm["host_channel_adapters"]
    assert hca["type"] == "infiniband"
    assert hca["transport_partition_id"] == hca["ib_partition_id"] == partition


def test_full_lifecycle_create_stop_start_delete(crusoe: CrusoeEnv) -> None:
    client, project = crusoe.client, crusoe.project
    vm = create_vm(client, project, "lifecycle")
    listed = client.get(instances_path(project)).json()["items"]
    assert [v["id"] for v in listed] == [vm["id"]]

    stopped = act(client, project, vm["id"], "STOP")
    assert stopped["state"] == "SUCCEEDED" and stopped["result"]["state"] == "STATE_SHUTOFF"
    assert get_vm(client, project, vm["id"])["state"] == "STATE_SHUTOFF"
    public = get_vm(client, project, vm["id"])["network_interfaces"][0]["ips"][0]["public_ipv4"]
    assert public["type"] == "dynamic" and public["address"] == ""  # released on stop

    started = act(client, project, vm["id"], "START")
    assert started["result"]["state"] == "STATE_RUNNING"
    old_ip = vm["network_interfaces"][0]["ips"][0]["public_ipv4"]["address"]
    new_ip = started["result"]["network_interfaces"][0]["ips"][0]["public_ipv4"]["address"]
    assert new_ip != old_ip  # dynamic public IPs change on stop/start

    response = client.delete(vm_path(project, vm["id"]))
    assert response.status_code == 200
    deleted = wait_operation(client, project, response.json()["operation"]["operation_id"])
    assert deleted["state"] == "SUCCEEDED" and deleted["result"] == {}
    gone = client.get(vm_path(project, vm["id"]))
    assert gone.status_code == 404
    assert gone.json() == {"code": "not_found", "message": f"instance {vm['id']} not found"}
    assert client.get(instances_path(project)).json()["items"] == []


@pytest.mark.parametrize("action", ["REBOOT", "RESET", "RESTART"])
def test_reboot_reset_and_restart_end_running(crusoe: CrusoeEnv, action: str) -> None:
    vm = create_vm(crusoe.client, crusoe.project, f"power-{action.lower()}")
    op = act(crusoe.client, crusoe.project, vm["id"], action)
    assert op["state"] == "SUCCEEDED"
    assert op["result"]["state"] == "STATE_RUNNING"
    assert get_vm(crusoe.client, crusoe.project, vm["id"])["state"] == "STATE_RUNNING"


def test_in_progress_states_of_stop_and_delete(mock_clouds_factory) -> None:
    env = start_env(mock_clouds_factory)
    vm = create_vm(env.client, env.project, "observed")
    with env.world.tx():
        env.world.state.providers["crusoe"].durations.stop = 50_000.0
    env.client.patch(vm_path(env.project, vm["id"]), {"action": "STOP"})
    assert get_vm(env.client, env.project, vm["id"])["state"] == "STATE_SHUTDOWN"
    busy = env.client.patch(vm_path(env.project, vm["id"]), {"action": "START"})
    assert busy.status_code == 400 and busy.json()["code"] == "bad_request"
    with env.world.tx():
        env.world.state.providers["crusoe"].durations.delete = 50_000.0
    env.client.delete(vm_path(env.project, vm["id"]))
    assert get_vm(env.client, env.project, vm["id"])["state"] == "STATE_DELETING"


def test_delete_of_a_creating_vm_aborts_the_create(mock_clouds_factory) -> None:
    env = start_env(mock_clouds_factory, configure=slow_operations)
    create = start_create(env.client, env.project, "abandoned")
    deleted = env.client.delete(vm_path(env.project, create["metadata"]["id"]))
    assert deleted.status_code == 200
    assert (
        wait_operation(env.client, env.project, deleted.json()["operation"]["operation_id"])["state"]
        == "SUCCEEDED"
    )
    aborted = wait_operation(env.client, env.project, create["operation_id"])
    assert aborted["state"] == "FAILED" and aborted["result"]["code"] == "aborted"


def test_resize_within_the_family_while_stopped_keeps_it_stopped(crusoe: CrusoeEnv) -> None:
    client, project = crusoe.client, crusoe.project
    vm = create_vm(client, project, "resize")
    running = client.patch(vm_path(project, vm["id"]), {"action": "UPDATE", "type": L40S_8X})
    assert running.status_code == 400
    assert running.json() == {
        "code": "bad_request",
        "message": "bad request, check request parameters: the instance must be stopped to change its type",
    }
    act(client, project, vm["id"], "STOP")
    other_family = client.patch(vm_path(project, vm["id"]), {"action": "UPDATE", "type": H100})
    assert other_family.status_code == 400
    updated = act(client, project, vm["id"], "UPDATE", type=L40S_8X)
    assert updated["state"] == "SUCCEEDED" and updated["result"]["type"] == L40S_8X
    after = get_vm(client, project, vm["id"])
    assert (after["type"], after["state"]) == (L40S_8X, "STATE_SHUTOFF")
    assert act(client, project, vm["id"], "START")["result"]["type"] == L40S_8X


def test_update_maintenance_policy(crusoe: CrusoeEnv) -> None:
    vm = create_vm(crusoe.client, crusoe.project, "policy")
    op = act(crusoe.client, crusoe.project, vm["id"], "UPDATE", maintenance_policy="stop-vm")
    assert op["result"]["maintenance_policy"] == "stop-vm"
    assert op["result"]["state"] == "STATE_RUNNING"


def test_operation_of_unknown_or_foreign_id_is_forbidden(crusoe: CrusoeEnv) -> None:
    unknown = "F6EF489C-086E-458D-B812-7962964A28C9"
    response = crusoe.client.get(f"{instances_path(crusoe.project)}/operations/{unknown}")
    assert response.status_code == 403
    assert response.json() == {
        "code": "unauthorized",
        "message": f"operation {unknown} does not exist, was not initiated by this user, or has expired",
    }
    op = start_create(crusoe.client, crusoe.research_project, "elsewhere")
    other_project = crusoe.client.get(f"{instances_path(crusoe.project)}/operations/{op['operation_id']}")
    assert other_project.status_code == 403
    other_org = crusoe.other.get(f"{instances_path(crusoe.other_project)}/operations/{op['operation_id']}")
    assert other_org.status_code == 403


def test_vm_of_another_project_is_not_found(crusoe: CrusoeEnv) -> None:
    vm = create_vm(crusoe.client, crusoe.research_project, "hidden")
    assert crusoe.client.get(vm_path(crusoe.project, vm["id"])).status_code == 404
    assert crusoe.other.get(vm_path(crusoe.other_project, vm["id"])).status_code == 404
    assert crusoe.other.delete(vm_path(crusoe.other_project, vm["id"])).status_code == 404
    assert crusoe.other.get(instances_path(crusoe.other_project)).json()["items"] == []


def test_operations_list_filters_by_resource_and_state(crusoe: CrusoeEnv) -> None:
    client, project = crusoe.client, crusoe.project
    first = create_vm(client, project, "ops-a")
    second = create_vm(client, project, "ops-b")
    act(client, project, first["id"], "STOP")
    path = f"{instances_path(project)}/operations"
    for_first = client.get(path, params={"resource_id": first["id"]}).json()["items"]
    assert [op["metadata"]["id"] for op in for_first] == [first["id"], first["id"]]
    assert all(op["state"] == "SUCCEEDED" for op in for_first)
    everything = client.get(path, params={"state": "SUCCEEDED,FAILED"}).json()["items"]
    assert {op["metadata"]["id"] for op in everything} == {first["id"], second["id"]}
    assert client.get(path, params={"state": "IN_PROGRESS"}).json() == {"items": []}
    bad = client.get(path, params={"state": "DONE"})
    assert bad.status_code == 400
    assert bad.json()["message"] == (
        "bad request, check request parameters: invalid state 'DONE': use IN_PROGRESS, SUCCEEDED, FAILED"
    )


def test_public_ip_type_update_needs_a_running_vm(crusoe: CrusoeEnv) -> None:
    vm = create_vm(crusoe.client, crusoe.project, "static-ip")
    static = [{"ips": [{"public_ipv4": {"type": "static"}}]}]
    op = act(crusoe.client, crusoe.project, vm["id"], "UPDATE", network_interfaces=static)
    assert op["result"]["network_interfaces"][0]["ips"][0]["public_ipv4"]["type"] == "static"
    act(crusoe.client, crusoe.project, vm["id"], "STOP")
    refused = crusoe.client.patch(
        vm_path(crusoe.project, vm["id"]), {"action": "UPDATE", "network_interfaces": static}
    )
    assert refused.json() == {
        "code": "bad_request",
        "message": "bad request, check request parameters: "
        "the instance must be running to update its network interfaces",
    }


def test_vm_created_directly_in_the_world_still_renders(crusoe: CrusoeEnv) -> None:
    with crusoe.world.tx():
        vm, _ = crusoe.world.create_vm(
            Provider.CRUSOE,
            scope=crusoe.project,
            region="eu-iceland1-a",
            shape=L40S,
            name="seeded",
            choice=ReservationChoice(),
            on_failure=CreateFailure.REMOVE,
        )
    rendered = get_vm(crusoe.client, crusoe.project, vm.id)
    assert (rendered["name"], rendered["type"]) == ("seeded", L40S)
    assert rendered["network_interfaces"][0]["ips"][0]["private_ipv4"]["address"].startswith("172.27.")
