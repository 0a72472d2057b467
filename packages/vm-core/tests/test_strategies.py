"""Spread strategies are pure functions: offers in, ordered placements out."""

from __future__ import annotations

from vm_core.fleet.strategies import Blocked, FleetRequest, cheapest, eligible, packed, reserved_first, spread
from vm_core.model import Offer, ReservationMode, ReservationRequest


def offer(provider: str, price: float, capacity: int | None = 4, *, region: str = "r1", gpus: int = 1,
          reservation: str = "", available: bool = True, gpu: str = "H100") -> Offer:
    return Offer(provider=provider, region=region, gpu=gpu, gpu_count=gpus, shape=f"{provider}-{gpus}x",
                 price_per_hour=price, capacity=capacity, available=available, reservation_id=reservation)


CRUSOE = offer("crusoe", 3.90 * 8, 2, gpus=8)
CRUSOE_RES = offer("crusoe", 2.65 * 8, 4, gpus=8, reservation="res-c")
LAMBDA = offer("lambda", 3.29, None)
NEBIUS = offer("nebius", 2.95, None)
NEBIUS_FAR = offer("nebius", 2.95, None, region="r2")
ALL = [CRUSOE, CRUSOE_RES, LAMBDA, NEBIUS]


def request(count: int, **kwargs) -> FleetRequest:
    return FleetRequest(gpu="H100", count=count, **kwargs)


def providers(placed: list[Offer]) -> list[str]:
    return [o.provider for o in placed]


def test_spread_balances_across_providers() -> None:
    placed = spread(ALL, request(6, gpu_count=None), Blocked())
    assert sorted(providers(placed)) == ["crusoe", "crusoe", "lambda", "lambda", "nebius", "nebius"]


def test_spread_uses_the_cheapest_offer_within_a_provider_first() -> None:
    placed = spread([CRUSOE, CRUSOE_RES], request(2, gpu_count=8), Blocked())
    assert placed == [CRUSOE_RES, CRUSOE_RES]


def test_spread_moves_on_when_a_provider_is_full() -> None:
    small = offer("crusoe", 10.0, 1)
    placed = spread([small, NEBIUS], request(4), Blocked())
    assert providers(placed).count("crusoe") == 1 and providers(placed).count("nebius") == 3


def test_cheapest_orders_by_price_per_gpu_and_respects_capacity() -> None:
    placed = cheapest(ALL, request(8, gpu_count=None), Blocked())
    # per GPU-hour: crusoe reservation 2.65, nebius 2.95, lambda 3.29, crusoe on-demand 3.90
    assert placed[:4] == [CRUSOE_RES] * 4
    assert placed[4:] == [NEBIUS] * 4


def test_reserved_first_puts_every_reservation_before_on_demand() -> None:
    dear_reservation = offer("lambda", 5.0, 1, reservation="res-l")
    placed = reserved_first([NEBIUS, dear_reservation, CRUSOE_RES], request(7, gpu_count=None), Blocked())
    assert placed[:5] == [CRUSOE_RES] * 4 + [dear_reservation] and placed[5:] == [NEBIUS] * 2


def test_packed_prefers_one_provider_that_can_host_everything() -> None:
    # crusoe can host 6 VMs (2 on-demand + 4 reserved) and is cheapest per GPU: 5 VMs all go there
    assert set(providers(packed(ALL, request(5, gpu_count=None), Blocked()))) == {"crusoe"}
    # 8 VMs: only the providers without a stated limit can host them all; nebius is the cheaper one
    assert set(providers(packed(ALL, request(8, gpu_count=None), Blocked()))) == {"nebius"}


def test_blocked_scopes_are_skipped() -> None:
    blocked = Blocked().with_provider("nebius").with_region("lambda", "r1")
    assert set(providers(spread(ALL, request(3), blocked))) == {"crusoe"}
    only_far = spread([NEBIUS, NEBIUS_FAR], request(2), Blocked().with_region("nebius", "r1"))
    assert only_far == [NEBIUS_FAR, NEBIUS_FAR]
    assert spread([CRUSOE], request(1), Blocked().with_offer(CRUSOE)) == []


def test_without_a_gpu_count_each_provider_uses_its_smallest_shape() -> None:
    big_nebius = offer("nebius", 23.6, None, gpus=8)
    kept = eligible([NEBIUS, big_nebius, CRUSOE], request(1), Blocked())
    assert kept == [NEBIUS, CRUSOE]
    assert eligible([NEBIUS, big_nebius], request(1, gpu_count=8), Blocked()) == [big_nebius]


def test_reservation_modes() -> None:
    none = request(1, reservation=ReservationRequest(ReservationMode.NONE))
    assert CRUSOE_RES not in eligible(ALL, none, Blocked())
    by_id = request(1, gpu_count=8, reservation=ReservationRequest(ReservationMode.ID, "res-c"))
    assert eligible(ALL, by_id, Blocked()) == [CRUSOE, CRUSOE_RES]
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
        placed = strategy(ALL, request(3, gpu_count=None), Blocked())
        assert len(placed) == 3
        assert placed.count(CRUSOE) <= 2 and placed.count(CRUSOE_RES) <= 4
