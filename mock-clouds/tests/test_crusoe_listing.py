"""Listing Crusoe VMs: filters, stable sort orders, keyset paging with next/prev tokens."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mock_clouds.crusoe.testing import (
    L40S,
    L40S_8X,
    CrusoeEnv,
    act,
    env_for,
    instances_path,
    start_create,
    wait_operation,
)
from mock_clouds.runner import MockClouds
from mock_clouds.testing import TEST_TIME_SCALE

NAMES = ["delta", "alpha", "echo", "charlie", "bravo"]  # creation order


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[CrusoeEnv, list[dict[str, Any]]]]:
    """Five running VMs (the last one stopped, one of them bigger) in the default project; read-only tests."""
    with MockClouds(
        tmp_path_factory.mktemp("crusoe"), providers=("crusoe",), time_scale=TEST_TIME_SCALE
    ) as clouds:
        env = env_for(clouds)
        ops = [
            start_create(env.client, env.project, name, type_=L40S_8X if name == "echo" else L40S)
            for name in NAMES
        ]
        vms = [wait_operation(env.client, env.project, op["operation_id"])["result"] for op in ops]
        act(env.client, env.project, vms[-1]["id"], "STOP")
        yield env, vms


def names(response: Any) -> list[str]:
    assert response.status_code == 200, response.text
    return [vm["name"] for vm in response.json()["items"]]


def list_vms(env: CrusoeEnv, **params: str) -> Any:
    return env.client.get(instances_path(env.project), params=params)


def test_default_order_is_creation_order(fleet: tuple[CrusoeEnv, list[dict[str, Any]]]) -> None:
    env, _ = fleet
    assert names(list_vms(env)) == NAMES
    assert names(list_vms(env, sort="created_at")) == NAMES
    body = list_vms(env).json()
    assert (body["next_page_token"], body["prev_page_token"]) == ("", "")


def test_sort_by_name(fleet: tuple[CrusoeEnv, list[dict[str, Any]]]) -> None:
    env, _ = fleet
    assert names(list_vms(env, sort="name")) == sorted(NAMES)


def test_pages_forward_and_back_by_name(fleet: tuple[CrusoeEnv, list[dict[str, Any]]]) -> None:
    env, _ = fleet
    first = list_vms(env, sort="name", limit="2").json()
    assert [v["name"] for v in first["items"]] == ["alpha", "bravo"]
    assert first["prev_page_token"] == "" and first["next_page_token"]
    second = list_vms(env, sort="name", limit="2", next_token=first["next_page_token"]).json()
    assert [v["name"] for v in second["items"]] == ["charlie", "delta"]
    third = list_vms(env, sort="name", limit="2", next_token=second["next_page_token"]).json()
    assert [v["name"] for v in third["items"]] == ["echo"]
    assert third["next_page_token"] == ""
    back = list_vms(env, sort="name", limit="2", prev_token=third["prev_page_token"]).json()
    assert [v["name"] for v in back["items"]] == ["charlie", "delta"]
    assert back["prev_page_token"] == second["prev_page_token"]


def test_paging_by_creation_time_visits_every_vm_once(fleet: tuple[CrusoeEnv, list[dict[str, Any]]]) -> None:
    env, vms = fleet
    seen, token = [], ""
    while True:
        page = list_vms(env, sort="created_at", limit="2", **({"next_token": token} if token else {})).json()
        seen += [v["id"] for v in page["items"]]
        token = page["next_page_token"]
        if not token:
            break
    assert seen == [vm["id"] for vm in vms]


def test_a_token_is_bound_to_its_sort_order(fleet: tuple[CrusoeEnv, list[dict[str, Any]]]) -> None:
    env, _ = fleet
    token = list_vms(env, sort="name", limit="1").json()["next_page_token"]
    response = list_vms(env, sort="created_at", limit="1", next_token=token)
    assert response.status_code == 400
    assert response.json() == {
        "code": "bad_request",
        "message": "bad request, check request parameters: invalid next_token",
    }


def test_filters(fleet: tuple[CrusoeEnv, list[dict[str, Any]]]) -> None:
    env, vms = fleet
    assert names(list_vms(env, names="alpha,echo")) == ["alpha", "echo"]
    assert names(list_vms(env, ids=f"{vms[0]['id']},{vms[3]['id']}")) == ["delta", "charlie"]
    assert names(list_vms(env, types=L40S_8X)) == ["echo"]
    assert names(list_vms(env, states="STATE_SHUTOFF")) == ["bravo"]
    assert names(list_vms(env, states="STATE_RUNNING", sort="name")) == ["alpha", "charlie", "delta", "echo"]
    assert names(list_vms(env, locations="eu-iceland1")) == NAMES  # a region matches its zones
    assert names(list_vms(env, locations="us-east1-a")) == []
    assert names(list_vms(env, names="alpha,bravo,charlie", sort="name", limit="2")) == ["alpha", "bravo"]


def test_repeated_query_keys_are_merged(fleet: tuple[CrusoeEnv, list[dict[str, Any]]]) -> None:
    env, _ = fleet
    response = env.client.get(instances_path(env.project), params=[("names", "alpha"), ("names", "bravo")])
    assert names(response) == ["alpha", "bravo"]


def test_project_resources_count_instances(fleet: tuple[CrusoeEnv, list[dict[str, Any]]]) -> None:
    env, _ = fleet
    project = env.client.get(f"/organizations/projects/{env.project}").json()
    assert project["resources"]["instances"] == {"count": len(NAMES)}
    assert (project["id"], project["organization_id"], project["name"], project["relation"]) == (
        env.project,
        env.org_id,
        "default",
        "owner",
    )
    skipped = env.client.get(
        "/organizations/projects",
        params={"skip_loading_project_resources": "true", "project_name": "default"},
    ).json()
    assert skipped == {"items": [{**project, "resources": None}]}
