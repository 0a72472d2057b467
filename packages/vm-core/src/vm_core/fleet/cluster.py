"""Cluster placement: pure functions that choose the one place a whole fleet goes.

A *place* (`Group`) is one offer: one provider, one region, one shape and one reservation (or none). With
`--placement cluster` every member of a fleet is created in the same place, for multi-node training over a fast
interconnect. `cluster_groups` lists the places that can hold the fleet, in the order to try them: first those
that may hold all `count` VMs (cheapest first), then, when `min_count` is below `count`, those that hold at least
`min_count` (most VMs first). A place whose cloud does not publish capacity (capacity None) *may* hold any
number: it is tried, and a plan says so. `largest_fits` and `no_place_text` say, when no place can hold the
fleet, the largest fleet that fits where.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..model import Offer
from .placement import Placement as Placement  # where it was defined before
from .store import MemberRecord, MemberState
from .strategies import Blocked, FleetRequest, Strategy, eligible, offer_key

SHOWN_PLACES = 5  # places named in a "no single place" message


@dataclass(frozen=True, slots=True)
class Group:
    """One place that could hold a cluster fleet: every member is created from `offer`."""

    offer: Offer

    @property
    def key(self) -> tuple[str, str, str, str]:
        return offer_key(self.offer)

    @property
    def capacity(self) -> int | None:
        """VMs the cloud says fit here (None: the cloud does not say)."""
        return self.offer.capacity

    def may_hold(self, count: int) -> bool:
        return self.capacity is None or self.capacity >= count

    def take(self, count: int) -> int:
        """How many of `count` VMs to create here: all of them unless the cloud says fewer fit."""
        return count if self.capacity is None else min(self.capacity, count)

    def where(self, *notes: str) -> str:
        """`crusoe us-east1-a`, then in parentheses the reservation when there is one and any `notes`."""
        o = self.offer
        details = [f"reservation {o.reservation_id}"] * o.reserved + list(notes)
        return f"{o.provider} {o.region}" + (f" ({'; '.join(details)})" if details else "")


def groups(offers: Sequence[Offer], request: FleetRequest, blocked: Blocked) -> list[Group]:
    """Every place the fleet may use (the rules of `eligible`), cheapest VM first; ties go to a reservation,
    then to a place with published capacity."""
    places = {offer_key(o): o for o in eligible(offers, request, blocked) if o.capacity is None or o.capacity > 0}
    return [Group(o) for o in sorted(places.values(), key=_price_order)]


def cluster_groups(offers: Sequence[Offer], request: FleetRequest, blocked: Blocked,
                   min_count: int | None = None) -> list[Group]:
    """The places to try for a fleet of `request.count` VMs, in order: those that may hold them all (cheapest
    first), then those that hold at least `min_count` of them (most VMs first, then cheapest). Empty when no
    single place can hold the fleet."""
    places = groups(offers, request, blocked)
    whole = [g for g in places if g.may_hold(request.count)]
    minimum = request.count if min_count is None else min_count
    part = [g for g in places if not g.may_hold(request.count) and g.may_hold(minimum)]
    return whole + sorted(part, key=lambda g: -(g.capacity or 0))


@dataclass(frozen=True, slots=True)
class Fit:
    """How many VMs of the fleet fit in one place: what the cloud says, or what was seen when it was tried."""

    group: Group
    vms: int | None  # None: the cloud does not say, and the place was not tried
    seen: bool = False  # `vms` came up there before the place failed

    def text(self) -> str:
        if self.seen:
            return f"{self.vms} in {self.group.where(f'tried: {self.vms} came up')}"
        if self.vms is None:
            return f"? in {self.group.where('capacity unknown')}"
        return f"{self.vms} in {self.group.where()}"


def largest_fits(offers: Sequence[Offer], request: FleetRequest,
                 seen: Mapping[tuple[str, str, str, str], int] | None = None) -> list[Fit]:
    """Every place the fleet may use with how many of its VMs fit there, largest first (then cheapest): a
    place that was tried counts the VMs that came up there (`seen`, by offer key), the others what their cloud
    says; unknown capacity comes last."""
    seen = seen or {}
    fits = [Fit(g, seen[g.key], True) if g.key in seen else Fit(g, g.capacity)
            for g in groups(offers, request, Blocked())]
    fits += [Fit(Group(o), seen[offer_key(o)], True) for o in _tried_and_empty(offers, request, seen)]
    return sorted(fits, key=lambda f: (f.vms is None, -(f.vms or 0), _price_order(f.group.offer)))


def no_place_text(request: FleetRequest, fits: Sequence[Fit], tried: bool = False) -> str:
    """`no single place holds 12 H100:8 VMs; the largest: 4 in crusoe us-east1-a (reservation ...), ...`."""
    verb = "held" if tried else "holds"
    head = f"no single place {verb} {request.count} {request.gpu}:{request.gpu_count} VMs"
    if not fits:
        return f"{head}; no place sells them"
    shown = "; ".join(f.text() for f in fits[:SHOWN_PLACES])
    more = f"; and {len(fits) - SHOWN_PLACES} more" if len(fits) > SHOWN_PLACES else ""
    return f"{head}; the largest: {shown}{more}"


def _tried_and_empty(offers: Sequence[Offer], request: FleetRequest,
                     seen: Mapping[tuple[str, str, str, str], int]) -> list[Offer]:
    """Tried places whose offers now say there is no room (they are not in `groups`)."""
    listed = {g.key for g in groups(offers, request, Blocked())}
    found: dict[tuple[str, str, str, str], Offer] = {}
    for offer in offers:
        key = offer_key(offer)
        if key in seen and key not in listed:
            found.setdefault(key, offer)
    return list(found.values())


def _price_order(offer: Offer) -> tuple[float, bool, bool, str, str, str]:
    return (offer.price_per_hour, not offer.reserved, offer.capacity is None, offer.provider, offer.region,
            offer.shape)


def place_of(members: Sequence[MemberRecord]) -> tuple[str, str, str, str] | None:
    """The one place a cluster fleet's running members share (provider, region, shape, reservation); None when
    none runs."""
    running = [m for m in members if m.state is MemberState.RUNNING]
    return (running[0].provider, running[0].region, running[0].shape, running[0].reservation_id) if running else None


def pinned_to(place: tuple[str, str, str, str], inner: Strategy) -> Strategy:
    """`inner` over the offers of one place only: a cluster fleet grows and is repaired where it already is."""

    def strategy(offers: Sequence[Offer], request: FleetRequest, blocked: Blocked) -> list[Offer]:
        return inner([o for o in offers if offer_key(o) == place], request, blocked)

    return strategy
