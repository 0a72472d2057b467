"""`vm fleet scale | repair`: change a fleet's size, or bring it back to it (engine: fleet/scale.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ..errors import CapacityError, PartialFailure, Scope, UsageError, VmError
from ..hints import Command, Hint
from . import fleet_views as views
from .app import App, completes, timeout_option, with_app
from .cmd_ssh import ssh_key_option
from .fleet_context import fleet_providers

if TYPE_CHECKING:
    from ..fleet.scale import ScaleRefused

_TIMEOUT_HELP = "How long each new VM may take to come up (and each removed one to go)."


@click.command()
@click.argument("name", shell_complete=completes("fleets"))
@click.option("--count", "-n", type=int, required=True, help="How many VMs the fleet should have.")
@click.option("--min-count", type=int, help="Also change the fleet's minimum (a shrink never goes below it).")
@click.option("--dry-run", is_flag=True, help="Print what would be created (with prices) or destroyed; change nothing.")
@timeout_option(_TIMEOUT_HELP)
@ssh_key_option
@with_app
def scale(app: App, name: str, count: int, min_count: int | None, dry_run: bool, timeout: float,
          ssh_public_key: str | None) -> None:
    """Grow or shrink a fleet to COUNT VMs.

    Growing places new VMs like `vm fleet create` (failover, the fleet's id on every VM); a grow that falls
    short keeps what it created (exit 7; `vm fleet repair` tries again), unless the fleet ends below its
    minimum: then the VMs this scale created are destroyed again. Shrinking destroys on-demand VMs before
    reserved ones, the most expensive first, never below the minimum.

    \b
    vm fleet scale train --count 16
    vm fleet scale train --count 4 --min-count 4 --dry-run
    """
    from .cmd_fleet import MAX_FLEET

    if not 1 <= count <= MAX_FLEET:
        raise UsageError(f"--count must be between 1 and {MAX_FLEET}, not {count}")
    from ..fleet.scale import ScaleRefused
    from ..fleet.service import run_interruptibly

    scaler = _scaler(app, name, timeout, ssh_public_key)
    try:
        report = run_interruptibly(scaler.creator, lambda: scaler.scale(name, count, min_count, dry_run=dry_run))
    except ScaleRefused as exc:
        raise UsageError(_refusal(exc), suggestion=exc.hint) from None
    if (pinned := _pinned_short(scaler.store, name, count, report)) is not None:
        app.fail(pinned)
    _show(app, report)
    _exit_for(app, name, report)


def _pinned_short(store: Any, name: str, count: int, report: Any) -> CapacityError | None:
    """For a dry run of a cluster fleet whose place cannot take every new VM: the one error that says why (its
    new VMs may go only where its members are, and that place has no room for them), so that nothing goes to
    stdout and no hint points at room the fleet may not use. None otherwise."""
    from ..fleet.cluster import Placement, place_of

    plan = report.plan
    if not report.dry_run or plan is None or len(plan.placements) >= len(plan.slots):
        return None
    record = store.get_fleet(name)
    place = place_of(store.members(name)) if record is not None and record.strategy == Placement.CLUSTER else None
    if place is None:
        return None
    provider, region, shape, reservation = place
    where = f"{provider} {region} ({shape}" + (f", reservation {reservation})" if reservation else ", on demand)")
    offer = next((o for o in plan.offers.offers if (o.provider, o.region, o.shape, o.reservation_id) == place), None)
    missing = len(plan.slots) - len(plan.placements)
    return CapacityError(f"fleet {name} is a cluster fleet, so its new VMs go only where its VMs are: {where}, "
                         f"{_room(offer, bool(reservation))}; {missing} of {len(plan.slots)} new VM(s) cannot be "
                         "placed there", scope=Scope.RESERVATION if reservation else Scope.REGION, region=region,
                         provider=provider, suggestion=Hint.say(
                             "wait for room there, or see where a new cluster fleet of that size would fit: {}",
                             Command.of("fleet", "create", "--gpu", _gpu(plan.spec), "--count", count,
                                        "--placement", "cluster", "--dry-run")))


def _room(offer: Any, reserved: bool) -> str:
    """What the place's offer says of its room: the reservation is full, room for N more, none, not offered."""
    if offer is None:
        return "which is not offered now"
    if offer.capacity == 0 and reserved:
        return "whose reservation is full"
    if offer.capacity is not None:
        return f"which has room for {offer.capacity} more"
    return "which has room for more, its cloud says" if offer.available else "which has no room now, its cloud says"


def _gpu(spec: Any) -> str:
    return f"{spec.gpu}:{spec.gpu_count}" if spec.gpu_count else spec.gpu


@click.command()
@click.argument("name", shell_complete=completes("fleets"))
@click.option("--dry-run", is_flag=True, help="Say what would be settled and replaced (with prices); change nothing.")
@timeout_option(_TIMEOUT_HELP)
@ssh_key_option
@with_app
def repair(app: App, name: str, dry_run: bool, timeout: float, ssh_public_key: str | None) -> None:
    """Bring a degraded or interrupted fleet back to its requested count.

    First the records are settled against the clouds like `vm fleet reconcile` (VMs carrying the fleet's id
    are adopted or destroyed, gone ones marked missing), then a new VM is placed for each one missing.

    \b
    vm fleet repair train
    vm fleet repair train --dry-run
    """
    from ..fleet.service import run_interruptibly

    scaler = _scaler(app, name, timeout, ssh_public_key)
    report = run_interruptibly(scaler.creator, lambda: scaler.repair(name, dry_run=dry_run))
    _show(app, report)
    _exit_for(app, name, report)


def _scaler(app: App, name: str, timeout: float, ssh_public_key: str | None) -> Any:
    """A scaler acting through the fleet's own accounts, with the fleet's strategy."""
    from ..fleet.create import FleetCreator
    from ..fleet.scale import FleetScaler
    from ..fleet.service import fleet_strategy

    store, record, providers = fleet_providers(app, name)
    creator = FleetCreator(store, providers, fleet_strategy(store, record), progress=app.output.progress,
                           timeout=timeout, profile=record.profile)
    return FleetScaler(creator, ssh_public_key=ssh_public_key)


def _refusal(exc: ScaleRefused) -> str:
    """A refused scale in the words of the options."""
    from ..fleet.scale import ScaleProblem

    return {ScaleProblem.MINIMUM_OUT_OF_RANGE: f"--min-count must be between 1 and --count ({exc.count}), not "
                                               f"{exc.minimum}",
            ScaleProblem.BELOW_MINIMUM: f"--count {exc.count} is below fleet {exc.fleet}'s minimum of {exc.minimum};"
                                        " --min-count lowers the minimum"}[exc.problem]


def _show(app: App, report: Any) -> None:
    plan = report.plan
    if plan is None:
        views.fleet_view(app.output, report.view, report.actions, report.dry_run)
        return
    views.plan(app.output, plan.spec, plan.placements, plan.offers, slots=plan.slots,
               extra={"slots": plan.slots, "requested_count": report.view.fleet.requested_count,
                      "actions": [a.to_json() for a in report.actions], "dry_run": True},
               warn_short=False)  # _exit_for fails saying how many can be placed


def _exit_for(app: App, name: str, report: Any) -> None:
    """0 when the fleet is active afterwards; 7 when it is not (or a VM could not be destroyed); 130 when
    interrupted; a rolled-back grow exits like a failed create (6, or 9/4/8 when every failure was of that kind).
    A dry run exits 6 when the offers cannot hold every VM it would create."""
    from ..errors import Interrupted
    from ..fleet.service import failure_kind
    from ..fleet.store import FleetState
    from .cmd_fleet import unchecked

    fleet = report.view.fleet
    if report.dry_run:
        plan = report.plan
        if plan is not None and len(plan.placements) < len(plan.slots):
            app.fail(CapacityError(f"only {len(plan.placements)} of {len(plan.slots)} new VMs can be placed with "
                                   "the current offers", suggestion=Hint.run("offers", "--gpu", fleet.gpu)))
        return
    if report.interrupted:
        app.fail(Interrupted(f"fleet {name} interrupted: {fleet.message}",
                             suggestion=Hint.run("fleet", "repair", name)))
    if report.failures:
        app.fail(PartialFailure(f"{len(report.failures)} VM(s) of fleet {name} may still exist or still run",
                                suggestion=Hint.run("fleet", "reconcile", name)),
                 [(name, VmError(a.line())) for a in report.failures])
    if report.rolled_back:
        app.fail(failure_kind(report.errors)(f"fleet {name} not scaled: {report.summary}",
                                             suggestion=Hint.run("fleet", "status", name)))
    unchecked(app, report.view.problems, name)
    if fleet.state is not FleetState.ACTIVE:
        app.fail(PartialFailure(f"fleet {name} is {fleet.state.value}: {fleet.message}",
                                suggestion=Hint.run("fleet", "repair", name)))
