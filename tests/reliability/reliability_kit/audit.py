"""The fleet store compared with the clouds' ground truth.

`audit` returns what is wrong, in four kinds, each of which must stay empty:

- leaked: a VM exists in a cloud that nothing accounts for: no member of any fleet in a state that says "this VM
  may exist" names it (by id, or by name while its id is unknown), and it is not one of the user's own VMs.
- duplicated: a fleet holds more VMs in the clouds than it requested, two live VMs share one member name, or the
  store has two running members for one slot.
- lost: the store says a member runs, and its VM does not exist.
- mismatched: for a fleet whose create ended on its own (settled), the store is not exact: its running members
  are not exactly the fleet's VMs in the clouds, or the fleet's state contradicts its running count.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Member states in which a VM may exist (the store's MAY_EXIST) plus RELEASED (exists, no longer deletable).
ACCOUNTING = frozenset({"intent", "creating", "running", "unknown", "destroying", "released"})


@dataclass(frozen=True, slots=True)
class Member:
    fleet: str
    slot: int
    attempt: int
    provider: str
    name: str
    state: str
    instance_id: str


@dataclass(frozen=True, slots=True)
class Fleet:
    name: str
    state: str
    count: int
    min_count: int


@dataclass
class Store:
    fleets: dict[str, Fleet] = field(default_factory=dict)
    members: list[Member] = field(default_factory=list)

    @classmethod
    def read(cls, path: Path) -> Store:
        """The store's rows, read-only (an absent database is an empty store). Retries while it is busy."""
        if not path.exists():
            return cls()
        for attempt in range(50):
            try:
                return cls._read(path)
            except sqlite3.OperationalError:
                if attempt == 49:
                    raise
                time.sleep(0.1)
        raise AssertionError("unreachable")

    @classmethod
    def _read(cls, path: Path) -> Store:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
        try:
            fleets = db.execute("SELECT name, state, count, min_count FROM fleets").fetchall()
            members = db.execute("SELECT fleet, slot, attempt, provider, name, state, instance_id FROM members "
                                 "ORDER BY fleet, slot, attempt").fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return cls()
            raise
        finally:
            db.close()
        return cls({row[0]: Fleet(*row) for row in fleets}, [Member(*row) for row in members])

    @classmethod
    def read_url(cls, url: str) -> Store:
        """The rows of a PostgreSQL store (team mode)."""
        import psycopg

        with psycopg.connect(url) as db:
            fleets = db.execute("SELECT name, state, count, min_count FROM fleets").fetchall()
            members = db.execute("SELECT fleet, slot, attempt, provider, name, state, instance_id FROM members "
                                 "ORDER BY fleet, slot, attempt").fetchall()
        return cls({row[0]: Fleet(*row) for row in fleets}, [Member(*row) for row in members])

    def of(self, fleet: str) -> list[Member]:
        return [m for m in self.members if m.fleet == fleet]


@dataclass
class Findings:
    leaked: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {"leaked": len(self.leaked), "duplicated": len(self.duplicated), "lost": len(self.lost),
                "mismatched": len(self.mismatched)}

    def __bool__(self) -> bool:
        return any(self.counts().values())

    def __str__(self) -> str:
        kinds = (("leaked", self.leaked), ("duplicated", self.duplicated), ("lost", self.lost),
                 ("mismatched", self.mismatched))
        return "\n".join(f"{kind}: {item}" for kind, items in kinds for item in items) or "clean"


def audit(store: Store, inventory: Iterable[dict[str, Any]], *, users: Iterable[str] = (),
          fleets: Iterable[str] = (), settled: Iterable[str] = ()) -> Findings:
    """Compare the store with the clouds. `users` are ids of the user's own VMs (not a fleet's); `fleets` are
    every fleet name ever used (for attributing VMs of forgotten fleets); `settled` fleets must be exact."""
    live = list(inventory)
    findings = Findings()
    findings.leaked = _leaked(store, live, set(users))
    names = set(fleets) | set(store.fleets)
    findings.duplicated = _duplicated(store, live, names)
    findings.lost = _lost(store, live)
    for name in settled:
        findings.mismatched += _mismatched(store, live, name)
    return findings


def fleet_vms(live: Iterable[dict[str, Any]], fleet: str) -> list[dict[str, Any]]:
    """The VMs in the clouds whose names are names of this fleet's members (whatever the fleet's id: a
    forgotten fleet's id is not known here)."""
    pattern = re.compile(rf"^{re.escape(fleet)}--[a-z2-7]{{8}}-\d+(?:-r\d+)?$")
    return [vm for vm in live if pattern.match(vm["name"])]


def _leaked(store: Store, live: list[dict[str, Any]], users: set[str]) -> list[str]:
    by_id = {(m.provider, m.instance_id) for m in store.members if m.state in ACCOUNTING and m.instance_id}
    by_name = {(m.provider, m.name) for m in store.members if m.state in ACCOUNTING and not m.instance_id}
    return [f"{vm['provider']} {vm['id']} {vm['name']} ({vm['state']})" for vm in live
            if vm["id"] not in users and (vm["provider"], vm["id"]) not in by_id
            and (vm["provider"], vm["name"]) not in by_name]


def _duplicated(store: Store, live: list[dict[str, Any]], fleets: set[str]) -> list[str]:
    found = [f"{provider} {name}: {n} live VMs of one name"
             for (provider, name), n in Counter((vm["provider"], vm["name"]) for vm in live).items() if n > 1]
    for name in sorted(fleets):
        record = store.fleets.get(name)
        if record is not None and record.state in ("creating", "interrupted"):
            continue  # a create still running, or killed before its final sweep: nothing settled yet
        in_clouds = fleet_vms(live, name)
        count = record.count if record is not None else 0
        if record is not None and len(in_clouds) > count:
            found.append(f"fleet {name}: {len(in_clouds)} VMs in the clouds, {count} requested")
    running_slots = Counter((m.fleet, m.slot) for m in store.members if m.state == "running")
    found += [f"fleet {fleet} slot {slot}: {n} running members" for (fleet, slot), n in running_slots.items()
              if n > 1]
    return found


def _lost(store: Store, live: list[dict[str, Any]]) -> list[str]:
    ids = {(vm["provider"], vm["id"]) for vm in live}
    return [f"{m.fleet}: {m.provider} {m.instance_id} {m.name} recorded running, not in the clouds"
            for m in store.members if m.state == "running" and (m.provider, m.instance_id) not in ids]


def _mismatched(store: Store, live: list[dict[str, Any]], name: str) -> list[str]:
    record = store.fleets.get(name)
    if record is None:
        return [f"fleet {name}: not in the store"]
    running = {(m.provider, m.instance_id) for m in store.of(name) if m.state == "running"}
    in_clouds = {(vm["provider"], vm["id"]) for vm in fleet_vms(live, name)}
    found = [f"fleet {name}: {p} {i} in the clouds, not a running member" for p, i in sorted(in_clouds - running)]
    found += [f"fleet {name}: running member {p} {i} not in the clouds" for p, i in sorted(running - in_clouds)]
    expected = _state_for(len(running), record)
    if record.state not in expected:
        found.append(f"fleet {name}: state {record.state} with {len(running)} of {record.count} running "
                     f"(minimum {record.min_count}); expected {' or '.join(sorted(expected))}")
    return found


def _state_for(running: int, record: Fleet) -> set[str]:
    """`failed` promises that nothing runs; `degraded` is anything between (below min_count only after a
    reconcile kept what it found; a create rolls back instead, which `Soak.create` checks)."""
    if running == record.count:
        return {"active"}
    return {"degraded"} if running > 0 else {"failed"}
