"""The fleet store in a PostgreSQL database shared by a team (`store_url = "postgresql://..."`).

Same schema, migrations and SQL as the SQLite store (store.py `SqlFleetStore`); psycopg 3 hands the URL to libpq,
so PGPASSWORD, ~/.pgpass, sslmode and the other libpq conventions apply.

Consistency: read-modify-write operations (update_fleet, update_member, the lease operations) lock the row they
change with `SELECT ... FOR UPDATE` inside one short READ COMMITTED transaction. Row locks, not SERIALIZABLE
transactions with retries, because every write touches exactly one known row: the lock makes the second of two
concurrent writers (on any machine) wait a few milliseconds and then read the first one's result, so no update
is lost, nothing needs to be retried, and unrelated fleets never conflict. Uniqueness (fleet names, lease names)
is the primary key's. Migrations are serialised between processes by `pg_advisory_xact_lock`.

Threads: the fleet engine calls the store from up to 256 threads. They share a small pool of connections
(POOL_SIZE); a transaction holds its connection only for its few statements.

Roles: a team database has one owner role, which creates the tables and runs every migration, and user roles that
only read and write rows (schema.TABLES, docs/fleets.md "Roles and grants"). A store at the latest version is
opened with reads alone, so users need no right to create anything. PostgreSQL refusing a statement for lack of a
privilege (psycopg's `InsufficientPrivilege`, SQLSTATE 42501; never its message text) is a `StoreRefused`
(ConfigError, exit 4) naming the role, the grants it needs and the psql command by which the owner gives them; a
migration refused so says that only the owner migrates, and how to run one as the owner.
"""

from __future__ import annotations

import queue
import re
import shlex
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
import psycopg.errors

from ..errors import ConfigError, Transient
from ..hints import Command, Hint
from . import schema
from .store import DEFAULT_LEASE_SECONDS, SqlFleetStore

POOL_SIZE = 4
CONNECT_TIMEOUT = 10  # seconds, unless the URL says otherwise
MIGRATION_LOCK = 0x766D_666C_6565_74  # "vmfleet": the advisory lock key of schema migrations


class PostgresFleetStore(SqlFleetStore):
    """FleetStore in a PostgreSQL database. `url` is a libpq connection URL; `shown` is how messages name it
    (without the password). Raises ConfigError when the database cannot be reached or is of a newer vm."""

    _FOR_UPDATE = " FOR UPDATE"
    _NOW = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"
    _TABLE_EXISTS = "SELECT 1 WHERE to_regclass(?) IS NOT NULL"
    _DUPLICATE = (psycopg.errors.UniqueViolation,)

    def __init__(self, url: str, *, shown: str, lease_seconds: float = DEFAULT_LEASE_SECONDS) -> None:
        self._url, self.location, self.lease_seconds = url, shown, lease_seconds
        self._idle: queue.LifoQueue[psycopg.Connection[Any]] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(POOL_SIZE)
        self._migrate()

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT,
                                   application_name="vm")
        except psycopg.Error as exc:
            raise ConfigError(f"cannot connect to the fleet store {self.location}: {_first_line(exc)}",
                              suggestion=Hint.say("check store_url in config.toml (see {}) or VM_STORE_URL",
                                                  Command.of("config", "show"))
                              ) from None

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection; one that broke is dropped (the next use connects anew) and the error is
        Transient: the operation may be retried."""
        with self._slots:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                conn = self._connect()
            try:
                yield conn
            except psycopg.OperationalError as exc:
                conn.close()
                raise Transient(f"fleet store {self.location}: {_first_line(exc)}") from None
            except psycopg.errors.InsufficientPrivilege as exc:
                raise self._refused(conn, exc) from None
            finally:
                if not conn.closed:
                    self._idle.put(conn)

    @contextmanager
    def _write(self) -> Iterator[_Cursor]:
        with self._connection() as conn, conn.transaction():
            yield _Cursor(conn)

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._connection() as conn:
            return _Cursor(conn).execute(sql, params).fetchall()

    def _lock_schema(self, db: _Cursor) -> None:
        db.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))

    @contextmanager
    def _migrations(self) -> Iterator[None]:
        """A migration the role may not run: only the owner role migrates (StoreRefused saying how)."""
        try:
            yield
        except StoreRefused as exc:
            raise exc.migrating() from None

    def _refused(self, conn: psycopg.Connection[Any], exc: psycopg.errors.InsufficientPrivilege) -> StoreRefused:
        """The StoreRefused of a statement PostgreSQL refused to the connection's role."""
        info = conn.info
        return StoreRefused(self.location, _first_line(exc), role=info.user, owner=_owner(conn),
                            database=Database(info.host, info.port, info.dbname))


class _Cursor:
    """The shared SQL's `?` placeholders in psycopg's `%s` style (the shared SQL has no literal `?` or `%`)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Any = ()) -> psycopg.Cursor[Any]:
        return self._conn.execute(sql.replace("?", "%s"), params)

    def executemany(self, sql: str, params: Iterable[Any]) -> None:
        """One statement for every parameter row, sent pipelined (psycopg) rather than a round trip each."""
        self._conn.cursor().executemany(sql.replace("?", "%s"), params)


@dataclass(frozen=True)
class Database:
    """Where a connection went, as libpq says (no password): for the psql and VM_STORE_URL a hint shows."""

    host: str
    port: int
    name: str

    def psql(self, role: str, sql: str) -> str:
        """The psql command line that runs `sql` as `role` in this database (a POSIX shell line)."""
        return shlex.join(["psql", "-h", self.host, "-p", str(self.port), "-U", role, "-d", self.name, "-c", sql])

    def url(self, role: str) -> str:
        return f"postgresql://{role}@{self.host}:{self.port}/{self.name}"


class StoreRefused(ConfigError):
    """PostgreSQL refused `role` a statement on the fleet store for lack of a privilege (exit 4). The message
    names the grants a user role needs (schema.TABLES); the hint is the psql command by which `owner` (the role
    owning the tables, else the database; "" when unknown) gives them."""

    def __init__(self, location: str, cause: str, *, role: str, owner: str, database: Database) -> None:
        self.location, self.cause, self.role, self.owner, self.database = location, cause, role, owner, database
        tables = ", ".join(schema.TABLES)
        grant = f"GRANT {USER_PRIVILEGES} ON {tables} TO {_ident(role)}"
        super().__init__(f"the fleet store {location} refuses role {role} ({cause}): a team store's users need "
                         f"{USER_PRIVILEGES} on its tables {tables}",
                         suggestion=f"as the owner of the tables, run: {database.psql(owner or 'OWNER', grant)}")

    def migrating(self) -> ConfigError:
        """The error when the refused statement was part of a migration: only the owner role migrates."""
        owner = self.owner or "OWNER"
        return ConfigError(
            f"the fleet store {self.location} needs its tables created or migrated to schema version "
            f"{schema.LATEST}, which role {self.role} may not do ({self.cause}): only the store's owner role"
            f"{' (' + self.owner + ')' if self.owner else ''} creates and migrates its tables",
            suggestion=Hint.say(f"run {{}} once as {owner}, with VM_STORE_URL={self.database.url(owner)}",
                                Command.of("fleet", "list")))


USER_PRIVILEGES = "SELECT, INSERT, UPDATE, DELETE"


def _owner(conn: psycopg.Connection[Any]) -> str:
    """The role owning the store's tables (the `fleets` table), else the database's owner; "" when unknown.
    The catalogs read are readable by every role."""
    try:
        row = conn.execute(
            "SELECT COALESCE((SELECT tableowner FROM pg_tables WHERE tablename = 'fleets' AND schemaname = "
            "current_schema()), (SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = "
            "current_database()))").fetchone()
    except psycopg.Error:
        return ""
    return str(row[0]) if row is not None and row[0] else ""


def _ident(name: str) -> str:
    """A role name as an SQL identifier: as it is when plain, else double-quoted."""
    return name if re.fullmatch(r"[a-z_][a-z0-9_]*", name) else '"' + name.replace('"', '""') + '"'


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
