"""The fleet store: transactional, safe across processes, private, and exact about names.

The contract tests run on both backends (`store_at`: SQLite file, PostgreSQL database of the throwaway cluster of
tests/pgcluster.py); the SQLite file's own properties (mode, old layouts) have their own tests."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from vm_core.errors import UsageError
from vm_core.fleet.location import store_at
from vm_core.fleet.store import (
    FleetExists,
    FleetRecord,
    FleetState,
    FleetStore,
    LeaseHeld,
    MemberRecord,
    MemberState,
    SqliteFleetStore,
)


def fleet(name: str = "train", **changes) -> FleetRecord:
    fields = {"gpu": "H100", "gpu_count": None, "count": 4, "min_count": 4, "strategy": "spread"}
    return FleetRecord(name=name, **(fields | changes))


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str | None, Path]:
    """(store URL or None, state dir): one empty store of each backend."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    return url, tmp_path


@pytest.fixture
def opener(where: tuple[str | None, Path]) -> Callable[[], FleetStore]:
    """Opens the test's store (again): another handle, as another process would have."""
    return lambda: store_at(*where)


@pytest.fixture
def store(opener: Callable[[], FleetStore]) -> FleetStore:
    return opener()


def _spawn(code: str, where: tuple[str | None, Path], *args: str) -> subprocess.Popen[str]:
    url, state_dir = where
    return subprocess.Popen([sys.executable, "-c", code, url or "", str(state_dir), *args], stdout=subprocess.PIPE,
                            text=True)


def test_fleet_roundtrip_and_update(store: FleetStore) -> None:
    store.create_fleet(fleet(providers=("crusoe", "nebius"), region="eu-north1"))
    got = store.get_fleet("train")
    assert got is not None and got.providers == ("crusoe", "nebius") and got.state is FleetState.CREATING
    updated = store.update_fleet("train", state=FleetState.ACTIVE, message="4 of 4 running")
    assert store.get_fleet("train") == updated and updated.updated_at >= got.updated_at
    assert [f.name for f in store.list_fleets()] == ["train"]
    assert store.get_fleet("nope") is None
    with pytest.raises(KeyError):
        store.update_fleet("nope", state=FleetState.FAILED)


def test_duplicate_name_is_refused(store: FleetStore) -> None:
    store.create_fleet(fleet())
    with pytest.raises(FleetExists):
        store.create_fleet(fleet(min_count=1))
    assert store.get_fleet("train").min_count == 4


def test_members_record_every_attempt(store: FleetStore) -> None:
    store.create_fleet(fleet())
    store.add_member(MemberRecord(fleet="train", slot=1, attempt=1, provider="crusoe", name="train-1"))
    store.add_member(MemberRecord(fleet="train", slot=0, attempt=1, provider="lambda", name="train-0"))
    store.update_member("train", 1, 1, state=MemberState.FAILED, error="out of stock")
    store.add_member(MemberRecord(fleet="train", slot=1, attempt=2, provider="nebius", name="train-1"))
    store.update_member("train", 1, 2, state=MemberState.CREATING, instance_id="computeinstance-e00x")
    rows = [(m.slot, m.attempt, m.provider, m.state) for m in store.members("train")]
    assert rows == [(0, 1, "lambda", MemberState.INTENT), (1, 1, "crusoe", MemberState.FAILED),
                    (1, 2, "nebius", MemberState.CREATING)]
    with pytest.raises(KeyError):
        store.update_member("train", 9, 1, state=MemberState.FAILED)
    store.delete_fleet("train")
    assert store.members("train") == [] and store.get_fleet("train") is None


def test_many_members_change_in_one_transaction_all_or_none(store: FleetStore) -> None:
    store.create_fleet(fleet())
    for slot in range(3):
        store.add_member(MemberRecord(fleet="train", slot=slot, attempt=1, provider="nebius", name=f"train-{slot}"))
    going = {"state": MemberState.DESTROYING}
    updated = store.update_members("train", [(2, 1, going), (0, 1, going)])
    assert [(m.slot, m.state) for m in updated] == [(2, MemberState.DESTROYING), (0, MemberState.DESTROYING)]
    with pytest.raises(KeyError):  # slot 9 is not recorded: slot 1 is not changed either
        store.update_members("train", [(1, 1, going), (9, 1, going)])
    assert [m.state for m in store.members("train")] == [MemberState.DESTROYING, MemberState.INTENT,
                                                         MemberState.DESTROYING]
    assert store.update_members("train", []) == []


def test_database_file_is_private(tmp_path: Path) -> None:
    SqliteFleetStore(tmp_path / "state" / "vm.db")
    assert stat.S_IMODE((tmp_path / "state" / "vm.db").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700


OPEN = """
import sys, time
from pathlib import Path
from vm_core.fleet.location import store_at
store = store_at(sys.argv[1] or None, Path(sys.argv[2]))
"""

RACE = OPEN + """
from vm_core.fleet.store import FleetExists, FleetRecord
while time.time() < float(sys.argv[3]):
    time.sleep(0.001)
try:
    store.create_fleet(FleetRecord(name="train", gpu="H100", gpu_count=None, count=4, min_count=4,
                                   strategy="spread"))
    print("won")
except FleetExists:
    print("lost")
"""


def test_concurrent_creates_of_one_name_leave_exactly_one_fleet(where, opener) -> None:
    opener()
    start_at = str(time.time() + 3)  # all processes try at the same instant
    procs = [_spawn(RACE, where, start_at) for _ in range(6)]
    outcomes = sorted(p.communicate(timeout=120)[0].strip() for p in procs)
    assert outcomes == ["lost"] * 5 + ["won"]
    assert len(opener().list_fleets()) == 1


def test_threads_share_one_store_safely(store: FleetStore) -> None:
    from concurrent.futures import ThreadPoolExecutor

    store.create_fleet(fleet(count=40))

    def add(slot: int) -> None:
        store.add_member(MemberRecord(fleet="train", slot=slot, attempt=1, provider="nebius", name=f"train-{slot}"))
        store.update_member("train", slot, 1, state=MemberState.RUNNING)

    with ThreadPoolExecutor(32) as pool:
        list(pool.map(add, range(40)))
    assert [m.state for m in store.members("train")] == [MemberState.RUNNING] * 40


VERSION_1 = """
CREATE TABLE fleets (
  name TEXT PRIMARY KEY, gpu TEXT NOT NULL, gpu_count INTEGER, requested_count INTEGER NOT NULL,
  min_count INTEGER NOT NULL, strategy TEXT NOT NULL, providers TEXT, region TEXT, reservation TEXT NOT NULL,
  state TEXT NOT NULL, message TEXT NOT NULL, owner_pid INTEGER NOT NULL, created_at REAL NOT NULL,
  updated_at REAL NOT NULL);
CREATE TABLE members (
  fleet TEXT NOT NULL REFERENCES fleets(name), slot INTEGER NOT NULL, attempt INTEGER NOT NULL,
  provider TEXT NOT NULL, name TEXT NOT NULL, region TEXT NOT NULL, shape TEXT NOT NULL,
  reservation_id TEXT NOT NULL, state TEXT NOT NULL, instance_id TEXT NOT NULL, operation_id TEXT NOT NULL,
  price_per_hour REAL, error TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
  PRIMARY KEY (fleet, slot, attempt));
INSERT INTO fleets VALUES ('old', 'H100', 1, 2, 2, 'spread', '["crusoe"]', NULL, 'auto', 'active', '2 of 2 running',
  0, 1700000000.0, 1700000000.0);
INSERT INTO members VALUES ('old', 0, 1, 'crusoe', 'old-0', 'us-east1', 'h100-80gb-sxm-ib.1x', '', 'running',
  '3f0c6a1e-2b4d-4c8e-9a7f-1d2e3f4a5b6c', '', 3.9, '', 1700000000.0, 1700000000.0);
"""

MIGRATE = """
import sys
from pathlib import Path
from vm_core.fleet.store import SqliteFleetStore
print(SqliteFleetStore(Path(sys.argv[1])).get_fleet("old").fleet_id == "")
"""


def _version_1_store(path: Path) -> None:
    import sqlite3

    db = sqlite3.connect(path)
    db.executescript(VERSION_1)
    db.commit()
    db.close()


def test_a_store_of_the_previous_version_is_migrated_and_keeps_its_fleets(tmp_path: Path) -> None:
    from vm_core.fleet import schema

    path = tmp_path / "vm.db"
    _version_1_store(path)
    store = SqliteFleetStore(path)
    old = store.get_fleet("old")
    assert old is not None and old.fleet_id == "" and old.accounts == {} and old.state is FleetState.ACTIVE
    assert [m.instance_id for m in store.members("old")] == ["3f0c6a1e-2b4d-4c8e-9a7f-1d2e3f4a5b6c"]
    store.create_fleet(fleet(fleet_id="abcdefgh", accounts={"crusoe": "project 1"}, profile="work"))
    new = SqliteFleetStore(path).get_fleet("train")
    assert (new.fleet_id, new.accounts, new.profile) == ("abcdefgh", {"crusoe": "project 1"}, "work")
    assert store._db.execute("SELECT version FROM schema_version").fetchall() == [(schema.LATEST,)]


def test_concurrent_processes_migrate_an_old_store_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "vm.db"
    _version_1_store(path)
    procs = [subprocess.Popen([sys.executable, "-c", MIGRATE, str(path)], stdout=subprocess.PIPE, text=True)
             for _ in range(6)]
    assert [p.communicate(timeout=120)[0].strip() for p in procs] == ["True"] * 6
    assert len(SqliteFleetStore(path).members("old")) == 1


def test_a_store_of_a_newer_vm_is_refused_unchanged(tmp_path: Path) -> None:
    from vm_core.errors import ConfigError

    path = tmp_path / "vm.db"
    SqliteFleetStore(path).close()
    import sqlite3

    db = sqlite3.connect(path)
    db.execute("UPDATE schema_version SET version = 99")
    db.commit()
    db.close()
    with pytest.raises(ConfigError, match="newer than this vm"):
        SqliteFleetStore(path)
    db = sqlite3.connect(path)
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(99,)]


def _execute(where: tuple[str | None, Path], sql: str) -> list[tuple]:
    """Run SQL on the store's database directly, as an older or newer vm would."""
    url, state_dir = where
    if url is None:
        import sqlite3

        db = sqlite3.connect(state_dir / "vm.db", isolation_level=None)
        rows = db.execute(sql).fetchall()
        db.close()
        return rows
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql)
        return cursor.fetchall() if cursor.description else []


def test_a_store_of_a_newer_vm_is_refused_unchanged_on_both_backends(where, opener) -> None:
    from vm_core.errors import ConfigError

    opener()
    _execute(where, "UPDATE schema_version SET version = 99")
    with pytest.raises(ConfigError, match="newer than this vm") as raised:
        opener()
    assert raised.value.exit_code == 4
    assert _execute(where, "SELECT version FROM schema_version") == [(99,)]


OPEN_ONLY = OPEN + """
print(store.list_fleets() == [])
"""


def test_concurrent_processes_create_an_empty_store_exactly_once(where) -> None:
    from vm_core.fleet import schema

    procs = [_spawn(OPEN_ONLY, where) for _ in range(6)]
    assert [p.communicate(timeout=120)[0].strip() for p in procs] == ["True"] * 6
    assert _execute(where, "SELECT version FROM schema_version") == [(schema.LATEST,)]


def test_a_store_migrated_by_another_process_while_this_one_waited_is_not_migrated_again(postgres_url: str) -> None:
    """Found by the team soak: a process that found the database empty, then waited for the schema lock while
    another created the tables, read the catalog as it was before (PostgreSQL takes in other sessions' catalog
    changes only at certain points; waiting for an advisory lock is none) and ran the migrations again:
    DuplicateColumn, an internal error."""
    import threading

    import psycopg
    from vm_core.fleet import schema
    from vm_core.fleet.store_pg import MIGRATION_LOCK, PostgresFleetStore

    with psycopg.connect(postgres_url) as other:  # another process, its migration under way: it holds the lock
        other.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        opened: list[BaseException | None] = []

        def open_store() -> None:
            try:
                PostgresFleetStore(postgres_url, shown="late").close()
                opened.append(None)
            except BaseException as exc:  # noqa: BLE001 - asserted below
                opened.append(exc)

        late = threading.Thread(target=open_store)
        late.start()
        deadline = time.monotonic() + 60
        while not other.execute("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").fetchall():
            assert time.monotonic() < deadline, "the second opener never waited for the schema lock"
            time.sleep(0.01)
        other.execute(schema.VERSION_TABLE)
        for _, statements in schema.pending(0):
            for statement in statements:
                other.execute(statement)
        other.execute("INSERT INTO schema_version (version) VALUES (%s)", (schema.LATEST,))
    late.join(timeout=60)
    assert opened == [None], opened
    assert _execute((postgres_url, None), "SELECT version FROM schema_version") == [(schema.LATEST,)]


OPEN_AT_ONCE = """
import sys, time
from pathlib import Path
from vm_core.fleet.store import SqliteFleetStore
go = Path(sys.argv[1]) / "go"
while not go.exists():
    time.sleep(0.001)
SqliteFleetStore(Path(sys.argv[1]) / "fleets.db").close()
print("opened")
"""


def test_processes_opening_a_new_sqlite_file_at_the_same_instant_all_succeed(tmp_path: Path) -> None:
    """Switching a new file to WAL from several processes at once can fail without SQLite's busy handler; the
    store retries it (this once ended a racing `vm fleet create` with an internal error)."""
    for trial in range(8):
        home = tmp_path / str(trial)
        home.mkdir()
        procs = [subprocess.Popen([sys.executable, "-c", OPEN_AT_ONCE, str(home)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(6)]
        time.sleep(0.5)  # let every process import and wait for the signal
        (home / "go").touch()
        results = [p.communicate(timeout=120) for p in procs]
        assert [out.strip() for out, _ in results] == ["opened"] * 6, [err for _, err in results if err]


class _QuickSqliteStore(SqliteFleetStore):
    BUSY_SECONDS = 0.2


def test_a_sqlite_store_locked_past_the_busy_timeout_is_transient(tmp_path: Path) -> None:
    import sqlite3

    from vm_core.errors import Transient

    store = _QuickSqliteStore(tmp_path / "fleets.db")
    holder = sqlite3.connect(tmp_path / "fleets.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    with pytest.raises(Transient, match="stayed locked by another vm process"):
        store.create_fleet(fleet())
    holder.execute("ROLLBACK")
    store.create_fleet(fleet())
    assert [f.name for f in store.list_fleets()] == ["train"]


def test_leases_refuse_other_holders_until_they_lapse(store: FleetStore) -> None:
    alice, bob = "alice@laptop:101", "bob@ci-7:202"
    held = store.acquire_lease("train", alice, "fleet create", 60)
    assert (held.holder, held.previous) == (alice, "") and 59 <= held.remaining <= 60
    assert store.lease("train").holder == alice
    with pytest.raises(LeaseHeld) as refused:
        store.acquire_lease("train", bob, "fleet destroy", 60)
    assert refused.value.lease.holder == alice and refused.value.lease.operation == "fleet create"
    assert refused.value.lease.remaining > 50
    assert store.renew_lease("train", alice, 60) and not store.renew_lease("train", bob, 60)
    store.release_lease("train", bob)  # not bob's: nothing happens
    assert store.lease("train").holder == alice
    store.release_lease("train", alice)
    assert store.lease("train") is None
    assert store.acquire_lease("train", bob, "fleet destroy", 60).holder == bob


def test_a_lapsed_lease_is_taken_over_and_its_holder_learns_it(store: FleetStore) -> None:
    alice, bob = "alice@laptop:101", "bob@ci-7:202"
    store.acquire_lease("train", alice, "fleet create", 0)  # lapses at once: alice's machine died
    assert store.lease("train") is None
    taken = store.acquire_lease("train", bob, "fleet destroy", 60)
    assert (taken.holder, taken.previous) == (bob, alice)
    assert store.renew_lease("train", alice, 60) is False
    store.release_lease("train", alice)
    assert store.lease("train").holder == bob


LEASE_RACE = OPEN + """
from vm_core.fleet.store import LeaseHeld
while time.time() < float(sys.argv[3]):
    time.sleep(0.001)
try:
    store.acquire_lease("train", sys.argv[4], "fleet create", 60)
    print("won")
except LeaseHeld as exc:
    print("lost to " + exc.lease.holder)
"""


def test_concurrent_processes_racing_for_a_lease_leave_exactly_one_holder(where, opener) -> None:
    opener()
    start_at = str(time.time() + 3)
    procs = [_spawn(LEASE_RACE, where, start_at, f"user@host-{n}:{n}") for n in range(6)]
    outcomes = [p.communicate(timeout=120)[0].strip() for p in procs]
    winner = opener().lease("train").holder
    assert sorted(outcomes) == sorted(["won"] + [f"lost to {winner}"] * 5)
    assert outcomes[int(winner.rsplit(":", 1)[1])] == "won"


UPDATES = OPEN + """
field = sys.argv[3]
for n in range(40):
    store.update_member("train", 0, 1, **{field: f"{field}-{n}"})
print("done")
"""


def test_concurrent_updates_of_one_member_from_two_processes_lose_nothing(where, store) -> None:
    store.create_fleet(fleet())
    store.add_member(MemberRecord(fleet="train", slot=0, attempt=1, provider="nebius", name="train-0"))
    procs = [_spawn(UPDATES, where, f) for f in ("error", "operation_id", "instance_id")]
    assert [p.communicate(timeout=120)[0].strip() for p in procs] == ["done"] * 3
    member = store.members("train")[0]
    assert (member.error, member.operation_id, member.instance_id) == ("error-39", "operation_id-39",
                                                                       "instance_id-39")


HOLD = OPEN + """
from vm_core.fleet.lease import process_identity, this_process
store.acquire_lease("train", this_process(), "fleet create", 600, process=process_identity())
print(this_process(), flush=True)
time.sleep(600)
"""


def _take(store: FleetStore, fleet: str) -> str:
    from vm_core.fleet.lease import lease

    with lease(store, fleet, "fleet destroy") as held:
        return held.holder


def test_a_dead_holder_on_this_machine_is_taken_over_at_once(where, opener) -> None:
    import signal

    from vm_core.fleet.lease import lease, live_lease

    opener()
    holder = _spawn(HOLD, where)
    name = holder.stdout.readline().strip()
    store = opener()
    assert live_lease(store, "train").holder == name
    with pytest.raises(UsageError, match=f"being changed by {name} .fleet create.; its lease lapses at"):
        _take(store, "train")
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=60)
    assert store.lease("train").holder == name  # the lease has not lapsed: 600 s
    assert live_lease(store, "train") is None  # but its holder provably died
    with lease(store, "train", "fleet destroy") as taken:
        assert taken.previous == name
    assert store.lease("train") is None


def test_a_holder_on_another_machine_is_waited_for(store: FleetStore) -> None:
    from vm_core.fleet.lease import live_lease, process_identity

    mine = process_identity()
    other_machine = "0b5e1f2a-other-boot/pid:[1]/1/1"  # its pid 1 may well not run here: that proves nothing
    store.acquire_lease("train", "alice@laptop:1", "fleet create", 600, process=other_machine)
    assert live_lease(store, "train").holder == "alice@laptop:1"
    with pytest.raises(UsageError, match="being changed by alice@laptop:1"):
        _take(store, "train")
    if mine:  # same machine, but the recorded pid runs another process now (reused): gone
        boot, namespace, _ = mine.split("/", 2)
        store.acquire_lease("reused", "alice@here:1", "fleet create", 600,
                            process=f"{boot}/{namespace}/{os.getpid()}/0")
        assert live_lease(store, "reused") is None


def test_a_held_lease_is_renewed_and_its_loss_is_reported(store: FleetStore) -> None:
    import threading

    from vm_core.fleet.lease import lease

    store.lease_seconds = 1.5  # heartbeats every 0.5 s
    lost = threading.Event()
    with lease(store, "train", "fleet create", on_lost=lost.set) as held:
        deadline = time.monotonic() + 120
        while store.lease("train") is None or store.lease("train").expires_at <= held.expires_at:
            assert time.monotonic() < deadline, "the heartbeat never renewed the lease"
            time.sleep(0.05)
        store.acquire_lease("train", "bob@ci-7:202", "fleet destroy", 600, replacing=held.holder)
        assert lost.wait(120), "the holder was not told that its lease was taken over"
    assert store.lease("train").holder == "bob@ci-7:202"  # releasing a lost lease leaves the new holder's


def test_a_fleet_keeps_its_machine_options_on_both_backends(store: FleetStore) -> None:
    from vm_core.machine import MachineOptions

    machine = MachineOptions(image="ubuntu24.04-cuda12.8", disk_gib=250, startup_script="#!/bin/bash\necho 'é'\n")
    store.create_fleet(fleet(machine=machine))
    store.create_fleet(fleet("plain"))
    assert store.get_fleet("train").machine == machine
    assert store.update_fleet("train", state=FleetState.ACTIVE).machine == machine
    assert store.get_fleet("plain").machine == MachineOptions()


def test_a_store_of_version_4_gets_the_machine_column_and_its_fleets_the_defaults(tmp_path: Path) -> None:
    import sqlite3

    from vm_core.fleet import schema
    from vm_core.machine import MachineOptions

    path = tmp_path / "vm.db"
    db = sqlite3.connect(path)
    db.execute(schema.VERSION_TABLE)
    for version, statements in schema.pending(0):
        if version <= 4:
            for statement in statements:
                db.execute(statement)
    db.execute("INSERT INTO schema_version VALUES (4)")
    db.execute("INSERT INTO fleets (name, gpu, gpu_count, requested_count, min_count, strategy, reservation, state, "
               "message, owner_pid, created_at, updated_at) VALUES ('old', 'H100', 1, 2, 2, 'spread', 'auto', "
               "'active', '', 0, 1700000000.0, 1700000000.0)")
    db.commit()
    db.close()
    store = SqliteFleetStore(path)
    assert store.get_fleet("old").machine == MachineOptions()
    assert store._db.execute("SELECT version FROM schema_version").fetchall() == [(schema.LATEST,)]


# The rows a store of version 5 holds, as that version wrote them (its dump, `sqlite3 vm.db .dump`): reservation
# text with " (strict)" appended for --strict, and a cluster fleet's placement in its strategy.
VERSION_5_ROWS = (
    "INSERT INTO \"fleets\" VALUES('strict','H100',8,2,2,'spread',NULL,NULL,'res-7f3a (strict)','active',"
     "'',0,1700000000.0,1700000000.0,'k3j9x2qa','','{}','ana@ws-1',NULL,NULL,'')",
    "INSERT INTO \"fleets\" VALUES('lenient','H100',8,2,2,'cheapest',NULL,NULL,'res-7f3a','active','',0,"
     "1700000000.0,1700000000.0,'k3j9x2qa','','{}','ana@ws-1',NULL,NULL,'')",
    "INSERT INTO \"fleets\" VALUES('cluster','H100',8,2,2,'cluster',NULL,NULL,'auto (strict)','active','',"
     "0,1700000000.0,1700000000.0,'k3j9x2qa','','{}','ana@ws-1',NULL,NULL,'')",
    "INSERT INTO \"fleets\" VALUES('plain','H100',8,2,2,'spread',NULL,NULL,'none','active','',0,"
     "1700000000.0,1700000000.0,'k3j9x2qa','','{}','ana@ws-1',NULL,NULL,'')",
    "INSERT INTO \"members\" VALUES('cluster',0,1,'nebius','cluster-0','eu-north1',"
     "'gpu-h100-sxm/8gpu-128vcpu-1600gb','','running','computeinstance-e00abc','',NULL,'',1700000000.0,"
     "1700000000.0)",
)


def _store_of_version(where: tuple[str | None, Path], version: int) -> None:
    """Lay out the test's empty store as vm at schema `version` left it (its migrations only)."""
    from vm_core.fleet import schema

    for number, statements in schema.pending(0):
        for statement in statements if number <= version else ():
            _execute(where, statement)
    _execute(where, schema.VERSION_TABLE)
    _execute(where, f"INSERT INTO schema_version (version) VALUES ({version})")


def test_a_store_of_version_5_gets_its_reservations_and_placement_as_columns(where: tuple[str | None, Path]) -> None:
    from vm_core.fleet import schema
    from vm_core.fleet.placement import Placement
    from vm_core.model import ReservationMode, ReservationRequest

    _store_of_version(where, 5)
    for row in VERSION_5_ROWS:
        _execute(where, row)
    store = store_at(*where)
    got = {f.name: f for f in store.list_fleets()}
    assert got["strict"].reservation == ReservationRequest(ReservationMode.ID, "res-7f3a", strict=True)
    assert got["lenient"].reservation == ReservationRequest(ReservationMode.ID, "res-7f3a")
    assert got["cluster"].reservation == ReservationRequest(ReservationMode.AUTO, strict=True)
    assert got["plain"].reservation == ReservationRequest(ReservationMode.NONE)
    assert [got[n].placement for n in ("strict", "lenient", "cluster", "plain")] == [
        Placement.ANY, Placement.ANY, Placement.CLUSTER, Placement.ANY]
    assert (got["cluster"].strategy, got["lenient"].strategy, got["strict"].fleet_id) == ("cluster", "cheapest",
                                                                                         "k3j9x2qa")
    assert [m.instance_id for m in store.members("cluster")] == ["computeinstance-e00abc"]
    assert _execute(where, "SELECT version FROM schema_version") == [(schema.LATEST,)]
    updated = store.update_fleet("strict", state=FleetState.DEGRADED)
    assert store_at(*where).get_fleet("strict") == updated and updated.reservation.strict


def test_a_store_of_version_7_keeps_each_fleets_count_under_its_one_name(where: tuple[str | None, Path]) -> None:
    from vm_core.fleet import schema

    _store_of_version(where, 7)
    _execute(where, "INSERT INTO fleets (name, gpu, gpu_count, requested_count, min_count, strategy, reservation, "
                    "state, message, owner_pid, created_at, updated_at) VALUES ('old', 'H100', 8, 5, 3, 'spread', "
                    "'auto', 'active', '', 0, 1700000000.0, 1700000000.0)")
    store = store_at(*where)
    old = store.get_fleet("old")
    assert old is not None and (old.count, old.min_count) == (5, 3)
    assert [f.count for f in store.list_fleets()] == [5]
    assert _execute(where, "SELECT version FROM schema_version") == [(schema.LATEST,)]
    assert store.update_fleet("old", count=6).count == 6 and store_at(*where).get_fleet("old").count == 6
    assert _execute(where, "SELECT count FROM fleets WHERE name = 'old'") == [(6,)]
    store.create_fleet(fleet("new", count=2, min_count=1))
    assert store_at(*where).get_fleet("new").count == 2


def test_reservation_and_placement_round_trip_through_their_columns(store: FleetStore) -> None:
    from vm_core.fleet.placement import Placement
    from vm_core.model import ReservationMode, ReservationRequest

    wanted = ReservationRequest(ReservationMode.ID, "res (strict) x", strict=False)
    store.create_fleet(fleet(reservation=wanted, placement=Placement.CLUSTER))
    got = store.get_fleet("train")
    assert got is not None and got.reservation == wanted and got.placement is Placement.CLUSTER
