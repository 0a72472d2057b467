"""Request bodies shaped exactly as Crusoe's official Go client (`crusoecloud/client-go`, swagger v1alpha5)
serialises them, sent to the Crusoe mock.

Go's `encoding/json` writes struct fields in declaration order; fields tagged `omitempty` are left out when
zero, the others are always written, so a `NetworkInterface` that only names a subnet carries `"ips": null` and
empty strings, and an `IpAddresses` without a private address carries `"private_ipv4": null`. The structs are
`InstancesPostRequestV1Alpha5`, `InstancesPatchRequestV1Alpha5`, `NetworkInterface`, `IpAddresses`,
`PublicIpv4Address` and `ReservationSpecification`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mock_clouds.crusoe import vmdata
from mock_clouds.crusoe.testing import (
    CHEAP_RESERVATION,
    H100,
    L40S,
    PRICEY_RESERVATION,
    SSH_KEY,
    CrusoeEnv,
    env_for,
    get_vm,
    instances_path,
    vm_path,
    wait_operation,
)

LOCATION = "eu-iceland1-a"


@pytest.fixture
def crusoe(mock_clouds_factory) -> CrusoeEnv:
    return env_for(mock_clouds_factory(providers=("crusoe",)))


def go_json(value: Any) -> bytes:
    """`json.Marshal`: no spaces, keys in the order given (struct order), HTML characters escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def network_interface(subnet: str = "", public_type: str | None = None) -> dict[str, Any]:
    """`NetworkInterface` (no omitempty on any field)."""
    ips = None
    if public_type is not None:  # IpAddresses{PublicIpv4: &PublicIpv4Address{Type_: ...}}
        ips = [{"private_ipv4": None, "public_ipv4": {"address": "", "id": "", "type": public_type}}]
    return {
        "external_dns_name": "",
        "id": "",
        "interface_type": "",
        "ips": ips,
        "mac_address": "",
        "name": "",
        "network": "",
        "subnet": subnet,
    }


def post_body(
    name: str, nics: list[dict[str, Any]], location: str = LOCATION, type_: str = L40S, **omitempty: Any
) -> dict[str, Any]:
    """`InstancesPostRequestV1Alpha5` in struct order; `omitempty` fields only when set."""
    fields: list[tuple[str, Any]] = [
        ("commitment_period", omitempty.get("commitment_period")),
        ("crusoe_watch_agent_install_mode", omitempty.get("crusoe_watch_agent_install_mode")),
        ("custom_image", omitempty.get("custom_image")),
        ("disks", omitempty.get("disks")),
        ("host_channel_adapters", omitempty.get("host_channel_adapters")),
        ("image", omitempty.get("image")),
        ("install_crusoe_watch_agent", omitempty.get("install_crusoe_watch_agent")),  # *bool: nil is omitted
        ("location", location),
        ("maintenance_policy", omitempty.get("maintenance_policy")),
        ("name", name),
        ("network_interfaces", nics or None),
        ("nvlink_domain_id", omitempty.get("nvlink_domain_id")),
        ("reservation_specification", omitempty.get("reservation_specification")),
        ("shutdown_script", omitempty.get("shutdown_script")),
        ("ssh_public_key", SSH_KEY),
        ("startup_script", omitempty.get("startup_script")),
        ("type", type_),
        ("virtualization_features", omitempty.get("virtualization_features")),
    ]
    required = {"location", "name", "ssh_public_key", "type"}
    return {key: value for key, value in fields if key in required or value not in (None, "", 0, [], False)}


def create(crusoe: CrusoeEnv, body: dict[str, Any]) -> dict[str, Any]:
    response = crusoe.client.request("POST", instances_path(crusoe.project), data=go_json(body))
    assert response.status_code == 200, response.text
    op = wait_operation(crusoe.client, crusoe.project, response.json()["operation"]["operation_id"])
    assert op["state"] == "SUCCEEDED", op
    return get_vm(crusoe.client, crusoe.project, op["metadata"]["id"])


def test_create_with_a_subnet_only_interface_sends_ips_null(crusoe: CrusoeEnv) -> None:
    subnet = vmdata.default_subnet_id(crusoe.project, LOCATION)
    body = post_body("go-subnet", [network_interface(subnet)], image="ubuntu22.04:latest")
    assert b'"ips":null' in go_json(body)
    vm = create(crusoe, body)
    nic = vm["network_interfaces"][0]
    assert nic["subnet"] == subnet and nic["ips"][0]["public_ipv4"]["type"] == "dynamic"


def test_create_with_a_static_public_ip_sends_private_ipv4_null(crusoe: CrusoeEnv) -> None:
    body = post_body(
        "go-static",
        [network_interface(public_type="static")],
        install_crusoe_watch_agent=True,
        reservation_specification={"selection_strategy": "on_demand"},  # ReservationSpecification, omitempty
        startup_script="#!/bin/sh\necho <ok> && true\n",
    )
    assert b'"private_ipv4":null' in go_json(body) and b"\\u003cok\\u003e" in go_json(body)
    vm = create(crusoe, body)
    assert vm["network_interfaces"][0]["ips"][0]["public_ipv4"]["type"] == "static"
    assert vm["reservation_id"] == ""


def test_update_action_as_the_go_client_sends_it(crusoe: CrusoeEnv) -> None:
    vm = create(crusoe, post_body("go-update", []))
    # InstancesPatchRequestV1Alpha5: action, then omitempty fields in struct order
    body = {
        "action": "UPDATE",
        "maintenance_policy": "stop-vm",
        "network_interfaces": [network_interface(public_type="static")],
    }
    response = crusoe.client.request("PATCH", vm_path(crusoe.project, vm["id"]), data=go_json(body))
    assert response.status_code == 200, response.text
    op = wait_operation(crusoe.client, crusoe.project, response.json()["operation"]["operation_id"])
    assert op["state"] == "SUCCEEDED", op
    updated = get_vm(crusoe.client, crusoe.project, vm["id"])
    assert updated["maintenance_policy"] == "stop-vm"
    assert updated["network_interfaces"][0]["ips"][0]["public_ipv4"]["type"] == "static"


def test_stop_and_start_bodies(crusoe: CrusoeEnv) -> None:
    vm = create(crusoe, post_body("go-stop", []))
    for action, state in (("STOP", "STATE_SHUTOFF"), ("START", "STATE_RUNNING")):
        response = crusoe.client.request("PATCH", vm_path(crusoe.project, vm["id"]), data=go_json({"action": action}))
        assert response.status_code == 200, response.text
        op = wait_operation(crusoe.client, crusoe.project, response.json()["operation"]["operation_id"])
        assert op["result"]["state"] == state


def test_reservation_by_id_and_reserve_unreserve(crusoe: CrusoeEnv) -> None:
    """`ReservationSpecification{Id}` on create is accepted and ignored: the VM lands where lowest_cost puts it
    (the cheapest with room), as Terraform's warning says ("The requested reservation_id was ignored by the
    backend", terraform-provider-crusoe internal/vm/vm_resource.go:468-476). Then PATCH `{"action":"UNRESERVE"}`,
    which moves it off, and `{"action":"RESERVE","reservation_id":...}`, accepted and ignored as well
    (vm_by_template_resource.go:616-618); the patch struct's other fields are omitempty."""
    body = post_body("go-reserved", [], location="us-east1-a", type_=H100,
                     reservation_specification={"id": PRICEY_RESERVATION})
    vm = create(crusoe, body)
    assert vm["reservation_id"] == CHEAP_RESERVATION
    for patch, expected in (({"action": "UNRESERVE"}, ""),
                            ({"action": "RESERVE", "reservation_id": CHEAP_RESERVATION}, "")):
        response = crusoe.client.request("PATCH", vm_path(crusoe.project, vm["id"]), data=go_json(patch))
        assert response.status_code == 200, response.text
        assert get_vm(crusoe.client, crusoe.project, vm["id"])["reservation_id"] == expected


# ------------------------------------------------------------------------------------------ disks, IB, SSH keys
# Struct tags of client-go swagger/v1alpha5 @e23c062: DisksPostRequestV1Alpha5 (only `name` without omitempty),
# DiskAttachment (none omitempty), IbPartitionsPostRequestV1Alpha5, PartialHostChannelAdapter (both omitempty),
# CreateSshKeyRequest.
def send(crusoe: CrusoeEnv, method: str, path: str, body: dict[str, Any]) -> Any:
    response = crusoe.client.request(method, path, data=go_json(body))
    assert response.status_code == 200, response.text
    return response.json()


def test_disk_post_and_attachment_as_the_go_client_sends_them(crusoe: CrusoeEnv) -> None:
    disks = f"/projects/{crusoe.project}/storage/disks"
    op = send(crusoe, "POST", disks, {"block_size": 4096, "location": LOCATION, "name": "go-disk", "size": "10GiB",
                                      "type": "persistent-ssd"})["operation"]
    disk_id = op["metadata"]["id"]
    attachment = {"attachment_type": "data", "disk_id": disk_id, "mode": "read-write"}
    vm = create(crusoe, post_body("go-disk-vm", [], disks=[attachment]))
    assert disk_id in [d["id"] for d in vm["disks"]]


def test_ib_partition_and_hca_as_the_go_client_sends_them(crusoe: CrusoeEnv) -> None:
    net = f"/projects/{crusoe.project}/networking"
    network = next(n for n in crusoe.client.get(f"{net}/ib-networks").json()["items"] if n["location"] == "us-east1-a")
    partition = send(crusoe, "POST", f"{net}/ib-partitions", {"ib_network_id": network["id"], "name": "go-fabric"})
    vm = create(crusoe, post_body("go-ib", [], location="us-east1-a", type_=H100,
                                  host_channel_adapters=[{"ib_partition_id": partition["id"]}]))
    assert [h["ib_partition_id"] for h in vm["host_channel_adapters"]] == [partition["id"]]


def test_ssh_key_post_as_the_go_client_sends_it(crusoe: CrusoeEnv) -> None:
    created = send(crusoe, "POST", "/users/ssh-keys", {"name": "go-key", "public_key": SSH_KEY})["ssh_key"]
    assert created["public_key"] == SSH_KEY
