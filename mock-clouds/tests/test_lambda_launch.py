"""Lambda Cloud mock: launch validation (exact error bodies), file systems, images, capacity and quota."""

from __future__ import annotations

from typing import Any

import pytest
from mock_clouds.core.models import Quota, WorldState
from mock_clouds.lambda_cloud.testing import LambdaApi, error, invalid_parameters, launch_body

CAPACITY = error(
    "instance-operations/launch/insufficient-capacity",
    "Not enough capacity to fulfill launch request.",
    "Choose an instance type with more availability, or try again later.",
)
LAUNCH = "/instance-operations/launch"


@pytest.fixture
def api(mock_clouds_factory) -> LambdaApi:
    return LambdaApi.start(mock_clouds_factory)


def refused(api: LambdaApi, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = api.post(LAUNCH, body)
    return response.status_code, response.json()


def not_found(message: str, suggestion: str) -> dict[str, Any]:
    return error("global/object-does-not-exist", message, suggestion)


@pytest.mark.parametrize(
    ("body", "status", "expected"),
    [
        (
            {"instance_type_name": "gpu_1x_a10", "ssh_key_names": ["default"]},
            400,
            invalid_parameters("Error in request body: Object missing required field `region_name`"),
        ),
        (launch_body(quantity=2), 400, invalid_parameters("Requested too many instances.")),
        (
            launch_body(quantity=0),
            400,
            invalid_parameters("Error in request body: Expected `int` >= 1 - at `$.quantity`"),
        ),
        (launch_body(ssh_key_names=[]), 400, invalid_parameters("Exactly one SSH key must be specified.")),
        (
            launch_body(ssh_key_names=["default", "other"]),
            400,
            invalid_parameters("Exactly one SSH key must be specified."),
        ),
        (
            launch_body(name="n" * 65),
            400,
            invalid_parameters("Error in request body: Expected `str` of length <= 64 - at `$.name`"),
        ),
        (
            launch_body(region_name=7),
            400,
            invalid_parameters("Error in request body: Expected `str`, got `int` - at `$.region_name`"),
        ),
        (
            launch_body(hostname="Bad_Host"),
            400,
            invalid_parameters(
                "Error in request body: Expected `str` matching regex '^[a-z0-9][0-9a-z-]{0,62}$' "
                "- at `$.hostname`"
            ),
        ),
        (
            launch_body(image={"id": "x", "family": "y"}),
            400,
            invalid_parameters("Error in request body at 'image': specify exactly one of 'id' and 'family'."),
        ),
        (
            launch_body(instance_type_name="gpu_9x_nope"),
            404,
            not_found(
                "Instance type 'gpu_9x_nope' does not exist.",
                "Check the available instance types with GET /instance-types, then try again.",
            ),
        ),
        (
            launch_body(region_name="mars-1"),
            404,
            not_found(
                "Region 'mars-1' does not exist.",
                "Check the available regions with GET /regions, then try again.",
            ),
        ),
        (
            launch_body(ssh_key_names=["nobody"]),
            404,
            not_found(
                "SSH key 'nobody' does not exist.",
                "Add the SSH key with POST /ssh-keys or check its name, then try again.",
            ),
        ),
        (
            launch_body(file_system_names=["missing"]),
            404,
            not_found(
                "Filesystem 'missing' does not exist.",
                "Check your filesystems with GET /file-systems, then try again.",
            ),
        ),
        (
            launch_body(image={"family": "windows-95"}),
            404,
            not_found(
                "Image 'windows-95' does not exist.",
                "Check the available images with GET /images, then try again.",
            ),
        ),
        (
            launch_body(firewall_rulesets=[{"id": "c4d291f47f9d436fa39f58493ce3b50d"}]),
            404,
            not_found(
                "Firewall ruleset does not exist or you do not have permission to access it.",
                "Check your firewall ruleset ID and try again.",
            ),
        ),
        (
            launch_body(file_system_names=["shared-data"]),
            400,
            error(
                "instance-operations/launch/file-system-in-wrong-region",
                "Filesystem 'shared-data' is in us-south-2, not in us-east-1.",
                "Launch the instance in the filesystem's region, "
                "or use a filesystem in the instance's region.",
            ),
        ),
    ],
)
def test_invalid_launches_are_refused_with_the_documented_errors(
    api: LambdaApi,
    body: dict[str, Any],
    status: int,
    expected: dict[str, Any],
) -> None:
    assert refused(api, body) == (status, expected)
    assert api.listed_ids() == []


def test_optional_fields_are_accepted_and_reflected(api: LambdaApi) -> None:
    instance_id = api.launch(
        region_name="us-south-2",
        instance_type_name="gpu_1x_h100_sxm5",
        name=None,
        quantity=1,
        hostname="headnode1",
        image={"family": "ubuntu-22-04"},
        user_data="#cloud-config\n",
        file_system_names=["shared-data"],
        tags=[{"key": "env", "value": "test"}],
        firewall_rulesets=[],
    )
    instance = api.wait_status(instance_id, "active")
    assert "name" not in instance
    assert instance["hostname"] == "headnode1"
    assert instance["file_system_names"] == ["shared-data"]
    assert instance["file_system_mounts"] == [
        {"mount_point": "/lambda/nfs/shared-data", "file_system_id": "398578a2336b49079e74043f0bd2cfe8"}
    ]
    assert instance["tags"] == [{"key": "env", "value": "test"}]
    assert "user_data" not in instance


def test_explicit_mount_point_wins(api: LambdaApi) -> None:
    fs_id = "398578a2336b49079e74043f0bd2cfe8"
    instance_id = api.launch(
        region_name="us-south-2",
        instance_type_name="gpu_1x_h100_sxm5",
        file_system_names=["shared-data"],
        file_system_mounts=[{"mount_point": "/data/shared", "file_system_id": fs_id}],
    )
    instance = api.instance(instance_id)
    assert instance["file_system_mounts"] == [{"mount_point": "/data/shared", "file_system_id": fs_id}]
    file_systems = api.get("/file-systems").json()["data"]
    assert [fs["is_in_use"] for fs in file_systems] == [True]


def test_capacity_runs_out_and_instance_types_follow(api: LambdaApi) -> None:
    def regions_for(type_name: str) -> list[str]:
        types = api.get("/instance-types").json()["data"]
        return [r["name"] for r in types[type_name]["regions_with_capacity_available"]]

    assert regions_for("gpu_1x_h100_sxm5") == ["us-south-2", "us-south-3"]
    body = {"region_name": "us-south-2", "instance_type_name": "gpu_1x_h100_sxm5"}
    launched = [api.launch(**body) for _ in range(4)]
    assert regions_for("gpu_1x_h100_sxm5") == ["us-south-3"]
    assert refused(api, launch_body(**body)) == (400, CAPACITY)
    assert api.listed_ids() == launched

    api.post("/instance-operations/terminate", {"instance_ids": [launched[0]]})
    api.wait_status(launched[0], "terminated")
    assert regions_for("gpu_1x_h100_sxm5") == ["us-south-2", "us-south-3"]
    api.launch(**body)


def test_types_without_capacity_anywhere_list_no_region(api: LambdaApi) -> None:
    types = api.get("/instance-types").json()["data"]
    assert types["gpu_8x_a100"]["regions_with_capacity_available"] == [
        {"name": "us-west-2", "description": "Arizona, USA"}
    ]
    assert refused(api, launch_body(instance_type_name="gpu_8x_a100", region_name="us-east-1")) == (
        400,
        CAPACITY,
    )


def test_quota_is_enforced(mock_clouds_factory) -> None:
    def one_a10(state: WorldState) -> None:
        state.providers["lambda"].quotas = [Quota(scope="acct-7f3e2d1c", family="a10", max_gpus=1)]

    api = LambdaApi.start(mock_clouds_factory, configure=one_a10)
    api.launch()
    assert refused(api, launch_body()) == (
        400,
        error("global/quota-exceeded", "Quota exceeded.", "Contact Support to increase your quota."),
    )
    api.as_account("acct-0a1b2c3d").launch()
