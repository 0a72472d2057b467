"""`vm fleet create --wait-for-capacity` through the real executable, with capacity arranged in the mock clouds:
another fleet holds all of Crusoe's on-demand H100:8 capacity (the cloud publishes it, so the wait reads offers and
creates nothing), and capacity appears when that fleet shrinks. The mock inventory is the ground truth: a waiting
fleet has no VM, a placed one has every VM, and one that gave up has none."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conftest import VmHome

VM = str(Path(sys.executable).parent / "vm")
DEADLINE = 120.0  # seconds to wait for something that must happen; never a pass condition
ON_DEMAND = 6  # Crusoe's on-demand H100:8 VMs in the default scenario (4 in us-east1-a, 2 in us-southcentral1-a)
WAITER = ("fleet", "create", "--gpu", "H100:8", "--count", "2", "--providers", "crusoe", "--reservation", "none")


def live(vm: VmHome, fleet: str) -> list[dict[str, Any]]:
    return [i for i in vm.inventory() if i["name"].startswith(f"{fleet}--") and i["state"] != "terminated"]


def hold_capacity(vm: VmHome) -> None:
    """A fleet that takes every on-demand H100:8 VM Crusoe has (its offers then say capacity 0)."""
    vm.ok("fleet", "create", "--gpu", "H100:8", "--count", str(ON_DEMAND), "--providers", "crusoe",
          "--reservation", "none", "--name", "hog")
    offers = vm.ok("offers", "--gpu", "H100:8", "--provider", "crusoe", "--all", "-o", "json").json()
    assert all(o["capacity"] == 0 for o in offers if not o["reservation_id"]), offers


def free_capacity(vm: VmHome) -> None:
    vm.ok("fleet", "scale", "hog", "--count", str(ON_DEMAND - 2), "--min-count", "1")


def attempts(vm: VmHome, fleet: str) -> int:
    """The create attempts vm ever recorded for the fleet: each is a member row written before its call, so 0
    means no create was sent (the store's file, read only)."""
    with closing(sqlite3.connect(f"file:{vm.path / 'vm.db'}?mode=ro", uri=True)) as db:
        return int(db.execute("SELECT COUNT(*) FROM members WHERE fleet = ?", (fleet,)).fetchone()[0])


def start(vm: VmHome, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([VM, *args], env=vm.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def until_waiting(vm: VmHome, fleet: str, proc: subprocess.Popen[str]) -> dict[str, Any]:
    """The fleet's status once it is recorded waiting and has said how many VMs are placeable."""
    deadline = time.monotonic() + DEADLINE
    while True:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        shown = vm("fleet", "status", fleet, "-o", "json")
        doc: dict[str, Any] = json.loads(shown.out) if shown.code == 0 else {}
        if doc.get("state") == "waiting" and "placeable" in doc["message"]:
            return doc
        time.sleep(0.1)


def test_a_waiting_fleet_is_placed_once_capacity_appears(fresh_home: VmHome) -> None:
    vm = fresh_home
    hold_capacity(vm)
    proc = start(vm, *WAITER, "--wait-for-capacity", "10m", "--ttl", "1h", "--name", "patient", "-o", "json")
    doc = until_waiting(vm, "patient", proc)
    waiting_expiry = datetime.fromisoformat(doc["expires_at"]).timestamp()
    assert waiting_expiry > time.time() + 600 + 3600 - 60  # the ttl counts from the placement: reap leaves it
    assert doc["message"].startswith("waiting for capacity: 0 of 2 H100:8 placeable now; until "), doc
    assert doc["members"] == [] and live(vm, "patient") == []
    time.sleep(1.0)  # several checks later (0.2 s apart at this time scale): still no create sent
    assert attempts(vm, "patient") == 0
    text = vm.ok("fleet", "status", "patient").out
    assert "waiting for capacity: 0 of 2" in text and "until" in text  # the table says what it waits for
    freed_at = time.time()
    free_capacity(vm)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    placed = json.loads(out)
    assert placed["state"] == "active" and len(placed["members"]) == 2, placed
    assert freed_at + 3600 <= datetime.fromisoformat(placed["expires_at"]).timestamp() <= time.time() + 3600
    assert len(live(vm, "patient")) == 2
    assert "capacity for 2 VM(s): placing fleet patient" in err
    vm.ok("fleet", "destroy", "patient", "--yes")
    vm.ok("fleet", "destroy", "hog", "--yes")


def test_ctrl_c_while_waiting_leaves_it_waiting_and_the_same_command_goes_on(fresh_home: VmHome) -> None:
    vm = fresh_home
    hold_capacity(vm)
    args = (*WAITER, "--wait-for-capacity", "10m", "--name", "resumed")
    proc = start(vm, *args)
    first = until_waiting(vm, "resumed", proc)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C on a terminal does: the whole foreground group
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert "still waiting for capacity" in err and "re-run the same command" in err, err
    after = vm.ok("fleet", "status", "resumed", "-o", "json").json()
    assert after["state"] == "waiting" and after["id"] == first["id"] and live(vm, "resumed") == []
    held = vm.ok("fleet", "maintain", "resumed", "on", "-o", "json").json()  # takes the lease: it was released
    assert held["maintain"] is True and held["changed"] is True
    piecemeal = vm("fleet", "repair", "resumed", "-o", "json")  # a waiting fleet is placed whole, by its create
    assert piecemeal.code == 2 and "is waiting for capacity" in piecemeal.error()["message"], piecemeal.err
    assert live(vm, "resumed") == []

    again = start(vm, *args, "-o", "json")
    until_waiting(vm, "resumed", again)
    free_capacity(vm)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert "fleet resumed is waiting for capacity: going on" in err
    placed = json.loads(out)
    assert placed["state"] == "active" and placed["id"] == first["id"] and len(live(vm, "resumed")) == 2
    vm.ok("fleet", "destroy", "resumed", "--yes")
    vm.ok("fleet", "destroy", "hog", "--yes")


def test_the_price_cap_holds_while_waiting_and_giving_up_leaves_nothing(fresh_home: VmHome) -> None:
    vm = fresh_home
    # Crusoe has room for two on-demand H100:8 VMs, at $31.20/h each: above a $40/h cap for the fleet
    result = vm(*WAITER, "--max-price", "40", "--wait-for-capacity", "3s", "--name", "thrifty", "-o", "json")
    assert result.code == 6, result.err
    assert "above the cap" in result.err and "placeable now" in result.err
    assert "gave up waiting for capacity after 3s; nothing of it is left" in result.error()["message"]
    doc = vm.ok("fleet", "status", "thrifty", "-o", "json").json()
    assert doc["state"] == "failed" and doc["members"] == []
    assert live(vm, "thrifty") == [] and attempts(vm, "thrifty") == 0  # no create was ever sent
    vm.ok("fleet", "destroy", "thrifty", "--yes")
    assert vm("fleet", "status", "thrifty").code == 3


def test_a_waiting_fleet_of_other_options_is_refused(fresh_home: VmHome) -> None:
    vm = fresh_home
    hold_capacity(vm)
    proc = start(vm, *WAITER, "--wait-for-capacity", "10m", "--name", "picky")
    until_waiting(vm, "picky", proc)
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=300)
    other = vm("fleet", "create", "--gpu", "H100:8", "--count", "3", "--providers", "crusoe", "--reservation",
               "none", "--wait-for-capacity", "10m", "--name", "picky", "-o", "json")
    assert other.code == 2 and "is waiting for 2 x H100:8, not 3 x H100:8" in other.error()["message"]
    assert vm.ok("fleet", "status", "picky", "-o", "json").json()["state"] == "waiting"
    vm.ok("fleet", "destroy", "picky", "--yes")
    vm.ok("fleet", "destroy", "hog", "--yes")


# The watchdog's step, as it calls it: one check of each waiting fleet through the Python API (its own process).
ADVANCE = """
import json, sys
from vm_core import api
client = api.connect()
record = next(f for f, _ in client.fleet_list().fleets if f.name == sys.argv[1])
step = client.fleet_advance_waiting(record)
print(json.dumps({**step.to_json(), "exit": step.exit.value}))
"""


def advance(vm: VmHome, name: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", ADVANCE, name], env=vm.env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def test_the_watchdogs_step_waits_places_and_gives_up(fresh_home: VmHome) -> None:
    vm = fresh_home
    hold_capacity(vm)
    for name, wait in (("never", "6s"), ("later", "10m")):
        proc = start(vm, *WAITER, "--wait-for-capacity", wait, "--name", name)
        until_waiting(vm, name, proc)
        os.killpg(proc.pid, signal.SIGINT)  # left waiting, for the watchdog to go on
        assert proc.wait(timeout=300) == 130
    still = advance(vm, "later")
    assert still["state"] == "waiting" and still["placeable"] == 0 and still["exit"] == "ok", still
    assert live(vm, "later") == []
    created = datetime.fromisoformat(vm.ok("fleet", "status", "never", "-o", "json").json()["created_at"])
    time.sleep(max(created.timestamp() + 6.5 - time.time(), 0.0))  # "never" waits 6 s from its record: past it
    gone = advance(vm, "never")
    assert gone["state"] == "failed" and gone["gave_up"] is True and gone["exit"] == "capacity", gone
    assert "gave up waiting for capacity after 6s" in gone["message"] and live(vm, "never") == []
    free_capacity(vm)
    placed = advance(vm, "later")
    assert placed["state"] == "active" and placed["placeable"] == 2 and placed["exit"] == "ok", placed
    assert len(live(vm, "later")) == 2
    vm.ok("fleet", "destroy", "later", "--yes")
    vm.ok("fleet", "destroy", "never", "--yes")
    vm.ok("fleet", "destroy", "hog", "--yes")


def test_credentials_every_cloud_refuses_are_exit_4_before_anything_is_recorded(fresh_home: VmHome) -> None:
    vm = fresh_home
    wrong = "d3JvbmctY3JlZGVudGlhbA"
    vm.config(f"""
default_profile = "bad"
[profiles.bad]
embedded = true
[profiles.bad.crusoe]
secret_key = "{wrong}"
""")
    result = vm(*WAITER, "--wait-for-capacity", "10m", "--name", "refused", "-o", "json")
    assert result.code == 4 and result.error()["code"] == "auth", result.err
    assert result.error()["message"].startswith("no provider could be used: crusoe: "), result.err
    assert wrong not in result.out + result.err
    assert vm("fleet", "status", "refused").code == 3  # nothing recorded, nothing waits


def test_a_cloud_that_publishes_no_capacity_is_tried_and_rolled_back_until_the_wait_gives_up(
        fresh_home: VmHome) -> None:
    vm = fresh_home
    # Nebius sells H100 in eu-west1 but has none there; its offers cannot say so, only a create can
    result = vm("fleet", "create", "--gpu", "H100", "--count", "1", "--providers", "nebius", "--region", "eu-west1",
                "--reservation", "none", "--wait-for-capacity", "3s", "--name", "probed", "-o", "json")
    assert result.code == 6 and "gave up waiting for capacity after 3s" in result.error()["message"], result.err
    assert "rolled back" in result.err or "rolling back" in result.err
    assert attempts(vm, "probed") >= 1  # it was tried
    assert live(vm, "probed") == []  # and nothing of it is left
    doc = vm.ok("fleet", "status", "probed", "-o", "json").json()
    assert doc["state"] == "failed" and doc["members"] == []


def test_a_wait_left_by_ctrl_c_is_placed_by_the_watchdog_once_there_is_room(fresh_home: VmHome) -> None:
    """`vm watchdog --once` goes on with a fleet a Ctrl-C left waiting (its `wait` duty): it waits while there
    is no room, and places the fleet whole once there is, recording the create as the watchdog's."""
    vm = fresh_home
    hold_capacity(vm)
    proc = start(vm, *WAITER, "--wait-for-capacity", "10m", "--name", "resumed")
    until_waiting(vm, "resumed", proc)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=300) == 130
    waiting = vm.ok("watchdog", "--once", "-o", "json").json()
    duties = [d for f in waiting["last_pass"]["fleets"] if f["fleet"] == "resumed" for d in f["duties"]]
    assert [(d["duty"], d["outcome"]) for d in duties] == [("wait", "idle")], waiting
    assert live(vm, "resumed") == [] and vm.ok("fleet", "status", "resumed", "-o", "json").json()["state"] == "waiting"
    free_capacity(vm)
    placed = vm.ok("watchdog", "--once", "-o", "json").json()
    duties = [d for f in placed["last_pass"]["fleets"] if f["fleet"] == "resumed" for d in f["duties"]]
    assert [(d["duty"], d["outcome"]) for d in duties] == [("wait", "acted")], placed
    assert len(live(vm, "resumed")) == 2
    assert vm.ok("fleet", "status", "resumed", "-o", "json").json()["state"] == "active"
    events = [json.loads(line) for line in vm.ok("events", "--fleet", "resumed", "-o", "json").out.splitlines()]
    assert [e["actor"].split()[0] for e in events if e["kind"] == "created"] == ["watchdog"]
    vm.ok("fleet", "destroy", "resumed", "--yes")
    vm.ok("fleet", "destroy", "hog", "--yes")
