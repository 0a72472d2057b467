"""Waits survive injected transient faults and end in a typed error (never a hang); creates are never retried
blindly; reads are."""

from __future__ import annotations

import time

import pytest
import requests
from lambda_sdk import (
    InstanceStatus,
    OperationFailed,
    OperationTimeout,
    RateLimited,
    ResponseNotReceived,
    RetryPolicy,
    ServerError,
)
from mock_clouds.core.models import Faults, Provider

NO_RETRY = RetryPolicy(max_attempts=1)


def _faults(clouds, **kwargs) -> None:
    kwargs.setdefault("seed", 11)
    clouds.world.configure_faults(Provider.LAMBDA, Faults(**kwargs))


def test_wait_survives_transient_errors_and_reaches_active(lambda_clouds, make_client, launch) -> None:
    client = make_client(lambda_clouds, retry=NO_RETRY)  # the operation itself must absorb the errors
    op = launch(client, "flaky")
    _faults(lambda_clouds, error_rate=0.5, latency_ms=2)
    instance = op.result(timeout=120)
    assert instance.status is InstanceStatus.ACTIVE and instance.ip
    assert lambda_clouds.world.faults[Provider.LAMBDA].counts["error"] > 0


def test_wait_ends_in_operation_failed_when_the_launch_fails(lambda_clouds, make_client, launch) -> None:
    client = make_client(lambda_clouds, retry=NO_RETRY)
    _faults(lambda_clouds, op_failure_rate=1.0)
    op = launch(client, "broken")
    _faults(lambda_clouds, op_failure_rate=1.0, error_rate=0.3)
    with pytest.raises(OperationFailed) as info:
        op.wait(timeout=120)
    assert info.value.status is InstanceStatus.UNHEALTHY and info.value.instance_id == op.instance_id
    assert info.value.instance is not None and info.value.instance.status is InstanceStatus.UNHEALTHY
    assert op.done() and op.status() == "failed"
    with pytest.raises(OperationFailed):
        op.result(timeout=120)


def test_wait_deadline_raises_timeout_and_does_not_cancel_the_launch(mock_clouds_factory, make_client,
                                                                     launch) -> None:
    clouds = mock_clouds_factory(providers=("lambda",), time_scale=0.05)  # a 180 s boot takes 9 s
    client = make_client(clouds, time_scale=0.05)
    op = launch(client, "slow")
    started = time.monotonic()
    with pytest.raises(OperationTimeout) as info:
        op.wait(timeout=0.05)
    assert time.monotonic() - started < 30  # a deadline, not a hang (generous bound)
    assert info.value.instance_id == op.instance_id and info.value.last_status is InstanceStatus.BOOTING
    # the instance keeps booting: a later wait (here from a fresh operation object) sees it active
    assert client.resume_operation(op.continuation_token()).result(timeout=120).status is InstanceStatus.ACTIVE


def test_a_lost_launch_answer_is_not_retried_and_find_instance_reconciles(lambda_clouds, make_client,
                                                                          launch) -> None:
    client = make_client(lambda_clouds)
    _faults(lambda_clouds, drop_rate=1.0)
    with pytest.raises(ResponseNotReceived):
        launch(client, "maybe-launched")
    _faults(lambda_clouds)
    found = client.find_instance("maybe-launched")
    assert found is not None  # the launch happened although the client saw no answer
    assert [i.name for i in client.list_instances()] == ["maybe-launched"]  # exactly one: no blind retry


def test_launch_is_not_retried_after_a_server_error_but_is_after_a_429(lambda_clouds, make_client) -> None:
    session = requests.Session()
    posts: list[int] = []
    session.hooks["response"].append(
        lambda r, *a, **k: posts.append(r.status_code) if r.request.method == "POST" else None
    )
    retry = RetryPolicy(max_attempts=3, initial=0.005)
    client = make_client(lambda_clouds, session=session, retry=retry)
    _faults(lambda_clouds, error_rate=1.0, seed=0)  # every answer is an injected 500, 503 or 429
    calls: list[list[int]] = []
    for n in range(12):
        before = len(posts)
        with pytest.raises((ServerError, RateLimited)) as info:
            client.launch_instance(region_name="us-east-1", instance_type_name="gpu_1x_a10",
                                   ssh_key_names=["default"], name=f"x{n}")
        calls.append(posts[before:])
        assert posts[-1] == info.value.status
    # within one call only 429s (nothing launched) are followed by another POST; a 5xx ends the call
    assert all(all(status == 429 for status in sent[:-1]) for sent in calls)
    assert any(sent[-1] >= 500 for sent in calls) and any(len(sent) > 1 for sent in calls)
    session.close()


def test_reads_are_retried_through_drops_and_errors(lambda_clouds, make_client, launch) -> None:
    client = make_client(lambda_clouds, retry=RetryPolicy(max_attempts=20, initial=0.005,
                                                          maximum=0.02))
    launch(client, "visible")
    _faults(lambda_clouds, drop_rate=0.3, error_rate=0.3)
    for _ in range(5):
        assert [i.name for i in client.list_instances()] == ["visible"]
    counts = lambda_clouds.world.faults[Provider.LAMBDA].counts
    assert counts["drop"] + counts["error"] > 0
