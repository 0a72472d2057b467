"""Spread strategies are pure functions: offers in, ordered placements out."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st
from vm_core.fleet.strategies import (
    Blocked,
    FleetRequest,
    _fill,
    cheapest,
    eligible,
    fleet_price,
    packed,
    reserved_first,
    spread,
)
from vm_core.model import Offer, ReservationMode, ReservationRequest


def offer(provider: str, price: float, capacity: int | None = 4, *, region: str = "r1", gpus: int = 1,
          reservation: str = "", available: bool = True, gpu: str = "H100") -> Offer:
    return Offer(provider=provider, region=region, gpu=gpu, gpu_count=gpus, shape=f"{provider}-{gpus}x",
                 price_per_hour=price, capacity=capacity, available=available, reservation_id=reservation)


CRUSOE = offer("crusoe", 3.90 * 8, 2, gpus=8)
CRUSOE_RES = offer("crusoe", 2.65 * 8, 4, gpus=8, reservation="res-c")
LAMBDA8 = offer("lambda", 23.92, None, gpus=8)
NEBIUS8 = offer("nebius", 23.60, None, gpus=8)
LAMBDA = offer("lambda", 3.29, None)
NEBIUS = offer("nebius", 2.95, None)
NEBIUS_FAR = offer("nebius", 2.95, None, region="r2")
ALL = [CRUSOE, CRUSOE_RES, LAMBDA8, NEBIUS8, LAMBDA, NEBIUS]


def request(count: int, **kwargs) -> FleetRequest:
    return FleetRequest(gpu="H100", count=count, **kwargs)


def providers(placed: list[Offer]) -> list[str]:
    return [o.provider for o in placed]


def test_spread_balances_across_providers() -> None:
    placed = spread(ALL, request(6, gpu_count=8), Blocked())
    assert sorted(providers(placed)) == ["crusoe", "crusoe", "lambda", "lambda", "nebius", "nebius"]


def test_spread_uses_the_cheapest_offer_within_a_provider_first() -> None:
    placed = spread([CRUSOE, CRUSOE_RES], request(2, gpu_count=8), Blocked())
    assert placed == [CRUSOE_RES, CRUSOE_RES]


def test_spread_moves_on_when_a_provider_is_full() -> None:
    small = offer("crusoe", 10.0, 1)
    placed = spread([small, NEBIUS], request(4), Blocked())
    assert providers(placed).count("crusoe") == 1 and providers(placed).count("nebius") == 3


def test_cheapest_orders_by_price_per_vm_and_respects_capacity() -> None:
    placed = cheapest(ALL, request(8, gpu_count=8), Blocked())
    # per VM: crusoe reservation 21.20 (4 left), nebius 23.60, lambda 23.92, crusoe on-demand 31.20
    assert placed[:4] == [CRUSOE_RES] * 4
    assert placed[4:] == [NEBIUS8] * 4
    assert fleet_price(placed) == 4 * 21.20 + 4 * 23.60


def test_cheapest_plans_the_cheapest_fleet_of_one_size() -> None:
    """Issue: `--strategy cheapest --count 5` planned 8-GPU VMs at 110.00/h where five 1-GPU VMs cost 14.75:
    a fleet has one size, and among offers of that size the cheapest fleet is chosen."""
    placed = cheapest(ALL, request(5), Blocked())
    assert set(placed) == {NEBIUS} and fleet_price(placed) == 14.75


def test_a_fleet_uses_one_size_only() -> None:
    assert eligible(ALL, request(1), Blocked()) == [LAMBDA, NEBIUS]
    assert eligible(ALL, request(1, gpu_count=8), Blocked()) == [CRUSOE, CRUSOE_RES, LAMBDA8, NEBIUS8]
    assert eligible(ALL, request(1, gpu_count=2), Blocked()) == []
    for strategy in (spread, cheapest, reserved_first, packed):
        assert {o.gpu_count for o in strategy(ALL, request(12, gpu_count=8), Blocked())} == {8}


def test_reserved_first_puts_every_reservation_before_on_demand() -> None:
    dear_reservation = offer("lambda", 5.0, 1, reservation="res-l")
    placed = reserved_first([NEBIUS, dear_reservation, offer("crusoe", 2.0, 4, reservation="res-c")],
                            request(7), Blocked())
    assert providers(placed) == ["crusoe"] * 4 + ["lambda"] + ["nebius"] * 2


def test_packed_prefers_one_provider_that_can_host_everything() -> None:
    # crusoe can host 6 VMs (2 on-demand + 4 reserved): 5 VMs all go there
    assert set(providers(packed(ALL, request(5, gpu_count=8), Blocked()))) == {"crusoe"}
    # 8 VMs: only the providers without a stated limit can host them all; nebius is the cheaper one
    assert set(providers(packed(ALL, request(8, gpu_count=8), Blocked()))) == {"nebius"}


def test_blocked_scopes_are_skipped() -> None:
    blocked = Blocked().with_provider("nebius").with_region("lambda", "r1")
    assert set(providers(spread(ALL, request(3, gpu_count=8), blocked))) == {"crusoe"}
    only_far = spread([NEBIUS, NEBIUS_FAR], request(2), Blocked().with_region("nebius", "r1"))
    assert only_far == [NEBIUS_FAR, NEBIUS_FAR]
    assert spread([CRUSOE], request(1, gpu_count=8), Blocked().with_offer(CRUSOE)) == []


def test_reservation_modes() -> None:
    none = request(1, reservation=ReservationRequest(ReservationMode.NONE))
    assert CRUSOE_RES not in eligible(ALL, none, Blocked())
    by_id = request(1, gpu_count=8, reservation=ReservationRequest(ReservationMode.ID, "res-c"))
    assert eligible(ALL, by_id, Blocked()) == [CRUSOE, CRUSOE_RES, LAMBDA8, NEBIUS8]
    strict = request(1, gpu_count=8, reservation=ReservationRequest(ReservationMode.ID, "res-c", strict=True))
    assert eligible(ALL, strict, Blocked()) == [CRUSOE_RES]


def test_unterminable_reservations_only_when_asked() -> None:
    lambda_res = offer("lambda", 2.49, 8, reservation="res-l")
    base = {"unterminable_reservations": frozenset({"res-l"})}
    assert lambda_res not in eligible([lambda_res], request(1, **base), Blocked())
    assert eligible([lambda_res], request(1, allow_unterminable=True, **base), Blocked()) == [lambda_res]
    named = request(1, reservation=ReservationRequest(ReservationMode.ID, "res-l"), **base)
    assert eligible([lambda_res], named, Blocked()) == [lambda_res]


def test_unavailable_and_wrong_gpu_offers_are_never_used() -> None:
    gone = offer("crusoe", 1.0, 0, available=False)
    other_gpu = offer("nebius", 1.0, None, gpu="L40S")
    assert spread([gone, other_gpu], request(2), Blocked()) == []


def test_strategies_never_exceed_the_count_or_capacity() -> None:
    for strategy in (spread, cheapest, reserved_first, packed):
        placed = strategy(ALL, request(3, gpu_count=8), Blocked())
        assert len(placed) == 3
        assert placed.count(CRUSOE) <= 2 and placed.count(CRUSOE_RES) <= 4


OFFERS = st.lists(st.builds(
    lambda i, price, capacity, reserved: offer(f"p{i % 3}", price, capacity, region=f"r{i}",
                                               reservation=f"res-{i}" if reserved else ""),
    st.integers(0, 50), st.integers(50, 5000).map(lambda cents: cents / 100),
    st.one_of(st.none(), st.integers(0, 6)), st.booleans()), max_size=8, unique_by=lambda o: o.region)


@given(OFFERS, st.integers(1, 20), st.randoms(use_true_random=False))
def test_no_placement_of_as_many_vms_costs_less_than_cheapest(offers: list[Offer], count: int,
                                                              rnd: random.Random) -> None:
    best = cheapest(offers, request(count), Blocked())
    usable = eligible(offers, request(count), Blocked())
    shuffled = rnd.sample(usable, len(usable))
    rivals = [strategy(offers, request(count), Blocked()) for strategy in (spread, packed, reserved_first)]
    for rival in [*rivals, _fill(shuffled, count)]:
        assert len(rival) <= len(best)
        if len(rival) == len(best):
            assert fleet_price(best) <= fleet_price(rival) + 1e-9
