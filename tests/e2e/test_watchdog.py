"""`vm watchdog` through the real executable on one machine (the SQLite store), against the mock clouds: with no
other vm command run, `--once` reaps a fleet whose TTL passed and repairs a maintained fleet whose Nebius member
the cloud preempted (mock admin API), each with its events, and a webhook on 127.0.0.1 gets each event once,
signed; a fleet whose lease a person's command holds is left for the next pass; the loop ends on a real SIGTERM
(exit 0) or SIGINT (exit 130) sent to its process group, its leases released. The clouds' inventory is the
ground truth."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from vm_core.events.signing import verify
from vm_core.fleet.lease import user_at_host
from vm_core.fleet.location import store_at
from vm_core.fleet.store import FleetStore
from watchdog_process import DEADLINE, Watched, live, preempt, wait_for
from webhook_receiver import Receiver

if TYPE_CHECKING:
    from conftest import VmHome

SECRET = "watchdog-webhook-secret"
ONE_MACHINE = "this watchdog looks after the fleets recorded on this machine only"


def store_of(vm: VmHome) -> FleetStore:
    return store_at(vm.env.get("VM_STORE_URL"), vm.path)


def events(vm: VmHome, fleet: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in vm.ok("events", "--fleet", fleet, "-o", "json").out.splitlines()]


def maintained(vm: VmHome, name: str, count: int) -> list[dict[str, Any]]:
    """A Nebius spot fleet of `count` the watchdog maintains (`--maintain --spot`); its members."""
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", str(count), "--name", name, "--providers", "nebius",
                 "--maintain", "--spot", "-o", "json").json()
    assert made["maintain"] and all(m["spot"] for m in made["members"])
    return list(made["members"])


def test_once_reaps_an_expired_fleet_with_no_other_command(shared_home: VmHome) -> None:
    vm = shared_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "2", "--name", "wd-ttl", "--providers", "nebius",
                 "--ttl", "1s", "-o", "json").json()
    wait_for("the TTL to pass", lambda: datetime.fromisoformat(made["expires_at"]).timestamp() < time.time())
    ran = vm("watchdog", "--once", "-o", "json")
    assert ran.code == 0, ran.err
    assert ran.err.count(ONE_MACHINE) == 1 and "Traceback" not in ran.err
    (fleet,) = [f for f in ran.json()["last_pass"]["fleets"] if f["fleet"] == "wd-ttl"]
    assert [(d["duty"], d["outcome"], d["finished"]) for d in fleet["duties"]] == [("expire", "acted", True)]
    assert "reaped: 2 VM(s) destroyed" in ran.err
    assert live(vm, "wd-ttl") == [] and store_of(vm).get_fleet("wd-ttl") is None
    reaped = [e for e in events(vm, "wd-ttl") if e["kind"] == "reaped"]
    assert [(e["actor"], e["details"]["destroyed"]) for e in reaped] == [(f"watchdog {user_at_host()}", 2)]
    again = vm.ok("watchdog", "--once")  # nothing is due any more
    assert "no fleet had a duty due" in again.err


def test_a_preempted_member_of_a_maintained_fleet_is_replaced_and_each_event_sent_once(fresh_home: VmHome) -> None:
    vm = fresh_home
    with Receiver(failures=3) as hook:  # fails three times, then accepts: each event still arrives once
        vm.config(f'default_profile = "local"\n[profiles.local]\nembedded = true\n'
                  f'[[profiles.local.notify]]\nurl = "{hook.url}"\nsecret = "{SECRET}"\n'
                  'events = ["member_preempted", "replaced", "degraded"]\n')
        members = maintained(vm, "wd-keep", 2)
        victim = members[0]["id"]
        preempt(vm, "nebius", victim)
        ran = vm("watchdog", "--once", "-o", "json")
        assert ran.code == 0, ran.err
        (fleet,) = ran.json()["last_pass"]["fleets"]
        assert [(d["duty"], d["outcome"]) for d in fleet["duties"]] == [("maintain", "acted")]
        running = [i for i in live(vm, "wd-keep") if i["state"] == "running"]
        assert len(running) == 2 and victim not in {i["id"] for i in running}
        assert len(live(vm, "wd-keep")) == 2  # the preempted VM was deleted, nothing else made
        status = vm.ok("fleet", "status", "wd-keep", "-o", "json").json()
        assert status["state"] == "active" and {m["id"] for m in status["members"]} == {i["id"] for i in running}
        assert all(m["spot"] for m in status["members"])  # the replacement is spot too, as the fleet asks
        kinds = [(e["kind"], e["instance_id"]) for e in events(vm, "wd-keep") if e["kind"] != "created"]
        assert kinds == [("member_preempted", victim), ("replaced", "")]
        sent = [e["id"] for e in events(vm, "wd-keep") if e["kind"] != "created"]
        wait_for("the retried deliveries", lambda: _deliver_once_more(vm) and sorted(hook.seen()) == sorted(sent))
        assert all(verify(SECRET, headers, body, now=time.time(), tolerance=600) for headers, body in hook.accepted())
        for secret in (SECRET, hook.url, *vm.secrets()):
            assert secret not in ran.out and secret not in ran.err
        quiet = vm.ok("watchdog", "--once", "-o", "json").json()  # the fleet is whole: nothing to do
        assert [d["outcome"] for f in quiet["last_pass"]["fleets"] for d in f["duties"]] == ["idle"]
        assert sorted(hook.seen()) == sorted(sent)  # and no event sent twice
    vm.ok("fleet", "destroy", "wd-keep")


def _deliver_once_more(vm: VmHome) -> bool:
    """One more pass: it sends the deliveries that are due again (retried with backoff: 1, 2, 4 s)."""
    vm.ok("watchdog", "--once")
    return True


def test_a_fleet_whose_lease_a_person_holds_is_left_for_the_next_pass(shared_home: VmHome) -> None:
    vm = shared_home
    made = vm.ok("fleet", "create", "--gpu", "H100", "--count", "1", "--name", "wd-held", "--providers", "nebius",
                 "--ttl", "1s", "-o", "json").json()
    wait_for("the TTL to pass", lambda: datetime.fromisoformat(made["expires_at"]).timestamp() < time.time())
    store = store_of(vm)
    store.acquire_lease("wd-held", "someone@elsewhere:4242", "fleet scale", 60)
    skipped = vm("watchdog", "--once", "-o", "json", "--debug")
    assert skipped.code == 0, skipped.err
    (fleet,) = [f for f in skipped.json()["last_pass"]["fleets"] if f["fleet"] == "wd-held"]
    assert fleet["skipped"] == "being changed by someone@elsewhere:4242 (fleet scale)" and fleet["duties"] == []
    assert "its lease is held by someone@elsewhere:4242" in skipped.err  # said at debug level
    assert len(live(vm, "wd-held")) == 1
    store.release_lease("wd-held", "someone@elsewhere:4242")
    vm.ok("watchdog", "--once")
    assert live(vm, "wd-held") == [] and store.get_fleet("wd-held") is None


def test_bad_interval_is_refused(shared_home: VmHome) -> None:
    for value, says in (("0", "not a positive"), ("soon", "not a number"), ("0.01", "--interval must be at least")):
        bad = shared_home("watchdog", "--interval", value)
        assert bad.code == 2 and says in bad.err and "Traceback" not in bad.err, bad.err


# -------------------------------------------------------------------------------------------------- signals
def test_sigterm_ends_the_loop_with_0_and_sigint_with_130(shared_home: VmHome) -> None:
    for signum, code in ((signal.SIGTERM, 0), (signal.SIGINT, 130)):
        watched = Watched(shared_home, "--interval", "0.2")
        wait_for("the watchdog to start", lambda w=watched: w.said(ONE_MACHINE))
        assert watched.signal(signum) == code, "".join(watched.lines)
        assert "Traceback" not in "".join(watched.lines)
        assert watched.said(f"{signal.Signals(signum).name}: finishing the current fleet's duty, then stopping")


def test_sigterm_mid_repair_finishes_the_repair_then_exits_0(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.env["VM_MOCK_TIME_SCALE"] = "0.02"  # a boot spans about a second: long enough to signal mid-repair
    members = maintained(vm, "wd-term", 2)
    preempt(vm, "nebius", members[1]["id"])
    store = store_of(vm)
    watched = Watched(vm, "--interval", "0.2")
    wait_for("the repair to place its replacement", lambda: len(store.members("wd-term")) > 2)
    held = store.lease("wd-term")
    assert held is not None and held.holder.startswith(f"watchdog {user_at_host()}:"), held
    assert watched.signal(signal.SIGTERM) == 0, "".join(watched.lines)
    assert store.lease("wd-term") is None  # released
    running = [i for i in live(vm, "wd-term") if i["state"] == "running"]
    assert len(running) == 2 and len(live(vm, "wd-term")) == 2
    assert vm.ok("fleet", "status", "wd-term", "-o", "json").json()["state"] == "active"
    vm.ok("fleet", "destroy", "wd-term")


def test_a_second_sigterm_stops_the_repair_starting_vms_and_the_next_pass_resolves_it(fresh_home: VmHome) -> None:
    vm = fresh_home
    vm.env["VM_MOCK_TIME_SCALE"] = "0.02"
    members = maintained(vm, "wd-twice", 3)
    for member in members[:2]:
        preempt(vm, "nebius", member["id"])
    store = store_of(vm)
    watched = Watched(vm, "--interval", "0.2")
    wait_for("the repair to place its replacements", lambda: len(store.members("wd-twice")) > 3)
    os.killpg(watched.process.pid, signal.SIGTERM)
    with contextlib.suppress(ProcessLookupError):  # it may have finished the repair and exited already
        os.killpg(watched.process.pid, signal.SIGTERM)
    assert watched.process.wait(timeout=DEADLINE) == 0, "".join(watched.lines)
    assert store.lease("wd-twice") is None and "Traceback" not in "".join(watched.lines)
    vm.ok("watchdog", "--once")  # whatever the stopped repair left, the next pass resolves
    status = vm.ok("fleet", "status", "wd-twice", "-o", "json").json()
    running = {i["id"] for i in live(vm, "wd-twice") if i["state"] == "running"}
    assert status["state"] == "active" and len(running) == 3
    assert {i["id"] for i in live(vm, "wd-twice")} == running == {m["id"] for m in status["members"]}
    vm.ok("fleet", "destroy", "wd-twice")
