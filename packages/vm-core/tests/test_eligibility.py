"""The engine's rules applied to a strategy's answer (fleet/eligibility.py): pure, one test per rule."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from vm_core.cli.spelling import words
from vm_core.errors import StrategyError
from vm_core.fleet.eligibility import Checked, Dropped, enforce, enforced
from vm_core.fleet.strategies import Blocked, FleetRequest, cheapest, offer_key, packed, reserved_first, spread
from vm_core.model import Offer, ReservationMode, ReservationRequest


def offer(provider: str, price: float, capacity: int | None = 4, *, region: str = "r1", gpus: int = 1,
          reservation: str = "", available: bool = True, gpu: str = "H100") -> Offer:
    return Offer(provider=provider, region=region, gpu=gpu, gpu_count=gpus, shape=f"{provider}-{gpus}x",
                 price_per_hour=price, capacity=capacity, available=available, reservation_id=reservation)


CRUSOE = offer("crusoe", 3.90, 2)
CRUSOE_RES = offer("crusoe", 2.65, 4, reservation="res-c")
LAMBDA = offer("lambda", 3.29, None)
LAMBDA_RES = offer("lambda", 2.49, 8, reservation="res-l")  # Lambda will not delete its VMs
NEBIUS = offer("nebius", 2.95, None)
NEBIUS_FAR = offer("nebius", 2.95, None, region="r2")
ALL = [CRUSOE, CRUSOE_RES, LAMBDA, LAMBDA_RES, NEBIUS, NEBIUS_FAR]


def request(count: int, **kwargs) -> FleetRequest:
    return FleetRequest(gpu="H100", count=count, unterminable_reservations=frozenset({"res-l"}), **kwargs)


NOTHING = Blocked()


def check(answer: object, req: FleetRequest, blocked: Blocked = NOTHING, offers: list[Offer] = ALL) -> Checked:
    return enforce(answer, offers, req, blocked, strategy="hostile")


def reasons(checked: Checked) -> list[str]:
    """The reasons as the CLI prints them (a reason naming a setting is data the CLI spells as its option)."""
    return [words(d.reason) for d in checked.dropped]


def test_an_eligible_answer_is_kept_as_it_is_in_its_order() -> None:
    checked = check([NEBIUS, CRUSOE, NEBIUS], request(3))
    assert checked == Checked([NEBIUS, CRUSOE, NEBIUS]) and checked.note("hostile") is None


def test_many_places_of_one_reason_are_named_up_to_two() -> None:
    elsewhere = [replace(NEBIUS, region=f"moon-{i}") for i in range(4)]
    note = check([*elsewhere, elsewhere[3]], request(1)).note("hostile")
    assert note == ("strategy 'hostile': left out 5 placement(s) the fleet may not use: not offered: 5 (nebius moon-3 "
                    "nebius-1x, nebius moon-0 nebius-1x and 2 more)")


def test_the_engines_own_offer_is_placed_not_the_strategys_copy() -> None:
    forged = replace(NEBIUS, price_per_hour=0.01, capacity=1000)
    checked = check([forged], request(1))
    assert checked.kept == [NEBIUS] and checked.kept[0].price_per_hour == 2.95 and checked.corrected == 1
    assert "1 placement(s) differed from the offer they name" in (checked.note("hostile") or "")


def test_offers_listed_twice_under_one_key_each_keep_their_own_capacity() -> None:
    twin = replace(CRUSOE, price_per_hour=4.10, capacity=1)
    checked = check([CRUSOE, CRUSOE, twin, twin], request(4), offers=[CRUSOE, twin])
    assert checked.kept == [CRUSOE, CRUSOE, twin] and reasons(checked) == ["room for 1 VM(s) only"]


def test_an_offer_that_was_not_passed_is_dropped() -> None:
    elsewhere = replace(NEBIUS, region="eu-north1")
    checked = check([elsewhere, NEBIUS], request(2))
    assert checked.kept == [NEBIUS] and checked.dropped == [Dropped(elsewhere, "not offered")]


def test_blocked_scopes_are_dropped() -> None:
    blocked = Blocked().with_provider("lambda").with_region("nebius", "r1").with_offer(CRUSOE)
    checked = check([LAMBDA, NEBIUS, CRUSOE, NEBIUS_FAR], request(4), blocked)
    assert checked.kept == [NEBIUS_FAR] and reasons(checked) == ["ruled out by a failure"] * 3


def test_an_unavailable_offer_is_dropped() -> None:
    gone = offer("crusoe", 1.0, 0, available=False)
    assert reasons(check([gone], request(1), offers=[gone])) == ["no capacity"]


def test_another_gpu_or_size_is_dropped() -> None:
    other_gpu, eight = offer("nebius", 1.0, None, gpu="L40S"), offer("crusoe", 20.0, 2, gpus=8)
    checked = check([other_gpu, eight], request(2), offers=[other_gpu, eight])
    assert checked.kept == [] and reasons(checked) == ["not H100:1"] * 2


def test_the_region_and_providers_of_the_request_hold() -> None:
    assert reasons(check([NEBIUS_FAR], request(1, region="r1"))) == ["outside region r1"]
    assert reasons(check([CRUSOE], request(1, providers=("nebius",)))) == ["provider not asked for"]


def test_strict_keeps_reserved_placements_only() -> None:
    checked = check([CRUSOE_RES, NEBIUS], request(2, reservation=ReservationRequest(strict=True)))
    assert checked.kept == [CRUSOE_RES] and reasons(checked) == ["on-demand (--strict)"]


def test_reservation_none_keeps_on_demand_only() -> None:
    checked = check([CRUSOE_RES, NEBIUS], request(2, reservation=ReservationRequest(ReservationMode.NONE)))
    assert checked.kept == [NEBIUS] and reasons(checked) == ["reserved (--reservation none)"]


def test_an_explicit_reservation_keeps_that_one_and_on_demand_unless_strict() -> None:
    other = offer("crusoe", 2.0, 4, reservation="res-other")
    offers = [*ALL, other]
    loose = check([other, CRUSOE_RES, NEBIUS], request(3, reservation=ReservationRequest(ReservationMode.ID, "res-c")),
                  offers=offers)
    assert loose.kept == [CRUSOE_RES, NEBIUS] and reasons(loose) == ["reservation res-other, not res-c"]
    strict = check([NEBIUS, CRUSOE_RES], request(2, reservation=ReservationRequest(ReservationMode.ID, "res-c",
                                                                                     strict=True)))
    assert strict.kept == [CRUSOE_RES] and reasons(strict) == ["on-demand (--strict)"]


def test_an_unlisted_reservation_allows_on_demand_offers_only() -> None:
    """Nebius capacity blocks are not listed: the create carries the id, and only unreserved offers apply."""
    unlisted = request(2, reservation=ReservationRequest(ReservationMode.ID, "capacity-block-1", strict=True))
    checked = check([NEBIUS, CRUSOE_RES], unlisted)
    assert checked.kept == [NEBIUS] and reasons(checked) == ["reservation res-c, not the one asked for"]


def test_unterminable_reservations_only_when_allowed_or_named() -> None:
    assert reasons(check([LAMBDA_RES], request(1))) == [
        "a reservation whose VMs the cloud cannot delete (--allow-unterminable)"]
    assert check([LAMBDA_RES], request(1, allow_unterminable=True)).kept == [LAMBDA_RES]
    named = request(1, reservation=ReservationRequest(ReservationMode.ID, "res-l"))
    assert check([LAMBDA_RES], named).kept == [LAMBDA_RES]


def test_no_offer_is_used_beyond_its_known_capacity() -> None:
    checked = check([CRUSOE] * 3 + [NEBIUS] * 3, request(6))
    assert checked.kept == [CRUSOE] * 2 + [NEBIUS] * 3 and reasons(checked) == ["room for 2 VM(s) only"]


def test_no_more_vms_than_asked_for() -> None:
    checked = check([NEBIUS] * 5, request(3))
    assert checked.kept == [NEBIUS] * 3 and reasons(checked) == ["more than the 3 VM(s) asked for"] * 2


def test_the_note_names_the_strategy_and_counts_each_reason_once() -> None:
    checked = check([NEBIUS] * 4 + [CRUSOE_RES], request(2, reservation=ReservationRequest(ReservationMode.NONE)))
    assert words(checked.note("hostile") or "") == (
        "strategy 'hostile': left out 3 placement(s) the fleet may not use: more than the 2 VM(s) asked for: 2 "
        "(nebius r1 nebius-1x); reserved (--reservation none): 1 (crusoe r1 crusoe-1x reservation res-c)")


@pytest.mark.parametrize(("answer", "says"), [
    (None, "it answered a NoneType, not a list of offers"),
    ({"nebius": 3}, "it answered a dict, not a list of offers"),
    (iter([NEBIUS]), "not a list of offers"),
    ([NEBIUS, "nebius r1"], "it answered 1 item(s) that are not offers (str)"),
    ([NEBIUS.to_json()], "(dict)"),
])
def test_an_answer_that_is_not_a_list_of_offers_is_a_strategy_error(answer: object, says: str) -> None:
    with pytest.raises(StrategyError) as raised:
        check(answer, request(1))
    assert raised.value.message.startswith("strategy 'hostile' is broken: ") and says in raised.value.message
    assert raised.value.exit_code == 2


def test_a_strategy_that_raises_is_a_strategy_error_naming_it() -> None:
    def boom(offers, req, blocked):  # noqa: ANN001, ANN202
        raise RuntimeError("no idea")

    with pytest.raises(StrategyError, match="strategy 'boom' is broken: it raised RuntimeError: no idea"):
        enforced(boom)(ALL, request(1), Blocked())


def test_a_strategy_cannot_widen_the_offers_by_changing_the_list_it_gets() -> None:
    forged = replace(NEBIUS, region="r9")

    def sneaky(offers, req, blocked):  # noqa: ANN001, ANN202
        offers.append(forged)
        return [forged]

    notes: list[str] = []
    assert enforced(sneaky, on_drop=notes.append)(ALL, request(1), Blocked()) == []
    assert notes == ["strategy 'sneaky': left out 1 placement(s) the fleet may not use: not offered: 1 (nebius r9 "
                     "nebius-1x)"]


def test_enforced_reports_each_distinct_note_once_and_keeps_its_name_when_wrapped_again() -> None:
    notes: list[str] = []
    wrapped = enforced(enforced(lambda *_: [CRUSOE] * 3, name="greedy"), on_drop=notes.append)
    assert wrapped.name == "greedy" and not isinstance(wrapped.inner, type(wrapped))
    assert wrapped(ALL, request(3), Blocked()) == [CRUSOE] * 2
    assert wrapped(ALL, request(3), Blocked()) == [CRUSOE] * 2
    assert notes == ["strategy 'greedy': left out 1 placement(s) the fleet may not use: room for 2 VM(s) only: 1 "
                     "(crusoe r1 crusoe-1x)"]


OFFERS = st.lists(st.builds(
    lambda i, price, capacity, reserved, available: offer(
        f"p{i % 3}", price, capacity, region=f"r{i % 4}", reservation=f"res-{i}" if reserved else "",
        available=available),
    st.integers(0, 50), st.integers(50, 5000).map(lambda cents: cents / 100),
    st.one_of(st.none(), st.integers(0, 6)), st.booleans(), st.booleans()), max_size=8, unique_by=offer_key)
REQUESTS = st.builds(
    lambda count, region, strict, mode: request(count, region=region, reservation=ReservationRequest(
        mode, "res-1" if mode is ReservationMode.ID else "", strict=strict and mode is not ReservationMode.NONE)),
    st.integers(1, 12), st.sampled_from([None, "r1"]), st.booleans(), st.sampled_from(list(ReservationMode)))


@given(OFFERS, REQUESTS, st.sampled_from([Blocked(), Blocked().with_provider("p1"), Blocked().with_region("p0", "r0")]))
def test_the_built_in_strategies_answers_pass_unchanged(offers: list[Offer], req: FleetRequest,
                                                        blocked: Blocked) -> None:
    for strategy in (spread, cheapest, reserved_first, packed):
        placed = strategy(offers, req, blocked)
        assert check(placed, req, blocked, offers) == Checked(placed)
