"""Fleet identity, property style: in a shared account full of look-alikes, every fleet operation touches only
VMs that carry its own fleet's id, under injected faults. Ground truth: the mock clouds' inventory."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from mock_clouds.core.models import Faults, Provider
from vm_core.errors import VmError
from vm_core.fleet.create import FleetCreator, FleetSpec
from vm_core.fleet.destroy import FleetDestroyer
from vm_core.fleet.inspect import FleetInspector
from vm_core.fleet.naming import FleetIdentity, new_fleet_id
from vm_core.fleet.reconcile import FleetReconciler
from vm_core.fleet.store import FleetState, MemberState, SqliteFleetStore
from vm_core.fleet.strategies import spread
from vm_core.model import CreateSpec, Instance, InstanceState, ReservationMode, ReservationRequest

BUILT_IN = ("crusoe", "lambda", "nebius")
NAMES = ("train", "eval")


def live(clouds: Any) -> dict[str, str]:
    """id -> name of every VM that exists and is not being deleted."""
    with clouds.world.tx() as world:
        return {vm.id: vm.name for p in Provider for vm in world.vms(p)
                if vm.state not in ("terminated", "terminating", "STATE_DELETING", "deleting")}


def plain_vm(providers: dict[str, Any], rng: random.Random) -> str | None:
    """A VM made outside any fleet, named like a fleet member (or not at all), in any cloud."""
    fleet = rng.choice(NAMES)
    name = rng.choice([f"{fleet}-{rng.randrange(3)}", f"{fleet}--{new_fleet_id()}-0", f"{fleet}-0-r2", "notebook"])
    provider = rng.choice(["crusoe", "nebius"])
    spec = CreateSpec(name=name, gpu="H100", gpu_count=8 if provider == "crusoe" else 1,
                      reservation=ReservationRequest(ReservationMode.NONE))
    try:
        return providers[provider].begin_create(spec).wait(60).id
    except VmError:
        return None  # a fault refused it, or its answer was lost: not counted


def owned(identity: FleetIdentity, instances: dict[str, str]) -> set[str]:
    marker = f"{identity.fleet}--{identity.fleet_id}-"
    return {i for i, name in instances.items() if name.startswith(marker)}


@pytest.mark.slow
def test_every_operation_touches_only_its_own_fleet(mock_clouds_factory, connect, tmp_path: Path) -> None:
    clouds = mock_clouds_factory()
    providers = {name: connect(clouds, name) for name in BUILT_IN}
    stores = [SqliteFleetStore(tmp_path / f"person-{n}.db") for n in range(2)]
    rng = random.Random(20261130)
    for seed, provider in enumerate(Provider):
        clouds.world.configure_faults(provider, Faults(error_rate=0.1, drop_rate=0.05, seed=seed + 7))
    fleet_ids: set[str] = set()
    plain: set[str] = set()
    for step in range(10):
        plain |= {made} if (made := plain_vm(providers, rng)) else set()
        store, name = rng.choice(stores), rng.choice(NAMES)
        before = live(clouds)
        record = store.get_fleet(name)
        if record is None:
            FleetCreator(store, providers, spread, timeout=60).create(
                FleetSpec(name=name, gpu="H100", gpu_count=1, count=rng.randint(1, 3), min_count=1,
                          providers=("lambda", "nebius")))
            record = store.get_fleet(name)
        elif rng.random() < 0.5:
            FleetReconciler(store, providers, timeout=60).reconcile(name)
        else:
            FleetDestroyer(store, providers, timeout=60).destroy(name)
        after = live(clouds)
        identity = FleetIdentity(name, record.fleet_id)
        fleet_ids.add(record.fleet_id)
        vanished, appeared = set(before) - set(after), set(after) - set(before)
        assert vanished <= owned(identity, before), f"step {step}: destroyed VMs of others"
        assert appeared <= owned(identity, after), f"step {step}: created VMs without the fleet's id"
    for provider in Provider:
        clouds.world.configure_faults(provider, Faults())
    for store in stores:
        for record in store.list_fleets():
            FleetDestroyer(store, providers, timeout=60).destroy(record.name)
    left = list(live(clouds).values())
    assert not [n for n in left for fid in fleet_ids if f"--{fid}-" in n], "a fleet's VM outlived its destroy"
    assert plain and plain <= set(live(clouds)), "every VM made outside the fleets is still there"


def test_a_label_naming_another_fleet_overrides_a_matching_name() -> None:
    identity = FleetIdentity("train", "abcdefgh")
    vm = Instance(provider="nebius", id="x", name="train--abcdefgh-0", state=InstanceState.RUNNING, gpu="H100",
                  gpu_count=1, region="eu-north1", shape="gpu-h100-sxm/1gpu-16vcpu-200gb")
    assert identity.claim(vm) is not None
    assert identity.claim(Instance(**{**_fields(vm), "labels": {"vm-fleet-id": "zzzzzzzz"}})) is None
    assert identity.claim(Instance(**{**_fields(vm), "name": "renamed", "labels": {"vm-fleet-id": "abcdefgh"}}))
    assert identity.claim(Instance(**{**_fields(vm), "name": "train-0"})) is None
    assert FleetIdentity("train", "").claim(Instance(**{**_fields(vm), "name": "train-0"})) is None


def _fields(instance: Instance) -> dict[str, Any]:
    return {f: getattr(instance, f) for f in instance.__dataclass_fields__}


def test_a_preempted_member_shows_as_preempted_and_reconcile_frees_its_slot(mock_clouds, connect,
                                                                          tmp_path: Path) -> None:
    providers = {name: connect(mock_clouds, name) for name in BUILT_IN}
    store = SqliteFleetStore(tmp_path / "vm.db")
    FleetCreator(store, providers, spread, timeout=60).create(
        FleetSpec(name="spotty", gpu="H100", gpu_count=1, count=2, min_count=1, providers=("lambda",)))
    first, second = (m for m in store.members("spotty") if m.state is MemberState.RUNNING)
    mock_clouds.world.preempt(Provider.LAMBDA, first.instance_id)  # the cloud takes the capacity back
    assert providers["lambda"].get_instance(first.instance_id).state is InstanceState.PREEMPTED
    view = FleetInspector(store, providers).view("spotty")
    states = {v.member.instance_id: v.instance.state for v in view.members if v.instance}
    assert states == {first.instance_id: InstanceState.PREEMPTED, second.instance_id: InstanceState.RUNNING}
    assert view.fleet.state is FleetState.DEGRADED
    report = FleetReconciler(store, providers, timeout=60).reconcile("spotty")
    assert [(a.verb.value, a.instance_id, a.detail) for a in report.actions] == \
        [("destroyed", first.instance_id, "preempted")]
    assert {i for i in live(mock_clouds)} >= {second.instance_id} and first.instance_id not in live(mock_clouds)
    FleetDestroyer(store, providers, timeout=60).destroy("spotty")
