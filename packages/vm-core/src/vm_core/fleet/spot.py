"""Spot fleets (`vm fleet create --spot`): which members are spot, the offers they go on, and what a replacement
should be.

A spot fleet has `on_demand_base` on-demand members and the rest spot where a cloud sells spot: a provider that is
`SupportsSpot` (Nebius today) lists spot offers at the cloud's spot price (Nebius's billing calculator, else the
catalog's, as `vm create --spot` and `vm offers` price them), and a spot member is created from such an offer
(`CreateSpec.spot`: a preemptible VM). With `spot_fallback` a member that no spot offer can hold goes on-demand;
without it, it stays unplaced, as any slot that no offer holds. Whether a VM *is* spot is the cloud's answer
(`Instance.spot`) and the offer it was created from; a member's record keeps its price, not its kind.

Each slot has its *choices*: the kinds of offer (spot True, on-demand False) to try, in order. `place_priced`
asks the strategy for each kind's slots over that kind's offers only, so the strategy's own rules (spread,
cheapest, ...) decide where inside a kind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from ..errors import UsageError, VmError
from ..hints import Hint, Setting, Words
from ..model import Instance, Offer
from ..provider import Provider, SupportsSpot
from .offers import OfferSet
from .placement import Placement
from .spec import FleetSpec
from .store import FleetRecord

SPOT, ON_DEMAND = True, False
Choices = tuple[bool, ...]  # the kinds of offer a slot may go on, in order (SPOT, ON_DEMAND)


def check_spot(spec: FleetSpec) -> None:
    """UsageError (exit 2, before any call) for spot options that cannot be: --on-demand-base or --spot-fallback
    without --spot, a base outside 0..count, --spot with --strict (only reserved capacity, which spot VMs never
    use) or with --placement cluster."""
    spot = Setting("spot")
    if not spec.spot:
        for name, asked in (("on_demand_base", bool(spec.on_demand_base)), ("spot_fallback", spec.spot_fallback)):
            if asked:
                raise UsageError(Words(Setting(name), " is for spot fleets: add ", spot))
        return
    if not 0 <= spec.on_demand_base <= spec.count:
        raise UsageError(Words(Setting("on_demand_base"), " must be from 0 to ", Setting("count"),
                               f" ({spec.count}), not {spec.on_demand_base}"))
    if spec.reservation.strict:
        raise UsageError(Words(spot, " cannot be combined with ", Setting("strict"),
                               ": spot VMs never use reserved capacity"))
    if spec.placement is Placement.CLUSTER:
        raise UsageError(Words(spot, " cannot be combined with ", Setting("placement", "cluster"),
                               ": a cluster's VMs are on-demand"))


def slot_choices(spec: FleetSpec, slots: Sequence[int]) -> dict[int, Choices]:
    """Each slot's choices: every slot on-demand unless the fleet is spot; else the first `on_demand_base` of
    `slots` (in the order given) on-demand and the rest spot, then on-demand when `spot_fallback` allows."""
    if not spec.spot:
        return {slot: (ON_DEMAND,) for slot in slots}
    spot: Choices = (SPOT, ON_DEMAND) if spec.spot_fallback else (SPOT,)
    return {slot: (ON_DEMAND,) if i < spec.on_demand_base else spot for i, slot in enumerate(slots)}


def replacement_pricing(record: FleetRecord, running: Iterable[Instance]) -> Choices:
    """What the next replacement of the fleet `record` should be, given its VMs that run now (as their clouds
    show them: `Instance.spot`): on-demand while fewer than its on-demand base are on-demand; otherwise spot
    first, then on-demand when the fleet allows the fallback (--spot-fallback). A fleet that is not spot is
    on-demand. The watchdog calls it for each replacement it places; pure."""
    if not record.spot:
        return (ON_DEMAND,)
    if on_demand_missing(record, running):
        return (ON_DEMAND,)
    return (SPOT, ON_DEMAND) if record.spot_fallback else (SPOT,)


def on_demand_missing(record: FleetRecord, running: Iterable[Instance]) -> int:
    """How many members of the fleet's on-demand base do not run now, given its VMs that run (as their clouds
    show them): the first new members of a repair are that many on-demand (`spec_of(..., on_demand=...)`). 0 for a
    fleet that is not spot. Pure."""
    if not record.spot:
        return 0
    return max(record.on_demand_base - sum(1 for vm in running if not vm.spot), 0)


def place_priced(slots: Sequence[int], choices: Mapping[int, Choices], offers: Sequence[Offer],
                 ask: Callable[[list[Offer], int], list[Offer]]) -> list[tuple[int, Offer]]:
    """Where each of `slots` goes: for each round of choices (first, then fallback), each kind's slots are given
    to `ask(offers of that kind, how many)` (the strategy), the offers taken by earlier answers off their stated
    capacity. Slots it places no offer for are left out; the answer is in `slots` order."""
    chosen: dict[int, Offer] = {}
    rounds = max((len(choices[s]) for s in slots), default=0)
    for turn in range(rounds):
        for kind in (ON_DEMAND, SPOT):
            group = [s for s in slots if s not in chosen and len(choices[s]) > turn and choices[s][turn] is kind]
            if not group:
                continue
            taken = Counter(_key(o) for o in chosen.values())
            pool = [_less(o, taken[_key(o)]) for o in offers if o.spot is kind]
            chosen.update(zip(group, ask(pool, len(group)), strict=False))
    return [(s, chosen[s]) for s in slots if s in chosen]


def with_spot_offers(offers: OfferSet, providers: Mapping[str, Provider], gpu: str, gpu_count: int) -> OfferSet:
    """`offers` and the spot offers of every provider in `providers` that sells spot (SupportsSpot), asked
    concurrently (blocks on the network). A provider whose spot offers cannot be read is said in `problems`
    (unless its on-demand offers already are) and contributes none."""
    selling: dict[str, SupportsSpot] = {name: p for name, p in providers.items() if isinstance(p, SupportsSpot)}
    if not selling:
        return offers
    with ThreadPoolExecutor(max_workers=len(selling)) as pool:
        futures = {name: pool.submit(p.spot_offers, gpu, gpu_count) for name, p in selling.items()}
    found, problems = list(offers.offers), dict(offers.problems)
    for name, future in futures.items():
        try:
            found += future.result()
        except VmError as exc:
            problems.setdefault(name, f"spot offers: {exc.message}")
    return replace(offers, offers=found, problems=problems)


def check_sold(spec: FleetSpec, providers: Mapping[str, Provider]) -> None:
    """UsageError (before anything is recorded) for a spot fleet whose spot members no provider can hold: none
    of `providers` sells spot and the fleet has no on-demand fallback."""
    if not spec.spot or spec.spot_fallback or spec.on_demand_base >= spec.count:
        return
    if not any(isinstance(p, SupportsSpot) for p in providers.values()):
        raise UsageError(f"none of the fleet's providers ({', '.join(sorted(providers)) or 'none'}) sells spot "
                         "VMs (Nebius does)", suggestion=Hint.say("add nebius to {}, or {} to place those VMs "
                                                                  "on-demand", Setting("providers"),
                                                                  Setting("spot_fallback")))


def _key(offer: Offer) -> tuple[str, str, str, str, bool]:
    return (offer.provider, offer.region, offer.shape, offer.reservation_id, offer.spot)


def _less(offer: Offer, taken: int) -> Offer:
    if not taken or offer.capacity is None:
        return offer
    left = max(offer.capacity - taken, 0)
    return replace(offer, capacity=left, available=offer.available and left > 0)
