"""The reports of the fleet verbs of `vm_core.api`. Each carries its `problem` (its `exit` kind follows) and
serialises itself with `to_json()`: the document `vm fleet ... -o json` prints (schemas: docs/python-api.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..fleet.cluster_place import ClusterPlan
from ..fleet.create import CreateReport, FleetSpec
from ..fleet.destroy import DestroyReport
from ..fleet.inspect import FleetView
from ..fleet.offers import OfferSet
from ..fleet.power import PowerReport, Result
from ..fleet.reap import Outcome as ReapOutcome
from ..fleet.report import Action
from ..fleet.scale import ScaleReport
from ..fleet.store import FleetRecord, MemberRecord
from ..model import Instance, Offer
from .fleet_json import cluster_places, current, fleet_json, iso, member_json, placements_json, view_members
from .outcome import Outcome


@dataclass
class FleetPlanReport(Outcome):
    """A fleet create's dry run: one offer per slot it can place (fewer than `spec.count`: the problem is a
    CapacityError), and the offers it chose from. A plan above the fleet's max_price has a BudgetError."""

    spec: FleetSpec
    placements: list[Offer]
    offers: OfferSet

    def to_json(self) -> dict[str, Any]:
        return {**placements_json(self.spec, self.placements), "max_price": self.spec.max_price,
                "ttl_seconds": self.spec.ttl}


@dataclass
class ClusterPlanReport(Outcome):
    """A cluster fleet's dry run: the place chosen (`cluster.chosen`, None when no place holds the fleet: the
    problem says why) and every place considered."""

    spec: FleetSpec
    cluster: ClusterPlan

    @property
    def places(self) -> list[dict[str, Any]]:
        return cluster_places(self.spec, self.cluster)

    def to_json(self) -> dict[str, Any]:
        return {**placements_json(self.spec, self.cluster.placements, placement="cluster"), "places": self.places}


@dataclass
class FleetCreated(Outcome):
    """A finished fleet create: the engine's report and the fleet's members as recorded afterwards."""

    report: CreateReport
    records: list[MemberRecord]

    @property
    def fleet(self) -> FleetRecord:
        return self.report.fleet

    @property
    def members(self) -> list[dict[str, Any]]:
        """The visible members as instance documents (the cloud's view of those that came up)."""
        return [member_json(self.fleet, m, self._instance_of(m)) for m in current(self.records)]

    def _instance_of(self, member: MemberRecord) -> Instance | None:
        return next((i for i in self.report.running if i.id == member.instance_id), None)

    def to_json(self) -> dict[str, Any]:
        return fleet_json(self.fleet, self.members)


@dataclass
class FleetStatus(Outcome):
    """A fleet as its clouds show it now (`view.problems`: members that could not be checked, a PartialFailure).
    After a reconcile or a scale that placed nothing, `actions` holds one entry per VM acted on (or that would
    be, when `dry_run`); None for a plain status."""

    view: FleetView
    actions: list[Action] | None = None
    dry_run: bool = False
    accrued_usd: float | None = None  # what its VMs cost since created (spend ledger; None: it knows none)
    rate_per_hour: float | None = None  # what they bill per hour now, by the ledger

    @property
    def members(self) -> list[dict[str, Any]]:
        return view_members(self.view)

    def to_json(self) -> dict[str, Any]:
        doc = fleet_json(self.view.fleet, self.members)
        if self.accrued_usd is not None:
            doc |= {"accrued_usd": round(self.accrued_usd, 6), "rate_per_hour": self.rate_per_hour}
        if self.actions is not None:
            doc |= {"actions": [a.to_json() for a in self.actions], "dry_run": self.dry_run}
        return doc


@dataclass
class FleetScaled(Outcome):
    """A scale or repair: the engine's report. A dry run that would place VMs has `report.plan`."""

    report: ScaleReport

    @property
    def status(self) -> FleetStatus:
        """The fleet afterwards (as it is, for a dry run) with the actions."""
        return FleetStatus(view=self.report.view, actions=self.report.actions, dry_run=self.report.dry_run)

    def to_json(self) -> dict[str, Any]:
        plan = self.report.plan
        if plan is None:
            return self.status.to_json()
        return {**placements_json(plan.spec, plan.placements), "max_price": plan.spec.max_price,
                "ttl_seconds": plan.spec.ttl, "slots": plan.slots,
                "fleet_count": self.report.view.fleet.count,  # `count` is what the plan places
                "actions": [a.to_json() for a in self.report.actions], "dry_run": True}


@dataclass
class FleetList(Outcome):
    """Every recorded fleet with its members' records; `fleets` have the state their records imply."""

    fleets: list[tuple[FleetRecord, list[MemberRecord]]] = field(default_factory=list)
    # The state the spend ledger last saw each VM in, by (provider, instance id): a stopped member shows stopped.
    seen: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def docs(self) -> list[dict[str, Any]]:
        from ..fleet.inspect import recorded_running, with_derived_state

        docs = []
        for fleet, members in self.fleets:
            fleet = with_derived_state(fleet, recorded_running(members))
            docs.append(fleet_json(fleet, [member_json(fleet, m, None, self.seen.get((m.provider, m.instance_id)))
                                           for m in current(members)]))
        return docs

    def to_json(self) -> list[dict[str, Any]]:
        return self.docs()


@dataclass
class FleetDestroyed(Outcome):
    """A fleet destroy; `found` is False when no such fleet was recorded (nothing to destroy, not a problem)."""

    report: DestroyReport
    found: bool = True

    def to_json(self) -> dict[str, Any]:
        report = self.report
        return {"name": report.fleet, "destroyed": report.destroyed, "released": len(report.released),
                "failed": len(report.failures), "forgotten": report.forgotten,
                "actions": [a.to_json() for a in report.actions]}


@dataclass
class FleetForgotten(Outcome):
    """A removed fleet record and the members it leaves that are, or may be, running."""

    fleet: FleetRecord
    left: list[MemberRecord]

    @property
    def members(self) -> list[dict[str, Any]]:
        return [member_json(self.fleet, m, None) for m in self.left]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.fleet.name, "forgotten": True, "left_running": self.members}


@dataclass
class FleetReaped(Outcome):
    """What reaping did (or, with `dry_run`, would do) to each expired fleet and each that reached its spend budget
    (`cause`: expired or budget), in the order of fleet/reap.py."""

    outcomes: list[ReapOutcome]
    dry_run: bool = False

    def docs(self) -> list[dict[str, Any]]:
        return [{"name": o.fleet.name, "id": o.fleet.fleet_id or None, "expires_at": iso(o.fleet.expires_at),
                 "result": o.result, "cause": o.cause, "reason": o.reason or None, "vms": o.vms,
                 "actions": [a.to_json() for a in o.actions]} for o in self.outcomes]

    def to_json(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "fleets": self.docs()}


@dataclass
class FleetPowerReport(Outcome):
    """A fleet stop or start (fleet/power.py): the fleet afterwards and each member's result. Members whose cloud
    cannot stop them are in `cannot_stop`, with the $/h they keep billing (`still_billing_per_hour`)."""

    report: PowerReport

    def to_json(self) -> dict[str, Any]:
        report, fleet = self.report, self.report.fleet
        done = Result.STOPPED if report.verb == "stop" else Result.STARTED
        return {"name": fleet.name, "id": fleet.fleet_id or None, "action": report.verb, "actor": report.actor,
                "state": fleet.state.value, "message": fleet.message, done.value: len(report.acted),
                "already": len(report.of(Result.ALREADY)), "cannot_stop": len(report.cannot_stop),
                "missing": len(report.of(Result.MISSING)), "failed": len(report.failures),
                "still_billing_per_hour": report.still_billing, "actions": [r.to_json() for r in report.members]}
