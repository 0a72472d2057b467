"""Fixtures: providers connected to the in-process mock clouds (fixtures `mock_clouds*` come from mock-clouds)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from vm_core.embedded import settings_from_endpoints
from vm_core.plugins import provider_plugins
from vm_core.provider import Provider

BUILT_IN = ("crusoe", "lambda", "nebius")


@pytest.fixture
def connect() -> Callable[..., Provider]:
    """connect(clouds, name, **overrides) -> a provider talking to those mock clouds."""
    plugins = provider_plugins()

    def make(clouds: Any, name: str, **overrides: Any) -> Provider:
        plugin = plugins.get(name)
        assert plugin is not None, plugins.problems
        return plugin.connect({**settings_from_endpoints(clouds.endpoints, name), **overrides})

    return make


@pytest.fixture(params=BUILT_IN)
def provider(request: pytest.FixtureRequest, mock_clouds: Any, connect: Callable[..., Provider]) -> Provider:
    return connect(mock_clouds, request.param)
