"""Finding and controlling a mock-clouds server from another process, through DIR/endpoints.json."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

ENDPOINTS_FILE = "endpoints.json"  # written by the server (runner.MockClouds) into its state directory


class NotRunning(Exception):
    """No live mock-clouds server owns the state directory."""


def default_state_dir() -> Path:
    """Where `vm` keeps the mock clouds it starts: $VM_HOME/mock-clouds, else $XDG_STATE_HOME/vm/mock-clouds
    (~/.local/state/vm/mock-clouds), so `mock-clouds status` finds them without --state-dir."""
    if home := os.environ.get("VM_HOME"):
        return Path(home).expanduser() / "mock-clouds"
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "vm" / "mock-clouds"


def read_endpoints(state_dir: Path) -> dict[str, Any]:
    """The endpoints document of the live server; raises NotRunning when absent or its process is gone."""
    try:
        endpoints: dict[str, Any] = json.loads((state_dir / ENDPOINTS_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError) as exc:
        raise NotRunning(f"no mock-clouds server is running for {state_dir}") from exc
    if not pid_alive(int(endpoints.get("pid", 0))):
        raise NotRunning(f"the mock-clouds server of {state_dir} (pid {endpoints.get('pid')}) is not running")
    return endpoints


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return False


def admin_call(endpoints: dict[str, Any], method: str, path: str, body: dict[str, Any] | None = None,
               timeout: float = 5.0) -> Any:
    """Call the admin API; raises NotRunning when it does not answer, RuntimeError on an error answer."""
    import urllib.error  # here, not at the top: `vm` reads endpoints on every command and calls the admin API
    import urllib.request  # rarely; urllib.request costs 10-15 ms to import

    admin = endpoints["admin"]
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(admin["url"] + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {admin['token']}")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        raise RuntimeError(json.loads(exc.read() or b"{}").get("error", str(exc))) from exc
    except (urllib.error.URLError, OSError) as exc:
        raise NotRunning(f"the mock-clouds admin API at {admin['url']} does not answer: {exc}") from exc


def wait_until_ready(state_dir: Path, pid: int, deadline: float) -> dict[str, Any]:
    """Block until the server with `pid` answers its health check; raises TimeoutError or NotRunning."""
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            raise NotRunning(f"mock-clouds (pid {pid}) exited during start-up; see {state_dir / 'server.log'}")
        try:
            endpoints = read_endpoints(state_dir)
            if endpoints.get("pid") == pid and admin_call(endpoints, "GET", "/health", timeout=1.0)["ok"]:
                return endpoints
        except NotRunning:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"mock-clouds (pid {pid}) did not become ready in time")


def stop_server(state_dir: Path, timeout: float = 10.0) -> int | None:
    """SIGTERM the server and wait for it to exit (SIGKILL after `timeout`). Returns its pid, or None. A server
    that exits on its own meanwhile is stopped too (nothing is raised)."""
    try:
        pid = int(read_endpoints(state_dir)["pid"])
    except NotRunning:
        return None
    _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_alive(pid):
        _signal(pid, signal.SIGKILL)
    return pid


def _signal(pid: int, signum: int) -> None:
    """Send `signum` to `pid` unless it has already exited."""
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return


# ----------------------------------------------------------------- Nebius IAM (mock extensions, admin API)
def token_exchanges(endpoints: dict[str, Any]) -> dict[str, Any]:
    """The Nebius token exchanges so far: {"count", "token_lifetime", "expires_in", "exchanges": [{"at",
    "service_account_id", "expires_at"}]} (`count` covers every exchange, the list only the recent ones)."""
    result: dict[str, Any] = admin_call(endpoints, "GET", "/nebius/token-exchanges")
    return result


def exchange_count(endpoints: dict[str, Any]) -> int:
    """How many access tokens the Nebius token exchange has issued: tests count renewals with it."""
    return int(token_exchanges(endpoints)["count"])


def set_token_lifetime(endpoints: dict[str, Any], seconds: float) -> dict[str, Any]:
    """Make the tokens the Nebius token exchange issues from now on last `seconds` (before the time scale).
    Returns {"token_lifetime", "expires_in"}; RuntimeError for a value the server refuses."""
    result: dict[str, Any] = admin_call(endpoints, "POST", "/nebius/token-lifetime", {"token_lifetime": seconds})
    return result


def nebius_service_account_credentials(endpoints: dict[str, Any], service_account_id: str = "") -> dict[str, Any]:
    """The credentials file of a Nebius service account (default: the one in endpoints.json), as pysdk reads
    it. It holds the account's private key: write it to a 0600 file, never to a log."""
    account = service_account_id or endpoints["nebius"]["service_account_id"]
    result: dict[str, Any] = admin_call(endpoints, "GET", f"/nebius/service-accounts/{account}/credentials")
    return result
