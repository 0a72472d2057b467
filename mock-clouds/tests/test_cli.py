"""The `mock-clouds` command line, driven as a user would: a detached server, status, inventory, faults, stop.

These tests start real processes; the API calls use the Lambda mock because its auth is a plain bearer key.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

TIME_SCALE = "0.002"


def mock_clouds(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "mock_clouds", *args], capture_output=True, text=True,
                            timeout=60, stdin=subprocess.DEVNULL)
    if check and result.returncode != 0:
        raise AssertionError(f"mock-clouds {args} exited {result.returncode}: {result.stderr}")
    return result


@pytest.fixture
def server(tmp_path: Path):
    state_dir = tmp_path / "state"
    mock_clouds("serve", "--detach", "--state-dir", str(state_dir), "--time-scale", TIME_SCALE)
    yield state_dir
    mock_clouds("stop", "--state-dir", str(state_dir), check=False)


def endpoints(state_dir: Path) -> dict:
    return json.loads((state_dir / "endpoints.json").read_text())


def lambda_call(state_dir: Path, method: str, path: str, body: dict | None = None) -> requests.Response:
    ep = endpoints(state_dir)["lambda"]
    for _ in range(100):  # the mock enforces Lambda's 1 request/s (scaled): wait out a 429
        resp = requests.request(method, ep["url"] + path, json=body, timeout=10,
                                headers={"Authorization": f"Bearer {ep['api_key']}"})
        if resp.status_code != 429:
            return resp
        time.sleep(0.05)
    raise AssertionError("still rate limited")


def launch(state_dir: Path, name: str) -> str:
    resp = lambda_call(state_dir, "POST", "/instance-operations/launch", {
        "region_name": "us-south-2", "instance_type_name": "gpu_1x_h100_sxm5",
        "ssh_key_names": ["default"], "name": name,
    })
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["instance_ids"][0]


def inventory(state_dir: Path) -> list[dict]:
    return json.loads(mock_clouds("inventory", "--state-dir", str(state_dir), "-o", "json").stdout)


def test_detached_server_writes_private_endpoints_and_answers(server: Path) -> None:
    path = server / "endpoints.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    ep = endpoints(server)
    assert ep["crusoe"]["url"].startswith("http://127.0.0.1:") and ep["crusoe"]["url"].endswith("/v1alpha5")
    assert set(ep["crusoe"]) >= {"access_key_id", "secret_key", "project_id", "organization_id"}
    assert ep["lambda"]["url"].endswith("/api/v1") and ep["lambda"]["api_key"]
    assert ep["nebius"]["project_id"].startswith("project-") and ep["nebius"]["token"]
    status = mock_clouds("status", "--state-dir", str(server))
    assert f"pid {ep['pid']}" in status.stdout
    assert lambda_call(server, "GET", "/instance-types").status_code == 200


def test_second_server_on_the_same_state_dir_is_refused(server: Path) -> None:
    result = mock_clouds("serve", "--detach", "--state-dir", str(server), check=False)
    assert result.returncode == 1
    assert "already running" in result.stderr


def test_inventory_lists_instances_of_every_cloud(server: Path) -> None:
    instance_id = launch(server, "inv-1")
    rows = inventory(server)
    assert [(r["provider"], r["id"], r["name"]) for r in rows] == [("lambda", instance_id, "inv-1")]
    table = mock_clouds("inventory", "--state-dir", str(server)).stdout
    assert table.splitlines()[0].split()[:4] == ["PROVIDER", "ID", "NAME", "STATE"]
    assert instance_id in table


def test_state_survives_stop_and_restart(server: Path) -> None:
    instance_id = launch(server, "survivor")
    mock_clouds("stop", "--state-dir", str(server))
    assert not (server / "endpoints.json").exists()
    assert mock_clouds("status", "--state-dir", str(server), check=False).returncode == 3
    mock_clouds("serve", "--detach", "--state-dir", str(server), "--time-scale", TIME_SCALE)
    assert [r["id"] for r in inventory(server)] == [instance_id]
    resp = lambda_call(server, "GET", f"/instances/{instance_id}")
    assert resp.status_code == 200 and resp.json()["data"]["name"] == "survivor"


def test_sigterm_saves_state_written_just_before(server: Path) -> None:
    instance_id = launch(server, "last-second")
    os.kill(endpoints(server)["pid"], signal.SIGTERM)
    deadline = time.monotonic() + 20
    while (server / "endpoints.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    state = json.loads((server / "state.json").read_text())
    assert f"lambda:{instance_id}" in state["vms"]


def test_faults_change_a_running_server(server: Path) -> None:
    out = mock_clouds("faults", "--state-dir", str(server), "--provider", "lambda", "--error-rate", "1",
                      "--seed", "5").stdout
    assert "error_rate=1.0" in out and "seed=5" in out
    ep = endpoints(server)["lambda"]
    resp = requests.get(ep["url"] + "/instances", headers={"Authorization": f"Bearer {ep['api_key']}"},
                        timeout=10)
    assert resp.status_code in (429, 500, 503)
    assert set(resp.json()["error"]) >= {"code", "message"}
    mock_clouds("faults", "--state-dir", str(server), "--provider", "lambda", "--error-rate", "0")
    assert lambda_call(server, "GET", "/instances").status_code == 200


def test_commands_without_a_server_exit_3(tmp_path: Path) -> None:
    for command in ("status", "inventory"):
        result = mock_clouds(command, "--state-dir", str(tmp_path), check=False)
        assert result.returncode == 3
        assert "no mock-clouds server is running" in result.stderr
    assert mock_clouds("stop", "--state-dir", str(tmp_path)).stdout.strip() == "mock-clouds: not running"


def test_bad_arguments_are_usage_errors(tmp_path: Path) -> None:
    result = mock_clouds("faults", "--state-dir", str(tmp_path), "--provider", "aws", check=False)
    assert result.returncode == 2 and "'aws' is not one of" in result.stderr
    result = mock_clouds("serve", "--time-scale", "-1", "--state-dir", str(tmp_path), check=False)
    assert result.returncode == 2


def test_corrupt_state_file_is_reported_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text("{not json")
    result = mock_clouds("serve", "--state-dir", str(tmp_path), check=False)
    assert result.returncode == 1
    assert "not a valid mock-clouds state file" in result.stderr and "Traceback" not in result.stderr
