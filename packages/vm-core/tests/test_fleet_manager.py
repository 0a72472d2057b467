"""Fleets against the mock clouds: placement, failover, rollback, faults and crash recovery.

The ground truth is the mock clouds' own inventory (`clouds.world`), never the fleet store.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from mock_clouds.core.models import Capacity, Faults, Provider, WorldState
from vm_core.errors import UsageError
from vm_core.fleet.create import FleetCreator, FleetSpec
from vm_core.fleet.destroy import FleetDestroyer
from vm_core.fleet.inspect import FleetInspector
from vm_core.fleet.naming import FleetIdentity
from vm_core.fleet.reconcile import FleetReconciler
from vm_core.fleet.store import FleetState, MemberRecord, MemberState, SqliteFleetStore
from vm_core.fleet.strategies import cheapest, packed, spread
from vm_core.model import CreateSpec, ReservationMode, ReservationRequest

BUILT_IN = ("crusoe", "lambda", "nebius")
LAMBDA_RESERVATION = "9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9"


def cloud_vms(clouds: Any, prefix: str) -> list[tuple[str, str]]:
    """(provider, name) of every live VM in the mock clouds whose name starts with `prefix`."""
    with clouds.world.tx() as world:
        return sorted((p.value, vm.name) for p in Provider for vm in world.vms(p) if vm.name.startswith(prefix))


def cloud_ids(clouds: Any, prefix: str) -> set[str]:
    with clouds.world.tx() as world:
        return {vm.id for p in Provider for vm in world.vms(p) if vm.name.startswith(prefix)}


@pytest.fixture
def fleet_env(tmp_path: Path, connect):
    def make(clouds: Any):
        providers = {name: connect(clouds, name) for name in BUILT_IN}
        store = SqliteFleetStore(tmp_path / f"vm-{id(clouds)}.db")
        return store, providers

    return make


def creator(store, providers, strategy=spread) -> FleetCreator:
    return FleetCreator(store, providers, strategy, timeout=60)


def test_spread_fleet_across_three_clouds(mock_clouds, fleet_env) -> None:
    store, providers = fleet_env(mock_clouds)
    report = creator(store, providers).create(FleetSpec(name="train", gpu="H100", gpu_count=8, count=6, min_count=6))
    assert report.fleet.state is FleetState.ACTIVE
    assert Counter(i.provider for i in report.running) == {"crusoe": 2, "lambda": 2, "nebius": 2}
    fid = store.get_fleet("train").fleet_id
    assert sorted(name for _, name in cloud_vms(mock_clouds, "train")) == sorted(f"train--{fid}-{i}" for i in range(6))
    assert all(m.state is MemberState.RUNNING and m.instance_id for m in store.members("train"))

    destroyed = FleetDestroyer(store, providers, timeout=60).destroy("train")
    assert destroyed.destroyed == 6 and destroyed.failures == [] and destroyed.forgotten
    assert cloud_vms(mock_clouds, "train") == [] and store.get_fleet("train") is None


def test_a_twelve_vm_h100_fleet_fits_the_default_scenario(mock_clouds, fleet_env) -> None:
    store, providers = fleet_env(mock_clouds)
    report = creator(store, providers).create(FleetSpec(name="big", gpu="H100", gpu_count=8, count=12, min_count=12))
    assert report.fleet.state is FleetState.ACTIVE and len(report.running) == 12
    assert len(cloud_vms(mock_clouds, "big")) == 12


def test_duplicate_fleet_name_is_refused_without_side_effects(mock_clouds, fleet_env) -> None:
    store, providers = fleet_env(mock_clouds)
    creator(store, providers).create(FleetSpec(name="dup", gpu="H100", count=1, min_count=1))
    with pytest.raises(UsageError):
        creator(store, providers).create(FleetSpec(name="dup", gpu="H100", count=3, min_count=3))
    assert len(cloud_vms(mock_clouds, "dup")) == 1 and len(store.members("dup")) == 1


def no_nebius_h100(state: WorldState) -> None:
    """Nebius reports no capacity through its API, so this only shows when its creates fail (late)."""
    nebius = state.providers["nebius"]
    for capacity in nebius.capacity:
        if capacity.shape.startswith("gpu-h100"):
            capacity.quantity = 0  # still sold in eu-north1, but no host is free
    nebius.reservations = [r for r in nebius.reservations if r.family != "gpu-h100-sxm"]


def test_late_capacity_failure_blocks_the_region_and_replaces_elsewhere(mock_clouds_factory, fleet_env) -> None:
    clouds = mock_clouds_factory(configure=no_nebius_h100)
    store, providers = fleet_env(clouds)
    report = creator(store, providers).create(FleetSpec(name="fo", gpu="H100", count=6, min_count=6))
    assert report.fleet.state is FleetState.ACTIVE and len(report.running) == 6
    assert {p for p, _ in cloud_vms(clouds, "fo")} == {"lambda"}  # crusoe sells no 1-GPU H100 VM
    failed = [m for m in store.members("fo") if m.state is MemberState.FAILED]
    assert any(m.provider == "nebius" for m in failed)  # Lambda's unknown capacity per region may fail too
    assert any("capacity" in note.lower() for note in report.notes)


def scarce(state: WorldState) -> None:
    """Room for exactly 3 H100:8 VMs in all three clouds together."""
    for provider in state.providers.values():
        provider.capacity = [c for c in provider.capacity if "h100" not in c.shape]
        provider.reservations = []
    state.providers["crusoe"].capacity.append(Capacity(region="us-east1-a", shape="h100-80gb-sxm-ib.8x",
                                                       quantity=1))
    state.providers["lambda"].capacity.append(Capacity(region="us-west-3", shape="gpu_8x_h100_sxm5", quantity=2))


def test_all_or_nothing_rolls_back_everything(mock_clouds_factory, fleet_env) -> None:
    clouds = mock_clouds_factory(configure=scarce)
    store, providers = fleet_env(clouds)
    report = creator(store, providers).create(FleetSpec(name="aon", gpu="H100", gpu_count=8, count=5, min_count=5))
    assert report.rolled_back and report.fleet.state is FleetState.FAILED and report.unresolved == []
    assert cloud_vms(clouds, "aon") == []
    assert all(m.state in (MemberState.DESTROYED, MemberState.FAILED) for m in store.members("aon"))
    assert report.notes  # says what happened per member


def test_min_count_keeps_a_degraded_fleet(mock_clouds_factory, fleet_env) -> None:
    clouds = mock_clouds_factory(configure=scarce)
    store, providers = fleet_env(clouds)
    report = creator(store, providers).create(FleetSpec(name="deg", gpu="H100", gpu_count=8, count=5, min_count=3))
    assert report.fleet.state is FleetState.DEGRADED and len(report.running) == 3
    assert len(cloud_vms(clouds, "deg")) == 3


@pytest.mark.parametrize("strategy", [cheapest, packed])
def test_other_strategies_place_the_whole_fleet(mock_clouds, fleet_env, strategy) -> None:
    store, providers = fleet_env(mock_clouds)
    report = creator(store, providers, strategy).create(FleetSpec(name="s", gpu="H100", count=3, min_count=3))
    assert report.fleet.state is FleetState.ACTIVE and len(cloud_vms(mock_clouds, "s-")) == 3
    if strategy is packed:
        assert len({i.provider for i in report.running}) == 1


def test_faults_never_leak_or_duplicate(mock_clouds_factory, fleet_env) -> None:
    clouds = mock_clouds_factory()
    store, providers = fleet_env(clouds)
    for seed, provider in enumerate(Provider):
        clouds.world.configure_faults(provider, Faults(error_rate=0.15, op_failure_rate=0.1, drop_rate=0.05,
                                                       seed=seed + 11))
    report = creator(store, providers).create(FleetSpec(name="chaos", gpu="H100", count=6, min_count=1))
    in_cloud = cloud_vms(clouds, "chaos")
    names = [n for _, n in in_cloud]
    assert len(names) == len(set(names)), "no VM may exist twice"
    running_ids = {i.id for i in report.running}
    assert len(running_ids) == len(report.running) <= 6
    tracked = {m.instance_id for m in store.members("chaos") if m.state is MemberState.RUNNING}
    assert cloud_ids(clouds, "chaos") == tracked == running_ids, "every VM in a cloud is a recorded member"
    for provider in Provider:
        clouds.world.configure_faults(provider, Faults())
    FleetDestroyer(store, providers, timeout=60).destroy("chaos")
    assert cloud_vms(clouds, "chaos") == []


def test_destroy_finds_a_vm_created_but_never_recorded(mock_clouds, fleet_env) -> None:
    """The process died after the cloud accepted the create and before the store learnt the id."""
    store, providers = fleet_env(mock_clouds)
    creator(store, providers).create(FleetSpec(name="crash", gpu="H100", count=1, min_count=1))
    identity = FleetIdentity("crash", store.get_fleet("crash").fleet_id)
    store.add_member(MemberRecord(fleet="crash", slot=1, attempt=1, provider="nebius",
                                  name=identity.member_name(1, 1)))
    for provider, slot in (("nebius", 1), ("nebius", 2)):  # the second: never even an intent
        spec = CreateSpec(name=identity.member_name(slot, 1), gpu="H100",
                          reservation=ReservationRequest(ReservationMode.NONE), labels=identity.labels())
        providers[provider].begin_create(spec).wait(60)
    lookalike = CreateSpec(name="crash-1", gpu="H100", reservation=ReservationRequest(ReservationMode.NONE))
    providers["nebius"].begin_create(lookalike).wait(60)
    assert len(cloud_vms(mock_clouds, "crash")) == 4
    report = FleetDestroyer(store, providers, timeout=60).destroy("crash")
    assert report.failures == [] and cloud_vms(mock_clouds, "crash") == [("nebius", "crash-1")]
    assert [(a.verb.value, a.name) for a in report.actions if a.verb.value == "left alone"] == \
        [("left alone", "crash-1")]


def test_lambda_reservation_members_are_released_not_pretended_gone(mock_clouds, fleet_env) -> None:
    store, providers = fleet_env(mock_clouds)
    spec = FleetSpec(name="res", gpu="H100", count=1, min_count=1, providers=("lambda",),
                     reservation=ReservationRequest(ReservationMode.ID, LAMBDA_RESERVATION, strict=True))
    report = creator(store, providers).create(spec)
    assert report.running and report.running[0].reserved
    destroyed = FleetDestroyer(store, providers, timeout=60).destroy("res")
    assert destroyed.released and destroyed.failures == []
    fid = store.get_fleet("res").fleet_id
    assert cloud_vms(mock_clouds, "res") == [("lambda", f"res--{fid}-0")]  # still running, and said so
    assert store.get_fleet("res").state is FleetState.DESTROYING  # kept while a member may run
    assert [m.state for m in store.members("res")] == [MemberState.RELEASED]


def test_reservations_on_each_cloud(mock_clouds, fleet_env) -> None:
    store, providers = fleet_env(mock_clouds)
    crusoe = creator(store, providers, cheapest).create(
        FleetSpec(name="rc", gpu="H100", gpu_count=8, count=4, min_count=4, providers=("crusoe",)))
    assert {i.reservation_id for i in crusoe.running} == {"804bf3a2-5b7e-4c1d-9f0a-6e2d8c4b1a11"}  # cheapest
    nebius = creator(store, providers).create(FleetSpec(name="rn", gpu="H100", count=2, min_count=2,
                                                        providers=("nebius",)))
    assert {i.reservation_id for i in nebius.running} == {"capacityblockgroup-e00h100block000001"}
    none = creator(store, providers).create(FleetSpec(
        name="ro", gpu="H100", gpu_count=8, count=2, min_count=2, providers=("crusoe", "nebius"),
        reservation=ReservationRequest(ReservationMode.NONE)))
    assert all(not i.reserved for i in none.running)
    assert all(not i.reserved for i in creator(store, providers).create(
        FleetSpec(name="rl", gpu="H100", count=2, min_count=2, providers=("lambda",))).running)


def test_dry_run_plans_without_creating(mock_clouds, fleet_env) -> None:
    store, providers = fleet_env(mock_clouds)
    plan, offers = creator(store, providers).plan(FleetSpec(name="plan", gpu="H100", count=4, min_count=4))
    assert len(plan) == 4 and not offers.problems
    assert cloud_vms(mock_clouds, "plan") == [] and store.get_fleet("plan") is None


def test_status_and_reconcile_follow_the_clouds(mock_clouds, fleet_env) -> None:
    store, providers = fleet_env(mock_clouds)
    creator(store, providers).create(FleetSpec(name="rec", gpu="H100", count=2, min_count=1))
    view = FleetInspector(store, providers).view("rec")
    assert len(view.members) == 2 and view.price_per_hour > 0
    gone = view.members[0]
    providers[gone.member.provider].begin_destroy(gone.instance.id).wait(60)  # deleted behind vm's back
    report = FleetReconciler(store, providers, timeout=60).reconcile("rec")
    assert report.view.fleet.state is FleetState.DEGRADED
    assert MemberState.MISSING in {m.state for m in store.members("rec")}
