"""Fleets that look after themselves, the verbs of `Client` (see its methods for the contracts): `vm fleet
maintain NAME on|off`, a create that waits for capacity (fleet/waiting.py; api.fleets.create_fleet runs it), and
the one step of a wait the watchdog takes (`advance_waiting`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import CapacityError, Interrupted, UsageError
from ..hints import Command, Hint
from .outcome import Outcome, Problem
from .requests import FleetMaintainRequest

if TYPE_CHECKING:
    from ..fleet.create import CreateReport, FleetCreator, FleetSpec
    from ..fleet.store import FleetRecord
    from ..fleet.waiting import WaitReport
    from .client import Client


@dataclass
class FleetMaintained(Outcome):
    """`vm fleet maintain`: the fleet afterwards, and whether this call changed it."""

    fleet: FleetRecord
    changed: bool

    def to_json(self) -> dict[str, Any]:
        return {"name": self.fleet.name, "id": self.fleet.fleet_id or None, "maintain": self.fleet.maintain,
                "changed": self.changed, "state": self.fleet.state.value}


@dataclass
class WaitAdvanced(Outcome):
    """One check of a fleet waiting for capacity: the fleet afterwards (still `waiting`, placed, or `failed`
    when the wait gave up) and how many of its VMs the clouds could hold at the check."""

    fleet: FleetRecord
    placeable: int
    gave_up: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"name": self.fleet.name, "state": self.fleet.state.value, "message": self.fleet.message,
                "placeable": self.placeable, "count": self.fleet.count,
                "gave_up": self.gave_up}


def maintain_fleet(client: Client, request: FleetMaintainRequest) -> FleetMaintained:
    """Turn the fleet's maintenance on or off, holding its lease while the record changes (so neither a person's
    command nor the watchdog acts on the fleet meanwhile). NotFound for an unknown fleet; UsageError while
    another process holds the lease or for a fleet that is destroyed or being destroyed."""
    from ..fleet.destroy import recorded_fleet
    from ..fleet.lease import lease
    from ..fleet.location import open_store
    from ..fleet.naming import check_fleet_name
    from ..fleet.store import FleetState

    check_fleet_name(request.name)
    store = open_store(client.session)
    recorded_fleet(store, request.name)  # NotFound before any lease is taken
    with lease(store, request.name, "fleet maintain"):
        record = recorded_fleet(store, request.name)
        if record.state in (FleetState.DESTROYING, FleetState.DESTROYED):
            raise UsageError(f"fleet {request.name} is {record.state.value}: it is not maintained",
                             suggestion=Hint.run("fleet", "destroy", request.name))
        if record.maintain is request.maintain:
            return FleetMaintained(fleet=record, changed=False)
        return FleetMaintained(fleet=store.update_fleet(request.name, maintain=request.maintain), changed=True)


def wait_for_capacity(client: Client, creator: FleetCreator, spec: FleetSpec) -> WaitReport:
    """`vm fleet create --wait-for-capacity` (api.fleets.create_fleet runs it interruptibly): a fleet of that name
    waiting already is waited for again (the same create re-run, from any machine), else the fleet is recorded
    waiting; then checks until it is placed, the wait gives up, or `creator.stop` is set (the fleet stays
    waiting)."""
    from ..fleet.store import FleetState
    from ..fleet.waiting import FleetWaiter

    waiter = FleetWaiter(creator)
    found = creator.store.get_fleet(spec.name)
    if found is not None and found.state is FleetState.WAITING:
        client.progress(f"fleet {spec.name} is waiting for capacity: going on")
        return waiter.resume(found, spec)
    return waiter.create(spec)


def advance_waiting(client: Client, record: FleetRecord) -> WaitAdvanced:
    """One check of the waiting fleet `record` (for the watchdog, each round): under the fleet's lease, give up
    at its `wait_until` (the fleet failed, nothing left), else place it when the clouds have room for all of it
    within its price cap, else record how many VMs are placeable now. Acts through the fleet's own profile and
    accounts (Client.recorded_fleet). The problem is a CapacityError when the wait gave up. Raises NotFound,
    UsageError (another process holds the lease, or the fleet is not waiting)."""
    from ..fleet.waiting import check_waiting

    store, fresh, providers = client.recorded_fleet(record.name)
    concurrency = {name: client.session.plugin(name).create_concurrency for name in providers}
    waited = check_waiting(store, providers, fresh, progress=client.progress, concurrency=concurrency)
    problem = Problem.of(_gave_up(waited)) if waited.gave_up else None
    return WaitAdvanced(fleet=waited.fleet, placeable=waited.placeable, gave_up=waited.gave_up, problem=problem)


def create_report(waited: WaitReport) -> CreateReport:
    """The CreateReport of a wait that ended (placed, gave up) or was interrupted (nothing placed)."""
    from ..fleet.create import CreateReport

    return waited.placed or CreateReport(waited.fleet, [], list(waited.notes), interrupted=waited.interrupted)


def wait_problem(waited: WaitReport) -> Problem | None:
    """Interrupted (exit 130) while still waiting; CapacityError (exit 6) when the wait gave up; None when it
    placed the fleet (the create's own ending then says how it went)."""
    name = waited.fleet.name
    if waited.waiting:
        return Problem.of(Interrupted(f"fleet {name} is still waiting for capacity: {waited.fleet.message}",
                                      suggestion=Hint.say("re-run the same command to go on waiting, or see {}",
                                                          Command.of("fleet", "status", name))))
    if waited.gave_up:
        return Problem.of(_gave_up(waited))
    return None


def _gave_up(waited: WaitReport) -> CapacityError:
    name = waited.fleet.name
    left = f"; {len(waited.notes)} VM(s) could not be destroyed" if waited.notes else "; nothing of it is left"
    return CapacityError(f"fleet {name} {waited.fleet.message}{left}", suggestion=Hint.run("fleet", "destroy", name))
