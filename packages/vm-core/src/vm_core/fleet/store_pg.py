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
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import psycopg.errors

from ..errors import ConfigError, Transient
from ..hints import Command, Hint
from .store import DEFAULT_LEASE_SECONDS, SqlFleetStore

POOL_SIZE = 4
CONNECT_TIMEOUT = 10  # seconds, unless the URL says otherwise
MIGRATION_LOCK = 0x766D_666C_6565_74  # "vmfleet": the advisory lock key of schema migrations


class PostgresFleetStore(SqlFleetStore):
    """FleetStore in a PostgreSQL database. `url` is a libpq connection URL; `shown` is how messages name it
    (without the password). Raises ConfigError when the database cannot be reached or is of a newer vm."""

    _FOR_UPDATE = " FOR UPDATE"
    _NOW = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"
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

    @staticmethod
    def _unversioned_layout(db: _Cursor) -> int:
        """PostgreSQL stores always record their version: a database without one is empty (0)."""
        row = db.execute("SELECT to_regclass('fleets') IS NOT NULL").fetchone()
        return 1 if row is not None and row[0] else 0


class _Cursor:
    """The shared SQL's `?` placeholders in psycopg's `%s` style (the shared SQL has no literal `?` or `%`)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Any = ()) -> psycopg.Cursor[Any]:
        return self._conn.execute(sql.replace("?", "%s"), params)

    def executemany(self, sql: str, params: Iterable[Any]) -> None:
        """One statement for every parameter row, sent pipelined (psycopg) rather than a round trip each."""
        self._conn.cursor().executemany(sql.replace("?", "%s"), params)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
