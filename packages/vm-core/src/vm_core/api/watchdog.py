"""The `vm watchdog` verb of `Client` (see Client.watchdog for the contract), over vm_core/watchdog/."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from ..errors import Interrupted, PartialFailure, UsageError, VmError
from ..hints import Hint
from .outcome import Problem
from .reports import WatchdogReport
from .requests import WatchdogRequest

if TYPE_CHECKING:
    import threading

    from ..watchdog.loop import PassReport
    from .client import Client

MIN_INTERVAL = 0.1  # seconds: below this a loop would only spin


def watch(client: Client, request: WatchdogRequest, stopping: threading.Event | None) -> WatchdogReport:
    from ..watchdog.loop import Watchdog

    if not request.interval >= MIN_INTERVAL:
        raise UsageError(f"--interval must be at least {MIN_INTERVAL} seconds, not {request.interval}")
    watchdog = Watchdog(client, interval=request.interval, timeout=request.timeout, stopping=stopping)
    passes, last = watchdog.run(once=request.once)
    name = signal.Signals(watchdog.signal).name if watchdog.signal else ""
    report = WatchdogReport(passes=passes, last=last, signal=name)
    if watchdog.signal == signal.SIGINT:
        report.problem = Problem.of(Interrupted(f"interrupted after {passes} pass(es); every lease released"))
    elif request.once and last is not None and last.failures:
        report.problem = _failed(last)
    return report


def _failed(last: PassReport) -> Problem:
    from ..watchdog.duty import Done

    failures = [(f.fleet, VmError(f"{r.duty}: {r.summary}")) for f in last.failures for r in f.results
                if r.done is Done.FAILED]
    return Problem.of(PartialFailure(f"{len(failures)} duty(ies) of {len(last.failures)} fleet(s) did not succeed",
                                     suggestion=Hint.run("fleet", "list")), failures)
