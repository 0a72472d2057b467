"""Tables and JSON documents of `vm fleet`. Fleet JSON keys: name, state, gpu, gpu_count, requested_count,
min_count, strategy, created_at, members (instance objects as in `vm list`), price_per_hour (the total)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ..fleet.store import FleetRecord, MemberRecord, MemberState
from ..model import Instance, Offer
from .output import Output
from .views import INSTANCE_COLUMNS

# A member without a fresh cloud view is shown with the state its record implies.
_RECORDED_STATE = {
    MemberState.INTENT: "creating", MemberState.CREATING: "creating", MemberState.RUNNING: "running",
    MemberState.FAILED: "error", MemberState.UNKNOWN: "unknown", MemberState.DESTROYING: "terminating",
    MemberState.DESTROYED: "terminated", MemberState.RELEASED: "running", MemberState.MISSING: "terminated",
}


def fleet_json(fleet: FleetRecord, members: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": fleet.name, "state": fleet.state.value, "gpu": fleet.gpu, "gpu_count": fleet.gpu_count,
        "requested_count": fleet.requested_count, "min_count": fleet.min_count, "strategy": fleet.strategy,
        "created_at": datetime.fromtimestamp(fleet.created_at, UTC).isoformat(), "message": fleet.message,
        "members": list(members),
        "price_per_hour": round(sum(m["price_per_hour"] or 0.0 for m in members if m["state"] == "running"), 4),
    }


def member_json(member: MemberRecord, instance: Instance | None) -> dict[str, Any]:
    if instance is not None:
        return {**instance.to_json(), "fleet": member.fleet}
    return {"provider": member.provider, "id": member.instance_id, "name": member.name,
            "state": _RECORDED_STATE[member.state], "gpu": "", "gpu_count": None, "region": member.region,
            "reserved": bool(member.reservation_id), "reservation_id": member.reservation_id,
            "price_per_hour": member.price_per_hour, "fleet": member.fleet, "created_at": None}


def _current(members: Sequence[MemberRecord]) -> list[MemberRecord]:
    """Members that are, or may be, VMs (not failed attempts or destroyed ones)."""
    shown = {MemberState.INTENT, MemberState.CREATING, MemberState.RUNNING, MemberState.UNKNOWN,
             MemberState.DESTROYING, MemberState.RELEASED}
    return [m for m in members if m.state in shown]


def plan(out: Output, spec: Any, placements: Sequence[Offer], offers: Any) -> None:
    total = round(sum(o.price_per_hour for o in placements), 4)
    for provider, why in offers.problems.items():
        out.warn(f"{provider}: no offers ({why})")
    unterminable = [o for o in placements if o.reservation_id in offers.unterminable_reservations]
    if unterminable:
        out.warn(f"{len(unterminable)} VM(s) would use a reservation whose VMs the cloud will not delete "
                 "through its API: `vm fleet destroy` can only release them")
    if len(placements) < spec.count:
        out.warn(f"only {len(placements)} of {spec.count} VMs can be placed with the current offers")
    if out.json:
        out.data({"name": spec.name, "count": spec.count, "strategy": spec.strategy,
                  "placements": [o.to_json() for o in placements], "price_per_hour": total})
        return
    rows = [(i, o.provider, o.region, o.shape, o.reservation_id or "-", o.price_per_hour)
            for i, o in enumerate(placements)]
    out.table(("SLOT", "PROVIDER", "REGION", "SHAPE", "RESERVATION", "$/H"), rows)
    out.pairs([("total $/h", total)])


def created(out: Output, report: Any, records: Sequence[MemberRecord]) -> None:
    members = [member_json(m, _instance_of(report, m)) for m in _current(records)]
    if out.json:
        out.data(fleet_json(report.fleet, members))
    else:
        _summary(out, report.fleet, members)
    for note in report.notes:
        out.warn(note)


def _instance_of(report: Any, member: MemberRecord) -> Instance | None:
    return next((i for i in report.running if i.id == member.instance_id), None)


def fleet_view(out: Output, view: Any) -> None:
    members = [member_json(v.member, v.instance) for v in view.members]
    if out.json:
        out.data(fleet_json(view.fleet, members))
        return
    _summary(out, view.fleet, members)


def _summary(out: Output, fleet: FleetRecord, members: list[dict[str, Any]]) -> None:
    running = sum(1 for m in members if m["state"] == "running")
    total = fleet_json(fleet, members)["price_per_hour"]
    out.pairs([("fleet", fleet.name), ("state", fleet.state.value),
               ("running", f"{running} of {fleet.requested_count} (minimum {fleet.min_count})"),
               ("gpu", f"{fleet.gpu}" + (f"x{fleet.gpu_count}" if fleet.gpu_count else "")),
               ("strategy", fleet.strategy), ("total $/h", total)])
    if members:
        out.table(INSTANCE_COLUMNS, [_row(m) for m in members])


def _row(m: dict[str, Any]) -> list[Any]:
    gpu = f"{m['gpu']}x{m['gpu_count']}" if m["gpu"] else "-"
    reserved = (m["reservation_id"] or "yes") if m["reserved"] else "-"
    return [m["provider"], m["id"], m["name"], m["state"], gpu, m["region"], reserved, m["price_per_hour"]]


def fleet_list(out: Output, fleets: Sequence[tuple[FleetRecord, Sequence[MemberRecord]]]) -> None:
    docs = [{**fleet_json(f, [member_json(m, None) for m in _current(ms)]), "created_by": f.created_by,
             "profile": f.profile} for f, ms in fleets]
    if out.json:
        out.data(docs)
        return
    out.table(("NAME", "STATE", "GPU", "RUNNING", "STRATEGY", "$/H", "CREATED", "CREATED-BY", "PROFILE"),
              [(d["name"], d["state"], d["gpu"], f"{_running(d)}/{d['requested_count']}", d["strategy"],
                d["price_per_hour"], d["created_at"][:19].replace("T", " "), d["created_by"] or "-",
                d["profile"] or "-") for d in docs])


def _running(doc: dict[str, Any]) -> int:
    return sum(1 for m in doc["members"] if m["state"] == "running")


def destroyed(out: Output, report: Any) -> None:
    doc = {"name": report.fleet, "destroyed": report.destroyed, "released": report.released,
           "failures": report.failures, "forgotten": report.forgotten}
    if out.json:
        out.data(doc)
    else:
        out.pairs([("fleet", report.fleet), ("destroyed", report.destroyed),
                   ("released (still running)", len(report.released)), ("failed", len(report.failures))])
    for line in report.released:
        out.warn(line)

