"""Tables and JSON documents of `vm fleet`: each report of vm_core.api rendered. The JSON printed is the
report's own `to_json()` (schemas: docs/python-api.md); tables show the same data. Plans (`--dry-run`) price
every slot from the offer it uses, which is the same source `vm fleet status` reads (the adapters price offers
and instances alike)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..fleet.budget import plan_total
from ..fleet.store import FleetRecord
from ..model import InstanceState, Offer
from .output import Output
from .views import INSTANCE_COLUMNS, accrued_text, capacity_cell

RUNNING = InstanceState.RUNNING.value  # a member's "state" in its JSON (the instance schema) when it runs

if TYPE_CHECKING:  # the API is imported when a command runs, not by `vm fleet --help`
    from ..api.fleet_reports import (
        ClusterPlanReport,
        FleetCreated,
        FleetDestroyed,
        FleetForgotten,
        FleetList,
        FleetPlanReport,
        FleetReaped,
        FleetScaled,
        FleetStatus,
    )
    from ..fleet.create import FleetSpec
    from ..fleet.offers import OfferSet


def total_text(total: float, complete: bool) -> str:
    """A total for tables: `12.40`, or `>= 12.40` when some price is unknown."""
    return f"{total:.2f}" if complete else f">= {total:.2f}"


def plan(out: Output, report: FleetPlanReport, *, warn_short: bool = True) -> None:
    """The placement of a dry run: one row per slot with its price, and whether the cloud says it has room
    (CAPACITY `unknown` where the cloud publishes no capacity: the slot may fail and be placed elsewhere). A
    plan that places fewer VMs than asked is warned about, unless `warn_short` is False (its problem says so)."""
    _placements(out, report.spec, report.placements, report.offers, warn_short=warn_short)
    if out.json:
        out.data(report.to_json())
        return
    _placement_table(out, report.spec, report.placements)


def _placements(out: Output, spec: FleetSpec, placements: Sequence[Offer], offers: OfferSet, *,
                warn_short: bool) -> None:
    """The warnings of a plan: what the offers left out, reservations vm cannot delete, a short plan, slots
    on clouds that publish no capacity."""
    _offer_warnings(out, offers)
    unterminable = [o for o in placements if o.reservation_id in offers.unterminable_reservations]
    if unterminable:
        out.warn(f"{len(unterminable)} VM(s) would use a reservation whose VMs the cloud will not delete "
                 "through its API: `vm fleet destroy` can only release them")
    if warn_short and len(placements) < spec.count:
        out.warn(f"only {len(placements)} of {spec.count} VMs can be placed with the current offers")
    unknown = sorted({o.provider for o in placements if o.capacity is None})
    if unknown:
        out.warn(f"{sum(1 for o in placements if o.capacity is None)} slot(s) rely on a cloud that does not publish "
                 f"capacity ({', '.join(unknown)}): they may fail and be placed elsewhere")


def _placement_table(out: Output, spec: FleetSpec, placements: Sequence[Offer],
                     slots: Sequence[int] | None = None) -> None:
    """One row per slot (numbered by `slots`, default 0, 1, ...), then the total and the cap."""
    total, complete = plan_total(placements)
    numbers = list(slots) if slots is not None else list(range(len(placements)))
    rows = [(i, o.provider, o.region, o.shape, o.reservation_id or "-", _capacity(o), o.price_per_hour)
            for i, o in zip(numbers, placements, strict=False)]
    out.table(("SLOT", "PROVIDER", "REGION", "SHAPE", "RESERVATION", "CAPACITY", "$/H"), rows)
    out.pairs([("total $/h", total_text(total, complete)),
               ("max $/h", "none" if spec.max_price is None else f"{spec.max_price:.2f}")])


def cluster_plan(out: Output, report: ClusterPlanReport) -> None:
    """The dry run of a cluster fleet: every slot in the chosen place (as `plan` shows slots), then every place
    considered, in the order they would be tried (ORDER `-`: cannot hold the fleet). HOLDS is `yes` (the
    cloud says there is room), `maybe` (the cloud publishes no capacity) or `no`."""
    cluster, spec = report.cluster, report.spec
    if out.json or cluster.chosen is None:  # else _placements gives these warnings
        _offer_warnings(out, cluster.offers)
    if out.json:
        out.data(report.to_json())
        return
    if cluster.chosen is not None:
        _placements(out, spec, cluster.placements, cluster.offers, warn_short=True)
        _placement_table(out, spec, cluster.placements)
        if cluster.chosen.capacity is None:
            out.warn(f"{cluster.chosen.where()} does not publish capacity: it may not hold the fleet, which then "
                     "moves whole to the next place")
    out.table(("ORDER", "PROVIDER", "REGION", "SHAPE", "RESERVATION", "CAPACITY", "VMS", "FLEET-$/H", "HOLDS"),
              [(p["order"] or "-", p["provider"], p["region"], p["shape"], p["reservation_id"] or "-",
                "unknown" if p["capacity"] is None else p["capacity"], p["vms"], p["fleet_price_per_hour"],
                p["holds"]) for p in report.places])


def _offer_warnings(out: Output, offers: OfferSet) -> None:
    """What the offers left out, and the providers that gave none, as warnings."""
    for note in offers.left_out.values():
        out.warn(note)
    for provider, why in offers.problems.items():
        out.warn(f"{provider}: no offers ({why})")


def _capacity(offer: Offer) -> str:
    """What the cloud said about room for the slot's offer: a number of VMs, or `unknown`."""
    return "unknown" if offer.capacity is None else str(offer.capacity)


def created(out: Output, report: FleetCreated) -> None:
    if out.json:
        out.data(report.to_json())
    else:
        _summary(out, report.fleet, report.members)


def fleet_view(out: Output, report: FleetStatus) -> None:
    """A fleet as its clouds show it (after a reconcile or scale with its actions in the JSON; each action was
    printed as progress when it happened)."""
    if out.json:
        out.data(report.to_json())
        return
    _summary(out, report.view.fleet, report.members, report)


def scaled(out: Output, report: FleetScaled) -> None:
    """A scale or repair: the fleet afterwards, or for a dry run that would place VMs, its plan (numbered by
    the new slots; a plan that falls short is not warned about: the report's problem says so)."""
    plan_ = report.report.plan
    if plan_ is None:
        fleet_view(out, report.status)
        return
    _placements(out, plan_.spec, plan_.placements, plan_.offers, warn_short=False)
    if out.json:
        out.data(report.to_json())
        return
    _placement_table(out, plan_.spec, plan_.placements, plan_.slots)


def _summary(out: Output, fleet: FleetRecord, members: list[dict[str, Any]],
             status: FleetStatus | None = None) -> None:
    from ..api.fleet_json import expiry_text, fleet_json

    running = sum(1 for m in members if m["state"] == RUNNING)
    doc = fleet_json(fleet, members)
    out.pairs([("fleet", fleet.name), ("id", fleet.fleet_id or "- (recorded before fleet ids)"),
               ("state", fleet.state.value),
               ("running", f"{running} of {fleet.count} (minimum {fleet.min_count})"),
               ("gpu", f"{fleet.gpu}" + (f"x{fleet.gpu_count}" if fleet.gpu_count else "")),
               ("strategy", fleet.strategy), ("total $/h", total_text(doc["price_per_hour"], doc["price_complete"])),
               ("max $/h", "none" if fleet.max_price is None else f"{fleet.max_price:.2f}"),
               ("expires", expiry_text(fleet.expires_at)),
               *_accrued(status),
               *([("waiting", fleet.message)] if fleet.state.value == "waiting" else [])])
    if members:
        out.table(INSTANCE_COLUMNS, [_row(m) for m in members])


def _accrued(status: FleetStatus | None) -> list[tuple[str, str]]:
    """The `accrued` line of a status whose VMs the spend ledger knows (none otherwise)."""
    if status is None or status.accrued_usd is None:
        return []
    return [("accrued", accrued_text(status.accrued_usd, status.rate_per_hour))]


def _row(m: dict[str, Any]) -> list[Any]:
    gpu = f"{m['gpu']}x{m['gpu_count']}" if m["gpu"] else "-"
    reserved = capacity_cell(m["reserved"], m["reservation_id"], m["spot"])
    return [m["provider"], m["id"], m["name"], m["state"], gpu, m["region"], reserved, m["price_per_hour"]]


def fleet_list(out: Output, report: FleetList) -> None:
    """Every recorded fleet (`Client.fleet_list`), with the state its members' records imply."""
    docs = report.docs()
    if out.json:
        out.data(docs)
        return
    out.table(("NAME", "STATE", "GPU", "RUNNING", "STRATEGY", "$/H", "CREATED", "EXPIRES", "CREATED-BY", "PROFILE"),
              [(d["name"], d["state"], d["gpu"], f"{_running(d)}/{d['count']}", d["strategy"],
                total_text(d["price_per_hour"], d["price_complete"]), d["created_at"][:19].replace("T", " "),
                (d["expires_at"] or "never")[:19].replace("T", " "), d["created_by"] or "-", d["profile"] or "-")
               for d in docs])


def _running(doc: dict[str, Any]) -> int:
    return sum(1 for m in doc["members"] if m["state"] == RUNNING)


def destroyed(out: Output, report: FleetDestroyed) -> None:
    """Each VM's line was printed as it happened; this is the summary (JSON: the same actions)."""
    if out.json:
        out.data(report.to_json())
        return
    result = report.report
    out.pairs([("fleet", result.fleet), ("destroyed", result.destroyed),
               ("released (still running)", len(result.released)), ("failed", len(result.failures)),
               ("record", "forgotten" if result.forgotten else "kept (something may still run)")])


def forgotten(out: Output, report: FleetForgotten) -> None:
    """What `vm fleet forget` left running (JSON: the members, as instances from their records)."""
    if out.json:
        out.data(report.to_json())
        return
    members = report.members
    out.pairs([("fleet", report.fleet.name), ("record", "forgotten"), ("VMs left as they are", len(members))])
    if members:
        out.table(INSTANCE_COLUMNS, [_row(m) for m in members])


def reaped(out: Output, report: FleetReaped) -> None:
    """What `vm fleet reap` did to each expired fleet: destroyed, left (something may still run), skipped (with
    why), gone (removed meanwhile) or, with --dry-run, would-destroy."""
    if out.json:
        out.data(report.to_json())
        return
    docs = report.docs()
    for doc in docs:
        if doc["reason"]:
            out.warn(f"fleet {doc['name']}: {doc['result']}: {doc['reason']}")
    if docs:
        out.table(("FLEET", "EXPIRED", "RESULT", "VMS"),
                  [(d["name"], (d["expires_at"] or "-")[:19].replace("T", " "), d["result"],
                    d["vms"]) for d in docs])
