"""`vm fleet stop | start` through the real executable, checked against the mock clouds' own inventory: a mixed
fleet's Crusoe and Nebius members stop and start again, its Lambda member is said with its rate and keeps
running, the fleet's state follows (stopped, then active), and a start whose reservation was taken meanwhile
falls back to on-demand with a warning."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import VmHome

STOPPABLE = ("crusoe", "nebius")
VM = str(Path(sys.executable).parent / "vm")
TIMEOUT = 300  # generous: the machine is shared and slow
# The keys docs/fleets.md "Stop and start" documents (`stopped` is `started` for a start).
KEYS = {"name", "id", "action", "actor", "state", "message", "already", "cannot_stop", "missing", "failed",
        "still_billing_per_hour", "actions"}
ACTION_KEYS = {"action", "provider", "name", "id", "state", "price_per_hour", "detail"}


def states(vm: VmHome, fleet: str) -> dict[str, str]:
    """provider -> the state of the fleet's one VM there, from the mock clouds' inventory."""
    found = {i["provider"]: i["state"] for i in vm.inventory() if i["name"].startswith(f"{fleet}--")}
    assert len(found) == 3, found
    return found


def ledger_states(vm: VmHome, fleet: str) -> dict[str, str]:
    """The state of each member's open interval in the spend ledger, by provider: a stop and a start are entered."""
    from vm_core.fleet.location import store_at

    store = store_at(vm.env.get("VM_STORE_URL") or None, vm.path)
    ours = {(v.provider, v.instance_id) for v in store.ledger_vms(open_only=True) if v.fleet == fleet}
    return {i.provider: i.state for i in store.ledger_intervals() if i.ended_at is None
            and (i.provider, i.instance_id) in ours}


def test_mixed_fleet_stops_and_starts(shared_home: VmHome) -> None:
    vm = shared_home
    made = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "3", "--name", "pw", "-o", "json").json()
    assert sorted(m["provider"] for m in made["members"]) == ["crusoe", "lambda", "nebius"]
    [rate] = [m["price_per_hour"] for m in made["members"] if m["provider"] == "lambda"]

    stopped = vm.ok("fleet", "stop", "pw", "-o", "json")
    doc = stopped.json()
    assert set(doc) == KEYS | {"stopped"} and all(set(a) == ACTION_KEYS for a in doc["actions"])
    assert (doc["id"], doc["actor"].count("@")) == (made["id"], 1)
    assert (doc["state"], doc["action"], doc["stopped"], doc["cannot_stop"], doc["failed"]) == ("stopped", "stop",
                                                                                                2, 1, 0)
    assert doc["still_billing_per_hour"] == pytest.approx(rate)
    by_provider = {a["provider"]: a for a in doc["actions"]}
    assert by_provider["lambda"]["action"] == "cannot stop" and by_provider["lambda"]["state"] == "running"
    assert all(by_provider[p]["action"] == "stopped" and by_provider[p]["state"] == "stopped" for p in STOPPABLE)
    assert f"keeps running and billing ${rate:.2f}/h" in stopped.err and "vm: warning: lambda: pw--" in stopped.err
    assert states(vm, "pw") == {"crusoe": "stopped", "nebius": "stopped", "lambda": "running"}
    assert ledger_states(vm, "pw") == {"crusoe": "stopped", "nebius": "stopped", "lambda": "running"}

    status = vm.ok("fleet", "status", "pw", "-o", "json").json()
    assert status["state"] == "stopped"
    assert sorted(m["state"] for m in status["members"]) == ["running", "stopped", "stopped"]
    assert status["price_per_hour"] == pytest.approx(rate)  # only the Lambda member bills
    [listed] = vm.ok("fleet", "list", "-o", "json").json()  # from the store: the ledger saw the stop
    assert (listed["name"], listed["state"], listed["price_per_hour"]) == ("pw", "stopped", pytest.approx(rate))
    assert sorted(m["state"] for m in listed["members"]) == ["running", "stopped", "stopped"]
    watched = vm.ok("fleet", "status", "pw", "--watch", "--interval", "0.1")  # a stopped fleet is settled
    assert "fleet pw is settled: stopped" in watched.err

    again = vm.ok("fleet", "stop", "pw", "-o", "json")
    assert again.json()["already"] == 2 and again.json()["stopped"] == 0
    assert "nothing to stop: every VM that can stop is already stopped" in again.err

    started = vm.ok("fleet", "start", "pw", "-o", "json").json()
    assert set(started) == KEYS | {"started"}
    assert (started["state"], started["started"], started["already"], started["failed"]) == ("active", 2, 1, 0)
    assert states(vm, "pw") == {"crusoe": "running", "nebius": "running", "lambda": "running"}
    assert ledger_states(vm, "pw") == {"crusoe": "running", "nebius": "running", "lambda": "running"}
    assert vm.ok("fleet", "status", "pw", "-o", "json").json()["state"] == "active"
    events = [json.loads(line) for line in vm.ok("events", "--fleet", "pw", "-o", "json").out.splitlines()]
    power = [(e["kind"], e["details"].get("stopped", e["details"].get("started"))) for e in events
             if e["kind"] in ("stopped", "started")]
    assert power == [("stopped", 2), ("started", 2)]  # the re-run that sent nothing recorded nothing
    vm.ok("fleet", "destroy", "pw")


def test_stop_table_and_unknown_fleet(shared_home: VmHome) -> None:
    vm = shared_home
    vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "pw-table", "--providers", "nebius")
    table = vm.ok("fleet", "stop", "pw-table")
    rows = table.rows()
    assert ["state", "stopped"] in rows and ["stopped", "1"] in rows and ["failed", "0"] in rows
    header = rows.index(["PROVIDER", "ID", "NAME", "RESULT", "STATE", "$/H"])
    assert rows[header + 1][0] == "nebius" and rows[header + 1][3:] == ["stopped", "stopped", "-"]
    missing = vm("fleet", "stop", "no-such-fleet", "-o", "json")
    assert missing.code == 3 and missing.error()["code"] == "not_found" and missing.out == ""
    bad = vm("fleet", "start", "Bad_Name")
    assert bad.code == 2 and "invalid fleet name" in bad.err and "Traceback" not in bad.err
    vm.ok("fleet", "destroy", "pw-table")


def test_only_lambda_is_nothing_to_stop(shared_home: VmHome) -> None:
    vm = shared_home
    vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "pw-lambda", "--providers", "lambda")
    result = vm.ok("fleet", "stop", "pw-lambda", "-o", "json")
    doc = result.json()
    assert (doc["stopped"], doc["cannot_stop"], doc["state"]) == (0, 1, "active")  # nothing stopped: as it was
    assert "nothing to stop: none of its VMs can stop" in result.err
    vm.ok("fleet", "destroy", "pw-lambda")


def test_start_whose_reservation_was_taken_falls_back_to_on_demand(fresh_home: VmHome) -> None:
    """A stop releases the Crusoe member's reservation; filled meanwhile (4 + 2 VMs of 8 GPUs fill every H100
    reservation of the scenario), the start runs the member on-demand and says so with both prices."""
    vm = fresh_home
    made = vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "1", "--name", "pw-res", "--providers", "crusoe",
                 "-o", "json").json()
    [member] = made["members"]
    assert member["reserved"]
    vm.ok("fleet", "stop", "pw-res")
    fillers = vm.ok("create", "-p", "crusoe", "--gpu", "H100:8", "--count", "6", "--name", "fill", "-o", "json")
    assert all(f["reserved"] for f in fillers.json())
    started = vm.ok("fleet", "start", "pw-res", "-o", "json")
    [action] = started.json()["actions"]
    assert action["action"] == "started" and action["state"] == "running"
    assert action["price_per_hour"] > member["price_per_hour"]
    note = (f"started on-demand at ${action['price_per_hour']:.2f}/h: reservation {member['reservation_id']} "
            f"(${member['price_per_hour']:.2f}/h) has no room for it")
    assert action["detail"] == note and f"vm: warning: crusoe: {member['name']}: {note}" in started.err
    [now] = vm.ok("fleet", "status", "pw-res", "-o", "json").json()["members"]
    assert (now["reserved"], now["price_per_hour"]) == (False, action["price_per_hour"])
    listed = vm.ok("fleet", "list", "-o", "json").json()[0]["members"][0]
    assert (listed["reservation_id"], listed["price_per_hour"]) == ("", action["price_per_hour"])  # recorded


def test_a_stop_that_fails_is_exit_7_and_a_rerun_finishes_it(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "2", "--name", "pw-fail", "--providers", "crusoe,nebius")
    assert vm.mock("faults", "--provider", "crusoe", "--op-failure-rate", "1").returncode == 0
    failed = vm("fleet", "stop", "pw-fail", "-o", "json")
    assert failed.code == 7, failed.err
    doc = failed.json()
    assert (doc["stopped"], doc["failed"], doc["state"]) == (1, 1, "active")  # fell short: the state as it was
    [crusoe] = [a for a in doc["actions"] if a["provider"] == "crusoe"]
    assert crusoe["action"] == "failed" and crusoe["detail"]
    error = failed.error()
    assert error["code"] == "partial_failure" and "1 of 2 VM(s) could not be stopped" in error["message"]
    assert "Traceback" not in failed.err
    assert vm.ok("fleet", "status", "pw-fail", "-o", "json").json()["state"] == "degraded"  # one of two runs
    assert vm.mock("faults", "--provider", "crusoe", "--op-failure-rate", "0").returncode == 0
    again = vm.ok("fleet", "stop", "pw-fail", "-o", "json").json()
    assert (again["stopped"], again["already"], again["state"]) == (1, 1, "stopped")
    assert {i["provider"]: i["state"] for i in vm.inventory() if i["name"].startswith("pw-fail--")} == {
        "crusoe": "stopped", "nebius": "stopped"}
    vm.ok("fleet", "destroy", "pw-fail")  # a stopped fleet is destroyed like any other
    assert [i for i in vm.inventory() if i["name"].startswith("pw-fail--") and i["state"] != "terminated"] == []


def test_ctrl_c_names_the_stops_that_go_on_and_a_rerun_finishes(fresh_home: VmHome) -> None:
    """SIGINT once Crusoe accepted its member's stop (every Crusoe call then takes 3 s, so vm is still waiting):
    exit 130 naming the operation that goes on, the lease released, and a re-run ends with the fleet stopped."""
    vm = fresh_home
    vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "2", "--name", "pw-int", "--providers", "crusoe,nebius")
    assert vm.mock("faults", "--provider", "crusoe", "--latency-ms", "3000").returncode == 0
    proc = subprocess.Popen([VM, "fleet", "stop", "pw-int"], env=vm.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: list[str] = []
    assert proc.stderr is not None
    stderr = proc.stderr
    reader = threading.Thread(target=lambda: lines.extend(iter(stderr.readline, "")), daemon=True)
    reader.start()
    deadline = time.monotonic() + TIMEOUT
    while not any(line.startswith("crusoe: stop pw-int--") and "accepted" in line for line in lines):
        assert proc.poll() is None and time.monotonic() < deadline, lines
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C on a terminal does: the whole foreground group
    proc.wait(timeout=TIMEOUT)
    reader.join(timeout=TIMEOUT)
    err = "".join(lines)
    assert proc.returncode == 130, err
    assert "interrupted; the cloud operation keeps running: " in err and "crusoe stop of pw-int--" in err
    assert "Traceback" not in err
    assert vm.mock("faults", "--provider", "crusoe", "--latency-ms", "0").returncode == 0
    again = vm.ok("fleet", "stop", "pw-int", "-o", "json").json()  # the lease was released: no refusal
    assert again["state"] == "stopped" and again["failed"] == 0
    assert {i["provider"]: i["state"] for i in vm.inventory() if i["name"].startswith("pw-int--")} == {
        "crusoe": "stopped", "nebius": "stopped"}


def test_a_stopped_fleet_stays_stopped_under_reconcile_and_is_neither_scaled_nor_repaired(shared_home: VmHome) -> None:
    vm = shared_home
    vm.ok("fleet", "create", "--gpu", "H100:8", "--count", "2", "--providers", "crusoe,nebius", "--name", "pw-kept")
    vm.ok("fleet", "stop", "pw-kept")
    assert vm.ok("fleet", "reconcile", "pw-kept", "-o", "json").json()["state"] == "stopped"
    for verb in (("scale", "pw-kept", "--count", "3"), ("repair", "pw-kept")):
        refused = vm("fleet", *verb, "-o", "json")
        assert refused.code == 2 and "fleet pw-kept is stopped: start it before" in refused.error()["message"]
        assert "vm fleet start pw-kept" in refused.err, refused.err
    assert {i["provider"]: i["state"] for i in vm.inventory() if i["name"].startswith("pw-kept--")} == {
        "crusoe": "stopped", "nebius": "stopped"}
    vm.ok("fleet", "destroy", "pw-kept")
