"""Fault injection on the REST mocks over the wire: dropped responses, latency and failed operations.

A dropped response is the case that leaks VMs in real tools: the action happens, the client hears nothing.
(Injected 429/5xx bodies are checked per cloud in test_crusoe_service.py and test_lambda_ratelimit.py.)
"""

from __future__ import annotations

import time

import pytest
import requests
from mock_clouds.core.models import Faults, Provider, RateLimit, WorldState
from mock_clouds.crusoe.testing import CrusoeClient, create_body, instances_path, wait_operation
from mock_clouds.lambda_cloud.testing import LambdaApi, launch_body


def no_rate_limits(state: WorldState) -> None:
    for provider in state.providers.values():
        provider.rate_limit = RateLimit()


def crusoe_client(clouds) -> tuple[CrusoeClient, str]:
    ep = clouds.endpoints["crusoe"]
    return CrusoeClient(ep["url"].removesuffix("/v1alpha5"), ep["access_key_id"], ep["secret_key"]), ep["project_id"]


def names_in(clouds, provider: Provider) -> list[str]:
    with clouds.world.tx() as world:
        return [vm.name for vm in world.vms(provider)]


def test_lambda_dropped_launch_still_launches(mock_clouds_factory) -> None:
    clouds = mock_clouds_factory(providers=("lambda",), configure=no_rate_limits)
    clouds.world.configure_faults(Provider.LAMBDA, Faults(drop_rate=1.0, seed=1))
    api = LambdaApi(clouds)
    with pytest.raises(requests.ConnectionError):
        api.call("POST", "/instance-operations/launch", json=launch_body(name="dropped"), retry_429=False)
    assert names_in(clouds, Provider.LAMBDA) == ["dropped"]
    assert clouds.world.faults[Provider.LAMBDA].counts["drop"] == 1


def test_crusoe_dropped_create_still_creates(mock_clouds_factory) -> None:
    clouds = mock_clouds_factory(providers=("crusoe",), configure=no_rate_limits)
    client, project = crusoe_client(clouds)
    clouds.world.configure_faults(Provider.CRUSOE, Faults(drop_rate=1.0, seed=2))
    with pytest.raises(requests.ConnectionError):
        client.post(instances_path(project), create_body("dropped"))
    assert names_in(clouds, Provider.CRUSOE) == ["dropped"]


def test_latency_delays_every_answer_by_at_least_the_setting(mock_clouds_factory) -> None:
    clouds = mock_clouds_factory(providers=("lambda",), configure=no_rate_limits)
    clouds.world.configure_faults(Provider.LAMBDA, Faults(latency_ms=300, seed=3))
    api = LambdaApi(clouds)
    started = time.monotonic()
    assert api.get("/instance-types").status_code == 200
    assert time.monotonic() - started >= 0.3  # a lower bound only: a slow machine cannot break it
    assert clouds.world.faults[Provider.LAMBDA].counts["latency"] == 1


def test_crusoe_injected_operation_failure_is_a_failed_operation(mock_clouds_factory) -> None:
    clouds = mock_clouds_factory(providers=("crusoe",), configure=no_rate_limits)
    client, project = crusoe_client(clouds)
    clouds.world.configure_faults(Provider.CRUSOE, Faults(op_failure_rate=1.0, seed=4))
    response = client.post(instances_path(project), create_body("doomed"))
    assert response.status_code == 200
    op = wait_operation(client, project, response.json()["operation"]["operation_id"])
    assert op["state"] == "FAILED" and op["result"]["code"] == "internal_error"
    assert names_in(clouds, Provider.CRUSOE) == []  # a failed Crusoe create leaves no VM


def test_lambda_injected_operation_failure_leaves_an_unhealthy_instance(mock_clouds_factory) -> None:
    clouds = mock_clouds_factory(providers=("lambda",), configure=no_rate_limits)
    clouds.world.configure_faults(Provider.LAMBDA, Faults(op_failure_rate=1.0, seed=5))
    api = LambdaApi(clouds)
    instance_id = api.launch(name="sick")
    assert api.wait_status(instance_id, "unhealthy")["id"] == instance_id
    assert names_in(clouds, Provider.LAMBDA) == ["sick"]  # it still exists (and bills) until terminated
