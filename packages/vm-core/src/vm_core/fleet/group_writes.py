"""Member records of one fleet written by many threads at once, committed together (group commit).

A fleet create records every VM before its create call (the intent) and after it (its ids), and again when it
runs, from up to its providers' create concurrency of threads. Written one transaction each, those durable commits
(SQLite syncs each one to disk; PostgreSQL is a round trip each) pace the create calls of a large fleet. Here each
write is queued and its caller blocks until the write is committed: a caller that finds no commit running commits
every write queued so far in one transaction (`FleetStore.write_members`), and the writes that arrive meanwhile go
into the next commit, made by the first of their callers. A caller never returns before its own write is durable,
so "recorded before the call" holds as with one transaction per write.

A commit that fails raises its error in the caller of every write it held, and none of them is written (the store's
transaction), exactly what each caller would have seen of its own write's transaction; a later write commits again.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .store import FleetStore, MemberRecord


@dataclass
class _Write:
    new: MemberRecord | None = None  # a member to add, or
    update: tuple[int, int, Mapping[str, Any]] | None = None  # (slot, attempt, changes) of one to change
    done: threading.Event = field(default_factory=threading.Event)
    leads: bool = False  # woken to commit the writes queued while the commit before ran
    result: MemberRecord | None = None
    error: BaseException | None = None


class GroupWrites:
    """Adds and updates of the members of fleet `fleet`, group-committed (see the module docstring).
    Thread-safe; each call blocks until its write is committed, and raises what the commit raised."""

    def __init__(self, store: FleetStore, fleet: str) -> None:
        self.store, self.fleet = store, fleet
        self.commits = 0  # transactions made so far
        self._lock = threading.Lock()
        self._queued: list[_Write] = []
        self._committing = False

    @property
    def queued(self) -> int:
        """Writes waiting for the commit that runs now to end."""
        with self._lock:
            return len(self._queued)

    def add(self, member: MemberRecord) -> None:
        """Record a new member of the fleet (`FleetStore.add_member`)."""
        self._submit(_Write(new=member))

    def update(self, member: MemberRecord, **changes: Any) -> MemberRecord:
        """Change fields of a recorded member (`FleetStore.update_member`); the record as written."""
        result = self._submit(_Write(update=(member.slot, member.attempt, changes)))
        assert result is not None
        return result

    def _submit(self, write: _Write) -> MemberRecord | None:
        with self._lock:
            self._queued.append(write)
            leads = not self._committing
            self._committing = True
        if not leads:
            write.done.wait()
            leads = write.leads
        if leads:
            self._commit_queued()
        if write.error is not None:
            raise write.error
        return write.result

    def _commit_queued(self) -> None:
        """Commit every write queued (this caller's among them), wake their callers, and hand the commit of the
        writes queued meanwhile to the first of their callers."""
        with self._lock:
            batch, self._queued = self._queued, []
        try:
            updated = self.store.write_members(self.fleet, [w.new for w in batch if w.new is not None],
                                               [w.update for w in batch if w.update is not None])
        except BaseException as exc:  # every caller gets its transaction's error, as it would have alone
            for write in batch:
                write.error = exc
        else:
            for write, record in zip([w for w in batch if w.update is not None], updated, strict=True):
                write.result = record
        with self._lock:
            self.commits += 1
            following = self._queued[0] if self._queued else None
            if following is None:
                self._committing = False
            else:
                following.leads = True
        for write in batch:
            write.done.set()
        if following is not None:
            following.done.set()
