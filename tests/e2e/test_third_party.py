"""A third-party provider package (tests/example_provider, installed in the test environment) driven through the
real `vm`; a broken plugin package is reported and skipped; Ctrl-C during a wait leaves the cloud action running.

These profiles do not use the embedded mock clouds, so nothing is autostarted here.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import VmHome

VM = str(Path(sys.executable).parent / "vm")


@pytest.fixture
def home(fresh_home: VmHome) -> VmHome:
    fresh_home.path.mkdir(parents=True)
    cloud = fresh_home.path / "example-cloud.json"
    fresh_home.config(f"""
default_profile = "p"
[profiles.p.example]
path = "{cloud}"
seconds = 0.05
[profiles.slow.example]
path = "{cloud}"
seconds = 120
""")
    return fresh_home


def broken_plugin_site(site: Path) -> Path:
    """An installed distribution (on PYTHONPATH) whose `vm_core.providers` entry point raises on import."""
    info = site / "vm_broken_provider-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vm-broken-provider\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[vm_core.providers]\nbroken = vm_broken_provider:plugin\n")
    (site / "vm_broken_provider.py").write_text('raise RuntimeError("broken on purpose")\n')
    return site


def test_example_provider_through_the_cli(home: VmHome) -> None:
    made = home.ok("create", "--provider", "example", "--gpu", "H100", "--name", "third", "-o", "json").json()
    assert (made["provider"], made["name"], made["state"], made["gpu"]) == ("example", "third", "running", "H100")
    vm_id = made["id"]
    listed = home.ok("list")
    assert listed.rows()[1] == ["example", vm_id, "third", "running", "H100x1", "local", "-", "1.25"]
    assert home.ok("get", vm_id, "-p", "example", "-o", "json").json()["id"] == vm_id
    assert home.ok("stop", vm_id, "-p", "example").rows()[1][3] == "stopped"
    assert home.ok("start", vm_id, "-p", "example", "-o", "json").json()["state"] == "running"
    assert home("reboot", vm_id, "-p", "example").code == 5  # the example cannot reboot: isinstance says so
    assert home.ok("destroy", vm_id, "-p", "example", "-o", "json").json()["state"] == "terminated"
    assert home.ok("destroy", vm_id, "-p", "example").code == 0
    assert home.ok("list", "-o", "json").json() == []
    providers = {p["name"]: p for p in home.ok("providers", "-o", "json").json()}
    assert providers["example"]["capabilities"] == {"stop_start": True, "reboot": False,
                                                      "lists_reservations": False}
    assert not home.mock_dir.exists()  # no mock clouds were needed


def test_broken_plugin_is_reported_and_the_others_work(home: VmHome, tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(broken_plugin_site(tmp_path / "site"))}
    table = home("providers", env=env)
    assert table.code == 0
    assert next(r for r in table.rows() if r[0] == "broken")[:6] == ["broken", "-", "broken", "?", "?", "?"]
    assert "vm: warning: provider broken: broken: cannot be loaded from vm_broken_provider:plugin: RuntimeError:" \
           " broken on purpose" in table.err
    doc = {p["name"]: p for p in home.ok("providers", "-o", "json", env=env).json()}
    assert "RuntimeError: broken on purpose" in doc["broken"]["problem"]
    assert doc["example"]["problem"] is None and doc["example"]["configured"] is True
    assert (doc["example"]["status"], doc["broken"]["status"]) == ("ok", "broken")
    made = home.ok("create", "-p", "example", "--gpu", "H100", "--name", "despite", env=env)
    assert made.rows()[1][2] == "despite"
    assert home.ok("list", "-o", "json", env=env).json()[0]["name"] == "despite"
    refused = home("list", "-p", "broken", env=env)
    assert refused.code == 2 and "provider 'broken' is installed but broken" in refused.err


def test_ctrl_c_during_a_wait_leaves_the_action_running(home: VmHome) -> None:
    proc = subprocess.Popen([VM, "create", "-p", "example", "--gpu", "H100", "--name", "interrupted",
                             "--profile", "slow"], env=home.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stderr is not None
    accepted = proc.stderr.readline()  # blocks until the cloud accepted the create
    assert "example: create interrupted (ex-" in accepted and "accepted" in accepted
    time.sleep(0.5)  # now waiting
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    vm_id = accepted.split("(")[1].split(")")[0]
    assert "vm: error: interrupted; the cloud operation keeps running: example create of interrupted" in err
    assert f"hint: follow it with `vm get {vm_id} --provider example`" in err
    assert "Traceback" not in err and out == ""
    state = home.ok("get", vm_id, "-p", "example", "--profile", "slow", "-o", "json").json()["state"]
    assert state == "creating"  # the action goes on
