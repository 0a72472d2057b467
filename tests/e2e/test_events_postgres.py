"""The events end-to-end suite (test_events.py) again, with the fleet store in PostgreSQL (a throwaway cluster,
tests/pgcluster.py): the same commands, webhook and assertions, and no SQLite store grown by any home."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

_spec = importlib.util.spec_from_file_location("events_suite", Path(__file__).with_name("test_events.py"))
assert _spec is not None and _spec.loader is not None
_suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_suite)
receiver = _suite.receiver
home = _suite.home


@pytest.fixture(scope="module")
def shared_home(shared_home: Any, postgres_cluster: Any) -> Any:
    shared_home.env["VM_STORE_URL"] = postgres_cluster.database()
    return shared_home


@pytest.fixture
def fresh_home(fresh_home: Any, postgres_url: str) -> Any:
    fresh_home.env["VM_STORE_URL"] = postgres_url
    return fresh_home


@pytest.fixture(autouse=True)
def no_sqlite_store(request: pytest.FixtureRequest) -> Any:
    homes = [request.getfixturevalue(n) for n in ("shared_home", "fresh_home") if n in request.fixturenames]
    yield
    for home_used in homes:
        assert "VM_STORE_URL" in home_used.env and not (home_used.path / "vm.db").exists()


for _name in dir(_suite):
    if _name.startswith("test_") and _name != "test_a_malformed_notify_table_is_a_config_error_that_repeats_no_secret":
        globals()[_name] = getattr(_suite, _name)
