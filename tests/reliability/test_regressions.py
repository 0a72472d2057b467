"""One deterministic test per defect this suite found (and the code now handles): the randomized tests found
them; these pin them down so they stay fixed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
from reliability_kit.audit import Store, audit, fleet_vms
from reliability_kit.home import VM, VmHome
from reliability_kit.inprocess import assert_clean_failure, vm
from vm_core.embedded import settings_from_endpoints
from vm_core.errors import CapacityError, NotFound, Transient
from vm_core.fleet.create import FleetCreator, FleetSpec
from vm_core.fleet.destroy import FleetDestroyer
from vm_core.fleet.inspect import FleetInspector
from vm_core.fleet.lease import holder_gone, process_identity
from vm_core.fleet.naming import FleetIdentity
from vm_core.fleet.reconcile import FleetReconciler
from vm_core.fleet.store import FleetState, Lease, MemberRecord, MemberState, SqliteFleetStore
from vm_core.fleet.strategies import spread
from vm_core.plugins import provider_plugins

BUILT_IN = ("crusoe", "lambda", "nebius")


# new VMs need a public key; nobody holds the private half of this one
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGgLAWC6bF3K8NqzCcSE0G4cqyBqV3zZkh9q6rUa0fB1 tests@vm-core"


def providers_for(clouds: Any) -> dict[str, Any]:
    plugins = provider_plugins()
    return {n: plugins.get(n).connect({**settings_from_endpoints(clouds.endpoints, n), "ssh_public_key": KEY})
            for n in BUILT_IN}


def test_reconcile_below_the_minimum_keeps_a_degraded_fleet_not_a_failed_one(mock_clouds, tmp_path: Path) -> None:
    """Found by the chaos soak: a killed create reconciled below --min-count was marked `failed` (which promises
    that nothing runs) while its VMs kept running."""
    store, providers = SqliteFleetStore(tmp_path / "vm.db"), providers_for(mock_clouds)
    FleetCreator(store, providers, spread, timeout=60).create(FleetSpec(name="rec", gpu="H100", count=3, min_count=3))
    store.update_fleet("rec", state=FleetState.INTERRUPTED)  # as `vm fleet status` leaves a killed create
    inspector = FleetInspector(store, providers)
    doomed = [v for v in inspector.view("rec").members][:2]
    for view in doomed:  # two of three disappear behind vm's back
        providers[view.member.provider].begin_destroy(view.instance.id).wait(60)
    record = FleetReconciler(store, providers, timeout=60).reconcile("rec").view.fleet
    assert record.state is FleetState.DEGRADED
    assert record.message == "1 of 3 running (below the minimum of 3)"
    remaining = [v for v in inspector.view("rec").members if v.instance is not None]
    providers[remaining[0].member.provider].begin_destroy(remaining[0].instance.id).wait(60)
    assert FleetReconciler(store, providers, timeout=60).reconcile("rec").view.fleet.state is FleetState.FAILED


class _VanishingProvider:
    """Wraps a provider; a lookup (one by one or a listing) deletes the fleet from the store, as another `vm`
    process would."""

    def __init__(self, inner: Any, store: SqliteFleetStore, fleet: str) -> None:
        self._inner, self._store, self._fleet = inner, store, fleet

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def get_instance(self, instance_id: str) -> Any:
        self._store.delete_fleet(self._fleet)
        return self._inner.get_instance(instance_id)

    def list_instances(self) -> Any:
        self._store.delete_fleet(self._fleet)
        return self._inner.list_instances()


def test_a_fleet_forgotten_by_another_process_meanwhile_is_not_found_not_a_crash(mock_clouds,
                                                                                  tmp_path: Path) -> None:
    """Found by the concurrency mix: `vm fleet status` racing `vm fleet destroy` ended in an internal error
    (KeyError from the store)."""
    store, providers = SqliteFleetStore(tmp_path / "vm.db"), providers_for(mock_clouds)
    for service, action in ((FleetInspector, "view"), (FleetReconciler, "reconcile")):
        name = f"gone-{action}"
        FleetCreator(store, providers, spread, timeout=60).create(FleetSpec(name=name, gpu="L40S", count=1,
                                                                            min_count=1))
        member = store.members(name)[0]
        vanishing = {**providers, member.provider: _VanishingProvider(providers[member.provider], store, name)}
        with pytest.raises(NotFound):  # "no fleet named ...", or "... was removed by another vm process meanwhile"
            getattr(service(store, vanishing), action)(name)
        providers[member.provider].begin_destroy(member.instance_id).wait(60)


class _Unreachable:
    """Wraps a provider whose every lookup fails transiently (a 5xx after the SDK's retries)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def get_instance(self, instance_id: str) -> Any:
        raise Transient("503 service unavailable", provider=self._inner.name)

    def find_instance(self, name: str) -> Any:
        raise Transient("503 service unavailable", provider=self._inner.name)

    def list_instances(self) -> Any:
        raise Transient("503 service unavailable", provider=self._inner.name)


def test_reconcile_keeps_what_it_could_not_check(mock_clouds, tmp_path: Path) -> None:
    """Found by the chaos soak: a reconcile whose lookups failed transiently counted those members as not running
    (an active fleet of 7 running VMs became `degraded`, exit 0) and marked unresolved attempts `never created`
    without having looked."""
    store, providers = SqliteFleetStore(tmp_path / "vm.db"), providers_for(mock_clouds)
    FleetCreator(store, providers, spread, timeout=60).create(FleetSpec(name="flaky", gpu="H100", count=3,
                                                                        min_count=3, providers=("crusoe", "nebius")))
    unknown = MemberRecord(fleet="flaky", slot=9, attempt=1, provider="nebius", name="flaky-9",
                           state=MemberState.UNKNOWN)
    store.add_member(unknown)
    flaky = {**providers, "nebius": _Unreachable(providers["nebius"])}
    view = FleetReconciler(store, flaky, timeout=60).reconcile("flaky").view
    assert view.fleet.state is FleetState.ACTIVE and view.problems
    states = {m.name: m.state for m in store.members("flaky")}
    assert states["flaky-9"] is MemberState.UNKNOWN
    assert sum(s is MemberState.RUNNING for s in states.values()) == 3
    FleetDestroyer(store, providers, timeout=60).destroy("flaky")


class _LeavesHusk:
    """Wraps a provider: its first create is accepted by the cloud, then reported as a capacity failure while the
    instance stays (what the Nebius adapter does when deleting the STOPPED husk fails under faults)."""

    def __init__(self, inner: Any) -> None:
        self._inner, self.failed = inner, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def begin_create(self, spec: Any) -> Any:
        pending = self._inner.begin_create(spec)
        if self.failed:
            return pending
        self.failed = True
        return _FailsWithCapacity(pending)


class _FailsWithCapacity:
    def __init__(self, inner: Any) -> None:
        self.id, self.resource_id = inner.id, inner.resource_id

    def wait(self, timeout: float) -> Any:
        raise CapacityError("no capacity (the cloud kept the instance)", region="eu-north1", provider="nebius")


def test_a_capacity_failure_after_the_cloud_accepted_leaves_nothing(mock_clouds, tmp_path: Path) -> None:
    """Found by a harsher chaos run (40% errors): a late capacity failure whose cleanup failed left a STOPPED
    Nebius instance that the fleet recorded as `failed` (no VM), so nothing accounted for it."""
    store = SqliteFleetStore(tmp_path / "vm.db")
    providers = {"nebius": _LeavesHusk(providers_for(mock_clouds)["nebius"])}
    report = FleetCreator(store, providers, spread, timeout=60).create(
        FleetSpec(name="husk", gpu="H100", count=1, min_count=1))
    husk = FleetIdentity("husk", store.get_fleet("husk").fleet_id).member_name(0, 1)
    assert husk in report.notes[0] and "no capacity" in report.notes[0]
    assert husk not in [vm["name"] for vm in fleet_vms(inventory(mock_clouds), "husk")]
    assert not audit(Store.read(tmp_path / "vm.db"), inventory(mock_clouds), fleets=["husk"], settled=["husk"])
    FleetDestroyer(store, providers, timeout=60).destroy("husk")


def inventory(clouds: Any) -> list[dict[str, Any]]:
    from mock_clouds.admin import inventory as admin_inventory

    return admin_inventory(clouds)


def test_undecodable_fleet_names_are_not_found(tmp_path: Path) -> None:
    """Found by the CLI fuzzer: a fleet name with bytes that are not UTF-8 crashed the SQLite store."""
    home = VmHome(tmp_path / "home")
    for command in ("status", "reconcile"):
        result = vm(home, ["fleet", command, os.fsdecode(b"a\xff")])
        assert_clean_failure(result, {3})
        assert "no fleet named" in result.err
    result = vm(home, ["fleet", "destroy", os.fsdecode(b"a\xff")])  # a fleet that is gone is exit 0: say why
    assert_clean_failure(result, {2})
    assert "invalid fleet name" in result.err


def test_destroy_and_reconcile_refuse_while_the_create_runs(home_factory: Callable[..., VmHome]) -> None:
    """Found by the concurrency mix: `vm fleet destroy` while `vm fleet create` of the same fleet still ran
    forgot the fleet, the create then crashed, and the VM it was creating was recorded nowhere (leaked).

    The create is paused (SIGSTOP) once the store shows it at work, so it is provably still running when destroy,
    reconcile and status look, however fast or slow the machine is; its lease is long enough not to lapse meanwhile.
    """
    home = home_factory("0.02")
    home.start()
    env = {**home.env, "VM_LEASE_SECONDS": str(PAUSED_LEASE_SECONDS)}
    create = subprocess.Popen([VM, "fleet", "create", "--gpu", "H100", "--count", "4", "--name", "busy", "-q"],
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        _pause_at_work(home, "busy", create)
        for command in ("destroy", "reconcile"):
            refused = home("fleet", command, "busy")
            assert refused.code == 2 and f":{create.pid} (fleet create); its lease lapses at" in refused.err, \
                refused.describe()
        status = home("fleet", "status", "busy", "-o", "json")
        assert status.code == 0 and status.json()["state"] == "creating", status.describe()  # not interrupted
        assert _at_work(home, "busy", create.pid), "the paused create's fleet changed while it was paused"
    finally:
        if create.poll() is None:
            create.send_signal(signal.SIGCONT)
    _, err = create.communicate(timeout=300)
    assert create.returncode == 0, err
    assert not audit(home.store(), home.inventory(), fleets=["busy"], settled=["busy"])
    home.ok("fleet", "destroy", "busy")
    assert fleet_vms(home.inventory(), "busy") == []


PAUSED_LEASE_SECONDS = 3600  # the paused create cannot renew its lease: it must not lapse during the test


def _pause_at_work(home: VmHome, fleet: str, create: subprocess.Popen[str]) -> None:
    """SIGSTOP the create once the store proves it at work: a member `creating` and the fleet's lease held by the
    create's pid (far from lapsing). Checked again once it is stopped (it may have moved on in between), and the
    stopped process must hold no lock on the store (an exclusive lock is taken at once, without waiting), so the
    commands run while it is paused find the store usable; otherwise it runs on and is caught again."""
    deadline = time.monotonic() + 120
    while True:
        assert create.poll() is None, f"the create ended before it was caught at work: {create.communicate()[1]}"
        assert time.monotonic() < deadline, "the create never showed a member creating under its lease"
        if _at_work(home, fleet, create.pid):
            create.send_signal(signal.SIGSTOP)
            _wait_stopped(create.pid)
            if _at_work(home, fleet, create.pid) and _store_unlocked(home.db):
                return
            create.send_signal(signal.SIGCONT)
        time.sleep(0.02)


def _at_work(home: VmHome, fleet: str, pid: int) -> bool:
    """The fleet is `creating` with a member `creating`, and its lease is the create's, held for more than half
    of PAUSED_LEASE_SECONDS still."""
    store = home.store()
    record = store.fleets.get(fleet)
    if record is None or record.state != "creating" or not any(m.state == "creating" for m in store.of(fleet)):
        return False
    db = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True, timeout=30.0)
    try:
        row = db.execute("SELECT holder, operation, expires_at - (julianday('now') - 2440587.5) * 86400.0 "
                         "FROM leases WHERE fleet = ?", (fleet,)).fetchone()
    finally:
        db.close()
    return row is not None and row[0].endswith(f":{pid}") and row[1] == "fleet create" \
        and row[2] > PAUSED_LEASE_SECONDS / 2


def _wait_stopped(pid: int) -> None:
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] not in "Tt":
        assert time.monotonic() < deadline, f"process {pid} did not stop"
        time.sleep(0.005)


def _store_unlocked(db_path: Path) -> bool:
    """Whether nothing holds the store's lock: an exclusive transaction begins at once (and is rolled back)."""
    db = sqlite3.connect(db_path, timeout=0, isolation_level=None)
    try:
        db.execute("BEGIN EXCLUSIVE")
        db.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        db.close()


def test_lease_holder_liveness_ignores_zombies_and_reused_pids() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    held = Lease("f", f"me@here:{child.pid}", "fleet create", 0.0, 0.0, process=process_identity(child.pid))
    assert held.process and not holder_gone(held)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{child.pid}/stat").read_text().rsplit(") ", 1)[1][0] != "Z":  # exited, not yet reaped
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert holder_gone(held)
    child.wait()
    assert holder_gone(held)  # gone
    mine = process_identity()
    assert not holder_gone(Lease("f", "me@here:1", "fleet create", 0.0, 0.0, process=mine))
    reused = mine.rsplit("/", 1)[0] + "/0"  # this pid, but a process that started at another time
    assert holder_gone(Lease("f", "me@here:1", "fleet create", 0.0, 0.0, process=reused))


def test_oversized_bodies_get_their_413_and_the_connection_stays_usable(mock_clouds) -> None:
    """Found by the wire fuzzer: the REST mocks answered 413 without reading the body and closed the connection
    without saying so; clients saw a reset, or lost their next request on the reused connection."""
    endpoint = mock_clouds.endpoints["lambda"]
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {endpoint['api_key']}"
    big = session.post(endpoint["url"] + "/instance-operations/launch", data=b"x" * (2 << 20), timeout=30)
    assert big.status_code == 413 and big.json()["error"]["code"] == "global/invalid-parameters"
    assert big.headers["Connection"] == "close"
    assert session.get(endpoint["url"] + "/instances", timeout=30).status_code == 200
