"""`vm audit` through the real `vm`: in one account, a fleet's members, a VM `vm create` made, a VM made through the
cloud's SDK that carries the fleet's id (adoptable), and a look-alike made the same way (not vm's). The audit
changes nothing: the store and the mock clouds' inventory are the same before and after."""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conftest import VmHome


def launch(vm: VmHome, name: str) -> str:
    """A Lambda VM made through lambda_sdk, as a colleague's script would (vm never hears of it)."""
    from lambda_sdk import LambdaClient

    endpoint = vm.endpoints()["lambda"]
    client = LambdaClient(endpoint["api_key"], base_url=endpoint["url"])
    keys = list(client.list_ssh_keys())
    return client.launch_instance(region_name="us-south-2", instance_type_name="gpu_1x_h100_sxm5",
                                  ssh_key_names=[keys[0].name], name=name).instance_id


def settled(vm: VmHome, count: int) -> list[dict[str, Any]]:
    """The inventory once `count` instances run (booting ones settle in a fraction of a second)."""
    for _ in range(200):
        inventory = vm.inventory()
        if sum(i["state"] == "running" for i in inventory) == count:
            return inventory
        time.sleep(0.05)
    raise AssertionError(f"not {count} running: {vm.inventory()}")


def store_dump(vm: VmHome) -> list[str]:
    with sqlite3.connect(vm.path / "vm.db") as db:
        return list(db.iterdump())


def test_audit_accounts_for_every_vm_and_changes_nothing(fresh_home: VmHome) -> None:
    vm = fresh_home
    fleet = vm.ok("fleet", "create", "--gpu", "H100", "--count", "2", "--name", "aud", "--providers", "lambda",
                  "-o", "json").json()
    solo = vm.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "solo", "-o", "json").json()
    stray = launch(vm, f"aud--{fleet['id']}-5")  # carries the fleet's id: a create whose record was lost
    alike = launch(vm, "aud-7")  # looks like the fleet's, proves nothing
    before = (settled(vm, 5), store_dump(vm))
    doc = vm.ok("audit", "-o", "json").json()
    owners = {v["id"]: (v["owner"], v["fleet"]) for v in doc["vms"]}
    assert owners == {**{m["id"]: ("fleet", "aud") for m in fleet["members"]}, solo["id"]: ("created", None),
                      stray: ("adoptable", "aud"), alike: ("other", None)}
    created_by = {v["id"]: v["created_by"] for v in doc["vms"]}
    assert "@" in created_by[solo["id"]] and created_by[alike] is None
    rates = {v["id"]: v["rate_per_hour"] for v in doc["vms"]}
    assert rates[solo["id"]] == solo["price_per_hour"] and rates[alike] == 3.29
    totals = doc["totals"]
    assert {k: (t["vms"], t["running"]) for k, t in totals.items()} == {
        "fleet": (2, 2), "created": (1, 1), "adoptable": (1, 1), "other": (1, 1)}
    assert totals["other"]["rate_per_hour"] == 3.29
    assert totals["fleet"]["rate_per_hour"] == round(sum(m["price_per_hour"] for m in fleet["members"]), 4)
    table = vm.ok("audit")
    assert "vm: fleet aud has VMs it has no record of: adopt them with `vm fleet reconcile aud`" in table.err
    owner_rows = [r for r in table.rows() if r and r[0] in ("fleet", "created", "adoptable", "other")]
    assert [r[0] for r in owner_rows if len(r) == 4] == ["fleet", "created", "adoptable", "other"]  # the totals
    assert (vm.inventory(), store_dump(vm)) == before  # read-only: nothing written, nothing touched
    # what the hint says: reconcile takes the stray as the fleet's (slot 5 of a 2-VM fleet: destroyed as surplus)
    acted = vm.ok("fleet", "reconcile", "aud", "-o", "json").json()["actions"]
    assert {(a["id"], a["action"]) for a in acted if a["id"] in (stray, alike)} == {(stray, "destroyed"),
                                                                                  (alike, "left alone")}
    again = {v["id"]: v["owner"] for v in vm.ok("audit", "--provider", "lambda", "-o", "json").json()["vms"]}
    assert stray not in again and again[alike] == "other" and solo["id"] not in again


def test_audit_without_a_store_creates_none(fresh_home: VmHome) -> None:
    vm = fresh_home
    doc = vm.ok("audit", "-o", "json").json()
    assert doc["vms"] == [] and set(doc["providers"]) == {"crusoe", "lambda", "nebius"}
    assert not (vm.path / "vm.db").exists()


def test_a_provider_that_fails_is_said_and_the_others_are_audited(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("create", "-p", "nebius", "--gpu", "H100", "--name", "still-seen")
    assert vm.mock("faults", "--provider", "lambda", "--error-rate", "1").returncode == 0
    for command in ("audit", "reservations"):
        result = vm(command, "-o", "json")
        assert result.code == 7, result.err  # partial failure, as vm list
        assert result.error()["code"] == "partial_failure" and "Traceback" not in result.err
        assert "lambda" not in {p if isinstance(p, str) else p["provider"] for p in result.json()["providers"]}
    shown = vm("audit").rows()
    assert any(r[:2] == ["created", "nebius"] for r in shown) and not any("lambda" in r for r in shown)
