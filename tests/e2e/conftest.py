"""End-to-end fixtures: the real `vm` executable, run as a subprocess against mock clouds it starts itself.

`VmHome(...)` runs its process through tests/vmfork.py: a fresh process forked from one that has already imported
the CLI (the same arguments, environment, stdio and exit code as executing the script; VM_TESTS_EXEC=1 executes
it). Tests of the process itself (signals, terminals) start `VM` with subprocess.

The homes of `shared_home` and `fresh_home` start their mock clouds before their first command that would
autostart them (no config.toml, no VM_PROFILE, autostart not disabled): the same `mock-clouds serve`, forked from
that process instead of a new interpreter (vmfork.start_mock), so `vm` finds them running. Tests of the autostart
itself (its notice, its lock, racing processes) take `autostart_home`, whose first command autostarts them.

Each `VmHome` is one VM_HOME: the first command autostarts its mock clouds (time scale 0.002, so a boot takes a
fraction of a second); the fixture stops them afterwards. Modules share one home where tests do not interfere
(distinct VM names), and take a fresh one where they do.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import vmfork  # tests/vmfork.py (the root conftest puts tests/ on sys.path)
from mock_clouds import control

BIN = Path(sys.executable).parent
VM = str(BIN / "vm")
TIME_SCALE = "0.002"
TIMEOUT = 300  # generous: the machine is shared and slow
PROVIDER_ENV = ("CRUSOE_", "LAMBDA_", "NEBIUS_", "VM_", "XDG_")


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def error(self) -> dict[str, Any]:
        """The JSON error document of a command run with -o json (the last line of stderr)."""
        return json.loads(self.err.strip().splitlines()[-1])["error"]

    def rows(self) -> list[list[str]]:
        """The table on stdout, split into cells (no cell of vm's tables contains spaces)."""
        return [line.split() for line in self.out.splitlines()]


def public_key(comment: str = "me@laptop") -> str:
    """A well-formed ed25519 public key line nobody holds the private half of (a public key is no secret)."""
    def string(data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + data

    blob = string(b"ssh-ed25519") + string(secrets.token_bytes(32))
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} {comment}"


class VmHome:
    def __init__(self, path: Path, prestart: bool = False, **env: str) -> None:
        self.path = path
        self.prestart = prestart  # start the mocks before the first command that would autostart them
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(PROVIDER_ENV) and k != "NO_COLOR"}
        # HOME too: the clouds' own credential files (~/.crusoe/config...) of whoever runs the tests are not read
        self.user_home = path.parent / f"{path.name}-user"
        self.user_home.mkdir(parents=True, exist_ok=True)
        self.env.update(VM_HOME=str(path), HOME=str(self.user_home), VM_MOCK_TIME_SCALE=TIME_SCALE, **env)
        # The user's own key, which new VMs get when nothing else names one (a test that wants none removes it)
        self.ssh_key = self.user_ssh_key("id_ed25519.pub", public_key(f"{path.name}@tests"))

    def user_ssh_key(self, name: str, key: str) -> str:
        """Write `key` as ~/.ssh/NAME of the user's home; returns the key."""
        (self.user_home / ".ssh").mkdir(mode=0o700, exist_ok=True)
        (self.user_home / ".ssh" / name).write_text(key + "\n")
        return key

    @property
    def mock_dir(self) -> Path:
        return self.path / "mock-clouds"

    def __call__(self, *args: str, env: dict[str, str] | None = None, timeout: float = TIMEOUT) -> Run:
        run_env = {**self.env, **(env or {})}
        if self.prestart:
            self._prestart(run_env)
        done = vmfork.run([VM, *args], run_env, timeout)
        return Run(done.returncode, done.stdout, done.stderr)

    def _prestart(self, env: dict[str, str]) -> None:
        """Start the mock clouds if this command would autostart them (once: later commands find them): the
        `local` profile is the one in use (no config.toml, no VM_PROFILE, no cloud's credentials in the
        environment or the user's home) and autostart is not disabled."""
        cloud_files = [p for p in self.user_home.iterdir() if p.name != ".ssh"]
        if (self.path / "config.toml").exists() or env.get("VM_PROFILE") or cloud_files or \
                any(k.startswith(("CRUSOE_", "LAMBDA_", "NEBIUS_")) for k in env) or \
                env.get("VM_NO_AUTOSTART", "") not in ("", "0"):
            return
        self.prestart = False
        try:
            control.read_endpoints(self.mock_dir)
        except control.NotRunning:
            vmfork.start_mock(self.mock_dir, env["VM_MOCK_TIME_SCALE"], env)

    def ok(self, *args: str, **kwargs: Any) -> Run:
        result = self(*args, **kwargs)
        assert result.code == 0, f"vm {' '.join(args)} -> {result.code}\n{result.err}"
        return result

    def mock(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mock_clouds", *args, "--state-dir", str(self.mock_dir)],
                              env=self.env, capture_output=True, text=True, timeout=TIMEOUT, check=False)

    def inventory(self) -> list[dict[str, Any]]:
        """Every instance in the three mock clouds: the ground truth. Mock clouds this home has not started yet
        (the test runs first in its module, whatever order the workers take them in) are started as `vm`
        autostarts them, so the answer is never "not running"."""
        try:
            endpoints = control.read_endpoints(self.mock_dir)
        except control.NotRunning:
            self.ok("list")
            endpoints = control.read_endpoints(self.mock_dir)
        return list(control.admin_call(endpoints, "GET", "/inventory", timeout=TIMEOUT)["instances"])

    def live(self, name: str) -> list[dict[str, Any]]:
        """The instances of the inventory with this name that are not gone."""
        return [i for i in self.inventory() if i["name"] == name and i["state"] != "terminated"]

    def endpoints(self) -> dict[str, Any]:
        return json.loads((self.mock_dir / "endpoints.json").read_text())

    def secrets(self) -> list[str]:
        """The credentials of the running mock clouds: none may ever appear in vm's output."""
        ep = self.endpoints()
        return [ep["crusoe"]["secret_key"], ep["lambda"]["api_key"], ep["nebius"]["token"], ep["admin"]["token"]]

    def config(self, text: str, mode: int = 0o600) -> Path:
        path = self.path / "config.toml"
        self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(mode)
        return path

    def stop(self) -> None:
        control.stop_server(self.mock_dir)


def _home(path: Path, prestart: bool = True, **env: str) -> Iterator[VmHome]:
    home = VmHome(path, prestart, **env)
    try:
        yield home
    finally:
        home.stop()


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VmHome]:
    """One VM_HOME (and one autostarted set of mock clouds) for the whole module."""
    yield from _home(tmp_path_factory.mktemp("vm-home"))


@pytest.fixture
def fresh_home(tmp_path: Path) -> Iterator[VmHome]:
    yield from _home(tmp_path / "vm-home")


@pytest.fixture
def autostart_home(tmp_path: Path) -> Iterator[VmHome]:
    """A fresh home whose first command autostarts the mock clouds, as a user's does."""
    yield from _home(tmp_path / "vm-home", prestart=False)
