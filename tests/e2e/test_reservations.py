"""`--reservation auto|none|ID` on each cloud (the README's reservation table), through the real `vm`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import VmHome

# From the default scenario of the mock clouds.
CRUSOE_CHEAPEST = "804bf3a2-5b7e-4c1d-9f0a-6e2d8c4b1a11"  # 2.65 $/GPU-h, before e384a1de at 2.90
CRUSOE_OTHER = "e384a1de-3f2c-4b5a-8d9e-0c1b2a3f4e22"
LAMBDA_RESERVATION = "9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9"
NEBIUS_BLOCK = "capacityblockgroup-e00h100block000001"


def create(vm: VmHome, provider: str, name: str, reservation: str) -> dict:
    gpu = "H100:8" if provider == "crusoe" else "H100"  # crusoe sells H100 only as H100:8
    doc = vm.ok("create", "-p", provider, "--gpu", gpu, "--name", name, "--reservation", reservation,
                "-o", "json").json()
    assert doc["state"] == "running" and doc["name"] == name
    [truth] = vm.live(name)
    assert (truth["reservation_id"] or "") == doc["reservation_id"]  # the cloud agrees
    return doc


@pytest.mark.parametrize(("provider", "reservation", "expected"), [
    ("crusoe", "auto", CRUSOE_CHEAPEST),     # lowest_cost
    ("crusoe", "none", ""),                  # on_demand
    ("crusoe", CRUSOE_OTHER, CRUSOE_CHEAPEST),  # the id is ignored at create: lowest_cost
    ("lambda", "auto", ""),                  # Lambda cannot pick a reservation itself: on-demand
    ("lambda", "none", ""),
    ("nebius", "auto", NEBIUS_BLOCK),        # AUTO
    ("nebius", "none", ""),                  # FORBID
    ("nebius", NEBIUS_BLOCK, NEBIUS_BLOCK),  # STRICT with that id
])
def test_reservation_table(shared_home: VmHome, provider: str, reservation: str, expected: str) -> None:
    name = f"res-{provider}-{reservation[:8]}".rstrip("-")
    doc = create(shared_home, provider, name, reservation)
    assert (doc["reserved"], doc["reservation_id"]) == (bool(expected), expected)
    shared_home.ok("destroy", doc["id"], "-p", provider)
    assert shared_home.live(name) == []


def test_reserved_vm_shows_its_reservation_in_the_table(shared_home: VmHome) -> None:
    made = shared_home.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "res-table")
    _, vm_id, _, _, gpu, _, reserved, price = made.rows()[1]
    assert (gpu, reserved, price) == ("H100x8", CRUSOE_CHEAPEST, "21.20")  # 8 GPUs at 2.65
    shared_home.ok("destroy", vm_id, "-p", "crusoe")


def test_crusoe_reports_where_a_named_reservation_vm_landed(shared_home: VmHome) -> None:
    """Crusoe's backend ignores a reservation named at create (terraform-provider-crusoe
    internal/vm/vm_resource.go:468-476 warns "The requested reservation_id was ignored by the backend"): vm keeps
    the VM where lowest_cost put it and says so on stderr, with the reservation's price and the on-demand one."""
    made = shared_home.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "res-landed", "--reservation",
                          CRUSOE_OTHER, "-o", "json")
    doc = made.json()
    assert (doc["reservation_id"], doc["price_per_hour"]) == (CRUSOE_CHEAPEST, 21.2)
    assert (f"vm: warning: crusoe: res-landed: on reservation {CRUSOE_CHEAPEST} at $21.20/h (on-demand $31.20/h), "
            f"not on reservation {CRUSOE_OTHER}") in made.err
    shared_home.ok("destroy", doc["id"], "-p", "crusoe")


def test_crusoe_strict_reservation_never_ends_with_a_vm_elsewhere(shared_home: VmHome) -> None:
    """`--reservation ID --strict` on Crusoe: the VM the backend put on another reservation (the id is ignored at
    create, vm_resource.go:468-476) is destroyed and the create fails with exit 6, without a traceback."""
    result = shared_home("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "res-strict-crusoe",
                         "--reservation", CRUSOE_OTHER, "--strict")
    assert result.code == 6, result.err
    assert f"res-strict-crusoe landed on reservation {CRUSOE_CHEAPEST} at $21.20/h" in result.err
    assert "--strict: it was destroyed" in result.err and "Traceback" not in result.err
    assert shared_home.live("res-strict-crusoe") == []
    as_json = shared_home("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "res-strict-json",
                          "--reservation", CRUSOE_OTHER, "--strict", "-o", "json")
    assert as_json.code == 6 and as_json.error()["code"] == "capacity" and as_json.error()["scope"] == "reservation"
    kept = shared_home.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "res-strict-ok", "--reservation",
                          CRUSOE_CHEAPEST, "--strict", "-o", "json").json()
    assert kept["reservation_id"] == CRUSOE_CHEAPEST  # the one lowest_cost picks is kept
    shared_home.ok("destroy", kept["id"], "-p", "crusoe")


def test_lambda_reserved_instance_cannot_be_destroyed(shared_home: VmHome) -> None:
    doc = create(shared_home, "lambda", "res-lambda-kept", LAMBDA_RESERVATION)
    assert (doc["reserved"], doc["reservation_id"]) == (True, LAMBDA_RESERVATION)
    refused = shared_home("destroy", doc["id"], "-p", "lambda")
    assert refused.code == 5
    assert refused.err.startswith(f"vm: error: Lambda instance {doc['id']} runs on a reservation and cannot be"
                                  " terminated")
    assert "hint: " in refused.err and "Traceback" not in refused.err
    as_json = shared_home("destroy", doc["id"], "-p", "lambda", "-o", "json")
    assert as_json.code == 5 and as_json.error()["code"] == "unsupported" and as_json.out == ""
    assert [i["id"] for i in shared_home.live("res-lambda-kept")] == [doc["id"]]  # still there, untouched


def test_strict_reservation_that_does_not_fit_fails_without_fallback(shared_home: VmHome) -> None:
    result = shared_home("create", "-p", "nebius", "--gpu", "H100", "--name", "res-strict", "--region",
                         "eu-west1", "--reservation", NEBIUS_BLOCK, "--strict", "-o", "json")
    assert result.code == 6, result.err  # the block is in eu-north1: no capacity, and no on-demand instead
    assert result.error()["code"] == "capacity"
    assert shared_home.live("res-strict") == []


def full_reservation_offers(vm: VmHome, provider: str, gpu: str, reservation: str) -> list[dict]:
    return [o for o in vm.ok("offers", "--gpu", gpu, "-p", provider, "--all", "-o", "json").json()
            if o["reservation_id"] == reservation]


@pytest.mark.parametrize(("provider", "gpu", "reservation", "fill"), [
    ("crusoe", "H100:8", CRUSOE_CHEAPEST, 4),    # 32 GPUs: four 8-GPU VMs fill it
    ("lambda", "H100:8", LAMBDA_RESERVATION, 1),  # 8 GPUs: one 8-GPU VM fills it
])
def test_a_full_reservation_is_listed_with_capacity_0(fresh_home: VmHome, provider: str, gpu: str,
                                                      reservation: str, fill: int) -> None:
    """`vm offers --all` shows a full reservation (capacity 0, not available), so a user sees why a VM goes
    on-demand; without --all it is left out like any offer without room."""
    vm = fresh_home
    assert [o["capacity"] for o in full_reservation_offers(vm, provider, gpu, reservation)] == [fill]
    for n in range(fill):
        vm.ok("create", "-p", provider, "--gpu", gpu, "--name", f"fill-{n}", "--reservation", reservation)
    [full] = full_reservation_offers(vm, provider, gpu, reservation)
    assert (full["capacity"], full["available"], full["reserved"]) == (0, False, True), full
    table = vm.ok("offers", "--gpu", gpu, "-p", provider, "--all")
    [row] = [r for r in table.rows() if reservation in r]
    assert row[table.rows()[0].index("CAPACITY")] == "0"
    shown = vm.ok("offers", "--gpu", gpu, "-p", provider, "-o", "json").json()
    assert reservation not in {o["reservation_id"] for o in shown}
