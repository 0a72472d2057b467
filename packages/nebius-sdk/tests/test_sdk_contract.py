"""nebius-sdk against the operation, pager and policy contract shared by the three SDKs (tests/sdk_contract.py)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import nebius_sdk
import pytest
from nebius_sdk import NebiusClient, Pager
from sdk_contract import OperationContract, PagerContract, PolicyContract

CPU = ("cpu-d3", "4vcpu-16gb")


class TestOperationContract(OperationContract):
    @pytest.fixture
    def started(self, client: NebiusClient) -> Any:
        return client.begin_create_instance("vm-contract", *CPU)

    @pytest.fixture
    def resource_id_of(self) -> Any:
        return lambda instance: instance.metadata.id

    @pytest.fixture
    def finished(self, client: NebiusClient) -> tuple[Any, Any]:
        return client.begin_delete_instance("computeinstance-e00missingcontract"), None


class TestPagerContract(PagerContract):
    @pytest.fixture
    def sdk(self) -> ModuleType:
        return nebius_sdk

    @pytest.fixture
    def make_pager(self) -> Any:
        def make(pages: dict[str, tuple[list[int], str]], calls: list[str]) -> Pager[int]:
            def fetch(token: str) -> tuple[list[int], str]:
                calls.append(token)
                return pages[token]

            return Pager(fetch)

        return make


class TestPolicyContract(PolicyContract):
    @pytest.fixture
    def sdk(self) -> ModuleType:
        return nebius_sdk

    @pytest.fixture
    def client_class(self) -> type:
        return NebiusClient
