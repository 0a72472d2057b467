"""Spot fleets through the real executable: `vm fleet create --spot --on-demand-base N` on Nebius (the cloud that
sells spot) puts N members on-demand and the rest on preemptible VMs at the calculator's spot price, as the mock's
own billing shows them; --spot-fallback places on-demand where no cloud sells spot; bad spot options are usage
errors before any call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from mock_clouds import control

if TYPE_CHECKING:
    from conftest import VmHome

SPOT_PRICE, ON_DEMAND_PRICE = 1.25, 2.95  # the mock's Nebius H100:1 calculator prices (eu-north1)


def billed(vm: VmHome, fleet: str) -> dict[str, dict[str, Any]]:
    """The mock's own billing of the fleet's VMs (GET /billing), by name: how each cloud bills it, the truth."""
    doc = control.admin_call(vm.endpoints(), "GET", "/billing?provider=nebius")
    return {v["name"]: v for v in doc["vms"] if v["name"].startswith(f"{fleet}--")}


def test_a_spot_fleet_has_its_on_demand_base_and_the_rest_spot(shared_home: VmHome) -> None:
    vm = shared_home
    args = ("fleet", "create", "--gpu", "H100", "--count", "3", "--providers", "nebius", "--reservation", "none",
            "--spot", "--on-demand-base", "1", "--maintain", "--name", "spotf")
    plan = vm.ok(*args, "--dry-run", "-o", "json").json()
    assert sorted(p["price_per_hour"] for p in plan["placements"]) == [SPOT_PRICE, SPOT_PRICE, ON_DEMAND_PRICE]

    made = vm.ok(*args, "-o", "json").json()
    assert made["state"] == "active"
    members = sorted((m["spot"], m["price_per_hour"]) for m in made["members"])
    assert members == [(False, ON_DEMAND_PRICE), (True, SPOT_PRICE), (True, SPOT_PRICE)]
    cloud = billed(vm, "spotf")
    assert sorted(v["pricing"] for v in cloud.values()) == ["on-demand", "spot", "spot"]
    assert {m["name"]: m["spot"] for m in made["members"]} == {n: v["pricing"] == "spot" for n, v in cloud.items()}
    status = vm.ok("fleet", "status", "spotf", "-o", "json").json()
    assert sorted(m["spot"] for m in status["members"]) == [False, True, True]
    vm.ok("fleet", "destroy", "spotf", "--yes")
    assert [i for i in vm.inventory() if i["name"].startswith("spotf--") and i["state"] != "terminated"] == []


def test_spot_fallback_places_on_demand_where_no_cloud_sells_spot(shared_home: VmHome) -> None:
    vm = shared_home
    args = ("fleet", "create", "--gpu", "H100:8", "--count", "1", "--providers", "crusoe", "--reservation", "none",
            "--spot", "--name", "nospot")
    refused = vm(*args, "-o", "json")
    assert refused.code == 2 and "sells spot" in refused.error()["message"], refused.err
    assert vm("fleet", "status", "nospot").code == 3  # nothing recorded
    made = vm.ok(*args, "--spot-fallback", "-o", "json").json()
    assert [m["spot"] for m in made["members"]] == [False] and made["state"] == "active"
    vm.ok("fleet", "destroy", "nospot", "--yes")


@pytest.mark.parametrize(("options", "says"), [
    (("--on-demand-base", "1"), "--on-demand-base is for spot fleets: add --spot"),
    (("--spot-fallback",), "--spot-fallback is for spot fleets: add --spot"),
    (("--spot", "--on-demand-base", "3"), "--on-demand-base must be from 0 to --count (2), not 3"),
    (("--spot", "--strict"), "cannot be combined with --strict"),
])
def test_bad_spot_options_are_usage_errors_before_any_call(shared_home: VmHome, options: tuple[str, ...],
                                                           says: str) -> None:
    before = len(shared_home.inventory())
    result = shared_home("fleet", "create", "--gpu", "H100", "--count", "2", "--name", "badspot", *options,
                         "-o", "json")
    assert result.code == 2 and says in result.error()["message"], result.err
    assert "Traceback" not in result.err and len(shared_home.inventory()) == before
    assert shared_home("fleet", "status", "badspot").code == 3


def test_a_repair_brings_back_the_on_demand_base_on_demand(shared_home: VmHome) -> None:
    vm = shared_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "3", "--providers", "nebius", "--reservation",
                 "none", "--spot", "--on-demand-base", "1", "--name", "based", "-o", "json").json()
    [on_demand] = [m for m in made["members"] if not m["spot"]]
    vm.ok("destroy", on_demand["id"], "-p", "nebius", "--yes")  # gone behind the fleet's back
    repaired = vm.ok("fleet", "repair", "based", "-o", "json").json()
    running = [m for m in repaired["members"] if m["state"] == "running"]
    assert sorted(m["spot"] for m in running) == [False, True, True], repaired
    assert sorted(v["pricing"] for v in billed(vm, "based").values() if v["name"] != on_demand["name"]) == [
        "on-demand", "spot", "spot"]
    vm.ok("fleet", "destroy", "based", "--yes")
