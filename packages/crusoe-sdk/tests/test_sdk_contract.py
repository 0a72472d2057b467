"""crusoe-sdk against the operation, pager and policy contract shared by the three SDKs (tests/sdk_contract.py)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import crusoe_sdk
import pytest
from crusoe_sdk import CrusoeClient, Page, Pager
from crusoe_testkit import create
from sdk_contract import OperationContract, PagerContract, PolicyContract

MISSING_VM = "0b5e8c11-3f0d-4a57-9c43-000000000404"


class TestOperationContract(OperationContract):
    @pytest.fixture
    def started(self, client: CrusoeClient) -> Any:
        return create(client, "contract-1")

    @pytest.fixture
    def resource_id_of(self) -> Any:
        return lambda instance: instance.id

    @pytest.fixture
    def finished(self, client: CrusoeClient) -> tuple[Any, Any]:
        return client.begin_delete_instance(MISSING_VM), None


class TestPagerContract(PagerContract):
    @pytest.fixture
    def sdk(self) -> ModuleType:
        return crusoe_sdk

    @pytest.fixture
    def make_pager(self) -> Any:
        def make(pages: dict[str, tuple[list[int], str]], calls: list[str]) -> Pager[int]:
            def fetch(token: str | None) -> Page[int]:
                calls.append(token or "")
                return Page(*pages[token or ""])

            return Pager(fetch)

        return make


class TestPolicyContract(PolicyContract):
    @pytest.fixture
    def sdk(self) -> ModuleType:
        return crusoe_sdk

    @pytest.fixture
    def client_class(self) -> type:
        return CrusoeClient
