"""The spend ledger: every VM vm created, single or fleet member, and each interval of its life in one state at
one price, kept in the fleet store (tables ledger_vms and ledger_intervals, schema version 7).

A VM is keyed by (provider, account fingerprint, instance id). Its intervals never overlap: an interval is open
(`ended_at` None) until the VM is seen in another state or at another price, or gone. What vm does and sees feeds
it: a create records the VM (`record_vm`); a stop, start, destroy, `vm list`, `vm get`, `vm fleet status` and
reconcile report what they saw (`observe`); a listing of a whole account closes the VMs it no longer shows
(`close_absent`). Times are epoch seconds: the cloud's own timestamps where it reports them (a VM's creation
time), else the clock of the process that saw the change, so a VM that changed while no vm process looked is
charged in its last seen state until the next look (an estimate: docs/billing.md).

Writes happen in the store's transactions (`LedgerStore` is mixed into SqlFleetStore), so a fleet member's record
and its ledger entry change together.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import astuple, dataclass, fields
from typing import TYPE_CHECKING, Any, Protocol


class Pricing(enum.StrEnum):
    """How a VM is paid for."""

    ON_DEMAND = "on_demand"
    RESERVATION = "reservation"  # a Crusoe reservation, a Nebius capacity block, a Lambda reserved instance
    SPOT = "spot"

    @classmethod
    def of(cls, reservation_id: str, spot: bool) -> Pricing:
        return cls.RESERVATION if reservation_id else cls.SPOT if spot else cls.ON_DEMAND


# States after which a VM no longer exists (or, released, is no longer vm's): its last interval ends, the VM is closed.
GONE = frozenset({"terminated", "missing", "released"})


@dataclass(frozen=True, slots=True)
class LedgerVm:
    """A VM vm created. `account` is the provider's account fingerprint (never a secret; '' where the provider
    cannot tell); `fleet` and `fleet_id` are '' for a single VM; `created_by` is user@host; `closed_at` is when
    it was seen gone (None: it may still exist)."""

    provider: str
    account: str
    instance_id: str
    name: str
    shape: str
    region: str
    gpu: str
    gpu_count: int
    pricing: Pricing
    reservation_id: str
    fleet: str
    fleet_id: str
    profile: str
    created_by: str
    created_at: float
    closed_at: float | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return self.provider, self.account, self.instance_id


@dataclass(frozen=True, slots=True)
class Interval:
    """A VM in one `state` (an InstanceState value) at one price from `started_at` to `ended_at` (None: open).
    `price_per_hour` is None where vm knows no price; `source` says what saw it begin ("create", "stop",
    "list", "status", "fleet", ...)."""

    provider: str
    account: str
    instance_id: str
    started_at: float
    ended_at: float | None
    state: str
    pricing: Pricing
    price_per_hour: float | None
    source: str

    @property
    def key(self) -> tuple[str, str, str]:
        return self.provider, self.account, self.instance_id


@dataclass(frozen=True, slots=True)
class Observation:
    """What vm saw of a VM at `at`: its state, and its pricing and price when the observer knows them (None:
    as before)."""

    provider: str
    account: str
    instance_id: str
    state: str
    at: float
    source: str
    price_per_hour: float | None = None
    pricing: Pricing | None = None


def last_seen(ledger: Ledger) -> dict[tuple[str, str], str]:
    """The state each VM not seen gone was last seen in, by (provider, instance id) (one read)."""
    return {(i.provider, i.instance_id): i.state for i in ledger.ledger_intervals() if i.ended_at is None}


class Ledger(Protocol):
    """The ledger's operations, which every fleet store has (fleet.store.FleetStore extends this). Each is one
    store transaction; none calls a cloud; store errors are the store's (ConfigError, Transient). `clock` is the
    time source of what the store records (fleet members' changes, and so their ledger entries): Session.clock."""

    clock: Callable[[], float]

    def record_vm(self, vm: LedgerVm, state: str, *, price_per_hour: float | None, source: str) -> None:
        """Record a VM vm created (nothing if it is already recorded) and what it is doing since
        `vm.created_at`."""
        ...

    def complete_vm(self, vm: LedgerVm, *, first_seen: float) -> None:
        """Fill in what a recorded VM's record left blank (shape, region, reservation, pricing: it was recorded
        when its create was accepted) and move its start back to `first_seen` (the cloud's creation time) when
        that is earlier. Nothing for a VM not recorded."""
        ...

    def observe(self, observations: Iterable[Observation]) -> None:
        """Apply what vm saw; VMs that are not in the ledger (not vm's, or created before it) are passed over."""
        ...

    def close_absent(self, provider: str, account: str, present: Iterable[str], at: float, source: str) -> int:
        """Close every open VM of the account that a complete listing at `at` did not show (it went away outside
        vm); the number closed."""
        ...

    def ledger_vms(self, *, open_only: bool = False) -> list[LedgerVm]:
        """Every recorded VM (only those not seen gone, with `open_only`), oldest first."""
        ...

    def ledger_intervals(self, since: float | None = None, until: float | None = None) -> list[Interval]:
        """Every interval that overlaps [since, until] (None: unbounded), in (VM, start) order."""
        ...


VM_COLUMNS = tuple(f.name for f in fields(LedgerVm))  # ledger_vms's columns, in LedgerVm's field order
_PRICING_INDEX = VM_COLUMNS.index("pricing")
_PRICINGS = {p.value: p for p in Pricing}
_INTERVAL_COLUMNS = [f.name for f in fields(Interval)]
_KEY = "provider = ? AND account = ? AND instance_id = ?"


class LedgerStore:
    """The Ledger operations in SQL, mixed into SqlFleetStore (see that class for `_write` and `_read`); the
    contracts are Ledger's."""

    if TYPE_CHECKING:
        from contextlib import AbstractContextManager

        def _write(self) -> AbstractContextManager[Any]: ...

        def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]: ...

    _FOR_UPDATE: str  # the backend's row-lock clause (SqlFleetStore)

    def record_vm(self, vm: LedgerVm, state: str, *, price_per_hour: float | None, source: str) -> None:
        with self._write() as db:
            record_vm_in(db, vm, state, price_per_hour=price_per_hour, source=source, lock=self._FOR_UPDATE)

    def complete_vm(self, vm: LedgerVm, *, first_seen: float) -> None:
        with self._write() as db:
            row = db.execute(f"SELECT created_at FROM ledger_vms WHERE {_KEY}", vm.key).fetchone()
            if row is None:
                return
            db.execute(f"UPDATE ledger_vms SET shape = ?, region = ?, reservation_id = ?, pricing = ?, "
                       f"name = CASE WHEN name = '' THEN ? ELSE name END WHERE {_KEY}",
                       (vm.shape, vm.region, vm.reservation_id, vm.pricing.value, vm.name, *vm.key))
            if first_seen < row[0]:
                db.execute(f"UPDATE ledger_vms SET created_at = ? WHERE {_KEY}", (first_seen, *vm.key))
                db.execute(f"UPDATE ledger_intervals SET started_at = ? WHERE {_KEY} AND started_at = ?",
                           (first_seen, *vm.key, row[0]))

    def observe(self, observations: Iterable[Observation]) -> None:
        seen = list(observations)
        if not seen:
            return
        with self._write() as db:
            for observation in seen:
                observe_in(db, observation, lock=self._FOR_UPDATE)

    def close_absent(self, provider: str, account: str, present: Iterable[str], at: float, source: str) -> int:
        shown = set(present)
        with self._write() as db:
            rows = db.execute("SELECT instance_id FROM ledger_vms WHERE provider = ? AND account = ? "
                              "AND closed_at IS NULL", (provider, account)).fetchall()
            absent = [row[0] for row in rows if row[0] not in shown]
            for instance_id in absent:
                observe_in(db, Observation(provider, account, instance_id, "missing", at, source),
                           lock=self._FOR_UPDATE)
        return len(absent)

    def ledger_vms(self, *, open_only: bool = False) -> list[LedgerVm]:
        where = " WHERE closed_at IS NULL" if open_only else ""
        rows = self._read(f"SELECT {', '.join(VM_COLUMNS)} FROM ledger_vms{where} "
                          "ORDER BY created_at, provider, instance_id", ())
        return [vm_from_row(row) for row in rows]

    def ledger_intervals(self, since: float | None = None, until: float | None = None) -> list[Interval]:
        clauses, params = [], []
        if until is not None:
            clauses.append("started_at < ?")
            params.append(until)
        if since is not None:
            clauses.append("(ended_at IS NULL OR ended_at > ?)")
            params.append(since)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._read(f"SELECT {', '.join(_INTERVAL_COLUMNS)} FROM ledger_intervals{where} "
                          "ORDER BY provider, account, instance_id, started_at", tuple(params))
        return [_interval_from(row) for row in rows]


# ---------------------------------------------------------------------------- inside a write transaction
def record_vm_in(db: Any, vm: LedgerVm, state: str, *, price_per_hour: float | None, source: str,
                 lock: str = "") -> None:
    """`LedgerStore.record_vm` inside the caller's transaction `db`. Two processes recording one VM at once
    record it once: the insert of the second does nothing (it waits for the first's commit on PostgreSQL)."""
    row = _vm_row(vm)
    inserted = db.execute(f"INSERT INTO ledger_vms ({', '.join(row)}) VALUES ({', '.join('?' * len(row))}) "
                          "ON CONFLICT (provider, account, instance_id) DO NOTHING", list(row.values()))
    if inserted.rowcount != 1:
        return
    observe_in(db, Observation(vm.provider, vm.account, vm.instance_id, state, vm.created_at, source,
                               price_per_hour, vm.pricing), lock=lock)


def observe_in(db: Any, seen: Observation, *, lock: str = "") -> None:
    """Apply one observation inside the caller's transaction `db`: the open interval ends and another begins
    when the state, pricing or price changed; a gone state ends it and closes the VM. An observation older
    than the open interval's start changes that interval in place (nothing is split before its start). `lock`
    (the backend's row-lock clause) holds the VM's row until the transaction ends, so two processes observing
    one VM at once apply their observations one after the other."""
    key = (seen.provider, seen.account, seen.instance_id)
    vm = db.execute(f"SELECT pricing, closed_at FROM ledger_vms WHERE {_KEY}{lock}", key).fetchone()
    if vm is None or vm[1] is not None:
        return
    row = db.execute(f"SELECT {', '.join(_INTERVAL_COLUMNS)} FROM ledger_intervals WHERE {_KEY} "
                     "AND ended_at IS NULL", key).fetchone()
    current = _interval_from(row) if row is not None else None
    pricing = seen.pricing or (current.pricing if current else Pricing(vm[0]))
    price = seen.price_per_hour if seen.price_per_hour is not None else (current.price_per_hour if current else None)
    gone = seen.state in GONE
    if current is not None:
        if not gone and (current.state, current.pricing, current.price_per_hour) == (seen.state, pricing, price):
            return
        end = max(seen.at, current.started_at)
        db.execute(f"UPDATE ledger_intervals SET ended_at = ? WHERE {_KEY} AND started_at = ?",
                   (end, *key, current.started_at))
    if gone:
        at = max(seen.at, current.started_at) if current else seen.at
        db.execute(f"UPDATE ledger_vms SET closed_at = ? WHERE {_KEY}", (at, *key))
        return
    start = max(seen.at, current.started_at) if current else seen.at
    if current is not None and start == current.started_at:  # a change at the very start: replace the interval
        db.execute(f"DELETE FROM ledger_intervals WHERE {_KEY} AND started_at = ?", (*key, start))
    interval = Interval(*key, start, None, seen.state, pricing, price, seen.source)
    db.execute(f"INSERT INTO ledger_intervals ({', '.join(_INTERVAL_COLUMNS)}) "
               f"VALUES ({', '.join('?' * len(_INTERVAL_COLUMNS))})", _interval_row(interval))


def _vm_row(vm: LedgerVm) -> dict[str, Any]:
    row = dict(zip(VM_COLUMNS, astuple(vm), strict=True))
    row["pricing"] = vm.pricing.value
    return row


def vm_from_row(row: Sequence[Any]) -> LedgerVm:
    """The LedgerVm of a ledger_vms row read as `SELECT {VM_COLUMNS}` (positional: the cost report reads 10,000)."""
    values = list(row)
    values[_PRICING_INDEX] = _PRICINGS[values[_PRICING_INDEX]]
    return LedgerVm(*values)


def _interval_row(interval: Interval) -> list[Any]:
    values = list(astuple(interval))
    values[_INTERVAL_COLUMNS.index("pricing")] = interval.pricing.value
    return values


def _interval_from(row: Sequence[Any]) -> Interval:
    data = dict(zip(_INTERVAL_COLUMNS, row, strict=True))
    data["pricing"] = Pricing(data["pricing"])
    return Interval(**data)
