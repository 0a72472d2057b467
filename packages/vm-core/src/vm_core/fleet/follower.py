"""Following instances by id: one watcher thread per provider, whatever the number of VMs it follows.

A fleet's creates, the VMs it adopts after an ambiguous create, and a fleet destroy's deletions (deletion.py, with a
follower of its own) register their ids with their provider's `Follower`. Each round is one read of every id
followed (`read_round`: the provider's `get_states`, else its `get_instances`, else one listing). Rounds start one
`poll_interval` (`Paced`) apart, and the pause after a round is at least as long as the round took (a follower
never keeps a cloud busy more than half the time). One follower per provider reading at that interval is what keeps
a cloud's account-wide request limit (Lambda's) by construction.

While rounds settle nothing (every VM still booting), the interval grows 1.5 times a round up to IDLE_BACKOFF times
`poll_interval` (a follower's `idle_backoff`; a deletion's is 1: a deletion lasts tens of seconds rather than
minutes, and the destroy waits for the last one); it is `poll_interval` again after a round that settles a VM. A
round whose read fails settles nothing but deadlines and the ids whose Follow gives up on that error
(`read_failed`), and the next one comes later (the interval doubles, up to MAX_BACKOFF times), so a VM is never lost
and never settled twice. An id a read could not read is unknown, never gone.

What a followed id waits for is its `Follow`: after each read it is shown the id's state (None: the VM does not
exist) and says whether it has settled. A create's Follow (`CreateFollow`) settles when the VM runs (its
Instance comes from the read, or from one `get_instances` of every id that runs in that round, never from a read
per VM), when its state can no longer lead to running, and when its Pending says so: a VM the read does not show
is asked about through its Pending (`done()`, one call) at once when the read showed it before (a failed create
may remove its VM), else every OPERATION_EVERY rounds. `on_settled` is called once per followed id, from the
follower's thread, and must be quick (hand the work to a pool). `after_round`, when given, is called from that
thread after each round's `on_settled` calls (a deletion records the VMs one read shows gone in one transaction).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Protocol

from ..errors import Transient
from ..model import Instance, InstanceState
from ..provider import Paced, Pending, Provider, SupportsGetMany, SupportsGetStates

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 2.0  # seconds between rounds of a provider that does not say (`Paced`)

OPERATION_EVERY = 4  # rounds between two questions to the Pending of a VM the read never showed
MAX_BACKOFF = 8  # a follower whose reads fail waits at most this many intervals between rounds
IDLE_BACKOFF = 4.0  # a follower whose rounds settle nothing waits at most this many intervals between rounds


class Follow(Protocol):
    """What one followed id waits for (see the module docstring)."""

    def shown(self, state: InstanceState | None, instance: Instance | None) -> bool:
        """After a read that read the id: its state (None: it does not exist) and, when the state is RUNNING and
        `wants_instance`, the Instance as read. True when the id has settled (then `on_settled` follows)."""
        ...

    @property
    def wants_instance(self) -> bool:
        """Whether a RUNNING state needs the whole Instance (read once per round for every such id)."""
        ...

    def read_failed(self, error: Exception) -> bool:
        """After a round whose read failed with `error` (a VmError, or a plugin's bug): True when the id has
        settled on it (then `on_settled(True)` follows); False to keep following it."""
        ...


@dataclass
class _Item:
    instance_id: str
    follow: Follow
    deadline: float
    on_settled: Callable[[bool], None]  # True: settled by a read; False: its deadline passed


@dataclass
class Follower:
    """Follows ids of one provider (see the module docstring). Thread-safe; its thread runs only while an id is
    followed. Never raises into a caller: a failing read or a Follow's bug settles nothing but deadlines and what
    `read_failed` settles. `sleep` and `clock` are injectable so a test never depends on wall time."""

    provider: Provider
    after_round: Callable[[], None] | None = None
    idle_backoff: float = IDLE_BACKOFF  # the most the interval grows while rounds settle nothing (1: never)
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    _items: dict[int, _Item] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None
    _settled: int = 0  # ids settled so far
    reads: int = 0  # rounds read so far (successful or not)

    def follow(self, instance_id: str, follow: Follow, timeout: float, on_settled: Callable[[bool], None]) -> None:
        """Follow `instance_id` until `follow` says it settled (`on_settled(True)`) or `timeout` seconds pass
        (`on_settled(False)`); returns at once. The first read comes one interval later."""
        item = _Item(instance_id, follow, self.clock() + timeout, on_settled)
        with self._lock:
            self._items[id(item)] = item
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"follow-{self.provider.name}", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        interval = poll_interval(self.provider)
        failed_reads, idle_rounds, delay = 0, 0, interval
        while True:
            self.sleep(delay)
            with self._lock:
                items = list(self._items.values())
                if not items:
                    self._thread = None
                    return
            started, settled_before = self.clock(), self._settled
            try:
                failed_reads = 0 if self._round(items) else failed_reads + 1
            except Exception:  # a bug in a plugin must not stop the follower: deadlines still settle every id
                log.exception("%s: following instances failed; following them again later", self.provider.name)
                failed_reads += 1
            idle_rounds = 0 if self._settled > settled_before else idle_rounds + 1
            delay = round_delay(interval, failed_reads, idle_rounds, self.clock() - started, self.idle_backoff)
            self._after_round()

    def _round(self, items: list[_Item]) -> bool:
        """One read for every item; False when the read failed (then only deadlines and `read_failed` settle)."""
        self.reads += 1
        try:
            seen, instances = read_round(self.provider, items)
        except Exception as exc:  # noqa: BLE001 - VmError or a plugin's bug: this round knows nothing
            log.debug("%s: reading followed instances failed (%s); reading again later", self.provider.name, exc)
            failure = exc
            self._settle_each(items, lambda item: item.follow.read_failed(failure))
            return False
        self._settle_each(items, lambda item: item.instance_id in seen and item.follow.shown(
            seen[item.instance_id], instances.get(item.instance_id)))
        return True

    def _settle_each(self, items: list[_Item], by_read: Callable[[_Item], bool]) -> None:
        """Settle each item `by_read` says has settled, else each whose deadline passed. A bug in a Follow
        settles nothing of its item (its deadline will)."""
        now = self.clock()
        for item in items:
            try:
                settled = by_read(item)
            except Exception:
                log.exception("%s: following %s failed; following it again", self.provider.name, item.instance_id)
                settled = False
            if settled:
                self._settle(item, True)
            elif now >= item.deadline:
                self._settle(item, False)

    def _after_round(self) -> None:
        if self.after_round is None:
            return
        try:
            self.after_round()
        except Exception:
            log.exception("%s: the follower's after-round call failed", self.provider.name)

    def _settle(self, item: _Item, by_read: bool) -> None:
        with self._lock:
            if self._items.pop(id(item), None) is None:
                return
            self._settled += 1
        item.on_settled(by_read)


def read_round(provider: Provider, items: Collection[_Item]) -> tuple[dict[str, InstanceState | None],
                                                                       dict[str, Instance]]:
    """One read of the items' ids: their states (ids a batch read could not read left out), and the Instances of
    the RUNNING ids whose Follow wants one (maybe more). `get_states` is followed by one `get_instances`
    (SupportsGetMany) of those, else one `get_instance` each; `get_instances` alone, or a listing, gives both at
    once. Raises VmError."""
    ids = sorted({i.instance_id for i in items})
    if isinstance(provider, SupportsGetStates):
        wanting = {i.instance_id for i in items if i.follow.wants_instance}
        states = provider.get_states(ids)
        running = [i for i in ids if i in wanting and states.get(i) is InstanceState.RUNNING]
        if not running:
            return states, {}
        if isinstance(provider, SupportsGetMany):
            found = provider.get_instances(running)
            return states, {i: got for i, got in found.items() if got is not None}
        return states, {i: provider.get_instance(i) for i in running}
    if isinstance(provider, SupportsGetMany):
        read = provider.get_instances(ids)
        return ({i: None if got is None else got.state for i, got in read.items()},
                {i: got for i, got in read.items() if got is not None})
    wanted = set(ids)
    listed = {i.id: i for i in provider.list_instances() if i.id in wanted}
    return {i: listed[i].state if i in listed else None for i in ids}, listed


def poll_interval(provider: Provider) -> float:
    """Seconds between two rounds of the provider's follower (`Paced`, else DEFAULT_INTERVAL)."""
    return provider.poll_interval if isinstance(provider, Paced) else DEFAULT_INTERVAL


def round_delay(interval: float, failed_reads: int, idle_rounds: int, spent: float,
                idle_backoff: float = IDLE_BACKOFF) -> float:
    """Seconds from the end of a round that took `spent` seconds to the start of the next, after `failed_reads`
    failed reads in a row and `idle_rounds` rounds in a row that settled nothing: what is left of the interval
    (doubled per failed read up to MAX_BACKOFF times, grown 1.5 times per idle round up to `idle_backoff` times)
    since the round started, and never less than the round took."""
    factor = max(min(2.0 ** failed_reads, MAX_BACKOFF), min(1.5 ** idle_rounds, idle_backoff))
    return max(interval * factor - spent, spent)


@dataclass
class CreateFollow:
    """A create (or a VM adopted by name, `pending` None) followed to running (see the module docstring).

    Once settled, `instance` is the VM as a read showed it running (its Pending makes the result from it,
    `Completes`, else its `wait` does), or None: then `pending.wait` says how the create ended (it returns or
    raises at once), and a VM without a Pending that can no longer run is in `ended` (its state, or None when
    it is gone)."""

    pending: Pending[Instance] | None
    instance: Instance | None = None
    ended: InstanceState | None = None
    seen_gone: bool = False  # without a Pending: a read no longer showed the VM
    _shown: bool = False  # the last read showed the VM (still creating)
    _unseen_rounds: int = 0  # reads in a row that did not show it
    wants_instance: bool = True

    def read_failed(self, error: Exception) -> bool:
        """A create is followed to its deadline whatever a read says meanwhile."""
        return False

    def shown(self, state: InstanceState | None, instance: Instance | None) -> bool:
        if state is InstanceState.RUNNING and instance is not None:
            self.instance = instance
            return True
        if state is not None and state.ends_a_create:
            self.ended = state
            return True
        if state is not None:  # on its way, or running but not read whole this round
            self._shown, self._unseen_rounds = True, 0
            return False
        self._unseen_rounds += 1
        ask = self._shown or self._unseen_rounds % OPERATION_EVERY == 0
        self._shown = False
        return ask and self._finished()

    def _finished(self) -> bool:
        """One `done()` of the Pending: settled when finished, or when it raises anything but Transient (`wait`
        says what); a VM without a Pending that the read no longer shows is gone."""
        if self.pending is None:
            self.seen_gone = True
            return True
        try:
            return bool(self.pending.done())
        except Transient:
            return False
        except Exception:  # noqa: BLE001 - VmError, or a plugin's bug that its `wait` raises again
            return True
