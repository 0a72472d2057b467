"""pytest plugin (entry point `pytest11`): in-process mock clouds for any package's tests.

Fixtures:
- `mock_clouds`: a fresh `MockClouds` on free ports with the default scenario and a fast time scale
  (TEST_TIME_SCALE), stopped after the test.
- `mock_clouds_factory(**kwargs)`: start more, or customised, instances (same arguments as `MockClouds`;
  `configure=` edits the fresh world before it starts). All are stopped after the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .runner import MockClouds

# Durations and rate-limit intervals are multiplied by this: a 90 s Crusoe create takes 0.18 s.
TEST_TIME_SCALE = 0.002


@pytest.fixture
def mock_clouds_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., MockClouds]]:
    started: list[MockClouds] = []

    def factory(state_dir: Path | None = None, **kwargs: Any) -> MockClouds:
        kwargs.setdefault("time_scale", TEST_TIME_SCALE)
        clouds = MockClouds(state_dir or tmp_path_factory.mktemp("mock-clouds"), **kwargs).start()
        started.append(clouds)
        return clouds

    yield factory
    for clouds in started:
        clouds.stop()


@pytest.fixture
def mock_clouds(mock_clouds_factory: Callable[..., MockClouds]) -> MockClouds:
    return mock_clouds_factory()
