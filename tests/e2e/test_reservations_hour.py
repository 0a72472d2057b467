"""A reservation half used for an hour, on the mock clouds' clock: `vm reservations` shows half its GPU-hours idle
and what they cost, the mock's own billing says the same idle hours.

The hour passes in seconds: the mocks' world clock is moved through their admin API (`POST /clock`) and the
client follows the same clock (`vm_core.api.connect(clock=...)`), as in test_cost_day.py.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest
from mock_clouds import control
from vm_core.api import connect
from vm_core.api.requests import CreateRequest, ReservationsRequest

if TYPE_CHECKING:
    from conftest import VmHome

HOUR = 3600.0
LAMBDA_RESERVATION = "9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9"  # 8 H100 GPUs in us-south-2 (the default scenario)


def test_a_reservation_half_used_for_an_hour_shows_half_its_gpu_hours_idle(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("list")  # the mock clouds run
    offset = [0.0]

    def clock() -> float:
        return time.time() + offset[0]

    client = connect(environ=vm.env, clock=clock)
    start = clock()
    made = client.create(CreateRequest("lambda", "H100", count=4, name="half", reservation=LAMBDA_RESERVATION))
    assert made.problem is None and all(i.reservation_id == LAMBDA_RESERVATION for i in made.instances)
    moved = control.admin_call(vm.endpoints(), "POST", "/clock", {"advance_seconds": HOUR})
    offset[0] = float(moved["offset_seconds"])

    report = client.reservations(ReservationsRequest(provider="lambda", since=start))
    [use] = [u for u in report.reservations if u.terms.info.id == LAMBDA_RESERVATION]
    hours = (use.until - use.since) / HOUR
    assert hours == pytest.approx(1.0, abs=0.05) and use.used_gpus == 4 and use.free_gpus == 4
    assert use.reserved_gpu_hours == pytest.approx(8 * hours)
    assert use.used_gpu_hours == pytest.approx(4 * hours, rel=0.02)  # each VM from its create's acceptance
    assert use.idle_gpu_hours == pytest.approx(4 * hours, rel=0.02)
    price = use.terms.info.price_per_gpu_hour
    assert price and use.idle_usd == pytest.approx(use.idle_gpu_hours * price, rel=1e-6)
    [billed] = [r for r in control.admin_call(vm.endpoints(), "GET", "/billing?provider=lambda")["reservations"]
                if r["id"] == LAMBDA_RESERVATION]
    assert billed["used_gpu_hours"] == pytest.approx(4.0, rel=0.05)  # the cloud's own count over its hour
