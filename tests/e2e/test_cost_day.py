"""`vm cost` against what the mock clouds would bill, over a scripted day.

The day is scripted in seconds: the mocks' world clock is moved forward through their admin API (`POST /clock`,
docs/billing.md) and the Python API's client follows the same clock (`vm_core.api.connect(clock=...)`), so the
clouds' timestamps, their billing and vm's ledger all see the same hours pass. On it: VMs on the three clouds
created, a Crusoe VM stopped and started again on another pricing, VMs destroyed inside and outside vm, a fleet
created and destroyed, and a `vm create` process killed (SIGKILL) right after its cloud accepted the create.

Tolerance, per VM: vm charges each state from the moment a vm process saw it begin (its own action, or its next
look), the cloud from the moment it happened, so every boundary may differ by the time between the two (here at
most LAG seconds: each step of the script looks right after it acts), and each billed run may be rounded up once
more by the cloud (one granularity unit): |vm - cloud| <= (boundaries x LAG + runs x granularity) x price / 3600.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from mock_clouds import control
from vm_core.api import connect
from vm_core.api.requests import (
    ActionRequest,
    CostRequest,
    CreateRequest,
    FleetCreateRequest,
    FleetDestroyRequest,
    ListRequest,
)
from vm_core.fleet.location import open_store
from vm_core.providers import billing_rules as rules

if TYPE_CHECKING:
    from conftest import VmHome

HOUR = 3600.0
LAG = 60.0  # seconds between a change in a cloud and vm's record of it, at most, on a loaded machine
VM = str(Path(sys.executable).parent / "vm")
RULES = {"crusoe": rules.CRUSOE, "lambda": rules.LAMBDA, "nebius": rules.NEBIUS}


class Day:
    """The mocks' world clock and the client's, moved together."""

    def __init__(self, vm: VmHome) -> None:
        self.vm = vm
        self.offset = 0.0

    def clock(self) -> float:
        return time.time() + self.offset

    def advance(self, hours: float) -> None:
        answer = control.admin_call(self.vm.endpoints(), "POST", "/clock", {"advance_seconds": hours * HOUR})
        self.offset = float(answer["offset_seconds"])

    def billing(self) -> dict[str, Any]:
        return dict(control.admin_call(self.vm.endpoints(), "GET", "/billing"))


def _killed_create(vm: VmHome) -> None:
    """`vm create` on Crusoe, SIGKILLed as soon as it says the cloud accepted the create."""
    proc = subprocess.Popen([VM, "create", "-p", "crusoe", "--gpu", "H100:8", "--name", "day-killed"], env=vm.env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stderr is not None
    timer = threading.Timer(120, proc.kill)
    timer.start()
    try:
        for line in proc.stderr:
            if "accepted, operation" in line:
                os.killpg(proc.pid, signal.SIGKILL)
                break
    finally:
        timer.cancel()
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def _outside_lambda_terminate(vm: VmHome, instance_id: str) -> None:
    from lambda_sdk import LambdaClient

    endpoint = vm.endpoints()["lambda"]
    LambdaClient(endpoint["api_key"], base_url=endpoint["url"]).terminate_instance(instance_id)


def _tolerance(provider: str, price: float, boundaries: int, runs: int) -> float:
    return (boundaries * LAG + runs * RULES[provider].granularity_seconds) * price / HOUR


def test_vm_cost_matches_the_clouds_billing_over_a_scripted_day(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("list")  # the mock clouds run
    day = Day(vm)
    _killed_create(vm)  # before the clock moves: its ledger entry and the cloud agree on the hour
    client = connect(environ=vm.env, clock=day.clock)
    made = {p: client.create(CreateRequest(p, gpu, name=f"day-{p}")).instances[0]
            for p, gpu in (("crusoe", "H100:8"), ("lambda", "H100"), ("nebius", "H100"))}
    assert made["crusoe"].reservation_id  # on a reservation, until its start below finds it full
    client.list(ListRequest())  # the killed create's VM is seen running
    fleet = client.fleet_create(FleetCreateRequest("H100:8", 2, name="day-fleet", providers=("crusoe", "nebius")))
    assert fleet.problem is None, fleet.problem

    day.advance(2)
    client.stop(ActionRequest("crusoe", (made["crusoe"].id,)))
    day.advance(1)
    # Every Crusoe H100 reservation of the scenario holds 6 VMs: the killed create's, the fleet's and 4 more
    fillers = client.create(CreateRequest("crusoe", "H100:8", count=4, name="day-fill")).instances
    assert all(f.reservation_id for f in fillers)
    started = client.start(ActionRequest("crusoe", (made["crusoe"].id,))).instances[0]
    day.advance(0.25)
    client.destroy(ActionRequest("crusoe", tuple(f.id for f in fillers)))
    day.advance(1.5)
    client.destroy(ActionRequest("nebius", (made["nebius"].id,)))
    _outside_lambda_terminate(vm, made["lambda"].id)
    for _ in range(200):  # until Lambda no longer lists it: vm's listing closes it
        if made["lambda"].id not in {i.id for i in client.list(ListRequest(provider="lambda")).instances}:
            break
    day.advance(3)
    client.fleet_destroy(FleetDestroyRequest("day-fleet"))
    day.advance(0.5)
    client.list(ListRequest())

    until = day.clock()
    report = client.cost(CostRequest(since=until - 2 * 24 * HOUR, until=until, by="vm"))
    ours = {row.group: row for row in report.rows}
    billed = {v["id"]: v for v in day.billing()["vms"]}
    ledger = {v.instance_id: v for v in open_store(client.session).ledger_vms()}
    assert len(ledger) == 1 + 3 + 2 + 4 and set(ledger) <= set(billed), (sorted(ledger), sorted(billed))
    for instance_id, entry in ledger.items():
        cloud = billed[instance_id]
        runs = sum(1 for a, b in zip([None, *cloud["intervals"]], cloud["intervals"], strict=False)
                   if b["billed"] and not (a and a["billed"]))
        price = max((i["price_per_hour"] or 0.0) for i in cloud["intervals"])
        mine = ours[f"{entry.provider}/{instance_id}"].accrued_usd
        allowed = _tolerance(entry.provider, price, 2 * len(cloud["intervals"]), runs)
        assert abs(mine - cloud["cost_usd"]) <= allowed, (entry.name, mine, cloud["cost_usd"], allowed,
                                                          json.dumps(cloud["intervals"]))
    assert started.state.value == "running" and not started.reservation_id  # started on another pricing
    assert billed[made["crusoe"].id]["cost_by_pricing_usd"]["on-demand"] > 0
    assert billed[made["crusoe"].id]["cost_by_pricing_usd"]["reservation"] > 0
    total = sum(billed[i]["cost_usd"] for i in ledger)
    assert report.total.accrued_usd == pytest.approx(total, abs=sum(
        _tolerance(e.provider, 40.0, 6, 2) for e in ledger.values()))
