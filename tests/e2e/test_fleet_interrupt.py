"""Ctrl-C during `vm fleet create` through the real executable, with Lambda's real pacing (one launch per 12 s,
one request per second: the profile's settings) on the mock clouds: a launch not sent when SIGINT reaches the
process group is never sent, and the command ends as soon as the calls in flight are recorded. The mock's own
record of each VM (its `created_at`) is the ground truth."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conftest import VmHome

VM = str(Path(sys.executable).parent / "vm")
LAUNCH_INTERVAL = 12.0  # Lambda's documented limit, as the profile sets it
PACED = f"""
[profiles.paced]
embedded = true

[profiles.paced.lambda]
request_interval = 1.0
launch_interval = {LAUNCH_INTERVAL}
"""
DEADLINE = 120.0  # seconds to wait for something that must happen; never a pass condition


def fleet_vms(vm: VmHome, fleet: str) -> list[dict[str, Any]]:
    return [i for i in vm.inventory() if i["name"].startswith(f"{fleet}--")]


def created_at(vm: VmHome, fleet: str) -> list[float]:
    """When the mock created each VM of the fleet (its saved state, written when it stops)."""
    vm.stop()
    state = json.loads((vm.mock_dir / "state.json").read_text())
    return sorted(v["created_at"] for v in state["vms"].values() if v["name"].startswith(f"{fleet}--"))


def test_ctrl_c_sends_no_queued_launch_and_ends_after_the_calls_in_flight(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.config(PACED)
    vm.ok("providers", "--profile", "paced")  # the mock clouds run before the create (not in its process group)
    proc = subprocess.Popen([VM, "fleet", "create", "--gpu", "H100", "--count", "6", "--name", "cc3",
                             "--providers", "lambda", "--profile", "paced"], env=vm.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + DEADLINE
    while not (launched := fleet_vms(vm, "cc3")):  # the first launch went out; the next is 12 s away
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    interrupted_at = time.time()
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C on a terminal does: the whole foreground group
    _, err = proc.communicate(timeout=300)
    ended_at = time.time()

    assert proc.returncode == 130, err
    assert "interrupted: no new VMs are started" in err
    made = fleet_vms(vm, "cc3")
    assert [i["id"] for i in made] == [i["id"] for i in launched], err  # no launch after Ctrl-C
    not_started = [line for line in err.splitlines() if line.endswith(": not started (interrupted)")]
    assert len(not_started) == 6 - len(made) and all(line.startswith("slot ") for line in not_started), err
    # it ended before the next launch would have been due: it did not wait for queued launches (nor boots)
    assert ended_at - interrupted_at < LAUNCH_INTERVAL, err
    status = vm.ok("fleet", "status", "cc3", "--profile", "paced", "-o", "json").json()
    assert status["state"] == "interrupted" and len(status["members"]) == len(made), status
    destroyed = vm("fleet", "destroy", "cc3", "--profile", "paced")
    assert destroyed.code == 0, destroyed.err
    assert all(when < interrupted_at + LAUNCH_INTERVAL / 2 for when in created_at(vm, "cc3"))
