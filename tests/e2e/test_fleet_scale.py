"""`vm fleet scale` and `vm fleet repair` through the real executable, with the mock clouds' inventory as the ground
truth: every VM carries the fleet's id, no slot has two VMs, shrink order, the minimum, dry runs, repair after VMs
went missing or a create was interrupted, look-alikes left alone, SIGKILL mid-grow, and injected faults."""

from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import VmHome


def live_fleet_vms(vm: VmHome, fleet: str) -> list[dict]:
    """Live VMs whose name is a member name of some fleet called `fleet` (`<fleet>--<id>-<slot>[-r<n>]`)."""
    return [i for i in vm.inventory() if i["name"].startswith(f"{fleet}--") and i["state"] != "terminated"]


def check_members(vm: VmHome, fleet: str, fleet_id: str) -> list[dict]:
    """The fleet's live VMs, after checking each carries the fleet's id and no slot has two VMs."""
    pattern = re.compile(rf"^{fleet}--{fleet_id}-(\d+)(?:-r\d+)?$")
    found = live_fleet_vms(vm, fleet)
    slots = [pattern.match(i["name"]) for i in found]
    assert all(slots), [i["name"] for i in found]
    numbers = [int(m.group(1)) for m in slots if m]
    assert len(numbers) == len(set(numbers)), sorted(numbers)
    return found


def status(vm: VmHome, fleet: str) -> dict:
    return vm.ok("fleet", "status", fleet, "-o", "json").json()


def _vm_binary() -> str:
    return str(Path(sys.executable).parent / "vm")


def test_grow_then_shrink_on_demand_most_expensive_first(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "3", "--name", "sc", "--providers", "lambda,nebius",
                 "-o", "json").json()
    grown = vm.ok("fleet", "scale", "sc", "--count", "6", "-o", "json").json()
    assert grown["state"] == "active" and grown["count"] == 6 and grown["id"] == made["id"]
    created = [a for a in grown["actions"] if a["action"] == "created"]
    assert len(created) == 3
    assert {int(a["name"].rsplit("-", 1)[-1]) for a in created} == {3, 4, 5}  # numbered after the highest slot
    live = check_members(vm, "sc", made["id"])
    assert len(live) == 6 and {i["id"] for i in live} == {m["id"] for m in grown["members"]}

    before = {m["id"]: m for m in grown["members"]}
    shrunk = vm.ok("fleet", "scale", "sc", "--count", "2", "--min-count", "2", "-o", "json").json()
    assert shrunk["state"] == "active" and shrunk["count"] == 2 and shrunk["min_count"] == 2
    gone = [a["id"] for a in shrunk["actions"] if a["action"] == "destroyed"]
    assert len(gone) == 4 and len(shrunk["actions"]) == 4
    order = sorted(before.values(), key=lambda m: (m["reserved"], -m["price_per_hour"]))
    assert [before[i]["price_per_hour"] for i in gone] == [m["price_per_hour"] for m in order[:4]]
    kept = set(before) - set(gone)
    assert all(not before[i]["reserved"] or before[k]["reserved"] for i in gone for k in kept)  # reserved last
    assert {i["id"] for i in check_members(vm, "sc", made["id"])} == kept
    grown_again = vm.ok("fleet", "scale", "sc", "--count", "3", "-o", "json").json()
    slots = sorted(int(m["name"].split("-")[-1]) for m in grown_again["members"])
    assert slots[-1] == 6 and slots != [0, 1, 2]  # the slots are no longer 0..N-1: reconcile keeps them all
    settled = vm.ok("fleet", "reconcile", "sc", "-o", "json").json()
    assert settled["actions"] == [] and settled["state"] == "active"
    assert len(check_members(vm, "sc", made["id"])) == 3
    vm.ok("fleet", "destroy", "sc")
    assert live_fleet_vms(vm, "sc") == []


def test_the_minimum_is_a_floor_and_bad_input_changes_nothing(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("fleet", "create", "--gpu", "H100", "--count", "3", "--min-count", "2", "--name", "flo",
          "--providers", "nebius")
    before = vm.inventory()
    for args, says in ((["--count", "1"], "below fleet flo's minimum of 2"),
                       (["--count", "0"], "--count must be between 1 and"),
                       (["--count", "2", "--min-count", "3"], "--min-count must be between 1 and --count (2)"),
                       (["--count", "2", "--min-count", "0"], "--min-count must be between 1 and --count (2)")):
        result = vm("fleet", "scale", "flo", *args)
        assert result.code == 2 and says in result.err and "Traceback" not in result.err, result.err
    assert "vm fleet scale flo --count 1 --min-count 1" in vm("fleet", "scale", "flo", "--count", "1").err
    assert vm("fleet", "scale", "nope", "--count", "2").code == 3
    assert vm("fleet", "repair", "nope").code == 3
    assert vm.inventory() == before
    assert status(vm, "flo")["count"] == 3
    lowered = vm.ok("fleet", "scale", "flo", "--count", "1", "--min-count", "1", "-o", "json").json()
    assert lowered["count"] == 1 and lowered["min_count"] == 1 and len(lowered["members"]) == 1
    vm.ok("fleet", "destroy", "flo")


def test_dry_runs_change_nothing(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "3", "--name", "dr", "--providers", "lambda,nebius",
                 "-o", "json").json()
    vm.ok("destroy", made["members"][0]["id"], "--provider", made["members"][0]["provider"])
    before = vm.inventory()
    repair = vm.ok("fleet", "repair", "dr", "--dry-run", "-o", "json").json()
    assert [a["action"] for a in repair["actions"]] == ["missing"] and len(repair["placements"]) == 1
    grow = vm.ok("fleet", "scale", "dr", "--count", "5", "--dry-run", "-o", "json").json()
    assert grow["dry_run"] is True and len(grow["placements"]) == 3 and grow["slots"] == [3, 4, 5]
    assert (grow["count"], grow["fleet_count"]) == (3, 3)  # 3 to place; the record still says 3
    assert grow["price_per_hour"] == pytest.approx(sum(p["price_per_hour"] for p in grow["placements"]))
    table = vm.ok("fleet", "scale", "dr", "--count", "5", "--dry-run")
    assert table.rows()[0] == ["SLOT", "PROVIDER", "REGION", "SHAPE", "RESERVATION", "CAPACITY", "$/H"]
    assert [row[0] for row in table.rows()[1:4]] == ["3", "4", "5"]
    shrink = vm.ok("fleet", "scale", "dr", "--count", "1", "--min-count", "1", "--dry-run", "-o", "json").json()
    assert [a["action"] for a in shrink["actions"]] == ["destroyed"] and shrink["dry_run"] is True
    assert "would destroy" in vm.ok("fleet", "scale", "dr", "--count", "1", "--min-count", "1", "--dry-run").err
    assert "would create" in vm.ok("fleet", "repair", "dr", "--dry-run").err
    assert vm.inventory() == before
    after = status(vm, "dr")
    assert (after["count"], after["min_count"], after["state"]) == (3, 3, "degraded")
    vm.ok("fleet", "destroy", "dr")


def test_repair_replaces_members_destroyed_behind_vms_back(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "4", "--name", "rep", "--providers", "lambda,nebius",
                 "-o", "json").json()
    for member in made["members"][:2]:
        vm.ok("destroy", member["id"], "--provider", member["provider"])
    repaired = vm("fleet", "repair", "rep", "-o", "json")
    assert repaired.code == 0, repaired.err
    doc = repaired.json()
    assert doc["state"] == "active" and doc["count"] == 4
    assert sorted(a["action"] for a in doc["actions"]) == ["created", "created", "missing", "missing"]
    assert len(check_members(vm, "rep", made["id"])) == 4
    again = vm.ok("fleet", "repair", "rep", "-o", "json").json()  # nothing left to repair
    assert again["actions"] == [] and len(check_members(vm, "rep", made["id"])) == 4
    vm.ok("fleet", "destroy", "rep")
    assert live_fleet_vms(vm, "rep") == []


def test_repair_of_an_interrupted_fleet(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "3", "--name", "intr", "--providers", "nebius",
                 "-o", "json").json()
    vm.ok("destroy", made["members"][2]["id"], "--provider", "nebius")
    db = sqlite3.connect(vm.path / "vm.db")  # as a create killed after two of its VMs were recorded leaves it
    db.execute("UPDATE fleets SET state = 'creating' WHERE name = 'intr'")
    db.commit()
    db.close()
    assert status(vm, "intr")["state"] == "interrupted"
    assert vm("fleet", "scale", "intr", "--count", "4").code == 2  # not settled: repair first
    repaired = vm("fleet", "repair", "intr", "-o", "json")
    assert repaired.code == 0, repaired.err
    assert repaired.json()["state"] == "active"
    assert len(check_members(vm, "intr", made["id"])) == 3
    vm.ok("fleet", "destroy", "intr")


def test_a_repair_that_falls_short_exits_7(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "2", "--name", "short", "--providers", "nebius",
                 "--region", "eu-north1", "-o", "json").json()
    vm.ok("destroy", made["members"][0]["id"], "--provider", "nebius")
    vm.ok("fleet", "reconcile", "short")
    full = vm("fleet", "scale", "short", "--count", "60")  # more than the region holds: degraded, VMs kept
    assert full.code == 7 and "vm fleet repair short" in full.err
    running = len(check_members(vm, "short", made["id"]))
    assert 1 < running < 60 and status(vm, "short")["count"] == 60
    still = vm("fleet", "repair", "short")
    assert still.code == 7 and "degraded" in still.err
    assert len(check_members(vm, "short", made["id"])) == running
    vm.ok("fleet", "destroy", "short")


def test_a_grow_below_a_raised_minimum_rolls_back_its_own_vms(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "2", "--name", "rb", "--providers", "nebius",
                 "--region", "eu-north1", "-o", "json").json()
    result = vm("fleet", "scale", "rb", "--count", "60", "--min-count", "60")
    assert result.code == 6, result.err
    assert "destroyed again" in result.err
    assert {i["id"] for i in check_members(vm, "rb", made["id"])} == {m["id"] for m in made["members"]}
    after = status(vm, "rb")
    assert (after["state"], after["count"], after["min_count"]) == ("active", 2, 2)
    vm.ok("fleet", "destroy", "rb")


def test_look_alikes_beside_the_fleet_are_untouched(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("create", "--provider", "nebius", "--gpu", "H100", "--count", "2", "--name", "look")
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "2", "--name", "look", "--providers", "nebius",
                 "-o", "json").json()
    plain = {i["id"] for i in vm.inventory() if i["name"] in ("look-1", "look-2") and i["state"] == "running"}
    assert len(plain) == 2
    vm.ok("fleet", "scale", "look", "--count", "3")
    vm.ok("destroy", made["members"][0]["id"], "--provider", "nebius")
    vm.ok("fleet", "repair", "look")
    vm.ok("fleet", "scale", "look", "--count", "1", "--min-count", "1")
    assert len(check_members(vm, "look", made["id"])) == 1
    assert {i["id"] for i in vm.inventory() if i["name"] in ("look-1", "look-2") and i["state"] == "running"} == plain
    vm.ok("fleet", "destroy", "look")


def test_a_fleet_without_an_id_cannot_grow(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("providers")  # starts the mock clouds
    vm.ok("fleet", "list")  # opens (creates) the store
    db = sqlite3.connect(vm.path / "vm.db")  # a fleet as the previous version recorded it, migrated: no id
    db.execute("INSERT INTO fleets (name, gpu, gpu_count, count, min_count, strategy, providers, region,"
               " reservation, state, message, owner_pid, created_at, updated_at) VALUES ('old', 'H100', 1, 1, 1,"
               " 'spread', '[\"nebius\"]', NULL, 'auto', 'active', '', 0, 0, 0)")
    db.commit()
    db.close()
    before = vm.inventory()
    result = vm("fleet", "scale", "old", "--count", "2")
    assert result.code == 2 and "recorded before fleet ids" in result.err and "cannot grow" in result.err
    assert "vm fleet create --gpu H100:1 --count 1" in result.err
    assert vm.inventory() == before


def test_a_grow_under_injected_faults_leaks_and_doubles_nothing(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "flt", "--providers", "lambda",
                 "-o", "json").json()
    done = vm.mock("faults", "--provider", "lambda", "--error-rate", "0.2", "--drop-rate", "0.2", "--seed", "11")
    assert done.returncode == 0, done.stderr
    grown = vm("fleet", "scale", "flt", "--count", "5", "-o", "json")
    vm.mock("faults", "--provider", "lambda", "--error-rate", "0", "--drop-rate", "0")
    assert grown.code in (0, 7), grown.err
    live = check_members(vm, "flt", made["id"])
    recorded = {m["id"] for m in status(vm, "flt")["members"] if m["state"] == "running"}
    assert {i["id"] for i in live} == recorded  # every VM in the cloud is a recorded member: nothing leaked
    assert len(live) == (5 if grown.code == 0 else len(live)) and len(live) <= 5
    vm.ok("fleet", "destroy", "flt")
    assert live_fleet_vms(vm, "flt") == []


def test_a_grow_when_no_provider_answers_keeps_the_fleet_as_it_was(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "down", "--providers", "nebius",
                 "-o", "json").json()
    assert vm.mock("faults", "--provider", "nebius", "--error-rate", "1").returncode == 0
    result = vm("fleet", "scale", "down", "--count", "3", "--timeout", "5")
    vm.mock("faults", "--provider", "nebius", "--error-rate", "0")
    assert result.code == 8 and "Traceback" not in result.err, result.err
    after = status(vm, "down")
    assert (after["state"], after["count"]) == ("active", 1)
    assert len(check_members(vm, "down", made["id"])) == 1
    vm.ok("fleet", "destroy", "down")


def test_scale_and_repair_refuse_another_account(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "acct", "--providers", "lambda")
    vm.config('[profiles.local]\nembedded = true\n\n'
              '[profiles.other]\nembedded = true\n[profiles.other.lambda]\napi_key = "secret_other_0123456789"\n')
    before = vm.inventory()
    for command in (["scale", "acct", "--count", "2"], ["repair", "acct"]):
        result = vm("fleet", *command, "--profile", "other")
        assert result.code == 4 and "refusing to act on another account" in result.err, result.err
        assert "secret_other" not in result.err + result.out
    assert vm.inventory() == before
    vm.ok("fleet", "destroy", "acct")


@pytest.fixture(scope="module")
def slow_home(tmp_path_factory: pytest.TempPathFactory):
    """Mock clouds ten times slower than usual, so a grow spans several seconds."""
    home = VmHome(tmp_path_factory.mktemp("vm-slow-scale"))
    home.env["VM_MOCK_TIME_SCALE"] = "0.02"
    yield home
    home.stop()


@pytest.mark.parametrize("delay", [0.3, 1.0, 2.0, 3.5])
@pytest.mark.parametrize("resolve", ["destroy", "repair"])
def test_sigkill_during_a_grow_is_resolved(slow_home: VmHome, delay: float, resolve: str) -> None:
    vm = slow_home
    name = f"kg{resolve[0]}{str(delay).replace('.', 'p')}"
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "2", "--name", name, "--providers",
                 "lambda,nebius", "-o", "json").json()
    proc = subprocess.Popen([_vm_binary(), "fleet", "scale", name, "--count", "6"], env=vm.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    if resolve == "repair":
        repaired = vm("fleet", "repair", name)  # it waits for the VMs still booting, then says what runs
        assert repaired.code == 0, repaired.err
        wanted = status(vm, name)["count"]
        assert wanted in (2, 6)  # 2: killed before the scale recorded its new count
        assert len(check_members(vm, name, made["id"])) == wanted
    destroyed = vm("fleet", "destroy", name)
    if destroyed.code != 0:
        destroyed = vm("fleet", "destroy", name)
    assert destroyed.code == 0, destroyed.err
    assert live_fleet_vms(vm, name) == []


@pytest.fixture(params=["sqlite", "postgres"])
def booting_home(request: pytest.FixtureRequest, tmp_path: Path):
    """Mock clouds that take 9 s to boot a Crusoe VM (time scale 0.1), so that a create or scale can be killed
    while its VMs boot; the fleet store SQLite, or PostgreSQL (a fresh database)."""
    home = VmHome(tmp_path / "vm-home")
    home.env["VM_MOCK_TIME_SCALE"] = "0.1"
    if request.param == "postgres":
        home.env["VM_STORE_URL"] = request.getfixturevalue("postgres_url")
    yield home
    home.stop()


def _kill_while_booting(vm: VmHome, args: list[str], fleet: str, count: int) -> None:
    """Run `vm ARGS` and SIGKILL it as soon as `count` VMs of `fleet` exist in the clouds (each create was
    accepted), while they still boot."""
    proc = subprocess.Popen([_vm_binary(), *args], env=vm.env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while len(found := live_fleet_vms(vm, fleet)) < count:
            assert proc.poll() is None and time.monotonic() < deadline, f"vm {' '.join(args)} ended early"
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert any(i["state"] != "running" for i in found), "every VM was up before the kill: nothing was tested"


def _reports_what_runs(vm: VmHome, fleet: str, fleet_id: str, count: int) -> None:
    """`vm fleet repair` settles the killed run, waits for its VMs and says what it then sees: active, `count`
    of `count` running, as `vm fleet status` and `vm fleet list` say right after."""
    repaired = vm("fleet", "repair", fleet, "-o", "json")
    assert repaired.code == 0, repaired.err
    doc = repaired.json()
    assert doc["state"] == "active" and doc["message"] == f"{count} of {count} running", doc
    assert [m["state"] for m in doc["members"]] == ["running"] * count, doc["members"]
    after = status(vm, fleet)
    assert (after["state"], after["message"]) == (doc["state"], doc["message"])
    listed = {f["name"]: f for f in vm.ok("fleet", "list", "-o", "json").json()}
    assert listed[fleet]["state"] == "active"
    assert len(check_members(vm, fleet, fleet_id)) == count


def test_repair_after_a_killed_create_reports_the_fleet_it_waited_for(booting_home: VmHome) -> None:
    vm = booting_home
    vm.ok("providers")  # the mock clouds are up before the create starts
    _kill_while_booting(vm, ["fleet", "create", "--gpu", "L40S", "--count", "6", "--name", "rc1",
                             "--providers", "crusoe"], "rc1", 6)
    fleet_id = live_fleet_vms(vm, "rc1")[0]["name"].split("--")[1].split("-")[0]
    _reports_what_runs(vm, "rc1", fleet_id, 6)
    vm.ok("fleet", "destroy", "rc1")
    assert live_fleet_vms(vm, "rc1") == []


def test_scale_and_repair_after_a_killed_scale_report_the_fleet_as_it_is(booting_home: VmHome) -> None:
    vm = booting_home
    made = vm.ok("fleet", "create", "--gpu", "L40S", "--count", "2", "--name", "rs1", "--providers", "crusoe",
                 "-o", "json").json()
    _kill_while_booting(vm, ["fleet", "scale", "rs1", "--count", "6"], "rs1", 6)
    again = vm("fleet", "scale", "rs1", "--count", "6")  # the killed scale left it unsettled: repair first
    assert again.code == 2 and "rs1 is interrupted" in again.err and "vm fleet repair rs1" in again.err, again.err
    _reports_what_runs(vm, "rs1", made["id"], 6)
    vm.ok("fleet", "destroy", "rs1")
    assert live_fleet_vms(vm, "rs1") == []


NEBIUS_BLOCK = "capacityblockgroup-e00h100block000001"  # holds 16 GPUs: two H100:8 VMs


def test_a_grow_never_plans_on_a_block_the_fleets_own_members_fill(fresh_home: VmHome) -> None:
    """Issue: every grow planned again on a Nebius block that the fleet's own members already fill, and each such
    create failed late (minutes on the real cloud). A fleet knows what its members hold: its dry runs, scales and
    repairs place nothing more there, and a repair uses the room a destroyed member left."""
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "2", "--name", "blk", "--strategy", "cheapest",
                 "--providers", "nebius", "-o", "json").json()
    assert [m["reservation_id"] for m in made["members"]] == [NEBIUS_BLOCK] * 2  # the block is full now

    plan = vm.ok("fleet", "scale", "blk", "--count", "3", "--dry-run", "-o", "json").json()
    assert [p["reservation_id"] for p in plan["placements"]] == [""]
    grown = vm("fleet", "scale", "blk", "--count", "3", "-o", "json")
    assert grown.code == 0, grown.err
    assert "failed:" not in grown.err and grown.err.count(": creating blk--") == 1, grown.err  # no doomed create
    assert sorted(m["reservation_id"] for m in grown.json()["members"]) == ["", NEBIUS_BLOCK, NEBIUS_BLOCK]

    on_block = next(m for m in grown.json()["members"] if m["reservation_id"] == NEBIUS_BLOCK)
    vm.ok("destroy", on_block["id"], "-p", "nebius")  # behind the fleet's back: the block has room for one again
    repaired = vm("fleet", "repair", "blk", "-o", "json")
    assert repaired.code == 0 and "failed:" not in repaired.err, repaired.err
    assert sorted(m["reservation_id"] for m in repaired.json()["members"]) == ["", NEBIUS_BLOCK, NEBIUS_BLOCK]
    assert len(check_members(vm, "blk", made["id"])) == 3
    vm.ok("fleet", "destroy", "blk")
