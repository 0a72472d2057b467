"""Team mode through the real `vm` executable: two "machines" (processes with different VM_HOMEs) share one fleet
store on PostgreSQL (a throwaway cluster, tests/pgcluster.py) and one set of mock clouds (the second home's
mock-clouds directory is the first one's, as two people whose profiles use the same cloud accounts). The clouds'
inventory is the ground truth."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from vm_core.fleet.lease import user_at_host
from vm_core.fleet.location import store_at

if TYPE_CHECKING:
    from conftest import VmHome

SLOW_SCALE = "0.02"  # a create of a few VMs spans seconds: long enough to stop or kill it midway
DEADLINE = 120.0  # seconds to wait for something that must happen (a lease to lapse); never a pass condition


def live_in_clouds(vm: VmHome, fleet: str) -> list[dict[str, Any]]:
    """Instances of the fleet that exist in any cloud (terminated ones do not)."""
    return [i for i in vm.inventory() if i["name"].startswith(f"{fleet}-") and i["state"] != "terminated"]


@pytest.fixture(scope="module")
def team(shared_home: VmHome, postgres_cluster: Any,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[VmHome, VmHome, str]]:
    """Machines A and B: own VM_HOMEs, one PostgreSQL store, one set of (slow) mock clouds."""
    url = postgres_cluster.database()
    make = type(shared_home)
    a = make(tmp_path_factory.mktemp("machine-a"), VM_STORE_URL=url)
    b = make(tmp_path_factory.mktemp("machine-b"), VM_STORE_URL=url)
    a.env["VM_MOCK_TIME_SCALE"] = b.env["VM_MOCK_TIME_SCALE"] = SLOW_SCALE
    a.ok("providers")  # starts the mock clouds under A's home
    b.mock_dir.symlink_to(a.mock_dir, target_is_directory=True)
    yield a, b, url
    a.stop()


def spawn(vm: VmHome, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(Path(sys.executable).parent / "vm"), *args], env={**vm.env, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(what: str, condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_one_machine_sees_the_others_fleet_and_a_second_create_is_refused(team) -> None:
    a, b, _ = team
    a.ok("fleet", "create", "--gpu", "H100", "--count", "2", "--name", "shared", "--providers", "crusoe,nebius")
    listed = b.ok("fleet", "list", "-o", "json").json()
    assert [(f["name"], f["state"], f["created_by"]) for f in listed] == [("shared", "active", user_at_host())]
    assert len(b.ok("fleet", "status", "shared", "-o", "json").json()["members"]) == 2
    before = a.inventory()
    again = b("fleet", "create", "--gpu", "H100", "--count", "3", "--name", "shared")
    assert again.code == 2 and "already exists" in again.err and "Traceback" not in again.err
    assert a.inventory() == before  # the refused create made nothing
    b.ok("fleet", "destroy", "shared")
    assert live_in_clouds(a, "shared") == [] and a.ok("fleet", "list", "-o", "json").json() == []


def test_two_machines_racing_one_name_leave_one_fleet_and_exactly_its_vms(team) -> None:
    a, b, _ = team
    args = ("fleet", "create", "--gpu", "H100", "--count", "3", "--name", "race", "--providers", "crusoe,nebius")
    racers = [spawn(a, *args), spawn(b, *args)]
    results = [(p.wait(timeout=300), p.communicate()[1]) for p in racers]
    assert sorted(code for code, _ in results) == [0, 2], results
    loser = next(err for code, err in results if code == 2)
    assert "a fleet named 'race' already exists" in loser
    members = a.ok("fleet", "status", "race", "-o", "json").json()["members"]
    assert len(members) == 3
    assert {i["id"] for i in live_in_clouds(a, "race")} == {m["id"] for m in members}
    b.ok("fleet", "destroy", "race")
    assert live_in_clouds(a, "race") == []


def test_a_live_lease_is_refused_with_exit_2_naming_its_holder(team) -> None:
    a, b, url = team
    creator = spawn(a, "fleet", "create", "--gpu", "H100", "--count", "4", "--name", "held",
                    "--providers", "crusoe,nebius")
    store = store_at(url, a.path)
    wait_for("the create to record its fleet", lambda: store.get_fleet("held") is not None)
    os.kill(creator.pid, signal.SIGSTOP)  # a stalled creator: its lease (60 s) is still live
    try:
        holder = f"{user_at_host()}:{creator.pid}"
        for command, says in ((("fleet", "destroy", "held"), "fleet 'held'"),
                              (("fleet", "reconcile", "held"), "fleet 'held'"),
                              (("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "held"),
                               "a fleet named 'held' already exists and")):
            refused = b(*command)
            assert refused.code == 2, refused.err
            assert f"{says} is being changed by {holder} (fleet create); its lease lapses at" in refused.err
        assert b.ok("fleet", "status", "held", "-o", "json").json()["state"] == "creating"
    finally:
        os.kill(creator.pid, signal.SIGCONT)
    assert creator.wait(timeout=300) == 0
    b.ok("fleet", "destroy", "held")
    assert live_in_clouds(a, "held") == []


def test_a_creator_killed_mid_create_is_taken_over_after_its_lease_lapses(team) -> None:
    a, b, url = team
    creator = spawn(a, "fleet", "create", "--gpu", "H100", "--count", "6", "--name", "orphan",
                    VM_LEASE_SECONDS="2")
    store = store_at(url, a.path)
    wait_for("the create to record a member", lambda: store.get_fleet("orphan") is not None
             and len(store.members("orphan")) > 0)
    creator.send_signal(signal.SIGKILL)
    creator.wait(timeout=60)
    wait_for("the dead creator's lease to lapse", lambda: store.lease("orphan") is None)
    assert b.ok("fleet", "status", "orphan", "-o", "json").json()["state"] == "interrupted"
    destroyed = b("fleet", "destroy", "orphan")
    if destroyed.code == 7:  # a member still settling in its cloud: a re-run finishes the job
        destroyed = b("fleet", "destroy", "orphan")
    assert destroyed.code == 0, destroyed.err
    assert live_in_clouds(a, "orphan") == []
    assert store.get_fleet("orphan") is None and store.lease("orphan") is None
