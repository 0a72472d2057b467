"""The simulation core on its own: placement, lifecycle, reservations, quotas, timing and persistence."""

from __future__ import annotations

import contextlib
import time

import msgspec
import pytest
from mock_clouds.core.models import (
    CreateFailure,
    Faults,
    OpError,
    OpKind,
    Provider,
    Quota,
    VMState,
    WorldState,
)
from mock_clouds.core.placement import ON_DEMAND_ONLY, ReservationChoice
from mock_clouds.core.world import PURGE_EVERY_SECONDS, RETENTION_SECONDS, World, WorldError
from mock_clouds.scenario import load_scenario

ANY_RESERVATION = ReservationChoice()
CRUSOE_PROJECT = "5d9f0f5e-8c0f-4c52-9d6e-2f7b6f0c1a01"
H100 = "h100-80gb-sxm-ib.8x"
CHEAP_RES = "804bf3a2-5b7e-4c1d-9f0a-6e2d8c4b1a11"
DEAR_RES = "e384a1de-3f2c-4b5a-8d9e-0c1b2a3f4e22"


@pytest.fixture
def world() -> World:
    state = load_scenario()
    state.time_scale = 0.0  # operations are due at once; tests call advance through tx()
    return World(state)


def create(world: World, name: str = "vm", *, shape: str = H100, region: str = "us-east1-a",
           choice: ReservationChoice = ANY_RESERVATION, on_failure: CreateFailure = CreateFailure.REMOVE,
           fail_fast: bool = False):
    with world.tx():
        return world.create_vm(Provider.CRUSOE, scope=CRUSOE_PROJECT, region=region, shape=shape, name=name,
                               choice=choice, on_failure=on_failure, fail_fast=fail_fast)


def settle(world: World) -> None:
    with world.tx():
        pass


def test_create_completes_into_running_on_cheapest_reservation(world: World) -> None:
    vm, op = create(world)
    assert vm.state == VMState.CREATING and not op.done
    settle(world)
    assert op.done and op.error is None
    assert vm.state == VMState.RUNNING
    assert vm.reservation_id == CHEAP_RES
    assert world.reservation_used(Provider.CRUSOE, CHEAP_RES) == 8


def test_cheapest_reservation_full_falls_to_next_then_on_demand(world: World) -> None:
    vms = [create(world, f"vm{i}")[0] for i in range(7)]
    settle(world)
    assert [v.reservation_id for v in vms] == [CHEAP_RES] * 4 + [DEAR_RES] * 2 + [""]
    assert world.on_demand_used(Provider.CRUSOE, "us-east1-a", H100) == 1


def test_on_demand_choice_skips_reservations(world: World) -> None:
    vm, _ = create(world, choice=ON_DEMAND_ONLY)
    settle(world)
    assert vm.reservation_id == "" and vm.state == VMState.RUNNING


def test_capacity_shortage_fails_operation_after_duration_and_removes_vm(world: World) -> None:
    vm, op = create(world, region="eu-iceland1-a")  # no H100 there
    assert op.error == OpError.CAPACITY and not op.done
    settle(world)
    assert op.done and vm.state == VMState.DELETED
    with world.tx():
        assert world.vm(Provider.CRUSOE, vm.id) is None


def test_fail_fast_capacity_changes_nothing(world: World) -> None:
    with pytest.raises(WorldError) as err:
        create(world, region="eu-iceland1-a", fail_fast=True)
    assert err.value.kind == "capacity"
    assert world.state.vms == {}


def test_failed_create_can_leave_a_stopped_instance(world: World) -> None:
    vm, _ = create(world, region="eu-iceland1-a", on_failure=CreateFailure.STOP)
    settle(world)
    assert vm.state == VMState.STOPPED and not vm.holds_capacity


def test_stop_releases_reservation_and_start_reclaims_it(world: World) -> None:
    vm, _ = create(world)
    settle(world)
    with world.tx():
        world.begin(Provider.CRUSOE, vm.id, OpKind.STOP)
    settle(world)
    assert vm.state == VMState.STOPPED and vm.reservation_id == ""
    assert world.reservation_used(Provider.CRUSOE, CHEAP_RES) == 0
    with world.tx():
        world.begin(Provider.CRUSOE, vm.id, OpKind.START)
    settle(world)
    assert vm.state == VMState.RUNNING and vm.reservation_id == CHEAP_RES


def test_start_without_room_fails_and_stays_stopped(world: World) -> None:
    vm, _ = create(world, choice=ReservationChoice(candidates=[CHEAP_RES], on_demand_fallback=False))
    settle(world)
    with world.tx():
        world.begin(Provider.CRUSOE, vm.id, OpKind.STOP)
    settle(world)
    for i in range(4):  # fill the reservation while the VM is stopped
        create(world, f"filler{i}", choice=ReservationChoice(candidates=[CHEAP_RES], on_demand_fallback=False))
    with world.tx():
        op = world.begin(Provider.CRUSOE, vm.id, OpKind.START)
    settle(world)
    assert op.error == OpError.CAPACITY and vm.state == VMState.STOPPED


def test_restart_releases_then_reclaims(world: World) -> None:
    vm, _ = create(world)
    settle(world)
    with world.tx():
        world.begin(Provider.CRUSOE, vm.id, OpKind.RESTART)
        assert vm.state == VMState.STOPPING and world.reservation_used(Provider.CRUSOE, CHEAP_RES) == 0
    settle(world)
    assert vm.state == VMState.RUNNING and vm.reservation_id == CHEAP_RES


def test_conflicting_operation_is_refused_but_delete_aborts_it(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.state.time_scale = 100.0  # keep the create in flight
    vm, create_op = create(world)
    with world.tx(), pytest.raises(WorldError) as err:
        world.begin(Provider.CRUSOE, vm.id, OpKind.STOP)
    assert err.value.kind == "conflict" and err.value.operation_id == create_op.id
    with world.tx():
        delete_op = world.begin(Provider.CRUSOE, vm.id, OpKind.DELETE)
        again = world.begin(Provider.CRUSOE, vm.id, OpKind.DELETE)
    assert create_op.done and create_op.error == OpError.ABORTED
    assert again is delete_op and vm.state == VMState.DELETING
    monkeypatch.setattr(world, "now", lambda: delete_op.due_at)  # time passes until the delete is due
    settle(world)
    assert vm.state == VMState.DELETED and not vm.holds_capacity


def test_invalid_transitions_and_unknown_vm(world: World) -> None:
    vm, _ = create(world)
    settle(world)
    with world.tx(), pytest.raises(WorldError) as err:
        world.begin(Provider.CRUSOE, vm.id, OpKind.START)
    assert err.value.kind == "conflict"
    with world.tx(), pytest.raises(WorldError) as missing:
        world.begin(Provider.CRUSOE, "nope", OpKind.STOP)
    assert missing.value.kind == "not_found"


def test_quota_limits_gpus_per_scope_and_family(world: World) -> None:
    world.state.providers["crusoe"].quotas = [Quota(scope=CRUSOE_PROJECT, family="h100", max_gpus=8)]
    create(world, "first")
    with pytest.raises(WorldError) as err:
        create(world, "second", fail_fast=True)
    assert err.value.kind == "quota"


def test_operations_complete_only_when_due() -> None:
    state = load_scenario()
    state.time_scale = 0.01  # create takes 0.9 s
    world = World(state)
    vm, op = create(world)
    settle(world)
    assert not op.done and vm.state == VMState.CREATING
    deadline = time.monotonic() + 30
    while not op.done and time.monotonic() < deadline:
        time.sleep(0.05)
        settle(world)
    assert op.done and vm.state == VMState.RUNNING
    assert op.finished_at == pytest.approx(op.due_at)


def test_injected_operation_failures_follow_the_seed(world: World) -> None:
    world.configure_faults(Provider.CRUSOE, Faults(op_failure_rate=1.0, seed=3))
    vm, op = create(world)
    settle(world)
    assert op.error == OpError.INTERNAL and vm.state == VMState.DELETED
    assert world.faults[Provider.CRUSOE].counts["op_failure"] == 1


def test_reserve_and_unreserve_move_a_running_vm(world: World) -> None:
    vm, _ = create(world, choice=ON_DEMAND_ONLY)
    settle(world)
    with world.tx():
        world.set_reservation(Provider.CRUSOE, vm.id, DEAR_RES)
    assert vm.reservation_id == DEAR_RES and world.reservation_used(Provider.CRUSOE, DEAR_RES) == 8
    with world.tx():
        world.set_reservation(Provider.CRUSOE, vm.id, None)
    assert vm.reservation_id == "" and vm.holds_capacity


def test_world_state_roundtrips_through_json(world: World) -> None:
    create(world, "persisted")
    settle(world)
    restored = msgspec.json.decode(world.snapshot(), type=WorldState)
    assert [v.name for v in restored.vms.values()] == ["persisted"]
    assert restored.credentials == world.state.credentials


def test_a_read_persists_only_what_it_completed() -> None:
    changes: list[int] = []
    state = load_scenario()
    state.time_scale = 1.0  # operations take their full scenario duration: none is due during this test
    world = World(state, on_change=lambda: changes.append(1))
    vm, op = create(world)
    assert len(changes) == 1  # the create, a write
    with world.read() as read:
        assert read.vm(Provider.CRUSOE, vm.id) is vm
    assert len(changes) == 1  # nothing was due: nothing to persist
    world.now = lambda: op.due_at + 1.0  # type: ignore[method-assign]
    with world.read():
        pass
    assert op.done and vm.state == VMState.RUNNING
    assert len(changes) == 2  # the read completed the create: that is persisted


def test_due_operations_complete_in_due_order_whatever_order_they_were_made(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The world finds due operations by due time (a heap), not by scanning: an operation made later but due
    sooner completes first, and one not yet due stays pending."""
    world.state.time_scale = 1.0
    world.state.providers[Provider.CRUSOE].durations.delete = 10.0
    slow, _ = create(world, "slow")
    quick, _ = create(world, "quick")
    settle_at = time.time() + 3600
    monkeypatch.setattr(world, "now", lambda: settle_at)
    settle(world)
    with world.tx():
        slow_delete = world.begin(Provider.CRUSOE, slow.id, OpKind.DELETE)
    world.state.providers[Provider.CRUSOE].durations.delete = 1.0
    with world.tx():
        quick_delete = world.begin(Provider.CRUSOE, quick.id, OpKind.DELETE)
    assert quick_delete.due_at < slow_delete.due_at
    monkeypatch.setattr(world, "now", lambda: quick_delete.due_at)
    settle(world)
    assert quick.state == VMState.DELETED and slow.state == VMState.DELETING and not slow_delete.done
    monkeypatch.setattr(world, "now", lambda: slow_delete.due_at)
    settle(world)
    assert slow.state == VMState.DELETED and slow_delete.finished_at == slow_delete.due_at


def test_records_past_the_retention_are_purged(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    vm, create_op = create(world, "old")
    settle(world)
    with world.tx():
        delete_op = world.begin(Provider.CRUSOE, vm.id, OpKind.DELETE)
    kept = delete_op.due_at + RETENTION_SECONDS / 2
    monkeypatch.setattr(world, "now", lambda: kept)
    settle(world)
    assert world.vm(Provider.CRUSOE, vm.id, include_deleted=True) is vm and vm.state == VMState.DELETED
    expired = delete_op.due_at + RETENTION_SECONDS + PURGE_EVERY_SECONDS + 1
    monkeypatch.setattr(world, "now", lambda: expired)
    settle(world)
    assert world.vm(Provider.CRUSOE, vm.id, include_deleted=True) is None
    assert world.operation(Provider.CRUSOE, delete_op.id) is None
    assert world.operation(Provider.CRUSOE, create_op.id) is None


def test_a_vm_is_found_by_name_however_it_came_and_went(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = create(world, "twin")
    settle(world)
    assert world.vm_by_name(Provider.CRUSOE, CRUSOE_PROJECT, "twin") is first
    assert world.vm_by_name(Provider.CRUSOE, "another-project", "twin") is None
    inserted = msgspec.structs.replace(first, id="inserted-directly", name="seeded", created_at=first.created_at + 1)
    world.state.vms[f"{Provider.CRUSOE}:{inserted.id}"] = inserted  # as a seeding script does, bypassing create_vm
    assert world.vm_by_name(Provider.CRUSOE, CRUSOE_PROJECT, "seeded") is inserted
    second, _ = create(world, "twin")
    assert world.vm_by_name(Provider.CRUSOE, CRUSOE_PROJECT, "twin") is first  # the oldest of the name
    with world.tx():
        delete_op = world.begin(Provider.CRUSOE, first.id, OpKind.DELETE)
    settle(world)
    assert world.vm_by_name(Provider.CRUSOE, CRUSOE_PROJECT, "twin") is second  # a deleted VM has no name
    monkeypatch.setattr(world, "now", lambda: delete_op.due_at + RETENTION_SECONDS + PURGE_EVERY_SECONDS + 1)
    settle(world)  # purges the deleted one
    third, _ = create(world, "third")
    assert world.vm(Provider.CRUSOE, first.id, include_deleted=True) is None
    assert [world.vm_by_name(Provider.CRUSOE, CRUSOE_PROJECT, n) for n in ("twin", "seeded", "third")] == [
        second, inserted, third]


def _scanned(world: World) -> tuple[dict, dict, dict]:
    """What the capacity counts must be, from a scan of every VM."""
    on_demand: dict = {}
    reserved: dict = {}
    quota: dict = {}
    for vm in world.state.vms.values():
        if not vm.holds_capacity:
            continue
        shape = world.shape(vm.provider, vm.shape)
        assert shape is not None
        if vm.reservation_id:
            reserved[(vm.provider, vm.reservation_id)] = reserved.get((vm.provider, vm.reservation_id), 0) + shape.gpus
        else:
            on_demand[(vm.provider, vm.region, vm.shape)] = on_demand.get((vm.provider, vm.region, vm.shape), 0) + 1
        quota[(vm.provider, vm.scope, shape.family)] = quota.get((vm.provider, vm.scope, shape.family), 0) + shape.gpus
    return on_demand, reserved, quota


@pytest.mark.parametrize("seed", range(5))
def test_capacity_counts_match_a_scan_of_every_vm_through_any_lifecycle(world: World, seed: int) -> None:
    """The counts that capacity checks read (kept as VMs take and release capacity) equal a scan of the VMs after
    every step of a random mix of creates (some with no room), stops, starts, deletes and reservation moves."""
    import random

    rng = random.Random(seed)
    made = []
    seen_reserved = seen_on_demand = False
    for step in range(60):
        kind = rng.choice(["create", "create", "stop", "start", "delete", "reserve"])
        live = [vm for vm in made if vm.state not in (VMState.DELETED,)]
        with world.tx(), contextlib.suppress(WorldError):  # a refusal (no room, wrong state) changes nothing
                if kind == "create" or not live:
                        made.append(world.create_vm(Provider.CRUSOE, scope=CRUSOE_PROJECT, region="us-east1-a",
                                                shape=H100, name=f"vm-{step}", choice=ANY_RESERVATION,
                                                on_failure=rng.choice(list(CreateFailure)))[0])
                elif kind == "reserve":
                    world.set_reservation(Provider.CRUSOE, rng.choice(live).id, rng.choice([CHEAP_RES, DEAR_RES, ""]))
                else:
                    world.begin(Provider.CRUSOE, rng.choice(live).id,
                                {"stop": OpKind.STOP, "start": OpKind.START, "delete": OpKind.DELETE}[kind])
        settle(world)
        on_demand, reserved, quota = _scanned(world)
        seen_reserved, seen_on_demand = seen_reserved or bool(reserved), seen_on_demand or bool(on_demand)
        for (provider, region, shape), count in on_demand.items():
            assert world.on_demand_used(provider, region, shape) == count
        for (provider, reservation_id), gpus in reserved.items():
            assert world.reservation_used(provider, reservation_id) == gpus
        for (provider, scope, family), gpus in quota.items():
            assert world.quota_used(provider, scope, family) == gpus
        assert world.on_demand_used(Provider.CRUSOE, "us-east1-a", H100) == on_demand.get(
            (Provider.CRUSOE, "us-east1-a", H100), 0)
        for reservation_id in (CHEAP_RES, DEAR_RES):
            assert world.reservation_used(Provider.CRUSOE, reservation_id) == reserved.get(
                (Provider.CRUSOE, reservation_id), 0)
    assert seen_reserved and seen_on_demand  # both kinds of holding were exercised
