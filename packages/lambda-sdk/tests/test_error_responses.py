"""Every error class is produced by a real response of the Lambda mock (or a real connection failure)."""

from __future__ import annotations

import socket

import pytest
from lambda_sdk import (
    AuthError,
    CapacityError,
    InvalidParameters,
    LambdaClient,
    NotFound,
    QuotaError,
    RateLimited,
    RequestNotSent,
    RetryPolicy,
    ServerError,
)
from mock_clouds.core.models import Faults, Provider, Quota

NO_RETRY = RetryPolicy(max_attempts=1)


def test_auth_error(lambda_clouds, make_client) -> None:
    client = make_client(lambda_clouds, api_key="secret_wrong_key")
    with pytest.raises(AuthError) as info:
        list(client.list_instances())
    assert info.value.status == 401 and info.value.code == "global/invalid-api-key"
    assert "secret_wrong_key" not in str(info.value) and "secret_wrong_key" not in repr(info.value)


def test_env_var_supplies_the_key(lambda_clouds, monkeypatch) -> None:
    endpoint = lambda_clouds.endpoints["lambda"]
    monkeypatch.setenv("LAMBDA_API_KEY", endpoint["api_key"])
    with LambdaClient(base_url=endpoint["url"], rate_limit=None) as client:
        assert list(client.list_instances()) == []
    monkeypatch.delenv("LAMBDA_API_KEY")
    with pytest.raises(ValueError):
        LambdaClient(base_url=endpoint["url"])


def test_capacity_error(client: LambdaClient, launch) -> None:
    with pytest.raises(CapacityError) as info:
        launch(client, "nowhere", region_name="us-west-3")  # no gpu_1x_a10 capacity in us-west-3
    assert info.value.status == 400 and info.value.code == "instance-operations/launch/insufficient-capacity"
    assert info.value.suggestion
    assert list(client.list_instances()) == []  # nothing was launched


def test_quota_error(mock_clouds_factory, make_client, launch) -> None:
    def one_a10_gpu(state) -> None:
        quota = Quota(scope="acct-7f3e2d1c", family="a10", max_gpus=1)
        state.providers[Provider.LAMBDA.value].quotas.append(quota)

    client = make_client(mock_clouds_factory(providers=("lambda",), configure=one_a10_gpu))
    launch(client, "first")
    with pytest.raises(QuotaError) as info:
        launch(client, "second")
    assert info.value.code == "global/quota-exceeded"


def test_not_found_for_launch_with_unknown_key(client: LambdaClient, launch) -> None:
    with pytest.raises(NotFound) as info:
        launch(client, "x", ssh_key_names=["no-such-key"])
    assert info.value.suggestion


def test_invalid_parameters_for_two_ssh_keys(client: LambdaClient, launch) -> None:
    with pytest.raises(InvalidParameters):
        launch(client, "x", ssh_key_names=["default", "default"])


def test_rate_limited_without_client_limiter(mock_clouds_factory, make_client) -> None:
    # 1 request per 5 s after a burst of 5: the calls past the burst are refused (two of them, so a stall of
    # this machine long enough to refill one token does not matter)
    clouds = mock_clouds_factory(providers=("lambda",), time_scale=5.0)
    client = make_client(clouds, rate_limit=None, retry=NO_RETRY)
    with pytest.raises(RateLimited) as info:
        for _ in range(7):
            client.instance_types()
    assert info.value.status == 429 and info.value.retry_after and info.value.retry_after > 0


def test_server_error_from_injected_faults(lambda_clouds, make_client) -> None:
    lambda_clouds.world.configure_faults(Provider.LAMBDA, Faults(error_rate=1.0, seed=3))
    client = make_client(lambda_clouds, retry=NO_RETRY)
    seen: dict[type, set[int]] = {}
    for _ in range(30):
        with pytest.raises((ServerError, RateLimited)) as info:
            list(client.list_regions())
        seen.setdefault(type(info.value), set()).add(info.value.status)
    assert seen[ServerError] <= {500, 503} and seen[ServerError]
    assert seen.get(RateLimited, {429}) == {429}


def test_request_not_sent_when_nothing_listens(make_client) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = LambdaClient("secret_key_x", base_url=f"http://127.0.0.1:{port}/api/v1", rate_limit=None,
                          retry=RetryPolicy(max_attempts=2, initial=0.01))
    with pytest.raises(RequestNotSent) as info:
        client.launch_instance(region_name="us-east-1", instance_type_name="gpu_1x_a10", ssh_key_names=["k"])
    assert info.value.method == "POST" and "secret_key_x" not in str(info.value)
