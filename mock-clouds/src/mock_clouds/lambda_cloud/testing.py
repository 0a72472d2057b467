"""Test support for the Lambda Cloud mock: a small wire-level client (over `requests`) and request builders.

Like `mock_clouds.testing`, this module is for test suites only (it needs `requests`, a test dependency).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import requests

from ..runner import MockClouds

HEX32 = re.compile(r"^[0-9a-f]{32}$")
DEADLINE = 20.0  # seconds; generous because the test machine is slow and noisy
MAIN_ACCOUNT = "acct-7f3e2d1c"
OTHER_ACCOUNT = "acct-0a1b2c3d"
RESERVATION_ID = "9b2e4c6a8d0f41e3a5c7e9b1d3f5a7c9"
INVALID_PARAMETERS_SUGGESTION = "Retry the request after fixing the request parameters."


class LambdaApi:
    """Talks to the mock over HTTP as one account; retries 429s using the mock's `retry-after-ms` header."""

    def __init__(self, clouds: MockClouds, account: str = MAIN_ACCOUNT) -> None:
        self.clouds = clouds
        self.url = clouds.endpoints["lambda"]["url"]
        self.account = account
        self.key = next(c.secret for c in clouds.world.state.credentials["lambda"] if c.owner == account)
        self.session = requests.Session()

    @classmethod
    def start(cls, factory: Callable[..., MockClouds], **kwargs: Any) -> LambdaApi:
        return cls(factory(providers=("lambda",), **kwargs))

    def as_account(self, account: str) -> LambdaApi:
        return LambdaApi(self.clouds, account)

    def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
        auth: bool = True,
        retry_429: bool = True,
    ) -> requests.Response:
        all_headers = {"Authorization": f"Bearer {self.key}"} if auth else {}
        all_headers |= headers or {}
        deadline = time.monotonic() + DEADLINE
        while True:
            response = self.session.request(
                method, self.url + path, json=json, data=data, headers=all_headers, timeout=30
            )
            if response.status_code != 429 or not retry_429 or time.monotonic() > deadline:
                return response
            time.sleep(int(response.headers["retry-after-ms"]) / 1000)

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("GET", path, **kwargs)

    def post(self, path: str, json: Any = None, **kwargs: Any) -> requests.Response:
        return self.call("POST", path, json=json, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("DELETE", path, **kwargs)

    def launch(self, **overrides: Any) -> str:
        response = self.post("/instance-operations/launch", launch_body(**overrides))
        assert response.status_code == 200, response.text
        instance_id: str
        (instance_id,) = response.json()["data"]["instance_ids"]
        return instance_id

    def instance(self, instance_id: str) -> dict[str, Any]:
        response = self.get(f"/instances/{instance_id}")
        assert response.status_code == 200, response.text
        instance: dict[str, Any] = response.json()["data"]
        return instance

    def wait_status(self, instance_id: str, status: str) -> dict[str, Any]:
        deadline = time.monotonic() + DEADLINE
        while True:
            instance = self.instance(instance_id)
            if instance["status"] == status:
                return instance
            assert time.monotonic() < deadline, (
                f"{instance_id} stuck in {instance['status']}, wanted {status}"
            )
            time.sleep(0.02)

    def listed_ids(self) -> list[str]:
        response = self.get("/instances")
        assert response.status_code == 200, response.text
        return [i["id"] for i in response.json()["data"]]


def launch_body(**overrides: Any) -> dict[str, Any]:
    """A valid launch request (1x A10 in us-east-1 with the seeded key) with `overrides` applied."""
    body = {"region_name": "us-east-1", "instance_type_name": "gpu_1x_a10", "ssh_key_names": ["default"]}
    return body | overrides


def error(code: str, message: str, suggestion: str | None = None) -> dict[str, Any]:
    """The expected error envelope."""
    body = {"code": code, "message": message}
    if suggestion is not None:
        body["suggestion"] = suggestion
    return {"error": body}


def invalid_parameters(message: str) -> dict[str, Any]:
    return error("global/invalid-parameters", message, INVALID_PARAMETERS_SUGGESTION)


INSTANCE_NOT_FOUND = error("global/object-does-not-exist", "Specified instance does not exist.")
NOT_FOUND = error("global/not-found", "The requested resource was not found.")
