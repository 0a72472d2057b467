"""Following many instances of one provider with one read per poll interval, instead of one poll loop per VM.

A read is one batch read of the states of the ids still followed (`SupportsGetStates`, e.g. Nebius `BatchGet`
decoding only statuses; else `SupportsGetMany`) or else one listing (`Provider.list_instances`): an id missing from
the listing does not exist any more. After each read, `settle` is asked about every id still followed, with its
state (None: it does not exist), and says whether it has reached what the caller waits for (a verdict) or not yet
(None). A watcher makes one read at a time, and waits the provider's `poll_interval` (`Paced`) after
each read before the next.

Lose-nothing rules: a read that fails with Transient settles nothing (the next round reads again); an id a batch
read could not read is unknown, never gone. Any other VmError from a read ends the watch (raised to the caller,
whose ids still followed stay unsettled). Reusable by any fleet service: destroy follows deletions with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..errors import Transient
from ..model import InstanceState
from ..provider import Paced, Provider, SupportsGetMany, SupportsGetStates

T = TypeVar("T")

DEFAULT_INTERVAL = 2.0  # seconds between reads of a provider that does not say (`Paced`)

# settle(id, its state or None when it does not exist) -> a verdict, or None to keep following the id
Settle = Callable[[str, InstanceState | None], T | None]


def read_states(provider: Provider, instance_ids: Collection[str]) -> dict[str, InstanceState | None]:
    """One read of `instance_ids`: each id read maps to its state or None (it does not exist); ids a batch
    read could not read are left out. Raises what the read raises (VmError)."""
    if isinstance(provider, SupportsGetStates):
        return provider.get_states(instance_ids)
    if isinstance(provider, SupportsGetMany):
        return {i: None if found is None else found.state for i, found in provider.get_instances(instance_ids).items()}
    listed = {i.id: i.state for i in provider.list_instances()}
    return {i: listed.get(i) for i in instance_ids}


def poll_interval(provider: Provider) -> float:
    return provider.poll_interval if isinstance(provider, Paced) else DEFAULT_INTERVAL


@dataclass
class Watch(Generic[T]):
    """Follows ids of one provider until each settles or the deadline passes (see the module docstring).

    `on_settled(id, verdict)` is called from the watching thread as soon as an id settles, and `after_round()`
    after each read has been settled; `reads` counts the reads made (successful or not). `sleep` and `clock` are
    injectable so a test never depends on wall time."""

    provider: Provider
    settle: Settle[T]
    on_settled: Callable[[str, T], None]
    after_round: Callable[[], None] = lambda: None
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    reads: int = 0

    def follow(self, instance_ids: Iterable[str], timeout: float) -> set[str]:
        """Watch until every id settled or `timeout` seconds passed; returns the ids left unsettled. The first
        read comes one poll interval after the call, a last one at the deadline. Raises a read's non-Transient
        VmError (ids not yet settled then stay unsettled, none is lost)."""
        waiting = set(instance_ids)
        deadline = self.clock() + timeout
        interval = poll_interval(self.provider)
        delay = interval
        while waiting:
            now = self.clock()
            if now + delay > deadline:
                if now < deadline:
                    self.sleep(deadline - now)
                    self._round(waiting)
                break
            self.sleep(delay)
            self._round(waiting)
            delay = interval
        return waiting

    def _round(self, waiting: set[str]) -> None:
        """One read, then settle what it shows; a Transient read failure settles nothing."""
        self.reads += 1
        try:
            seen = read_states(self.provider, sorted(waiting))
        except Transient:
            return
        for instance_id, state in seen.items():
            if instance_id not in waiting:
                continue
            verdict = self.settle(instance_id, state)
            if verdict is not None:
                waiting.discard(instance_id)
                self.on_settled(instance_id, verdict)
        self.after_round()
