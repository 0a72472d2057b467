"""Test support for the Crusoe mock: a small signed-request client (over `requests`) and request helpers.

Like `mock_clouds.testing`, this module is for test suites only (it needs `requests`, a test dependency). Its
signing is written independently of `mock_clouds.crusoe.auth` (from the research notes), so a bug in the
server's implementation cannot hide behind the same bug in the client. It is test code, not an SDK.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import requests

from ..core.models import WorldState
from ..core.world import World
from ..runner import MockClouds

PREFIX = "/v1alpha5"
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHRlc3Qta2V5LWZvci1jcnVzb2UtbW9jay10ZXN0cw test@example"
H100 = "h100-80gb-sxm-ib.8x"
L40S = "l40s-48gb.1x"
L40S_8X = "l40s-48gb.8x"
CHEAP_RESERVATION = "804bf3a2-5b7e-4c1d-9f0a-6e2d8c4b1a11"  # h100, us-east1, 2.65 $/GPU-h, 32 GPUs
PRICEY_RESERVATION = "e384a1de-3f2c-4b5a-8d9e-0c1b2a3f4e22"  # h100, us-east1, 2.90 $/GPU-h, 16 GPUs
POLL_DEADLINE = 10.0

Params = Iterable[tuple[str, str]] | dict[str, str] | None


def now_rfc3339(offset: float = 0.0) -> str:
    return datetime.fromtimestamp(time.time() + offset, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def canonical_query(pairs: list[tuple[str, str]]) -> str:
    """Sorted by key (values keep their order), Go QueryEscape encoding."""
    ordered = sorted(pairs, key=lambda kv: kv[0])
    return "&".join(
        f"{urllib.parse.quote_plus(k, safe='')}={urllib.parse.quote_plus(v, safe='')}" for k, v in ordered
    )


def signature(secret: str, path: str, query: str, method: str, stamp: str) -> str:
    key = base64.urlsafe_b64decode(secret + "=" * (-len(secret) % 4))
    message = f"{path}\n{query}\n{method}\n{stamp}\n"
    return (
        base64.urlsafe_b64encode(hmac.new(key, message.encode(), hashlib.sha256).digest())
        .rstrip(b"=")
        .decode()
    )


class CrusoeClient:
    """Signs every request like real clients; keyword overrides let tests break one part of the signature."""

    def __init__(self, root: str, key_id: str, secret: str) -> None:
        self.root, self.key_id, self.secret = root, key_id, secret
        self.session = requests.Session()

    def with_key_id(self, key_id: str) -> CrusoeClient:
        return CrusoeClient(self.root, key_id, self.secret)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Params = None,
        json: Any = None,
        data: bytes | None = None,
        prefix: str = PREFIX,
        stamp: str | None = None,
        signed_path: str | None = None,
        signed_query: str | None = None,
        signed_method: str | None = None,
        authorization: str | None = None,
        headers: dict[str, str | None] | None = None,
    ) -> requests.Response:
        pairs = list(params.items()) if isinstance(params, dict) else list(params or [])
        stamp = stamp or now_rfc3339()
        sig = signature(
            self.secret,
            signed_path or prefix + path,
            canonical_query(pairs) if signed_query is None else signed_query,
            signed_method or method,
            stamp,
        )
        all_headers: dict[str, str | None] = {
            "X-Crusoe-Timestamp": stamp,
            "Authorization": authorization or f"Bearer 1.0:{self.key_id}:{sig}",
        }
        all_headers.update(headers or {})
        query = urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote_plus)
        url = f"{self.root}{prefix}{path}" + (f"?{query}" if query else "")
        return self.session.request(method, url, json=json, data=data, headers=all_headers, timeout=30)

    def get(self, path: str, **kw: Any) -> requests.Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any, **kw: Any) -> requests.Response:
        return self.request("POST", path, json=body, **kw)

    def patch(self, path: str, body: Any, **kw: Any) -> requests.Response:
        return self.request("PATCH", path, json=body, **kw)

    def delete(self, path: str, **kw: Any) -> requests.Response:
        return self.request("DELETE", path, **kw)


@dataclass
class CrusoeEnv:
    clouds: MockClouds
    client: CrusoeClient  # organisation A (owns `project` and `research_project`)
    other: CrusoeClient  # organisation B (owns `other_project`)
    org_id: str
    other_org_id: str
    project: str
    research_project: str
    other_project: str

    @property
    def world(self) -> World:
        return self.clouds.world


def instances_path(project: str) -> str:
    return f"/projects/{project}/compute/vms/instances"


def vm_path(project: str, vm_id: str) -> str:
    return f"{instances_path(project)}/{vm_id}"


def create_body(
    name: str, type_: str = L40S, location: str = "eu-iceland1-a", **extra: Any
) -> dict[str, Any]:
    return {"name": name, "type": type_, "location": location, "ssh_public_key": SSH_KEY, **extra}


def start_create(client: CrusoeClient, project: str, name: str, **kw: Any) -> dict[str, Any]:
    """POST a create and return the operation (asserting the 200 envelope)."""
    response = client.post(instances_path(project), create_body(name, **kw))
    assert response.status_code == 200, response.text
    operation: dict[str, Any] = response.json()["operation"]
    return operation


def wait_operation(client: CrusoeClient, project: str, op_id: str) -> dict[str, Any]:
    """Poll until the operation leaves IN_PROGRESS (generous deadline, no fixed sleeps)."""
    deadline = time.monotonic() + POLL_DEADLINE
    while True:
        response = client.get(f"{instances_path(project)}/operations/{op_id}")
        assert response.status_code == 200, response.text
        op: dict[str, Any] = response.json()
        if op["state"] != "IN_PROGRESS" or time.monotonic() > deadline:
            return op
        time.sleep(0.02)


def create_vm(client: CrusoeClient, project: str, name: str, **kw: Any) -> dict[str, Any]:
    """Create a VM, wait for the operation to succeed and return the VM from the result."""
    op = wait_operation(client, project, start_create(client, project, name, **kw)["operation_id"])
    assert op["state"] == "SUCCEEDED", op
    vm: dict[str, Any] = op["result"]
    return vm


def act(client: CrusoeClient, project: str, vm_id: str, action: str, **fields: Any) -> dict[str, Any]:
    """PATCH an action and wait for its operation to finish; returns the final operation."""
    response = client.patch(vm_path(project, vm_id), {"action": action, **fields})
    assert response.status_code == 200, response.text
    return wait_operation(client, project, response.json()["operation"]["operation_id"])


def get_vm(client: CrusoeClient, project: str, vm_id: str) -> dict[str, Any]:
    response = client.get(vm_path(project, vm_id))
    assert response.status_code == 200, response.text
    vm: dict[str, Any] = response.json()
    return vm


def reservation(env: CrusoeEnv, reservation_id: str) -> dict[str, Any]:
    response = env.client.get(f"/organizations/{env.org_id}/reservations/{reservation_id}")
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()["items"][0]
    return found


def start_env(
    factory: Callable[..., MockClouds], configure: Callable[[WorldState], None] | None = None
) -> CrusoeEnv:
    """Start a Crusoe-only mock with `mock_clouds_factory`; `configure` may edit the fresh world."""
    return env_for(factory(providers=("crusoe",), configure=configure))


def env_for(clouds: MockClouds) -> CrusoeEnv:
    """Clients for both organisations of the default scenario on a running mock."""
    endpoint = clouds.endpoints["crusoe"]
    root = endpoint["url"].removesuffix(PREFIX)
    projects = clouds.world.state.providers["crusoe"].projects
    org_id = endpoint["organization_id"]
    other = next(p for p in projects if p.owner != org_id)
    other_cred = next(c for c in clouds.world.state.credentials["crusoe"] if c.owner == other.owner)
    return CrusoeEnv(
        clouds=clouds,
        client=CrusoeClient(root, endpoint["access_key_id"], endpoint["secret_key"]),
        other=CrusoeClient(root, other_cred.key_id, other_cred.secret),
        org_id=org_id,
        other_org_id=other.owner,
        project=endpoint["project_id"],
        research_project=next(p.id for p in projects if p.owner == org_id and p.id != endpoint["project_id"]),
        other_project=other.id,
    )
