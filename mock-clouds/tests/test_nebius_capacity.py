"""Nebius mock: reservation policies (capacity block groups), capacity shortage, quotas, failed operations."""

from __future__ import annotations

import grpc
import pytest
from mock_clouds.core.models import Faults, Provider, Quota
from mock_clouds.nebius import testkit
from mock_clouds.nebius._pb.nebius.common import v1 as common
from mock_clouds.nebius._pb.nebius.compute import v1 as compute

State = compute.InstanceStatusInstanceState
Policy = compute.ReservationPolicyPolicy
BLOCK = testkit.H100_BLOCK
CPU = ("cpu-d3", "4vcpu-16gb")
EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]


@pytest.fixture
def start_nebius(mock_clouds_factory):
    """Start a Nebius mock whose fresh world `configure` may edit first."""
    started: list[testkit.Harness] = []

    def start(configure=None) -> testkit.Harness:
        started.append(testkit.Harness(mock_clouds_factory(providers=("nebius",), configure=configure)))
        return started[-1]

    yield start
    for harness in started:
        harness.close()


@pytest.fixture
def nebius(start_nebius):
    return start_nebius()


def _policy(policy: Policy, *ids: str) -> compute.InstanceSpec:
    return testkit.instance_spec(
        reservation_policy=compute.ReservationPolicy(policy=policy, reservation_ids=list(ids))
    )


def _run(nebius, name: str, spec: compute.InstanceSpec) -> tuple[common.Operation, compute.Instance]:
    op = nebius.client.wait(nebius.create(name, spec))
    return op, nebius.get(op.resource_id)


def _assert_not_enough_resources(op: common.Operation, preset: str) -> None:
    assert op.status.code == EXHAUSTED
    assert testkit.service_error(op.status) == common.ServiceError(
        service="compute",
        code="NotEnoughResources",
        not_enough_resources=common.NotEnoughResources(
            violations=[
                common.NotEnoughResourcesViolation(
                    resource_type="virtualMachine",
                    requested=preset,
                    message="VM schedule timeout, most likely due to insufficient hardware resources",
                )
            ]
        ),
    )


def _assert_left_stopped(instance: compute.Instance) -> None:
    assert (instance.status.state, instance.status.reconciling) == (State.STOPPED, False)
    assert instance.status.reservation_id == ""


def test_auto_lands_in_the_capacity_block(nebius):
    op, instance = _run(nebius, "auto", testkit.instance_spec())
    assert op.status.code == 0 and instance.status.reservation_id == BLOCK
    assert nebius.world.reservation_used(Provider.NEBIUS, BLOCK) == 1


def test_auto_with_listed_block(nebius):
    op, instance = _run(nebius, "auto-listed", _policy(Policy.AUTO, BLOCK))
    assert op.status.code == 0 and instance.status.reservation_id == BLOCK
    assert instance.spec.reservation_policy.reservation_ids == [BLOCK]


def test_forbid_runs_on_demand(nebius):
    op, instance = _run(nebius, "forbid", _policy(Policy.FORBID))
    assert op.status.code == 0 and instance.status.state == State.RUNNING
    assert instance.status.reservation_id == ""


def test_forbid_with_reservation_ids_is_invalid(nebius):
    failed = testkit.failure(
        nebius.client.instances.create,
        testkit.create_request(nebius.project, "x", _policy(Policy.FORBID, BLOCK)),
    )
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert failed.error.code == "BadRequest"
    assert [v.field for v in failed.error.bad_request.violations] == [
        "spec.reservation_policy.reservation_ids"
    ]


def test_strict_uses_the_listed_block(nebius):
    op, instance = _run(nebius, "strict", _policy(Policy.STRICT, BLOCK))
    assert op.status.code == 0 and instance.status.reservation_id == BLOCK


def test_strict_with_an_absent_block_fails_for_lack_of_resources(nebius):
    op, instance = _run(
        nebius, "strict-absent", _policy(Policy.STRICT, "capacityblockgroup-e00nosuchblock00001")
    )
    _assert_not_enough_resources(op, "1gpu-16vcpu-200gb")
    _assert_left_stopped(instance)


def test_strict_with_a_full_block_fails_and_auto_falls_back(start_nebius):
    def one_gpu_block(state):
        next(r for r in state.providers["nebius"].reservations if r.id == BLOCK).quantity = 1

    nebius = start_nebius(one_gpu_block)
    first, instance = _run(nebius, "fills-block", _policy(Policy.STRICT, BLOCK))
    assert first.status.code == 0 and instance.status.reservation_id == BLOCK
    op, instance = _run(nebius, "strict-full", _policy(Policy.STRICT, BLOCK))
    _assert_not_enough_resources(op, "1gpu-16vcpu-200gb")
    _assert_left_stopped(instance)
    op, instance = _run(nebius, "auto-fallback", _policy(Policy.AUTO, BLOCK))
    assert op.status.code == 0 and instance.status.reservation_id == ""


def _one_cpu_host(state):
    capacity = next(c for c in state.providers["nebius"].capacity if c.shape == "cpu-d3/4vcpu-16gb")
    capacity.quantity = 1


def test_capacity_shortage_fails_the_create_operation_and_leaves_the_instance_stopped(start_nebius):
    nebius = start_nebius(_one_cpu_host)
    first, _ = _run(nebius, "gets-host", testkit.instance_spec(*CPU))
    assert first.status.code == 0
    op, instance = _run(nebius, "no-host", testkit.instance_spec(*CPU))
    _assert_not_enough_resources(op, CPU[1])
    assert op.finished_at is not None and op.status.message
    _assert_left_stopped(instance)
    deleted = nebius.client.wait(
        nebius.client.instances.delete(compute.DeleteInstanceRequest(id=op.resource_id))
    )
    assert deleted.status.code == 0


def test_start_without_capacity_fails_and_stays_stopped(start_nebius):
    nebius = start_nebius(_one_cpu_host)
    client = nebius.client
    op, _ = _run(nebius, "first", testkit.instance_spec(*CPU))
    client.wait(client.instances.stop(compute.StopInstanceRequest(id=op.resource_id)))
    taker, _ = _run(nebius, "taker", testkit.instance_spec(*CPU))
    assert taker.status.code == 0
    start = client.wait(client.instances.start(compute.StartInstanceRequest(id=op.resource_id)))
    _assert_not_enough_resources(start, CPU[1])
    _assert_left_stopped(nebius.get(op.resource_id))


def test_gpu_quota_fails_the_operation_with_quota_failure(start_nebius):
    def no_h200(state):
        project = state.providers["nebius"].projects[0].id
        state.providers["nebius"].quotas.append(Quota(scope=project, family="gpu-h200-sxm", max_gpus=0))

    nebius = start_nebius(no_h200)
    op, instance = _run(nebius, "h200", testkit.instance_spec("gpu-h200-sxm", "1gpu-16vcpu-200gb"))
    assert op.status.code == EXHAUSTED
    assert testkit.service_error(op.status) == common.ServiceError(
        service="compute",
        code="QuotaFailure",
        quota_failure=common.QuotaFailure(
            violations=[
                common.QuotaFailureViolation(
                    quota="compute.instance.gpu.h200", limit="0", requested="1", message="quota exceeded"
                )
            ]
        ),
    )
    _assert_left_stopped(instance)


def test_injected_operation_failure_is_internal_with_internal_error(nebius):
    nebius.world.configure_faults(Provider.NEBIUS, Faults(op_failure_rate=1.0))
    op, instance = _run(nebius, "unlucky", testkit.instance_spec(*CPU))
    assert op.status.code == grpc.StatusCode.INTERNAL.value[0]
    error = testkit.service_error(op.status)
    assert error.code == "InternalError" and error.service == "compute"
    assert len(error.internal_error.request_id) == 36
    _assert_left_stopped(instance)


CREATE, START = 120, 60  # scenario durations (seconds before time scaling)


def _phases(nebius, clock: testkit.FrozenClock, instance_id: str, duration: float) -> list[tuple[State, bool]]:
    """The (state, reconciling) shown at 10 %, 50 % and 90 % of an operation lasting `duration` that began at
    `clock`'s time, then after it."""
    seen = []
    for fraction in (0.1, 0.4, 0.4, 0.3):  # cumulative: 0.1, 0.5, 0.9, 1.2
        clock.advance(nebius.world.scaled(duration * fraction))
        status = nebius.get(instance_id).status
        seen.append((status.state, status.reconciling))
    return seen


def test_a_create_that_fails_for_capacity_never_shows_starting(start_nebius):
    """STARTING means capacity was obtained: a doomed create stays STOPPED with reconciling=true until its
    operation fails, then STOPPED with reconciling=false. Source: SkyPilot `sky/provision/nebius/utils.py:722-728`
    (breaks its wait on STARTING; "All Instances initially have state=STOPPED and reconciling=True", PR #6856),
    dstack `backends/nebius/compute.py:424-441` (`_wait_for_instance`), research nebius.md §5 and real-clouds.md
    Part 2 D1."""
    nebius = start_nebius(_one_cpu_host)
    assert nebius.client.wait(nebius.create("gets-host", testkit.instance_spec(*CPU))).status.code == 0
    clock = testkit.FrozenClock(nebius.world)
    op = nebius.create("no-host", testkit.instance_spec(*CPU))
    pending = (State.STOPPED, True)
    assert _phases(nebius, clock, op.resource_id, CREATE) == [pending, pending, pending, (State.STOPPED, False)]
    _assert_not_enough_resources(nebius.client.wait(op), CPU[1])


def test_a_start_that_fails_for_capacity_never_shows_starting(start_nebius):
    """As a doomed create: the instance stays STOPPED (reconciling) until the start fails for capacity (same
    sources; research nebius.md §5: a failed Start reads back STOPPED)."""
    nebius = start_nebius(_one_cpu_host)
    client = nebius.client
    op, _ = _run(nebius, "first", testkit.instance_spec(*CPU))
    client.wait(client.instances.stop(compute.StopInstanceRequest(id=op.resource_id)))
    _run(nebius, "taker", testkit.instance_spec(*CPU))
    clock = testkit.FrozenClock(nebius.world)
    start = client.instances.start(compute.StartInstanceRequest(id=op.resource_id))
    pending = (State.STOPPED, True)
    assert _phases(nebius, clock, op.resource_id, START) == [pending, pending, pending, (State.STOPPED, False)]
    _assert_not_enough_resources(client.wait(start), CPU[1])


def test_a_create_that_gets_capacity_shows_starting(nebius):
    """The counterpart: with capacity, the create turns STARTING before RUNNING (same sources)."""
    clock = testkit.FrozenClock(nebius.world)
    op = nebius.create("gets-one", testkit.instance_spec(*CPU))
    phases = _phases(nebius, clock, op.resource_id, CREATE)
    assert phases == [(State.STOPPED, True), (State.STARTING, True), (State.STARTING, True), (State.RUNNING, False)]
