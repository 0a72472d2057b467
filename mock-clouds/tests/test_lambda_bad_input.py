"""Lambda Cloud mock: bad input never crashes the server or yields a 5xx; every refusal has Lambda's shape."""

from __future__ import annotations

import http.client
import urllib.parse

import pytest
from mock_clouds.lambda_cloud.testing import NOT_FOUND, LambdaApi, invalid_parameters

UUID_PREFIX = "Error in request path at 'id': Input should be a valid UUID, "


@pytest.fixture
def api(mock_clouds_factory) -> LambdaApi:
    return LambdaApi.start(mock_clouds_factory)


@pytest.mark.parametrize(
    ("raw_id", "problem"),
    [
        ("ab", "invalid length: expected length 32 for simple format, found 2"),
        ("0" * 33, "invalid length: expected length 32 for simple format, found 33"),
        (
            "xyz",
            "invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], "
            "found `x` at 1",
        ),
        ("0920582c-7ff0-4139-9e34", "invalid group count: expected 5, found 4"),
        ("0920582c-7ff0-4139-9e34-823a0be6254", "invalid group length in group 4: expected 12, found 11"),
    ],
)
def test_malformed_path_ids(api: LambdaApi, raw_id: str, problem: str) -> None:
    expected = (400, invalid_parameters(UUID_PREFIX + problem))
    for response in (
        api.get(f"/instances/{raw_id}"),
        api.post(f"/instances/{raw_id}", {"name": "x"}),
        api.delete(f"/ssh-keys/{raw_id}"),
        api.delete(f"/filesystems/{raw_id}"),
    ):
        assert (response.status_code, response.json()) == expected


def test_hyphenated_and_uppercase_ids_name_the_same_instance(api: LambdaApi) -> None:
    instance_id = api.launch()
    dashed = (
        f"{instance_id[:8]}-{instance_id[8:12]}-{instance_id[12:16]}-{instance_id[16:20]}-{instance_id[20:]}"
    )
    assert api.instance(dashed.upper())["id"] == instance_id


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"{not json", "Error in request body: JSON is malformed: object keys must be strings (byte 1)"),
        (b"", "Error in request body: request body is empty"),
        (b"[]", "Error in request body: Expected `object`, got `array`"),
        (
            b'{"instance_ids": "abc"}',
            "Error in request body: Expected `array`, got `str` - at `$.instance_ids`",
        ),
        (
            b'{"instance_ids": [1]}',
            "Error in request body: Expected `str`, got `int` - at `$.instance_ids[0]`",
        ),
    ],
)
def test_malformed_bodies(api: LambdaApi, payload: bytes, message: str) -> None:
    response = api.post(
        "/instance-operations/terminate", data=payload, headers={"Content-Type": "application/json"}
    )
    assert (response.status_code, response.json()) == (400, invalid_parameters(message))


def raw_request(api: LambdaApi, method: str, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    """Send headers only (no body), as a client announcing a body the server refuses to read."""
    url = urllib.parse.urlsplit(api.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        connection.putrequest(method, url.path + path)
        for name, value in (headers | {"Authorization": f"Bearer {api.key}"}).items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_huge_and_unframed_bodies(api: LambdaApi) -> None:
    status, body = raw_request(api, "POST", "/instance-operations/launch", {"Content-Length": str(2 << 20)})
    assert status == 413
    assert body == (
        b'{"error":{"code":"global/invalid-parameters","message":"Invalid request: request body larger '
        b'than 1048576 bytes.","suggestion":"Retry the request after fixing the request parameters."}}'
    )
    status, body = raw_request(api, "POST", "/ssh-keys", {"Content-Length": "-5"})
    assert status == 400
    assert b'"code":"global/invalid-parameters"' in body
    assert api.get("/instances").status_code == 200  # the server still serves


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/instance-operations/stop"),
        ("POST", "/instance-operations/start"),
        ("POST", "/instance-operations/suspend"),
        ("DELETE", "/instances/0920582c7ff041399e34823a0be62549"),
        ("PUT", "/instances"),
        ("GET", "/instances/0920582c7ff041399e34823a0be62549/extra"),
        ("GET", "/../instances"),
    ],
)
def test_unknown_paths_and_methods(api: LambdaApi, method: str, path: str) -> None:
    response = api.call(method, path, json={})
    assert (response.status_code, response.json()) == (404, NOT_FOUND)


def test_paths_outside_the_api_prefix(api: LambdaApi) -> None:
    response = api.session.get(
        api.url.removesuffix("/api/v1") + "/instances",
        headers={"Authorization": f"Bearer {api.key}"},
        timeout=30,
    )
    assert (response.status_code, response.json()) == (404, NOT_FOUND)
