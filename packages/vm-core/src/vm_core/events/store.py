"""The event log and its webhook deliveries in the fleet store (schema 7: tables `events` and `deliveries`), as a
mixin of the SQL store (fleet/store.py SqlFleetStore, so both backends have it).

Events are appended, never changed. `seq` numbers them per store: each is MAX(seq)+1, computed inside the write
transaction that inserts it while the transaction holds the one row of `schema_version` (SQLite: BEGIN IMMEDIATE
already serialises writers; PostgreSQL: the row lock of SELECT ... FOR UPDATE). Writers therefore commit in `seq`
order, and a reader that asks for the events after the last `seq` it saw (`vm events --follow`) misses none.

A delivery is one event for one webhook target (webhooks.py): `pending` until the receiver answered 2xx
(`delivered`) or the attempts ran out (`failed`). It is created with its event, or later by `enqueue`; a sender
first claims it (`claim_delivery`: compare-and-set on its next attempt time, so two processes never send it at
once), then settles it (`settle_delivery`).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .kinds import KIND_NAMES, EventKind
from .model import Event

_EVENT_COLUMNS = ("id", "seq", "at", "actor", "kind", "fleet", "provider", "instance_id", "details")
_DELIVERY_COLUMNS = ("target", "state", "attempts", "next_attempt_at", "last_error")


class DeliveryState(enum.StrEnum):
    PENDING = "pending"  # to be sent at next_attempt_at
    DELIVERED = "delivered"  # the receiver answered 2xx: never sent again
    FAILED = "failed"  # every attempt failed: never sent again (last_error says why)


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event for one webhook target, as recorded. `last_error` names what failed ("HTTP 503",
    "ConnectionError"), never the URL or the secret."""

    event: Event
    target: str
    state: DeliveryState
    attempts: int
    next_attempt_at: float
    last_error: str = ""


class EventLog:
    """The event and delivery operations of the SQL fleet store (a mixin: the backend provides `_write`,
    `_read` and `_FOR_UPDATE`, as SqlFleetStore documents)."""

    _FOR_UPDATE: str
    location: str  # where the store is, for messages (a path, or a URL without its password)

    if TYPE_CHECKING:
        def _write(self) -> AbstractContextManager[Any]: ...

        def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]: ...

    def add_event(self, event: Event, targets: Sequence[str] = ()) -> Event:
        """Append `event` (its `seq` given by the store: the returned copy has it) and a pending delivery of it
        to each of `targets`, due at once, in one transaction."""
        with self._write() as db:
            db.execute(f"SELECT version FROM schema_version{self._FOR_UPDATE}")  # serialises seq (see the module)
            seq = int(db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM events").fetchone()[0])
            numbered = replace(event, seq=seq)
            db.execute(f"INSERT INTO events ({', '.join(_EVENT_COLUMNS)}) VALUES ({', '.join('?' * 9)})",
                       (numbered.id, seq, numbered.at, numbered.actor, numbered.kind.value, numbered.fleet,
                        numbered.provider, numbered.instance_id, json.dumps(numbered.details, sort_keys=True)))
            for target in dict.fromkeys(targets):
                db.execute("INSERT INTO deliveries (event_id, target, state, attempts, next_attempt_at, last_error) "
                           "VALUES (?, ?, ?, 0, ?, '')", (numbered.id, target, DeliveryState.PENDING.value,
                                                          numbered.at))
        return numbered

    def list_events(self, *, fleet: str | None = None, since: float | None = None, after: int | None = None,
                    limit: int | None = None) -> list[Event]:
        """The events in `seq` order: of `fleet` only, at or after `since` (epoch seconds), with a `seq` above
        `after`, at most `limit` (the first ones). Events of a kind this vm does not know are left out."""
        if fleet is not None and not _encodable(fleet):
            return []  # a name no fleet can have (a command-line argument of undecodable bytes)
        where, params = _filters(fleet=fleet, since=since, after=after)
        sql = f"SELECT {', '.join(_EVENT_COLUMNS)} FROM events{where} ORDER BY seq"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [e for e in map(_event_from, self._read(sql, params)) if e is not None]

    def enqueue(self, event_ids: Collection[str], targets: Sequence[str], *, now: float) -> None:
        """A pending delivery of each event to each target, due at `now`; one that exists is left as it is."""
        if not event_ids or not targets:
            return
        with self._write() as db:
            db.executemany("INSERT INTO deliveries (event_id, target, state, attempts, next_attempt_at, last_error) "
                           "VALUES (?, ?, ?, 0, ?, '') ON CONFLICT (event_id, target) DO NOTHING",
                           [(e, t, DeliveryState.PENDING.value, now) for e in event_ids for t in targets])

    def due_deliveries(self, targets: Sequence[str], *, now: float, event_ids: Collection[str] | None = None,
                       limit: int = 100) -> list[Delivery]:
        """The pending deliveries to `targets` due at `now` (of `event_ids` only, when given), oldest event first."""
        if not targets or event_ids is not None and not event_ids:
            return []
        sql = (f"SELECT {', '.join('e.' + c for c in _EVENT_COLUMNS)}, {', '.join('d.' + c for c in _DELIVERY_COLUMNS)}"
               " FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.state = ? AND d.next_attempt_at <= ?"
               f" AND d.target IN ({', '.join('?' * len(targets))})")
        params: list[Any] = [DeliveryState.PENDING.value, now, *targets]
        if event_ids is not None:
            sql += f" AND d.event_id IN ({', '.join('?' * len(event_ids))})"
            params += list(event_ids)
        rows = self._read(sql + f" ORDER BY e.seq, d.target LIMIT {int(limit)}", tuple(params))
        return [d for d in map(_delivery_from, rows) if d is not None]

    def deliveries(self, event_id: str | None = None) -> list[Delivery]:
        """Every recorded delivery (of one event), in event order."""
        where, params = (" WHERE d.event_id = ?", (event_id,)) if event_id is not None else ("", ())
        rows = self._read(f"SELECT {', '.join('e.' + c for c in _EVENT_COLUMNS)}, "
                          f"{', '.join('d.' + c for c in _DELIVERY_COLUMNS)} FROM deliveries d JOIN events e "
                          f"ON e.id = d.event_id{where} ORDER BY e.seq, d.target", params)
        return [d for d in map(_delivery_from, rows) if d is not None]

    def claim_delivery(self, delivery: Delivery, *, until: float) -> bool:
        """Take `delivery` for sending: True when it was still pending at the time it was read, and now is due
        only at `until` (so no other process sends it before then); False when another process took it first."""
        with self._write() as db:
            cursor = db.execute("UPDATE deliveries SET next_attempt_at = ? WHERE event_id = ? AND target = ? AND "
                                "state = ? AND attempts = ? AND next_attempt_at = ?",
                                (until, delivery.event.id, delivery.target, DeliveryState.PENDING.value,
                                 delivery.attempts, delivery.next_attempt_at))
            claimed: bool = cursor.rowcount == 1
        return claimed

    def settle_delivery(self, event_id: str, target: str, *, state: DeliveryState, attempts: int,
                        next_attempt_at: float, last_error: str = "") -> None:
        """Record how an attempt ended: its new state, attempt count, next attempt time and error ("" when none)."""
        with self._write() as db:
            db.execute("UPDATE deliveries SET state = ?, attempts = ?, next_attempt_at = ?, last_error = ? "
                       "WHERE event_id = ? AND target = ?",
                       (state.value, attempts, next_attempt_at, last_error, event_id, target))


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _filters(*, fleet: str | None, since: float | None, after: int | None) -> tuple[str, tuple[Any, ...]]:
    clauses, params = [], []
    for clause, value in (("fleet = ?", fleet), ("at >= ?", since), ("seq > ?", after)):
        if value is not None:
            clauses.append(clause)
            params.append(value)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), tuple(params)


def _event_from(row: Sequence[Any]) -> Event | None:
    data = dict(zip(_EVENT_COLUMNS, row, strict=True))
    if data["kind"] not in KIND_NAMES:
        return None
    return Event(kind=EventKind(data["kind"]), fleet=data["fleet"], actor=data["actor"],
                 details=json.loads(data["details"]), provider=data["provider"], instance_id=data["instance_id"],
                 at=float(data["at"]), id=data["id"], seq=int(data["seq"]))


def _delivery_from(row: Sequence[Any]) -> Delivery | None:
    event = _event_from(row[:len(_EVENT_COLUMNS)])
    if event is None:
        return None
    target, state, attempts, next_attempt_at, last_error = row[len(_EVENT_COLUMNS):]
    return Delivery(event, target, DeliveryState(state), int(attempts), float(next_attempt_at), last_error)
