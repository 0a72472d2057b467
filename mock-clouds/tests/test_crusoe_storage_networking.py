"""Crusoe endpoints peers call besides VMs (research real-clouds.md Part 2 D8): data disks and their operations,
IB networks and partitions, VPC subnets, SSH keys and organisation quotas, at client-go's paths and shapes
(crusoecloud/client-go swagger/v1alpha5 api_disks.go, api_disk_operations.go, api_ib_networks.go,
api_ib_partitions.go, api_vpc_subnets.go, api_ssh_keys.go, api_quotas.go @e23c062)."""

from __future__ import annotations

import ipaddress
import time
from typing import Any

import pytest
from mock_clouds.crusoe.testing import (
    H100,
    L40S,
    POLL_DEADLINE,
    SSH_KEY,
    CrusoeEnv,
    create_vm,
    get_vm,
    instances_path,
    start_env,
    vm_path,
    wait_operation,
)

ICELAND = "eu-iceland1-a"
EAST = "us-east1-a"
DISK_FIELDS = {"id", "name", "type", "size", "location", "block_size", "created_at", "updated_at", "serial_number",
               "attached_to"}


@pytest.fixture
def crusoe(mock_clouds_factory) -> CrusoeEnv:
    return start_env(mock_clouds_factory)


def disks(env: CrusoeEnv) -> str:
    return f"/projects/{env.project}/storage/disks"


def wait_disk_op(env: CrusoeEnv, op_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + POLL_DEADLINE
    while True:
        op: dict[str, Any] = env.client.get(f"{disks(env)}/operations/{op_id}").json()
        if op["state"] != "IN_PROGRESS" or time.monotonic() > deadline:
            return op
        time.sleep(0.02)


def new_disk(env: CrusoeEnv, name: str, location: str = ICELAND) -> dict[str, Any]:
    response = env.client.post(disks(env), {"name": name, "size": "100GiB", "location": location,
                                            "type": "persistent-ssd", "block_size": 4096})
    assert response.status_code == 200, response.text
    op = response.json()["operation"]
    assert (op["state"], set(op)) == ("IN_PROGRESS", {"operation_id", "state", "metadata", "started_at",
                                                       "completed_at"})
    done = wait_disk_op(env, op["operation_id"])
    assert done["state"] == "SUCCEEDED" and done["result"]["id"] == op["metadata"]["id"]
    return dict(done["result"])


def test_disk_create_list_get_delete(crusoe: CrusoeEnv) -> None:
    """dstack creates a data disk (POST /storage/disks), polls /storage/disks/operations/{id} and deletes it after
    the VM (backends/crusoe/compute.py create_instance, terminate_instance)."""
    disk = new_disk(crusoe, "data-1")
    assert set(disk) == DISK_FIELDS and (disk["size"], disk["attached_to"]) == ("100GiB", [])
    assert [d["id"] for d in crusoe.client.get(disks(crusoe), params={"disk_names": "data-1"}).json()["items"]] == [
        disk["id"]]
    assert crusoe.client.get(f"{disks(crusoe)}/{disk['id']}").json()["name"] == "data-1"
    op = crusoe.client.delete(f"{disks(crusoe)}/{disk['id']}").json()["operation"]
    assert wait_disk_op(crusoe, op["operation_id"]) == {**wait_disk_op(crusoe, op["operation_id"]),
                                                        "state": "SUCCEEDED", "result": {}}
    assert crusoe.client.get(f"{disks(crusoe)}/{disk['id']}").status_code == 404
    assert crusoe.client.delete(f"{disks(crusoe)}/{disk['id']}").json()["code"] == "not_found"


def test_disk_attached_at_create_as_dstack_does(crusoe: CrusoeEnv) -> None:
    """`disks: [{disk_id, mode: read-write, attachment_type: data}]` on the create (dstack compute.py
    create_instance; swagger `DiskAttachment`): the VM lists it, the disk names the VM, and it stays after."""
    disk = new_disk(crusoe, "attached")
    vm = create_vm(crusoe.client, crusoe.project, "with-disk", type_=L40S, location=ICELAND,
                   disks=[{"disk_id": disk["id"], "mode": "read-write", "attachment_type": "data"}])
    assert [(d["id"], d["attachment_type"]) for d in vm["disks"]][1:] == [(disk["id"], "data")]
    read = crusoe.client.get(f"{disks(crusoe)}/{disk['id']}").json()
    assert read["attached_to"] == [{"vm_id": vm["id"], "attachment_type": "data", "mode": "read-write"}]
    assert crusoe.client.delete(f"{disks(crusoe)}/{disk['id']}").status_code == 400
    op = crusoe.client.delete(vm_path(crusoe.project, vm["id"])).json()["operation"]
    wait_operation(crusoe.client, crusoe.project, op["operation_id"])
    assert crusoe.client.get(f"{disks(crusoe)}/{disk['id']}").json()["attached_to"] == []


def test_disk_in_another_location_is_refused(crusoe: CrusoeEnv) -> None:
    disk = new_disk(crusoe, "far", location=EAST)
    response = crusoe.client.post(instances_path(crusoe.project), {
        "name": "x", "type": L40S, "location": ICELAND, "ssh_public_key": SSH_KEY,
        "disks": [{"disk_id": disk["id"], "mode": "read-write", "attachment_type": "data"}]})
    assert response.status_code == 400 and "us-east1-a" in response.json()["message"]


def test_ib_networks_match_the_type_and_location(crusoe: CrusoeEnv) -> None:
    """dstack picks the IB network whose `location` is the region and one of whose `capacities[].slice_type` is
    the instance type (compute.py create_placement_group); swagger `IBNetwork` requires id, name, location,
    capacities."""
    items = crusoe.client.get(f"/projects/{crusoe.project}/networking/ib-networks").json()["items"]
    east = next(n for n in items if n["location"] == EAST)
    assert set(east) == {"id", "name", "location", "capacities"}
    assert H100 in [c["slice_type"] for c in east["capacities"]]
    assert all(isinstance(c["quantity"], int) for c in east["capacities"])
    assert crusoe.client.get(f"/projects/{crusoe.project}/networking/ib-networks/{east['id']}").json() == east


def test_ib_partition_lifecycle_and_use_at_create(crusoe: CrusoeEnv) -> None:
    """POST /networking/ib-partitions `{name, ib_network_id}` answers the `IBPartition`; the create's
    `host_channel_adapters: [{ib_partition_id}]` puts the VM on it (dstack compute.py create_instance);
    DELETE answers an empty 200."""
    net = next(n for n in crusoe.client.get(
        f"/projects/{crusoe.project}/networking/ib-networks").json()["items"] if n["location"] == EAST)
    path = f"/projects/{crusoe.project}/networking/ib-partitions"
    partition = crusoe.client.post(path, {"name": "fabric-1", "ib_network_id": net["id"]}).json()
    assert set(partition) == {"id", "name", "ib_network_id"} and partition["ib_network_id"] == net["id"]
    assert crusoe.client.post(path, {"name": "fabric-1", "ib_network_id": net["id"]}).status_code == 400
    assert [p["id"] for p in crusoe.client.get(path).json()["items"]] == [partition["id"]]
    vm = create_vm(crusoe.client, crusoe.project, "ib-1", type_=H100, location=EAST,
                   host_channel_adapters=[{"ib_partition_id": partition["id"]}])
    assert [h["ib_partition_id"] for h in get_vm(crusoe.client, crusoe.project, vm["id"])[
        "host_channel_adapters"]] == [partition["id"]]
    assert crusoe.client.delete(f"{path}/{partition['id']}").status_code == 400  # in use
    op = crusoe.client.delete(vm_path(crusoe.project, vm["id"])).json()["operation"]
    wait_operation(crusoe.client, crusoe.project, op["operation_id"])
    deleted = crusoe.client.delete(f"{path}/{partition['id']}")
    assert (deleted.status_code, deleted.json()) == (200, {})
    assert crusoe.client.get(f"{path}/{partition['id']}").status_code == 404


def test_unknown_partition_at_create_is_refused(crusoe: CrusoeEnv) -> None:
    response = crusoe.client.post(instances_path(crusoe.project), {
        "name": "x", "type": H100, "location": EAST, "ssh_public_key": SSH_KEY,
        "host_channel_adapters": [{"ib_partition_id": "44701f9e-845c-4005-9240-adee6401b8d3"}]})
    assert response.status_code == 400


def test_vpc_subnets_have_a_default_per_location(crusoe: CrusoeEnv) -> None:
    """Terraform picks a location's default subnet from GET /networking/vpc-subnets (swagger `VPCSubnet`); VMs
    are put on it by default."""
    items = crusoe.client.get(f"/projects/{crusoe.project}/networking/vpc-subnets").json()["items"]
    iceland = next(s for s in items if s["location"] == ICELAND)
    assert {"id", "name", "vpc_network_id", "cidr", "location"} <= set(iceland)
    vm = create_vm(crusoe.client, crusoe.project, "on-default", type_=L40S, location=ICELAND)
    assert vm["network_interfaces"][0]["subnet"] == iceland["id"]


def test_vpc_networks_hold_the_default_subnets(crusoe: CrusoeEnv) -> None:
    """client-go's `VPCNetworksApi.ListVPCNetworks`/`GetVPCNetwork` (GET /networking/vpc-networks{,/id}, swagger
    `VPCNetwork` {id, name, cidr, gateway, subnets}): the project's default network, whose `subnets` are the
    default subnets' ids and whose `cidr` holds each of them; the subnets name it as their `vpc_network_id`."""
    base = f"/projects/{crusoe.project}/networking"
    networks = crusoe.client.get(f"{base}/vpc-networks").json()["items"]
    assert len(networks) == 1 and set(networks[0]) == {"id", "name", "cidr", "gateway", "subnets"}
    network = networks[0]
    subnets = crusoe.client.get(f"{base}/vpc-subnets").json()["items"]
    assert sorted(network["subnets"]) == sorted(s["id"] for s in subnets)
    assert {s["vpc_network_id"] for s in subnets} == {network["id"]}
    cidr = ipaddress.ip_network(network["cidr"])
    assert all(ipaddress.ip_network(s["cidr"]).subnet_of(cidr) for s in subnets)
    assert crusoe.client.get(f"{base}/vpc-networks/{network['id']}").json() == network
    missing = crusoe.client.get(f"{base}/vpc-networks/00000000-0000-4000-8000-000000000000")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"


def test_ssh_keys(crusoe: CrusoeEnv) -> None:
    """POST /users/ssh-keys `{name, public_key}` -> `{"ssh_key": SSHKey}`; GET -> items; DELETE ?id= (swagger)."""
    created = crusoe.client.post("/users/ssh-keys", {"name": "laptop", "public_key": SSH_KEY}).json()["ssh_key"]
    assert set(created) == {"id", "name", "public_key", "created_at", "fingerprints"}
    assert set(created["fingerprints"]) == {"md5", "sha256"} and created["fingerprints"]["md5"].count(":") == 15
    assert [k["id"] for k in crusoe.client.get("/users/ssh-keys").json()["items"]] == [created["id"]]
    assert crusoe.client.delete("/users/ssh-keys", params={"id": created["id"]}).status_code == 200
    assert crusoe.client.delete("/users/ssh-keys", params={"id": created["id"]}).status_code == 404
    assert crusoe.client.post("/users/ssh-keys", {"name": "bad", "public_key": "nope"}).status_code == 400


def test_org_quotas(crusoe: CrusoeEnv) -> None:
    """GET /organizations/{o}/quotas -> `{"quotas": [OrgQuota]}` (swagger `ListOrgQuotasResponse`)."""
    quotas = crusoe.client.get(f"/organizations/{crusoe.org_id}/quotas").json()["quotas"]
    assert {"ORG_QUOTAS_MAXIMUM_USERS", "ORG_QUOTAS_MAXIMUM_PROJECTS"} == {q["type"] for q in quotas}
    assert all(set(q) == {"type", "programmatic_name", "description", "max", "used", "available"} for q in quotas)


def test_vms_on_one_partition_share_its_fabric_and_the_inventory_says_so(crusoe: CrusoeEnv) -> None:
    """A cluster's VMs name one partition in `host_channel_adapters: [{ib_partition_id}]` and each then shows
    the location's IB network and that partition (dstack backends/crusoe/compute.py create_instance; research
    real-clouds.md D8); the admin inventory lists the partition of every Crusoe VM (`ib_partition_ids`)."""
    from mock_clouds.admin import inventory

    net = next(n for n in crusoe.client.get(
        f"/projects/{crusoe.project}/networking/ib-networks").json()["items"] if n["location"] == EAST)
    path = f"/projects/{crusoe.project}/networking/ib-partitions"
    partition = crusoe.client.post(path, {"name": "ring--abcdefgh-ib-us-east1-a", "ib_network_id": net["id"]}).json()
    made = [create_vm(crusoe.client, crusoe.project, f"ring-{n}", type_=H100, location=EAST,
                      host_channel_adapters=[{"ib_partition_id": partition["id"]}]) for n in range(2)]
    adapters = [get_vm(crusoe.client, crusoe.project, vm["id"])["host_channel_adapters"] for vm in made]
    assert [[(h["ib_network_id"], h["transport_partition_id"]) for h in a] for a in adapters] == \
        [[(net["id"], partition["id"])]] * 2
    rows = {r["name"]: r for r in inventory(crusoe.clouds) if r["provider"] == "crusoe"}
    assert [rows[f"ring-{n}"]["ib_partition_ids"] for n in range(2)] == [[partition["id"]]] * 2
    plain = create_vm(crusoe.client, crusoe.project, "plain", type_=L40S, location=ICELAND)
    assert {r["name"]: r for r in inventory(crusoe.clouds)}[plain["name"]]["ib_partition_ids"] == []
