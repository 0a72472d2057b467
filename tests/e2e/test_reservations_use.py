"""`vm reservations` and the on-demand-while-reserved warning through the real `vm`, against the mock clouds'
default scenario (its reservations: tests/e2e/test_reservations.py names them)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import mock_clouds
import pytest

if TYPE_CHECKING:
    from conftest import VmHome

CRUSOE_CHEAPEST = "804bf3a2-5b7e-4c1d-9f0a-6e2d8c4b1a11"  # 32 GPUs at 2.65 $/GPU-h, us-east1
CRUSOE_OTHER = "e384a1de-3f2c-4b5a-8d9e-0c1b2a3f4e22"  # 16 GPUs at 2.90
LAMBDA_RESERVATION = "9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9"  # 8 GPUs at 2.49, us-south-2
NEBIUS_BLOCK = "capacityblockgroup-e00h100block000001"  # 16 GPUs at 2.10, eu-north1 (from the profile's settings)
SCENARIO = Path(mock_clouds.__file__).parent / "default_scenario.toml"


def reservations(vm: VmHome, *args: str) -> dict[str, dict]:
    doc = vm.ok("reservations", *args, "-o", "json").json()
    return {r["id"]: r for r in doc["reservations"]} | {"": doc}


def test_every_reservation_with_its_size_vms_and_idle_hours(fresh_home: VmHome) -> None:
    vm = fresh_home
    solo = vm.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "res-solo", "-o", "json").json()
    fleet = vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "blk", "--providers", "nebius",
                  "-o", "json").json()
    [member] = fleet["members"]
    found = reservations(vm)
    assert set(found) - {""} == {CRUSOE_CHEAPEST, CRUSOE_OTHER, LAMBDA_RESERVATION, NEBIUS_BLOCK,
                                 "capacityblockgroup-e01h200block000002"}
    crusoe = found[CRUSOE_CHEAPEST]
    assert (crusoe["total_gpus"], crusoe["used_gpus"], crusoe["free_gpus"], crusoe["price_per_gpu_hour"]) == (
        32, 8, 24, 2.65)
    assert crusoe["ends_at"] == "2030-01-01T00:00:00Z"  # the contract's end, as the cloud lists it
    [on_it] = crusoe["vms"]
    assert (on_it["id"], on_it["name"], on_it["gpus"], on_it["fleet"], on_it["recorded"]) == (
        solo["id"], "res-solo", 8, None, True)
    assert on_it["created_by"] and "@" in on_it["created_by"]
    # the default period is the last 24 h: 32 GPUs x 24 h reserved, the seconds res-solo ran on it used
    assert crusoe["reserved_gpu_hours"] == pytest.approx(32 * 24, abs=0.01)
    assert 0 < crusoe["used_gpu_hours"] < 1
    assert crusoe["idle_gpu_hours"] == pytest.approx(crusoe["reserved_gpu_hours"] - crusoe["used_gpu_hours"],
                                                     abs=0.001)
    assert crusoe["idle_usd"] == pytest.approx(crusoe["idle_gpu_hours"] * 2.65, abs=0.01)
    block = found[NEBIUS_BLOCK]
    assert (block["total_gpus"], block["used_gpus"], block["free_gpus"]) == (16, 1, 15)  # counted from its VMs
    assert [(v["id"], v["fleet"]) for v in block["vms"]] == [(member["id"], "blk")]
    notes = {p["provider"]: p["note"] for p in found[""]["providers"]}
    assert notes["crusoe"] is None and "capacity_blocks setting" in notes["nebius"]
    assert "estimate" in found[""]["estimate"]


def test_the_table_says_what_is_an_estimate_and_where_blocks_come_from(fresh_home: VmHome) -> None:
    shown = fresh_home.ok("reservations", "--since", "2h")
    header, *rows = shown.rows()
    assert header[:3] == ["PROVIDER", "RESERVATION", "GPU"] and len(rows) == 5
    lambda_row = next(r for r in rows if r[1] == LAMBDA_RESERVATION)
    assert lambda_row[header.index("GPUS")] == "8" and lambda_row[header.index("IDLE-GPU-H")] == "16.00"  # 8 x 2 h
    assert "nebius: capacity blocks come from the profile's capacity_blocks setting" in shown.err
    assert "idle GPU-hours are an estimate" in shown.err
    only = reservations(fresh_home, "--provider", "lambda")
    assert set(only) == {"", LAMBDA_RESERVATION}


@pytest.mark.parametrize(("args", "says"), [
    (["--since", "last tuesday"], "is not a date"),
    (["--since", "2999-01-01"], "--since is not in the past"),
    (["--since", "99999999d"], "is before 1970"),
    (["--provider", "nope"], "nope"),
])
def test_bad_input_is_refused_without_a_traceback(shared_home: VmHome, args: list[str], says: str) -> None:
    refused = shared_home("reservations", *args)
    assert refused.code == 2 and says in refused.err and "Traceback" not in refused.err
    assert refused.out == ""


def test_an_on_demand_vm_where_a_reservation_has_room_is_warned_about(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("create", "-p", "lambda", "--gpu", "H100", "--region", "us-south-2", "--name", "od-1")
    hint = (f"`vm create --provider lambda --gpu H100 --region us-south-2 --reservation {LAMBDA_RESERVATION}`")
    assert (f"vm: warning: lambda: od-1 runs on-demand at $3.29/h while reservation {LAMBDA_RESERVATION} in "
            f"us-south-2 has 8 free GPUs: {hint}") in made.err
    argv = hint.strip("`").split()[1:]
    used = vm.ok(*argv, "--name", "on-res", "-o", "json").json()  # the hint runs: the VM lands on the reservation
    assert (used["reserved"], used["reservation_id"]) == (True, LAMBDA_RESERVATION)
    assert "runs on-demand" not in vm.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "on-res-2").err


def test_a_start_on_demand_and_a_fleet_on_demand_are_warned_about(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "od-2", "--reservation", "none",
                 "-o", "json")
    assert "runs on-demand" not in made.err  # on-demand asked for by name is not warned about
    assert made.json()["reserved"] is False
    vm_id = made.json()["id"]
    vm.ok("stop", vm_id, "-p", "crusoe")
    started = vm.ok("start", vm_id, "-p", "crusoe")
    assert f"crusoe: od-2 runs on-demand at $31.20/h while reservation {CRUSOE_CHEAPEST}" in started.err
    assert "runs on-demand" not in vm.ok("stop", vm_id, "-p", "crusoe").err  # only creates and starts warn
    fleet = vm.ok("fleet", "create", "--gpu", "H100", "--count", "2", "--name", "odf", "--providers", "lambda",
                  "--region", "us-south-2", "-o", "json")
    assert all(not m["reserved"] for m in fleet.json()["members"])  # Lambda launches on-demand unless told
    assert (f"lambda: 2 VMs (odf--{fleet.json()['id']}-0, odf--{fleet.json()['id']}-1) run on-demand at $6.58/h "
            f"while reservation {LAMBDA_RESERVATION} in us-south-2 has 8 free GPUs") in fleet.err
    asked = vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "odf-none", "--providers", "lambda",
                  "--region", "us-south-2", "--reservation", "none", "-o", "json")
    assert not asked.json()["members"][0]["reserved"] and "run on-demand" not in asked.err
    assert "runs on-demand" not in asked.err


def test_a_lambda_without_reservations_says_so(fresh_home: VmHome, tmp_path: Path) -> None:
    """Against a Lambda that serves no GET /reservations, as the real API: none listed, and the note says why."""
    scenario = tmp_path / "real-lambda.toml"
    scenario.write_text(SCENARIO.read_text().replace("[lambda.extra]\n", "[lambda.extra]\nreservations_api = false\n"))
    served = fresh_home.mock("serve", "--detach", "--scenario", str(scenario), "--time-scale", "0.002")
    assert served.returncode == 0, served.stderr
    found = reservations(fresh_home, "--provider", "lambda")
    assert set(found) == {""}
    [note] = [p["note"] for p in found[""]["providers"]]
    assert "lists no reservations (GET /reservations is not served)" in note
    table = fresh_home.ok("reservations", "--provider", "lambda")
    assert table.rows() == [table.rows()[0]] and "lambda: the Lambda Cloud API at" in table.err
