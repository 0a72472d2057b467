"""Shared fixtures: LambdaClients wired to the in-process mock clouds (plugin `mock_clouds.testing`).

Test modules cannot import this file (--import-mode=importlib), so helpers are offered as fixtures.
The mocks run with a time scale (0.002 by default), which also scales Lambda's rate limits (1 request/s
becomes 2 ms, 1 launch per 12 s becomes 24 ms); `make_client` uses matching small limiter, retry and poll
intervals.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from lambda_sdk import LambdaClient, PollPolicy, RateLimit, RetryPolicy

sys.path.insert(0, str(Path(__file__).parents[2] / "cloud-sdk-core" / "tests"))  # sdk_netkit: local TLS, proxies

DEFAULT_TIME_SCALE = 0.002
SSH_KEY = "default"  # seeded in every mock account
REGION = "us-east-1"
SMALL_TYPE = "gpu_1x_a10"  # 8 on-demand in us-east-1


def scaled_limits(time_scale: float, margin: float = 1.5) -> RateLimit:
    """Lambda's documented limits (1/s, 1 launch/12 s) at the mock's time scale, with a safety margin."""
    return RateLimit(request_interval=1.0 * time_scale * margin, launch_interval=12.0 * time_scale * margin)


FAST_RETRY = RetryPolicy(max_attempts=8, initial=0.01, maximum=0.1)
FAST_POLL = PollPolicy(initial=0.01, maximum=0.05)


class StatusLog:
    """A requests response hook that records every status code the client saw (retries included)."""

    def __init__(self) -> None:
        self.statuses: list[int] = []

    def __call__(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        self.statuses.append(response.status_code)

    def count(self, status: int) -> int:
        return self.statuses.count(status)


def lambda_endpoint(clouds: Any) -> dict[str, str]:
    return clouds.endpoints["lambda"]


@pytest.fixture
def make_client() -> Iterator[Callable[..., LambdaClient]]:
    """`make_client(clouds, **overrides)`: a fast-policy client of that mock (closed after the test)."""
    made: list[LambdaClient] = []

    def factory(clouds: Any, *, time_scale: float = DEFAULT_TIME_SCALE, **kwargs: Any) -> LambdaClient:
        endpoint = lambda_endpoint(clouds)
        kwargs.setdefault("api_key", endpoint["api_key"])
        kwargs.setdefault("rate_limit", scaled_limits(time_scale))
        kwargs.setdefault("retry", FAST_RETRY)
        kwargs.setdefault("poll", FAST_POLL)
        kwargs.setdefault("base_url", endpoint["url"])
        client = LambdaClient(**kwargs)
        made.append(client)
        return client

    yield factory
    for client in made:
        client.close()


@pytest.fixture
def lambda_clouds(mock_clouds_factory: Callable[..., Any]) -> Any:
    """Mock clouds serving only Lambda, default scenario, time scale 0.002."""
    return mock_clouds_factory(providers=("lambda",))


@pytest.fixture
def client(lambda_clouds: Any, make_client: Callable[..., LambdaClient]) -> LambdaClient:
    return make_client(lambda_clouds)


@pytest.fixture
def launch() -> Callable[..., Any]:
    """`launch(client, name, **overrides)`: launch a gpu_1x_a10 in us-east-1 with the seeded key."""

    def launch_small(client: LambdaClient, name: str, **kwargs: Any) -> Any:
        kwargs.setdefault("region_name", REGION)
        kwargs.setdefault("instance_type_name", SMALL_TYPE)
        kwargs.setdefault("ssh_key_names", [SSH_KEY])
        return client.launch_instance(name=name, **kwargs)

    return launch_small


@pytest.fixture
def status_log() -> StatusLog:
    return StatusLog()
