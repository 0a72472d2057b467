"""The deployment examples of docs/watchdog.md (docs/deploy/), parsed and tried: the systemd unit's ExecStart, the
Kubernetes Deployment's and CronJob's container commands are `vm watchdog` command lines, and each one, run as it
is written (the `vm` of this environment in place of the unit's path) against the mock clouds, does what the
docs say: the long-running ones end with exit 0 on the SIGTERM systemd and Kubernetes send, the CronJob's pass
exits 0."""

from __future__ import annotations

import configparser
import shlex
import shutil
import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from watchdog_process import VM, Watched, wait_for

if TYPE_CHECKING:
    from conftest import VmHome

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "deploy"
STARTED = "this watchdog looks after the fleets recorded on this machine only"  # said once at start (SQLite)


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None, comment_prefixes=("#", ";"))
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # systemd keys are case-sensitive
    parser.read_string((DEPLOY / "vm-watchdog.service").read_text())
    return parser


def container(kind: str) -> dict[str, Any]:
    doc = yaml.safe_load((DEPLOY / f"watchdog-{kind}.yaml").read_text())
    pod = doc["spec"]["template"]["spec"] if kind == "deployment" else \
        doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (only,) = pod["containers"]
    (volume,) = pod["volumes"]
    assert volume["secret"]["defaultMode"] == 0o600  # vm refuses a config file others can read
    assert {e["name"] for e in only["env"]} == {"VM_HOME", "VM_STORE_URL"}
    return dict(only, pod=pod, doc=doc)


def tried_until_sigterm(vm: VmHome, argv: list[str]) -> None:
    """Run `argv` (`vm watchdog ...`) until it has started, then SIGTERM it: exit 0, said why."""
    assert Path(argv[0]).name == "vm" and argv[1] == "watchdog", argv
    watched = Watched(vm, *argv[2:])
    wait_for("the watchdog to start", lambda: watched.said(STARTED))
    assert watched.signal(signal.SIGTERM) == 0, "".join(watched.lines)
    assert watched.said("SIGTERM: finishing the current fleet's duty, then stopping")


def test_the_systemd_unit_runs_the_watchdog_and_stops_it_with_sigterm(shared_home: VmHome) -> None:
    service = unit()
    assert service["Service"]["Type"] == "simple" and service["Service"]["KillSignal"] == "SIGTERM"
    assert service["Install"]["WantedBy"] == "multi-user.target"
    argv = shlex.split(service["Service"]["ExecStart"])
    assert argv[1:] == ["watchdog", "--interval", "60"]
    tried_until_sigterm(shared_home, argv)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_finds_nothing_wrong_with_the_unit(tmp_path: Path) -> None:
    """`systemd-analyze verify`, with ExecStart's vm this environment's (the unit's path is where it is installed)."""
    text = (DEPLOY / "vm-watchdog.service").read_text()
    installed = shlex.split(unit()["Service"]["ExecStart"])[0]
    copy = tmp_path / "vm-watchdog.service"
    copy.write_text(text.replace(installed, VM))
    done = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_the_deployment_runs_two_watchdogs_stopped_with_sigterm(shared_home: VmHome) -> None:
    spec = container("deployment")
    assert spec["doc"]["kind"] == "Deployment" and spec["doc"]["spec"]["replicas"] == 2
    assert spec["pod"]["terminationGracePeriodSeconds"] >= 60
    tried_until_sigterm(shared_home, spec["command"])


def test_the_cronjob_runs_one_pass(shared_home: VmHome) -> None:
    spec = container("cronjob")
    assert spec["doc"]["kind"] == "CronJob" and spec["doc"]["spec"]["concurrencyPolicy"] == "Forbid"
    assert spec["pod"]["restartPolicy"] == "Never"
    command = spec["command"]
    assert command == ["vm", "watchdog", "--once"]
    ran = shared_home(*command[1:])
    assert ran.code == 0 and STARTED in ran.err, ran.err


@pytest.mark.parametrize("name", ["vm-watchdog.service", "watchdog-deployment.yaml", "watchdog-cronjob.yaml"])
def test_every_example_is_named_in_the_docs(name: str) -> None:
    assert f"deploy/{name}" in (DEPLOY.parent / "watchdog.md").read_text()
