"""The fleet stop/start engine (fleet/power.py) through the wire on the in-process mock clouds: the watchdog's
`stop_fleet`, the lease, a fleet replaced meanwhile, members that are unsettled or gone, and how the report ends
(exit kinds of the API's report). Ground truth is the mock clouds' own world."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mock_clouds.core.models import Provider, VMState
from vm_core.api.fleet_power import _problem
from vm_core.api.fleet_reports import FleetPowerReport
from vm_core.api.outcome import ExitKind
from vm_core.fleet.create import FleetCreator, FleetSpec
from vm_core.fleet.lease import LeaseRefused
from vm_core.fleet.power import FleetPower, Result, stop_fleet
from vm_core.fleet.store import FleetState, MemberRecord, MemberState, SqliteFleetStore
from vm_core.fleet.strategies import spread
from vm_core.hints import Command

BUILT_IN = ("crusoe", "lambda", "nebius")
ACTOR = "watchdog tests@host"


@pytest.fixture
def fleet(mock_clouds: Any, connect: Any, tmp_path: Path) -> tuple[Any, SqliteFleetStore, dict[str, Any]]:
    """A fleet `pw` of three H100:8 VMs, one per cloud (spread), on the mock clouds."""
    store = SqliteFleetStore(tmp_path / "vm.db")
    providers = {n: connect(mock_clouds, n) for n in BUILT_IN}
    spec = FleetSpec(name="pw", gpu="H100", gpu_count=8, count=3, min_count=3)
    assert len(FleetCreator(store, providers, spread, timeout=120).create(spec).running) == 3
    return mock_clouds, store, providers


def world_states(clouds: Any) -> dict[str, VMState]:
    with clouds.world.tx() as world:
        return {p.value: vm.state for p in Provider for vm in world.vms(p) if vm.name.startswith("pw--")}


def test_stop_fleet_stops_what_can_stop_and_says_what_cannot(fleet: Any) -> None:
    clouds, store, providers = fleet
    record = store.get_fleet("pw")
    assert record is not None
    warned: list[str] = []
    report = stop_fleet(store, record, providers, actor=ACTOR, warn=warned.append, timeout=120)
    assert report.complete and report.actor == ACTOR
    assert {r.member.provider: r.result for r in report.members} == {
        "crusoe": Result.STOPPED, "nebius": Result.STOPPED, "lambda": Result.CANNOT_STOP}
    [lambda_vm] = report.cannot_stop
    assert lambda_vm.price_per_hour and report.still_billing == lambda_vm.price_per_hour
    assert warned == [lambda_vm.line()] and f"billing ${lambda_vm.price_per_hour:.2f}/h" in warned[0]
    assert world_states(clouds) == {"crusoe": VMState.STOPPED, "nebius": VMState.STOPPED, "lambda": VMState.RUNNING}
    stopped = store.get_fleet("pw")
    assert stopped is not None and stopped.state is FleetState.STOPPED and f"by {ACTOR}" in stopped.message
    assert all(m.state is MemberState.RUNNING for m in store.members("pw"))  # the VMs exist and are the fleet's
    assert _problem(report) is None

    started = FleetPower(store, providers, timeout=120).start("pw", actor=ACTOR)
    assert [r.result for r in started.members].count(Result.STARTED) == 2 and started.complete
    assert set(world_states(clouds).values()) == {VMState.RUNNING}
    assert started.fleet.state is FleetState.ACTIVE and FleetPowerReport(report=started).exit is ExitKind.OK


def test_a_fleet_whose_lease_is_held_is_refused_and_nothing_stops(fleet: Any) -> None:
    clouds, store, providers = fleet
    store.acquire_lease("pw", "someone@elsewhere:1", "fleet scale", 60)
    with pytest.raises(LeaseRefused, match="being changed by someone@elsewhere:1"):
        FleetPower(store, providers, timeout=120).stop("pw", actor=ACTOR)
    assert set(world_states(clouds).values()) == {VMState.RUNNING}
    assert store.get_fleet("pw").state is FleetState.ACTIVE  # type: ignore[union-attr]


def test_a_fleet_replaced_meanwhile_is_left_alone(fleet: Any) -> None:
    clouds, store, providers = fleet
    record = store.get_fleet("pw")
    assert record is not None
    report = stop_fleet(store, replace(record, fleet_id="aaaaaaaa"), providers, actor=ACTOR, timeout=120)
    assert report.skipped and report.members == [] and not report.complete
    assert set(world_states(clouds).values()) == {VMState.RUNNING}


def test_an_unsettled_member_makes_the_stop_fall_short_and_a_gone_one_is_missing(fleet: Any) -> None:
    clouds, store, providers = fleet
    store.add_member(MemberRecord(fleet="pw", slot=7, attempt=1, provider="nebius", name="pw--x-7"))
    nebius = next(m for m in store.members("pw") if m.provider == "nebius" and m.instance_id)
    providers["nebius"].begin_destroy(nebius.instance_id).wait(120)  # gone outside the fleet

    report = FleetPower(store, providers, timeout=120).stop("pw", actor=ACTOR)
    results = {(r.member.provider, r.member.slot): r.result for r in report.members}
    assert results[("nebius", 7)] is Result.UNSETTLED and results[("nebius", nebius.slot)] is Result.MISSING
    assert results[("crusoe", next(m.slot for m in store.members("pw") if m.provider == "crusoe"))] is Result.STOPPED
    assert not report.complete and [f.member.slot for f in report.failures] == [7]
    assert store.get_fleet("pw").state is FleetState.ACTIVE  # type: ignore[union-attr]  # fell short: as it was
    problem = _problem(report)
    assert problem is not None and FleetPowerReport(report=report, problem=problem).exit is ExitKind.PARTIAL
    assert "1 of 4 VM(s) could not be stopped" in problem.error.message
    assert [name for name, _ in problem.failures] == ["pw--x-7"]
    assert problem.error.hint is not None
    assert problem.error.hint.commands == (Command.of("fleet", "reconcile", "pw"),)  # settles the intent
    assert world_states(clouds)["crusoe"] is VMState.STOPPED


def test_a_lambda_member_that_does_not_run_cannot_be_started(fleet: Any) -> None:
    clouds, store, providers = fleet
    FleetPower(store, providers, timeout=120).stop("pw", actor=ACTOR)
    lambda_member = next(m for m in store.members("pw") if m.provider == "lambda")
    with clouds.world.tx() as world:
        [vm] = [v for v in world.vms(Provider.LAMBDA) if v.id == lambda_member.instance_id]
        vm.state = VMState.ERROR
    report = FleetPower(store, providers, timeout=120).start("pw", actor=ACTOR)
    [failed] = report.failures
    assert failed.result is Result.CANNOT_START and failed.detail == "lambda cannot start VMs, and it is error"
    assert report.fleet.state is FleetState.DEGRADED  # two of three run again
    problem = _problem(report)
    assert problem is not None and problem.error.hint is not None
    assert problem.error.hint.commands == (Command.of("fleet", "repair", "pw"),)  # a replacement runs again
