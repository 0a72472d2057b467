"""Where fleets and their members are recorded: a small interface, backed by SQLite in WAL mode.

Every placement attempt of a fleet slot is a member row, written *before* the provider is called (state
`intent`) and updated as soon as the cloud answers (instance id, operation id), so a crash at any instant
leaves a record of every VM that might exist. Rows are never deleted while a VM may exist; destroyed members
keep their row (state `destroyed`) as history.

Writes are single transactions, so concurrent `vm` processes are safe; the fleet name is the primary key, so two
concurrent creates of one name leave exactly one fleet. The schema is versioned (schema.py): opening a store applies
the missing forward migrations in one transaction. Two backends share the SQL (`SqlFleetStore`) and the
row<->record conversion below: SQLite here (one file per VM_HOME), PostgreSQL in store_pg.py (one database for a
team). Every operation that changes a fleet holds a lease on its name (lease.py), kept in the store.
"""

from __future__ import annotations

import enum
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ConfigError, Transient
from ..events.store import EventLog
from ..machine import MachineOptions
from ..model import InstanceState, ReservationMode, ReservationRequest
from ..spend.ledger import Ledger, LedgerStore
from ..spend.members import FleetFacts, MemberFacts, record_members_in
from . import schema
from .placement import Placement


class FleetState(enum.StrEnum):
    CREATING = "creating"
    ACTIVE = "active"  # every requested VM runs
    DEGRADED = "degraded"  # fewer than requested (at least min_count, unless reconcile kept fewer: see message)
    ROLLING_BACK = "rolling_back"
    FAILED = "failed"  # below min_count; everything created was destroyed
    INTERRUPTED = "interrupted"  # the creating process died or was stopped; `vm fleet destroy` cleans up
    DESTROYING = "destroying"
    DESTROYED = "destroyed"
    STOPPED = "stopped"  # `vm fleet stop`: every member that can stop is stopped (the others are said)
    WAITING = "waiting"  # --wait-for-capacity: nothing placed yet; placed when the clouds have room


class OnBudget(enum.StrEnum):
    """What reaching a fleet's spend budget does (--on-budget)."""

    STOP = "stop"  # stop every member that can stop; destroy the fleet when one cannot
    DESTROY = "destroy"


class MemberState(enum.StrEnum):
    INTENT = "intent"  # recorded before the create call: the VM may or may not exist
    CREATING = "creating"  # the cloud accepted the create (instance id known)
    RUNNING = "running"
    FAILED = "failed"  # the cloud refused or failed the create: no VM exists
    UNKNOWN = "unknown"  # the create failed ambiguously and a lookup by name found nothing (yet)
    DESTROYING = "destroying"
    DESTROYED = "destroyed"  # the cloud confirmed it is gone
    RELEASED = "released"  # the cloud refuses to delete it (Lambda reservation): still running, no longer ours
    MISSING = "missing"  # the record says it existed but the cloud no longer has it

    @property
    def may_exist(self) -> bool:
        """The member may have a VM in a cloud that is still the fleet's: destroy and reconcile must look."""
        return self in (MemberState.INTENT, MemberState.CREATING, MemberState.RUNNING, MemberState.UNKNOWN,
                        MemberState.DESTROYING)

    @property
    def may_run(self) -> bool:
        """The member is, or may be, a VM (`may_exist`, or released: still running outside the fleet)."""
        return self.may_exist or self is MemberState.RELEASED

    @property
    def visible(self) -> bool:
        """A fleet's views list the member: it is, or may be, a VM (`may_run`), or it went outside vm (missing)."""
        return self.may_run or self is MemberState.MISSING

    @property
    def as_instance_state(self) -> InstanceState:
        """The instance state a member's record stands for when its cloud is not asked."""
        return _RECORDED[self]


_RECORDED = {
    MemberState.INTENT: InstanceState.CREATING, MemberState.CREATING: InstanceState.CREATING,
    MemberState.RUNNING: InstanceState.RUNNING, MemberState.FAILED: InstanceState.ERROR,
    MemberState.UNKNOWN: InstanceState.UNKNOWN, MemberState.DESTROYING: InstanceState.TERMINATING,
    MemberState.DESTROYED: InstanceState.TERMINATED, MemberState.RELEASED: InstanceState.RUNNING,
    MemberState.MISSING: InstanceState.MISSING,
}

# Members in these states may have a VM in a cloud (`MemberState.may_exist`), as a set.
MAY_EXIST = frozenset(m for m in MemberState if m.may_exist)


class FleetExists(Exception):
    """A fleet of that name is already recorded."""


class FleetMissing(KeyError):
    """The fleet (or its member) is not recorded, e.g. another process destroyed the fleet meanwhile."""


@dataclass(frozen=True, slots=True)
class FleetRecord:
    """A fleet. `fleet_id` is the random id every member VM carries ('' for fleets recorded before ids
    existed); `accounts` maps each provider the fleet may use to a fingerprint of its account (never a secret);
    `expires_at` (--ttl) and `max_price` (--max-price) are None when not asked for."""

    name: str
    gpu: str
    gpu_count: int | None
    count: int
    min_count: int
    strategy: str
    providers: tuple[str, ...] | None = None
    region: str | None = None
    reservation: ReservationRequest = ReservationRequest()  # --reservation and --strict
    state: FleetState = FleetState.CREATING
    message: str = ""
    owner_pid: int = 0
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    fleet_id: str = ""
    profile: str = ""
    accounts: dict[str, str] = field(default_factory=dict)
    created_by: str = ""  # user@host
    expires_at: float | None = None  # epoch seconds after which `vm fleet reap` destroys it (None: never)
    max_price: float | None = None  # the cap on the fleet's total $/h (None: none)
    machine: MachineOptions = MachineOptions()  # what every member boots (--image, --disk-size, --startup-script)
    placement: Placement = Placement.ANY  # CLUSTER: every member in one place (--placement cluster)
    budget: float | None = None  # the cap on the fleet's total spend in USD (--budget; None: none)
    on_budget: OnBudget = OnBudget.STOP  # what reaching the budget does (--on-budget)
    maintain: bool = False  # the watchdog keeps count running (--maintain)
    spot: bool = False  # members beyond on_demand_base are spot where a cloud sells spot (--spot)
    on_demand_base: int = 0  # with spot: how many members are on-demand (--on-demand-base)
    spot_fallback: bool = False  # with spot: on-demand when no spot can be placed (--spot-fallback)
    wait_until: float | None = None  # epoch seconds until which a waiting fleet waits (--wait-for-capacity)


@dataclass(frozen=True, slots=True)
class MemberRecord:
    fleet: str
    slot: int
    attempt: int
    provider: str
    name: str
    region: str = ""
    shape: str = ""
    reservation_id: str = ""
    state: MemberState = MemberState.INTENT
    instance_id: str = ""
    operation_id: str = ""
    price_per_hour: float | None = None
    error: str = ""
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    spot: bool = False  # placed on a spot offer (the cloud may take it back)


class FleetStore(Ledger, Protocol):
    """Where fleets are recorded, and the spend ledger (Ledger). `lease_seconds` is how long a lease this process
    takes lasts unless renewed."""

    lease_seconds: float

    def create_fleet(self, fleet: FleetRecord) -> None:
        """Record a new fleet; raises FleetExists if the name is taken (also under concurrency)."""
        ...

    def get_fleet(self, name: str) -> FleetRecord | None: ...

    def list_fleets(self) -> list[FleetRecord]: ...

    def update_fleet(self, name: str, **changes: Any) -> FleetRecord:
        """Change fields of a fleet (updated_at is set); raises FleetMissing (a KeyError) for an unknown fleet."""
        ...

    def add_member(self, member: MemberRecord) -> None:
        """Record a placement attempt (before the provider is called); raises FleetMissing when the fleet is
        not recorded."""
        ...

    def update_member(self, fleet: str, slot: int, attempt: int, **changes: Any) -> MemberRecord:
        """Change fields of a member; raises FleetMissing when it is not recorded."""
        ...

    def update_members(self, fleet: str, updates: Sequence[tuple[int, int, Mapping[str, Any]]]) -> list[MemberRecord]:
        """`update_member` for many members of one fleet, (slot, attempt, changes) each, in one transaction: all
        are changed or none (FleetMissing when one is not recorded). The updated records, in `updates` order."""
        ...

    def write_members(self, fleet: str, new: Sequence[MemberRecord],
                      updates: Sequence[tuple[int, int, Mapping[str, Any]]]) -> list[MemberRecord]:
        """`add_member` of each of `new` (all of fleet `fleet`), then `update_members(fleet, updates)`, in one
        transaction: all are written or none (FleetMissing as either raises it). The updated records, in
        `updates` order."""
        ...

    def members(self, fleet: str) -> list[MemberRecord]:
        """Every attempt of every slot, in (slot, attempt) order."""
        ...

    def delete_fleet(self, name: str) -> None:
        """Forget a fleet and its members (only once none may exist)."""
        ...

    def acquire_lease(self, fleet: str, holder: str, operation: str, seconds: float, *, process: str = "",
                      replacing: str = "") -> Lease:
        """Take the lease on the fleet name (the fleet need not be recorded yet) for `seconds`, measured on the
        store's clock. A lapsed lease, or a live one of the holder `replacing` (known to be dead), is taken over
        (`Lease.previous` names its holder); the holder's own lease is extended. Raises LeaseHeld when another
        holder's lease is live (also under concurrency). `process` identifies the holder's process exactly."""
        ...

    def renew_lease(self, fleet: str, holder: str, seconds: float) -> bool:
        """Extend the holder's lease to `seconds` from now; False when it is no longer the holder's."""
        ...

    def release_lease(self, fleet: str, holder: str) -> None:
        """Drop the holder's lease (nothing when another process holds it now)."""
        ...

    def lease(self, fleet: str) -> Lease | None:
        """The live lease on the fleet; None when there is none or it lapsed."""
        ...


@dataclass(frozen=True, slots=True)
class Lease:
    """Who may change a fleet until when. Times are epoch seconds of the store's clock (on PostgreSQL the
    server's, so machines with skewed clocks agree); `now` is that clock when the lease was read."""

    fleet: str
    holder: str  # user@host:pid
    operation: str  # e.g. "fleet create"
    expires_at: float
    now: float
    previous: str = ""  # the holder of the lapsed lease this one took over
    process: str = ""  # the holder process's exact identity where the OS tells (lease.py); "" elsewhere

    @property
    def remaining(self) -> float:
        return self.expires_at - self.now


class LeaseHeld(Exception):
    """Another process holds a live lease on the fleet."""

    def __init__(self, lease: Lease) -> None:
        super().__init__(lease.holder)
        self.lease = lease


DEFAULT_LEASE_SECONDS = 60.0
# The fleet columns read: each field of FleetRecord, its reservation as three (schema version 6).
_RESERVATION_COLUMNS = ["reservation_mode", "reservation_id", "reservation_strict"]
_FLEET_COLUMNS = [column for f in fields(FleetRecord)
                  for column in (_RESERVATION_COLUMNS if f.name == "reservation" else [f.name])]
_MEMBER_COLUMNS = [f.name for f in fields(MemberRecord)]
_MEMBER_KEY = "WHERE fleet = ? AND slot = ? AND attempt = ?"


class SqlFleetStore(LedgerStore, EventLog):
    """The FleetStore operations in SQL shared by both backends (placeholders `?`), and the spend ledger's
    (LedgerStore: a member that gets an instance id or changes state is entered in the ledger in the same
    transaction). A backend provides:
    `_write()` (a context manager: one transaction, yielding an object with DB-API `execute`), `_read(sql,
    params)` (rows of one statement), `_unversioned_layout(db)`, `location` (for messages), and these:"""

    _FOR_UPDATE = ""  # the row-lock clause of a SELECT in a write transaction
    _NOW = ""  # SQL of the store clock in epoch seconds
    _TABLE_EXISTS = ""  # SQL with one `?` (a table name): one row when that table exists
    _DUPLICATE: tuple[type[BaseException], ...] = ()  # what a duplicate primary key raises
    location: str
    lease_seconds: float
    clock: Callable[[], float] = staticmethod(time.time)

    if TYPE_CHECKING:  # what each backend defines (see above)
        def _write(self) -> AbstractContextManager[Any]: ...

        def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]: ...

    def _migrate(self) -> None:
        """Bring the schema to schema.LATEST; ConfigError for a store of a newer vm. A store at the latest
        version is only read (no lock, no DDL), so a role that may use the tables but create none opens it (team
        mode's users, docs/fleets.md). Otherwise the missing migrations are applied in one write transaction under
        the schema lock, the version read again there: processes opening an old store at once migrate it exactly
        once. `_migrations()` surrounds that transaction.

        Under the lock the version table is created (if missing) before anything is read: that DDL makes a
        PostgreSQL backend take in the catalog changes another process committed while this one waited for the
        lock (an advisory lock does not), so the version read next is the one just committed, never a stale
        "no table yet" that would run the migrations twice."""
        if self._version(self._read) == schema.LATEST:
            return
        with self._migrations(), self._write() as db:
            self._lock_schema(db)
            db.execute(schema.VERSION_TABLE)
            current = self._version(lambda sql, params: db.execute(sql, params).fetchall())
            for version, statements in schema.pending(current):
                for statement in statements:
                    db.execute(statement)
                db.execute("DELETE FROM schema_version")
                db.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))

    def _version(self, read: Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]) -> int:
        """The store's schema version through `read` (rows of one statement): 0 for an empty store, 1 for one
        written before versions were recorded. ConfigError when it is newer than this vm's."""
        rows = read("SELECT MAX(version) FROM schema_version", ()) if read(self._TABLE_EXISTS, ("schema_version",)) \
            else []
        current = rows[0][0] if rows and rows[0][0] is not None else None
        if current is None:
            current = 1 if read(self._TABLE_EXISTS, ("fleets",)) else 0
        if current > schema.LATEST:
            raise ConfigError(f"the fleet store {self.location} has schema version {current}, newer than this "
                              f"vm understands ({schema.LATEST})", suggestion="upgrade vm-core")
        return int(current)

    def _migrations(self) -> AbstractContextManager[None]:
        """Around the transaction that migrates the store (a backend may explain its errors there)."""
        return nullcontext()

    def _lock_schema(self, db: Any) -> None:
        """Serialise migrations between processes (SQLite's BEGIN IMMEDIATE already does)."""

    def create_fleet(self, fleet: FleetRecord) -> None:
        row = _fleet_row(fleet)
        try:
            with self._write() as db:
                db.execute(f"INSERT INTO fleets ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                           list(row.values()))
        except self._DUPLICATE as exc:
            raise FleetExists(fleet.name) from exc

    def get_fleet(self, name: str) -> FleetRecord | None:
        if not _storable(name):
            return None
        rows = self._read(f"SELECT {', '.join(_FLEET_COLUMNS)} FROM fleets WHERE name = ?", (name,))
        return _fleet_from(rows[0]) if rows else None

    def list_fleets(self) -> list[FleetRecord]:
        rows = self._read(f"SELECT {', '.join(_FLEET_COLUMNS)} FROM fleets ORDER BY created_at, name", ())
        return [_fleet_from(row) for row in rows]

    def update_fleet(self, name: str, **changes: Any) -> FleetRecord:
        if not _storable(name):
            raise FleetMissing(name)
        with self._write() as db:
            row = db.execute(f"SELECT {', '.join(_FLEET_COLUMNS)} FROM fleets WHERE name = ?{self._FOR_UPDATE}",
                             (name,)).fetchone()
            if row is None:
                raise FleetMissing(name)
            updated = replace(_fleet_from(row), **changes, updated_at=time.time())
            values = _fleet_row(updated)
            db.execute(f"UPDATE fleets SET {', '.join(f'{k} = ?' for k in values)} WHERE name = ?",
                       [*values.values(), name])
        return updated

    def add_member(self, member: MemberRecord) -> None:
        self.write_members(member.fleet, [member], [])

    def update_member(self, fleet: str, slot: int, attempt: int, **changes: Any) -> MemberRecord:
        return self.update_members(fleet, [(slot, attempt, changes)])[0]

    def update_members(self, fleet: str, updates: Sequence[tuple[int, int, Mapping[str, Any]]]) -> list[MemberRecord]:
        return self.write_members(fleet, [], updates)

    def write_members(self, fleet: str, new: Sequence[MemberRecord],
                      updates: Sequence[tuple[int, int, Mapping[str, Any]]]) -> list[MemberRecord]:
        if not _storable(fleet):
            raise FleetMissing((fleet, *updates[0][:2]) if updates else fleet)
        if not new and not updates:
            return []
        with self._write() as db:
            if new:
                self._insert_members(db, fleet, new)
            return self._update_members_in(db, fleet, updates) if updates else []

    def _insert_members(self, db: Any, fleet: str, new: Sequence[MemberRecord]) -> None:
        if db.execute(f"SELECT 1 FROM fleets WHERE name = ?{self._FOR_UPDATE}", (fleet,)).fetchone() is None:
            raise FleetMissing(fleet)
        rows = [_member_row(m) for m in new]
        db.executemany(f"INSERT INTO members ({', '.join(rows[0])}) VALUES ({', '.join('?' * len(rows[0]))})",
                       [list(row.values()) for row in rows])
        self._enter_in_ledger(db, fleet, list(new))  # an adopted VM is recorded with its id

    def _update_members_in(self, db: Any, fleet: str,
                           updates: Sequence[tuple[int, int, Mapping[str, Any]]]) -> list[MemberRecord]:
        done = []
        now = self.clock()
        recorded = self._locked_attempts(db, fleet, {slot for slot, _, _ in updates})
        for slot, attempt, changes in updates:
            if (slot, attempt) not in recorded:
                raise FleetMissing((fleet, slot, attempt))
            updated = recorded[slot, attempt] = replace(recorded[slot, attempt], **changes, updated_at=now)
            done.append(updated)
        rows = [_member_row(m) for m in done]  # every column, so one statement serves every row
        db.executemany(f"UPDATE members SET {', '.join(f'{k} = ?' for k in rows[0])} {_MEMBER_KEY}",
                       [[*row.values(), fleet, m.slot, m.attempt] for row, m in zip(rows, done, strict=True)])
        self._enter_in_ledger(db, fleet, done)
        return done

    def _enter_in_ledger(self, db: Any, fleet: str, members: list[MemberRecord]) -> None:
        """Enter the changed members in the spend ledger (spend/members.py), inside the transaction `db`."""
        if not any(m.instance_id for m in members):
            return
        row = db.execute(f"SELECT {', '.join(_FLEET_COLUMNS)} FROM fleets WHERE name = ?", (fleet,)).fetchone()
        if row is None:
            return
        record = _fleet_from(row)
        facts = FleetFacts(record.name, record.fleet_id, record.profile, record.created_by, record.gpu,
                           record.gpu_count or 0, record.accounts)
        record_members_in(db, facts, [MemberFacts(m.provider, m.instance_id, m.name, m.shape, m.region,
                                                  m.reservation_id, m.spot, m.state.value, m.price_per_hour,
                                                  m.updated_at)
                                      for m in members])

    def _locked_attempts(self, db: Any, fleet: str, slots: set[int]) -> dict[tuple[int, int], MemberRecord]:
        """Every recorded attempt of `slots` of the fleet, by (slot, attempt), read with one query that locks
        their rows until the transaction ends (in slot order, so two writers never wait on each other in a ring)."""
        marks = ", ".join("?" * len(slots))
        rows = db.execute(f"SELECT {', '.join(_MEMBER_COLUMNS)} FROM members WHERE fleet = ? AND slot IN ({marks}) "
                          f"ORDER BY slot, attempt{self._FOR_UPDATE}", (fleet, *sorted(slots))).fetchall()
        return {(m.slot, m.attempt): m for m in map(_member_from, rows)}

    def members(self, fleet: str) -> list[MemberRecord]:
        if not _storable(fleet):
            return []
        rows = self._read(f"SELECT {', '.join(_MEMBER_COLUMNS)} FROM members WHERE fleet = ? "
                          "ORDER BY slot, attempt", (fleet,))
        return [_member_from(row) for row in rows]

    def delete_fleet(self, name: str) -> None:
        if not _storable(name):
            return
        with self._write() as db:
            db.execute("DELETE FROM members WHERE fleet = ?", (name,))
            db.execute("DELETE FROM fleets WHERE name = ?", (name,))

    # ------------------------------------------------------------------------------------------ leases
    def acquire_lease(self, fleet: str, holder: str, operation: str, seconds: float, *, process: str = "",
                      replacing: str = "") -> Lease:
        try:
            return self._acquire(fleet, holder, operation, seconds, process, replacing)
        except self._DUPLICATE:  # another process inserted the first lease of this name meanwhile
            return self._acquire(fleet, holder, operation, seconds, process, replacing)

    def _acquire(self, fleet: str, holder: str, operation: str, seconds: float, process: str,
                 replacing: str) -> Lease:
        with self._write() as db:
            now = float(db.execute(f"SELECT {self._NOW}").fetchone()[0])
            row = db.execute("SELECT holder, operation, expires_at, process FROM leases "
                             f"WHERE fleet = ?{self._FOR_UPDATE}", (fleet,)).fetchone()
            if row is not None and row[0] not in (holder, replacing) and row[2] > now:
                raise LeaseHeld(Lease(fleet, row[0], row[1], row[2], now, process=row[3]))
            lease = Lease(fleet, holder, operation, now + seconds, now,
                          previous=row[0] if row is not None and row[0] != holder else "", process=process)
            if row is None:
                db.execute("INSERT INTO leases (fleet, holder, operation, process, acquired_at, expires_at) "
                           "VALUES (?, ?, ?, ?, ?, ?)", (fleet, holder, operation, process, now, lease.expires_at))
            else:
                db.execute("UPDATE leases SET holder = ?, operation = ?, process = ?, acquired_at = ?, "
                           "expires_at = ? WHERE fleet = ?", (holder, operation, process, now, lease.expires_at,
                                                              fleet))
        return lease

    def renew_lease(self, fleet: str, holder: str, seconds: float) -> bool:
        with self._write() as db:
            cursor = db.execute(f"UPDATE leases SET expires_at = {self._NOW} + ? WHERE fleet = ? AND holder = ?",
                                (seconds, fleet, holder))
            renewed: bool = cursor.rowcount == 1
            return renewed

    def release_lease(self, fleet: str, holder: str) -> None:
        with self._write() as db:
            db.execute("DELETE FROM leases WHERE fleet = ? AND holder = ?", (fleet, holder))

    def lease(self, fleet: str) -> Lease | None:
        if not _storable(fleet):
            return None
        rows = self._read(f"SELECT holder, operation, expires_at, {self._NOW}, process FROM leases WHERE fleet = ?",
                          (fleet,))
        if not rows or rows[0][2] <= rows[0][3]:
            return None
        holder, operation, expires_at, now, process = rows[0]
        return Lease(fleet, holder, operation, expires_at, float(now), process=process)


class SqliteFleetStore(SqlFleetStore):
    """FleetStore in one SQLite file (mode 0600), WAL journal, full fsync, 10 s busy timeout. Every write is
    one BEGIN IMMEDIATE transaction: SQLite serialises them, so no row locks are needed. A store that stays locked
    by other processes past the busy timeout raises Transient (exit 8), never a bare sqlite3 error."""

    _NOW = "(julianday('now') - 2440587.5) * 86400.0"
    _TABLE_EXISTS = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    _DUPLICATE = (sqlite3.IntegrityError,)
    BUSY_SECONDS = 10.0

    def __init__(self, path: Path, *, lease_seconds: float = DEFAULT_LEASE_SECONDS) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.lease_seconds = lease_seconds
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        self._db = sqlite3.connect(self.path, timeout=self.BUSY_SECONDS, isolation_level=None,
                                   check_same_thread=False)
        self._lock = threading.RLock()  # one connection shared by this process's threads
        with self._busy_as_transient():
            self._use_wal()
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
        self._migrate()

    def _use_wal(self) -> None:
        """Switch the file to WAL (persistent, so usually a no-op). Two processes switching a new file at once
        can get SQLITE_BUSY without SQLite's busy handler being consulted, so retry until the busy timeout."""
        deadline = time.monotonic() + self.BUSY_SECONDS
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    @contextmanager
    def _busy_as_transient(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as exc:
            if not _busy(exc):
                raise
            raise Transient(f"the fleet store {self.location} stayed locked by another vm process for over "
                            f"{self.BUSY_SECONDS:.0f} s", suggestion="retry when that command has finished"
                            ) from None

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._busy_as_transient():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock, self._busy_as_transient():
            return self._db.execute(sql, params).fetchall()


def _busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite said the file is locked by another connection (primary codes BUSY and LOCKED)."""
    return exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _storable(name: str) -> bool:
    """Whether SQLite can hold the name (UTF-8 text). Names that it cannot, such as command-line arguments with
    undecodable bytes (lone surrogates in Python), name no recorded fleet."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _fleet_row(fleet: FleetRecord) -> dict[str, Any]:
    row = asdict(fleet)
    row["providers"] = json.dumps(list(fleet.providers)) if fleet.providers is not None else None
    row["state"] = fleet.state.value
    row["accounts"] = json.dumps(fleet.accounts, sort_keys=True)
    row["machine"] = fleet.machine.to_record()
    row["placement"] = fleet.placement.value
    row["on_budget"] = fleet.on_budget.value
    row.update(maintain=int(fleet.maintain), spot=int(fleet.spot), spot_fallback=int(fleet.spot_fallback))
    wanted = fleet.reservation
    # the text column of versions 1-5 is NOT NULL: still written, never read
    text = wanted.reservation_id if wanted.mode is ReservationMode.ID else wanted.mode.value
    row["reservation"] = f"{text} (strict)" if wanted.strict else text
    row.update(reservation_mode=wanted.mode.value, reservation_id=wanted.reservation_id,
               reservation_strict=int(wanted.strict))
    return row


def _fleet_from(row: tuple[Any, ...]) -> FleetRecord:
    data = dict(zip(_FLEET_COLUMNS, row, strict=True))
    data["providers"] = tuple(json.loads(data["providers"])) if data["providers"] is not None else None
    data["state"] = FleetState(data["state"])
    data["accounts"] = json.loads(data["accounts"])
    data["machine"] = MachineOptions.from_record(data["machine"])
    data["placement"] = Placement(data["placement"])
    data["on_budget"] = OnBudget(data["on_budget"])
    data.update(maintain=bool(data["maintain"]), spot=bool(data["spot"]), spot_fallback=bool(data["spot_fallback"]))
    data["reservation"] = ReservationRequest(ReservationMode(data.pop("reservation_mode")), data.pop("reservation_id"),
                                             strict=bool(data.pop("reservation_strict")))
    return FleetRecord(**data)


def _member_row(member: MemberRecord) -> dict[str, Any]:
    row = asdict(member)
    row["state"] = member.state.value
    row["spot"] = int(member.spot)
    return row


def _member_from(row: tuple[Any, ...]) -> MemberRecord:
    data = dict(zip(_MEMBER_COLUMNS, row, strict=True))
    data["state"] = MemberState(data["state"])
    data["spot"] = bool(data["spot"])
    return MemberRecord(**data)
