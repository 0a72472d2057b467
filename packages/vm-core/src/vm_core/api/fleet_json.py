"""The JSON documents of fleets (docs/python-api.md "Report schemas"): a fleet with its members, the placements
of a plan, and the places a cluster plan considered. Pure functions of the engine's records and views.

Fleet JSON keys: name, id, state, gpu, gpu_count, count, min_count, strategy, profile, created_by,
created_at, message, members (instance objects exactly as in `vm list`), price_per_hour (the total of the running
members), price_complete (False when a running member's price is unknown: the total is then a lower bound),
max_price (the cap, or null), expires_at (ISO-8601 UTC time after which `vm fleet reap` destroys it, or null),
budget (its spend budget in USD, or null) and on_budget (stop or destroy), maintain (the watchdog keeps its count),
spot, on_demand_base and spot_fallback (--spot), and wait_until (ISO-8601 UTC end of a wait for capacity, or null).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..fleet.budget import plan_total, price_total
from ..fleet.store import FleetRecord, MemberRecord
from ..model import Instance, InstanceState, Offer

if TYPE_CHECKING:
    from ..fleet.cluster import Group
    from ..fleet.cluster_place import ClusterPlan
    from ..fleet.create import FleetSpec
    from ..fleet.inspect import FleetView

RUNNING = InstanceState.RUNNING.value  # a member's "state" in its JSON (the instance schema) when it runs

# A member without a fresh cloud view is shown with the state its record implies.
def fleet_json(fleet: FleetRecord, members: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A fleet's document, its `members` already as instance documents."""
    total, complete = price_total(m["price_per_hour"] for m in members if m["state"] == RUNNING)
    return {
        "name": fleet.name, "id": fleet.fleet_id or None, "state": fleet.state.value, "gpu": fleet.gpu,
        "gpu_count": fleet.gpu_count, "count": fleet.count, "min_count": fleet.min_count,
        "strategy": fleet.strategy, "profile": fleet.profile or None, "created_by": fleet.created_by or None,
        "created_at": datetime.fromtimestamp(fleet.created_at, UTC).isoformat(), "message": fleet.message,
        "members": list(members), "price_per_hour": total, "price_complete": complete,
        "max_price": fleet.max_price, "expires_at": iso(fleet.expires_at), "budget": fleet.budget,
        "on_budget": fleet.on_budget.value, "maintain": fleet.maintain, "spot": fleet.spot,
        "on_demand_base": fleet.on_demand_base, "spot_fallback": fleet.spot_fallback,
        "wait_until": iso(fleet.wait_until),
    }


def iso(epoch: float | None) -> str | None:
    """An epoch as ISO-8601 UTC, None for None."""
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat()


def member_json(fleet: FleetRecord, member: MemberRecord, instance: Instance | None,
                seen: str | None = None) -> dict[str, Any]:
    """The member as `vm list` shows an instance (one schema): the cloud's view, else what the record says
    (and `seen`, see recorded_instance)."""
    return replace(instance or recorded_instance(fleet, member, seen), fleet=fleet.name).to_json()


def recorded_instance(fleet: FleetRecord, member: MemberRecord, seen: str | None = None) -> Instance:
    """The member as an Instance, from its record alone. A member whose VM is gone outside vm is `missing`.
    `seen`: the state the spend ledger last saw the VM in; a running member last seen stopped (`vm fleet stop`,
    or a stop seen by a status) is shown stopped, with no running price."""
    state = member.state.as_instance_state
    if state is InstanceState.RUNNING and seen == InstanceState.STOPPED.value:
        state = InstanceState.STOPPED
    return Instance(provider=member.provider, id=member.instance_id, name=member.name, state=state,
                    gpu=fleet.gpu, gpu_count=fleet.gpu_count or 0, region=member.region, shape=member.shape,
                    reserved=bool(member.reservation_id), reservation_id=member.reservation_id, spot=member.spot,
                    price_per_hour=None if state.not_billed else member.price_per_hour)


def current(members: Sequence[MemberRecord]) -> list[MemberRecord]:
    """The members a fleet's views list (fleet.inspect.VISIBLE)."""
    from ..fleet.inspect import VISIBLE

    return [m for m in members if m.state in VISIBLE]


def view_members(view: FleetView) -> list[dict[str, Any]]:
    """The members of a fleet view as instance documents: the cloud's view where there is one."""
    return [member_json(view.fleet, v.member, v.instance) for v in view.members]


def placements_json(spec: FleetSpec, placements: Sequence[Offer], **head: Any) -> dict[str, Any]:
    """The JSON keys every plan has: the fleet (and `head`), one object per placement, and the total $/h."""
    total, complete = plan_total(placements)
    return {"name": spec.name, "count": spec.count, "strategy": spec.strategy, **head,
            "placements": [{**o.to_json(), "capacity_known": o.capacity is not None} for o in placements],
            "price_per_hour": total, "price_complete": complete}


def cluster_places(spec: FleetSpec, cluster: ClusterPlan) -> list[dict[str, Any]]:
    """Every place a cluster plan considered, in the order they would be tried (`order` None: cannot hold the
    fleet); `holds` is yes, maybe (no published capacity), N-of-COUNT (at least the minimum) or no."""
    order = {g.key: i for i, g in enumerate(cluster.candidates, 1)}
    return [{**g.offer.to_json(), "order": order.get(g.key), "holds": _holds(g, spec.count, cluster.min_count),
             "vms": g.take(spec.count), "fleet_price_per_hour": round(g.offer.price_per_hour * g.take(spec.count), 4)}
            for g in sorted(cluster.considered, key=lambda g: order.get(g.key, len(order) + 1))]


def _holds(group: Group, count: int, min_count: int) -> str:
    if group.capacity is None:
        return "maybe"
    if group.capacity >= count:
        return "yes"
    return f"{group.capacity}-of-{count}" if group.capacity >= min_count else "no"


def expiry_text(epoch: float | None) -> str:
    """When a fleet expires, for tables and messages: `2026-11-30 20:15:00 UTC`, or `never`."""
    return "never" if epoch is None else datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
