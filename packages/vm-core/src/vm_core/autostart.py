"""Starting the embedded clouds (vm_core.embedded) in the background when a profile needs them and none run.

`VM_NO_AUTOSTART=1` disables starting them (a ConfigError then says how to start them by hand);
`VM_MOCK_TIME_SCALE=F` is passed to the server vm starts (tests use 0.002).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from .config import ensure_private_dir
from .embedded import EmbeddedClouds
from .errors import ConfigError

START_TIMEOUT = 120.0  # generous: a server that answers takes seconds


def mock_endpoints(clouds: EmbeddedClouds, state_dir: Path, environ: Mapping[str, str],
                   notify: Callable[[str], None]) -> dict[str, Any]:
    """The endpoints of the embedded clouds of `state_dir`, starting them first if needed (may block for
    seconds). Raises ConfigError when they are not running and autostart is disabled or fails."""
    if (found := clouds.endpoints(state_dir)) is not None:
        return found
    if environ.get("VM_NO_AUTOSTART", "") not in ("", "0"):
        raise ConfigError(f"{clouds.title} are not running ({state_dir}) and VM_NO_AUTOSTART is set",
                          suggestion=f"start them with `{shlex.join(clouds.serve_command(state_dir))}`")
    with _start_lock(state_dir):
        if (found := clouds.endpoints(state_dir)) is not None:
            return found  # another vm started them while we waited for the lock
        notify(f"vm: starting {clouds.title} in the background ({state_dir}); stop them with"
               f" `{shlex.join(clouds.stop_command(state_dir))}`")
        _serve(clouds, state_dir, environ)
        if (found := clouds.endpoints(state_dir)) is None:
            raise ConfigError(f"{clouds.title} did not start; see {state_dir / 'server.log'}")
        return found


def _serve(clouds: EmbeddedClouds, state_dir: Path, environ: Mapping[str, str]) -> None:
    """Run the serve command, which returns once the clouds answer; ConfigError with its message if it fails."""
    command = clouds.serve_command(state_dir, environ.get("VM_MOCK_TIME_SCALE") or None)
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=START_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"{clouds.title} did not start within {START_TIMEOUT:.0f} s; see"
                          f" {state_dir / 'server.log'}") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise ConfigError(f"could not start {clouds.title}: {detail[-1] if detail else done.returncode}",
                          suggestion=f"see {state_dir / 'server.log'}")


@contextlib.contextmanager
def _start_lock(state_dir: Path) -> Iterator[None]:
    """Serialize autostarts of concurrent vm processes (blocks while another one starts the clouds)."""
    ensure_private_dir(state_dir)
    fd = os.open(state_dir / "autostart.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
