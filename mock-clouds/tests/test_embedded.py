"""The `vm_core.embedded` entry point: these mock clouds as vm's embedded clouds, driven by its own commands."""

from __future__ import annotations

import subprocess
from importlib import metadata
from pathlib import Path

from mock_clouds.embedded import MockClouds, clouds


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)


def test_registered_for_vm() -> None:
    entry = metadata.entry_points(group="vm_core.embedded")["mock-clouds"]
    assert entry.value == "mock_clouds.embedded:clouds" and isinstance(entry.load(), MockClouds)
    assert clouds.providers == ("crusoe", "lambda", "nebius")


def test_serve_endpoints_and_stop_through_its_commands(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    assert clouds.endpoints(state_dir) is None
    started = run(clouds.serve_command(state_dir, "0.002"))
    try:
        assert started.returncode == 0, started.stderr
        found = clouds.endpoints(state_dir)
        assert found is not None and set(clouds.providers) <= set(found) and found["time_scale"] == 0.002
    finally:
        stopped = run(clouds.stop_command(state_dir))
    assert stopped.returncode == 0, stopped.stderr
    assert clouds.endpoints(state_dir) is None
