"""Pendings built from other Pendings, shared by the adapters (no SDK imports)."""

from __future__ import annotations

import time
from collections.abc import Callable

from ..model import Instance
from ..provider import Pending


class StopThenStart:
    """A reboot done as a stop, then a start, as one Pending (for clouds whose API has no guest reboot).

    Only the stop is sent at construction's caller; the start is sent once the stop has finished, from `done()`
    or `wait()`, so callers must wait for it (`must_wait`, the Staged protocol). `id` is the operation running now
    (the stop's, then the start's). `note` says how the reboot is done (the Explained protocol)."""

    def __init__(self, stop: Pending[Instance], begin_start: Callable[[str], Pending[Instance]], *,
                 note: str) -> None:
        self._stop = stop
        self._begin_start = begin_start
        self._start: Pending[Instance] | None = None
        self._note = note

    @property
    def note(self) -> str:
        """How the reboot is done; once the start has a note of its own (a fall back to on-demand), that one."""
        started = getattr(self._start, "note", "") if self._start is not None else ""
        return started or self._note

    @property
    def must_wait(self) -> bool:
        """True until the start has been sent (the Staged protocol)."""
        return self._start is None

    @property
    def id(self) -> str:
        return (self._start or self._stop).id

    @property
    def resource_id(self) -> str:
        return self._stop.resource_id

    def done(self) -> bool:
        """Polls the stop; once it has finished this sends the start (so it may make a few calls)."""
        if self._start is None:
            if not self._stop.done():
                return False
            self._stop.wait(0.0)  # raises if the stop failed
            self._start = self._begin_start(self.resource_id)
        return self._start.done()

    def wait(self, timeout: float) -> Instance:
        deadline = time.monotonic() + timeout
        if self._start is None:
            self._stop.wait(timeout)
            self._start = self._begin_start(self.resource_id)
        return self._start.wait(max(deadline - time.monotonic(), 0.0))
