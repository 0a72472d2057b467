"""`vm fleet stop | start` with the fleet store in PostgreSQL (a throwaway cluster, tests/pgcluster.py) instead of
the home's SQLite file: the mixed fleet of test_fleet_power.py stops and starts the same, and no SQLite store is
made."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

_spec = importlib.util.spec_from_file_location("fleet_power_suite", Path(__file__).with_name("test_fleet_power.py"))
assert _spec is not None and _spec.loader is not None
_suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_suite)


def test_mixed_fleet_stops_and_starts_on_postgresql(fresh_home: Any, postgres_url: str) -> None:
    fresh_home.env["VM_STORE_URL"] = postgres_url
    _suite.test_mixed_fleet_stops_and_starts(fresh_home)
    assert not (fresh_home.path / "vm.db").exists()
