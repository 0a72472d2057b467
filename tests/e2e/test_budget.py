"""Spend budgets through the real `vm`, checked against the mock clouds' inventory: a plan whose rate over its
ttl is above its --budget creates nothing; at 80 % the commands that touch the fleet warn once; at 100 % `vm fleet
reap`, the only command run, stops the fleet (or destroys it where a member cannot stop, or when asked); a Lambda
member on a reservation, which can be neither stopped nor destroyed, is said; a user's monthly budget refuses new
VMs on both store backends, other users' spend not counted.

Spend is driven by the ledger: a VM of the fleet (or of the user) that ran in the past at a known price, written
with explicit past times through the store's ledger API, so no test waits for money to accrue."""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from vm_core.fleet.lease import user_at_host
from vm_core.fleet.location import store_at
from vm_core.spend.ledger import LedgerVm, Observation, Pricing

if TYPE_CHECKING:
    from vm_core.fleet.store import FleetStore

    from conftest import VmHome

HOUR = 3600.0
LAMBDA_RESERVATION = "9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9"  # the mock's; Lambda will not terminate its VMs
WARNING = re.compile(r"vm: warning: fleet (\S+) has spent \$(\d+\.\d\d) of \$(\d+\.\d\d) \((\d+)%\) of its budget")


def store_of(vm: VmHome) -> FleetStore:
    return store_at(vm.env.get("VM_STORE_URL") or None, vm.path)


def past_spend(vm: VmHome, usd: float, *, fleet: str = "", fleet_id: str = "", user: str | None = None,
               tag: str = "past") -> None:
    """A VM that ran for the hour before the last one at `usd` $/h (so it cost `usd`), in the ledger of `vm`'s
    store, for `fleet` (and id) or as a single VM of `user` (default: this user@host)."""
    store, ended = store_of(vm), time.time() - HOUR
    vm_id = f"{tag}-{fleet or 'single'}-{int(usd * 100)}"
    store.record_vm(LedgerVm("crusoe", "past-account", vm_id, vm_id, "h100-80gb-sxm-ib.8x", "us-east1-a", "H100", 8,
                             Pricing.ON_DEMAND, "", fleet, fleet_id, "local", user or user_at_host(), ended - HOUR),
                    "running", price_per_hour=usd, source="create")
    store.observe([Observation("crusoe", "past-account", vm_id, "terminated", ended, "destroy")])


def fleet_vms(vm: VmHome, fleet: str) -> dict[str, str]:
    """provider -> state of the fleet's VMs in the mock clouds (terminated ones left out)."""
    return {i["provider"]: i["state"] for i in vm.inventory()
            if i["name"].startswith(f"{fleet}--") and i["state"] != "terminated"}


def warnings(err: str) -> list[tuple[str, float, float, int]]:
    return [(m[0], float(m[1]), float(m[2]), int(m[3])) for m in WARNING.findall(err)]


def reaped(vm: VmHome, *args: str) -> tuple[int, dict[str, dict[str, Any]], str]:
    run = vm("fleet", "reap", "--yes", "-o", "json", *args)
    return run.code, {f["name"]: f for f in run.json()["fleets"]}, run.err


# ------------------------------------------------------------------------------------------ plan time
def test_a_plan_above_its_budget_over_its_ttl_creates_nothing(shared_home: VmHome) -> None:
    vm = shared_home
    args = ["fleet", "create", "--gpu", "H100:8", "--count", "2", "--providers", "nebius", "--name", "bud-plan"]
    plan = vm.ok(*args, "--dry-run", "-o", "json").json()
    rate = plan["price_per_hour"]
    budget = round(rate * 8 - 1, 2)  # 8 h at the plan's rate is $1 more
    before = vm.inventory()
    refused = vm(*args, "--budget", str(budget), "--ttl", "8h", "-o", "json")
    assert refused.code == 6 and refused.out == "", refused.err
    error = refused.error()
    assert error["code"] == "budget"
    assert f"${rate:.2f}/h, so ${rate * 8:.2f} over its ttl of 8 h" in error["message"]
    assert f"--budget {budget:.2f}" in error["message"] and "--ttl" in error["suggestion"]
    assert vm.inventory() == before and vm("fleet", "status", "bud-plan").code == 3
    dry = vm(*args, "--budget", str(budget), "--ttl", "8h", "--dry-run")
    assert dry.code == 6 and "over its ttl of 8 h" in dry.err and "Traceback" not in dry.err
    assert vm.ok(*args, "--budget", str(budget + 2), "--ttl", "8h", "--dry-run").code == 0
    assert vm.inventory() == before


@pytest.mark.parametrize("options", [["--budget", "0"], ["--budget", "-5"], ["--budget", "abc"],
                                     ["--budget", "nan"], ["--on-budget", "stop"],
                                     ["--budget", "10", "--on-budget", "pause"]])
def test_bad_budget_options_are_usage_errors(shared_home: VmHome, options: list[str]) -> None:
    vm = shared_home
    before = vm.inventory()
    run = vm("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "bud-bad", *options)
    assert run.code == 2 and "Traceback" not in run.err and run.err.startswith(("Usage", "vm: error"))
    assert vm.inventory() == before


# ------------------------------------------------------------------------------------------- warnings
def test_at_80_percent_every_command_touching_the_fleet_warns_once(shared_home: VmHome) -> None:
    vm = shared_home
    made = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "1", "--providers", "crusoe", "--name",
                 "bud-warn", "--budget", "1000", "-o", "json").json()
    quiet = vm.ok("fleet", "status", "bud-warn")
    assert warnings(quiet.err) == []  # a minute's spend of one VM is far from 80 %
    past_spend(vm, 850.0, fleet="bud-warn", fleet_id=made["id"])
    [member] = made["members"]
    for command in (["fleet", "status", "bud-warn"], ["fleet", "list"], ["fleet", "repair", "bud-warn"],
                    ["get", member["id"], "-p", "crusoe"], ["fleet", "scale", "bud-warn", "--count", "1"]):
        said = warnings(vm.ok(*command).err)
        assert len(said) == 1, (command, said)
        [(name, spent, budget, share)] = said
        assert (name, budget, share) == ("bud-warn", 1000.0, 85) and 850 <= spent < 851
    status = vm.ok("fleet", "status", "bud-warn").err
    assert "at 100 % the next `vm fleet reap` stops it" in status
    told = [e for e in store_of(vm).list_events(fleet="bud-warn") if e.kind == "budget_warning"]
    assert len(told) == 1 and told[0].details["budget"] == 1000.0 and told[0].details["fleet_id"] == made["id"]
    vm.ok("fleet", "destroy", "bud-warn")


# ---------------------------------------------------------------------------------------- enforcement
def test_at_100_percent_reap_stops_a_fleet_whose_members_can_stop(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "2", "--providers", "crusoe,nebius", "--name",
                 "bud-stop", "--budget", "50", "-o", "json").json()
    assert fleet_vms(vm, "bud-stop") == {"crusoe": "running", "nebius": "running"}
    past_spend(vm, 60.0, fleet="bud-stop", fleet_id=made["id"])
    dry_code, dry, _ = reaped(vm, "--dry-run")
    assert dry_code == 0 and dry["bud-stop"]["result"] == "would-stop" and dry["bud-stop"]["cause"] == "budget"
    assert fleet_vms(vm, "bud-stop") == {"crusoe": "running", "nebius": "running"}  # a dry run changes nothing
    code, fleets, err = reaped(vm)  # the one command run: nothing else looked at the fleet
    assert code == 0, err
    doc = fleets["bud-stop"]
    assert (doc["result"], doc["cause"], doc["vms"]) == ("stopped", "budget", 2)
    assert doc["reason"].startswith("reached its budget: $6") and "of $50.00" in doc["reason"]
    assert "fleet bud-stop reached its budget: $6" in err and ": stopping it" in err
    assert fleet_vms(vm, "bud-stop") == {"crusoe": "stopped", "nebius": "stopped"}
    [listed] = vm.ok("fleet", "list", "-o", "json").json()
    assert listed["state"] == "stopped"
    again = vm("fleet", "reap", "--yes")
    assert again.code == 0 and "no fleet has expired or reached its budget" in again.err  # enforced once
    reached = [e for e in store_of(vm).list_events(fleet="bud-stop") if e.kind == "budget_reached"]
    assert [(e.details["result"], e.details["budget"]) for e in reached] == [("stopped", 50.0)]
    vm.ok("fleet", "destroy", "bud-stop")


def test_at_100_percent_reap_destroys_when_a_member_cannot_stop_or_when_asked(fresh_home: VmHome) -> None:
    vm = fresh_home
    mixed = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "2", "--providers", "crusoe,lambda", "--name",
                  "bud-mixed", "--budget", "20", "-o", "json").json()
    asked = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "1", "--providers", "nebius", "--name",
                  "bud-asked", "--budget", "20", "--on-budget", "destroy", "-o", "json").json()
    under = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "1", "--providers", "nebius", "--name",
                  "bud-under", "--budget", "1000", "-o", "json").json()
    past_spend(vm, 25.0, fleet="bud-mixed", fleet_id=mixed["id"])
    past_spend(vm, 25.0, fleet="bud-asked", fleet_id=asked["id"])
    code, fleets, err = reaped(vm)
    assert code == 0, err
    assert (fleets["bud-mixed"]["result"], fleets["bud-mixed"]["vms"]) == ("destroyed", 2)
    assert "lambda cannot stop VMs, so it is destroyed" in fleets["bud-mixed"]["reason"]
    assert (fleets["bud-asked"]["result"], fleets["bud-asked"]["vms"]) == ("destroyed", 1)
    assert "bud-under" not in fleets
    assert fleet_vms(vm, "bud-mixed") == {} and fleet_vms(vm, "bud-asked") == {}
    assert [f["name"] for f in vm.ok("fleet", "list", "-o", "json").json()] == ["bud-under"]
    assert fleet_vms(vm, "bud-under") == {"nebius": "running"} and under["state"] == "active"
    vm.ok("fleet", "destroy", "bud-under")


def test_a_lambda_reservation_member_that_can_be_neither_stopped_nor_destroyed_is_said(fresh_home: VmHome) -> None:
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--providers", "lambda", "--reservation",
                 LAMBDA_RESERVATION, "--strict", "--name", "bud-resv", "--budget", "5", "-o", "json").json()
    [member] = made["members"]
    past_spend(vm, 6.0, fleet="bud-resv", fleet_id=made["id"])
    code, fleets, err = reaped(vm)
    assert code == 7
    doc = fleets["bud-resv"]
    assert (doc["result"], doc["cause"]) == ("left", "budget")
    said = (f"1 VM(s) ({member['name']}) can be neither stopped nor destroyed through their cloud's API (a Lambda "
            f"reservation): they keep billing ${member['price_per_hour']:.2f}/h")
    assert said in doc["reason"] and said in err
    assert fleet_vms(vm, "bud-resv") == {"lambda": "running"}
    table = vm("fleet", "reap", "--yes")  # said again by every enforcing run, never passed over in silence
    assert table.code == 7 and said in table.err
    vm.ok("fleet", "forget", "bud-resv")


# ------------------------------------------------------------------------------------- monthly budget
@pytest.fixture(params=["sqlite", "postgres"])
def budgeted_home(request: pytest.FixtureRequest, fresh_home: VmHome) -> VmHome:
    """A home whose profile `local` has a monthly budget of $100, on each store backend."""
    vm = fresh_home
    if request.param == "postgres":
        vm.env["VM_STORE_URL"] = request.getfixturevalue("postgres_url")
    vm.ok("providers")  # the mock clouds started before the config file exists
    vm.config("[profiles.local]\nembedded = true\nmonthly_budget = 100\n")
    return vm


def test_a_users_monthly_budget_warns_then_refuses_new_vms(budgeted_home: VmHome) -> None:
    vm = budgeted_home
    past_spend(vm, 5000.0, user="someone@else", tag="other")  # another user's spend in the same store
    past_spend(vm, 85.0, tag="mine")
    made = vm.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--name", "month-1", "-o", "json")
    assert f"{user_at_host()} has spent $85.00 of $100.00 (85%) of the monthly budget of profile local" in made.err
    vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--providers", "nebius", "--name", "month-f")
    past_spend(vm, 20.0, tag="more")
    before = vm.inventory()
    for args in (["create", "-p", "crusoe", "--gpu", "H100:8", "--name", "month-2"],
                 ["fleet", "create", "--gpu", "H100", "--count", "1", "--name", "month-g"],
                 ["fleet", "scale", "month-f", "--count", "2"]):
        refused = vm(*args, "-o", "json")
        assert refused.code == 6, (args, refused.err)
        error = refused.error()
        assert error["code"] == "budget" and "no new VM is created until next month" in error["message"]
        assert "monthly_budget" in error["suggestion"]
    assert vm.inventory() == before and vm("fleet", "status", "month-g").code == 3
    dry = vm("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "month-g", "--dry-run")
    assert dry.code == 6 and "of the monthly budget of profile local" in dry.err
    vm.ok("fleet", "scale", "month-f", "--count", "1")  # not a new VM: allowed
    vm.ok("destroy", made.json()["id"], "-p", "crusoe", "-y")  # destroying is never refused
    vm.ok("fleet", "destroy", "month-f")


# ----------------------------------------------------------------------------------------------- docs
def test_the_command_lines_of_the_docs_are_true(fresh_home: VmHome) -> None:
    """docs/fleets.md "Spend budgets": the first line is refused when 8 h of its plan cost more than $500, the
    second creates the fleet with its budget recorded, reap finds nothing due."""
    vm = fresh_home
    docs = (Path(__file__).resolve().parents[2] / "docs" / "fleets.md").read_text()
    [block] = [b for b in re.findall(r"```bash\n(.*?)```", docs, re.S) if "--on-budget destroy" in b]
    refused, made, reap = [shlex.split(line.split("#")[0])[1:] for line in block.strip().splitlines()]
    rate = vm.ok(*refused[:-4], "--dry-run", "-o", "json").json()["price_per_hour"]
    assert rate * 8 > 500  # the comment's premise, on the mocks' prices
    run = vm(*refused)
    assert run.code == 6 and "over its ttl of 8 h, above --budget 500.00" in run.err
    created = vm.ok(*made, "--name", "docs-budget", "-o", "json").json()
    record = store_of(vm).get_fleet("docs-budget")
    assert record is not None and (record.budget, record.on_budget.value) == (500.0, "destroy")
    assert created["state"] == "active"
    done = vm(*reap)
    assert done.code == 0 and "no fleet has expired or reached its budget" in done.err
    vm.ok("fleet", "destroy", "docs-budget")


def test_the_readme_section_is_true(fresh_home: VmHome) -> None:
    """The README's "Spend budgets": its first line is refused (exit 6), the second creates the fleet with its
    budget, the third finds nothing due; the setting it names is read as it says."""
    vm = fresh_home
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("\n## Spend budgets\n"):]
    section = section[:section.index("\n## ", 1)]
    [block] = re.findall(r"```bash\n(.*?)```", section, re.S)
    lines = [shlex.split(line.split("#")[0]) for line in block.strip().splitlines()]
    assert all(words[:3] == ["hatch", "run", "vm"] for words in lines)
    refused, made, reap = [words[3:] for words in lines]
    run = vm(*refused)
    assert run.code == 6 and "over its ttl of 8 h, above --budget 500.00" in run.err
    vm.ok(*made)
    record = store_of(vm).get_fleet("capped")
    assert record is not None and (record.budget, record.on_budget.value) == (500.0, "destroy")
    assert vm(*reap).code == 0
    assert "monthly_budget = 500.0" in section
    vm.ok("fleet", "destroy", "capped")


def test_the_watchdog_enforces_a_reached_budget_with_no_other_command(fresh_home: VmHome) -> None:
    """`vm watchdog --once` (its `budget` duty) stops a fleet that reached its budget, as `vm fleet reap` does,
    recording budget_reached as the watchdog's; a fleet below its budget is left running."""
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "2", "--providers", "crusoe,nebius", "--name",
                 "bud-wd", "--budget", "50", "-o", "json").json()
    vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "1", "--providers", "nebius", "--name", "bud-low",
          "--budget", "1000000")
    past_spend(vm, 60.0, fleet="bud-wd", fleet_id=made["id"])
    ran = vm("watchdog", "--once", "-o", "json")
    assert ran.code == 0, ran.err
    duties = {f["fleet"]: [(d["duty"], d["outcome"]) for d in f["duties"]] for f in ran.json()["last_pass"]["fleets"]}
    assert duties == {"bud-wd": [("budget", "acted")], "bud-low": [("budget", "idle")]}, duties
    assert fleet_vms(vm, "bud-wd") == {"crusoe": "stopped", "nebius": "stopped"}
    assert fleet_vms(vm, "bud-low") == {"nebius": "running"}
    reached = [e for e in store_of(vm).list_events(fleet="bud-wd") if e.kind == "budget_reached"]
    assert [(e.actor.split()[0], e.details["result"]) for e in reached] == [("watchdog", "stopped")]
    quiet = vm.ok("watchdog", "--once", "-o", "json").json()  # a stopped fleet is not enforced again
    assert "bud-wd" not in {f["fleet"] for f in quiet["last_pass"]["fleets"]}
    vm.ok("fleet", "destroy", "bud-wd")
    vm.ok("fleet", "destroy", "bud-low")
