"""Fleet identity through the real `vm`: a fleet touches only VMs that carry its id, in a shared account.

The clouds' own inventory is the ground truth. Two VM_HOMEs (two people, each with their own store) share one
set of mock clouds by pointing their embedded mock-clouds directory at the same servers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import VmHome


def live_names(vm: VmHome, prefix: str, *, members: bool = True) -> list[str]:
    """Names of live VMs starting with `prefix`; without fleet members' names (`--`) unless `members`."""
    return sorted(i["name"] for i in vm.inventory() if i["name"].startswith(prefix)
                  and i["state"] not in ("terminated", "terminating") and (members or "--" not in i["name"]))


@pytest.fixture
def colleague(fresh_home: VmHome, tmp_path: Path):
    """A second VM_HOME (own config and fleet store) on the same mock clouds as `fresh_home`."""
    fresh_home.ok("providers")  # start the shared clouds
    other = tmp_path / "colleague"
    other.mkdir()
    (other / "mock-clouds").symlink_to(fresh_home.mock_dir)
    home = VmHome(other)
    yield home


def test_plain_vms_with_the_fleet_name_are_left_alone_by_destroy(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("create", "--provider", "nebius", "--gpu", "H100", "--count", "2", "--name", "job")
    made = vm.ok("fleet", "create", "--gpu", "H100:1", "--count", "1", "--name", "job", "--providers", "nebius",
                 "-o", "json").json()
    assert live_names(vm, "job") == sorted(["job-1", "job-2", f"job--{made['id']}-0"])
    gone = vm.ok("fleet", "destroy", "job", "-o", "json")
    actions = {(a["name"], a["action"]) for a in gone.json()["actions"]}
    assert actions == {(f"job--{made['id']}-0", "destroyed"), ("job-1", "left alone"), ("job-2", "left alone")}
    assert "job-1" in gone.err and "not ours" in gone.err
    assert live_names(vm, "job") == ["job-1", "job-2"]


def test_reconcile_reports_look_alikes_and_never_destroys_them(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("create", "--provider", "crusoe", "--gpu", "H100:8", "--count", "2", "--name", "rec", "--reservation",
          "none")
    vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "1", "--name", "rec", "--providers", "crusoe")
    dry = vm.ok("fleet", "reconcile", "rec", "--dry-run", "-o", "json")
    assert dry.json()["dry_run"] is True
    assert sorted((a["name"], a["action"]) for a in dry.json()["actions"]) == [("rec-1", "left alone"),
                                                                             ("rec-2", "left alone")]
    result = vm.ok("fleet", "reconcile", "rec")
    assert "rec-1" in result.err and "rec-2" in result.err and "left alone" in result.err
    assert live_names(vm, "rec-", members=False) == ["rec-1", "rec-2"]
    assert len(live_names(vm, "rec--")) == 1
    vm.ok("fleet", "destroy", "rec")
    assert live_names(vm, "rec-") == ["rec-1", "rec-2"]


def test_two_people_with_same_named_fleets_each_destroy_exactly_their_own(fresh_home: VmHome,
                                                                          colleague: VmHome) -> None:
    mine = fresh_home.ok("fleet", "create", "--gpu", "H100", "--count", "3", "--name", "train", "--providers",
                         "lambda,nebius", "-o", "json").json()
    theirs = colleague.ok("fleet", "create", "--gpu", "H100", "--count", "3", "--name", "train", "--providers",
                          "lambda,nebius", "-o", "json").json()
    assert mine["id"] != theirs["id"]
    their_ids = {m["id"] for m in theirs["members"]}
    fresh_home.ok("fleet", "reconcile", "train")
    gone = fresh_home.ok("fleet", "destroy", "train", "-o", "json").json()
    assert gone["destroyed"] == 3 and gone["forgotten"]
    assert {a["id"] for a in gone["actions"] if a["action"] == "destroyed"} == {m["id"] for m in mine["members"]}
    left = {i["id"] for i in fresh_home.inventory() if i["name"].startswith("train-") and i["state"] == "running"}
    assert left == their_ids
    status = colleague.ok("fleet", "status", "train", "-o", "json").json()
    assert status["state"] == "active" and {m["id"] for m in status["members"]} == their_ids
    colleague.ok("fleet", "destroy", "train")
    assert live_names(fresh_home, "train-") == []


def test_a_fleet_refuses_another_account(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "acct", "--providers", "lambda")
    vm.config('[profiles.local]\nembedded = true\n\n'
              '[profiles.other]\nembedded = true\n[profiles.other.lambda]\napi_key = "secret_other_0123456789"\n')
    before = vm.inventory()
    for command in (["status", "acct"], ["destroy", "acct", "-y"], ["reconcile", "acct"]):
        result = vm("fleet", *command, "--profile", "other")
        assert result.code == 4, result.err
        assert "refusing to act on another account" in result.err and "--profile local" in result.err
        assert "secret_other" not in result.err + result.out
    assert vm.inventory() == before
    vm.ok("fleet", "status", "acct")  # without --profile the fleet's own profile is used
    vm.ok("fleet", "destroy", "acct")


def test_status_derives_the_state_from_what_it_saw(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "2", "--name", "hand", "--providers", "nebius",
                 "-o", "json").json()
    first, second = made["members"]
    vm.ok("destroy", first["id"], "--provider", "nebius")
    status = vm.ok("fleet", "status", "hand", "-o", "json").json()
    assert status["state"] == "degraded"
    assert {m["id"]: m["state"] for m in status["members"]} == {first["id"]: "missing", second["id"]: "running"}
    assert [(f["name"], f["state"]) for f in vm.ok("fleet", "list", "-o", "json").json()] == [("hand", "degraded")]
    vm.ok("destroy", second["id"], "--provider", "nebius")
    assert vm.ok("fleet", "status", "hand", "-o", "json").json()["state"] == "failed"
    assert vm.ok("fleet", "list").rows()[1][:2] == ["hand", "failed"]
    vm.ok("fleet", "destroy", "hand")
    assert vm.ok("fleet", "list", "-o", "json").json() == []


def test_a_store_of_the_previous_version_never_adopts_by_name(fresh_home: VmHome) -> None:
    import sqlite3

    vm = fresh_home
    vm.ok("create", "--provider", "crusoe", "--gpu", "H100:8", "--name", "legacy-0", "--reservation", "none")
    vm.ok("fleet", "list")  # opens (creates) the store
    db = sqlite3.connect(vm.path / "vm.db")  # a fleet as the previous version recorded it, migrated: no id
    db.execute("INSERT INTO fleets (name, gpu, gpu_count, count, min_count, strategy, providers, region,"
               " reservation, state, message, owner_pid, created_at, updated_at) VALUES ('legacy', 'H100', 8, 1, 1,"
               " 'spread', '[\"crusoe\"]', NULL, 'auto', 'active', '', 0, 0, 0)")
    db.execute("INSERT INTO members (fleet, slot, attempt, provider, name, region, shape, reservation_id, state,"
               " instance_id, operation_id, price_per_hour, error, created_at, updated_at) VALUES ('legacy', 0, 1,"
               " 'crusoe', 'legacy-0', '', '', '', 'intent', '', '', NULL, '', 0, 0)")
    db.commit()
    db.close()
    result = vm.ok("fleet", "destroy", "legacy", "-o", "json")
    assert ("legacy-0", "left alone") in {(a["name"], a["action"]) for a in result.json()["actions"]}
    assert "recorded before fleet ids" in result.err
    assert live_names(vm, "legacy") == ["legacy-0"]


def test_vm_create_cannot_make_a_fleet_member_name(fresh_home: VmHome) -> None:
    result = fresh_home("create", "--provider", "crusoe", "--gpu", "H100:8", "--name", "train--abcdefgh-0")
    assert result.code == 2 and "reserved for fleet members" in result.err


def test_a_member_is_the_same_json_in_fleet_list_vm_list_and_vm_get(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100:1", "--count", "1", "--name", "same", "--providers", "nebius",
                 "-o", "json").json()
    member = made["members"][0]
    got = vm.ok("get", member["id"], "--provider", "nebius", "-o", "json").json()
    listed = next(i for i in vm.ok("list", "-o", "json").json() if i["id"] == member["id"])
    recorded = vm.ok("fleet", "list", "-o", "json").json()[0]["members"][0]
    assert got["fleet"] == listed["fleet"] == recorded["fleet"] == "same"
    assert set(got) - {"accrued_usd", "rate_per_hour"} == set(listed) == set(recorded)  # get adds the ledger's
    assert got["rate_per_hour"] == got["price_per_hour"]
    assert (recorded["gpu"], recorded["gpu_count"]) == (got["gpu"], got["gpu_count"]) == ("H100", 1)
    vm.ok("fleet", "destroy", "same")


def test_fleet_destroy_asks_on_a_terminal_and_scripts_are_not_asked(fresh_home: VmHome) -> None:
    from .test_single_vms import on_a_terminal

    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "2", "--name", "asked", "--providers", "nebius",
                 "-o", "json").json()
    code, out, screen = on_a_terminal(vm, ["fleet", "destroy", "asked"], b"n\n")
    assert code == 1 and out == ""
    assert "Destroy fleet asked (running now: $" in screen and "[y/N]" in screen
    assert all(m["id"] in screen for m in made["members"])
    assert "hint: vm fleet destroy asked --yes" in screen
    assert len(live_names(vm, "asked--")) == 2
    code, _, screen = on_a_terminal(vm, ["fleet", "destroy", "asked", "--yes"], None)
    assert code == 0 and "[y/N]" not in screen
    assert live_names(vm, "asked--") == []
