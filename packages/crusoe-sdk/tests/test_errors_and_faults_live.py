"""Every error class from a real mock response; waits under injected faults end typed, never hang."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from crusoe_sdk import (
    AuthError,
    BadRequest,
    CapacityError,
    ConnectError,
    CrusoeClient,
    InstanceState,
    NoResponse,
    NotFound,
    OperationFailed,
    OperationState,
    OperationTimeout,
    OperationUnavailable,
    PermissionDenied,
    PollPolicy,
    QuotaError,
    RateLimited,
    RequestNotSent,
    RetryPolicy,
    ServerError,
)
from crusoe_testkit import FAST_POLL, OTHER_ORG_PROJECT, client_for, create, crusoe_config
from mock_clouds.core.models import Faults, Provider, Quota
from sdk_netkit import Forwarder

SRC = Path(__file__).resolve().parents[1] / "src"


def faults(clouds: Any, **settings: Any) -> None:
    clouds.world.configure_faults(Provider.CRUSOE, Faults(seed=7, **settings))


def fault_counts(clouds: Any) -> dict[str, int]:
    return clouds.world.faults[Provider.CRUSOE].counts


# ------------------------------------------------------------------------------------------ response errors
def test_bad_request(client: CrusoeClient) -> None:
    with pytest.raises(BadRequest) as info:
        create(client, "bad-1", type="no-such-type.1x")
    assert (info.value.status, info.value.code, info.value.method) == (400, "bad_request", "POST")
    assert "no-such-type" in info.value.message and info.value.url.endswith("/compute/vms/instances")


def test_auth_error_for_a_wrong_secret(clouds: Any) -> None:
    wrong = client_for(clouds, secret_key="c29tZS1vdGhlci1zZWNyZXQ")
    with pytest.raises(AuthError) as info:
        wrong.list_locations().to_list()
    assert type(info.value) is AuthError and info.value.status == 401 and info.value.code == "bad_credential"


def test_permission_denied_for_another_organisations_project(client: CrusoeClient) -> None:
    with pytest.raises(PermissionDenied) as info:
        client.list_instances(project_id=OTHER_ORG_PROJECT).to_list()
    assert info.value.status == 403 and info.value.code == "unauthorized"


def test_not_found(client: CrusoeClient) -> None:
    with pytest.raises(NotFound) as info:
        client.get_instance("00000000-0000-4000-8000-000000000000")
    assert info.value.status == 404 and info.value.code == "not_found"


def test_unknown_operation_is_a_clear_operation_unavailable(client: CrusoeClient) -> None:
    with pytest.raises(OperationUnavailable) as info:
        client.resume_operation("00000000-0000-4000-8000-00000000DEAD")
    assert info.value.status == 403 and "does not exist, has expired, or was not started" in str(info.value)
    assert isinstance(info.value, PermissionDenied)


def test_request_not_sent_is_retried_then_raised_even_for_a_create(clouds: Any, caplog: Any) -> None:
    """Once the endpoint has answered, a refused connection is transient: retried, even for a create (a
    never-answered endpoint fails at once instead: test_reach.py)."""
    mock = urlsplit(clouds.endpoints["crusoe"]["url"])
    with Forwarder((mock.hostname or "", mock.port or 80)) as front:
        url = f"{front.url}/v1alpha5"
        dead = client_for(clouds, base_url=url, retry=RetryPolicy(max_attempts=3, initial=0.01))
        assert dead.list_locations().to_list()  # the endpoint answered
    caplog.set_level(logging.DEBUG, logger="crusoe_sdk")
    with pytest.raises(RequestNotSent) as info:
        create(dead, "never-1")
    assert not isinstance(info.value, ConnectError)
    assert info.value.method == "POST" and info.value.url.startswith(url)
    assert caplog.text.count("after RequestNotSent") == 2  # nothing reached a server: safe to retry


def test_dropped_create_is_not_retried_and_find_reconciles(clouds: Any, client: CrusoeClient) -> None:
    faults(clouds, drop_rate=1.0)
    with pytest.raises(NoResponse):
        create(client, "dropped-1")
    assert fault_counts(clouds)["drop"] == 1  # one POST only: a create is never retried blindly
    faults(clouds)
    found = client.find_instance("dropped-1")
    assert found is not None  # the create happened although the client never heard back


def test_dropped_reads_are_retried(clouds: Any, client: CrusoeClient) -> None:
    faults(clouds, drop_rate=1.0)
    with pytest.raises(NoResponse):
        client.list_locations().to_list()
    assert fault_counts(clouds)["drop"] == client._transport.retry.max_attempts


def test_server_error_on_a_create_is_raised_at_once(clouds: Any, client: CrusoeClient) -> None:
    faults(clouds, error_rate=1.0)
    with pytest.raises(ServerError) as info:  # a 429 would be retried: it was not applied
        create(client, "err-1")
    assert info.value.status in (500, 503)
    assert fault_counts(clouds)["error"] == 1


def test_server_errors_on_reads_are_retried_until_success(clouds: Any, client: CrusoeClient) -> None:
    faults(clouds, error_rate=0.3)
    for _ in range(3):
        assert client.list_locations().to_list()
    assert fault_counts(clouds)["error"] > 0


def test_server_error_when_retries_run_out(clouds: Any) -> None:
    client = client_for(clouds, retry=RetryPolicy(max_attempts=2, initial=0.01, max_retry_after=0.0))
    faults(clouds, error_rate=1.0)
    with pytest.raises((ServerError, RateLimited)) as info:
        client.list_locations().to_list()
    assert info.value.status in (429, 500, 503)


# ---------------------------------------------------------------------------------------------- rate limits
def rate_limited(mock_clouds_factory: Any, interval: float = 250.0) -> Any:
    """A mock whose Crusoe key gets one request per `interval` scaled seconds (0.5 s at the test scale)."""

    def limit(state: Any) -> None:
        crusoe_config(state).rate_limit.request_interval = interval

    return mock_clouds_factory(providers=("crusoe",), configure=limit)


def test_rate_limited_reads_wait_for_retry_after_and_succeed(mock_clouds_factory: Any, caplog: Any) -> None:
    client = client_for(rate_limited(mock_clouds_factory))
    caplog.set_level(logging.DEBUG, logger="crusoe_sdk")
    for _ in range(3):
        assert client.list_locations().to_list()
    assert "after RateLimited" in caplog.text


def test_rate_limited_raised_with_retry_after(mock_clouds_factory: Any) -> None:
    client = client_for(rate_limited(mock_clouds_factory), retry=RetryPolicy(max_attempts=1))
    client.list_locations().to_list()
    with pytest.raises(RateLimited) as info:
        client.list_locations().to_list()
    assert info.value.status == 429 and info.value.code == "too_many_requests"
    assert info.value.retry_after is not None and info.value.retry_after >= 1.0


# ---------------------------------------------------------------------------------------------- operations
def test_wait_survives_transient_faults_and_succeeds(clouds: Any, client: CrusoeClient) -> None:
    op = create(client, "flaky-1")
    faults(clouds, error_rate=0.4, latency_ms=5)
    assert op.wait(timeout=120) is None and op.state is OperationState.SUCCEEDED
    assert fault_counts(clouds)["error"] > 0
    faults(clouds)
    assert op.result().state is InstanceState.RUNNING


def test_wait_under_faults_ends_in_operation_failed(clouds: Any, client: CrusoeClient) -> None:
    faults(clouds, op_failure_rate=1.0)
    op = create(client, "doomed-1")
    faults(clouds, error_rate=0.4)
    with pytest.raises(OperationFailed) as info:
        op.result(timeout=120)
    assert type(info.value) is OperationFailed
    assert info.value.operation_id == op.id and info.value.code == "internal_error"
    assert info.value.operation is not None and info.value.operation.state is OperationState.FAILED


def test_out_of_stock_is_a_capacity_error(mock_clouds_factory: Any) -> None:
    def no_l40s(state: Any) -> None:
        for row in crusoe_config(state).capacity:
            if row.shape == "l40s-48gb.1x":
                row.quantity = 0

    clouds = mock_clouds_factory(providers=("crusoe",), configure=no_l40s)
    client = client_for(clouds)
    op = create(client, "nostock-1")
    faults(clouds, error_rate=0.3)
    with pytest.raises(CapacityError) as info:
        op.result(timeout=120)
    assert info.value.code == "out_of_stock" and info.value.operation_id == op.id
    faults(clouds)
    assert client.find_instance("nostock-1") is None  # a failed create leaves nothing behind


def test_quota_is_a_quota_error(mock_clouds_factory: Any) -> None:
    def tiny_quota(state: Any) -> None:
        project = crusoe_config(state).projects[0].id
        crusoe_config(state).quotas = [Quota(scope=project, family="l40s", max_gpus=1)]

    client = client_for(mock_clouds_factory(providers=("crusoe",), configure=tiny_quota))
    with pytest.raises(QuotaError) as info:
        create(client, "quota-1", type="l40s-48gb.8x").result(timeout=120)
    assert info.value.code == "quota_exceeded"


def test_deadline_passes_under_faults_with_operation_timeout(mock_clouds_factory: Any) -> None:
    clouds = mock_clouds_factory(providers=("crusoe",), time_scale=1.0)  # a create takes 90 s
    client = client_for(clouds)
    op = create(client, "slow-1")
    faults(clouds, error_rate=0.3)
    with pytest.raises(OperationTimeout) as info:
        op.wait(timeout=0.3)
    assert info.value.operation_id == op.id and info.value.last_state == "IN_PROGRESS"
    faults(clouds)
    assert client.get_instance(op.resource_id).state is InstanceState.INITIALIZING  # not cancelled


def test_interrupted_wait_does_not_cancel_and_another_process_resumes(clouds: Any) -> None:
    def interrupt(_seconds: float) -> None:
        raise KeyboardInterrupt

    impatient = client_for(clouds, _sleep=interrupt)
    op = create(impatient, "resume-1")
    with pytest.raises(KeyboardInterrupt):
        op.wait()
    endpoint = clouds.endpoints["crusoe"]
    script = (
        "import sys; from crusoe_sdk import CrusoeClient, PollPolicy\n"
        "client = CrusoeClient(base_url=sys.argv[1], poll=PollPolicy(initial=0.05))\n"
        "print(client.resume_operation(sys.argv[2]).result(timeout=120).state.value)\n"
    )
    env = {
        **os.environ, "PYTHONPATH": str(SRC), "CRUSOE_ACCESS_KEY_ID": endpoint["access_key_id"],
        "CRUSOE_SECRET_KEY": endpoint["secret_key"], "CRUSOE_DEFAULT_PROJECT": endpoint["project_id"],
    }
    done = subprocess.run([sys.executable, "-c", script, endpoint["url"], op.continuation_token()], env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "STATE_RUNNING"


def test_resumed_operation_in_the_same_process(client: CrusoeClient) -> None:
    op = create(client, "resume-2")
    resumed = client.resume_operation(op.continuation_token())
    assert resumed.id == op.id and resumed.resource_id == op.resource_id
    vm = resumed.result(timeout=120)
    assert vm is not None and vm.id == op.resource_id
    delete = client.begin_delete_instance(vm.id)
    assert client.resume_operation(delete.continuation_token()).result(timeout=120) is None


def test_slow_polls_use_the_poll_policy(clouds: Any) -> None:
    """A wait with a long poll interval still honours a short deadline (sleeps are clipped)."""
    client = client_for(clouds, poll=PollPolicy(initial=60.0, maximum=60.0))
    op = create(client, "clip-1")
    with pytest.raises(OperationTimeout):
        op.wait(timeout=0.05)
    assert client_for(clouds, poll=FAST_POLL).resume_operation(op.id).result(timeout=120).name == "clip-1"  # a bare id
