"""Where fleets and their members are recorded: a small interface, backed by SQLite in WAL mode.

Every placement attempt of a fleet slot is a member row, written *before* the provider is called (state
`intent`) and updated as soon as the cloud answers (instance id, operation id), so a crash at any instant
leaves a record of every VM that might exist. Rows are never deleted while a VM may exist; destroyed members
keep their row (state `destroyed`) as history.

Writes are single transactions (BEGIN IMMEDIATE), so concurrent `vm` processes are safe; the fleet name is
the primary key, so two concurrent creates of one name leave exactly one fleet. The schema is versioned
(schema.py): opening a store applies the missing forward migrations in one transaction. Another backend (a shared
database for teams) only needs to implement `FleetStore`.
"""

from __future__ import annotations

import enum
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Protocol

from ..errors import ConfigError
from . import schema


class FleetState(enum.StrEnum):
    CREATING = "creating"
    ACTIVE = "active"  # every requested VM runs
    DEGRADED = "degraded"  # fewer than requested (at least min_count, unless reconcile kept fewer: see message)
    ROLLING_BACK = "rolling_back"
    FAILED = "failed"  # below min_count; everything created was destroyed
    INTERRUPTED = "interrupted"  # the creating process died or was stopped; `vm fleet destroy` cleans up
    DESTROYING = "destroying"
    DESTROYED = "destroyed"


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


# Members in these states may have a VM in a cloud: destroy and reconcile must look at them.
MAY_EXIST = frozenset({MemberState.INTENT, MemberState.CREATING, MemberState.RUNNING, MemberState.UNKNOWN,
                       MemberState.DESTROYING})


class FleetExists(Exception):
    """A fleet of that name is already recorded."""


class FleetMissing(KeyError):
    """The fleet (or its member) is not recorded, e.g. another process destroyed the fleet meanwhile."""


@dataclass(frozen=True, slots=True)
class FleetRecord:
    """A fleet. `fleet_id` is the random id every member VM carries ('' for fleets recorded before ids
    existed); `accounts` maps each provider the fleet may use to a fingerprint of its account (never a secret)."""

    name: str
    gpu: str
    gpu_count: int | None
    requested_count: int
    min_count: int
    strategy: str
    providers: tuple[str, ...] | None = None
    region: str | None = None
    reservation: str = "auto"
    state: FleetState = FleetState.CREATING
    message: str = ""
    owner_pid: int = 0
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    fleet_id: str = ""
    profile: str = ""
    accounts: dict[str, str] = field(default_factory=dict)
    created_by: str = ""  # user@host


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


class FleetStore(Protocol):
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

    def members(self, fleet: str) -> list[MemberRecord]:
        """Every attempt of every slot, in (slot, attempt) order."""
        ...

    def delete_fleet(self, name: str) -> None:
        """Forget a fleet and its members (only once none may exist)."""
        ...


_FLEET_COLUMNS = [f.name for f in fields(FleetRecord)]
_MEMBER_COLUMNS = [f.name for f in fields(MemberRecord)]



class SqliteFleetStore:
    """FleetStore in one SQLite file (mode 0600), WAL journal, full fsync, 10 s busy timeout."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        self._db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._lock = threading.RLock()  # one connection shared by this process's threads
        self._migrate()

    def _migrate(self) -> None:
        """Bring the schema to schema.LATEST in one transaction; ConfigError for a store of a newer vm."""
        with self._write() as db:
            db.execute(schema.VERSION_TABLE)
            row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
            current = row[0] if row and row[0] is not None else self._unversioned_layout(db)
            if current > schema.LATEST:
                raise ConfigError(f"the fleet store {self.path} has schema version {current}, newer than this vm "
                                  f"understands ({schema.LATEST})", suggestion="upgrade vm-core")
            for version, statements in schema.pending(current):
                for statement in statements:
                    db.execute(statement)
                db.execute("DELETE FROM schema_version")
                db.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))

    @staticmethod
    def _unversioned_layout(db: sqlite3.Connection) -> int:
        """1 for a store written before versions were recorded, 0 for an empty file."""
        return 1 if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'fleets'").fetchone() else 0

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def create_fleet(self, fleet: FleetRecord) -> None:
        row = _fleet_row(fleet)
        try:
            with self._write() as db:
                db.execute(f"INSERT INTO fleets ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                           list(row.values()))
        except sqlite3.IntegrityError as exc:
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
        with self._write():
            current = self.get_fleet(name)
            if current is None:
                raise FleetMissing(name)
            updated = replace(current, **changes, updated_at=time.time())
            row = _fleet_row(updated)
            self._db.execute(f"UPDATE fleets SET {', '.join(f'{k} = ?' for k in row)} WHERE name = ?",
                             [*row.values(), name])
        return updated

    def add_member(self, member: MemberRecord) -> None:
        row = _member_row(member)
        with self._write() as db:
            if db.execute("SELECT 1 FROM fleets WHERE name = ?", (member.fleet,)).fetchone() is None:
                raise FleetMissing(member.fleet)
            db.execute(f"INSERT INTO members ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                       list(row.values()))

    def update_member(self, fleet: str, slot: int, attempt: int, **changes: Any) -> MemberRecord:
        if not _storable(fleet):
            raise FleetMissing((fleet, slot, attempt))
        with self._write() as db:
            cur = db.execute(f"SELECT {', '.join(_MEMBER_COLUMNS)} FROM members "
                             "WHERE fleet = ? AND slot = ? AND attempt = ?", (fleet, slot, attempt))
            row = cur.fetchone()
            if row is None:
                raise FleetMissing((fleet, slot, attempt))
            updated = replace(_member_from(row), **changes, updated_at=time.time())
            values = _member_row(updated)
            db.execute(f"UPDATE members SET {', '.join(f'{k} = ?' for k in values)} "
                       "WHERE fleet = ? AND slot = ? AND attempt = ?", [*values.values(), fleet, slot, attempt])
        return updated

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
    return row


def _fleet_from(row: tuple[Any, ...]) -> FleetRecord:
    data = dict(zip(_FLEET_COLUMNS, row, strict=True))
    data["providers"] = tuple(json.loads(data["providers"])) if data["providers"] is not None else None
    data["state"] = FleetState(data["state"])
    data["accounts"] = json.loads(data["accounts"])
    return FleetRecord(**data)


def _member_row(member: MemberRecord) -> dict[str, Any]:
    row = asdict(member)
    row["state"] = member.state.value
    return row


def _member_from(row: tuple[Any, ...]) -> MemberRecord:
    data = dict(zip(_MEMBER_COLUMNS, row, strict=True))
    data["state"] = MemberState(data["state"])
    return MemberRecord(**data)
