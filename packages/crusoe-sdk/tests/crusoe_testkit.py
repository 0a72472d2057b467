"""Helpers of the crusoe-sdk tests (a uniquely named module: conftest.py puts this folder on sys.path).

Clients talk to the in-process Crusoe mock of the `mock_clouds` pytest plugin with fast, bounded policies.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from crusoe_sdk import CrusoeClient, PollPolicy, RetryPolicy
from mock_clouds.core.models import Provider, WorldState

SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDz5pGq0sdktestkeyonlyforthemockclouds crusoe-sdk-tests"
OTHER_ORG_PROJECT = "f0e1d2c3-b4a5-4968-8776-655443322103"  # in the default scenario, not the key's org
DEFAULT_PROJECT = "5d9f0f5e-8c0f-4c52-9d6e-2f7b6f0c1a01"

# Fast but generous: polls every 10-100 ms, deadlines are minutes (tests never rely on speed).
FAST_POLL = PollPolicy(initial=0.02, maximum=0.1, timeout=120.0)
FAST_RETRY = RetryPolicy(max_attempts=8, initial=0.01, maximum=0.05, max_retry_after=5.0)


def client_for(clouds: Any, **overrides: Any) -> CrusoeClient:
    """A client of `clouds`' Crusoe front end; keyword arguments override the constructor's."""
    endpoint = clouds.endpoints["crusoe"]
    kwargs: dict[str, Any] = dict(
        access_key_id=endpoint["access_key_id"], secret_key=endpoint["secret_key"], base_url=endpoint["url"],
        project_id=endpoint["project_id"], poll=FAST_POLL, retry=FAST_RETRY, timeout=30.0,
    )
    kwargs.update(overrides)
    return CrusoeClient(**kwargs)


def configure(**changes: Callable[[WorldState], None]) -> Callable[[WorldState], None]:
    """Combine world edits for `mock_clouds_factory(configure=...)`."""

    def apply(state: WorldState) -> None:
        for change in changes.values():
            change(state)

    return apply


def crusoe_config(state: WorldState):
    return state.providers[Provider.CRUSOE]


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def create(client: CrusoeClient, name: str, **overrides: Any):
    """Begin creating a small on-demand VM (l40s-48gb.1x in eu-iceland1-a unless overridden)."""
    args: dict[str, Any] = dict(
        name=name, type="l40s-48gb.1x", location="eu-iceland1-a", ssh_public_key=SSH_KEY,
        image="ubuntu22.04:latest",
    )
    args.update(overrides)
    return client.begin_create_instance(**args)
