"""The watchdog in process, against the example third-party provider (a JSON-file cloud: fast, no mock clouds):
a duty appended to DUTIES runs under the fleet's lease held as `watchdog user@host:pid`, a fleet with no duty due
is never leased, `stopping` ends the loop, a fleet whose profile cannot be opened is a failed duty (PartialFailure:
exit 7), an expired fleet is reaped with its event, a maintained fleet that cannot be repaired backs off (for every
watchdog of the store: its degraded event says until when); leases nest within a thread; the backoff doubles."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from vm_core import api
from vm_core.errors import UsageError
from vm_core.events.kinds import EventKind
from vm_core.fleet.lease import acting_as, lease, this_process, user_at_host
from vm_core.fleet.location import open_store
from vm_core.fleet.store import FleetRecord, SqliteFleetStore
from vm_core.watchdog.duties import DUTIES
from vm_core.watchdog.duty import Done, Duty, DutyContext, DutyResult
from vm_core.watchdog.retries import MAX_DELAY, Retries

TOKEN = "tok-w4tchd0g-s3cr3t-5kq2"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VM_HOME", str(tmp_path))
    monkeypatch.setenv("VM_NO_AUTOSTART", "1")
    for name in ("VM_PROFILE", "VM_EXAMPLE_PATH", "VM_EXAMPLE_TOKEN", "VM_STORE_URL", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    cloud = tmp_path / "example-cloud.json"
    config = tmp_path / "config.toml"
    config.write_text(f'default_profile = "p"\n[profiles.p.example]\npath = "{cloud}"\ntoken = "{TOKEN}"\n'
                      'seconds = 0.05\ncapacity = 3\n')
    config.chmod(0o600)
    return tmp_path


class Hook:
    """A duty for one fleet that notes what it saw, and may set `stopping`."""

    def __init__(self, fleet: str, stopping: threading.Event | None = None) -> None:
        self.fleet, self.stopping = fleet, stopping
        self.seen: list[tuple[str, str, str, str]] = []

    def due(self, context: DutyContext, fleet: FleetRecord) -> bool:
        return fleet.name == self.fleet

    def act(self, context: DutyContext, fleet: FleetRecord) -> DutyResult:
        held = context.store.lease(fleet.name)
        assert held is not None
        self.seen.append((fleet.name, held.holder, held.operation, context.actor))
        if self.stopping is not None:
            self.stopping.set()
        return DutyResult("hook", Done.ACTED, "looked")


@pytest.fixture
def appended() -> Iterator[list[Duty]]:
    """DUTIES as they were once the test ends."""
    before = list(DUTIES)
    yield DUTIES
    DUTIES[:] = before


def test_an_appended_duty_runs_under_the_watchdogs_lease_and_stopping_ends_the_loop(home: Path,
                                                                                   appended: list[Duty]) -> None:
    warnings: list[str] = []
    client = api.connect(warn=warnings.append)
    client.fleet_create(api.FleetCreateRequest(gpu="H100", count=1, name="looked"))
    client.fleet_create(api.FleetCreateRequest(gpu="H100", count=1, name="ignored"))
    stopping = threading.Event()
    hook = Hook("looked", stopping)
    appended.append(Duty("hook", hook.due, hook.act))
    report = client.watchdog(api.WatchdogRequest(interval=0.1), stopping=stopping)
    me = f"watchdog {user_at_host()}"
    assert hook.seen == [("looked", f"{me}:{os.getpid()}", "watchdog", me)]
    assert (report.passes, report.signal, report.problem, report.exit) == (1, "", None, api.ExitKind.OK)
    assert report.last is not None and [f.fleet for f in report.last.fleets] == ["looked"]  # "ignored": not leased
    assert report.to_json()["last_pass"]["fleets"][0]["duties"] == [
        {"duty": "hook", "outcome": "acted", "summary": "looked", "finished": False, "next_try_at": None}]
    store = open_store(client.session)
    assert store.lease("looked") is None and store.lease("ignored") is None
    assert sum("looks after the fleets recorded on this machine only" in w for w in warnings) == 1
    assert this_process() == f"{user_at_host()}:{os.getpid()}"  # the role ends with the call


def test_a_fleet_whose_profile_cannot_be_opened_is_a_failed_duty(home: Path) -> None:
    client = api.connect(warn=lambda _: None)
    client.fleet_create(api.FleetCreateRequest(gpu="H100", count=1, name="orphaned"))
    store = open_store(client.session)
    store.update_fleet("orphaned", maintain=True, profile="gone")
    report = client.watchdog(api.WatchdogRequest(once=True))
    assert report.exit is api.ExitKind.PARTIAL and report.problem is not None
    [(target, error)] = report.problem.failures
    assert target == "orphaned" and error.message.startswith("connect: ") and "gone" in error.message
    assert store.members("orphaned")  # nothing was changed


def test_an_expired_fleet_is_reaped_with_its_event(home: Path) -> None:
    client = api.connect(warn=lambda _: None)
    client.fleet_create(api.FleetCreateRequest(gpu="H100", count=2, name="dated", ttl=3600))
    store = open_store(client.session)
    store.update_fleet("dated", expires_at=time.time() - 1)
    report = client.watchdog(api.WatchdogRequest(once=True))
    assert report.exit is api.ExitKind.OK and report.last is not None
    [watched] = report.last.fleets
    assert [(r.duty, r.done, r.finished) for r in watched.results] == [("expire", Done.ACTED, True)]
    assert store.get_fleet("dated") is None
    [reaped] = [e for e in store.list_events(fleet="dated") if e.kind is EventKind.REAPED]
    assert (reaped.actor, reaped.details["destroyed"]) == (f"watchdog {user_at_host()}", 2)
    assert client.fleet_list().fleets == []


def test_bad_interval_is_refused_before_any_pass(home: Path) -> None:
    with pytest.raises(UsageError, match="--interval must be at least 0.1 seconds"):
        api.connect().watchdog(api.WatchdogRequest(interval=0.01))


# ------------------------------------------------------------------------------------------------ leases
def test_leases_nest_within_a_thread_and_the_watchdog_names_its_holder(tmp_path: Path) -> None:
    store = SqliteFleetStore(tmp_path / "vm.db")
    lost: list[str] = []
    with acting_as("watchdog"):
        holder = this_process()
        assert holder == f"watchdog {user_at_host()}:{os.getpid()}"
        with lease(store, "f", "watchdog", on_lost=lambda: lost.append("outer")):
            with lease(store, "f", "fleet repair", on_lost=lambda: lost.append("inner")) as inner:
                assert (inner.holder, store.lease("f").operation) == (holder, "fleet repair")  # type: ignore[union-attr]
            held = store.lease("f")
            assert held is not None and held.holder == holder  # the inner end did not release it
        assert store.lease("f") is None
    assert this_process() == f"{user_at_host()}:{os.getpid()}" and lost == []


def test_a_lost_outer_lease_tells_the_nested_body_too(tmp_path: Path) -> None:
    store = SqliteFleetStore(tmp_path / "vm.db", lease_seconds=1.5)  # heartbeats every 0.5 s
    lost: list[str] = []
    with lease(store, "f", "watchdog", on_lost=lambda: lost.append("outer")), \
            lease(store, "f", "fleet repair", on_lost=lambda: lost.append("inner")):
        store.acquire_lease("f", "thief@elsewhere:1", "fleet destroy", 60, replacing=this_process())
        deadline = time.monotonic() + 60
        while len(lost) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert sorted(lost) == ["inner", "outer"]
    assert store.lease("f") is not None and store.lease("f").holder == "thief@elsewhere:1"  # type: ignore[union-attr]



# ------------------------------------------------------------------------------------------------ maintain
def test_a_maintained_fleet_that_cannot_be_repaired_backs_off_for_every_watchdog(home: Path) -> None:
    client = api.connect(warn=lambda _: None)
    made = client.fleet_create(api.FleetCreateRequest(gpu="H100", count=2, name="kept"))
    store = open_store(client.session)
    store.update_fleet("kept", maintain=True)
    client.create(api.CreateRequest(provider="example", gpu="H100", name="filler-1"))  # the cloud holds 3 VMs
    gone = made.report.running[0].id
    client.destroy(api.ActionRequest(provider="example", instance_ids=(gone,)))  # deleted outside the fleet
    client.create(api.CreateRequest(provider="example", gpu="H100", name="filler-2"))  # and its room taken

    short = client.watchdog(api.WatchdogRequest(once=True, interval=60))
    assert short.exit is api.ExitKind.PARTIAL and short.last is not None
    [result] = short.last.fleets[0].results
    assert (result.duty, result.done) == ("maintain", Done.FAILED) and "tried again in 60 s" in result.summary
    assert result.next_try_at == pytest.approx(short.last.started_at + 60)
    [degraded] = [e for e in store.list_events(fleet="kept") if e.kind is EventKind.DEGRADED]
    assert (degraded.details["next_try_at"], degraded.details["tries"]) == (result.next_try_at, 1)
    assert degraded.actor.startswith("watchdog ")

    later = client.watchdog(api.WatchdogRequest(once=True))  # another watchdog waits for the recorded retry
    assert later.exit is api.ExitKind.OK and later.last is not None and later.last.fleets == []
    filler = [i for i in client.list().instances if i.name == "filler-2"]
    client.destroy(api.ActionRequest(provider="example", instance_ids=(filler[0].id,)))  # room again
    assert client.fleet_repair(api.FleetRepairRequest("kept")).problem is None  # a person need not wait
    whole = client.watchdog(api.WatchdogRequest(once=True))
    assert whole.exit is api.ExitKind.OK and whole.last is not None
    assert [(r.duty, r.done) for r in whole.last.fleets[0].results] == [("maintain", Done.IDLE)]
    assert [e.kind for e in store.list_events(fleet="kept")][-1] is EventKind.REPLACED
    status = client.fleet_status(api.FleetNameRequest("kept"))
    assert status.view.fleet.state.value == "active" and sum(m.running for m in status.view.members) == 2


def test_the_backoff_doubles_from_the_interval_up_to_its_cap() -> None:
    backoff = Retries()
    assert backoff.ready("f", 0.0)
    assert [backoff.failed("f", 1000.0, 60.0) - 1000.0 for _ in range(8)] == [60, 120, 240, 480, 960, 1920,
                                                                              MAX_DELAY, MAX_DELAY]
    assert not backoff.ready("f", 1000.0 + MAX_DELAY - 1) and backoff.ready("f", 1000.0 + MAX_DELAY)
    assert backoff.ready("other", 0.0)  # per fleet id
    backoff.succeeded("f")
    assert backoff.ready("f", 0.0) and backoff.failed("f", 0.0, 60.0) == 60.0  # afresh
