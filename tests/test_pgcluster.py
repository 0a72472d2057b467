"""The PostgreSQL test fixture: without the binaries the PostgreSQL tests skip with a visible reason, unless
VM_REQUIRE_POSTGRES is set (as .ci/run does): then they fail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ONE_TEST = "packages/vm-core/tests/test_fleet_store.py::test_duplicate_name_is_refused[postgres]"


def run_without_binaries(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "VM_REQUIRE_POSTGRES"}
    environ.update(VM_POSTGRES_BIN=str(tmp_path / "no-postgres-here"), **env)
    return subprocess.run([sys.executable, "-m", "pytest", ONE_TEST, "-rs", "-p", "no:cacheprovider"], cwd=REPO,
                          env=environ, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("env", "outcome", "says"), [
    ({}, "1 skipped", "PostgreSQL tests skipped: no PostgreSQL binaries in"),
    ({"VM_REQUIRE_POSTGRES": "1"}, "1 error", "VM_REQUIRE_POSTGRES is set and PostgreSQL cannot start"),
])
def test_missing_postgres_skips_visibly_or_fails_when_required(tmp_path: Path, env: dict[str, str], outcome: str,
                                                               says: str) -> None:
    done = run_without_binaries(tmp_path, **env)
    assert outcome in done.stdout and says in done.stdout, done.stdout[-3000:]
    assert (done.returncode == 0) == (not env)


def test_ci_requires_postgres() -> None:
    assert "export VM_REQUIRE_POSTGRES=1" in (REPO / ".ci" / "run").read_text()
