"""`vm fleet` through the real executable, checked against the mock clouds' own inventory: placement, bad input,
all-or-nothing rollback, Lambda reservations, concurrent processes, and SIGKILL at many points of a create."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import VmHome

FLEET_KEYS = {"name", "id", "state", "gpu", "gpu_count", "count", "min_count", "strategy", "profile",
              "created_by", "created_at", "message", "members", "price_per_hour", "price_complete", "max_price",
              "expires_at", "budget", "on_budget", "maintain", "spot", "on_demand_base", "spot_fallback", "wait_until"}
LAMBDA_RESERVATION = "9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9"


def members_in_clouds(vm: VmHome, fleet: str) -> list[dict]:
    """Instances of the fleet that exist in any cloud (deleting ones still count: they still exist)."""
    return [i for i in vm.inventory() if i["name"] == fleet or i["name"].startswith(f"{fleet}-")]


def test_create_status_list_destroy(shared_home: VmHome) -> None:
    vm = shared_home
    made = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "6", "--name", "e2e", "-o", "json").json()
    assert set(made) == FLEET_KEYS and made["state"] == "active" and made["count"] == 6
    assert sorted(m["provider"] for m in made["members"]) == ["crusoe"] * 2 + ["lambda"] * 2 + ["nebius"] * 2
    assert all(m["state"] == "running" and m["fleet"] == "e2e" for m in made["members"])
    assert made["price_per_hour"] == pytest.approx(sum(m["price_per_hour"] or 0 for m in made["members"]))
    assert sorted(i["name"] for i in members_in_clouds(vm, "e2e")) == [f"e2e--{made['id']}-{i}" for i in range(6)]

    status = vm.ok("fleet", "status", "e2e", "-o", "json").json()
    assert {m["id"] for m in status["members"]} == {m["id"] for m in made["members"]}
    table = vm.ok("fleet", "status", "e2e").out
    assert ["running", "6", "of", "6", "(minimum", "6)"] in [line.split() for line in table.splitlines()]
    listed = vm.ok("fleet", "list", "-o", "json").json()
    assert [(f["name"], f["state"]) for f in listed] == [("e2e", "active")]
    assert vm.ok("fleet", "list").rows()[1][:4] == ["e2e", "active", "H100", "6/6"]

    gone = vm.ok("fleet", "destroy", "e2e", "-o", "json").json()
    assert gone["destroyed"] == 6 and gone["failed"] == 0 and gone["forgotten"] is True
    assert sorted(a["action"] for a in gone["actions"]) == ["destroyed"] * 6
    assert members_in_clouds(vm, "e2e") == []
    assert vm.ok("fleet", "list", "-o", "json").json() == []


def test_dry_run_changes_nothing(shared_home: VmHome) -> None:
    vm = shared_home
    before = vm.inventory()
    plan = vm.ok("fleet", "create", "--gpu", "H100", "--count", "4", "--name", "dry", "--dry-run",
                 "-o", "json").json()
    assert len(plan["placements"]) == 4 and plan["price_per_hour"] > 0
    table = vm.ok("fleet", "create", "--gpu", "H100", "--count", "2", "--name", "dry", "--dry-run").out
    assert table.splitlines()[0].split() == ["SLOT", "PROVIDER", "REGION", "SHAPE", "RESERVATION", "CAPACITY", "$/H"]
    assert vm.inventory() == before
    assert vm("fleet", "status", "dry").code == 3


@pytest.mark.parametrize(("args", "code", "says"), [
    (["create", "--gpu", "TPU", "--count", "2"], 2, "unknown GPU type"),
    (["create", "--gpu", "H100", "--count", "0"], 2, "--count must be between 1 and"),
    (["create", "--gpu", "H100", "--count", "5000"], 2, "--count must be between 1 and"),
    (["create", "--gpu", "H100", "--count", "2", "--min-count", "3"], 2, "--min-count must be between"),
    (["create", "--gpu", "H100", "--count", "2", "--strategy", "random"], 2, "strategy 'random' is unknown"),
    (["create", "--gpu", "H100", "--count", "2", "--providers", "aws"], 2, "unknown provider 'aws'"),
    (["create", "--gpu", "H100", "--count", "2", "--name", "Bad_Name"], 2, "invalid fleet name"),
    (["create", "--gpu", "H100", "--count", "2", "--name", ""], 2, "empty fleet name"),
    (["status", "no-such-fleet"], 3, "no fleet named 'no-such-fleet'"),
    (["destroy", "no-such-fleet"], 0, "nothing to destroy"),
    (["reconcile", "no-such-fleet"], 3, "no fleet named 'no-such-fleet'"),
])
def test_bad_input_is_rejected_without_state_change(shared_home: VmHome, args: list[str], code: int,
                                                    says: str) -> None:
    before = shared_home.inventory()
    result = shared_home("fleet", *args)
    assert result.code == code and says in result.err and "Traceback" not in result.err
    assert shared_home.inventory() == before
    as_json = shared_home("fleet", *args, "-o", "json")
    if code:
        assert as_json.error()["code"] in ("usage", "not_found") and as_json.out == ""
    else:
        assert as_json.json()["destroyed"] == 0 and as_json.json()["actions"] == []


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_an_empty_fleet_name_is_refused_and_records_nothing(shared_home: VmHome, dry_run: list[str]) -> None:
    """`--name ""` (a script's unset variable) is exit 2, as for `vm create`: no generated fleet that its
    teardown (`vm fleet destroy ""`) could not name."""
    vm = shared_home
    vm.ok("providers")  # the mock clouds are up: their inventory is the ground truth
    fleets, before = vm.ok("fleet", "list", "-o", "json").json(), vm.inventory()
    result = vm("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "", *dry_run)
    assert result.code == 2 and "empty fleet name" in result.err and result.out == "", result.err
    assert vm("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "").code == 2  # the same as for one VM
    assert vm.ok("fleet", "list", "-o", "json").json() == fleets and vm.inventory() == before


def test_duplicate_name_fails_cleanly(shared_home: VmHome) -> None:
    vm = shared_home
    vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "dup")
    again = vm("fleet", "create", "--gpu", "H100", "--count", "2", "--name", "dup")
    assert again.code == 2 and "already exists" in again.err
    assert len(members_in_clouds(vm, "dup")) == 1
    vm.ok("fleet", "destroy", "dup")


def test_all_or_nothing_rolls_back(shared_home: VmHome) -> None:
    vm = shared_home
    result = vm("fleet", "create", "--gpu", "H100", "--count", "60", "--name", "toolarge", "-o", "json")
    assert result.code == 6, result.err
    assert result.error()["code"] == "capacity"
    assert members_in_clouds(vm, "toolarge") == []
    assert vm.ok("fleet", "status", "toolarge", "-o", "json").json()["state"] == "failed"
    vm.ok("fleet", "destroy", "toolarge")


def test_lambda_reservation_members_are_released(shared_home: VmHome) -> None:
    vm = shared_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "resv", "--providers", "lambda",
                 "--reservation", LAMBDA_RESERVATION, "--strict", "-o", "json").json()
    assert made["members"][0]["reserved"] is True
    result = vm("fleet", "destroy", "resv")
    assert result.code == 7 and "still run and bill" in result.err and "vm fleet forget resv" in result.err
    assert [i["name"] for i in members_in_clouds(vm, "resv")] == [f"resv--{made['id']}-0"]
    again = vm("fleet", "destroy", "resv", "-o", "json")  # the record stays while the VM may run
    assert again.code == 7 and [a["action"] for a in again.json()["actions"]] == ["released"]
    forgot = vm.ok("fleet", "forget", "resv", "-o", "json").json()
    assert [m["name"] for m in forgot["left_running"]] == [f"resv--{made['id']}-0"]
    assert vm("fleet", "status", "resv").code == 3


def test_two_processes_racing_on_one_name(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("providers")  # start the mock clouds first, so both racers find them running
    command = [_vm_binary(), "fleet", "create", "--gpu", "H100", "--count", "3", "--name", "race"]
    racers = [subprocess.Popen(command, env=vm.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
              for _ in range(2)]
    codes = sorted(p.wait(timeout=300) for p in racers)
    assert codes == [0, 2]
    assert len(members_in_clouds(vm, "race")) == 3
    vm.ok("fleet", "destroy", "race")
    assert members_in_clouds(vm, "race") == []


def _vm_binary() -> str:
    return str(Path(sys.executable).parent / "vm")


# Kill points spread over a create that takes a few seconds at this time scale: before the store exists,
# while intents are written, while calls are in flight, while operations are polled, and near the end.
KILL_AFTER = [0.05, 0.2, 0.4, 0.6, 0.8, 1.0, 1.3, 1.6, 2.0, 2.5, 3.0, 3.6, 4.2, 5.0, 6.0, 7.0, 8.0, 9.0,
              10.0, 12.0]


@pytest.fixture(scope="module")
def slow_home(shared_home: VmHome, tmp_path_factory: pytest.TempPathFactory):
    """Mock clouds ten times slower than the shared ones, so a create spans several seconds."""
    home = type(shared_home)(tmp_path_factory.mktemp("vm-slow"))
    home.env["VM_MOCK_TIME_SCALE"] = "0.02"
    yield home
    home.stop()


@pytest.mark.parametrize("delay", KILL_AFTER)
def test_sigkill_during_create_then_destroy_leaves_nothing(slow_home: VmHome, delay: float) -> None:
    vm = slow_home
    vm.ok("providers")
    name = f"kill{str(delay).replace('.', 'p')}"
    proc = subprocess.Popen([_vm_binary(), "fleet", "create", "--gpu", "H100", "--count", "6", "--name", name],
                            env=vm.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    status = vm("fleet", "status", name, "-o", "json")
    if status.code == 3:  # killed before the fleet was recorded: nothing may exist then
        assert members_in_clouds(vm, name) == []
        return
    destroyed = vm("fleet", "destroy", name)
    if destroyed.code != 0:  # a member still settling in its cloud: a re-run finishes the job
        destroyed = vm("fleet", "destroy", name)
    assert destroyed.code == 0, destroyed.err
    assert members_in_clouds(vm, name) == []


def test_sigkill_during_destroy_then_rerun(slow_home: VmHome) -> None:
    vm = slow_home
    vm.ok("fleet", "create", "--gpu", "H100", "--count", "6", "--name", "halfway")
    proc = subprocess.Popen([_vm_binary(), "fleet", "destroy", "halfway"], env=vm.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    vm.ok("fleet", "destroy", "halfway")
    assert members_in_clouds(vm, "halfway") == []
