"""The SDK reads the GPU platforms Nebius sells today (B300, the second B200 platform) from the mock over the wire."""

from __future__ import annotations

from nebius_sdk import NebiusClient

TENANT = "tenant-e00a1b2c3d4e5f6g7h"  # the default scenario's tenant


def test_b300_and_b200_a_platforms_and_presets(client: NebiusClient) -> None:
    """`gpu-b300-sxm` (1gpu-24vcpu-346gb, 8gpu-192vcpu-2768gb) and `gpu-b200-sxm-a` (1gpu-20vcpu-224gb,
    8gpu-160vcpu-1792gb) are real platform/preset names: research nebius.md §6 (SkyPilot catalog, dstack
    SUPPORTED_PLATFORMS) and Nebius's own Terraform catalogs. The mock sells them in us-central1 (the real regions
    uk-south1 and me-west1 have no project in its scenario)."""
    us = next(p.id for p in client.list_projects(TENANT) if p.region == "us-central1")
    platforms = {p.metadata.name: p for p in client.list_platforms(us, page_size=2)}
    assert {"gpu-b200-sxm", "gpu-b200-sxm-a", "gpu-b300-sxm"} <= set(platforms)
    b300 = client.get_platform("gpu-b300-sxm", parent_id=us)
    assert [(p.name, p.resources.gpu_count) for p in b300.spec.presets] == [
        ("1gpu-24vcpu-346gb", 1), ("8gpu-192vcpu-2768gb", 8)]
    assert b300.spec.gpu_count_quota_type == "compute.instance.gpu.b300"
    assert [p.name for p in platforms["gpu-b200-sxm-a"].spec.presets] == ["1gpu-20vcpu-224gb", "8gpu-160vcpu-1792gb"]
