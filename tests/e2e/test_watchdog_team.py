"""Two watchdogs on one PostgreSQL store (a throwaway cluster, tests/pgcluster.py), as two machines of a team
would run them (own VM_HOMEs, one set of slow mock clouds): the one that takes a maintained fleet's lease to
repair it is SIGKILLed mid-repair; the other takes the lease over and finishes the repair. Nothing is created
twice and nothing is leaked: the mock clouds' inventory holds exactly the fleet's members."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from vm_core.events.kinds import EventKind
from vm_core.fleet.lease import user_at_host
from vm_core.fleet.location import store_at
from watchdog_process import Watched, live, preempt, wait_for

if TYPE_CHECKING:
    from conftest import VmHome

SLOW_SCALE = "0.02"  # a create spans seconds: long enough to kill a watchdog in the middle of one
LEASE = "2"  # VM_LEASE_SECONDS of both watchdogs: a dead one's lease lapses in two seconds


@pytest.fixture(scope="module")
def team(shared_home: VmHome, postgres_cluster: Any,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[VmHome, VmHome, str]]:
    """Machines A and B: own VM_HOMEs, one PostgreSQL store, one set of (slow) mock clouds."""
    url = postgres_cluster.database()
    make = type(shared_home)
    a = make(tmp_path_factory.mktemp("wd-machine-a"), VM_STORE_URL=url, VM_LEASE_SECONDS=LEASE)
    b = make(tmp_path_factory.mktemp("wd-machine-b"), VM_STORE_URL=url, VM_LEASE_SECONDS=LEASE)
    a.env["VM_MOCK_TIME_SCALE"] = b.env["VM_MOCK_TIME_SCALE"] = SLOW_SCALE
    a.ok("providers")  # starts the mock clouds under A's home
    b.mock_dir.symlink_to(a.mock_dir, target_is_directory=True)
    yield a, b, url
    a.stop()


def test_a_watchdog_killed_mid_repair_is_replaced_by_the_other(team: tuple[VmHome, VmHome, str]) -> None:
    a, b, url = team
    store = store_at(url, a.path)
    made = a.ok("fleet", "create", "--gpu", "H100", "--count", "3", "--name", "wd-pg", "--providers", "nebius",
                "-o", "json").json()
    store.update_fleet("wd-pg", maintain=True)
    for member in made["members"][:2]:
        preempt(a, "nebius", member["id"])
    watchdogs = {w.process.pid: w for w in (Watched(a, "--interval", "0.2"), Watched(b, "--interval", "0.2"))}
    wait_for("one watchdog to be placing replacements", lambda: (held := store.lease("wd-pg")) is not None
             and held.operation == "fleet repair" and len(store.members("wd-pg")) > 3)
    held = store.lease("wd-pg")
    assert held is not None and held.holder.startswith(f"watchdog {user_at_host()}:")
    victim = watchdogs.pop(int(held.holder.rsplit(":", 1)[1]))
    assert victim.signal(signal.SIGKILL) == -signal.SIGKILL
    (survivor,) = watchdogs.values()

    def repaired() -> bool:
        fleet, lease = store.get_fleet("wd-pg"), store.lease("wd-pg")
        running = [i for i in live(a, "wd-pg") if i["state"] == "running"]
        return fleet is not None and fleet.state.value == "active" and len(running) == 3 \
            and (lease is None or lease.holder != held.holder)

    wait_for("the other watchdog to finish the repair", repaired)
    taken = [e for e in store.list_events(fleet="wd-pg") if e.kind is EventKind.LEASE_TAKEN_OVER]
    assert [e.details["previous"] for e in taken] == [held.holder]
    assert taken[0].actor == f"watchdog {user_at_host()}"
    assert survivor.signal(signal.SIGTERM) == 0, "".join(survivor.lines)
    status = b.ok("fleet", "status", "wd-pg", "-o", "json").json()
    members = {m["id"] for m in status["members"] if m["state"] == "running"}
    assert status["state"] == "active" and len(members) == 3
    assert {i["id"] for i in live(a, "wd-pg")} == members  # nothing leaked, nothing created twice
    b.ok("fleet", "destroy", "wd-pg")
    assert live(a, "wd-pg") == []
