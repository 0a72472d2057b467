"""Lambda Cloud mock: SSH keys, file systems, images, regions and firewall rules (per account, persisted)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mock_clouds.lambda_cloud.testing import (
    HEX32,
    OTHER_ACCOUNT,
    LambdaApi,
    error,
    invalid_parameters,
)

PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICN+lJwsONkwrdsSnQsu1ydUkIuIg5oOC+Eslvmtt60T noname"
SEEDED_FS = "398578a2336b49079e74043f0bd2cfe8"


@pytest.fixture
def api(mock_clouds_factory) -> LambdaApi:
    return LambdaApi.start(mock_clouds_factory)


def data(response) -> object:
    assert response.status_code == 200, response.text
    return response.json()["data"]


def test_ssh_keys_add_list_delete(api: LambdaApi) -> None:
    added = data(api.post("/ssh-keys", {"name": "laptop", "public_key": PUBLIC_KEY}))
    assert HEX32.match(added["id"])
    assert added == {"id": added["id"], "name": "laptop", "public_key": PUBLIC_KEY}
    assert [k["name"] for k in data(api.get("/ssh-keys"))] == ["default", "laptop"]
    assert data(api.as_account(OTHER_ACCOUNT).get("/ssh-keys"))[0]["name"] == "default"
    assert len(data(api.as_account(OTHER_ACCOUNT).get("/ssh-keys"))) == 1

    duplicate = api.post("/ssh-keys", {"name": "laptop", "public_key": PUBLIC_KEY})
    assert (duplicate.status_code, duplicate.json()) == (400, invalid_parameters("Key name must be unique"))

    assert data(api.delete(f"/ssh-keys/{added['id']}")) == {}
    assert [k["name"] for k in data(api.get("/ssh-keys"))] == ["default"]
    missing = api.delete(f"/ssh-keys/{added['id']}")
    assert (missing.status_code, missing.json()) == (
        404,
        error("global/not-found", "The requested resource was not found."),
    )


def test_generated_ssh_key_pair(api: LambdaApi) -> None:
    generated = data(api.post("/ssh-keys", {"name": "generated"}))
    assert set(generated) == {"id", "name", "public_key", "private_key"}
    assert generated["public_key"].startswith("ssh-ed25519 ")
    assert generated["private_key"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    listed = {k["name"]: k for k in data(api.get("/ssh-keys"))}
    assert listed["generated"] == {k: generated[k] for k in ("id", "name", "public_key")}

    serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")
    private = serialization.load_ssh_private_key(generated["private_key"].encode(), None)
    public = private.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    assert generated["public_key"].startswith(public.decode())


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"name": "k", "public_key": "not a key"},
            "Error in request body at 'public_key': Invalid SSH public key.",
        ),
        (
            {"name": "", "public_key": PUBLIC_KEY},
            "Error in request body: Expected `str` of length >= 1 - at `$.name`",
        ),
        ({"public_key": PUBLIC_KEY}, "Error in request body: Object missing required field `name`"),
    ],
)
def test_invalid_ssh_keys_are_refused(api: LambdaApi, body: dict[str, str], message: str) -> None:
    response = api.post("/ssh-keys", body)
    assert (response.status_code, response.json()) == (400, invalid_parameters(message))


def test_a_launch_can_use_a_new_key(api: LambdaApi) -> None:
    data(api.post("/ssh-keys", {"name": "laptop", "public_key": PUBLIC_KEY}))
    instance_id = api.launch(ssh_key_names=["laptop"])
    assert api.instance(instance_id)["ssh_key_names"] == ["laptop"]
    theirs = api.as_account(OTHER_ACCOUNT).post(
        "/instance-operations/launch",
        {"region_name": "us-east-1", "instance_type_name": "gpu_1x_a10", "ssh_key_names": ["laptop"]},
    )
    assert theirs.status_code == 404


def test_file_systems_create_list_delete(api: LambdaApi) -> None:
    (seeded,) = data(api.get("/file-systems"))
    assert seeded["id"] == SEEDED_FS
    created = data(api.post("/filesystems", {"name": "scratch", "region": "us-east-1"}))
    assert HEX32.match(created["id"])
    assert created["name"] == "scratch"
    assert created["mount_point"] == "/lambda/nfs/scratch"
    assert created["region"] == {"name": "us-east-1", "description": "Virginia, USA"}
    assert created["is_in_use"] is False
    assert set(created["created_by"]) == {"id", "email", "status"}
    assert set(created) == {
        "id",
        "name",
        "mount_point",
        "created",
        "created_by",
        "is_in_use",
        "region",
        "bytes_used",
    }
    assert [fs["name"] for fs in data(api.get("/file-systems"))] == ["shared-data", "scratch"]
    assert [fs["name"] for fs in data(api.as_account(OTHER_ACCOUNT).get("/file-systems"))] == ["shared-data"]

    duplicate = api.post("/filesystems", {"name": "scratch", "region": "us-east-1"})
    assert (duplicate.status_code, duplicate.json()) == (
        400,
        error("global/duplicate", "A filesystem named 'scratch' already exists."),
    )
    bad_name = api.post("/filesystems", {"name": "1bad", "region": "us-east-1"})
    assert bad_name.status_code == 400
    assert bad_name.json()["error"]["code"] == "global/invalid-parameters"

    assert data(api.delete(f"/filesystems/{created['id']}")) == {"deleted_ids": [created["id"]]}
    gone = api.delete(f"/filesystems/{created['id']}")
    assert (gone.status_code, gone.json()) == (
        404,
        error("global/object-does-not-exist", "Filesystem was not found."),
    )


def test_a_mounted_file_system_cannot_be_deleted(api: LambdaApi) -> None:
    instance_id = api.launch(
        region_name="us-south-2", instance_type_name="gpu_1x_h100_sxm5", file_system_names=["shared-data"]
    )
    refused = api.delete(f"/filesystems/{SEEDED_FS}")
    assert (refused.status_code, refused.json()) == (
        400,
        error(
            "filesystems/filesystem-in-use",
            "Filesystem is in use by one or more instances.",
            "Terminate all instances that are using the filesystem before deleting it.",
        ),
    )
    api.post("/instance-operations/terminate", {"instance_ids": [instance_id]})
    api.wait_status(instance_id, "terminated")
    assert data(api.delete(f"/filesystems/{SEEDED_FS}")) == {"deleted_ids": [SEEDED_FS]}


def test_regions_images_and_firewall_rules(api: LambdaApi) -> None:
    regions = data(api.get("/regions"))
    assert {"name": "us-east-1", "description": "Virginia, USA"} in regions
    assert len(regions) == 17
    images = data(api.get("/images"))
    assert len(images) == 3 * len(regions)
    first = images[0]
    assert set(first) == {
        "id",
        "created_time",
        "updated_time",
        "name",
        "description",
        "family",
        "version",
        "architecture",
        "region",
    }
    assert (first["id"], first["family"], first["region"]) == (
        "15c1034f-5e2e-4b7a-9ebd-8c8847440e1c",
        "lambda-stack-22-04",
        regions[0],
    )
    rules = data(api.get("/firewall-rules"))
    assert {
        "protocol": "tcp",
        "port_range": [22, 22],
        "source_network": "0.0.0.0/0",
        "description": "Allow SSH",
    } in rules


def test_keys_and_file_systems_survive_a_restart(mock_clouds_factory, tmp_path: Path) -> None:
    first = LambdaApi.start(mock_clouds_factory, state_dir=tmp_path)
    key = data(first.post("/ssh-keys", {"name": "laptop", "public_key": PUBLIC_KEY}))
    fs = data(first.post("/filesystems", {"name": "scratch", "region": "us-east-1"}))
    data(first.delete(f"/filesystems/{SEEDED_FS}"))
    instance_id = first.launch(ssh_key_names=["laptop"])
    first.clouds.stop()

    second = LambdaApi.start(mock_clouds_factory, state_dir=tmp_path)
    assert key in data(second.get("/ssh-keys"))
    assert [f["id"] for f in data(second.get("/file-systems"))] == [fs["id"]]
    assert second.instance(instance_id)["ssh_key_names"] == ["laptop"]
