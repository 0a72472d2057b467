"""The `mock-clouds` command line, driven as a user would: a detached server, status, inventory, faults, stop.

These tests start real processes; the API calls use the Lambda mock because its auth is a plain bearer key.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import stat
import subprocess
import sys
import time
import tomllib
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
    for command in (["status"], ["inventory"], ["credentials", "--home", str(tmp_path / "home")]):
        result = mock_clouds(*command, "--state-dir", str(tmp_path), check=False)
        assert result.returncode == 3
        assert "no mock-clouds server is running" in result.stderr
    assert not (tmp_path / "home").exists()
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


# ----------------------------------------------------------------- mock-clouds credentials
def test_credentials_for_a_detached_tls_server(tmp_path: Path) -> None:
    """As a user runs it: `serve --detach --tls`, then `credentials`, whose stdout is for `eval`."""
    state_dir, home = tmp_path / "state", tmp_path / "home"
    mock_clouds("serve", "--detach", "--tls", "--state-dir", str(state_dir), "--time-scale", TIME_SCALE)
    try:
        result = mock_clouds("credentials", "--state-dir", str(state_dir), "--home", str(home))
        ep = endpoints(state_dir)
    finally:
        mock_clouds("stop", "--state-dir", str(state_dir), check=False)
    ca_file = shlex.quote(str(state_dir / "ca.pem"))
    lambda_root = ep["lambda"]["url"].removesuffix("/api/v1")
    assert lambda_root.startswith("https://127.0.0.1:") and ep["nebius"]["target"].startswith("localhost:")
    assert result.stdout.splitlines() == [
        f"export LAMBDA_CLOUD_BASE_URL={lambda_root}",
        f"export SSL_CERT_FILE={ca_file}",
        f"export REQUESTS_CA_BUNDLE={ca_file}",
        f"export GRPC_DEFAULT_SSL_ROOTS_FILE_PATH={ca_file}",
    ]
    config = yaml_profile(home)
    assert config["endpoint"] == ep["nebius"]["target"]
    assert tomllib.loads((home / ".crusoe/config").read_text())["default"]["api_endpoint"] == ep["crusoe"]["url"]
    _assert_nothing_secret(result.stdout + result.stderr, ep)


def yaml_profile(home: Path) -> dict[str, str]:
    """The active profile of the nebius CLI config written by `mock-clouds credentials` (read as YAML is, with
    the flat subset that file uses: `key: "json string"` lines)."""
    lines = (home / ".nebius/config.yaml").read_text().splitlines()
    assert lines[0].startswith("# ") and lines[1:3] == ["default: mock-clouds", "profiles:"]
    assert lines[3] == "  mock-clouds:"
    return {k.strip(): json.loads(v) for k, v in (line.split(": ", 1) for line in lines[4:])}


def _assert_nothing_secret(output: str, ep: dict) -> None:
    for secret in (ep["crusoe"]["secret_key"], ep["lambda"]["api_key"], ep["nebius"]["token"], "PRIVATE KEY"):
        assert secret not in output


def _credentials(state_dir: Path, home: Path, *extra: str):
    from click.testing import CliRunner
    from mock_clouds.cli import main

    return CliRunner().invoke(main, ["credentials", "--state-dir", str(state_dir), "--home", str(home), *extra])


@pytest.fixture
def written(mock_clouds_factory, tmp_path: Path):
    """An in-process server (its endpoints.json names this live process) and the files written for it."""
    clouds = mock_clouds_factory(tmp_path / "state")
    home = tmp_path / "home"
    result = _credentials(clouds.state_dir, home)
    assert result.exit_code == 0, result.output
    return clouds, home, result


def test_credentials_files_and_their_modes(written) -> None:
    clouds, home, result = written
    ep = clouds.endpoints
    names = [".crusoe/config", ".nebius/config.yaml", ".nebius/credentials.json", ".lambda_cloud/lambda_keys"]
    for name in names:
        assert stat.S_IMODE((home / name).stat().st_mode) == 0o600, name
    for directory in (home, home / ".crusoe", home / ".nebius", home / ".lambda_cloud"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    assert tomllib.loads((home / ".crusoe/config").read_text()) == {"default": {
        "access_key_id": ep["crusoe"]["access_key_id"], "secret_key": ep["crusoe"]["secret_key"],
        "default_project": "default", "api_endpoint": ep["crusoe"]["url"]}}
    assert (home / ".lambda_cloud/lambda_keys").read_text() == f"api_key = {ep['lambda']['api_key']}\n"
    assert yaml_profile(home) == {
        "endpoint": ep["nebius"]["target"], "parent-id": ep["nebius"]["project_id"],
        "auth-type": "service account",
        "service-account-credentials-file-path": str(home / ".nebius/credentials.json"),
    }
    subject = json.loads((home / ".nebius/credentials.json").read_text())["subject-credentials"]
    assert set(subject) == {"type", "alg", "private-key", "kid", "iss", "sub"}
    assert (subject["type"], subject["alg"]) == ("JWT", "RS256")
    assert subject["iss"] == subject["sub"] == ep["nebius"]["service_account_id"]
    assert subject["kid"] == ep["nebius"]["public_key_id"]
    assert subject["private-key"].startswith("-----BEGIN PRIVATE KEY-----")
    assert result.stdout == f"export LAMBDA_CLOUD_BASE_URL={ep['lambda']['url'].removesuffix('/api/v1')}\n"
    _assert_nothing_secret(result.output, ep)


def test_the_crusoe_project_name_resolves_through_the_listing(written) -> None:
    from mock_clouds.crusoe.testing import CrusoeClient

    clouds, home, _ = written
    profile = tomllib.loads((home / ".crusoe/config").read_text())["default"]
    client = CrusoeClient(profile["api_endpoint"].removesuffix("/v1alpha5"), profile["access_key_id"],
                          profile["secret_key"])
    found = client.get("/organizations/projects", params={"project_name": profile["default_project"]})
    assert found.status_code == 200
    assert [p["id"] for p in found.json()["items"]] == [clouds.endpoints["crusoe"]["project_id"]]


def test_the_nebius_credentials_file_gets_a_token(written) -> None:
    from mock_clouds import control
    from mock_clouds.nebius import testkit
    from mock_clouds.nebius._pb.nebius.compute import v1 as compute

    clouds, home, _ = written
    document = json.loads((home / ".nebius/credentials.json").read_text())
    channel, client = testkit.connect(yaml_profile(home)["endpoint"], None)
    try:
        token = client.tokens.exchange(testkit.exchange_request(testkit.subject_jwt(document))).access_token
        listed = client.with_metadata(("authorization", f"Bearer {token}")).instances.list(
            compute.ListInstancesRequest(parent_id=yaml_profile(home)["parent-id"]))
    finally:
        channel.close()
    assert listed.items == [] and control.exchange_count(clouds.endpoints) == 1


def test_existing_files_are_replaced_only_with_force(written) -> None:
    clouds, home, _ = written
    keys = home / ".lambda_cloud/lambda_keys"
    keys.write_text("api_key = a-real-key\n")
    refused = _credentials(clouds.state_dir, home)
    assert refused.exit_code == 1 and "--force" in refused.output and str(keys) in refused.output
    assert keys.read_text() == "api_key = a-real-key\n"
    assert _credentials(clouds.state_dir, home, "--force").exit_code == 0
    assert keys.read_text() == f"api_key = {clouds.endpoints['lambda']['api_key']}\n"
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600


def test_only_the_served_clouds_get_files(mock_clouds_factory, tmp_path: Path) -> None:
    clouds = mock_clouds_factory(tmp_path / "state", providers=("lambda",))
    result = _credentials(clouds.state_dir, tmp_path / "home")
    assert result.exit_code == 0, result.output
    assert sorted(p.relative_to(tmp_path / "home").as_posix() for p in (tmp_path / "home").rglob("*")
                  if p.is_file()) == [".lambda_cloud/lambda_keys"]
