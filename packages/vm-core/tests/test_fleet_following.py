"""The create engine at scale, against the mock clouds: one watcher per provider instead of a poll loop per VM.

Requests are counted on the wire (the mock servers log every request line), threads with threading.active_count;
nothing here asserts how long anything takes.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from mock_clouds.core.models import Capacity, Faults, Provider, Quota, VMState, WorldState
from vm_core.fleet.create import FleetCreator, FleetSpec
from vm_core.fleet.store import FleetState, MemberState, SqliteFleetStore
from vm_core.fleet.strategies import spread
from vm_core.model import InstanceState
from vm_core.provider import SupportsGetMany, SupportsGetStates

from .test_fleet_manager import BUILT_IN, cloud_ids, cloud_vms, no_nebius_h100

# One H100:8 offer per provider with room for a big fleet (the default scenario's durations and rate limits).
H100 = {
    "crusoe": ("us-east1-a", "h100-80gb-sxm-ib.8x"),
    "lambda": ("us-south-2", "gpu_8x_h100_sxm5"),
    "nebius": ("eu-north1", "gpu-h100-sxm/8gpu-128vcpu-1600gb"),
}
ROOM = 400

# A read of one VM or one operation, by id: the per-VM poll the watchers replace.
PER_VM_READ = re.compile(r'"GET (/api/v1/instances/[0-9a-f]{32}|\S*/compute/vms/instances/(operations/)?'
                         r'[0-9A-Fa-f-]{36}) ')


def roomy(state: WorldState) -> None:
    for name, (region, shape) in H100.items():
        config = state.providers[name]
        config.reservations = []
        config.capacity = [c for c in config.capacity if "h100" not in c.shape.lower()]
        config.capacity.append(Capacity(region=region, shape=shape, quantity=ROOM))
    crusoe = state.providers["crusoe"]
    crusoe.quotas = [q for q in crusoe.quotas if q.family != "h100"]
    crusoe.quotas += [Quota(scope=p.id, family="h100", max_gpus=8 * ROOM) for p in crusoe.projects]


class ThreadPeak:
    """The most threads alive at once while the block runs (sampled by one extra thread, counted out)."""

    def __init__(self) -> None:
        self.peak = 0
        self._done = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.wait(0.002):
            self.peak = max(self.peak, threading.active_count() - 1)

    def __enter__(self) -> ThreadPeak:
        self._sampler.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._sampler.join()


def test_a_200_vm_create_holds_few_threads_and_polls_no_vm_by_id(mock_clouds_factory, connect, tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    clouds = mock_clouds_factory(configure=roomy)
    providers = {name: connect(clouds, name) for name in BUILT_IN}
    store = SqliteFleetStore(tmp_path / "vm.db")
    creator = FleetCreator(store, providers, spread, timeout=120)
    caplog.set_level(logging.DEBUG, logger="mock_clouds.http")
    before = threading.active_count()
    with ThreadPeak() as threads:
        report = creator.create(FleetSpec(name="wide", gpu="H100", gpu_count=8, count=200, min_count=200))

    assert report.fleet.state is FleetState.ACTIVE and len({i.id for i in report.running}) == 200
    assert len(cloud_vms(clouds, "wide")) == 200
    placed = Counter(i.provider for i in report.running)
    assert set(placed) == set(BUILT_IN) and sorted(placed.values()) == [66, 67, 67]
    # Create calls run in a bounded pool per provider (32 + 4 + 32), boots cost no thread: one watcher per
    # provider. The mock servers in this process add a thread per open connection.
    assert threads.peak - before < 150, threads.peak - before
    requests = [r.getMessage() for r in caplog.records if r.name == "mock_clouds.http"]
    per_vm = [line for line in requests if PER_VM_READ.search(line)]
    listings = [line for line in requests if re.search(r'"GET (/api/v1/instances|\S*/compute/vms/instances)[? ]',
                                                        line)]
    assert len(per_vm) <= 10, per_vm[:20]  # the old engine polled each VM: at least 200 such reads (0 here)
    assert listings  # one per round and provider: their number follows the boot time, not the VM count


def test_a_watcher_that_loses_its_listings_neither_loses_nor_doubles_a_vm(mock_clouds_factory, connect,
                                                                          tmp_path: Path) -> None:
    clouds = mock_clouds_factory(time_scale=0.05)  # boots of 4.5 to 9 s: the faults start while they run
    providers = {name: connect(clouds, name) for name in BUILT_IN}
    store = SqliteFleetStore(tmp_path / "vm.db")
    spec = FleetSpec(name="blind", gpu="H100", gpu_count=8, count=6, min_count=6)
    creating, result = _create_in_background(store, providers, spec)
    try:
        _until(lambda: len([m for m in store.members("blind") if m.instance_id]) == 6, "all creates accepted")
        for provider in Provider:  # every request fails: listings, batch reads and operation reads alike
            clouds.world.configure_faults(provider, Faults(error_rate=1.0, seed=3))
        blind = {Provider(m.provider) for m in store.members("blind") if m.state is MemberState.CREATING}
        assert blind, "every VM was up before the faults: nothing was tested"
        _until(lambda: _running_in_cloud(clouds, "blind") == 6, "the VMs boot while nobody can see them")
        errors = {p: clouds.world.faults[p].counts["error"] for p in blind}
        _until(lambda: all(clouds.world.faults[p].counts["error"] >= errors[p] + 2 for p in blind),
               "the watchers keep reading (and failing) after the VMs are up")
    finally:
        for provider in Provider:
            clouds.world.configure_faults(provider, Faults())
        creating.join()

    report = result["report"]
    assert report.fleet.state is FleetState.ACTIVE
    assert sorted(i.id for i in report.running) == sorted(cloud_ids(clouds, "blind"))
    members = store.members("blind")
    assert len(members) == 6 and all(m.state is MemberState.RUNNING for m in members)
    assert sorted(m.slot for m in members) == list(range(6))
    assert {m.instance_id for m in members} == cloud_ids(clouds, "blind")


def _create_in_background(store: SqliteFleetStore, providers: dict[str, Any],
                          spec: FleetSpec) -> tuple[threading.Thread, dict[str, Any]]:
    """A started thread creating the fleet `spec`, and the dict its report lands in (key "report")."""
    result: dict[str, Any] = {}
    creating = threading.Thread(target=lambda: result.update(report=FleetCreator(store, providers, spread,
                                                                                   timeout=120).create(spec)))
    creating.start()
    return creating, result


def _running_in_cloud(clouds: Any, prefix: str) -> int:
    with clouds.world.tx() as world:
        return sum(1 for p in Provider for vm in world.vms(p)
                   if vm.name.startswith(prefix) and vm.state is VMState.RUNNING)


def _until(condition: Any, what: str, limit: float = 120.0) -> None:
    """Wait for `condition` (a generous limit only guards against a hang; nothing is timed)."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def slow_lambda_no_nebius_h100(state: WorldState) -> None:
    no_nebius_h100(state)
    state.providers["lambda"].durations.create = 600.0  # 12 s at the test's time scale


def test_a_failed_slot_is_placed_again_while_the_rest_still_boots(mock_clouds_factory, connect,
                                                                   tmp_path: Path) -> None:
    clouds = mock_clouds_factory(time_scale=0.02, configure=slow_lambda_no_nebius_h100)
    providers = {name: connect(clouds, name) for name in BUILT_IN}
    store = SqliteFleetStore(tmp_path / "vm.db")
    spec = FleetSpec(name="eager", gpu="H100", gpu_count=8, count=6, min_count=6)
    creating, result = _create_in_background(store, providers, spec)
    try:
        _until(lambda: any(m.attempt > 1 for m in store.members("eager")), "a failed slot placed again")
        first_wave = [m for m in store.members("eager") if m.attempt == 1 and m.provider == "lambda"]
        # Nebius fails its creates (no host) after 2.4 s; the first Lambda VMs boot for 12 s.
        assert first_wave and all(m.state is MemberState.CREATING for m in first_wave)
    finally:
        creating.join()
    report = result["report"]
    assert report.fleet.state is FleetState.ACTIVE and len(cloud_ids(clouds, "eager")) == 6
    assert {i.provider for i in report.running} == {"crusoe", "lambda"}


def test_a_provider_without_batch_reads_is_followed_through_one_listing_a_round(tmp_path: Path) -> None:
    from vm_example_provider import plugin

    provider = plugin.connect({"path": str(tmp_path / "cloud.json"), "seconds": 0.05, "capacity": 4})
    assert not isinstance(provider, SupportsGetStates | SupportsGetMany)  # followed through one listing a round
    store = SqliteFleetStore(tmp_path / "vm.db")
    report = FleetCreator(store, {"example": provider}, spread, timeout=60).create(
        FleetSpec(name="plain", gpu="H100", count=6, min_count=4))
    assert report.fleet.state is FleetState.DEGRADED and len(report.running) == 4
    assert all(i.state is InstanceState.RUNNING for i in report.running)
    assert sorted(i.id for i in report.running) == sorted(i.id for i in provider.list_instances())
    assert sorted(m.state.value for m in store.members("plain")) == ["running"] * 4


def test_a_crusoe_create_that_fails_and_removes_its_vm_still_fails_over(mock_clouds, connect, tmp_path: Path) -> None:
    """Crusoe removes the VM of a failed create: the listing cannot say why, the operation does."""
    mock_clouds.world.configure_faults(Provider.CRUSOE, Faults(op_failure_rate=1.0, seed=5))
    providers = {name: connect(mock_clouds, name) for name in BUILT_IN}
    store = SqliteFleetStore(tmp_path / "vm.db")
    report = FleetCreator(store, providers, spread, timeout=60).create(
        FleetSpec(name="gone", gpu="H100", gpu_count=8, count=3, min_count=3))
    assert report.fleet.state is FleetState.ACTIVE
    assert {i.provider for i in report.running} <= {"lambda", "nebius"} and len(report.running) == 3
    failed = [m for m in store.members("gone") if m.provider == "crusoe"]
    assert failed and all(m.state is MemberState.FAILED and "injected operation failure" in m.error for m in failed)
    assert sorted(i.id for i in report.running) == sorted(cloud_ids(mock_clouds, "gone"))


def test_rounds_that_settle_nothing_are_spaced_wider_up_to_a_limit_and_close_again_after_one_that_settles() -> None:
    from vm_core.fleet.follower import IDLE_BACKOFF, MAX_BACKOFF, round_delay

    idle = [round_delay(1.0, 0, rounds, 0.0) for rounds in range(8)]
    assert idle[0] == 1.0 and idle == sorted(idle) and idle[-1] == IDLE_BACKOFF  # grows while VMs still boot
    assert round_delay(1.0, 0, 0, 0.0) == 1.0  # a round that settled a VM: the next one at the interval again
    assert round_delay(1.0, 5, 0, 0.0) == MAX_BACKOFF  # failed reads back off further
    assert round_delay(1.0, 0, 0, 0.25) == 0.75  # the next round starts an interval after this one did
    assert round_delay(1.0, 0, 0, 3.0) == 3.0  # but the pause is never shorter than the last round took


def test_a_lambda_fleet_on_one_shape_and_region_reads_instance_types_rarely_and_launches_each_vm_once(
        mock_clouds_factory, connect, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Launches reuse a recent GET /instance-types (TYPES_TTL) instead of reading it before each one, and each VM
    is launched exactly once, although the watcher's listings share the request budget (Lambda's documented
    limits, scaled). Counted in the mock's request log. Whether the server refused a call with 429 on the way
    depends on how late this machine sent it after its slot, so 429s are not counted here (a refused launch is
    retried and was not applied); the pacing itself is proven on a fake clock in lambda-sdk's test_policy.py."""
    def quick_boots(state: WorldState) -> None:
        roomy(state)
        state.providers["lambda"].durations.create = 20.0  # 1 s at this scale: the launches are what is tested

    clouds = mock_clouds_factory(configure=quick_boots, time_scale=0.05, providers=("lambda",))
    providers = {"lambda": connect(clouds, "lambda")}
    store = SqliteFleetStore(tmp_path / "vm.db")
    caplog.set_level(logging.DEBUG, logger="mock_clouds.http")
    region, shape = H100["lambda"]
    report = FleetCreator(store, providers, spread, timeout=120).create(
        FleetSpec(name="paced", gpu="H100", gpu_count=8, count=5, min_count=5, region=region))

    assert report.fleet.state is FleetState.ACTIVE and {i.shape for i in report.running} == {shape}
    requests = [r.getMessage() for r in caplog.records if r.name == "mock_clouds.http"]
    launches = [line for line in requests if '"POST /api/v1/instance-operations/launch' in line]
    types = [line for line in requests if '"GET /api/v1/instance-types' in line]
    accepted = [line for line in launches if '" 200 ' in line]
    assert len(accepted) == 5 and len(report.running) == 5, launches
    assert 1 <= len(types) <= 3, types  # the offers' read, then one per TYPES_TTL at most (one per launch before)
