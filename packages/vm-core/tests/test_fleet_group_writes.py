"""Group-committed member writes (vm_core.fleet.group_writes) on both store backends: writes that arrive while a
commit runs go into one next commit, each caller returns only once its own write is committed (another handle of
the store sees it), and a failed commit fails every write it held and writes none of them.

The first commit is held at a gate until the other writes are queued, so what is grouped does not depend on timing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from vm_core.fleet.group_writes import GroupWrites
from vm_core.fleet.store import FleetStore, MemberRecord, MemberState

from .test_fleet_store import fleet, opener, store, where  # noqa: F401 - the two backends' fixtures

WAIT = 60.0  # seconds a test waits for threads at most (never reached unless something is broken)


class Gated:
    """A store whose first `write_members` waits for `gate`; it records what each call was given."""

    def __init__(self, inner: FleetStore) -> None:
        self._store, self.gate, self.calls = inner, threading.Event(), []

    def write_members(self, fleet: str, new: Sequence[MemberRecord],
                      updates: Sequence[tuple[int, int, Mapping[str, Any]]]) -> list[MemberRecord]:
        self.calls.append((len(new), len(updates)))
        if len(self.calls) == 1:
            assert self.gate.wait(WAIT)
        return self._store.write_members(fleet, new, updates)


def member(slot: int) -> MemberRecord:
    return MemberRecord(fleet="train", slot=slot, attempt=1, provider="nebius", name=f"train-{slot}")


def _queue_behind_a_held_commit(writes: GroupWrites, gated: Gated, pool: ThreadPoolExecutor,
                                calls: list[Callable[[], Any]]) -> list[Future[Any]]:
    """Start a first write (slot 0), whose commit is held at the gate, then `calls`; release the gate once they
    all wait for the next commit."""
    first = pool.submit(writes.add, member(0))
    _until(lambda: len(gated.calls) == 1)
    queued = [pool.submit(call) for call in calls]
    _until(lambda: writes.queued == len(calls))
    gated.gate.set()
    return [first, *queued]


def _until(condition: Callable[[], bool]) -> None:
    done = threading.Event()
    for _ in range(int(WAIT / 0.005)):
        if condition():
            return
        done.wait(0.005)
    raise AssertionError("the writes never got there")


def test_writes_queued_during_a_commit_go_into_one_next_commit_and_each_returns_once_committed(
        store: FleetStore, opener) -> None:  # noqa: F811
    store.create_fleet(fleet())
    gated = Gated(store)
    writes = GroupWrites(gated, "train")  # type: ignore[arg-type]
    another = opener()

    def add_and_look(slot: int) -> bool:
        writes.add(member(slot))
        return any(m.slot == slot for m in another.members("train"))  # committed: another handle sees it

    with ThreadPoolExecutor(12) as pool:
        futures = _queue_behind_a_held_commit(writes, gated, pool,
                                              [lambda s=s: add_and_look(s) for s in range(1, 11)])
        results = [f.result(WAIT) for f in futures]
    assert results[1:] == [True] * 10
    assert gated.calls == [(1, 0), (10, 0)] and writes.commits == 2
    assert [m.slot for m in another.members("train")] == list(range(11))

    running = writes.update(member(3), state=MemberState.RUNNING, instance_id="computeinstance-e00a")
    assert running.state is MemberState.RUNNING and writes.commits == 3
    assert {m.slot: m.state for m in another.members("train")}[3] is MemberState.RUNNING


def test_a_failed_commit_fails_every_write_it_held_and_writes_none_of_them(store: FleetStore) -> None:  # noqa: F811
    store.create_fleet(fleet())
    gated = Gated(store)
    writes = GroupWrites(gated, "train")  # type: ignore[arg-type]
    calls: list[Callable[[], Any]] = [lambda: writes.add(member(1)), lambda: writes.add(member(2)),
                                      lambda: writes.update(member(99), state=MemberState.FAILED)]  # not recorded

    with ThreadPoolExecutor(4) as pool:
        first, *held = _queue_behind_a_held_commit(writes, gated, pool, calls)
        first.result(WAIT)
        for future in held:
            with pytest.raises(KeyError):
                future.result(WAIT)
    assert [m.slot for m in store.members("train")] == [0], "the failed commit wrote nothing"

    writes.add(member(1))  # the next write commits again
    assert [m.slot for m in store.members("train")] == [0, 1] and writes.commits == 3
