"""Injected faults on the Nebius mock: waits survive transient errors and end in a typed error (never a hang);
retried creates are made safe by the idempotency key."""

from __future__ import annotations

import pytest
from mock_clouds.core.models import Faults, OpKind, Provider
from nebius_sdk import (
    CapacityError,
    OperationFailed,
    OperationTimeout,
    RateLimited,
    Unavailable,
)
from nebius_sdk.models import InstanceState, instance_state

CPU = ("cpu-d3", "4vcpu-16gb")
H100 = ("gpu-h100-sxm", "1gpu-16vcpu-200gb")
WAIT = 60.0


def _faults(clouds, **settings) -> None:
    clouds.world.configure_faults(Provider.NEBIUS, Faults(**settings))


def _create_ops(clouds) -> list:
    with clouds.world.tx() as world:
        return [op for op in world.operations(Provider.NEBIUS) if op.kind == OpKind.CREATE]


def test_wait_survives_transient_errors_and_succeeds(nebius_mock, client) -> None:
    op = client.begin_create_instance("vm-flaky", *CPU)
    _faults(nebius_mock, error_rate=0.5, seed=11)  # half of all polls fail UNAVAILABLE / RESOURCE_EXHAUSTED
    instance = op.result(timeout=WAIT)
    assert instance_state(instance) is InstanceState.RUNNING
    assert nebius_mock.world.faults[Provider.NEBIUS].counts["error"] > 0


def test_wait_survives_transient_errors_and_raises_the_failure(nebius_mock, client) -> None:
    _faults(nebius_mock, op_failure_rate=1.0, seed=5)
    op = client.begin_create_instance("vm-doomed", *CPU)
    _faults(nebius_mock, error_rate=0.5, seed=5)
    with pytest.raises(OperationFailed) as info:
        op.wait(timeout=WAIT)
    assert info.value.operation_id == op.id and info.value.code.name == "INTERNAL"
    assert info.value.provider_code == "InternalError"


def test_wait_under_faults_ends_in_capacity_error(start_mock, client_factory) -> None:
    def no_h100(state) -> None:  # offered in the region (capacity entry of 0), never available
        nebius = state.providers[Provider.NEBIUS]
        for entry in nebius.capacity:
            if entry.shape.startswith("gpu-h100-sxm/"):
                entry.quantity = 0
        nebius.reservations = [r for r in nebius.reservations if r.family != "gpu-h100-sxm"]

    clouds = start_mock(configure=no_h100)
    client = client_factory(clouds.endpoints["nebius"])
    op = client.begin_create_instance("vm-nocap", *H100)
    _faults(clouds, error_rate=0.4, seed=3)
    with pytest.raises(CapacityError):
        op.wait(timeout=WAIT)


def test_wait_deadline_raises_operation_timeout_and_leaves_the_operation_running(
    start_mock, client_factory
) -> None:
    clouds = start_mock(time_scale=1.0)  # a create takes 120 s
    client = client_factory(clouds.endpoints["nebius"])
    op = client.begin_create_instance("vm-slow", *CPU)
    with pytest.raises(OperationTimeout) as info:
        op.wait(timeout=0.05)
    assert info.value.operation_id == op.id and info.value.timeout == 0.05
    assert not op.done()  # giving up the wait did not cancel anything
    assert client.resume_operation(op.continuation_token()).status() == "running"


def test_wait_deadline_holds_while_every_poll_fails(start_mock, client_factory) -> None:
    clouds = start_mock(time_scale=1.0)
    client = client_factory(clouds.endpoints["nebius"])
    op = client.begin_create_instance("vm-unreachable", *CPU)
    _faults(clouds, error_rate=1.0, seed=1)
    with pytest.raises(OperationTimeout):
        op.wait(timeout=0.3)


def test_dropped_create_responses_are_retried_with_the_same_key(
    nebius_mock, client_factory, nebius_endpoint
) -> None:
    client = client_factory(nebius_endpoint, max_attempts=10)
    _faults(nebius_mock, drop_rate=0.5, seed=4)  # the create happens, the client sees UNAVAILABLE
    op = client.begin_create_instance("vm-dropped", *CPU)
    drops = nebius_mock.world.faults[Provider.NEBIUS].counts["drop"]
    _faults(nebius_mock)
    assert drops >= 1, "the seed should drop at least the first response"
    [created] = _create_ops(nebius_mock)  # one instance, one operation, however many attempts
    assert created.id == op.id
    assert [i.metadata.name for i in client.list_instances()] == ["vm-dropped"]


def test_errors_after_retries_are_typed(nebius_mock, client_factory, nebius_endpoint) -> None:
    client = client_factory(nebius_endpoint, max_attempts=2)
    _faults(nebius_mock, error_rate=1.0, seed=2)
    with pytest.raises((Unavailable, RateLimited)):
        list(client.list_instances())
    with pytest.raises((Unavailable, RateLimited)):
        client.begin_create_instance("vm-never", *CPU)
    _faults(nebius_mock)
    assert client.find_instance("vm-never") is None  # injected errors happen before any action


def test_latency_beyond_the_call_deadline_is_unavailable(
    nebius_mock, client_factory, nebius_endpoint
) -> None:
    client = client_factory(nebius_endpoint, timeout=0.05, max_attempts=2)
    _faults(nebius_mock, latency_ms=300)
    with pytest.raises(Unavailable) as info:
        client.get_instance("computeinstance-e00whatever00000")
    assert info.value.code.name == "DEADLINE_EXCEEDED"
