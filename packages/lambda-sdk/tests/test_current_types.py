"""The SDK decodes the instance types Lambda sells today (GH200, 1x and 2x B200) from the mock over the wire."""

from __future__ import annotations

from lambda_sdk import LambdaClient


def test_gh200_and_small_b200_types(client: LambdaClient) -> None:
    """`gpu_1x_gh200` ("1x GH200 (96 GB)", 64 vCPUs, 432 GiB, 4096 GiB, 149 cents) as in a real GET /instance-types
    answer, and `gpu_1x_b200_sxm6` / `gpu_2x_b200_sxm6` from a third-party mock matching the console (research
    lambda.md §9); GH200 usually has capacity in us-east-3 (same section)."""
    types = client.instance_types()
    gh200 = types["gpu_1x_gh200"]
    assert (gh200.instance_type.description, gh200.instance_type.gpu_description) == ("1x GH200 (96 GB)",
                                                                                        "GH200 (96 GB)")
    specs = gh200.instance_type.specs
    assert (specs.vcpus, specs.memory_gib, specs.storage_gib, specs.gpus) == (64, 432, 4096, 1)
    assert gh200.instance_type.price_cents_per_hour == 149 and gh200.has_capacity("us-east-3")
    assert [(types[n].instance_type.specs.gpus, types[n].instance_type.price_cents_per_hour)
            for n in ("gpu_1x_b200_sxm6", "gpu_2x_b200_sxm6", "gpu_8x_b200_sxm6")] == [(1, 699), (2, 1378), (8, 3992)]
