"""Fixtures: providers connected to the in-process mock clouds (fixtures `mock_clouds*` come from mock-clouds)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from vm_core.embedded import settings_from_endpoints
from vm_core.plugins import provider_plugins
from vm_core.provider import Provider

BUILT_IN = ("crusoe", "lambda", "nebius")
# The user's public key of these tests (a well-formed ed25519 key nobody holds): new VMs need one (sshkeys.py),
# as the CLI finds it in ~/.ssh.
TEST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGgLAWC6bF3K8NqzCcSE0G4cqyBqV3zZkh9q6rUa0fB1 tests@vm-core"


@pytest.fixture
def connect() -> Callable[..., Provider]:
    """connect(clouds, name, **overrides) -> a provider talking to those mock clouds."""
    plugins = provider_plugins()

    def make(clouds: Any, name: str, **overrides: Any) -> Provider:
        plugin = plugins.get(name)
        assert plugin is not None, plugins.problems
        settings = settings_from_endpoints(clouds.endpoints, name)
        if name in BUILT_IN:
            settings["ssh_public_key"] = TEST_KEY
        return plugin.connect({**settings, **overrides})

    return make


@pytest.fixture(params=BUILT_IN)
def provider(request: pytest.FixtureRequest, mock_clouds: Any, connect: Callable[..., Provider]) -> Provider:
    return connect(mock_clouds, request.param)
