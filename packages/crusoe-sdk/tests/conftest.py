"""Fixtures of the crusoe-sdk tests; helpers live in crusoe_testkit.py."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[2] / "cloud-sdk-core" / "tests"))  # sdk_netkit: local TLS, proxies

from crusoe_sdk import CrusoeClient  # noqa: E402
from crusoe_testkit import client_for  # noqa: E402


@pytest.fixture
def clouds(mock_clouds_factory: Callable[..., Any]) -> Any:
    """A fresh mock with only the Crusoe front end (plus the admin API the runner always starts)."""
    return mock_clouds_factory(providers=("crusoe",))


@pytest.fixture
def client(clouds: Any) -> Iterator[CrusoeClient]:
    with client_for(clouds) as c:
        yield c
