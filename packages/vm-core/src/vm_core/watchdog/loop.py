"""The watchdog's passes: for each fleet of the store, under the fleet's lease, the duties that are due.

A pass lists the fleets of the store the client's profile names, and for each one (through its own profile and
accounts, as `vm fleet reap` acts: Client.recorded_fleet) takes its lease, holder `watchdog user@host:pid`, when a
duty is due, and runs them (duties.DUTIES). A live lease held by anyone else (a person's command, another
watchdog) skips the fleet this pass, said at debug level; a lease whose holder died is taken over (at once on the
same machine, after it lapses elsewhere: fleet/lease.py), and the duty that follows resolves what was left. At
the end of a pass the webhook deliveries still pending (of this watchdog's events and of people's commands) are
sent (events/delivery.py), for each profile the pass used.

Signals (the main thread only): the first SIGTERM or SIGINT lets the fleet being worked on finish its duty, then
ends the loop (its leases released); a second one also asks a running repair to stop starting VMs (what it
started is recorded: the next pass resolves it). `Watchdog.signal` says which signal ended it.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import NotFound, VmError
from .duty import Done, Duty, DutyContext, DutyResult
from .retries import Retries

if TYPE_CHECKING:
    from ..api.client import Client
    from ..events.webhooks import Webhook
    from ..fleet.store import FleetRecord, FleetStore
    from ..provider import Provider

DELIVERY_SECONDS = 30.0  # how long the deliveries at the end of one pass may take, all profiles together
_log = logging.getLogger("vm_core.watchdog")


@dataclass
class FleetWatch:
    """What one pass did to one fleet: each due duty's result, or why it was skipped (another holds its lease)."""

    fleet: str
    results: list[DutyResult] = field(default_factory=list)
    skipped: str = ""

    @property
    def failed(self) -> bool:
        return any(r.done is Done.FAILED for r in self.results)

    def to_json(self) -> dict[str, Any]:
        return {"fleet": self.fleet, "skipped": self.skipped, "duties": [r.to_json() for r in self.results]}


@dataclass
class PassReport:
    """One pass: the fleets acted on or skipped (fleets with no duty due are not listed) and the deliveries."""

    started_at: float
    fleets: list[FleetWatch] = field(default_factory=list)
    delivered: int = 0
    retrying: int = 0
    undeliverable: int = 0  # given up after their last attempt

    @property
    def failures(self) -> list[FleetWatch]:
        return [f for f in self.fleets if f.failed]

    def to_json(self) -> dict[str, Any]:
        return {"started_at": self.started_at, "fleets": [f.to_json() for f in self.fleets],
                "deliveries": {"delivered": self.delivered, "retrying": self.retrying,
                               "failed": self.undeliverable}}


class Watchdog:
    """Passes over the fleets of `client`'s store, every `interval` seconds, doing `duties` (default
    duties.DUTIES). Set `stopping` to end the loop after the current fleet's duty."""

    def __init__(self, client: Client, *, interval: float, timeout: float, duties: Sequence[Duty] | None = None,
                 stopping: threading.Event | None = None) -> None:
        from .duties import DUTIES

        self.client, self.interval, self.timeout = client, interval, timeout
        self.duties = DUTIES if duties is None else duties
        self.stopping = stopping or threading.Event()
        self.retries = Retries()
        self.signal = 0  # the signal that ended the loop (0: none)
        self._interrupts: list[Callable[[], None]] = []
        self._profiles: dict[str, tuple[FleetStore, Sequence[Webhook]]] = {}

    # ------------------------------------------------------------------------------------------ the loop
    def run(self, *, once: bool) -> tuple[int, PassReport | None]:
        """One pass (`once`), else passes until `stopping` is set or a signal arrives. Returns the number of
        passes and the last one. With `once`, a store that cannot be read raises (ConfigError); in the loop it
        is warned about and tried again at the next pass."""
        from ..fleet.lease import acting_as

        with acting_as("watchdog"), self._signals():
            self._say_where()
            passes, last = 0, None
            while not self.stopping.is_set():
                try:
                    last = self.one_pass()
                except Exception as exc:  # noqa: BLE001 - the loop outlives a store that is down for a while
                    if once:
                        raise
                    self.client.warn(f"this pass stopped early: {_said(exc)}; the next one is in "
                                     f"{self.interval:g} s")
                passes += 1
                if once:
                    break
                self.stopping.wait(self.interval)
            return passes, last

    def _say_where(self) -> None:
        """Once at start: a SQLite store serves this machine only."""
        from ..fleet.location import describe, store_url

        if store_url(self.client.session) is None:
            self.client.warn(f"the fleet store is the SQLite file {describe(self.client.session)}: this watchdog "
                             "looks after the fleets recorded on this machine only; for a team, give every "
                             "machine one PostgreSQL store_url (docs/watchdog.md)")

    # ------------------------------------------------------------------------------------------ one pass
    def one_pass(self) -> PassReport:
        """Each fleet's due duties, then the pending webhook deliveries."""
        from ..fleet.location import open_store

        report = PassReport(time.time())
        self.client.reset_profile()
        store = open_store(self.client.session)
        self._profiles = {}
        self._used(store)
        for listed in store.list_fleets():
            if self.stopping.is_set():
                break
            if not any(duty.due(self._context(store, {}, report.started_at), listed) for duty in self.duties):
                continue
            watched = self._fleet(listed, report.started_at)
            if watched is not None:
                report.fleets.append(watched)
        if not self.stopping.is_set():  # a stopping watchdog leaves them to the next one (they stay pending)
            self._deliver(report)
        return report

    def _fleet(self, listed: FleetRecord, now: float) -> FleetWatch | None:
        """The fleet's due duties under its lease (`listed` has one due); None when, read again through its own
        profile, none is (or it is gone)."""
        from ..fleet.lease import LeaseRefused, lease

        self.client.reset_profile()
        try:
            store, record, providers = self.client.recorded_fleet(listed.name)
        except NotFound:
            return None
        except VmError as exc:
            return FleetWatch(listed.name, [DutyResult("connect", Done.FAILED, exc.message)])
        context = self._context(store, providers, now)
        if not any(duty.due(context, record) for duty in self.duties):
            return None
        watched = FleetWatch(record.name)
        try:
            with lease(store, record.name, "watchdog", on_lost=context.lost.set):
                self._duties(context, record, watched)
        except LeaseRefused as exc:
            _log.debug("fleet %s skipped this pass: its lease is held by %s (%s)", record.name, exc.lease.holder,
                       exc.lease.operation)
            watched.skipped = f"being changed by {exc.lease.holder} ({exc.lease.operation})"
        finally:
            self._interrupts.clear()
        return watched

    def _context(self, store: FleetStore, providers: Mapping[str, Provider], now: float) -> DutyContext:
        """The context of a fleet acted on through the client's current profile (its session and webhooks)."""
        from ..fleet.lease import actor

        return DutyContext(self.client.session, store, providers, actor(), now, self.interval, self.timeout,
                           self.retries, self._used(store), progress=self.client.progress, warn=self.client.warn,
                           interrupts=self._interrupts)

    def _duties(self, context: DutyContext, record: FleetRecord, watched: FleetWatch) -> None:
        for duty in self.duties:
            current = context.store.get_fleet(record.name)
            if current is None or current.fleet_id != record.fleet_id or context.lost.is_set():
                return
            if not duty.due(context, current):
                continue
            result = _run(duty, context, current)
            watched.results.append(result)
            if result.done is not Done.IDLE:
                context.progress(f"fleet {current.name}: {duty.name}: {result.done.value}: {result.summary}")
            if result.finished or self.stopping.is_set():
                return

    # ------------------------------------------------------------------------------------------ webhooks
    def _used(self, store: FleetStore) -> Sequence[Webhook]:
        """The webhooks of the client's current profile, noted for this pass's deliveries (their URLs and
        secrets join the session's secrets: never shown)."""
        session = self.client.session
        hooks = session.profile.notify
        session.secrets.update(value for hook in hooks for value in (hook.url, hook.secret))
        self._profiles.setdefault(session.profile.name, (store, hooks))
        return hooks

    def _deliver(self, report: PassReport) -> None:
        from ..events.delivery import deliver_pending
        from ..events.store import EventLog

        deadline = time.monotonic() + DELIVERY_SECONDS
        for name, (store, hooks) in self._profiles.items():
            if not hooks or not isinstance(store, EventLog):
                continue
            try:
                done = deliver_pending(store, hooks, now=time.time(), deadline=deadline)
            except Exception as exc:  # noqa: BLE001 - they stay pending for the next pass
                self.client.warn(f"profile {name}: webhook deliveries not sent this pass: {_said(exc)}")
                continue
            report.delivered += len(done.delivered)
            report.retrying += len(done.retrying)
            report.undeliverable += len(done.failed)

    # ------------------------------------------------------------------------------------------ signals
    def _signals(self) -> _Signals:
        return _Signals(self)

    def signalled(self, signum: int) -> None:
        """A SIGTERM or SIGINT: the first ends the loop after the current duty, a second stops a running repair
        starting VMs."""
        if self.stopping.is_set():
            for interrupt in list(self._interrupts):
                interrupt()
            return
        self.signal = signum
        self.client.progress(f"{signal.Signals(signum).name}: finishing the current fleet's duty, then stopping")
        self.stopping.set()


class _Signals:
    """SIGTERM and SIGINT handled by the watchdog for the body (main thread only: signals reach no other)."""

    def __init__(self, watchdog: Watchdog) -> None:
        self.watchdog = watchdog
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                self.previous[signum] = signal.signal(signum, lambda n, _: self.watchdog.signalled(n))

    def __exit__(self, *_: object) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)


def _run(duty: Duty, context: DutyContext, fleet: FleetRecord) -> DutyResult:
    """The duty's result; a VmError or a bug it lets through is a FAILED result (a bug's traceback at debug)."""
    try:
        return duty(context, fleet)
    except VmError as exc:
        return DutyResult(duty.name, Done.FAILED, exc.message)
    except Exception as exc:  # noqa: BLE001 - one fleet's trouble must not stop the watchdog
        _log.debug("duty %s of fleet %s failed", duty.name, fleet.name, exc_info=True)
        return DutyResult(duty.name, Done.FAILED, f"internal error: {type(exc).__name__}")


def _said(error: BaseException) -> str:
    return error.message if isinstance(error, VmError) else f"{type(error).__name__}"
