"""The GPU machines the three clouds sell today, served by the mocks under their real names and shapes.

Crusoe MI300X and GB200, Lambda GH200 and 1x/2x B200, Nebius gpu-b300-sxm and gpu-b200-sxm-a: each is listed
where the real API lists it, with the real type, platform and preset names, and can be created.
"""

from __future__ import annotations

import re

from mock_clouds.crusoe.testing import create_vm, start_env
from mock_clouds.lambda_cloud.testing import LambdaApi
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.nebius.common import v1 as common

# gpuhunt parses a Lambda type's description with this (gpuhunt/providers/lambdalabs.py, research lambda.md §8).
GPUHUNT_DESCRIPTION = re.compile(r"^(\d)x (?:Tesla )?(.+) \((\d+) GB")


def test_crusoe_lists_and_creates_mi300x_and_gb200(mock_clouds_factory) -> None:
    """Type names `mi300x-192gb-ib.8x` and `gb200-186gb-nvl-ib.4x` (research crusoe.md §3 "VM types": Terraform
    examples, docs); `gpu_type` strings `MI300X-192GB` and `GB200-NVL-186GB` as gpuhunt maps them
    (gpuhunt/providers/crusoe.py GPU_TYPE_MAP); GB200 hosts are Grace, `cpu_type` arm64 (same section)."""
    env = start_env(mock_clouds_factory)
    response = env.client.get(f"/projects/{env.project}/compute/vms/types")
    assert response.status_code == 200, response.text
    types = {t["product_name"]: t for t in response.json()["items"]}
    mi300x, gb200 = types["mi300x-192gb-ib.8x"], types["gb200-186gb-nvl-ib.4x"]
    assert (mi300x["gpu_type"], mi300x["num_gpu"], mi300x["cpu_type"]) == ("MI300X-192GB", 8, "intel")
    assert (gb200["gpu_type"], gb200["num_gpu"], gb200["cpu_type"]) == ("GB200-NVL-186GB", 4, "arm64")
    capacities = env.client.get("/capacities", params={"product_name": "mi300x-192gb-ib.8x"}).json()["items"]
    assert [(c["type"], c["location"], c["quantity"]) for c in capacities] == [("mi300x-192gb-ib.8x", "us-east1-a", 2)]
    vm = create_vm(env.client, env.project, "amd", type_="mi300x-192gb-ib.8x", location="us-east1-a")
    assert (vm["type"], vm["location"], vm["state"]) == ("mi300x-192gb-ib.8x", "us-east1-a", "STATE_RUNNING")


def test_lambda_lists_gh200_and_small_b200_types_and_launches_them(mock_clouds_factory) -> None:
    """`gpu_1x_gh200` ("1x GH200 (96 GB)", 149 cents, 64 vCPUs/432 GiB/4096 GiB) is in a real GET /instance-types
    answer (research lambda.md §9, capture of 2025-11); `gpu_1x_b200_sxm6` (699) and `gpu_2x_b200_sxm6` (1378) in
    a third-party mock matching the console (same section). gpuhunt's description regex reads all three."""
    api = LambdaApi.start(mock_clouds_factory)
    response = api.get("/instance-types")
    assert response.status_code == 200, response.text
    types = response.json()["data"]
    wanted = {"gpu_1x_gh200": (1, "GH200", 96, 149), "gpu_1x_b200_sxm6": (1, "B200", 180, 699),
              "gpu_2x_b200_sxm6": (2, "B200", 180, 1378)}
    for name, (gpus, model, memory, cents) in wanted.items():
        shape = types[name]["instance_type"]
        parsed = GPUHUNT_DESCRIPTION.match(shape["description"])
        assert parsed is not None and (int(parsed[1]), parsed[2], int(parsed[3])) == (gpus, model, memory), name
        assert (shape["specs"]["gpus"], shape["price_cents_per_hour"]) == (gpus, cents)
    assert types["gpu_1x_gh200"]["instance_type"]["specs"] == {"vcpus": 64, "memory_gib": 432, "storage_gib": 4096,
                                                                "gpus": 1}
    assert [r["name"] for r in types["gpu_1x_gh200"]["regions_with_capacity_available"]] == ["us-east-3"]
    instance_id = api.launch(instance_type_name="gpu_1x_gh200", region_name="us-east-3")
    assert api.instance(instance_id)["instance_type"]["name"] == "gpu_1x_gh200"


def test_nebius_serves_b300_and_b200_a_platforms(nebius: testkit.Harness) -> None:
    """Platforms `gpu-b300-sxm` (presets 1gpu-24vcpu-346gb, 8gpu-192vcpu-2768gb) and `gpu-b200-sxm-a` (1gpu-20vcpu-
    224gb, 8gpu-160vcpu-1792gb): research nebius.md §6 and Nebius's own Terraform catalogs; the quota
    `compute.instance.gpu.b300` as in nebius.md §6 quota names. The real regions (uk-south1, me-west1) have no
    project in the default scenario, so us-central1 sells them (marked in default_scenario.toml)."""
    project = nebius.projects["us-central1"]
    b300 = nebius.client.platforms.get_by_name(common.GetByNameRequest(parent_id=project, name="gpu-b300-sxm"))
    assert [(p.name, p.resources.gpu_count, p.resources.vcpu_count, p.resources.memory_gibibytes)
            for p in b300.spec.presets] == [("1gpu-24vcpu-346gb", 1, 24, 346), ("8gpu-192vcpu-2768gb", 8, 192, 2768)]
    assert b300.spec.gpu_count_quota_type == "compute.instance.gpu.b300"
    b200a = nebius.client.platforms.get_by_name(common.GetByNameRequest(parent_id=project, name="gpu-b200-sxm-a"))
    assert [p.name for p in b200a.spec.presets] == ["1gpu-20vcpu-224gb", "8gpu-160vcpu-1792gb"]
    spec = testkit.instance_spec("gpu-b300-sxm", "1gpu-24vcpu-346gb")
    op = nebius.client.wait(nebius.create("b300", spec, project=project))
    assert op.status.code == 0
    assert nebius.get(op.resource_id).spec.resources.platform == "gpu-b300-sxm"
