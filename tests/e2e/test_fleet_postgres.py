"""The fleet end-to-end suite (test_fleet.py) again, with the fleet store in PostgreSQL (a throwaway cluster,
tests/pgcluster.py) instead of the home's SQLite file: same commands, same assertions against the clouds'
inventory. The SIGKILL-during-create test runs at a subset of its kill points (the full set runs on SQLite)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

_spec = importlib.util.spec_from_file_location("fleet_suite", Path(__file__).with_name("test_fleet.py"))
_suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_suite)

KILL_AFTER = [0.2, 1.0, 2.5, 6.0]


@pytest.fixture(scope="module")
def shared_home(shared_home: Any, postgres_cluster: Any) -> Any:
    """The suite's shared home, its fleet store a fresh PostgreSQL database."""
    shared_home.env["VM_STORE_URL"] = postgres_cluster.database()
    return shared_home


@pytest.fixture
def fresh_home(fresh_home: Any, postgres_url: str) -> Any:
    fresh_home.env["VM_STORE_URL"] = postgres_url
    return fresh_home


@pytest.fixture(scope="module")
def slow_home(shared_home: Any, postgres_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Mock clouds ten times slower than the shared ones (as in the suite), the store in PostgreSQL."""
    home = type(shared_home)(tmp_path_factory.mktemp("vm-slow-pg"), VM_STORE_URL=postgres_cluster.database())
    home.env["VM_MOCK_TIME_SCALE"] = "0.02"
    yield home
    home.stop()


@pytest.fixture(autouse=True)
def no_sqlite_store(request: pytest.FixtureRequest) -> Any:
    """Proof that the suite ran on PostgreSQL: no home it used grew a SQLite store."""
    homes = [request.getfixturevalue(n) for n in ("shared_home", "fresh_home", "slow_home")
             if n in request.fixturenames]
    yield
    for home in homes:
        assert "VM_STORE_URL" in home.env and not (home.path / "vm.db").exists()

for _name in dir(_suite):  # every test of the suite, collected here against these fixtures
    if _name.startswith("test_") and _name != "test_sigkill_during_create_then_destroy_leaves_nothing":
        globals()[_name] = getattr(_suite, _name)


@pytest.mark.parametrize("delay", KILL_AFTER)
def test_sigkill_during_create_then_destroy_leaves_nothing(slow_home: Any, delay: float) -> None:
    _suite.test_sigkill_during_create_then_destroy_leaves_nothing(slow_home, delay)
