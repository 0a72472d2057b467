"""The embedded default: the `local` profile's mock clouds, started in the background when they are not running.

`VM_NO_AUTOSTART=1` disables starting them (a ConfigError then says how to start them by hand);
`VM_MOCK_TIME_SCALE=F` is passed to a server vm starts as `--time-scale F` (tests use 0.002).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from .config import ensure_private_dir
from .errors import ConfigError

# The providers the mock clouds serve (vm_core.embedded has settings for each).
MOCK_PROVIDERS = ("crusoe", "lambda", "nebius")
START_TIMEOUT = 120.0  # generous: `serve --detach` itself gives up after 30 s


def mock_endpoints(state_dir: Path, environ: Mapping[str, str], notify: Callable[[str], None]) -> dict[str, Any]:
    """The endpoints of the mock clouds of `state_dir`, starting them first if needed (may block for seconds).

    Raises ConfigError when they are not running and autostart is disabled or fails."""
    from mock_clouds import control

    with contextlib.suppress(control.NotRunning):
        return control.read_endpoints(state_dir)
    if environ.get("VM_NO_AUTOSTART", "") not in ("", "0"):
        raise ConfigError(f"the mock clouds of the local profile are not running ({state_dir}) and"
                          " VM_NO_AUTOSTART is set",
                          suggestion=f"start them with `{shlex.join(serve_command(state_dir))}`")
    with _start_lock(state_dir):
        with contextlib.suppress(control.NotRunning):
            return control.read_endpoints(state_dir)  # another vm started them while we waited for the lock
        notify(f"vm: starting the local mock clouds in the background ({state_dir}); stop them with"
               f" `{shlex.join(stop_command(state_dir))}`")
        _serve(state_dir, environ)
        try:
            return control.read_endpoints(state_dir)
        except control.NotRunning as exc:
            raise ConfigError(f"the mock clouds did not start: {exc}") from None


def running_endpoints(state_dir: Path) -> dict[str, Any] | None:
    """The endpoints of the mock clouds of `state_dir` if they are running, else None (never starts them)."""
    from mock_clouds import control

    try:
        return control.read_endpoints(state_dir)
    except control.NotRunning:
        return None


def serve_command(state_dir: Path, environ: Mapping[str, str] | None = None) -> list[str]:
    command = [sys.executable, "-m", "mock_clouds", "serve", "--detach", "--state-dir", str(state_dir)]
    if environ and (scale := environ.get("VM_MOCK_TIME_SCALE")):
        command += ["--time-scale", scale]
    return command


def stop_command(state_dir: Path) -> list[str]:
    """The command that stops them, runnable from any shell (this interpreter's full path)."""
    return [sys.executable, "-m", "mock_clouds", "stop", "--state-dir", str(state_dir)]


def _serve(state_dir: Path, environ: Mapping[str, str]) -> None:
    """Run `serve --detach`, which returns once the clouds answer; ConfigError with its message if it fails."""
    try:
        done = subprocess.run(serve_command(state_dir, environ), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=START_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"the mock clouds did not start within {START_TIMEOUT:.0f} s; see"
                          f" {state_dir / 'server.log'}") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise ConfigError(f"could not start the mock clouds: {detail[-1] if detail else done.returncode}",
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
