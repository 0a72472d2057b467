"""Every error class of the SDK, produced by a real response of the Nebius mock (or its absence)."""

from __future__ import annotations

import pytest
from mock_clouds.core.models import Capacity, Provider, Quota, RateLimit
from nebius_sdk import (
    AlreadyExists,
    AuthError,
    CapacityError,
    Code,
    Conflict,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    QuotaError,
    RateLimited,
    RequestNotSent,
)
from nebius_sdk.models import InstanceState, ReservationPolicyPolicy, instance_state

H100 = ("gpu-h100-sxm", "1gpu-16vcpu-200gb")
CPU = ("cpu-d3", "4vcpu-16gb")
H100_BLOCK = "capacityblockgroup-e00h100block000001"
OTHER_TENANT_PROJECT = "project-e00othertenant0001"
WAIT = 60.0


def test_wrong_token_is_auth_error(nebius_endpoint, client_factory) -> None:
    client = client_factory({**nebius_endpoint, "token": "not-the-token"})
    with pytest.raises(AuthError) as info:
        list(client.list_instances())
    error = info.value
    assert type(error) is AuthError and error.code is Code.UNAUTHENTICATED
    assert error.request_id and error.method == "/nebius.compute.v1.InstanceService/List"
    assert error.target == nebius_endpoint["target"]
    assert "not-the-token" not in str(error)


def test_other_tenants_project_is_permission_denied(client) -> None:
    with pytest.raises(PermissionDenied) as info:
        list(client.list_instances(OTHER_TENANT_PROJECT))
    assert info.value.provider_code == "PermissionDenied"
    assert isinstance(info.value, AuthError)


def test_unknown_instance_is_not_found(client) -> None:
    with pytest.raises(NotFound) as info:
        client.get_instance("computeinstance-e00doesnotexist0")
    assert info.value.provider_code == "ResourceNotFound"
    assert info.value.service_error.resource_not_found.resource_id == "computeinstance-e00doesnotexist0"


def test_duplicate_name_is_already_exists(client) -> None:
    client.begin_create_instance("vm-dup", *CPU, stopped=True)
    with pytest.raises(AlreadyExists) as info:
        client.begin_create_instance("vm-dup", *CPU, stopped=True)
    assert isinstance(info.value, Conflict) and info.value.code is Code.ALREADY_EXISTS
    assert len(list(client.list_instances())) == 1


def test_forbid_with_reservation_ids_is_invalid_argument(client) -> None:
    with pytest.raises(InvalidArgument) as info:
        client.begin_create_instance(
            "vm-bad", *H100, reservation=ReservationPolicyPolicy.FORBID, reservation_ids=[H100_BLOCK]
        )
    assert [v.field for v in info.value.violations] == ["spec.reservation_policy.reservation_ids"]
    assert list(client.list_instances()) == []


def test_missing_subnet_is_invalid_argument(client) -> None:
    with pytest.raises(InvalidArgument) as info:
        client.begin_create_instance_from_spec("vm-nosubnet", _spec_without_subnet())
    assert "spec.network_interfaces[0].subnet_id" in [v.field for v in info.value.violations]


def _spec_without_subnet():
    from nebius_sdk import build_instance_spec

    return build_instance_spec(*CPU)


def test_start_of_a_running_instance_is_conflict(client) -> None:
    instance = client.begin_create_instance("vm-run", *CPU).result(timeout=WAIT)
    with pytest.raises(Conflict) as info:
        client.begin_start_instance(instance.metadata.id)
    assert info.value.code is Code.FAILED_PRECONDITION and info.value.provider_code == "BadResourceState"


def test_second_operation_while_one_runs_is_conflict(start_mock, client_factory) -> None:
    clouds = start_mock(time_scale=1.0)  # a create takes 120 s: it is surely still running
    client = client_factory(clouds.endpoints["nebius"])
    op = client.begin_create_instance("vm-busy", *CPU)
    with pytest.raises(Conflict) as info:
        client.begin_stop_instance(op.resource_id)
    assert info.value.provider_code == "OperationConflict"
    assert info.value.service_error.operation_conflict.conflicting_operation_id == op.id


def test_delete_aborts_a_running_create_which_then_raises_conflict(start_mock, client_factory) -> None:
    clouds = start_mock(time_scale=0.01)  # create 1.2 s, delete 0.3 s
    client = client_factory(clouds.endpoints["nebius"])
    create = client.begin_create_instance("vm-aborted", *CPU)
    delete = client.begin_delete_instance(create.resource_id)
    with pytest.raises(Conflict) as info:
        create.wait(timeout=WAIT)
    assert info.value.code is Code.ABORTED and info.value.operation_id == create.id
    assert info.value.service_error.operation_aborted.aborted_by_operation_id == delete.id
    assert delete.result(timeout=WAIT) is None


def _no_h100(state) -> None:
    nebius = state.providers[Provider.NEBIUS]
    nebius.capacity = [c for c in nebius.capacity if c.shape != "gpu-h100-sxm/1gpu-16vcpu-200gb"]
    nebius.capacity.append(Capacity(region="eu-north1", shape="gpu-h100-sxm/1gpu-16vcpu-200gb", quantity=0))
    nebius.reservations = [r for r in nebius.reservations if r.family != "gpu-h100-sxm"]


def test_capacity_shortage_fails_the_operation_with_capacity_error(start_mock, client_factory) -> None:
    client = client_factory(start_mock(configure=_no_h100).endpoints["nebius"])
    op = client.begin_create_instance("vm-nocap", *H100)  # accepted: the shortage surfaces later
    with pytest.raises(CapacityError) as info:
        op.result(timeout=WAIT)
    error = info.value
    assert error.code is Code.RESOURCE_EXHAUSTED and error.operation_id == op.id
    assert error.violations[0].requested == "1gpu-16vcpu-200gb"
    left = client.get_instance(op.resource_id)  # the real service leaves it STOPPED: the caller deletes it
    assert instance_state(left) is InstanceState.STOPPED
    client.delete_instance(op.resource_id, wait_timeout=WAIT)


def test_a_doomed_create_shows_stopped_and_reconciling_until_it_fails(start_mock, client_factory) -> None:
    """STARTING means Nebius obtained capacity, so a create that will fail for capacity reads STOPPED with
    reconciling=true until its operation fails with CapacityError (SkyPilot `sky/provision/nebius/utils.py:722-728`,
    dstack `backends/nebius/compute.py:424-441`, real-clouds.md Part 2 D1)."""
    from mock_clouds.nebius.testkit import FrozenClock

    clouds = start_mock(configure=_no_h100)
    client = client_factory(clouds.endpoints["nebius"])
    clock = FrozenClock(clouds.world)
    op = client.begin_create_instance("vm-doomed", *H100)
    duration = clouds.world.scaled(clouds.world.config(Provider.NEBIUS).durations.create)
    for _ in range(3):
        clock.advance(duration / 4)
        status = client.get_instance(op.resource_id).status
        assert (status.state, status.reconciling) == (InstanceState.STOPPED, True)
    clock.advance(duration / 2)
    with pytest.raises(CapacityError):
        op.result(timeout=WAIT)
    status = client.get_instance(op.resource_id).status
    assert (status.state, status.reconciling) == (InstanceState.STOPPED, False)


def test_a_preemptible_spec_without_pricing_model_is_invalid_argument(client) -> None:
    """The live answer `INVALID_ARGUMENT: spec.pricing_model - pricing model must be specified for a preemptible
    instance` (real-clouds.md §2, the spot row); the SDK's default preemptible spec carries `follows_spot_price`
    and is accepted."""
    from nebius_sdk import build_instance_spec

    spec = build_instance_spec(*H100, subnet_id=client.subnet_id, preemptible=True)
    spec.follows_spot_price = None
    with pytest.raises(InvalidArgument) as info:
        client.begin_create_instance_from_spec("vm-no-pricing", spec)
    [violation] = info.value.violations
    assert violation.field == "spec.pricing_model"
    assert violation.message == "pricing model must be specified for a preemptible instance"
    assert "spec.pricing_model - pricing model must be specified" in info.value.message
    spot = client.begin_create_instance("vm-spot-default", *H100, preemptible=True).result(timeout=WAIT)
    assert spot.spec.follows_spot_price is not None and spot.spec.preemptible is not None


def test_strict_without_a_usable_block_is_capacity_error(client) -> None:
    op = client.begin_create_instance(
        "vm-strict", *CPU, reservation=ReservationPolicyPolicy.STRICT, reservation_ids=[H100_BLOCK]
    )
    with pytest.raises(CapacityError):
        op.wait(timeout=WAIT)
    assert op.done() and op.status() == "failed"
    assert op.rpc_status is not None and op.rpc_status.code == 8  # RESOURCE_EXHAUSTED


def test_exhausted_quota_is_quota_error(start_mock, client_factory) -> None:
    def no_quota(state) -> None:
        project = state.providers[Provider.NEBIUS].projects[0].id
        state.providers[Provider.NEBIUS].quotas = [Quota(scope=project, family="gpu-h100-sxm", max_gpus=0)]

    client = client_factory(start_mock(configure=no_quota).endpoints["nebius"])
    with pytest.raises(QuotaError) as info:
        client.begin_create_instance("vm-quota", *H100).wait(timeout=WAIT)
    violation = info.value.violations[0]
    assert violation.quota == "compute.instance.gpu.h100" and violation.limit == "0"


def _tight_rate_limit(state) -> None:
    state.providers[Provider.NEBIUS].rate_limit = RateLimit(request_interval=100_000.0, request_burst=1)


def test_rate_limit_is_rate_limited_after_retries(start_mock, client_factory) -> None:
    client = client_factory(start_mock(configure=_tight_rate_limit).endpoints["nebius"], max_attempts=3)
    list(client.list_instances())
    with pytest.raises(RateLimited) as info:
        list(client.list_instances())
    assert info.value.provider_code == "TooManyRequests" and info.value.retry_after is None


def test_rate_limited_reads_are_retried_until_the_bucket_refills(start_mock, client_factory) -> None:
    def limited(state) -> None:
        state.providers[Provider.NEBIUS].rate_limit = RateLimit(request_interval=10.0, request_burst=1)

    clouds = start_mock(configure=limited)  # 10 s * 0.002 = one request per 20 ms
    client = client_factory(clouds.endpoints["nebius"], max_attempts=20)
    for _ in range(5):
        assert list(client.list_instances()) == []


def test_stopped_server_is_request_not_sent(start_mock, client_factory) -> None:
    clouds = start_mock()
    client = client_factory(clouds.endpoints["nebius"], max_attempts=2)
    clouds.stop()
    with pytest.raises(RequestNotSent) as info:
        client.get_instance("computeinstance-e00whatever00000")
    assert info.value.target == clouds.endpoints["nebius"]["target"]
