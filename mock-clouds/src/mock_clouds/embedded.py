"""The `vm_core.embedded` entry point: these mock clouds as the embedded clouds of vm's `local` profile.

vm-core never imports mock_clouds; it finds this object through the entry point, asks it whether a server runs
for a state directory and how to start or stop one, and gives each provider plugin the endpoint record of its cloud
(the plugin's `embedded_settings` turns it into settings). Loading this module starts nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


class MockClouds:
    """Crusoe, Lambda and Nebius as local servers sharing one state directory (`mock-clouds serve`)."""

    name = "mock-clouds"  # vm keeps their state in <vm state dir>/mock-clouds
    title = "the local mock clouds"
    providers = ("crusoe", "lambda", "nebius")

    def endpoints(self, state_dir: Path) -> dict[str, Any] | None:
        """endpoints.json of the server of `state_dir` (one record per provider, plus `time_scale`), or None
        when no server is running for it."""
        from . import control

        try:
            return control.read_endpoints(state_dir)
        except control.NotRunning:
            return None

    def serve_command(self, state_dir: Path, time_scale: str | None = None) -> list[str]:
        """Starts a server in the background and returns once it answers (non-zero exit, message on stderr,
        when it cannot)."""
        command = [sys.executable, "-m", "mock_clouds", "serve", "--detach", "--state-dir", str(state_dir)]
        return command + (["--time-scale", time_scale] if time_scale else [])

    def stop_command(self, state_dir: Path) -> list[str]:
        """Stops it (its state is saved); runnable from any shell (this interpreter's full path)."""
        return [sys.executable, "-m", "mock_clouds", "stop", "--state-dir", str(state_dir)]


clouds = MockClouds()
