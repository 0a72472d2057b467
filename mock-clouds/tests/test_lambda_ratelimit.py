"""Lambda Cloud mock: the documented rate limits (1 request/s, 1 launch per 12 s) answered with 429, and
injected faults in Lambda's error shapes."""

from __future__ import annotations

from collections.abc import Callable

from mock_clouds.core.models import Provider, RateLimit, WorldState
from mock_clouds.lambda_cloud.testing import LambdaApi, launch_body


def rate_limit(request_interval: float, create_interval: float) -> Callable[[WorldState], None]:
    def configure(state: WorldState) -> None:
        state.providers["lambda"].rate_limit = RateLimit(
            request_interval=request_interval, create_interval=create_interval
        )

    return configure


def assert_rate_limited(response, max_wait: float) -> None:
    assert response.status_code == 429
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == "global/rate-limited"
    assert body["error"]["message"] == "Too many requests; the API rate limit was exceeded."
    assert body["error"]["suggestion"].startswith("Wait ")
    assert 1 <= int(response.headers["Retry-After"]) <= max_wait
    assert 0 < int(response.headers["retry-after-ms"]) <= max_wait * 1000


def test_launches_are_limited_separately(mock_clouds_factory) -> None:
    # time scale 1: launches are limited to one per 12 s; the general bucket is disabled
    api = LambdaApi.start(mock_clouds_factory, time_scale=1.0, configure=rate_limit(0.0, 12.0))
    api.launch()
    second = api.post("/instance-operations/launch", launch_body(), retry_429=False)
    assert_rate_limited(second, max_wait=12)
    assert len(api.listed_ids()) == 1
    other = api.as_account("acct-0a1b2c3d")
    other.launch()  # buckets are per account


def test_general_requests_are_limited(mock_clouds_factory) -> None:
    api = LambdaApi.start(mock_clouds_factory, time_scale=30.0, configure=rate_limit(1.0, 0.0))
    assert api.get("/instances", retry_429=False).status_code == 200
    assert_rate_limited(api.get("/regions", retry_429=False), max_wait=30)
    assert_rate_limited(api.get("/no-such-path", retry_429=False), max_wait=30)
    unauthenticated = api.get("/instances", auth=False, retry_429=False)
    assert unauthenticated.status_code == 401


def test_injected_faults_use_lambda_error_shapes(mock_clouds_factory) -> None:
    def always_fail(state: WorldState) -> None:
        state.providers["lambda"].faults.error_rate = 1.0

    api = LambdaApi.start(mock_clouds_factory, configure=always_fail)
    expected = {
        500: {
            "code": "global/internal-error",
            "message": "An internal server error occurred.",
            "suggestion": "Try again later. Contact Support if the problem persists.",
        },
        503: {
            "code": "provider/internal-unavailable",
            "message": "Provider unavailable",
            "suggestion": "Try again shortly",
        },
    }
    seen = set()
    for _ in range(30):
        response = api.get("/instances", retry_429=False)
        seen.add(response.status_code)
        if response.status_code == 429:
            assert response.json()["error"]["code"] == "global/rate-limited"
            assert int(response.headers["Retry-After"]) >= 1
        else:
            assert response.json() == {"error": expected[response.status_code]}
    assert seen == {429, 500, 503}


def test_the_default_scenario_lets_a_small_burst_through_back_to_back(mock_clouds_factory) -> None:
    """Lambda "generally" allows one request per second (spec 1.10 info, research lambda.md section 7), an
    average: gpuhunt reads GET /images then GET /instance-types (gpuhunt providers/lambdalabs.py:37-39) and
    dstack's create sends GET /ssh-keys, POST /ssh-keys and the launch (backends/lambdalabs/compute.py:65-69)
    back to back with no 429 handling, against the live API (research real-clouds.md Part 2, D2). The default
    scenario's burst (5, an inference) lets five calls through at once; the sixth waits for the refill. At time
    scale 30 a token takes 30 s, far longer than these calls take on any machine."""
    api = LambdaApi.start(mock_clouds_factory, time_scale=30.0)
    assert api.clouds.world.config(Provider.LAMBDA).rate_limit.request_burst == 5
    paths = ["/images", "/instance-types", "/ssh-keys", "/regions", "/instances"]
    assert [api.get(path, retry_429=False).status_code for path in paths] == [200] * 5
    assert_rate_limited(api.get("/instances", retry_429=False), max_wait=30)
