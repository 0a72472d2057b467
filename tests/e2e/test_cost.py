"""`vm cost` through the real `vm`: VMs made with `vm create` and `vm fleet create`, destroyed, then costed from
the store alone (the mock clouds stopped: no cloud is asked), as the ledger's arithmetic says and within the
documented tolerance of what the mock clouds would bill (GET /billing); `vm get` and `vm fleet status` show the
accrued cost; bad periods are usage errors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from mock_clouds import control
from vm_core.fleet.store import SqliteFleetStore
from vm_core.providers.billing_rules import RULES
from vm_core.spend.cost import vm_costs

if TYPE_CHECKING:
    from conftest import VmHome

# How far `vm cost` may be from the cloud's own bill, per VM, and why: vm dates each change when it saw it (the
# end of its wait for the new state, the answer to a delete), the cloud when it happened; each change may be
# seen up to a poll interval late or early. At the tests' time scale (0.002) that is well under two seconds per
# change; a per-minute cloud (Lambda) may then round a run to a different minute: one minute more.
SECONDS_PER_CHANGE = 2.0


def _cost(vm: VmHome, *args: str) -> dict[str, Any]:
    doc: dict[str, Any] = vm.ok("cost", "--since", "1d", *args, "-o", "json").json()
    return doc


def _billing(vm: VmHome) -> dict[str, Any]:
    found: dict[str, Any] = control.admin_call(vm.endpoints(), "GET", "/billing", timeout=60)
    return found


def test_cost_of_single_vms_and_a_fleet_from_the_store_alone(fresh_home: VmHome) -> None:
    vm = fresh_home
    crusoe = vm.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "cost-c", "-o", "json").json()
    lam = vm.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "cost-l", "-o", "json").json()
    vm.ok("fleet", "create", "--name", "cost-f", "--gpu", "H100:8", "--count", "2", "-o", "json")
    shown = vm.ok("get", crusoe["id"], "-p", "crusoe", "-o", "json").json()
    assert shown["accrued_usd"] >= 0 and shown["rate_per_hour"] == crusoe["price_per_hour"]
    table = vm.ok("get", crusoe["id"], "-p", "crusoe").out
    assert "accrued: " in table and f"billing {crusoe['price_per_hour']:.2f} $/h now" in table
    status = vm.ok("fleet", "status", "cost-f", "-o", "json").json()
    assert status["rate_per_hour"] == pytest.approx(status["price_per_hour"]) and status["accrued_usd"] >= 0
    assert "accrued " in vm.ok("fleet", "status", "cost-f").out
    vm.ok("stop", crusoe["id"], "-p", "crusoe")
    vm.ok("start", crusoe["id"], "-p", "crusoe")
    vm.ok("destroy", crusoe["id"], "-p", "crusoe", "-y")
    vm.ok("destroy", lam["id"], "-p", "lambda", "-y")
    vm.ok("fleet", "destroy", "cost-f", "-y")
    billing = _billing(vm)
    vm.stop()  # from here on no cloud answers: vm cost must not need one

    by_vm = _cost(vm, "--by", "vm")
    store = SqliteFleetStore(vm.path / "vm.db")
    assert all(v.closed_at is not None for v in store.ledger_vms())  # every VM closed: the figures are final
    expected = {f"{c.vm.provider}/{c.vm.instance_id}": c for c in
                vm_costs(store.ledger_vms(), store.ledger_intervals(), since=None, until=None, now=2e9, rules=RULES)}
    assert {g["group"] for g in by_vm["groups"]} == set(expected) and len(expected) == 4
    for group in by_vm["groups"]:
        cost = expected[group["group"]]
        assert group["billed_hours"] == pytest.approx(cost.billed_seconds / 3600, abs=1e-6)
        assert group["accrued_usd"] == pytest.approx(cost.accrued_usd, abs=1e-6)
        assert group["rate_per_hour"] == 0 and group["vms"] == 1 and group["priced"]
    assert by_vm["total"]["accrued_usd"] == pytest.approx(sum(c.accrued_usd for c in expected.values()), abs=1e-5)
    assert by_vm["total"]["gpu_hours"] == pytest.approx(
        sum(c.billed_seconds * c.vm.gpu_count for c in expected.values()) / 3600, abs=1e-5)
    by_fleet = {g["group"]: g for g in _cost(vm)["groups"]}
    assert set(by_fleet) == {"", "cost-f"} and by_fleet["cost-f"]["vms"] == 2 and by_fleet[""]["vms"] == 2
    with pytest.raises(control.NotRunning):
        control.read_endpoints(vm.mock_dir)  # nor did it start the mock clouds again

    _within_the_clouds_bill(by_vm, billing, store)


def _within_the_clouds_bill(by_vm: dict[str, Any], billing: dict[str, Any], store: SqliteFleetStore) -> None:
    """Each VM's billed time within SECONDS_PER_CHANGE per state change the ledger saw (and a minute for a
    per-minute cloud) of the cloud's own, and its cost within that time at its price."""
    clouds = {f"{v['provider']}/{v['id']}": v for v in billing["vms"]}
    changes = {f"{i.provider}/{i.instance_id}": 0 for i in store.ledger_intervals()}
    for i in store.ledger_intervals():
        changes[f"{i.provider}/{i.instance_id}"] += 1
    for group in by_vm["groups"]:
        cloud = clouds[group["group"]]
        provider = group["group"].split("/")[0]
        slack = SECONDS_PER_CHANGE * (changes[group["group"]] + 1) + RULES[provider].granularity_seconds
        assert abs(group["billed_hours"] * 3600 - cloud["billed_seconds"]) <= slack, (group, cloud)
        price = max(i["price_per_hour"] or 0 for i in cloud["intervals"])
        assert abs(group["accrued_usd"] - cloud["cost_usd"]) <= slack * price / 3600 + 1e-6, (group, cloud)


def test_a_bad_period_or_grouping_is_a_usage_error_that_reads_nothing(fresh_home: VmHome) -> None:
    vm = fresh_home
    for args, says in [(("--since", "yesterday"), "'yesterday' is not a date or date and time"),
                       (("--until", "2026-02-30"), "'2026-02-30' is not a date"),
                       (("--since", "1h", "--until", "2h"), "is empty: since must be before until"),
                       (("--by", "team"), "'team' is not one of"),
                       (("-o", "yaml"), "'yaml' is not one of")]:
        done = vm("cost", *args, "-o", "json") if args[0] != "-o" else vm("cost", *args)
        assert done.code == 2, (args, done.err)
        assert says in done.err and "Traceback" not in done.err
    assert not (vm.path / "vm.db").exists()  # nothing was created, not even the store


def test_an_empty_store_costs_nothing_this_month_and_csv_has_its_schema(fresh_home: VmHome) -> None:
    vm = fresh_home
    empty = vm.ok("cost", "-o", "json").json()
    assert empty["groups"] == [] and empty["total"]["vms"] == 0 and empty["since"].endswith("-01T00:00:00Z")
    table = vm.ok("cost")
    assert table.rows()[0] == ["GROUP", "VMS", "GPU-HOURS", "BILLED", "HOURS", "ACCRUED", "USD", "$/H", "NOW"]
    assert "the first day of this month; --since to change" in table.out and "estimates by list price" in table.out
    csv = vm.ok("cost", "-o", "csv", "--by", "user")
    assert csv.out.splitlines() == ["by,group,vms,gpu_hours,billed_hours,accrued_usd,rate_per_hour,priced",
                                    "total,,0,0.0,0.0,0.0,0.0,true"]
    assert "estimates by list price" in csv.err


def test_two_users_costs_in_one_postgresql_store_by_user(fresh_home: VmHome, postgres_url: str) -> None:
    vm = fresh_home
    vm.env["VM_STORE_URL"] = postgres_url
    ana, bo = ({"USER": who, "LOGNAME": who} for who in ("ana", "bo"))
    mine = vm.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "ana-1", "-o", "json", env=ana).json()
    theirs = vm.ok("create", "-p", "lambda", "--gpu", "H100", "--name", "bo-1", "-o", "json", env=bo).json()
    vm.ok("destroy", mine["id"], "-p", "crusoe", "-y", env=ana)
    vm.ok("destroy", theirs["id"], "-p", "lambda", "-y", env=bo)
    doc = vm.ok("cost", "--since", "1h", "--by", "user", "-o", "json", env=bo).json()  # anyone sees the team's
    groups = {g["group"].split("@")[0]: g for g in doc["groups"]}
    assert set(groups) == {"ana", "bo"} and all(g["vms"] == 1 and g["accrued_usd"] > 0 for g in groups.values())
    assert doc["total"]["accrued_usd"] == pytest.approx(sum(g["accrued_usd"] for g in groups.values()), abs=1e-5)
    by_provider = {g["group"] for g in vm.ok("cost", "--by", "provider", "-o", "json").json()["groups"]}
    assert by_provider == {"crusoe", "lambda"}  # summed by the database, and costed per run (per-minute Lambda)
    lam = groups["bo"]
    assert lam["billed_hours"] * 3600 == pytest.approx(round(lam["billed_hours"] * 60) * 60, abs=0.01)  # JSON: 6 digits
    assert not (vm.path / "vm.db").exists()  # the PostgreSQL store, not a SQLite file
