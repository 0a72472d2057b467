"""The progress of a fleet create on a terminal: one aggregate line, updated in place.

`212/300 running, 40 creating, 48 retrying, 0 waiting, ETA 1m10s`: slots whose VM runs, slots whose first
create is under way, slots that failed at least once and do not run (placed again, waiting for a backoff, or
given up), and slots not started yet (queued behind a cloud's pacing or concurrency); the ETA, once a VM runs,
assumes the pace so far. The counts come from the engine's `Step`s (fleet/steps.py), never from reading text.
Every other progress line (notes, rollbacks, the cluster's moves) is printed as usual, above the aggregate line.
With `--verbose` the per-VM lines are printed too; on a stderr that is not a terminal (a pipe, a log) nothing
changes: every line is printed, and there is no aggregate line.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from ..fleet.steps import Step, StepKind
from .output import Output

REDRAW_INTERVAL = 0.1  # seconds between two redraws of the aggregate line (the last state is always drawn)


class SlotCounts:
    """What the `Step`s of `total` slots said so far."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.last: dict[int, StepKind] = {}
        self.failed: set[int] = set()

    def add(self, step: Step) -> None:
        self.last[step.slot] = step.kind
        if step.kind is StepKind.FAILED:
            self.failed.add(step.slot)

    @property
    def running(self) -> int:
        return sum(1 for kind in self.last.values() if kind is StepKind.RUNNING)

    @property
    def retrying(self) -> int:
        return sum(1 for slot in self.failed if self.last[slot] is not StepKind.RUNNING)

    @property
    def creating(self) -> int:
        return sum(1 for slot, kind in self.last.items() if kind is StepKind.CREATING and slot not in self.failed)

    @property
    def waiting(self) -> int:
        return max(self.total - len(self.last), 0)

    def line(self, elapsed: float) -> str:
        """`R/N running, C creating, T retrying[, W waiting][, ETA ...]`."""
        text = f"{self.running}/{self.total} running, {self.creating} creating, {self.retrying} retrying"
        if self.waiting:
            text += f", {self.waiting} waiting"
        left = self.total - self.running
        if self.running and left and elapsed > 0:
            text += f", ETA {_duration(left * elapsed / self.running)}"
        return text


class FleetProgress:
    """The `progress` of a FleetCreator for `total` slots. On a terminal (and not `verbose`) a Step only updates
    the aggregate line; otherwise it is printed like any line. `close()` draws the last state and ends the line."""

    def __init__(self, output: Output, total: int, *, verbose: bool = False, terminal: bool | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.output, self.verbose, self.clock = output, verbose, clock
        self.terminal = sys.stderr.isatty() if terminal is None else terminal
        self.counts = SlotCounts(total)
        self.started = clock()
        self._drawn_at = float("-inf")
        self._lock = threading.Lock()

    def __call__(self, message: str) -> None:
        if not isinstance(message, Step) or not self.terminal:
            self.output.progress(message)
            return
        if self.verbose:
            self.output.progress(message)
        with self._lock:
            self.counts.add(message)
            now = self.clock()
            if now - self._drawn_at >= REDRAW_INTERVAL:
                self._drawn_at = now
                self.output.status(self.counts.line(now - self.started))

    def close(self) -> None:
        """Draw the final counts (when any slot was reported) and end the aggregate line."""
        if not self.terminal:
            return
        with self._lock:
            if self.counts.last:
                self.output.status(self.counts.line(self.clock() - self.started))
            self.output.end_status()


def _duration(seconds: float) -> str:
    """`45s`, `3m05s`, `1h02m`."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
