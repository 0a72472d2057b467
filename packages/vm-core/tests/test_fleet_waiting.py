"""Waiting for capacity (fleet/waiting.py): how far apart its checks are, how a wait's length is said, and the
spec a recorded waiting fleet is placed with."""

from __future__ import annotations

from dataclasses import dataclass

from vm_core.fleet.placement import Placement
from vm_core.fleet.store import FleetRecord, FleetState
from vm_core.fleet.waiting import MIN_POLL, POLL_ROUNDS, _duration, _expiry, poll_every, waiting_spec


@dataclass
class _Paced:
    name: str
    poll_interval: float


def test_checks_are_poll_rounds_of_the_slowest_provider_apart_and_never_closer_than_the_minimum() -> None:
    providers = {"crusoe": _Paced("crusoe", 1.0), "lambda": _Paced("lambda", 2.0)}
    assert poll_every(providers) == POLL_ROUNDS * 2.0  # type: ignore[arg-type]
    scaled = {"crusoe": _Paced("crusoe", 0.002)}  # the mock clouds' time scale
    assert poll_every(scaled) == MIN_POLL  # type: ignore[arg-type]


def test_a_waits_length_is_said_as_the_option_spells_it() -> None:
    assert [_duration(s) for s in (3.0, 1800.0, 5400.0, 90061.0, 0.2)] == ["3s", "30m", "1h30m", "1d1h1m1s", "0s"]


def test_a_recorded_waiting_fleet_is_placed_whole_with_its_cap_placement_and_spot_base() -> None:
    record = FleetRecord("pod", "H100", 8, 4, 3, "spread", state=FleetState.WAITING, created_at=1000.0,
                         wait_until=8200.0, max_price=100.0, placement=Placement.ANY, spot=True, on_demand_base=2)
    spec = waiting_spec(record)
    assert (spec.count, spec.min_count, spec.max_price, spec.on_demand_base, spec.wait) == (4, 3, 100.0, 2, 7200.0)


def test_a_ttl_counts_from_the_placement() -> None:
    record = FleetRecord("pod", "H100", 8, 4, 4, "spread", state=FleetState.WAITING, created_at=1000.0,
                         wait_until=8200.0, expires_at=8200.0 + 3600.0)  # recorded after the whole wait
    assert _expiry(record, placed_at=5000.0) == 5000.0 + 3600.0
    assert _expiry(FleetRecord("pod", "H100", 8, 4, 4, "spread", wait_until=8200.0), placed_at=5000.0) is None
