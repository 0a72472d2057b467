"""What a reservation was used for, from the spend ledger kept in the store (intervals written with explicit times
through the store API): idle GPU-hours of a reservation half used for an hour, the period a report covers, and
which on-demand VMs a reservation with room could have held."""

from __future__ import annotations

from pathlib import Path

import pytest
from vm_core.fleet.store import SqliteFleetStore
from vm_core.model import Instance, InstanceState
from vm_core.provider import ReservationInfo, ReservationTerms
from vm_core.spend.ledger import LedgerVm, Observation, Pricing
from vm_core.spend.reservations import DAY, covers, missed, period_of, reservation_use

RES = "804bf3a2-5b7e-4c1d-9f0a-6e2d8c4b1a11"
T0 = 1_800_000_000.0
HOUR = 3600.0


def _terms(total: int | None = 16, used: int | None = 8, price: float | None = 2.65, starts: float | None = None,
           ends: float | None = None) -> ReservationTerms:
    info = ReservationInfo("crusoe", RES, "H100", ("us-east1",), total, used, price)
    return ReservationTerms(info, starts_at=starts, ends_at=ends)


def _vm(instance_id: str, gpus: int, created_at: float, reservation: str = RES) -> LedgerVm:
    return LedgerVm("crusoe", "project p", instance_id, instance_id, "h100-80gb-sxm-ib.8x", "us-east1-a", "H100",
                    gpus, Pricing.of(reservation, False), reservation, "train" if gpus == 8 else "", "",
                    "local", "ana@box", created_at)


def _instance(instance_id: str, gpus: int = 8, reservation: str = RES, region: str = "us-east1-a",
              state: InstanceState = InstanceState.RUNNING, price: float | None = 31.2) -> Instance:
    return Instance("crusoe", instance_id, instance_id, state, "H100", gpus, region, "h100-80gb-sxm-ib.8x",
                    reserved=bool(reservation), reservation_id=reservation, price_per_hour=price)


def _use(store: SqliteFleetStore, terms: ReservationTerms, live: list[Instance], since: float, until: float):
    vms = {(v.provider, v.instance_id): v for v in store.ledger_vms()}
    return reservation_use(terms, live, vms, store.ledger_intervals(since, until), since, until)


def test_a_reservation_half_used_for_an_hour_was_idle_half_of_it(tmp_path: Path) -> None:
    store = SqliteFleetStore(tmp_path / "vm.db")
    store.record_vm(_vm("vm-a", 8, T0), "running", price_per_hour=21.2, source="create")  # 8 of 16 GPUs, 1 h
    use = _use(store, _terms(), [_instance("vm-a")], T0, T0 + HOUR)
    assert (use.reserved_gpu_hours, use.used_gpu_hours, use.idle_gpu_hours) == (16.0, 8.0, 8.0)
    assert use.idle_usd == pytest.approx(8 * 2.65)
    [on_it] = use.vms
    assert (on_it.instance_id, on_it.gpus, on_it.fleet, on_it.created_by, on_it.recorded) == (
        "vm-a", 8, "train", "ana@box", True)
    assert (use.used_gpus, use.free_gpus, use.unrecorded) == (8, 8, 0)


def test_a_stopped_vm_gives_its_reservation_back_and_an_on_demand_one_never_used_it(tmp_path: Path) -> None:
    store = SqliteFleetStore(tmp_path / "vm.db")
    store.record_vm(_vm("vm-a", 8, T0), "running", price_per_hour=21.2, source="create")
    store.observe([Observation("crusoe", "project p", "vm-a", "stopped", T0 + HOUR / 4, "stop")])  # 15 min used
    store.record_vm(_vm("vm-b", 8, T0, reservation=""), "running", price_per_hour=31.2, source="create")
    use = _use(store, _terms(used=0), [], T0, T0 + HOUR)
    assert use.used_gpu_hours == pytest.approx(2.0) and use.idle_gpu_hours == pytest.approx(14.0)
    assert use.vms == () and use.free_gpus == 16


def test_a_vm_started_onto_the_reservation_counts_from_its_reserved_interval(tmp_path: Path) -> None:
    store = SqliteFleetStore(tmp_path / "vm.db")
    store.record_vm(_vm("vm-b", 8, T0, reservation=""), "running", price_per_hour=31.2, source="create")
    store.observe([Observation("crusoe", "project p", "vm-b", "stopped", T0 + HOUR / 2, "stop")])
    store.observe([Observation("crusoe", "project p", "vm-b", "running", T0 + 3 * HOUR / 4, "start", 21.2,
                               Pricing.RESERVATION)])  # back on the reservation for the last quarter hour
    use = _use(store, _terms(), [_instance("vm-b")], T0, T0 + HOUR)
    assert use.used_gpu_hours == pytest.approx(2.0) and [v.instance_id for v in use.vms] == ["vm-b"]


def test_intervals_are_clipped_to_the_period(tmp_path: Path) -> None:
    store = SqliteFleetStore(tmp_path / "vm.db")
    store.record_vm(_vm("vm-a", 8, T0 - HOUR), "running", price_per_hour=21.2, source="create")
    store.observe([Observation("crusoe", "project p", "vm-a", "terminated", T0 + HOUR / 2, "destroy")])
    use = _use(store, _terms(used=0), [], T0, T0 + HOUR)
    assert use.used_gpu_hours == pytest.approx(4.0) and use.idle_gpu_hours == pytest.approx(12.0)


def test_a_vm_vm_did_not_create_is_on_it_but_its_use_is_not_counted(tmp_path: Path) -> None:
    store = SqliteFleetStore(tmp_path / "vm.db")
    use = _use(store, _terms(), [_instance("theirs"), _instance("elsewhere", reservation="")], T0, T0 + HOUR)
    assert [v.instance_id for v in use.vms] == ["theirs"] and use.unrecorded == 1
    assert use.used_gpu_hours == 0.0 and use.idle_gpu_hours == 16.0


def test_unknown_size_or_price_gives_no_idle_figure() -> None:
    unsized = reservation_use(_terms(total=None, used=None), [_instance("a")], {}, [], T0, T0 + HOUR)
    assert (unsized.reserved_gpu_hours, unsized.idle_gpu_hours, unsized.idle_usd) == (None, None, None)
    assert unsized.used_gpus == 8 and unsized.free_gpus is None  # counted from the VMs on it
    unpriced = reservation_use(_terms(price=None), [], {}, [], T0, T0 + HOUR)
    assert unpriced.idle_gpu_hours == 16.0 and unpriced.idle_usd is None


def test_the_period_is_the_last_day_within_the_contract() -> None:
    now = T0 + 10 * DAY
    assert period_of(_terms(), None, now) == (now - DAY, now)
    assert period_of(_terms(starts=now - HOUR), None, now) == (now - HOUR, now)  # began an hour ago
    assert period_of(_terms(ends=now - 2 * HOUR), T0, now) == (T0, now - 2 * HOUR)  # ended before now
    assert period_of(_terms(starts=now + HOUR), None, now) == (now + HOUR, now + HOUR)  # not begun: empty


def test_a_reservation_covers_its_regions_and_their_zones() -> None:
    assert covers(["us-east1"], "us-east1-a") and covers(["us-south-2"], "us-south-2")
    assert not covers(["us-east1"], "us-east10-a") and not covers(["us-east1"], "us-southcentral1-a")


def test_on_demand_vms_a_reservation_with_room_could_hold() -> None:
    use = reservation_use(_terms(total=16, used=8), [], {}, [], T0, T0)
    vms = [_instance("od", reservation=""), _instance("big", gpus=16, reservation=""),
           _instance("far", reservation="", region="us-southcentral1-a"), _instance("on-it"),
           _instance("stopped", reservation="", state=InstanceState.ERROR)]
    [found] = missed(vms, [use])
    assert (found.instance.id, found.reservation, found.region, found.free_gpus) == ("od", RES, "us-east1", 8)
    assert missed(vms, [reservation_use(_terms(used=16), [], {}, [], T0, T0)]) == []  # full: nothing to say
    other_projects = ReservationTerms(_terms().info, usable=False)
    assert missed(vms, [reservation_use(other_projects, [], {}, [], T0, T0)]) == []  # not this account's to use
