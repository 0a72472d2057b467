"""Where a VM's capacity comes from: a reservation, on-demand hosts, or nowhere.

The rules follow each cloud's documented reservation model, expressed provider-neutrally:
- Crusoe `lowest_cost` (default): the cheapest matching reservation with room, else on-demand.
  Crusoe `{"id": ...}`: that reservation only. Crusoe `on_demand`: never a reservation.
- Lambda: on-demand unless a `reservation_id` is given (then that reservation only; mock extension).
- Nebius AUTO: the listed blocks in order (or any matching block), then on-demand. FORBID: on-demand only.
  STRICT: the listed blocks (or any matching block), never on-demand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from .models import VM, Reservation, Shape

if TYPE_CHECKING:
    from .world import World


class ReservationChoice(msgspec.Struct, frozen=True, kw_only=True):
    candidates: list[str] | None = None  # None: any matching reservation, cheapest first
    use_reservations: bool = True
    on_demand_fallback: bool = True


ON_DEMAND_ONLY = ReservationChoice(use_reservations=False)


class Placement(msgspec.Struct, frozen=True):
    reservation_id: str  # "" = on-demand


class PlacementError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # "capacity" | "quota"
        self.message = message


def choose_placement(world: World, vm: VM, shape: Shape, *, preferred: str = "") -> Placement:
    """Pick capacity for `vm` or raise PlacementError. `preferred` is a reservation to try first (start)."""
    _check_quota(world, vm, shape)
    if vm.use_reservations:
        for res in _ordered_candidates(world, vm, shape, preferred):
            if _free_gpus(world, vm, res) >= shape.gpus:
                return Placement(reservation_id=res.id)
    on_demand_allowed = not vm.use_reservations or vm.on_demand_fallback
    if on_demand_allowed and world.on_demand_free(vm.provider, vm.region, vm.shape) > 0:
        return Placement(reservation_id="")
    where = "the requested reservations" if vm.use_reservations and not vm.on_demand_fallback else vm.region
    raise PlacementError("capacity", f"not enough capacity for {shape.key} in {where}")


def _ordered_candidates(world: World, vm: VM, shape: Shape, preferred: str) -> list[Reservation]:
    from .world import region_matches

    pool = world.config(vm.provider).reservations
    matching = [
        r for r in pool
        if r.family == shape.family and region_matches(vm.region, r.regions) and (not r.scopes or vm.scope in r.scopes)
    ]
    if vm.reservation_candidates is not None:
        by_id = {r.id: r for r in matching}
        ordered = [by_id[i] for i in vm.reservation_candidates if i in by_id]
    else:
        ordered = sorted(matching, key=lambda r: (r.price_cents_per_gpu_hour, r.id))
    if preferred:
        ordered.sort(key=lambda r: r.id != preferred)
    return ordered


def _free_gpus(world: World, vm: VM, res: Reservation) -> int:
    return res.quantity - world.reservation_used(vm.provider, res.id)


def _check_quota(world: World, vm: VM, shape: Shape) -> None:
    for quota in world.config(vm.provider).quotas:
        if quota.scope == vm.scope and quota.family == shape.family:
            used = world.quota_used(vm.provider, vm.scope, shape.family)
            if used + shape.gpus > quota.max_gpus:
                raise PlacementError("quota", f"GPU quota for {shape.family}: {used + shape.gpus} of {quota.max_gpus}")
