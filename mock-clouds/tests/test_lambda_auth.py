"""Lambda Cloud mock: API-key authentication (Bearer, Basic key:, raw Basic) and the 401 envelope."""

from __future__ import annotations

import base64

import pytest
from mock_clouds.lambda_cloud.testing import NOT_FOUND, LambdaApi, error

INVALID_KEY = error(
    "global/invalid-api-key",
    "API key was invalid, expired, or deleted.",
    "Check your API key or create a new one, then try again.",
)


@pytest.fixture
def api(mock_clouds_factory) -> LambdaApi:
    return LambdaApi.start(mock_clouds_factory)


def basic(value: str) -> str:
    return "Basic " + base64.b64encode(value.encode()).decode()


def test_bearer_key_is_accepted(api: LambdaApi) -> None:
    response = api.get("/instances")
    assert response.status_code == 200
    assert response.json() == {"data": []}
    assert response.headers["Content-Type"] == "application/json"


@pytest.mark.parametrize("style", ["curl -u KEY:", "raw key"])
def test_basic_auth_is_accepted(api: LambdaApi, style: str) -> None:
    header = basic(f"{api.key}:") if style == "curl -u KEY:" else f"Basic {api.key}"
    response = api.get("/ssh-keys", auth=False, headers={"Authorization": header})
    assert response.status_code == 200
    assert [k["name"] for k in response.json()["data"]] == ["default"]


@pytest.mark.parametrize(
    "header",
    [
        None,
        "Bearer secret_mock_00000000000000000000000000000000.wrong",
        "Bearer ",
        "Token {key}",
        "Basic " + base64.b64encode(b"not-the-key:").decode(),
        "Basic !!!not base64!!!",
    ],
)
def test_missing_or_bad_key_gets_401(api: LambdaApi, header: str | None) -> None:
    headers = {} if header is None else {"Authorization": header.format(key=api.key)}
    response = api.get("/instances", auth=False, headers=headers)
    assert response.status_code == 401
    assert response.json() == INVALID_KEY
    assert api.key not in response.text


def test_authentication_comes_before_routing(api: LambdaApi) -> None:
    assert api.get("/no-such-thing", auth=False).json() == INVALID_KEY
    response = api.get("/no-such-thing")
    assert response.status_code == 404
    assert response.json() == NOT_FOUND


def test_each_key_authenticates_as_its_own_account(api: LambdaApi) -> None:
    other = api.as_account("acct-0a1b2c3d")
    assert other.key != api.key
    instance_id = api.launch()
    assert api.listed_ids() == [instance_id]
    assert other.listed_ids() == []
