"""Instance types, regions, images, SSH keys, file systems and reservations against the Lambda mock."""

from __future__ import annotations

import base64
import struct

import pytest
from lambda_sdk import (
    Conflict,
    GeneratedSSHKey,
    InstanceStatus,
    LambdaClient,
    NotFound,
    ReservedInstanceError,
    SSHKey,
)


def _ed25519_public_line(public: bytes) -> str:
    """An OpenSSH public key line: type, then base64 of (string type, string key)."""
    blob = b"".join(struct.pack(">I", len(part)) + part for part in (b"ssh-ed25519", public))
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} me@laptop"


RESERVATION_ID = "9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9"  # default scenario: 8 H100 SXM5 GPUs in us-south-2


def test_instance_types_is_a_typed_map_with_capacity(client: LambdaClient) -> None:
    types = client.instance_types()
    a10 = types["gpu_1x_a10"]
    assert a10.instance_type.name == "gpu_1x_a10" and a10.instance_type.specs.gpus == 1
    assert a10.instance_type.price_cents_per_hour > 0
    assert a10.has_capacity("us-east-1")
    assert {t.instance_type.name for t in client.list_instance_types()} == set(types)


def test_regions_and_images(client: LambdaClient) -> None:
    regions = {r.name: r.description for r in client.list_regions()}
    assert regions["us-east-1"] == "Virginia, USA"
    images = list(client.list_images())
    assert {i.family for i in images} >= {"lambda-stack-22-04"}
    assert all(i.region.name in regions for i in images)


def test_ssh_keys_add_list_delete(client: LambdaClient) -> None:
    assert [k.name for k in client.list_ssh_keys()] == ["default"]
    added = client.add_ssh_key("laptop", _ed25519_public_line(b"\x01" * 32))
    assert isinstance(added, SSHKey) and not isinstance(added, GeneratedSSHKey)
    generated = client.add_ssh_key("generated")
    assert isinstance(generated, GeneratedSSHKey) and generated.private_key
    assert {k.name for k in client.list_ssh_keys()} == {"default", "laptop", "generated"}
    client.delete_ssh_key(added.id)
    client.delete_ssh_key(added.id)  # already gone: fine
    with pytest.raises(NotFound):
        client.delete_ssh_key(added.id, missing_ok=False)
    assert {k.name for k in client.list_ssh_keys()} == {"default", "generated"}


def test_filesystems_create_list_delete(client: LambdaClient) -> None:
    assert [f.name for f in client.list_filesystems()] == ["shared-data"]
    created = client.create_filesystem("scratch", "us-east-1")
    assert created.name == "scratch" and created.region.name == "us-east-1" and not created.is_in_use
    with pytest.raises(Conflict) as duplicate:
        client.create_filesystem("scratch", "us-east-1")
    assert duplicate.value.code == "global/duplicate"
    client.delete_filesystem(created.id)
    client.delete_filesystem(created.id)
    assert [f.name for f in client.list_filesystems()] == ["shared-data"]


def test_filesystem_in_use_cannot_be_deleted(client: LambdaClient, launch) -> None:
    shared = next(iter(client.list_filesystems()))
    launch(client, "with-fs", region_name="us-south-2", instance_type_name="gpu_1x_h100_sxm5",
           file_system_names=[shared.name])
    with pytest.raises(Conflict) as info:
        client.delete_filesystem(shared.id)
    assert info.value.code == "filesystems/filesystem-in-use"


def test_reservations_launch_and_terminate_refused(client: LambdaClient, launch) -> None:
    reservation = next(r for r in client.list_reservations() if r.id == RESERVATION_ID)
    assert reservation.quantity == 8 and reservation.used_quantity == 0
    op = launch(client, "reserved", region_name="us-south-2", instance_type_name="gpu_1x_h100_sxm5",
                reservation_id=RESERVATION_ID)
    instance = op.result(timeout=60)
    assert instance.is_reserved and instance.actions.terminate.available is False
    used = next(r for r in client.list_reservations() if r.id == RESERVATION_ID)
    assert used.used_quantity == 1 and used.instance_ids == [instance.id]

    with pytest.raises(ReservedInstanceError) as refused:
        client.terminate_instances([instance.id])
    error = refused.value
    assert error.status == 403 and error.code == "global/forbidden" and error.suggestion
    assert error.instance_ids == (instance.id,) and "keep running" in str(error)
    assert client.get_instance(instance.id).status is InstanceStatus.ACTIVE  # nothing was terminated


def test_an_endpoint_without_reservations_answers_not_found(mock_clouds_factory, make_client) -> None:
    """The real API has no GET /reservations (research lambda.md section 5): with the mock's extension off it is
    the 404 `global/not-found` of an unknown path, a NotFound callers can tell from an empty listing."""
    import pytest
    from lambda_sdk import NotFound

    def real_api(state) -> None:
        state.providers["lambda"].extra["reservations_api"] = False

    client = make_client(mock_clouds_factory(providers=("lambda",), configure=real_api))
    with pytest.raises(NotFound) as err:
        list(client.list_reservations())
    assert (err.value.status, err.value.code) == (404, "global/not-found")
