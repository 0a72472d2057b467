"""A duty: one thing the watchdog does to one fleet each pass, through the code path of the command a person
would run (the same guarantees: intent before each call, the fleet id on every VM, look-alikes left alone).

A duty is a `Duty(name, due, act)`, called as `duty(context, fleet) -> DutyResult`. `due(context, fleet)` is
cheap (reads the record only): the watchdog takes a fleet's lease only when some duty is due, so fleets with
nothing to do are not leased (a person's command is never refused for nothing). Once the lease is held, each due
duty runs in list order with the fleet's record as it is then; a duty whose result is `finished` (the fleet is
gone) ends the fleet's turn. A duty never raises for a fleet's trouble: a VmError it lets through is a FAILED
result, as is a bug (said at debug level).

Adding one (a package of a team's own, say, that drains fleets before a maintenance window):

    from vm_core.watchdog.duties import DUTIES
    from vm_core.watchdog.duty import Duty, DutyResult, Done

    def _in_window(context: DutyContext, fleet: FleetRecord) -> bool: ...
    def _drain(context: DutyContext, fleet: FleetRecord) -> DutyResult: ...
    DUTIES.insert(1, Duty("drain", _in_window, _drain))   # after expire, before the others

The context gives the fleet's store and connected providers (its own profile's accounts), who acts (`actor`),
`tell(events)` to record and deliver events, `progress`, the per-VM `timeout`, and `interrupts` (a callable a duty
registers while it runs an engine that a second signal should stop).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..events.model import Event
    from ..events.webhooks import Webhook
    from ..fleet.store import FleetRecord, FleetStore
    from ..provider import Provider
    from ..session import Session
    from .retries import Retries


class Done(enum.StrEnum):
    """How a duty ended for a fleet (the JSON `outcome`)."""

    ACTED = "acted"  # it changed something (reaped, replaced members)
    IDLE = "idle"  # there was nothing to do after all
    FAILED = "failed"  # it could not do what was due (a `vm watchdog --once` then ends with exit 7); a maintain
    # that left its fleet short says when it is tried again (next_try_at)


@dataclass(frozen=True)
class DutyResult:
    """What one duty did to one fleet: `summary` for people, `finished` when the fleet is gone afterwards."""

    duty: str
    done: Done
    summary: str = ""
    finished: bool = False
    next_try_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"duty": self.duty, "outcome": self.done.value, "summary": self.summary, "finished": self.finished,
                "next_try_at": self.next_try_at}


@dataclass
class DutyContext:
    """What a duty may use for one fleet, during one pass (see the module)."""

    session: Session  # the fleet's own profile's session
    store: FleetStore
    providers: Mapping[str, Provider]
    actor: str  # `watchdog user@host`
    now: float  # when the pass began (epoch seconds)
    interval: float  # seconds between passes
    timeout: float  # how long each VM may take (create, boot, delete)
    retries: Retries
    webhooks: Sequence[Webhook] = ()
    progress: Callable[[str], None] = lambda _: None
    warn: Callable[[str], None] = lambda _: None
    lost: threading.Event = field(default_factory=threading.Event)  # the fleet's lease was taken over
    interrupts: list[Callable[[], None]] = field(default_factory=list)  # what a second signal calls

    def tell(self, events: Sequence[Event]) -> None:
        """Record `events` (with a delivery to each webhook of the fleet's profile that wants it) and try to
        deliver them now. Never raises."""
        from ..events.recording import announce

        if events:
            announce(self.store, events, self.webhooks, warn=self.warn)


@dataclass(frozen=True)
class Duty:
    """One duty: `act` runs when `due` says so, holding the fleet's lease."""

    name: str
    due: Callable[[DutyContext, FleetRecord], bool]
    act: Callable[[DutyContext, FleetRecord], DutyResult]

    def __call__(self, context: DutyContext, fleet: FleetRecord) -> DutyResult:
        return self.act(context, fleet)
