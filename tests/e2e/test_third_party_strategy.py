"""A hostile third-party strategy, installed the way plugins are (a distribution with a `vm_core.strategies` entry
point, on PYTHONPATH), driven through the real `vm fleet create` against the mock clouds: the engine places VMs
only where the fleet may, prints one note naming the strategy, and a strategy that raises or answers garbage is
exit 2 naming it, with nothing created.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import Run, VmHome

LAMBDA_RESERVATION = "9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9"  # Lambda will not delete its VMs through the API

HOSTILE = '''"""Answers every placement a fleet may not use, forged offers and more VMs than asked, before honest ones;
HOSTILE_MODE=raise|garbage|not-a-list|raise-on-failover fails instead."""

import os
from dataclasses import replace


def hostile(offers, request, blocked):
    mode = os.environ.get("HOSTILE_MODE", "tricks")
    if mode == "raise":
        raise RuntimeError("hostile on purpose")
    if mode == "garbage":
        return [o.to_json() for o in offers]
    if mode == "not-a-list":
        return {"placements": len(offers)}
    if mode == "raise-on-failover":  # one VM per provider in turn; raises once a failure ruled a scope out
        if blocked.providers or blocked.regions or blocked.offers:
            raise RuntimeError("cannot fail over")
        first = {}
        for o in offers:
            first.setdefault(o.provider, o)
        return list(first.values()) * request.count
    moon = [replace(o, region="moon-1", price_per_hour=0.0) for o in offers]
    cheap = [replace(o, price_per_hour=0.01) for o in offers for _ in range((o.capacity or 0) + 3)]
    unsafe = [o for o in offers if o.reserved or blocked.blocks(o) or not o.available]
    honest = list(offers)
    offers.append(replace(offers[0], region="mars-1"))  # changing the list it was given
    return moon + [offers[-1]] + cheap + unsafe * request.count + honest * request.count
'''


def hostile_site(site: Path) -> Path:
    """An installed distribution (on PYTHONPATH) registering `hostile` under `vm_core.strategies`."""
    info = site / "vm_hostile_strategy-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vm-hostile-strategy\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[vm_core.strategies]\nhostile = vm_hostile_strategy:hostile\n")
    (site / "vm_hostile_strategy.py").write_text(HOSTILE)
    return site


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return {"PYTHONPATH": str(hostile_site(tmp_path_factory.mktemp("site")))}


def key(o: dict[str, Any]) -> tuple[str, str, str, str]:
    return (o["provider"], o["region"], o["shape"], o["reservation_id"] or "")


def offers_of(vm: VmHome, gpu: str) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    """The offers `vm offers` lists for fleets (not spot), by offer key."""
    return {key(o): o for o in vm.ok("offers", "--gpu", gpu, "-o", "json").json() if not o["spot"]}


def check_allowed(placed: list[dict[str, Any]], offers: dict[tuple[str, str, str, str], dict[str, Any]],
                  flags: list[str]) -> None:
    """Every placement is a listed offer at its listed price, allowed by `flags`, within its capacity."""
    for p in placed:
        listed = offers[key(p)]  # KeyError: a forged offer (moon-1, mars-1) was placed
        assert p["price_per_hour"] == listed["price_per_hour"]
        assert p["reservation_id"] != LAMBDA_RESERVATION
        if "--strict" in flags:
            assert p["reservation_id"]
        if "none" in flags:
            assert not p["reservation_id"]
        if "--region" in flags:
            assert p["region"] == flags[flags.index("--region") + 1]
        if "--providers" in flags:
            assert p["provider"] in flags[flags.index("--providers") + 1].split(",")
    for where, n in Counter(key(p) for p in placed).items():
        assert offers[where]["capacity"] is None or n <= offers[where]["capacity"]


def said_once(run: Run, *reasons: str) -> None:
    notes = [line for line in run.err.splitlines() if line.startswith("strategy 'hostile': left out")]
    assert len(set(notes)) == len(notes) >= 1, run.err
    for reason in reasons:
        assert reason in notes[0], notes[0]
    assert "Traceback" not in run.err


@pytest.mark.parametrize("flags", [
    [],
    ["--strict"],
    ["--reservation", "none"],
    ["--region", "us-east1-a"],
    ["--providers", "lambda,nebius"],
])
def test_a_hostile_plan_keeps_only_what_the_fleet_may_use(shared_home: VmHome, plugin_env: dict[str, str],
                                                          flags: list[str]) -> None:
    vm = shared_home
    offers = offers_of(vm, "H100:8")
    before = vm.inventory()
    run = vm("fleet", "create", "--gpu", "H100:8", "--count", "3", "--strategy", "hostile", "--name", "plan",
             "--dry-run", "-o", "json", *flags, env=plugin_env)
    assert run.code in (0, 6), run.err  # 6: fewer allowed places than VMs (said, and nothing created)
    placed = run.json()["placements"]
    check_allowed(placed, offers, flags)
    assert len(placed) == 3 or run.code == 6
    said_once(run, "not offered: ", "more than the 3 VM(s) asked for: ")
    assert vm.inventory() == before


def test_the_default_plan_names_each_rule_it_enforced(shared_home: VmHome, plugin_env: dict[str, str]) -> None:
    run = shared_home("fleet", "create", "--gpu", "H100:8", "--count", "5", "--strategy", "hostile", "--dry-run",
                      env=plugin_env)
    assert run.code == 0, run.err
    said_once(run, "not offered: ", "moon-1", "a reservation whose VMs the cloud cannot delete "
              "(--allow-unterminable): ", f"reservation {LAMBDA_RESERVATION}", "no capacity: ", "room for ",
              "more than the 5 VM(s) asked for: ", "differed from the offer they name")


def test_a_hostile_create_lands_only_where_the_fleet_may(shared_home: VmHome, plugin_env: dict[str, str]) -> None:
    vm = shared_home
    offers = offers_of(vm, "H100:8")
    run = vm("fleet", "create", "--gpu", "H100:8", "--count", "5", "--strategy", "hostile", "--name", "evil",
             "-o", "json", env=plugin_env)
    assert run.code == 0, run.err
    made = run.json()
    assert made["state"] == "active" and made["strategy"] == "hostile" and len(made["members"]) == 5
    said_once(run, "not offered: ")
    live = [i for i in vm.inventory() if i["name"].startswith(f"evil--{made['id']}-") and i["state"] != "terminated"]
    assert len(live) == 5
    shapes = {(p, r, res): shape for p, r, shape, res in offers}  # one shape of H100:8 per place
    members = [{**m, "shape": shapes[m["provider"], m["region"], m["reservation_id"] or ""]} for m in made["members"]]
    check_allowed(members, offers, [])

    grow = vm("fleet", "scale", "evil", "--count", "7", "--dry-run", "-o", "json", env=plugin_env)
    assert grow.code in (0, 6), grow.err
    check_allowed(grow.json()["placements"], offers_of(vm, "H100:8"), [])
    said_once(grow, "not offered: ")

    lost = made["members"][0]
    vm.ok("destroy", lost["id"], "--provider", lost["provider"])
    offers = offers_of(vm, "H100:8")
    repaired = vm("fleet", "repair", "evil", "-o", "json", env=plugin_env)
    assert repaired.code == 0, repaired.err
    said_once(repaired, "not offered: ")
    running = [m for m in repaired.json()["members"] if m["state"] == "running"]
    new = [m for m in running if m["id"] not in {m["id"] for m in made["members"]}]
    assert len(running) == 5 and len(new) == 1
    check_allowed([{**new[0], "shape": shapes[new[0]["provider"], new[0]["region"], new[0]["reservation_id"] or ""]}],
                  offers, [])
    vm.ok("fleet", "destroy", "evil", "-y", env=plugin_env)


@pytest.mark.parametrize(("mode", "says"), [
    ("raise", "strategy 'hostile' is broken: it raised RuntimeError: hostile on purpose"),
    ("garbage", "strategy 'hostile' is broken: it answered 2 item(s) that are not offers (dict)"),
    ("not-a-list", "strategy 'hostile' is broken: it answered a dict, not a list of offers"),
])
def test_a_strategy_that_fails_is_exit_2_naming_it(shared_home: VmHome, plugin_env: dict[str, str], mode: str,
                                                   says: str) -> None:
    vm = shared_home
    before = vm.inventory()
    env = {**plugin_env, "HOSTILE_MODE": mode}
    args = ("fleet", "create", "--gpu", "H100:8", "--count", "2", "--strategy", "hostile", "--providers", "nebius")
    planned = vm(*args, "--dry-run", env=env)
    assert planned.code == 2 and says in planned.err and "Traceback" not in planned.err
    made = vm(*args, "--name", f"broken-{mode}", "-o", "json", env=env)
    assert made.code == 2 and made.error()["code"] == "usage" and says in made.error()["message"]
    assert "Traceback" not in made.err
    assert vm.inventory() == before
    assert vm("fleet", "status", f"broken-{mode}").code == 3  # not recorded either: nothing changed


def test_failed_scopes_are_never_placed_on_again(fresh_home: VmHome, plugin_env: dict[str, str]) -> None:
    """Every Nebius create fails: the hostile strategy keeps answering Nebius first, the engine drops it."""
    vm = fresh_home
    vm.ok("list")  # the mock clouds are up
    assert vm.mock("faults", "--provider", "nebius", "--op-failure-rate", "1").returncode == 0
    run = vm("fleet", "create", "--gpu", "H100:8", "--count", "2", "--providers", "nebius,crusoe", "--strategy",
             "hostile", "--name", "failover", "-o", "json", env=plugin_env)
    assert run.code == 0, run.err
    assert "injected operation failure" in run.err and "ruled out by a failure: " in run.err
    assert {m["provider"] for m in run.json()["members"]} == {"crusoe"}
    live = [i for i in vm.inventory() if i["name"].startswith("failover-") and i["state"] != "terminated"]
    assert sorted(i["provider"] for i in live) == ["crusoe", "crusoe"]
    vm.ok("fleet", "destroy", "failover", "-y")


def test_a_strategy_failing_during_failover_leaves_its_vms_recorded(fresh_home: VmHome,
                                                                    plugin_env: dict[str, str]) -> None:
    vm = fresh_home
    vm.ok("list")
    assert vm.mock("faults", "--provider", "nebius", "--op-failure-rate", "1").returncode == 0
    env = {**plugin_env, "HOSTILE_MODE": "raise-on-failover"}
    run = vm("fleet", "create", "--gpu", "H100:8", "--count", "2", "--providers", "nebius,crusoe", "--strategy",
             "hostile", "--name", "halfway", env=env)
    assert run.code == 2 and "Traceback" not in run.err, run.err
    assert "strategy 'hostile' is broken: it raised RuntimeError: cannot fail over; fleet halfway keeps the VMs " \
           "created before" in run.err and "hint: vm fleet destroy halfway" in run.err
    status = vm.ok("fleet", "status", "halfway", "-o", "json").json()
    assert [m["provider"] for m in status["members"] if m["state"] == "running"] == ["crusoe"]
    live = [i for i in vm.inventory() if i["name"].startswith("halfway-") and i["state"] != "terminated"]
    assert [i["provider"] for i in live] == ["crusoe"]
    vm.ok("fleet", "destroy", "halfway", "-y")
    assert [i for i in vm.inventory() if i["name"].startswith("halfway-") and i["state"] != "terminated"] == []
