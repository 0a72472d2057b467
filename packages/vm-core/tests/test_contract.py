"""One contract, every provider: vm_core.testing's lifecycle suite against each built-in cloud's mock.

Where the clouds differ, the difference is a stated fact (FACTS) that the suite asserts, never a silent skip. The
example third-party provider runs the same suite in tests/test_example_contract.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from vm_core.provider import Provider
from vm_core.testing import ContractFacts, ProviderContract

# What each cloud can do (the README's capability table says the same); regions of the default scenario that sell
# H100 but have no H100 capacity; well-formed ids that do not exist; credentials the mock refuses.
FACTS = {
    "crusoe": ContractFacts(stop_start=True, reboot=True, reservations=True, full_region="us-northcentral1-a",
                            unknown_id="00000000-0000-4000-8000-000000000000",
                            bad_credentials={"secret_key": "d3JvbmctY3JlZGVudGlhbA"}),
    "lambda": ContractFacts(stop_start=False, reboot=True, reservations=True, full_region="us-east-1",
                            unknown_id="0" * 32, bad_credentials={"api_key": "d3JvbmctY3JlZGVudGlhbA"}),
    "nebius": ContractFacts(stop_start=True, reboot=True, reservations=False, full_region="eu-west1",
                            unknown_id="computeinstance-e00zzzzzzzzzzzzzzz",
                            bad_credentials={"token": "d3JvbmctY3JlZGVudGlhbA"}),
}


class TestBuiltInClouds(ProviderContract):
    @pytest.fixture(params=sorted(FACTS), autouse=True)
    def cloud(self, request: pytest.FixtureRequest) -> str:
        self.facts = FACTS[request.param]
        return str(request.param)

    @pytest.fixture
    def provider(self, cloud: str, mock_clouds: Any, connect: Callable[..., Provider]) -> Provider:
        return connect(mock_clouds, cloud)

    @pytest.fixture
    def reconnect(self, cloud: str, mock_clouds: Any, connect: Callable[..., Provider]) -> Callable[..., Provider]:
        return lambda **overrides: connect(mock_clouds, cloud, **overrides)
