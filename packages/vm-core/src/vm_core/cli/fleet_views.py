"""Tables and JSON documents of `vm fleet`. Fleet JSON keys: name, id, state, gpu, gpu_count, requested_count,
min_count, strategy, profile, created_by, created_at, message, members (instance objects exactly as in
`vm list`), price_per_hour (the total of the running members), price_complete (False when a running member's
price is unknown: the total is then a lower bound, shown as `>= TOTAL` in tables), max_price (the --max-price cap,
or null) and expires_at (ISO-8601 UTC time after which `vm fleet reap` destroys it, or null). Commands that act
on VMs add `actions`: one object per VM. Plans (`--dry-run`) price every slot from the offer it uses, which is the same
source `vm fleet status` reads (the adapters price offers and instances alike)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from ..fleet.actions import Action
from ..fleet.budget import plan_total, price_total
from ..fleet.store import FleetRecord, MemberRecord, MemberState
from ..model import Instance, InstanceState, Offer
from .output import Output
from .views import INSTANCE_COLUMNS, capacity_cell

RUNNING = InstanceState.RUNNING.value  # a member's "state" in its JSON (the instance schema) when it runs

# A member without a fresh cloud view is shown with the state its record implies.
_RECORDED_STATE = {
    MemberState.INTENT: InstanceState.CREATING, MemberState.CREATING: InstanceState.CREATING,
    MemberState.RUNNING: InstanceState.RUNNING, MemberState.FAILED: InstanceState.ERROR,
    MemberState.UNKNOWN: InstanceState.UNKNOWN, MemberState.DESTROYING: InstanceState.TERMINATING,
    MemberState.DESTROYED: InstanceState.TERMINATED, MemberState.RELEASED: InstanceState.RUNNING,
    MemberState.MISSING: InstanceState.MISSING,
}


def fleet_json(fleet: FleetRecord, members: Sequence[dict[str, Any]]) -> dict[str, Any]:
    total, complete = price_total(m["price_per_hour"] for m in members if m["state"] == RUNNING)
    return {
        "name": fleet.name, "id": fleet.fleet_id or None, "state": fleet.state.value, "gpu": fleet.gpu,
        "gpu_count": fleet.gpu_count, "requested_count": fleet.requested_count, "min_count": fleet.min_count,
        "strategy": fleet.strategy, "profile": fleet.profile or None, "created_by": fleet.created_by or None,
        "created_at": datetime.fromtimestamp(fleet.created_at, UTC).isoformat(), "message": fleet.message,
        "members": list(members), "price_per_hour": total, "price_complete": complete,
        "max_price": fleet.max_price, "expires_at": _iso(fleet.expires_at),
    }


def _iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat()


def expiry_text(epoch: float | None) -> str:
    """When a fleet expires, for tables: `2026-11-30 20:15:00 UTC`, or `never`."""
    return "never" if epoch is None else datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def total_text(total: float, complete: bool) -> str:
    """A total for tables: `12.40`, or `>= 12.40` when some price is unknown."""
    return f"{total:.2f}" if complete else f">= {total:.2f}"


def member_json(fleet: FleetRecord, member: MemberRecord, instance: Instance | None) -> dict[str, Any]:
    """The member as `vm list` shows an instance (one schema): the cloud's view, else what the record says."""
    return replace(instance or recorded_instance(fleet, member), fleet=fleet.name).to_json()


def recorded_instance(fleet: FleetRecord, member: MemberRecord) -> Instance:
    """The member as an Instance, from its record alone. A member whose VM is gone outside vm is `missing`."""
    return Instance(provider=member.provider, id=member.instance_id, name=member.name,
                    state=_RECORDED_STATE[member.state],
                    gpu=fleet.gpu, gpu_count=fleet.gpu_count or 0, region=member.region, shape=member.shape,
                    reserved=bool(member.reservation_id), reservation_id=member.reservation_id,
                    price_per_hour=None if _RECORDED_STATE[member.state].not_billed else member.price_per_hour)


def _current(members: Sequence[MemberRecord]) -> list[MemberRecord]:
    """The members a fleet's views list (fleet.inspect.VISIBLE)."""
    from ..fleet.inspect import VISIBLE

    return [m for m in members if m.state in VISIBLE]


def plan(out: Output, spec: Any, placements: Sequence[Offer], offers: Any, slots: Sequence[int] | None = None,
         extra: dict[str, Any] | None = None, *, warn_short: bool = True) -> None:
    """The placement of a dry run: one row per slot with its price, and whether the cloud says it has room
    (CAPACITY `unknown` where the cloud publishes no capacity: the slot may fail and be placed elsewhere).
    `slots` numbers the rows (default 0, 1, ...); `extra` goes into the JSON document. A plan that places fewer
    VMs than asked is warned about, unless `warn_short` is False (the caller then fails saying so)."""
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
    total, complete = plan_total(placements)
    if out.json:
        out.data({**_placements_json(spec, placements), "max_price": spec.max_price, "ttl_seconds": spec.ttl,
                  **(extra or {})})
        return
    numbers = list(slots) if slots is not None else list(range(len(placements)))
    rows = [(i, o.provider, o.region, o.shape, o.reservation_id or "-", _capacity(o), o.price_per_hour)
            for i, o in zip(numbers, placements, strict=False)]
    out.table(("SLOT", "PROVIDER", "REGION", "SHAPE", "RESERVATION", "CAPACITY", "$/H"), rows)
    out.pairs([("total $/h", total_text(total, complete)),
               ("max $/h", "none" if spec.max_price is None else f"{spec.max_price:.2f}")])


def cluster_plan(out: Output, spec: Any, cluster: Any) -> None:
    """The dry run of a cluster fleet: every slot in the chosen place (as `plan` shows slots), then every place
    considered, in the order they would be tried (ORDER `-`: cannot hold the fleet). HOLDS is `yes` (the
    cloud says there is room), `maybe` (the cloud publishes no capacity) or `no`. JSON: the plan's document
    plus `placement` and `places`."""
    order = {g.key: i for i, g in enumerate(cluster.candidates, 1)}
    places = [{**g.offer.to_json(), "order": order.get(g.key), "holds": _holds(g, spec.count, cluster.min_count),
               "vms": g.take(spec.count), "fleet_price_per_hour": round(g.offer.price_per_hour
                                                                         * g.take(spec.count), 4)}
              for g in sorted(cluster.considered, key=lambda g: order.get(g.key, len(order) + 1))]
    if out.json or cluster.chosen is None:  # else `plan` gives these warnings
        _offer_warnings(out, cluster.offers)
    if out.json:
        out.data({**_placements_json(spec, cluster.placements, placement="cluster"), "places": places})
        return
    if cluster.chosen is not None:
        plan(out, spec, cluster.placements, cluster.offers)
        if cluster.chosen.capacity is None:
            out.warn(f"{cluster.chosen.where()} does not publish capacity: it may not hold the fleet, which then "
                     "moves whole to the next place")
    out.table(("ORDER", "PROVIDER", "REGION", "SHAPE", "RESERVATION", "CAPACITY", "VMS", "FLEET-$/H", "HOLDS"),
              [(p["order"] or "-", p["provider"], p["region"], p["shape"], p["reservation_id"] or "-",
                "unknown" if p["capacity"] is None else p["capacity"], p["vms"], p["fleet_price_per_hour"],
                p["holds"]) for p in places])


def _offer_warnings(out: Output, offers: Any) -> None:
    """What the offers left out, and the providers that gave none, as warnings."""
    for note in offers.left_out.values():
        out.warn(note)
    for provider, why in offers.problems.items():
        out.warn(f"{provider}: no offers ({why})")


def _placements_json(spec: Any, placements: Sequence[Offer], **head: Any) -> dict[str, Any]:
    """The JSON keys every plan has: the fleet (and `head`), one object per placement, and the total $/h."""
    total, complete = plan_total(placements)
    return {"name": spec.name, "count": spec.count, "strategy": spec.strategy, **head,
            "placements": [{**o.to_json(), "capacity_known": o.capacity is not None} for o in placements],
            "price_per_hour": total, "price_complete": complete}


def _holds(group: Any, count: int, min_count: int) -> str:
    if group.capacity is None:
        return "maybe"
    if group.capacity >= count:
        return "yes"
    return f"{group.capacity}-of-{count}" if group.capacity >= min_count else "no"


def _capacity(offer: Offer) -> str:
    """What the cloud said about room for the slot's offer: a number of VMs, or `unknown`."""
    return "unknown" if offer.capacity is None else str(offer.capacity)


def created(out: Output, report: Any, records: Sequence[MemberRecord]) -> None:
    members = [member_json(report.fleet, m, _instance_of(report, m)) for m in _current(records)]
    if out.json:
        out.data(fleet_json(report.fleet, members))
    else:
        _summary(out, report.fleet, members)


def _instance_of(report: Any, member: MemberRecord) -> Instance | None:
    return next((i for i in report.running if i.id == member.instance_id), None)


def fleet_view(out: Output, view: Any, actions: Sequence[Action] | None = None, dry_run: bool = False) -> None:
    members = [member_json(view.fleet, v.member, v.instance) for v in view.members]
    if out.json:
        doc = fleet_json(view.fleet, members)
        if actions is not None:
            doc |= {"actions": [a.to_json() for a in actions], "dry_run": dry_run}
        out.data(doc)
        return
    _summary(out, view.fleet, members)


def reconciled(out: Output, report: Any) -> None:
    """The fleet after reconcile (before, for a dry run), with one action per VM (printed as progress)."""
    fleet_view(out, report.view, report.actions, report.dry_run)


def _summary(out: Output, fleet: FleetRecord, members: list[dict[str, Any]]) -> None:
    running = sum(1 for m in members if m["state"] == RUNNING)
    doc = fleet_json(fleet, members)
    out.pairs([("fleet", fleet.name), ("id", fleet.fleet_id or "- (recorded before fleet ids)"),
               ("state", fleet.state.value),
               ("running", f"{running} of {fleet.requested_count} (minimum {fleet.min_count})"),
               ("gpu", f"{fleet.gpu}" + (f"x{fleet.gpu_count}" if fleet.gpu_count else "")),
               ("strategy", fleet.strategy), ("total $/h", total_text(doc["price_per_hour"], doc["price_complete"])),
               ("max $/h", "none" if fleet.max_price is None else f"{fleet.max_price:.2f}"),
               ("expires", expiry_text(fleet.expires_at))])
    if members:
        out.table(INSTANCE_COLUMNS, [_row(m) for m in members])


def _row(m: dict[str, Any]) -> list[Any]:
    gpu = f"{m['gpu']}x{m['gpu_count']}" if m["gpu"] else "-"
    reserved = capacity_cell(m["reserved"], m["reservation_id"], m["spot"])
    return [m["provider"], m["id"], m["name"], m["state"], gpu, m["region"], reserved, m["price_per_hour"]]


def fleet_list(out: Output, fleets: Sequence[tuple[FleetRecord, Sequence[MemberRecord]]]) -> None:
    from ..fleet.inspect import recorded_running, with_derived_state

    docs = []
    for fleet, members in fleets:
        fleet = with_derived_state(fleet, recorded_running(members))
        docs.append(fleet_json(fleet, [member_json(fleet, m, None) for m in _current(members)]))
    if out.json:
        out.data(docs)
        return
    out.table(("NAME", "STATE", "GPU", "RUNNING", "STRATEGY", "$/H", "CREATED", "EXPIRES", "CREATED-BY", "PROFILE"),
              [(d["name"], d["state"], d["gpu"], f"{_running(d)}/{d['requested_count']}", d["strategy"],
                total_text(d["price_per_hour"], d["price_complete"]), d["created_at"][:19].replace("T", " "),
                (d["expires_at"] or "never")[:19].replace("T", " "), d["created_by"] or "-", d["profile"] or "-")
               for d in docs])


def _running(doc: dict[str, Any]) -> int:
    return sum(1 for m in doc["members"] if m["state"] == RUNNING)


def destroyed(out: Output, report: Any) -> None:
    """Each VM's line was printed as it happened; this is the summary (JSON: the same actions)."""
    doc = {"name": report.fleet, "destroyed": report.destroyed, "released": len(report.released),
           "failed": len(report.failures), "forgotten": report.forgotten,
           "actions": [a.to_json() for a in report.actions]}
    if out.json:
        out.data(doc)
        return
    out.pairs([("fleet", report.fleet), ("destroyed", report.destroyed),
               ("released (still running)", len(report.released)), ("failed", len(report.failures)),
               ("record", "forgotten" if report.forgotten else "kept (something may still run)")])


def forgotten(out: Output, fleet: FleetRecord, left: Sequence[MemberRecord]) -> None:
    """What `vm fleet forget` left running (JSON: the members, as instances from their records)."""
    members = [member_json(fleet, m, None) for m in left]
    if out.json:
        out.data({"name": fleet.name, "forgotten": True, "left_running": members})
        return
    out.pairs([("fleet", fleet.name), ("record", "forgotten"), ("VMs left as they are", len(members))])
    if members:
        out.table(INSTANCE_COLUMNS, [_row(m) for m in members])


def reaped(out: Output, outcomes: Sequence[Any], dry_run: bool) -> None:
    """What `vm fleet reap` did to each expired fleet: destroyed, left (something may still run), skipped (with
    why), gone (removed meanwhile) or, with --dry-run, would-destroy. JSON: {"dry_run", "fleets": [{"name",
    "id", "expires_at", "result", "reason", "vms", "actions"}]}."""
    docs = [{"name": o.fleet.name, "id": o.fleet.fleet_id or None, "expires_at": _iso(o.fleet.expires_at),
             "result": o.result, "reason": o.reason or None, "vms": o.vms,
             "actions": [a.to_json() for a in o.actions]} for o in outcomes]
    if out.json:
        out.data({"dry_run": dry_run, "fleets": docs})
        return
    for doc in docs:
        if doc["reason"]:
            out.warn(f"fleet {doc['name']}: {doc['result']}: {doc['reason']}")
    if docs:
        out.table(("FLEET", "EXPIRED", "RESULT", "VMS"),
                  [(d["name"], (d["expires_at"] or "-")[:19].replace("T", " "), d["result"],
                    d["vms"]) for d in docs])
