"""Fixtures shared by every test suite of the repository: a throwaway PostgreSQL cluster (tests/pgcluster.py).

`postgres_cluster` (one per test session) and `postgres_url` (a fresh, empty database per test). When the
cluster cannot start they skip with the reason, or fail when VM_REQUIRE_POSTGRES=1 (set by .ci/run, so CI never
silently skips the PostgreSQL tests).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "tests"))

import pgcluster  # noqa: E402


def _required() -> bool:
    return os.environ.get("VM_REQUIRE_POSTGRES", "") not in ("", "0")


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[pgcluster.PgCluster]:
    try:
        cluster = pgcluster.start()
    except pgcluster.Unavailable as exc:
        if _required():
            pytest.fail(f"VM_REQUIRE_POSTGRES is set and PostgreSQL cannot start: {exc}")
        pytest.skip(f"PostgreSQL tests skipped: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster: pgcluster.PgCluster) -> str:
    """The URL of a fresh, empty database."""
    return postgres_cluster.database()
