"""Spread strategies: pure functions that order where a fleet's VMs go.

A strategy is `(offers, request, blocked) -> list[Offer]`: one offer per VM still to place, in the order to try,
at most `request.count` long, never using an offer more often than its capacity (unknown capacity is not a
limit). Every VM of a fleet has the same size (`request.gpu_count`), so prices are compared per VM and the
sum of a placement's prices is what the fleet costs per hour. Strategies are registered under the entry-point
group `vm_core.strategies`; a third-party strategy is any callable with this signature. `eligible` applies
the rules every strategy shares, and the engine applies them again to whatever a strategy answers
(eligibility.py): a strategy only orders.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from ..hints import Setting, Words
from ..model import Offer, ReservationMode, ReservationRequest


@dataclass(frozen=True, slots=True)
class FleetRequest:
    """What is still to place: `count` VMs of `gpu_count` x `gpu` each (one size for the whole fleet)."""

    gpu: str
    count: int
    gpu_count: int = 1
    region: str | None = None
    providers: tuple[str, ...] | None = None
    reservation: ReservationRequest = ReservationRequest()
    # Offers on reservations whose instances the cloud will not delete (Lambda) are used only when asked.
    allow_unterminable: bool = False
    unterminable_reservations: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Blocked:
    """Scopes ruled out by capacity or quota failures during this allocation."""

    providers: frozenset[str] = frozenset()
    regions: frozenset[tuple[str, str]] = frozenset()  # (provider, region)
    offers: frozenset[tuple[str, str, str, str]] = field(default=frozenset())  # (provider, region, shape, res)

    def blocks(self, offer: Offer) -> bool:
        return (
            offer.provider in self.providers
            or (offer.provider, offer.region) in self.regions
            or offer_key(offer) in self.offers
        )

    def with_provider(self, provider: str) -> Blocked:
        return Blocked(self.providers | {provider}, self.regions, self.offers)

    def with_region(self, provider: str, region: str) -> Blocked:
        return Blocked(self.providers, self.regions | {(provider, region)}, self.offers)

    def with_offer(self, offer: Offer) -> Blocked:
        return Blocked(self.providers, self.regions, self.offers | {offer_key(offer)})

    def merge(self, other: Blocked) -> Blocked:
        return Blocked(self.providers | other.providers, self.regions | other.regions, self.offers | other.offers)


Strategy = Callable[[Sequence[Offer], FleetRequest, Blocked], list[Offer]]


def offer_key(offer: Offer) -> tuple[str, str, str, str]:
    return (offer.provider, offer.region, offer.shape, offer.reservation_id)


def fleet_price(placed: Iterable[Offer]) -> float:
    """What a placement costs per hour: the sum of its VMs' prices."""
    return round(sum(o.price_per_hour for o in placed), 4)


def eligible(offers: Iterable[Offer], request: FleetRequest, blocked: Blocked) -> list[Offer]:
    """Offers a fleet may use: right GPU and size (exactly `request.gpu_count`), allowed provider/region,
    available, not blocked, and allowed by the reservation request."""
    offers = list(offers)
    request = effective(offers, request)
    return [o for o in offers if why_ineligible(o, request, blocked) is None]


def effective(offers: Sequence[Offer], request: FleetRequest) -> FleetRequest:
    """The request `eligible` applies to `offers`: an explicit reservation that no offer lists allows the
    unreserved offers instead (see `unlisted_reservation`)."""
    if unlisted_reservation(offers, request.reservation):
        return replace(request, reservation=ReservationRequest(ReservationMode.ID, "", strict=False))
    return request


def why_ineligible(offer: Offer, request: FleetRequest, blocked: Blocked) -> str | None:
    """Why the fleet may not use `offer` (None: it may). `request` as `effective` gives it."""
    if blocked.blocks(offer):
        return "ruled out by a failure"
    if not offer.available:
        return "no capacity"
    if offer.gpu != request.gpu or offer.gpu_count != request.gpu_count:
        return f"not {request.gpu}:{request.gpu_count}"
    if request.region is not None and offer.region != request.region:
        return f"outside region {request.region}"
    if request.providers is not None and offer.provider not in request.providers:
        return "provider not asked for"
    return _reservation_refusal(offer, request)


def unlisted_reservation(offers: Sequence[Offer], reservation: ReservationRequest) -> bool:
    """An explicit reservation that no offer lists (Nebius capacity blocks are not listed through its API): the
    create carries its id and the cloud enforces it, so the provider's unreserved offers are where it can go."""
    return reservation.mode is ReservationMode.ID and not any(
        o.reservation_id == reservation.reservation_id for o in offers)


ON_DEMAND_REFUSED = Words("on-demand (", Setting("strict"), ")")


def _reservation_refusal(offer: Offer, request: FleetRequest) -> str | None:
    """Why the fleet's reservation settings rule `offer` out (Words naming the setting), or None."""
    mode, wanted = request.reservation.mode, request.reservation.reservation_id
    if mode is ReservationMode.NONE:
        return Words("reserved (", Setting("reservation", "none"), ")") if offer.reserved else None
    if mode is ReservationMode.ID:
        if offer.reservation_id == wanted or (not offer.reserved and not request.reservation.strict):
            return None
        if not offer.reserved:
            return ON_DEMAND_REFUSED
        return f"reservation {offer.reservation_id}, not {wanted or 'the one asked for'}"
    if offer.reservation_id in request.unterminable_reservations and not request.allow_unterminable:
        return Words("a reservation whose VMs the cloud cannot delete (", Setting("allow_unterminable"), ")")
    if request.reservation.strict and not offer.reserved:
        return ON_DEMAND_REFUSED
    return None


def _fill(ordered: Sequence[Offer], count: int) -> list[Offer]:
    """Use offers in order, each up to its capacity, until `count` VMs are placed."""
    placed: list[Offer] = []
    for offer in ordered:
        room = count - len(placed) if offer.capacity is None else min(offer.capacity, count - len(placed))
        placed.extend([offer] * max(room, 0))
        if len(placed) >= count:
            break
    return placed


def _by_price(offers: Iterable[Offer]) -> list[Offer]:
    """Cheapest VM first; a reservation wins a tie."""
    return sorted(offers, key=lambda o: (o.price_per_hour, not o.reserved, o.provider, o.region, o.shape))


def cheapest(offers: Sequence[Offer], request: FleetRequest, blocked: Blocked) -> list[Offer]:
    """The cheapest fleet: each VM on the cheapest offer that still has room. The VMs are all the same size and
    each offer's capacity is independent, so no other placement of as many VMs costs less per hour in total
    (`fleet_price`). Ties go to reservations."""
    return _fill(_by_price(eligible(offers, request, blocked)), request.count)


def reserved_first(offers: Sequence[Offer], request: FleetRequest, blocked: Blocked) -> list[Offer]:
    """Every reserved offer (cheapest first) before any on-demand one (cheapest first)."""
    ordered = _by_price(eligible(offers, request, blocked))
    return _fill([o for o in ordered if o.reserved] + [o for o in ordered if not o.reserved], request.count)


def packed(offers: Sequence[Offer], request: FleetRequest, blocked: Blocked) -> list[Offer]:
    """As few providers as possible: the provider that can host the most VMs first (then the cheaper)."""
    by_provider: dict[str, list[Offer]] = {}
    for offer in _by_price(eligible(offers, request, blocked)):
        by_provider.setdefault(offer.provider, []).append(offer)

    def room(items: list[Offer]) -> float:
        return sum(float("inf") if o.capacity is None else o.capacity for o in items)

    order = sorted(by_provider.values(), key=lambda items: (-min(room(items), request.count),
                                                           items[0].price_per_hour))
    return _fill([o for items in order for o in items], request.count)


def spread(offers: Sequence[Offer], request: FleetRequest, blocked: Blocked) -> list[Offer]:
    """Balance VMs across providers: each next VM goes to the provider with the fewest so far that still has
    room (ties: the cheaper provider); within a provider, cheapest offers first."""
    queues = {p: _expand(items, request.count) for p, items in _group(eligible(offers, request, blocked))}
    placed: list[Offer] = []
    counts = dict.fromkeys(queues, 0)
    while len(placed) < request.count:
        ready = [p for p, queue in queues.items() if queue]
        if not ready:
            break
        provider = min(ready, key=lambda p: (counts[p], queues[p][0].price_per_hour, p))
        placed.append(queues[provider].pop(0))
        counts[provider] += 1
    return placed


def _group(offers: list[Offer]) -> list[tuple[str, list[Offer]]]:
    groups: dict[str, list[Offer]] = {}
    for offer in _by_price(offers):
        groups.setdefault(offer.provider, []).append(offer)
    return list(groups.items())


def _expand(offers: list[Offer], count: int) -> list[Offer]:
    """One entry per VM an offer can host (unknown capacity: up to `count`)."""
    return _fill(offers, count)
