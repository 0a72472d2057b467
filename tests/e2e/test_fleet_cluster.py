"""`vm fleet create --placement cluster` through the real executable, checked against the mock clouds' inventory:
every member in one place (provider, region, shape, reservation), the whole fleet moved when a place fails late,
and a fleet no single place can hold refused or rolled back with the largest fleet that fits where.

In the default scenario an H100:8 fleet's cheapest place is Nebius' capacity block in eu-north1 (room for two such
VMs); next comes Crusoe's reservation 804bf3a2-... in us-east1-a, which says it has room for four. The mock clouds'
terms of the block state its size, so a plan never puts three VMs there; a contract may leave the size out, and
then Nebius, which publishes no capacity, lets a bigger fleet fail there only at create time: the tests of late
failures give the profile the block's terms without a size (`unsized_block`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conftest import VmHome

CRUSOE_RESERVATION = "804bf3a2-5b7e-4c1d-9f0a-6e2d8c4b1a11"
NEBIUS_BLOCK = "capacityblockgroup-e00h100block000001"


UNSIZED_BLOCK = f"""
[profiles.local]
embedded = true
[profiles.local.nebius.capacity_blocks."{NEBIUS_BLOCK}"]
region = "eu-north1"
platform = "gpu-h100-sxm"
price_per_gpu_hour = 2.10
"""


def unsized_block(vm: VmHome) -> VmHome:
    """`vm` whose local profile knows the Nebius block's price but not its size (a contract that does not say)."""
    vm.config(UNSIZED_BLOCK)
    return vm


def in_clouds(vm: VmHome, fleet: str) -> list[dict]:
    """The fleet's instances that exist in any cloud (ones still being deleted count)."""
    return [i for i in vm.inventory() if i["name"].startswith(f"{fleet}--")]


def places(instances: list[dict]) -> set[tuple[str, str, str, str]]:
    return {(i["provider"], i["region"], i["shape"], i["reservation_id"] or "") for i in instances}


def test_every_member_shares_provider_region_shape_and_reservation(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "3", "--providers", "crusoe,lambda",
                 "--placement", "cluster", "--name", "ring", "-o", "json").json()
    assert made["state"] == "active" and made["strategy"] == "cluster"
    live = in_clouds(vm, "ring")
    assert len(live) == 3 and {i["state"] for i in live} == {"running"}
    assert places(live) == {("crusoe", "us-east1-a", "h100-80gb-sxm-ib.8x", CRUSOE_RESERVATION)}
    assert {m["id"] for m in made["members"]} == {i["id"] for i in live}
    vm.ok("fleet", "destroy", "ring")
    assert in_clouds(vm, "ring") == []


def test_a_late_failure_moves_the_whole_fleet_and_leaves_nothing_behind(fresh_home: VmHome) -> None:
    vm = unsized_block(fresh_home)
    plan = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "3", "--placement", "cluster", "--dry-run",
                 "-o", "json").json()
    assert {(p["provider"], p["reservation_id"]) for p in plan["placements"]} == {("nebius", NEBIUS_BLOCK)}
    table = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "3", "--placement", "cluster", "--dry-run")
    assert table.rows()[0][0] == "SLOT" and "does not publish capacity" in table.err

    result = vm("fleet", "create", "--gpu", "H100:8", "--count", "3", "--placement", "cluster", "--name", "move",
                "-o", "json")
    assert result.code == 0, result.err
    assert "nebius eu-north1 (reservation " + NEBIUS_BLOCK + ") cannot hold the fleet" in result.err
    assert "moving the whole fleet" in result.err
    live = in_clouds(vm, "move")
    assert len(live) == 3
    assert places(live) == {("crusoe", "us-east1-a", "h100-80gb-sxm-ib.8x", CRUSOE_RESERVATION)}
    assert not [i for i in vm.inventory() if i["provider"] == "nebius"]  # nothing left in the abandoned place
    status = vm.ok("fleet", "status", "move", "-o", "json").json()
    assert status["state"] == "active" and {m["provider"] for m in status["members"]} == {"crusoe"}
    vm.ok("fleet", "destroy", "move")
    assert in_clouds(vm, "move") == []


def test_a_fleet_no_place_can_hold_is_refused_before_anything_is_recorded(fresh_home: VmHome) -> None:
    vm = fresh_home
    result = vm("fleet", "create", "--gpu", "H100:8", "--count", "5", "--providers", "crusoe", "--placement",
                "cluster", "--name", "huge", "-o", "json")
    assert result.code == 6 and "Traceback" not in result.err
    error = result.error()
    assert error["code"] == "capacity"
    assert error["message"].startswith(f"no single place holds 5 H100:8 VMs; the largest: 4 in crusoe us-east1-a "
                                       f"(reservation {CRUSOE_RESERVATION}); 4 in crusoe us-east1-a; ")
    assert "2 in crusoe us-southcentral1-a" in error["message"]
    assert in_clouds(vm, "huge") == [] and vm("fleet", "status", "huge").code == 3

    dry = vm("fleet", "create", "--gpu", "H100:8", "--count", "5", "--providers", "crusoe", "--placement",
             "cluster", "--dry-run")
    assert dry.code == 6 and "no single place holds 5 H100:8 VMs; the largest: 4 in crusoe" in dry.err
    rows = dry.rows()
    assert rows[0] == ["ORDER", "PROVIDER", "REGION", "SHAPE", "RESERVATION", "CAPACITY", "VMS", "FLEET-$/H", "HOLDS"]
    assert {row[0] for row in rows[1:]} == {"-"} and {row[-1] for row in rows[1:]} == {"no"} and len(rows) == 5


def test_a_fleet_too_large_for_every_place_tried_is_rolled_back_with_the_largest_fits(fresh_home: VmHome) -> None:
    vm = unsized_block(fresh_home)
    result = vm("fleet", "create", "--gpu", "H100:8", "--count", "5", "--placement", "cluster", "--name", "big")
    assert result.code == 6, result.err
    error = next(line for line in result.err.splitlines() if line.startswith("vm: error: "))
    assert "fleet big failed: no single place held 5 H100:8 VMs; the largest: 4 in crusoe us-east1-a " \
           f"(reservation {CRUSOE_RESERVATION})" in error
    assert f"in nebius eu-north1 (reservation {NEBIUS_BLOCK}; tried: 2 came up)" in error
    assert "rolled back" in error
    assert in_clouds(vm, "big") == [] and vm.inventory() == []
    assert vm.ok("fleet", "status", "big", "-o", "json").json()["state"] == "failed"
    vm.ok("fleet", "destroy", "big")


def test_min_count_keeps_every_member_in_one_place(fresh_home: VmHome) -> None:
    vm = fresh_home
    plan = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "6", "--min-count", "3", "--providers", "crusoe",
                 "--placement", "cluster", "--dry-run", "-o", "json").json()
    assert len(plan["placements"]) == 4
    assert [(p["order"], p["holds"], p["vms"]) for p in plan["places"]] == [(1, "4-of-6", 4), (2, "4-of-6", 4),
                                                                            (None, "no", 2), (None, "no", 2)]
    assert plan["places"][0]["fleet_price_per_hour"] == round(4 * plan["places"][0]["price_per_hour"], 4)
    result = vm("fleet", "create", "--gpu", "H100:8", "--count", "6", "--min-count", "3", "--providers", "crusoe",
                "--placement", "cluster", "--name", "part", "-o", "json")
    assert result.code == 7, result.err
    assert result.json()["state"] == "degraded"
    live = in_clouds(vm, "part")
    assert len(live) == 4 and places(live) == {("crusoe", "us-east1-a", "h100-80gb-sxm-ib.8x", CRUSOE_RESERVATION)}
    vm.ok("fleet", "destroy", "part")


def test_a_cluster_dry_run_shows_the_chosen_place_and_the_alternatives(shared_home: VmHome) -> None:
    vm = shared_home
    vm.ok("list")  # the mock clouds are up
    before = vm.inventory()
    plan = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "3", "--providers", "crusoe",
                 "--placement", "cluster", "--dry-run", "-o", "json").json()
    assert plan["placement"] == "cluster" and plan["strategy"] == "cluster"
    assert len(plan["placements"]) == 3 and len({tuple(sorted(p.items())) for p in plan["placements"]}) == 1
    assert plan["placements"][0]["reservation_id"] == CRUSOE_RESERVATION
    assert [(p["order"], p["holds"]) for p in plan["places"]] == [(1, "yes"), (2, "yes"), (None, "no"),
                                                                  (None, "no")]
    assert plan["price_per_hour"] == round(3 * plan["placements"][0]["price_per_hour"], 4)
    table = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "3", "--placement", "cluster", "--dry-run")
    assert table.rows()[0][0] == "SLOT"
    assert table.rows()[1][1:3] == ["crusoe", "us-east1-a"] and table.err == ""  # the block holds 2: not chosen
    assert vm.inventory() == before


def test_strategy_and_cluster_placement_do_not_combine(shared_home: VmHome) -> None:
    result = shared_home("fleet", "create", "--gpu", "H100:8", "--count", "2", "--placement", "cluster",
                         "--strategy", "cheapest")
    assert result.code == 2 and "cannot be combined with --placement cluster" in result.err
    assert shared_home("fleet", "create", "--gpu", "H100:8", "--count", "2", "--placement", "rack").code == 2


def test_any_refusal_in_a_place_moves_the_whole_fleet(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("list")  # the mock clouds are up
    assert vm.mock("faults", "--provider", "nebius", "--op-failure-rate", "1").returncode == 0
    result = vm("fleet", "create", "--gpu", "H100:8", "--count", "2", "--providers", "crusoe,nebius",
                "--placement", "cluster", "--name", "refused", "-o", "json")
    assert result.code == 0, result.err
    assert "injected operation failure" in result.err and "moving the whole fleet" in result.err
    live = in_clouds(vm, "refused")
    assert places(live) == {("crusoe", "us-east1-a", "h100-80gb-sxm-ib.8x", CRUSOE_RESERVATION)} and len(live) == 2
    vm.ok("fleet", "destroy", "refused")


def test_a_place_where_min_count_came_up_is_kept(fresh_home: VmHome) -> None:
    vm = unsized_block(fresh_home)
    result = vm("fleet", "create", "--gpu", "H100:8", "--count", "3", "--min-count", "2", "--placement", "cluster",
                "--name", "kept", "-o", "json")
    assert result.code == 7, result.err
    made = result.json()
    assert made["state"] == "degraded" and "moving the whole fleet" not in result.err
    live = in_clouds(vm, "kept")
    assert len(live) == 2 and places(live) == {("nebius", "eu-north1", "gpu-h100-sxm/8gpu-128vcpu-1600gb",
                                                NEBIUS_BLOCK)}
    vm.ok("fleet", "destroy", "kept")


def test_a_cluster_fleet_grows_and_is_repaired_in_its_own_place(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "2", "--placement", "cluster", "--name", "pod",
          "--providers", "crusoe")
    first = places(in_clouds(vm, "pod"))
    assert len(first) == 1
    vm.ok("fleet", "scale", "pod", "--count", "3")
    assert len(in_clouds(vm, "pod")) == 3 and places(in_clouds(vm, "pod")) == first
    gone = in_clouds(vm, "pod")[0]
    vm.ok("destroy", gone["id"], "--provider", "crusoe")
    vm.ok("fleet", "repair", "pod")
    assert len(in_clouds(vm, "pod")) == 3 and places(in_clouds(vm, "pod")) == first
    vm.ok("fleet", "destroy", "pod")
    assert in_clouds(vm, "pod") == []


def test_a_dry_grow_of_a_cluster_fleet_whose_reservation_is_full_says_why_once(fresh_home: VmHome) -> None:
    """Four VMs fill Crusoe's reservation: growing to five in place is impossible. The dry run says so once (the
    fleet is pinned to its place and that reservation is full), prints nothing on stdout, and its hint runs."""
    vm = fresh_home
    vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "4", "--providers", "crusoe", "--placement", "cluster",
          "--name", "pod")
    before = vm.inventory()
    dry = vm("fleet", "scale", "pod", "--count", "5", "--dry-run")
    assert dry.code == 6 and dry.out == "", dry.out
    lines = dry.err.splitlines()
    assert [line for line in lines if line.startswith("vm: ")] == [
        f"vm: error: fleet pod is a cluster fleet, so its new VMs go only where its VMs are: crusoe us-east1-a "
        f"(h100-80gb-sxm-ib.8x, reservation {CRUSOE_RESERVATION}), whose reservation is full; 1 of 1 new VM(s) "
        "cannot be placed there"], dry.err
    assert "vm offers" not in dry.err  # no offer elsewhere is one this fleet may use
    error = vm("fleet", "scale", "pod", "--count", "5", "--dry-run", "-o", "json").error()
    assert (error["code"], error["scope"]) == ("capacity", "reservation")
    [hinted] = error["next"]
    assert hinted == ["vm", "fleet", "create", "--gpu", "H100:8", "--count", "5", "--placement", "cluster",
                      "--dry-run"]
    assert vm(*hinted[1:]).code == 0  # the hint runs: where a new cluster fleet of five would fit
    assert vm.inventory() == before  # nothing changed
    assert vm.ok("fleet", "status", "pod", "-o", "json").json()["count"] == 4


def test_a_dry_run_that_falls_short_says_it_once(fresh_home: VmHome) -> None:
    dry = fresh_home("fleet", "create", "--gpu", "H100:8", "--count", "40", "--providers", "crusoe", "--name",
                     "wide", "--dry-run")
    assert dry.code == 6 and dry.err.count("can be placed with the current offers") == 1, dry.err


def crusoe_client(vm: VmHome) -> Any:
    """A crusoe_sdk client of the mock's Crusoe, to read what vm made there (IB partitions)."""
    from crusoe_sdk import CrusoeClient

    endpoint = vm.endpoints()["crusoe"]
    return CrusoeClient(access_key_id=endpoint["access_key_id"], secret_key=endpoint["secret_key"],
                        base_url=endpoint["url"], project_id=endpoint["project_id"], timeout=30.0)


def test_a_crusoe_infiniband_cluster_fleet_is_one_partition_and_leaves_none(fresh_home: VmHome) -> None:
    """On 8-GPU `-ib` types a cluster fleet's VMs join one IB partition of the location's IB network, named with
    the fleet's id, as dstack places Crusoe clusters (backends/crusoe/compute.py create_placement_group; research
    real-clouds.md D8); the fleet's destroy deletes it once the VMs are gone and leaves a partition without the
    fleet's id, saying so."""
    vm = fresh_home
    vm.ok("providers")  # the mock clouds are up
    client = crusoe_client(vm)
    network = next(n for n in client.list_ib_networks() if n.location == "us-east1-a")
    by_hand = client.create_ib_partition(name="ring-by-hand", ib_network_id=network.id)
    made = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "3", "--providers", "crusoe",
                 "--placement", "cluster", "--name", "ring", "-o", "json").json()
    assert made["state"] == "active"
    live = in_clouds(vm, "ring")
    assert len(live) == 3
    [partition] = {p for i in live for p in i["ib_partition_ids"]}
    assert all(i["ib_partition_ids"] == [partition] for i in live)
    named = {p.id: p.name for p in client.list_ib_partitions()}
    assert named[partition] == f"ring--{made['id']}-ib-us-east1-a"
    gone = vm.ok("fleet", "destroy", "ring")
    assert f"crusoe: placement group {partition} deleted" in gone.err
    assert "IB partition ring-by-hand" in gone.err and "was left alone" in gone.err
    assert in_clouds(vm, "ring") == []
    assert [p.id for p in client.list_ib_partitions()] == [by_hand.id]
