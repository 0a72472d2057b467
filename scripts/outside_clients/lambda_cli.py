"""`lambda-cloud-cli` 0.1.36 (PyPI; its `lambda-cli` command) driven as a user drives it, against the Lambda mock.

Each command is a fresh `lambda-cli` process with HOME pointing at a scratch directory (the CLI keeps its key in
`~/.lambda-cli/config.json`). Calls: login, whoami, list-instance-types, list-file-systems, add-ssh-key,
list-ssh-keys, launch-instance (GET /instances, GET /instance-types, POST launch, back to back), get-instance until
active, list-instances, update-instance-name, terminate-instance, list-instances until gone, delete-ssh-key,
get-firewall-rules.

Patched: the CLI has no endpoint setting; `LambdaAPIClient.__init__`'s default `base_url`
(`https://cloud.lambda.ai/api/v1`) is replaced by the mock's URL before the CLI's module runs, as its console
script runs it (the same three-line launcher as `tests/conformance/test_lambda_cloud_cli.py`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from _dstack import PUBLIC_KEY
from _report import Report, endpoints, wait_until

LAUNCHER = """\
import sys
import lambda_cloud_cli.lambda_api_client as api
api.LambdaAPIClient.__init__.__defaults__ = (sys.argv.pop(1),)
sys.argv[0] = "lambda-cli"
import lambda_cloud_cli.cli
"""
REGION = "us-east-1"
TYPE = "gpu_1x_a10"


class Cli:
    def __init__(self, url: str) -> None:
        self.url = url
        home = tempfile.mkdtemp(prefix="lambda-cli-home-")
        self.env = {k: v for k, v in os.environ.items() if k != "API_KEY"} | {"HOME": home, "COLUMNS": "200"}

    def __call__(self, *args: str, stdin: str = "") -> str:
        """Runs one command; returns stdout. Raises RuntimeError on a non-zero exit or a traceback."""
        done = subprocess.run([sys.executable, "-c", LAUNCHER, self.url, *args], input=stdin, capture_output=True,
                              text=True, env=self.env, timeout=120, check=False)
        if done.returncode != 0 or "Traceback" in done.stderr:
            raise RuntimeError(f"exit {done.returncode}: {(done.stdout + done.stderr)[-300:]}")
        return done.stdout

    def instance(self, name: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self("get-instance", "--instance-name", name, "--json"))["data"]
        return data


def expect(text: str, *needles: str) -> str:
    missing = [n for n in needles if n not in text]
    if missing:
        raise AssertionError(f"{missing} not in output: {text[-300:]}")
    return text.strip().splitlines()[-1][:120] if text.strip() else ""


def main() -> int:
    report = Report("lambda-cloud-cli")
    lam = endpoints()["lambda"]
    cli = Cli(lam["url"])
    pause = 0.2  # a person types slower than this; the CLI itself sends its calls back to back

    report.run("login (GET /ssh-keys, key saved)", lambda: expect(cli("login", stdin=lam["api_key"] + "\n"),
                                                                   "API key saved"), str)
    report.run("whoami", lambda: expect(cli("whoami"), "SSH keys"), str)
    report.run("list-instance-types", lambda: expect(cli("list-instance-types"), TYPE), str)
    report.run("list-file-systems", lambda: expect(cli("list-file-systems")), str)
    report.run("add-ssh-key", lambda: expect(cli("add-ssh-key", "--name", "oc-laptop", "--public-key", PUBLIC_KEY),
                                             "SSH key added successfully"), str)
    report.run("list-ssh-keys", lambda: expect(cli("list-ssh-keys"), "oc-laptop"), str)
    time.sleep(pause)
    report.run("launch-instance (GET /instances, GET /instance-types, POST launch)",
               lambda: expect(cli("launch-instance", "--region-name", REGION, "--instance-type", TYPE,
                                  "--ssh-key-name", "oc-laptop", "--name", "oc-cli-1", "--yes"),
                              "Instance launched successfully"), str)
    active = report.run("get-instance until active (ip set)",
                        lambda: wait_until(lambda: (lambda i: i if i["status"] == "active" and i.get("ip") else None)(
                            cli.instance("oc-cli-1")), 120, 1), lambda i: f"{i['id']} {i['ip']}")
    report.run("list-instances", lambda: expect(cli("list-instances", "--region", REGION), "oc-cli-1"), str)
    report.run("update-instance-name (POST /instances/{id})",
               lambda: expect(cli("update-instance-name", "--instance-name", "oc-cli-1", "--new-name", "oc-cli-2"),
                              "New name: oc-cli-2"), str)
    if active is not None:
        report.run("get-instance by the new name", lambda: (cli.instance("oc-cli-2")["id"] == active["id"])
                   or (_ for _ in ()).throw(AssertionError("another instance")), lambda _: "same id")
    report.run("billing", lambda: expect(cli("billing")), str)
    time.sleep(pause)
    report.run("terminate-instance", lambda: expect(cli("terminate-instance", "--instance-name", "oc-cli-2", "--yes"),
                                                    "Terminated 1 instance(s)"), str)
    report.run("list-instances until gone",
               lambda: wait_until(lambda: "oc-cli-2" not in cli("list-instances"), 120, 1), lambda _: "gone")
    report.run("delete-ssh-key", lambda: expect(cli("delete-ssh-key", "--key-name", "oc-laptop", "--yes"),
                                                "Deleted SSH key"), str)
    report.run("get-firewall-rules", lambda: expect(cli("get-firewall-rules"), "tcp"), str)
    return 1 if report.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
