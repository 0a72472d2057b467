"""lambda-sdk against the operation, pager and policy contract shared by the three SDKs (tests/sdk_contract.py)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import lambda_sdk
import msgspec
import pytest
from lambda_sdk import InstanceStatus, LambdaClient, LaunchOperation, Page, Pager
from sdk_contract import WAIT, OperationContract, PagerContract, PolicyContract


class TestOperationContract(OperationContract):
    @pytest.fixture
    def started(self, client: LambdaClient, launch: Callable[..., Any]) -> Any:
        return launch(client, "contract-1")

    @pytest.fixture
    def resource_id_of(self) -> Any:
        return lambda instance: instance.id

    @pytest.fixture
    def finished(self, client: LambdaClient, launch: Callable[..., Any]) -> tuple[Any, Any]:
        """Lambda deletes are synchronous: its finished operation is a launch whose instance is already active."""
        instance = launch(client, "contract-done").result(WAIT)
        return LaunchOperation.finished(instance), instance


def test_finished_refuses_an_instance_that_is_not_active(client: LambdaClient, launch: Callable[..., Any]) -> None:
    active = launch(client, "contract-booting").result(WAIT)
    booting = msgspec.structs.replace(active, status=InstanceStatus.BOOTING, ip=None)
    with pytest.raises(ValueError, match="not active"):
        LaunchOperation.finished(booting)


class TestPagerContract(PagerContract):
    @pytest.fixture
    def sdk(self) -> ModuleType:
        return lambda_sdk

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
        return lambda_sdk

    @pytest.fixture
    def client_class(self) -> type:
        return LambdaClient
