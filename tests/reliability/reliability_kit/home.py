"""One VM_HOME: the real `vm` executable run as a subprocess against the mock clouds of that home.

The first `vm` command autostarts the mock clouds (`VM_MOCK_TIME_SCALE` makes a boot take a fraction of a
second); `serve` starts them instead on fixed ports, so they can be stopped and started again while a `vm`
process keeps talking to them. The ground truth is the mocks' admin API, the one `mock-clouds inventory` reads.
`VmHome(...)` runs its process through tests/vmfork.py: a fresh process forked from one that has already imported
the CLI (the same arguments, environment, stdio and exit code as executing the script; VM_TESTS_EXEC=1 executes
it); `spawn` and `kill_after` execute the script.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import vmfork  # tests/vmfork.py (the root conftest puts tests/ on sys.path)
from mock_clouds import control

from .audit import Store

BIN = Path(sys.executable).parent
VM = str(BIN / "vm")
TIMEOUT = 300.0  # generous: the machine is shared and slow
PROVIDERS = ("crusoe", "lambda", "nebius")
PROVIDER_ENV = ("CRUSOE_", "LAMBDA_", "NEBIUS_", "VM_", "XDG_")


@dataclass
class Run:
    args: tuple[str, ...]
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def error(self) -> dict[str, Any]:
        """The JSON error document of a command run with -o json (the last line of stderr)."""
        return json.loads(self.err.strip().splitlines()[-1])["error"]

    def describe(self) -> str:
        return f"vm {' '.join(self.args)} -> {self.code}\n{self.err[-3000:]}"


USER_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGgLAWC6bF3K8NqzCcSE0G4cqyBqV3zZkh9q6rUa0fB1 user@reliability"


class VmHome:
    def __init__(self, path: Path, time_scale: str = "0.002") -> None:
        self.path = path
        self.time_scale = time_scale
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(PROVIDER_ENV) and k != "NO_COLOR"}
        user_home = path.parent / f"{path.name}-user"  # the clouds' own files of whoever runs the tests: not read
        user_home.mkdir(parents=True, exist_ok=True)
        # the user's own public key, which new VMs get (nobody holds its private half)
        (user_home / ".ssh").mkdir(mode=0o700, exist_ok=True)
        (user_home / ".ssh" / "id_ed25519.pub").write_text(USER_KEY + "\n")
        self.env.update(VM_HOME=str(path), HOME=str(user_home), VM_MOCK_TIME_SCALE=time_scale)
        self.ports: dict[str, int] = {}  # fixed ports of `serve`; empty: autostarted on free ports

    @property
    def mock_dir(self) -> Path:
        return self.path / "mock-clouds"

    @property
    def db(self) -> Path:
        return self.path / "vm.db"

    # ------------------------------------------------------------------------------------------ vm
    def __call__(self, *args: str, timeout: float = TIMEOUT) -> Run:
        done = vmfork.run([VM, *args], self.env, timeout)
        return Run(args, done.returncode, done.stdout, done.stderr)

    def ok(self, *args: str, timeout: float = TIMEOUT) -> Run:
        result = self(*args, timeout=timeout)
        assert result.code == 0, result.describe()
        return result

    def spawn(self, *args: str) -> subprocess.Popen[bytes]:
        """`vm ARGS` in the background, output discarded (for processes that are killed)."""
        return subprocess.Popen([VM, *args], env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)

    def kill_after(self, delay: float, *args: str) -> None:
        """Start `vm ARGS`, SIGKILL it after `delay` seconds (if it is still running) and reap it."""
        proc = self.spawn(*args)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)

    def start(self) -> None:
        """Start the mock clouds: the same `mock-clouds serve` that vm's autostart runs, forked from the fork server
        (vmfork.start_mock); where it cannot fork, the way a user's first command does (`vm providers`)."""
        if vmfork.start_mock(self.mock_dir, self.time_scale, self.env) is None:
            self.ok("providers", "-q")

    # ------------------------------------------------------------------------------------------ mocks
    def serve(self, ports: dict[str, int], scenario: Path | None = None) -> None:
        """Start the mock clouds of this home on fixed ports (the same state dir resumes its world; `scenario`
        seeds a fresh one)."""
        command = [sys.executable, "-m", "mock_clouds", "serve", "--detach", "--state-dir", str(self.mock_dir),
                   "--time-scale", self.time_scale, *(["--scenario", str(scenario)] if scenario else [])]
        for provider, port in ports.items():
            command += [f"--{provider}-port", str(port)]
        done = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=TIMEOUT, check=False)
        assert done.returncode == 0, done.stderr
        self.ports = dict(ports)

    def restart(self, down_for: float) -> None:
        """Stop the mock clouds (they save their world), wait, and serve them again on the same ports."""
        assert self.ports, "restart needs mocks started with serve(ports)"
        self.stop()
        time.sleep(down_for)
        self.serve(self.ports)

    def stop(self) -> None:
        control.stop_server(self.mock_dir)

    def endpoints(self) -> dict[str, Any]:
        return control.read_endpoints(self.mock_dir)

    def admin(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return control.admin_call(self.endpoints(), method, path, body, timeout=60.0)

    def inventory(self) -> list[dict[str, Any]]:
        """Every instance that exists in any of the three clouds (what `mock-clouds inventory` prints)."""
        return list(self.admin("GET", "/inventory")["instances"])

    def set_faults(self, provider: str, **settings: float | int) -> None:
        self.admin("POST", f"/faults/{provider}", dict(settings))

    def clear_faults(self) -> None:
        for provider in PROVIDERS:
            self.set_faults(provider, error_rate=0.0, op_failure_rate=0.0, drop_rate=0.0, latency_ms=0)

    def faults_injected(self) -> dict[str, int]:
        """Injected faults of this server's life, summed over the clouds: error, op_failure, drop, latency."""
        totals: dict[str, int] = {}
        for state in self.admin("GET", "/faults").values():
            for kind, count in state["injected"].items():
                totals[kind] = totals.get(kind, 0) + int(count)
        return totals

    def secrets(self) -> list[str]:
        """Every credential of the running mock clouds: none may ever appear in vm's output."""
        ep = self.endpoints()
        return [ep["crusoe"]["secret_key"], ep["lambda"]["api_key"], ep["nebius"]["token"], ep["admin"]["token"]]

    def config(self, text: str, mode: int = 0o600) -> Path:
        """Write VM_HOME/config.toml with this mode (the home directory is created 0700 if missing)."""
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.path / "config.toml"
        path.write_text(text)
        path.chmod(mode)
        return path

    # ------------------------------------------------------------------------------------------ store
    def store(self) -> Store:
        """The fleet store's rows: the home's SQLite file, or the PostgreSQL database of VM_STORE_URL."""
        url = self.env.get("VM_STORE_URL")
        return Store.read_url(url) if url else Store.read(self.db)


def free_ports(count: int) -> list[int]:
    """Ports free right now (bound and released at once; good enough on a test machine)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()
