"""A VM's whole life on each cloud through the real `vm`, in table and JSON output, checked against the
mock clouds' own inventory."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import VmHome

INSTANCE_KEYS = {"provider", "id", "name", "state", "gpu", "gpu_count", "region", "reserved", "reservation_id",
                 "spot", "price_per_hour", "fleet", "created_at", "public_ip", "ssh"}
HEADER = ["PROVIDER", "ID", "NAME", "STATE", "GPU", "REGION", "RESERVED", "$/H"]


def row_of(rows: list[list[str]], vm_id: str) -> list[str]:
    return next(r for r in rows if len(r) > 1 and r[1] == vm_id)


@pytest.mark.parametrize("provider", ["crusoe", "nebius"])
def test_full_lifecycle_where_stop_start_exists(shared_home: VmHome, provider: str) -> None:
    vm, name = shared_home, f"life-{provider}"
    made = vm.ok("create", "--provider", provider, "--gpu", "H100:8", "--name", name, "--reservation", "none")
    assert made.rows()[0] == HEADER
    _, vm_id, shown_name, state, gpu, region, reserved, price = made.rows()[1]
    assert (shown_name, state, gpu.startswith("H100x"), reserved) == (name, "running", True, "-")
    assert float(price) > 0
    assert f"{provider}: create {name} ({vm_id}): accepted, operation " in made.err
    assert f"{provider}: {name}: running" in made.err
    assert [i["id"] for i in vm.live(name)] == [vm_id]

    got = vm.ok("get", vm_id, "--provider", provider, "-o", "json").json()
    assert set(got) == INSTANCE_KEYS | {"accrued_usd", "rate_per_hour"}  # vm created it: the ledger knows it
    assert (got["id"], got["name"], got["state"], got["provider"], got["region"]) == (vm_id, name, "running",
                                                                                     provider, region)
    raw = vm.ok("get", vm_id, "--provider", provider, "--raw").json()  # --raw implies JSON
    assert set(raw) == INSTANCE_KEYS | {"native", "accrued_usd", "rate_per_hour"} and vm_id in str(raw["native"])
    assert row_of(vm.ok("list").rows(), vm_id)[2:4] == [name, "running"]
    assert vm_id in [i["id"] for i in vm.ok("list", "--provider", provider, "-o", "json").json()]

    assert vm.ok("stop", vm_id, "-p", provider, "-o", "json").json()["state"] == "stopped"
    assert vm.ok("get", vm_id, "-p", provider).rows()[1][3] == "stopped"
    assert row_of(vm.ok("start", vm_id, "-p", provider).rows(), vm_id)[3] == "running"
    assert vm.ok("reboot", vm_id, "-p", provider, "-o", "json").json()["state"] == "running"

    gone = vm.ok("destroy", vm_id, "-p", provider, "-o", "json").json()
    assert gone == {"provider": provider, "id": vm_id, "name": name, "state": "terminated", "note": None}
    assert vm.live(name) == []
    again = vm.ok("destroy", vm_id, "-p", provider)  # already gone is success
    assert again.rows()[0] == ["PROVIDER", "ID", "NAME", "STATE", "NOTE"]
    assert again.rows()[1][:4] == [provider, vm_id, "-", "terminated"]
    assert again.rows()[1][4:] in (["not", "found", "(treated", "as", "destroyed)"], ["already", "destroyed"])
    after = vm("get", vm_id, "-p", provider, "-o", "json")
    assert after.code == 3 or after.json()["state"] == "terminated"


def test_lambda_lifecycle_without_stop(shared_home: VmHome) -> None:
    vm = shared_home
    made = vm.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "life-lambda", "-o", "json").json()
    assert (made["state"], made["reserved"], made["gpu"]) == ("running", False, "H100")
    vm_id = made["id"]
    assert row_of(vm.ok("get", vm_id, "-p", "lambda").rows(), vm_id)[3] == "running"
    assert vm.ok("reboot", vm_id, "-p", "lambda").rows()[1][3] == "running"
    stopped = vm("stop", vm_id, "-p", "lambda")
    assert stopped.code == 5
    assert stopped.err.splitlines()[0] == ("vm: error: Lambda Cloud has no stop/start: instances can only be"
                                           " terminated")
    assert stopped.err.splitlines()[1].startswith("hint: keep it running, reboot it (`vm reboot")
    started = vm("start", vm_id, "-p", "lambda", "-o", "json")
    assert started.code == 5 and started.error()["code"] == "unsupported" and started.error()["provider"] == "lambda"
    assert vm.ok("get", vm_id, "-p", "lambda", "-o", "json").json()["state"] == "running"  # nothing changed
    assert vm.ok("destroy", vm_id, "-p", "lambda").code == 0
    assert vm.live("life-lambda") == []
    assert vm.ok("destroy", vm_id, "-p", "lambda", "-o", "json").json()["state"] == "terminated"


def test_hard_reboot_on_crusoe(shared_home: VmHome) -> None:
    vm = shared_home
    vm_id = vm.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "hard-reboot", "--reservation", "none",
                  "-o", "json").json()["id"]
    assert vm.ok("reboot", vm_id, "-p", "crusoe", "--hard", "-o", "json").json()["state"] == "running"
    vm.ok("destroy", vm_id, "-p", "crusoe")


def test_several_vms_at_once_with_their_names(shared_home: VmHome) -> None:
    vm = shared_home
    made = vm.ok("create", "-p", "nebius", "--gpu", "H100", "--count", "2", "--name", "pair", "-o", "json").json()
    assert sorted(i["name"] for i in made) == ["pair-1", "pair-2"]
    assert {i["state"] for i in made} == {"running"}
    ids = [i["id"] for i in made]
    gone = vm.ok("destroy", *ids, "-p", "nebius", "-o", "json").json()
    assert sorted(g["id"] for g in gone) == sorted(ids)
    assert vm.live("pair-1") == vm.live("pair-2") == []


def test_no_wait_returns_the_operation_at_once(shared_home: VmHome) -> None:
    vm = shared_home
    started = vm.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "nowait", "--reservation", "none",
                    "--no-wait", "-o", "json").json()
    assert started["action"] == "create" and started["operation_id"] and started["name"] == "nowait"
    assert [i["id"] for i in vm.live("nowait")] == [started["id"]]
    table = vm.ok("destroy", started["id"], "-p", "crusoe", "--no-wait")
    assert table.rows()[0] == ["PROVIDER", "ID", "NAME", "ACTION", "OPERATION"]
    assert table.rows()[1][:4] == ["crusoe", started["id"], "nowait", "destroy"]


def test_unknown_instance_is_exit_3(shared_home: VmHome) -> None:
    unknown = {"crusoe": "00000000-0000-4000-8000-000000000000", "lambda": "0" * 32,
               "nebius": "computeinstance-e00zzzzzzzzzzzzzzz"}
    for provider, vm_id in unknown.items():
        result = shared_home("get", vm_id, "-p", provider, "-o", "json")
        assert result.code == 3, result.err
        assert result.error()["code"] == "not_found" and result.error()["provider"] == provider
        table = shared_home("get", vm_id, "-p", provider)
        assert table.code == 3 and table.err.startswith("vm: error: ") and "Traceback" not in table.err
        assert shared_home.ok("destroy", vm_id, "-p", provider).code == 0  # already gone
