"""`lambda-cloud-cli` 0.1.36 (PyPI; the `lambda-cli` command) driven as a user drives it, against the Lambda mock.

The CLI has no endpoint setting: `LambdaAPIClient(api_key, base_url="https://cloud.lambda.ai/api/v1")`
(`lambda_cloud_cli/lambda_api_client.py:5`) is built with its default by `get_client()` (`cli.py:46-54`). The
launcher below changes only that default, to the mock's URL, then runs the CLI's own module as its console script
does (`cli.py:2150` calls `app()` at import). Everything else is the CLI's: HTTP Basic auth with the key as user
(`lambda_api_client.py:7`), the key from `lambda-cli login` (`~/.lambda-cli/config.json`) or `API_KEY`, and its
back-to-back calls without any 429 handling (launch: GET /instances, GET /instance-types, POST launch), which the
mock's burst of 5 (`default_scenario.toml` `[lambda.rate_limit]`, an inference) lets through as the live API does.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mock_clouds.runner import MockClouds

DEADLINE = 60.0  # seconds: every CLI call is a fresh interpreter importing typer and rich on a slow machine
LAUNCHER = """\
import sys
import lambda_cloud_cli.lambda_api_client as api
api.LambdaAPIClient.__init__.__defaults__ = (sys.argv.pop(1),)
sys.argv[0] = "lambda-cli"
import lambda_cloud_cli.cli
"""


def _public_key(comment: str) -> str:
    """A well-formed ed25519 public key line (the mock parses the key blob, as Lambda validates it)."""

    def field(data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + data

    blob = field(b"ssh-ed25519") + field(bytes(range(32)))
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} {comment}"


class LambdaCli:
    """`lambda-cli` in a subprocess, pointed at one mock; HOME is a fresh directory (the CLI's config lives there)."""

    def __init__(self, clouds: MockClouds, home: Path) -> None:
        self.url = str(clouds.endpoints["lambda"]["url"])
        self.api_key = str(clouds.endpoints["lambda"]["api_key"])
        self.env = {k: v for k, v in os.environ.items() if k != "API_KEY"} | {"HOME": str(home), "COLUMNS": "200"}

    def run(self, *args: str, stdin: str = "") -> str:
        """Runs one command; returns its stdout. Fails the test on a non-zero exit or a traceback."""
        done = subprocess.run(
            [sys.executable, "-c", LAUNCHER, self.url, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=DEADLINE,
            check=False,
        )
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stdout, done.stderr)
        return done.stdout

    def login(self) -> None:
        out = self.run("login", stdin=self.api_key + "\n")
        assert "API key saved" in out

    def instance(self, name: str) -> dict[str, Any]:
        """`get-instance --instance-name NAME --json`: the API's instance object."""
        document: dict[str, Any] = json.loads(self.run("get-instance", "--instance-name", name, "--json"))
        return document["data"]

    def wait_status(self, name: str, status: str) -> dict[str, Any]:
        deadline = time.monotonic() + DEADLINE
        while True:
            instance = self.instance(name)
            if instance["status"] == status or time.monotonic() > deadline:
                assert instance["status"] == status, instance
                return instance
            time.sleep(0.05)


@pytest.fixture
def cli(mock_clouds_factory: Callable[..., MockClouds], tmp_path: Path) -> LambdaCli:
    lambda_cli = LambdaCli(mock_clouds_factory(providers=("lambda",)), tmp_path)
    lambda_cli.login()
    return lambda_cli


def test_login_stores_the_key_and_whoami_reads_the_account(cli: LambdaCli, tmp_path: Path) -> None:
    """`login` checks the key with GET /ssh-keys and saves it (`cli.py:148-168`); `whoami` lists the account's
    keys with it (`cli.py:179-203`): the scenario's one key, "default"."""
    config = json.loads((tmp_path / ".lambda-cli" / "config.json").read_text())
    assert config == {"api_key": cli.api_key}
    out = cli.run("whoami")
    assert "SSH keys: 1 found" in out and "• default" in out
    assert cli.api_key not in out  # the CLI masks the key


def test_instance_types_and_file_systems_as_the_scenario_sells_them(cli: LambdaCli) -> None:
    """`list-instance-types` reads `data.<name>.instance_type` {name, specs.gpus, specs.vcpus, specs.memory_gib,
    price_cents_per_hour} (`cli.py:1094-1113`); `list-file-systems` reads `data[].region` as an object
    (`cli.py:1152-1205`): spec 1.10's shapes, as the mock serves them."""
    rows = {line.split()[0]: line.split() for line in cli.run("list-instance-types").splitlines()[2:] if line}
    assert rows["gpu_1x_a10"] == ["gpu_1x_a10", "1", "30", "200", "$0.75"]
    assert rows["gpu_8x_h100_sxm5"] == ["gpu_8x_h100_sxm5", "8", "208", "1800", "$23.92"]
    assert rows["gpu_1x_gh200"] == ["gpu_1x_gh200", "1", "64", "432", "$1.49"]
    assert rows["cpu_4x_general"][1] == "0"
    assert "shared-data" in cli.run("list-file-systems", "--region", "us-south-2")


def test_full_lifecycle_ssh_key_launch_rename_billing_terminate(cli: LambdaCli) -> None:
    """Every call of a VM's life in the CLI: add-ssh-key (GET, POST /ssh-keys), launch-instance (GET /instances,
    GET /instance-types, POST /instance-operations/launch: `cli.py:209-336`), get-instance and list-instances,
    update-instance-name (POST /instances/{id}), billing, terminate-instance (POST .../terminate; the CLI prints
    `data.terminated_instances[]`, `cli.py:852-873`), delete-ssh-key (DELETE /ssh-keys/{id}). Launch answers
    `data.instance_ids` and the instance goes booting -> active with `ip` (spec 1.10; research lambda.md §4, §8)."""
    assert "SSH key added successfully" in cli.run(
        "add-ssh-key", "--name", "laptop", "--public-key", _public_key("me@laptop")
    )
    assert "laptop" in cli.run("list-ssh-keys")

    out = cli.run(
        "launch-instance",
        "--region-name",
        "us-east-1",
        "--instance-type",
        "gpu_1x_a10",
        "--ssh-key-name",
        "laptop",
        "--name",
        "train-1",
        "--yes",
    )
    assert "$0.75/hr" in out and "Instance launched successfully" in out, out
    active = cli.wait_status("train-1", "active")
    assert active["region"]["name"] == "us-east-1" and active["instance_type"]["name"] == "gpu_1x_a10"
    assert active["ssh_key_names"] == ["laptop"] and active["ip"]
    listed = cli.run("list-instances", "--region", "us-east-1")
    assert active["id"] in listed and "train-1" in listed

    assert "New name: train-2" in cli.run("update-instance-name", "--instance-name", "train-1", "--new-name", "train-2")
    assert cli.instance("train-2")["id"] == active["id"]
    assert "train-2 (gpu_1x_a10)" in cli.run("billing")

    out = cli.run("terminate-instance", "--instance-name", "train-2", "--yes")
    assert "Terminated 1 instance(s)" in out and "Status: terminating" in out and "Type: gpu_1x_a10" in out
    deadline = time.monotonic() + DEADLINE
    while "train-2" in cli.run("list-instances") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "No matching instances found" in cli.run("list-instances")

    assert "Deleted SSH key" in cli.run("delete-ssh-key", "--key-name", "laptop", "--yes")
    assert "laptop" not in cli.run("list-ssh-keys")


def test_launch_with_an_unknown_ssh_key_shows_the_api_error(cli: LambdaCli) -> None:
    """The CLI prints `error.message` and `error.suggestion` of a failed launch (`cli.py:314-318`): a launch
    naming a key the account lacks is refused, and nothing is launched (research lambda.md §6,
    `LaunchResourceNotFound` for an unknown ssh key)."""
    out = cli.run(
        "launch-instance",
        "--region-name",
        "us-east-1",
        "--instance-type",
        "gpu_1x_a10",
        "--ssh-key-name",
        "no-such-key",
        "--name",
        "nope",
        "--yes",
    )
    assert "❌" in out and "no-such-key" in out and "💡" in out
    assert "No matching instances found" in cli.run("list-instances")


def test_file_system_create_and_delete(cli: LambdaCli) -> None:
    """create-file-system posts {name, region} to POST /filesystems and prints `data.id`; delete-file-system
    resolves the name with GET /file-systems and sends DELETE /filesystems/{id} (`cli.py:1305-1480`): the
    spec's two spellings of the path (research lambda.md §2)."""
    out = cli.run("create-file-system", "--fs-name", "datasets", "--region", "us-east-1")
    assert "File system created successfully" in out and "Region: us-east-1" in out
    assert "datasets" in cli.run("list-file-systems", "--region", "us-east-1")
    # the CLI asks once more when a delete takes everything in scope, whatever --yes says
    cli.run("delete-file-system", "--fs-name", "datasets", "--region", "us-east-1", "--yes", stdin="y\n")
    assert "datasets" not in cli.run("list-file-systems")


def test_firewall_rulesets_and_global_rules(cli: LambdaCli) -> None:
    """The CLI's firewall commands (`cli.py:1485-1884`):
    get-firewall-rules (GET /firewall-rules), create/get/update/delete of a ruleset (/firewall-rulesets{,/id},
    PATCH {name, rules}), and the global ruleset (GET/PATCH /firewall-rulesets/global), spec 1.10's operations."""
    rules = cli.run("get-firewall-rules")
    assert "tcp" in rules and "22" in rules

    out = cli.run("create-firewall-ruleset", "--name", "allow-ssh", "--region", "us-east-1")
    assert "Ruleset created successfully" in out
    ruleset_id = next(line.split()[1] for line in out.splitlines() if line.startswith("ID:"))
    got = json.loads(cli.run("get-firewall-ruleset-by-id", "--ruleset-id", ruleset_id))["data"]
    assert got["name"] == "allow-ssh" and got["region"]["name"] == "us-east-1"
    assert got["rules"][0]["port_range"] == [22, 22]

    assert "Ruleset updated successfully" in cli.run(
        "update-firewall-ruleset", "--ruleset-id", ruleset_id, "--name", "ssh-only"
    )
    assert "ssh-only" in cli.run("get-firewall-rulesets", "--region", "us-east-1")
    cli.run("delete-firewall-ruleset", "--ruleset-id", ruleset_id, "--yes", stdin="y\n")  # "delete ALL?"
    assert "No firewall rulesets found" in cli.run("get-firewall-rulesets")

    assert "Global ruleset patched" in cli.run("patch-global-firewall", "--yes")
    patched = json.loads(cli.run("get-global-firewall"))["data"]
    assert patched["id"] == "global" and patched["rules"][0]["port_range"] == [22, 22]
