"""Fixtures shared by the mock-clouds tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mock_clouds.nebius import testkit


@pytest.fixture
def nebius(mock_clouds_factory) -> Iterator[testkit.Harness]:
    """A Nebius-only mock cloud and a gRPC harness on it (closed afterwards)."""
    harness = testkit.Harness(mock_clouds_factory(providers=("nebius",)))
    yield harness
    harness.close()
