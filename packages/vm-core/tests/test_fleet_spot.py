"""Spot fleets (fleet/spot.py): each slot's kinds of offer, the placement of each kind over its own offers, what
a replacement should be, and the spot options refused before any call."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest
from vm_core.cli.spelling import words
from vm_core.errors import UsageError
from vm_core.fleet.placement import Placement
from vm_core.fleet.spec import FleetSpec, spec_of
from vm_core.fleet.spot import (
    ON_DEMAND,
    SPOT,
    check_spot,
    place_priced,
    replacement_pricing,
    slot_choices,
)
from vm_core.fleet.store import FleetRecord
from vm_core.model import Instance, InstanceState, Offer, ReservationRequest


def _offer(region: str, price: float, *, spot: bool = False, capacity: int | None = None) -> Offer:
    return Offer("nebius", region, "H100", 1, "gpu-h100-sxm/1gpu-16vcpu-200gb", price, capacity, spot=spot)


def _vm(spot: bool) -> Instance:
    return Instance("nebius", f"i-{spot}", "train-0", InstanceState.RUNNING, "H100", 1, "eu-north1", "x", spot=spot)


def _cheapest(offers: Sequence[Offer], count: int) -> list[Offer]:
    """A strategy that fills the cheapest offers first, within their stated capacity."""
    placed: list[Offer] = []
    for offer in sorted(offers, key=lambda o: o.price_per_hour):
        room = count - len(placed) if offer.capacity is None else min(offer.capacity, count - len(placed))
        placed += [offer] * max(room, 0)
    return placed[:count]


def _spec(**changes: object) -> FleetSpec:
    return replace(FleetSpec(name="train", gpu="H100", count=4, min_count=4), **changes)  # type: ignore[arg-type]


def test_the_first_on_demand_base_slots_are_on_demand_and_the_rest_spot() -> None:
    assert slot_choices(_spec(spot=True, on_demand_base=1), [5, 6, 7]) == {5: (ON_DEMAND,), 6: (SPOT,), 7: (SPOT,)}
    assert slot_choices(_spec(spot=True, spot_fallback=True), [0]) == {0: (SPOT, ON_DEMAND)}
    assert slot_choices(_spec(), [0, 1]) == {0: (ON_DEMAND,), 1: (ON_DEMAND,)}


def test_each_kind_goes_on_its_own_offers_and_a_fallback_on_demand_only_when_no_spot_is_left() -> None:
    offers = [_offer("eu-north1", 2.95), _offer("eu-north1", 1.25, spot=True, capacity=1)]
    choices = slot_choices(_spec(spot=True, on_demand_base=1, spot_fallback=True), [0, 1, 2])
    placed = place_priced([0, 1, 2], choices, offers, _cheapest)
    assert [(slot, o.spot, o.price_per_hour) for slot, o in placed] == [(0, False, 2.95), (1, True, 1.25),
                                                                          (2, False, 2.95)]
    without = slot_choices(_spec(spot=True, on_demand_base=1), [0, 1, 2])
    assert [slot for slot, _ in place_priced([0, 1, 2], without, offers, _cheapest)] == [0, 1]  # slot 2 waits


def test_a_replacement_is_on_demand_while_the_base_lacks_one_then_spot_first() -> None:
    record = FleetRecord("train", "H100", 1, 4, 4, "spread", spot=True, on_demand_base=1, spot_fallback=True)
    assert replacement_pricing(record, [_vm(spot=True)] * 3) == (ON_DEMAND,)
    assert replacement_pricing(record, [_vm(spot=False), _vm(spot=True)]) == (SPOT, ON_DEMAND)
    assert replacement_pricing(replace(record, spot_fallback=False), [_vm(spot=False)]) == (SPOT,)
    assert replacement_pricing(replace(record, spot=False), []) == (ON_DEMAND,)


def test_a_recorded_spot_fleet_keeps_its_spot_options_with_the_base_its_caller_says() -> None:
    record = FleetRecord("train", "H100", 1, 4, 4, "spread", spot=True, on_demand_base=2, spot_fallback=True,
                         maintain=True)
    spec = spec_of(record, 3, on_demand=1)
    assert (spec.spot, spec.on_demand_base, spec.spot_fallback, spec.maintain) == (True, 1, True, True)
    assert spec_of(replace(record, spot=False), 3, on_demand=1).on_demand_base == 0


@pytest.mark.parametrize(("changes", "says"), [
    ({"on_demand_base": 1}, "--on-demand-base is for spot fleets: add --spot"),
    ({"spot_fallback": True}, "--spot-fallback is for spot fleets: add --spot"),
    ({"spot": True, "on_demand_base": 5}, "--on-demand-base must be from 0 to --count (4), not 5"),
    ({"spot": True, "on_demand_base": -1}, "--on-demand-base must be from 0 to --count (4), not -1"),
    ({"spot": True, "reservation": ReservationRequest(strict=True)}, "cannot be combined with --strict"),
    ({"spot": True, "placement": Placement.CLUSTER}, "cannot be combined with --placement cluster"),
])
def test_spot_options_that_cannot_be_are_usage_errors(changes: dict[str, object], says: str) -> None:
    with pytest.raises(UsageError) as raised:
        check_spot(_spec(**changes))
    assert raised.value.exit_code == 2
    assert says in words(raised.value.message)  # as the CLI spells its settings: options


def test_a_spot_fleet_with_a_base_of_all_its_vms_is_valid() -> None:
    check_spot(_spec(spot=True, on_demand_base=4))
