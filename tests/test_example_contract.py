"""The third-party example provider (tests/example_provider) passes the same contract suite as the built-in clouds,
through vm_core.testing, the way any plugin's own tests would run it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from vm_core.plugins import provider_plugins
from vm_core.provider import Provider
from vm_core.testing import ContractFacts, ProviderContract


class TestExampleCloud(ProviderContract):
    # One region with room for 8 VMs (so no full region), stop/start but no reboot, no reservations.
    facts = ContractFacts(stop_start=True, unknown_id="ex-00000000", bad_credentials={"token": "another-token"},
                          wait=30.0)

    @pytest.fixture
    def reconnect(self, tmp_path: Path) -> Callable[..., Provider]:
        plugin = provider_plugins().get("example")
        assert plugin is not None
        settings = {"path": str(tmp_path / "cloud.json"), "token": "the-token", "seconds": "0.05"}
        list(plugin.connect(settings).list_instances())  # the first call binds the cloud to the token
        return lambda **overrides: plugin.connect({**settings, **overrides})

    @pytest.fixture
    def provider(self, reconnect: Callable[..., Provider]) -> Provider:
        return reconnect()
