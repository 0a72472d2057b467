"""Nebius mock: injected errors, dropped responses, latency, rate limits and concurrency."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from mock_clouds.core.models import Faults, Provider, RateLimit
from mock_clouds.nebius import render, testkit
from mock_clouds.nebius._pb.nebius.common import v1 as common
from mock_clouds.nebius._pb.nebius.compute import v1 as compute

CPU_STOPPED = testkit.instance_spec("cpu-d3", "4vcpu-16gb", stopped=True)


@pytest.fixture
def start_nebius(mock_clouds_factory):
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


def _list(nebius) -> compute.ListInstancesResponse:
    return nebius.client.instances.list(compute.ListInstancesRequest(parent_id=nebius.project))


def _failed_list(nebius) -> testkit.Failure:
    request = compute.ListInstancesRequest(parent_id=nebius.project)
    return testkit.failure(nebius.client.instances.list, request)


def test_injected_errors_are_unavailable_or_too_many_requests(nebius):
    nebius.world.configure_faults(Provider.NEBIUS, Faults(error_rate=1.0, seed=7))
    seen = set()
    for _ in range(20):
        failed = testkit.failure(
            nebius.client.instances.list, compute.ListInstancesRequest(parent_id=nebius.project)
        )
        seen.add(failed.code)
        if failed.code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            assert failed.error.code == "TooManyRequests"
            assert failed.error.retry_type == common.ServiceErrorRetryType.CALL
        else:
            assert failed.code == grpc.StatusCode.UNAVAILABLE and failed.status is None
    assert seen == {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED}
    assert nebius.world.faults[Provider.NEBIUS].counts["error"] == 20


def test_dropped_response_still_performs_the_action(nebius):
    nebius.world.configure_faults(Provider.NEBIUS, Faults(drop_rate=1.0))
    failed = testkit.failure(
        nebius.client.instances.create, testkit.create_request(nebius.project, "ghost", CPU_STOPPED)
    )
    assert failed.code == grpc.StatusCode.UNAVAILABLE
    nebius.world.configure_faults(Provider.NEBIUS, Faults())
    assert [i.metadata.name for i in _list(nebius).items] == ["ghost"]


def test_retry_with_idempotency_key_after_a_dropped_response(nebius):
    keyed = nebius.client.with_metadata(("x-idempotency-key", "retry-me"))
    request = testkit.create_request(nebius.project, "retried", CPU_STOPPED)
    nebius.world.configure_faults(Provider.NEBIUS, Faults(drop_rate=1.0))
    assert testkit.failure(keyed.instances.create, request).code == grpc.StatusCode.UNAVAILABLE
    nebius.world.configure_faults(Provider.NEBIUS, Faults())
    op = keyed.instances.create(request)
    assert [i.metadata.id for i in _list(nebius).items] == [op.resource_id]


def test_latency_is_applied(nebius):
    nebius.world.configure_faults(Provider.NEBIUS, Faults(latency_ms=5))
    assert _list(nebius).items == []
    assert nebius.world.faults[Provider.NEBIUS].counts["latency"] == 1


def test_request_rate_limit_answers_too_many_requests(start_nebius):
    def limited(state):
        state.providers["nebius"].rate_limit = RateLimit(request_interval=100_000.0, request_burst=2)

    nebius = start_nebius(limited)
    _list(nebius)
    _list(nebius)
    failed = testkit.failure(
        nebius.client.instances.list, compute.ListInstancesRequest(parent_id=nebius.project)
    )
    assert failed.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert failed.error.code == "TooManyRequests" and "request" in failed.error.too_many_requests.violation
    other = nebius.connect(nebius.token_of("tenant-e00zz9yy8xx7ww6vv5"))
    other.instances.list(compute.ListInstancesRequest(parent_id="project-e00othertenant0001"))  # own bucket


def test_create_rate_limit_only_limits_creates(start_nebius):
    def limited(state):
        state.providers["nebius"].rate_limit = RateLimit(create_interval=100_000.0, create_burst=1)

    nebius = start_nebius(limited)
    nebius.create("first", CPU_STOPPED)
    failed = testkit.failure(
        nebius.client.instances.create, testkit.create_request(nebius.project, "second", CPU_STOPPED)
    )
    assert failed.code == grpc.StatusCode.RESOURCE_EXHAUSTED and failed.error.code == "TooManyRequests"
    assert [i.metadata.name for i in _list(nebius).items] == ["first"]


def test_two_hundred_concurrent_calls_all_succeed(nebius):
    def call(i: int) -> object:
        if i % 10 == 0:
            return nebius.create(f"par-{i}", CPU_STOPPED).resource_id
        return _list(nebius).next_page_token

    with ThreadPoolExecutor(max_workers=200) as pool:
        results = list(pool.map(call, range(200)))
    assert len(results) == 200
    assert len(_list(nebius).items) == 20


def test_a_front_end_bug_answers_internal_never_unknown(nebius, monkeypatch):
    op = nebius.client.wait(nebius.create("buggy", CPU_STOPPED))

    def broken(*args, **kwargs):
        raise RuntimeError("simulated front-end bug")

    monkeypatch.setattr(render, "instance", broken)
    failed = testkit.failure(nebius.client.instances.get, compute.GetInstanceRequest(id=op.resource_id))
    assert failed.code == grpc.StatusCode.INTERNAL
    assert failed.error.code == "InternalError" and len(failed.error.internal_error.request_id) == 36
    assert "simulated" not in failed.message
