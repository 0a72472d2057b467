"""Maintained fleets through the real executable: `vm fleet create --maintain` records it, `vm fleet maintain
NAME on|off` changes it under the fleet's lease (refused while another process holds it), and the spot options a
maintained fleet's replacements follow are recorded with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import VmHome

VM = str(Path(sys.executable).parent / "vm")
DEADLINE = 120.0  # seconds to wait for something that must happen; never a pass condition


def maintained(vm: VmHome, name: str) -> bool:
    """Whether the store records the fleet maintained, as `vm fleet maintain` reports it (changing nothing)."""
    doc = vm.ok("fleet", "maintain", name, "on", "-o", "json").json()
    if not doc["changed"]:
        return True
    vm.ok("fleet", "maintain", name, "off")
    return False


def test_maintain_is_recorded_and_switched_on_and_off(shared_home: VmHome) -> None:
    vm = shared_home
    vm.ok("fleet", "create", "--gpu", "H100", "--count", "2", "--providers", "nebius", "--reservation", "none",
          "--spot", "--on-demand-base", "1", "--spot-fallback", "--maintain", "--name", "kept")
    assert maintained(vm, "kept")
    [listed] = [f for f in vm.ok("fleet", "list", "-o", "json").json() if f["name"] == "kept"]
    assert (listed["maintain"], listed["spot"], listed["on_demand_base"], listed["spot_fallback"]) == (True, True, 1,
                                                                                                     True)
    assert sorted(m["spot"] for m in listed["members"]) == [False, True]  # the on-demand base, then spot
    off = vm.ok("fleet", "maintain", "kept", "off", "-o", "json").json()
    assert off == {"name": "kept", "id": off["id"], "maintain": False, "changed": True, "state": "active"}
    again = vm.ok("fleet", "maintain", "kept", "off")
    assert "no (it already was)" in again.out
    assert not maintained(vm, "kept")
    on = vm.ok("fleet", "maintain", "kept", "on").out
    assert "maintain  on" in on and "changed   yes" in on
    vm.ok("fleet", "destroy", "kept", "--yes")


def test_maintain_of_an_unknown_fleet_or_a_bad_switch_changes_nothing(shared_home: VmHome) -> None:
    missing = shared_home("fleet", "maintain", "nosuch", "on", "-o", "json")
    assert missing.code == 3 and missing.error()["code"] == "not_found", missing.err
    bad = shared_home("fleet", "maintain", "nosuch", "sometimes")
    assert bad.code == 2 and "Traceback" not in bad.err
    assert shared_home("fleet", "status", "nosuch").code == 3


def test_maintain_waits_for_no_one_while_another_process_holds_the_lease(fresh_home: VmHome) -> None:
    vm = fresh_home
    # a create waiting for capacity holds its fleet's lease all along: here a cap no plan fits under
    proc = subprocess.Popen([VM, "fleet", "create", "--gpu", "H100:8", "--count", "2", "--providers", "crusoe",
                             "--max-price", "1", "--wait-for-capacity", "10m", "--name", "held"], env=vm.env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + DEADLINE
    while (shown := vm("fleet", "status", "held", "-o", "json")).code != 0 or \
            "placeable" not in json.loads(shown.out)["message"]:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    refused = vm("fleet", "maintain", "held", "on", "-o", "json")
    assert refused.code == 2 and "fleet create" in refused.error()["message"], refused.err
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert vm.ok("fleet", "maintain", "held", "on", "-o", "json").json()["changed"] is True
    vm.ok("fleet", "destroy", "held", "--yes")
