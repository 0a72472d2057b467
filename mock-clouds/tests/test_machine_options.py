"""What a VM boots: Crusoe's `/compute/images`, and the image, boot disk and startup script every cloud's VM was
created with, as the admin inventory shows them (mock extension)."""

from __future__ import annotations

import hashlib

import requests
from mock_clouds.admin import inventory
from mock_clouds.crusoe.testing import create_vm, env_for
from mock_clouds.lambda_cloud.testing import LambdaApi
from mock_clouds.runner import MockClouds

SCRIPT = "#!/bin/bash\necho hello > /tmp/hello\n"


def _row(clouds: MockClouds, instance_id: str) -> dict[str, object]:
    return next(r for r in inventory(clouds) if r["id"] == instance_id)


def test_crusoe_lists_its_images_and_keeps_the_image_and_script_of_a_create(mock_clouds: MockClouds) -> None:
    env = env_for(mock_clouds)
    listed = env.client.get("/compute/images", params={"product_group": "h100"})
    assert listed.status_code == 200
    items = listed.json()["items"]
    names = {i["name"]: i for i in items}
    assert {"ubuntu22.04-nvidia-sxm-docker", "ubuntu22.04-nvidia-pcie-docker", "ubuntu22.04"} <= set(names)
    sxm = names["ubuntu22.04-nvidia-sxm-docker"]
    assert sxm["tags"] == ["latest"] and sxm["locations"] and set(sxm) == {
        "id", "name", "description", "tags", "created_at", "locations"}
    one = env.client.get(f"/compute/images/{sxm['id']}")
    assert one.status_code == 200 and one.json() == sxm
    assert env.client.get("/compute/images/6d2b7c1e-0000-4000-8000-000000000000").status_code == 404
    vm = create_vm(env.client, env.project, "scripted", image="ubuntu22.04-nvidia-pcie-docker:latest",
                   startup_script=SCRIPT)
    row = _row(mock_clouds, vm["id"])
    assert row["image"] == "ubuntu22.04-nvidia-pcie-docker:latest" and row["disk_gib"] is None
    assert row["startup_script_sha256"] == hashlib.sha256(SCRIPT.encode()).hexdigest()
    assert row["startup_script_bytes"] == len(SCRIPT)
    plain = create_vm(env.client, env.project, "plain")
    assert _row(mock_clouds, plain["id"])["startup_script_bytes"] == 0
    assert _row(mock_clouds, plain["id"])["image"] == "ubuntu22.04:latest"


def test_lambda_keeps_the_image_and_user_data_of_a_launch(mock_clouds: MockClouds) -> None:
    api = LambdaApi(mock_clouds)
    images = api.get("/images").json()["data"]
    wanted = next(i for i in images if i["family"] == "gpu-base-24-04")
    instance_id = api.launch(image={"family": "gpu-base-24-04"}, user_data=SCRIPT)
    row = _row(mock_clouds, instance_id)
    assert row["image"] == wanted["id"] and row["disk_gib"] is None
    assert row["startup_script_sha256"] == hashlib.sha256(SCRIPT.encode()).hexdigest()
    too_big = api.post("/instance-operations/launch", {**_launch_body(), "user_data": "x" * 1_000_001})
    assert too_big.status_code == 400


def _launch_body() -> dict[str, object]:
    from mock_clouds.lambda_cloud.testing import launch_body

    return launch_body()


def test_the_inventory_shows_every_cloud_s_machine_fields(mock_clouds: MockClouds) -> None:
    admin = mock_clouds.endpoints["admin"]
    rows = requests.get(admin["url"] + "/inventory", headers={"Authorization": f"Bearer {admin['token']}"},
                        timeout=5).json()["instances"]
    assert rows == []  # a fresh world; the fields themselves are checked per cloud above
