"""The `vm fleet stop | start` verbs of `Client` (see its methods for the contracts), over fleet/power.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import PartialFailure, VmError
from ..hints import Command, Hint
from .fleet_reports import FleetPowerReport
from .outcome import Problem
from .requests import FleetPowerRequest

if TYPE_CHECKING:
    from ..events.model import Event
    from ..fleet.power import PowerReport
    from .client import Client


def power_fleet(client: Client, verb: str, request: FleetPowerRequest) -> FleetPowerReport:
    """`verb` ("stop" or "start") the fleet through its own profile and accounts (Client.recorded_fleet)."""
    from ..fleet.lease import user_at_host
    from ..fleet.naming import check_fleet_name
    from ..fleet.power import STOP, FleetPower

    check_fleet_name(request.name)
    store, _, providers = client.recorded_fleet(request.name)
    power = FleetPower(store, providers, progress=client.progress, warn=client.warn, timeout=request.timeout)
    act = power.stop if verb == STOP else power.start
    report = act(request.name, actor=user_at_host())
    if not report.acted and not report.failures:
        client.progress(f"fleet {request.name}: {_nothing(report)}")
    else:
        from ..events.verbs import tell

        tell(client.session, store, lambda actor: power_events(report, actor), client.warn)
    return FleetPowerReport(report=report, problem=_problem(report))


def power_events(report: PowerReport, actor: str) -> list[Event]:
    """The event of a stop or start that acted on some member (`stopped` or `started`, also when it fell short:
    details.failed), none for one that sent nothing. For any caller of fleet/power.py (the watchdog too)."""
    from ..events.kinds import EventKind
    from ..events.model import Event
    from ..fleet.power import STOP, Result

    if report.skipped or not report.acted:
        return []
    fleet = report.fleet
    details = {"state": fleet.state.value, "stopped" if report.verb == STOP else "started": len(report.acted),
               "already": len(report.of(Result.ALREADY)), "cannot_stop": len(report.cannot_stop),
               "failed": len(report.failures), "still_billing_per_hour": report.still_billing,
               "fleet_id": fleet.fleet_id}
    return [Event(EventKind.STOPPED if report.verb == STOP else EventKind.STARTED, fleet.name, actor, details)]


def _nothing(report: PowerReport) -> str:
    """Why a stop or start sent nothing (and changed nothing that bills)."""
    from ..fleet.power import STOP, Result

    if report.verb != STOP:
        return "nothing to start: every VM of it runs" if report.members else "nothing to start: it has no VM"
    if report.of(Result.ALREADY):
        return "nothing to stop: every VM that can stop is already stopped"
    if report.cannot_stop:
        return "nothing to stop: none of its VMs can stop (their clouds have no stop)"
    return "nothing to stop: it has no VM"


def _problem(report: PowerReport) -> Problem | None:
    """A PartialFailure when some member could not be acted on, or (a start) when the fleet is not active
    afterwards; None otherwise: members that cannot stop are warnings, not failures."""
    from ..fleet.power import STOP
    from ..fleet.store import FleetState

    name, failures = report.fleet.name, report.failures
    if failures:
        done = "stopped" if report.verb == STOP else "started"
        return Problem.of(PartialFailure(f"fleet {name}: {len(failures)} of {len(report.members)} VM(s) could not "
                                         f"be {done}", suggestion=_next(report)),
                          [(f.member.name, VmError(f"{f.result.value}: {f.detail}", provider=f.member.provider))
                           for f in failures])
    if report.verb != STOP and report.fleet.state is FleetState.DEGRADED:
        return Problem.of(PartialFailure(f"fleet {name} is degraded: {report.fleet.message}",
                                         suggestion=Hint.run("fleet", "repair", name)))
    return None


def _next(report: PowerReport) -> Hint:
    """What to run after a stop or start that fell short: reconcile for members not settled, repair for members
    that cannot be started (only a replacement runs again), else the same command again (it retries)."""
    from ..fleet.power import Result

    name = report.fleet.name
    if report.of(Result.UNSETTLED):
        return Hint.say("settle the fleet's records with {}, then run this again",
                        Command.of("fleet", "reconcile", name))
    if report.of(Result.CANNOT_START):
        return Hint.say("replace the members that cannot start with {}", Command.of("fleet", "repair", name))
    return Hint.run("fleet", report.verb, name)
