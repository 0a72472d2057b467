"""Crusoe catalog endpoints (types, locations, capacities), rate limits and injected faults."""

from __future__ import annotations

import pytest
from mock_clouds.core.models import Faults, WorldState
from mock_clouds.crusoe.testing import (
    H100,
    L40S,
    CrusoeEnv,
    create_body,
    create_vm,
    instances_path,
    start_env,
)

TYPE_FIELDS = {
    "product_name",
    "description",
    "cpu_cores",
    "cpu_type",
    "memory_gb",
    "memory_type",
    "disk_gb",
    "disk_type",
    "num_gpu",
    "gpu_type",
}


@pytest.fixture
def crusoe(mock_clouds_factory) -> CrusoeEnv:
    return start_env(mock_clouds_factory)


def test_vm_types_have_all_ten_fields(crusoe: CrusoeEnv) -> None:
    items = crusoe.client.get(f"/projects/{crusoe.project}/compute/vms/types").json()["items"]
    assert all(set(t) == TYPE_FIELDS for t in items)
    h100 = next(t for t in items if t["product_name"] == H100)
    assert (h100["num_gpu"], h100["gpu_type"], h100["cpu_cores"], h100["memory_type"], h100["disk_type"]) == (
        8,
        "H100-SXM-80GB",
        176,
        "RAM",
        "SSD",
    )


def test_capacities_follow_running_vms(crusoe: CrusoeEnv) -> None:
    def iceland() -> dict[str, int]:
        rows = crusoe.client.get("/capacities", params={"location": "eu-iceland1-a"}).json()["items"]
        assert all(set(r) == {"type", "location", "quantity", "num_slices", "quota_type"} for r in rows)
        return {r["type"]: r["quantity"] for r in rows}

    assert iceland() == {L40S: 10, "l40s-48gb.8x": 2}
    create_vm(crusoe.client, crusoe.project, "capacity")
    assert iceland() == {L40S: 9, "l40s-48gb.8x": 2}
    everywhere = crusoe.client.get("/capacities", params={"product_name": f"{H100},{L40S}"}).json()["items"]
    assert sorted((r["type"], r["location"]) for r in everywhere) == [
        (H100, "us-east1-a"),
        (H100, "us-southcentral1-a"),
        (L40S, "eu-iceland1-a"),
    ]


def test_capacities_and_locations_are_not_project_scoped(crusoe: CrusoeEnv) -> None:
    assert crusoe.other.get("/capacities").status_code == 200
    assert crusoe.other.get("/locations").json()["items"][0] == "us-east1-a"


def limited(state: WorldState) -> None:
    limits = state.providers["crusoe"].rate_limit
    limits.request_interval, limits.request_burst = 100_000.0, 3  # 200 s per token at the test time scale


def test_request_rate_limit_answers_429_with_retry_after(mock_clouds_factory) -> None:
    env = start_env(mock_clouds_factory, configure=limited)
    assert [env.client.get("/locations").status_code for _ in range(3)] == [200, 200, 200]
    throttled = env.client.get("/locations")
    assert throttled.status_code == 429
    assert throttled.json() == {
        "code": "too_many_requests",
        "message": "too many requests, please retry later",
    }
    assert int(throttled.headers["Retry-After"]) >= 1
    assert env.other.get("/locations").status_code == 200  # buckets are per organisation


def create_limited(state: WorldState) -> None:
    limits = state.providers["crusoe"].rate_limit
    limits.create_interval, limits.create_burst = 100_000.0, 1


def test_create_rate_limit_only_throttles_creates(mock_clouds_factory) -> None:
    env = start_env(mock_clouds_factory, configure=create_limited)
    assert env.client.post(instances_path(env.project), create_body("first")).status_code == 200
    second = env.client.post(instances_path(env.project), create_body("second"))
    assert second.status_code == 429 and second.json()["code"] == "too_many_requests"
    assert "Retry-After" in second.headers
    assert env.client.get(instances_path(env.project)).status_code == 200


def always_failing(state: WorldState) -> None:
    state.providers["crusoe"].faults = Faults(error_rate=1.0, seed=7)


def test_injected_faults_use_crusoe_error_bodies(mock_clouds_factory) -> None:
    env = start_env(mock_clouds_factory, configure=always_failing)
    statuses = set()
    for _ in range(60):  # seeded: the same sequence every run
        if statuses == {429, 500, 503}:
            break
        response = env.client.get("/locations")
        statuses.add(response.status_code)
        body = response.json()
        if response.status_code == 429:
            assert body["code"] == "too_many_requests" and response.headers["Retry-After"] == "1"
        else:
            assert response.status_code in (500, 503)
            assert set(body) == {"code", "message", "error_id"} and body["code"] == "internal_error"
    assert statuses == {429, 500, 503}
