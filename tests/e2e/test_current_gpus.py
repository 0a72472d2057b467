"""The GPU machines the clouds sell today, through the real `vm` against the mock clouds: `--gpu` takes them (names
and aliases, any case), `vm offers` lists them where the clouds sell them, a fleet plans on them, a create makes
one, and a cloud that does not sell one is refused before any call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import VmHome


def offered(home: VmHome, gpu: str, *args: str) -> list[tuple[Any, ...]]:
    """The on-demand offers with capacity now (reserved and spot ones left out)."""
    rows = home.ok("offers", "--gpu", gpu, *args, "-o", "json").json()
    return sorted((o["provider"], o["region"], o["shape"], o["gpu"], o["gpu_count"], o["price_per_hour"])
                  for o in rows if not o.get("reservation_id") and not o.get("spot"))


@pytest.mark.parametrize(("gpu", "expected"), [
    # research crusoe.md §3 (type names), gpuhunt crusoe.py (gpu_type, MI300X 3.45 $/GPU-h); GB200's price inferred
    ("mi300x", [("crusoe", "us-east1-a", "mi300x-192gb-ib.8x", "MI300X", 8, 27.6)]),
    ("GB200-NVL:4", [("crusoe", "us-southcentral1-a", "gb200-186gb-nvl-ib.4x", "GB200", 4, 42.0)]),
    # research lambda.md §9: a real GET /instance-types answer (GH200, 1.49 $/h, capacity in us-east-3)
    ("gh200", [("lambda", "us-east-3", "gpu_1x_gh200", "GH200", 1, 1.49)]),
    # research nebius.md §6 (platforms, presets); prices inferred; us-central1 by the mock's choice
    ("B300", [("nebius", "us-central1", "gpu-b300-sxm/1gpu-24vcpu-346gb", "B300", 1, 6.6),
              ("nebius", "us-central1", "gpu-b300-sxm/8gpu-192vcpu-2768gb", "B300", 8, 52.8)]),
    # Lambda's 1x B200 (lambda.md §9, third-party console mock) and Nebius gpu-b200-sxm-a (nebius.md §6)
    ("b200-sxm:1", [("lambda", "us-east-1", "gpu_1x_b200_sxm6", "B200", 1, 6.99),
                    ("nebius", "us-central1", "gpu-b200-sxm-a/1gpu-20vcpu-224gb", "B200", 1, 5.5)]),
])
def test_offers_of_the_current_gpus(shared_home: VmHome, gpu: str, expected: list[tuple[Any, ...]]) -> None:
    assert offered(shared_home, gpu) == expected


def test_a_fleet_plans_on_small_b200_vms_of_two_clouds(shared_home: VmHome) -> None:
    plan = shared_home.ok("fleet", "create", "--gpu", "B200", "--count", "6", "--name", "blackwell", "--dry-run",
                          "-o", "json").json()
    shapes = {(p["provider"], p["shape"]) for p in plan["placements"]}
    assert len(plan["placements"]) == 6
    assert shapes <= {("lambda", "gpu_1x_b200_sxm6"), ("nebius", "gpu-b200-sxm-a/1gpu-20vcpu-224gb")}
    assert {p for p, _ in shapes} == {"lambda", "nebius"}  # 4 VMs of each can be had: 6 need both


def test_create_a_gh200_vm_and_refuse_it_where_it_is_not_sold(shared_home: VmHome) -> None:
    refused = shared_home("create", "-p", "crusoe", "--gpu", "GH200", "--name", "no-gh200")
    assert refused.code == 2 and "crusoe does not sell GH200; providers that do: lambda" in refused.err
    made = shared_home.ok("create", "-p", "lambda", "--gpu", "gh200", "--name", "grace", "-o", "json").json()
    assert (made["gpu"], made["gpu_count"], made["region"]) == ("GH200", 1, "us-east-3")
    assert [i["shape"] for i in shared_home.live("grace")] == ["gpu_1x_gh200"]
    shared_home.ok("destroy", "-p", "lambda", made["id"])
