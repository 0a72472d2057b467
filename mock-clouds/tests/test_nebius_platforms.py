"""Nebius mock: PlatformService (platforms and presets of the project's region)."""

from __future__ import annotations

import grpc
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.nebius.common import v1 as common
from mock_clouds.nebius._pb.nebius.compute import v1 as compute


def _names(nebius, project: str) -> list[str]:
    response = nebius.client.platforms.list(compute.ListPlatformsRequest(parent_id=project))
    assert response.next_page_token == ""
    return [p.metadata.name for p in response.items]


def test_platforms_of_each_region(nebius):
    assert _names(nebius, nebius.projects["eu-north1"]) == [
        "cpu-d3",
        "gpu-h100-sxm",
        "gpu-h200-sxm",
        "gpu-l40s-a",
        "gpu-l40s-d",
    ]
    assert _names(nebius, nebius.projects["us-central1"]) == [
        "gpu-b200-sxm",
        "gpu-b200-sxm-a",
        "gpu-b300-sxm",
        "gpu-h200-sxm",
    ]


def test_platform_presets_and_resources(nebius):
    platform = nebius.client.platforms.get_by_name(
        common.GetByNameRequest(parent_id=nebius.project, name="gpu-h100-sxm")
    )
    assert platform.metadata.name == "gpu-h100-sxm" and platform.metadata.id.startswith("computeplatform-")
    assert platform.metadata.parent_id == nebius.project
    assert platform.spec.presets == [
        compute.Preset(
            name="1gpu-16vcpu-200gb",
            resources=compute.PresetResources(vcpu_count=16, memory_gibibytes=200, gpu_count=1),
        ),
        compute.Preset(
            name="8gpu-128vcpu-1600gb",
            resources=compute.PresetResources(vcpu_count=128, memory_gibibytes=1600, gpu_count=8),
            allow_gpu_clustering=True,
        ),
    ]
    assert platform.spec.gpu_count_quota_type == "compute.instance.gpu.h100"
    assert platform.status.allowed_for_preemptibles is True


def test_platform_not_offered_in_region_is_not_found(nebius):
    failed = testkit.failure(
        nebius.client.platforms.get_by_name,
        common.GetByNameRequest(parent_id=nebius.project, name="gpu-b200-sxm"),
    )
    assert failed.code == grpc.StatusCode.NOT_FOUND
    assert failed.error.resource_not_found.resource_id == "gpu-b200-sxm"


def test_platforms_page(nebius):
    first = nebius.client.platforms.list(compute.ListPlatformsRequest(parent_id=nebius.project, page_size=2))
    second = nebius.client.platforms.list(
        compute.ListPlatformsRequest(parent_id=nebius.project, page_size=2, page_token=first.next_page_token)
    )
    assert [p.metadata.name for p in first.items + second.items] == [
        "cpu-d3",
        "gpu-h100-sxm",
        "gpu-h200-sxm",
        "gpu-l40s-a",
    ]
    assert second.next_page_token != ""


def test_gpu_platforms_state_the_memory_of_one_gpu_in_gigabytes(nebius):
    """`PlatformSpec.gpu_memory_gigabytes` (field 12) is set: gpuhunt keeps a platform's GPU presets only when it
    equals the GPU's known memory (gpuhunt `src/gpuhunt/providers/nebius.py:168-179`, its live-catalog integrity
    tests `src/integrity_tests/test_nebius.py` find H100, H200, B200, L40S and RTXPRO6000), and SkyPilot writes it
    into its catalog (`sky/catalog/data_fetchers/fetch_nebius.py`); real-clouds.md Part 2 D5."""
    expected = {"gpu-h100-sxm": 80, "gpu-h200-sxm": 141, "gpu-l40s-a": 48, "gpu-l40s-d": 48, "cpu-d3": 0,
                "gpu-b200-sxm": 180, "gpu-b200-sxm-a": 180, "gpu-b300-sxm": 288}
    seen = {}
    for region in ("eu-north1", "us-central1"):
        listed = nebius.client.platforms.list(compute.ListPlatformsRequest(parent_id=nebius.projects[region]))
        for platform in listed.items:
            seen[platform.metadata.name] = platform.spec.gpu_memory_gigabytes
            assert platform.spec.gpu_memory_gibibytes == platform.spec.gpu_memory_gigabytes  # deprecated twin
    assert seen == expected
