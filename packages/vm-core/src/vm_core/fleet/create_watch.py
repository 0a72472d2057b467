"""Following pending creates: one watcher thread per provider, whatever the number of VMs it waits for.

A provider that is `SupportsCreateWatch` is read once per round (`poll_creates`: one listing or one batch get for
every pending create) every `watch_interval` seconds, or after as long as the last round took if that is longer (a
watcher never keeps a cloud busy more than half the time). While rounds settle nothing (every VM still booting),
the interval grows 1.5 times a round up to IDLE_BACKOFF times `watch_interval`; it is `watch_interval` again after
a round that settles a VM, so a thousand boots that take minutes are not read in full every second, and the VMs
that finish after the first are seen as soon as before. A round whose read fails (a transient fault) settles
nothing and the next one comes later (the interval doubles, up to MAX_BACKOFF times), so a VM is never lost and
never settled twice. A VM the read does not show is asked about through its own Pending (`done()`, one call) at once
when the read showed it before (a create that fails may remove its VM), else every OPERATION_EVERY rounds: a failed
create is reported even when its VM never appears. Other providers (third-party plugins without the capability) are
followed through each Pending's `done()`, in this same thread, each Pending backing off on its own (FALLBACK_INTERVAL
growing to FALLBACK_MAX_INTERVAL).

`on_settled(instance)` is called once per followed create, from the watcher's thread: with the running
Instance, or with None when the create finished otherwise, when only its Pending can say how it ended, or when
its deadline passed. The caller then calls `pending.wait(...)`, which returns or raises at once (the adapter's
own cleanup of a failed create included). Callbacks must be quick: they hand the work to a pool.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import NotFound, Transient, VmError
from ..model import Instance, InstanceState
from ..provider import CreateRound, Pending, Provider, SupportsCreateWatch
from .members import wait_running

log = logging.getLogger(__name__)

OPERATION_EVERY = 4  # rounds between two questions to the operation of a VM the read never showed
MAX_BACKOFF = 8  # a watcher whose reads fail waits at most this many intervals between rounds
IDLE_BACKOFF = 4.0  # a watcher whose rounds settle nothing waits at most this many intervals between rounds
# Providers without SupportsCreateWatch: seconds between two done() calls of one Pending, growing 1.5 times a
# call from the first to the last value.
FALLBACK_INTERVAL, FALLBACK_MAX_INTERVAL = 0.02, 5.0

Settled = Callable[[Instance | None], None]


@dataclass
class _Followed:
    pending: Pending[Instance]
    deadline: float
    on_settled: Settled
    shown: bool = False  # the last read showed the VM (still creating)
    unseen_rounds: int = 0  # reads in a row that did not show it
    delay: float = FALLBACK_INTERVAL  # without SupportsCreateWatch: until the next done() after the next one
    next_check: float = 0.0  # without SupportsCreateWatch: when to call done() next (monotonic)


@dataclass
class CreateWatcher:
    """Follows every pending create of one provider (see the module docstring). Thread-safe; its thread runs
    only while something is followed."""

    provider: Provider
    _followed: dict[int, _Followed] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None
    _wake: threading.Event = field(default_factory=threading.Event)  # cuts a sleep short for a new Pending
    _settled: int = 0  # creates settled so far

    def follow(self, pending: Pending[Instance], timeout: float, on_settled: Settled) -> None:
        """Follow `pending` until it settles or `timeout` seconds pass; returns at once."""
        now = time.monotonic()
        item = _Followed(pending, now + timeout, on_settled, next_check=now + FALLBACK_INTERVAL)
        with self._lock:
            self._followed[id(item)] = item
            self._wake.set()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"watch-{self.provider.name}", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        watched = isinstance(self.provider, SupportsCreateWatch)
        failed_reads, idle_rounds, delay = 0, 0, self._first_delay()
        while True:
            if watched:
                time.sleep(delay)
            else:  # a new Pending may be due before the others
                self._wake.wait(delay)
                self._wake.clear()
            with self._lock:
                items = list(self._followed.values())
                if not items:
                    self._thread = None
                    return
            try:
                if watched:
                    started = time.monotonic()
                    settled_before = self._settled
                    failed_reads = 0 if self._watched_round(items) else failed_reads + 1
                    idle_rounds = 0 if self._settled > settled_before else idle_rounds + 1
                    delay = round_delay(self._interval(), failed_reads, idle_rounds, time.monotonic() - started)
                else:
                    self._fallback_round(items)
                    delay = max(min(i.next_check for i in items) - time.monotonic(), 0.0)
            except Exception:  # a bug in a plugin must not stop the watcher: deadlines still settle every VM
                log.exception("%s: following pending creates failed; following them again later", self.provider.name)
                delay = max(delay, FALLBACK_INTERVAL)

    def _first_delay(self) -> float:
        return self.provider.watch_interval if isinstance(self.provider, SupportsCreateWatch) else FALLBACK_INTERVAL

    def _interval(self) -> float:
        """Seconds between two reads of a provider that is SupportsCreateWatch."""
        return self.provider.watch_interval if isinstance(self.provider, SupportsCreateWatch) else FALLBACK_INTERVAL

    def _watched_round(self, items: list[_Followed]) -> bool:
        """One read for every item; False when the read failed (then only deadlines settle anything)."""
        assert isinstance(self.provider, SupportsCreateWatch)
        try:
            seen: CreateRound | None = self.provider.poll_creates([i.pending for i in items])
        except Exception as exc:  # noqa: BLE001 - VmError or a plugin's bug: this round knows nothing
            log.debug("%s: reading pending creates failed (%s); reading again later", self.provider.name, exc)
            seen = None
        now = time.monotonic()
        for item in items:
            rid = item.pending.resource_id
            if seen is not None and rid in seen.running:
                self._settle(item, seen.running[rid])
            elif (seen is not None and rid in seen.ended) or now >= item.deadline:
                self._settle(item, None)
            elif seen is not None and rid in seen.absent:
                item.unseen_rounds += 1
                if item.shown or item.unseen_rounds % OPERATION_EVERY == 0:
                    self._ask_operation(item)
                item.shown = False
            elif seen is not None:
                item.shown, item.unseen_rounds = True, 0
        return seen is not None

    def _fallback_round(self, items: list[_Followed]) -> None:
        """One done() for each Pending that is due (each backs off on its own, as its own wait would)."""
        now = time.monotonic()
        for item in items:
            if now >= item.deadline:
                self._settle(item, None)
            elif now >= item.next_check:
                self._ask_operation(item)
                item.next_check, item.delay = now + item.delay, min(item.delay * 1.5, FALLBACK_MAX_INTERVAL)

    def _ask_operation(self, item: _Followed) -> None:
        """One `done()`: settled when finished, or when it raises anything but Transient (`wait` says what)."""
        try:
            finished = item.pending.done()
        except Transient:
            return
        except Exception:  # noqa: BLE001 - VmError, or a plugin's bug that its `wait` raises again
            finished = True
        if finished:
            self._settle(item, None)

    def _settle(self, item: _Followed, instance: Instance | None) -> None:
        with self._lock:
            if self._followed.pop(id(item), None) is None:
                return
            self._settled += 1
        item.on_settled(instance)


def round_delay(interval: float, failed_reads: int, idle_rounds: int, spent: float) -> float:
    """Seconds until the next round, after `failed_reads` failed reads in a row and `idle_rounds` rounds in a row
    that settled nothing: the interval, doubled per failed read up to MAX_BACKOFF times, grown 1.5 times per idle
    round up to IDLE_BACKOFF times, and never shorter than the last round took (`spent`)."""
    factor = max(min(2.0 ** failed_reads, MAX_BACKOFF), min(1.5 ** idle_rounds, IDLE_BACKOFF))
    return max(interval * factor, spent)


class Located:
    """A Pending over a VM found by a lookup (an ambiguous create resolved by name): there is no operation to
    follow, so `done()` reads the VM and `wait()` polls it until it runs (members.wait_running)."""

    def __init__(self, provider: Provider, instance_id: str) -> None:
        self._provider = provider
        self.id = self.resource_id = instance_id

    def done(self) -> bool:
        """Whether the VM runs or can no longer come up (one read)."""
        try:
            state = self._provider.get_instance(self.resource_id).state
        except NotFound:
            return True
        return not state.on_its_way

    def wait(self, timeout: float) -> Instance:
        """The running VM; VmError when it can no longer come up (NotFound when it is gone), Timeout-like
        VmError after `timeout`."""
        instance = self._provider.get_instance(self.resource_id)
        if instance.state is InstanceState.RUNNING:
            return instance
        if instance.state.on_its_way:
            return wait_running(self._provider, self.resource_id, timeout)
        raise VmError(f"instance {self.resource_id} is {instance.state.value}", provider=self._provider.name)

