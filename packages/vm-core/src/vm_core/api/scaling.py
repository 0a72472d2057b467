"""How a fleet verb on a recorded fleet ended (`scale_problem`, `unchecked`), and the errors of a refused or
impossible scale."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import CapacityError, Interrupted, PartialFailure, Scope, VmError
from ..hints import Command, Hint
from .outcome import Problem

if TYPE_CHECKING:
    from ..fleet.create import FleetSpec
    from ..fleet.scale import ScaleRefused, ScaleReport
    from ..fleet.store import FleetStore
    from ..model import Offer


def scale_problem(name: str, report: ScaleReport) -> Problem | None:
    """None when the fleet is active afterwards; a PartialFailure when it is not (or a VM could not be
    destroyed); Interrupted when interrupted; a rolled-back grow ends like a failed create (CapacityError, or
    Timeout/AuthError/Transient when every failure was of that kind). A dry run: a CapacityError when the offers
    cannot hold every VM it would create."""
    from ..fleet.service import failure_kind
    from ..fleet.store import FleetState

    fleet = report.view.fleet
    if report.dry_run:
        plan = report.plan
        if plan is not None and len(plan.placements) < len(plan.slots):
            return Problem.of(CapacityError(f"only {len(plan.placements)} of {len(plan.slots)} new VMs can be "
                                            "placed with the current offers",
                                            suggestion=Hint.run("offers", "--gpu", fleet.gpu)))
        return None
    if report.interrupted:
        return Problem.of(Interrupted(f"fleet {name} interrupted: {fleet.message}",
                                      suggestion=Hint.run("fleet", "repair", name)))
    if report.failures:
        return Problem.of(PartialFailure(f"{len(report.failures)} VM(s) of fleet {name} may still exist or still run",
                                         suggestion=Hint.run("fleet", "reconcile", name)),
                          [(name, VmError(a.line())) for a in report.failures])
    if report.rolled_back:
        return Problem.of(failure_kind(report.errors)(f"fleet {name} not scaled: {report.summary}",
                                                      suggestion=Hint.run("fleet", "status", name)))
    if (problem := unchecked(report.view.problems, name)) is not None:
        return problem
    if fleet.state is not FleetState.ACTIVE:
        return Problem.of(PartialFailure(f"fleet {name} is {fleet.state.value}: {fleet.message}",
                                         suggestion=Hint.run("fleet", "repair", name)))
    return None


def pinned_short(store: FleetStore, name: str, count: int, report: ScaleReport) -> CapacityError | None:
    """For a dry run of a cluster fleet whose place cannot take every new VM: the one error that says why (its
    new VMs may go only where its members are, and that place has no room for them), so that nothing is shown
    and no hint points at room the fleet may not use. None otherwise."""
    from ..fleet.cluster import Placement, place_of

    plan = report.plan
    if not report.dry_run or plan is None or len(plan.placements) >= len(plan.slots):
        return None
    record = store.get_fleet(name)
    place = place_of(store.members(name)) if record is not None and record.placement is Placement.CLUSTER else None
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


def _room(offer: Offer | None, reserved: bool) -> str:
    """What the place's offer says of its room: the reservation is full, room for N more, none, not offered."""
    if offer is None:
        return "which is not offered now"
    if offer.capacity == 0 and reserved:
        return "whose reservation is full"
    if offer.capacity is not None:
        return f"which has room for {offer.capacity} more"
    return "which has room for more, its cloud says" if offer.available else "which has no room now, its cloud says"


def _gpu(spec: FleetSpec) -> str:
    return f"{spec.gpu}:{spec.gpu_count}" if spec.gpu_count else spec.gpu


def refusal(exc: ScaleRefused) -> str:
    """A refused scale in the words of the options."""
    from ..fleet.scale import ScaleProblem

    return {ScaleProblem.MINIMUM_OUT_OF_RANGE: f"--min-count must be between 1 and --count ({exc.count}), not "
                                               f"{exc.minimum}",
            ScaleProblem.BELOW_MINIMUM: f"--count {exc.count} is below fleet {exc.fleet}'s minimum of {exc.minimum};"
                                        " --min-count lowers the minimum"}[exc.problem]


def unchecked(problems: list[str], name: str) -> Problem | None:
    """A PartialFailure listing the members of fleet `name` that could not be checked, if any."""
    if not problems:
        return None
    return Problem.of(PartialFailure(f"fleet {name}: {len(problems)} member(s) could not be checked"),
                      [(name, VmError(p)) for p in problems])
