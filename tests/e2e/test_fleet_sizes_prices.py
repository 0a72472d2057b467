"""One size per fleet, the cheapest fleet, honest prices and visible unknown capacity, through the real `vm`.

The numbers come from the default mock scenario: Crusoe sells H100 only as 8-GPU VMs; Nebius' H100 capacity
block `capacityblockgroup-e00h100block000001` costs 2.10 $/GPU-h by contract (on demand: 2.95); Lambda and
Nebius publish no capacity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import VmHome

NEBIUS_BLOCK = "capacityblockgroup-e00h100block000001"


def fleet_vms(vm: VmHome, fleet: str) -> list[dict]:
    return [i for i in vm.inventory() if i["name"].startswith(f"{fleet}-") and i["state"] != "terminated"]


# ------------------------------------------------------------------------------------------ one size per fleet
def test_gpu_without_a_count_means_one_gpu(shared_home: VmHome) -> None:
    vm = shared_home
    refused = vm("create", "-p", "crusoe", "--gpu", "H100", "--name", "one-gpu")
    assert refused.code == 2 and "crusoe sells H100 only as H100:8" in refused.err and refused.out == ""

    made = vm.ok("create", "-p", "nebius", "--gpu", "H100", "--name", "one-gpu", "--reservation", "none",
                 "-o", "json").json()
    assert (made["gpu"], made["gpu_count"]) == ("H100", 1)
    assert [i["provider"] for i in vm.live("one-gpu")] == ["nebius"]  # the refused create made nothing
    vm.ok("destroy", made["id"], "-p", "nebius")

    plan = vm.ok("fleet", "create", "--gpu", "H100", "--count", "3", "--name", "ones", "--dry-run", "-o", "json")
    assert {(p["gpu"], p["gpu_count"]) for p in plan.json()["placements"]} == {("H100", 1)}
    assert "crusoe" not in {p["provider"] for p in plan.json()["placements"]}
    assert "crusoe sells H100 only as H100:8" in plan.err


def test_offers_without_a_count_show_every_size(shared_home: VmHome) -> None:
    every = shared_home.ok("offers", "--gpu", "H100", "-o", "json").json()
    assert {o["gpu_count"] for o in every} == {1, 2, 4, 8}
    one = shared_home.ok("offers", "--gpu", "H100:1", "-o", "json").json()
    assert one and {o["gpu_count"] for o in one} == {1} and "crusoe" not in {o["provider"] for o in one}


def test_a_fleet_has_one_size_and_leaves_out_who_does_not_sell_it(shared_home: VmHome) -> None:
    vm = shared_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "4", "--name", "sized", "-o", "json")
    doc = made.json()
    assert doc["gpu_count"] == 1 and len(doc["members"]) == 4
    assert {m["gpu_count"] for m in doc["members"]} == {1}
    assert {m["provider"] for m in doc["members"]} <= {"lambda", "nebius"}
    assert "crusoe sells H100 only as H100:8" in made.err
    vm.ok("fleet", "destroy", "sized")
    assert fleet_vms(vm, "sized") == []


@pytest.mark.parametrize(("args", "says"), [
    (["--gpu", "H100:3"], "no provider sells H100:3 VMs: crusoe sells H100 only as H100:8; lambda sells H100 only "
                          "as H100:1, H100:2, H100:4 or H100:8; nebius sells H100 only as H100:1 or H100:8"),
    (["--gpu", "H100", "--providers", "crusoe"], "no provider sells H100:1 VMs: crusoe sells H100 only as H100:8"),
])
def test_a_size_nobody_sells_is_exit_2_before_any_record(shared_home: VmHome, args: list[str], says: str) -> None:
    vm = shared_home
    before = vm.inventory()
    for extra in ([], ["--dry-run"]):
        result = vm("fleet", "create", *args, "--count", "2", "--name", "nosize", *extra)
        assert result.code == 2, result.err
        assert says in result.err and "hint: see `vm offers --gpu H100`" in result.err and result.out == ""
    assert vm.ok("fleet", "list", "-o", "json").json() == []
    assert vm("fleet", "status", "nosize").code == 3
    assert vm.inventory() == before


# ------------------------------------------------------------------------------------------ the cheapest fleet
def test_cheapest_plans_the_cheapest_fleet(shared_home: VmHome) -> None:
    """Issue: `--strategy cheapest --count 5 --dry-run` planned 110.00 $/h (8-GPU VMs) where 1-GPU VMs cost
    14.75. Now every slot is one GPU and the plan is the cheapest such fleet: five VMs in the Nebius block."""
    plan = shared_home.ok("fleet", "create", "--gpu", "H100", "--count", "5", "--strategy", "cheapest",
                          "--name", "cheap", "--dry-run", "-o", "json").json()
    assert {p["gpu_count"] for p in plan["placements"]} == {1}
    assert {p["reservation_id"] for p in plan["placements"]} == {NEBIUS_BLOCK}
    assert plan["price_per_hour"] == pytest.approx(5 * 2.10) and plan["price_complete"] is True
    offers = shared_home.ok("offers", "--gpu", "H100:1", "-o", "json").json()
    fleet_offers = [o for o in offers if not o["spot"]]  # fleets do not use spot (preemptible) capacity
    assert plan["price_per_hour"] <= 5 * min(o["price_per_hour"] for o in fleet_offers) + 1e-9


# ------------------------------------------------------------------------------------------ prices
def test_reserved_nebius_members_have_the_block_price_and_dry_run_agrees(shared_home: VmHome) -> None:
    vm = shared_home
    args = ("fleet", "create", "--gpu", "H100", "--count", "3", "--providers", "nebius", "--name", "blk")
    plan = vm.ok(*args, "--dry-run", "-o", "json").json()
    assert plan["price_per_hour"] == pytest.approx(6.30) and plan["price_complete"] is True

    made = vm.ok(*args, "-o", "json").json()
    assert [(m["reservation_id"], m["price_per_hour"]) for m in made["members"]] == [(NEBIUS_BLOCK, 2.10)] * 3
    status = vm.ok("fleet", "status", "blk", "-o", "json").json()
    assert (status["price_per_hour"], status["price_complete"]) == (plan["price_per_hour"], True)
    table = vm.ok("fleet", "status", "blk").rows()
    assert ["total", "$/h", "6.30"] in table
    assert all(row[-1] == "2.10" for row in table if row[:1] == ["nebius"])
    vm.ok("fleet", "destroy", "blk")


def test_an_unknown_price_makes_the_total_incomplete(fresh_home: VmHome) -> None:
    """A capacity block whose contract price is not configured has no known price: the total is a lower bound."""
    vm = fresh_home
    vm.path.mkdir(parents=True)
    vm.config("[profiles.local]\nembedded = true\n[profiles.local.nebius]\ncapacity_blocks = {}\n")
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "2", "--providers", "lambda,nebius",
                 "--name", "part", "-o", "json").json()
    by_provider = {m["provider"]: m for m in made["members"]}
    assert by_provider["nebius"]["reservation_id"] == NEBIUS_BLOCK  # AUTO put it in the block
    assert by_provider["nebius"]["price_per_hour"] is None
    known = by_provider["lambda"]["price_per_hour"]
    assert (made["price_per_hour"], made["price_complete"]) == (known, False)
    status = vm.ok("fleet", "status", "part")
    assert ["total", "$/h", ">=", f"{known:.2f}"] in status.rows()
    listed = vm.ok("fleet", "list").rows()
    assert listed[1][5:7] == [">=", f"{known:.2f}"]
    vm.ok("fleet", "destroy", "part")


def test_bad_capacity_block_terms_are_a_config_error(fresh_home: VmHome) -> None:
    fresh_home.path.mkdir(parents=True)
    fresh_home.config("[profiles.local]\nembedded = true\n[profiles.local.nebius.capacity_blocks]\n"
                      f'"{NEBIUS_BLOCK}" = {{ region = "eu-north1", platform = "gpu-h100-sxm" }}\n')
    result = fresh_home("offers", "--gpu", "H100", "-p", "nebius")
    assert result.code == 4 and "needs region, platform and a price_per_gpu_hour" in result.err


def test_a_stopped_vm_shows_no_running_price(shared_home: VmHome) -> None:
    vm = shared_home
    made = vm.ok("create", "-p", "nebius", "--gpu", "H100", "--name", "parked", "--reservation", "none",
                 "-o", "json").json()
    assert made["price_per_hour"] == 2.95
    stopped = vm.ok("stop", made["id"], "-p", "nebius", "-o", "json").json()
    assert (stopped["state"], stopped["price_per_hour"]) == ("stopped", None)
    assert vm.ok("get", made["id"], "-p", "nebius").rows()[1][-1] == "-"
    gone = vm.ok("destroy", made["id"], "-p", "nebius")
    assert gone.code == 0


# ------------------------------------------------------------------------------------------ unknown capacity
def test_plans_mark_slots_whose_capacity_is_unknown(shared_home: VmHome) -> None:
    vm = shared_home
    args = ("fleet", "create", "--gpu", "H100:8", "--count", "6", "--name", "capplan", "--dry-run")
    plan = vm.ok(*args, "-o", "json").json()
    known = {p["provider"]: p["capacity_known"] for p in plan["placements"]}
    # Nebius publishes no capacity, but its slots here are on the capacity block, whose size the terms state
    assert known == {"crusoe": True, "lambda": False, "nebius": True}
    assert all(p["capacity_known"] == (p["capacity"] is not None) for p in plan["placements"])
    table = vm.ok(*args)
    header, *rows = [r for r in table.rows() if r and (r[0] == "SLOT" or r[0].isdigit())]
    assert header == ["SLOT", "PROVIDER", "REGION", "SHAPE", "RESERVATION", "CAPACITY", "$/H"]
    assert {r[1]: r[5] == "unknown" for r in rows} == {"crusoe": False, "lambda": True, "nebius": False}
    assert "2 slot(s) rely on a cloud that does not publish capacity (lambda)" in table.err


# ------------------------------------------------------------------------------------------ capacity block sizes
@pytest.mark.parametrize("strategy", ["cheapest", "packed", "reserved-first"])
def test_a_capacity_block_is_never_planned_beyond_its_size(shared_home: VmHome, strategy: str) -> None:
    """Issue: with a Nebius block in `capacity_blocks`, `cheapest`, `packed` and `reserved-first` put every slot
    of a 300-VM plan on that one block (it holds 2 H100:8 VMs) and printed an exact `total $/h 5040.00`. The
    mock's block states its size (16 GPUs): at most 2 such VMs go there, and a total resting on capacity the
    clouds do not publish is a lower bound, in the plan and in the --max-price check."""
    vm = shared_home
    args = ["fleet", "create", "--gpu", "H100:8", "--count", "300", "--strategy", strategy, "--name", "big",
            "--dry-run"]
    offers = vm.ok("offers", "--gpu", "H100", "-p", "nebius", "-o", "json").json()
    assert {(o["gpu_count"], o["capacity"]) for o in offers if o["reservation_id"] == NEBIUS_BLOCK} == {(1, 16),
                                                                                                      (8, 2)}
    plan = vm.ok(*args, "-o", "json").json()
    on_block = [p for p in plan["placements"] if p["reservation_id"] == NEBIUS_BLOCK]
    assert len(plan["placements"]) == 300 and 1 <= len(on_block) <= 2
    assert all(p["capacity_known"] for p in on_block) and plan["price_complete"] is False
    table = vm.ok(*args)
    assert f"total $/h  >= {plan['price_per_hour']:.2f}" in table.out
    before = vm.inventory()
    capped = vm(*args[:-1], "--max-price", "400")  # the real create, refused before anything is recorded
    assert capped.code == 6 and f"the plan costs at least ${plan['price_per_hour']:.2f}/h" in capped.err, capped.err
    assert vm.inventory() == before and vm("fleet", "status", "big").code == 3


def _block_config(vm: VmHome, size: str) -> None:
    vm.config("[profiles.local]\nembedded = true\n"
              f'[profiles.local.nebius.capacity_blocks."{NEBIUS_BLOCK}"]\n'
              f'region = "eu-north1"\nplatform = "gpu-h100-sxm"\nprice_per_gpu_hour = 2.10\n{size}\n')


def test_a_block_size_in_vms_or_gpus_from_the_config(fresh_home: VmHome) -> None:
    vm = fresh_home
    _block_config(vm, "vms = 1")
    plan = vm.ok("fleet", "create", "--gpu", "H100", "--count", "4", "--providers", "nebius", "--strategy",
                 "cheapest", "--name", "sized", "--dry-run", "-o", "json").json()
    assert [p["reservation_id"] for p in plan["placements"]].count(NEBIUS_BLOCK) == 1
    _block_config(vm, "gpus = 2")
    plan = vm.ok("fleet", "create", "--gpu", "H100", "--count", "4", "--providers", "nebius", "--strategy",
                 "cheapest", "--name", "sized", "--dry-run", "-o", "json").json()
    assert [p["reservation_id"] for p in plan["placements"]].count(NEBIUS_BLOCK) == 2
    for bad in ("gpus = 0", 'vms = "two"', "gpus = 16\nvms = 2", "gpus = 1.5"):
        _block_config(vm, bad)
        refused = vm("offers", "--gpu", "H100", "-p", "nebius")
        assert refused.code == 4 and "may state its size as gpus or vms" in refused.err, (bad, refused.err)
