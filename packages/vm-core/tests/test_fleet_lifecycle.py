"""Budgets and expiry of fleets: the pure checks, the recorded columns, and failover that stays under the cap."""

from __future__ import annotations

from pathlib import Path

import pytest
from vm_core.cli.spelling import words
from vm_core.errors import BudgetError, UsageError
from vm_core.fleet.budget import check_budget, plan_total, price_total
from vm_core.fleet.create import FleetCreator, FleetSpec
from vm_core.fleet.expiry import expired, parse_duration
from vm_core.fleet.location import store_at
from vm_core.fleet.store import FleetRecord, FleetState, SqliteFleetStore
from vm_core.fleet.strategies import cheapest
from vm_core.model import Offer

from .test_fleet_manager import BUILT_IN, cloud_vms, no_nebius_h100


def offer(price: float | None, provider: str = "nebius", capacity: int | None = 4) -> Offer:
    return Offer(provider=provider, region="eu-north1", gpu="H100", gpu_count=1, shape="gpu-h100-sxm",
                 price_per_hour=price, capacity=capacity)  # type: ignore[arg-type]


def test_check_budget_passes_at_or_under_the_cap_and_without_one() -> None:
    assert check_budget([offer(2.5), offer(2.5)], 5.0) is None
    assert check_budget([offer(2.5), offer(2.5)], None) is None
    assert check_budget([offer(None)], None) is None
    assert check_budget([], 1.0) is None


def test_check_budget_names_the_total_and_the_cap() -> None:
    refused = check_budget([offer(2.1), offer(2.1)], 4.0)
    assert isinstance(refused, BudgetError) and refused.exit_code == 6 and refused.code == "budget"
    assert words(refused.message) == "the plan costs $4.20/h, above the cap --max-price 4.00"
    assert refused.message == "the plan costs $4.20/h, above the cap of $4.00/h"  # the core names no option


def test_check_budget_counts_what_the_fleet_already_runs() -> None:
    assert check_budget([offer(2.0)], 5.0, committed=[2.0]) is None
    refused = check_budget([offer(2.0)], 5.0, committed=[2.0, 2.0])
    assert refused is not None and "$6.00/h" in refused.message


def test_an_unknown_price_under_a_cap_is_refused_with_the_known_part() -> None:
    refused = check_budget([offer(2.0), offer(None)], 100.0)
    assert refused is not None
    assert refused.message.startswith("1 VM(s) of the plan have no known price")
    assert "at least $2.00/h" in refused.message and "--max-price 100.00" in words(refused.message)
    over = check_budget([offer(200.0), offer(None)], 100.0)
    assert over is not None and "at least $200.00/h" in over.message


def test_a_plan_resting_on_unknown_capacity_is_a_lower_bound() -> None:
    """A slot on an offer whose capacity the cloud does not publish may fail over to a dearer offer: the plan's
    total is then at least what it says, in the plan and in a refusal; under the cap it is not refused."""
    assert plan_total([offer(2.0), offer(3.0)]) == (5.0, True)
    assert plan_total([offer(2.0), offer(3.0, capacity=None)]) == (5.0, False)
    assert plan_total([offer(2.0), offer(None)]) == (2.0, False)
    over = check_budget([offer(2.1), offer(2.1, capacity=None)], 4.0)
    assert over is not None and over.message == "the plan costs at least $4.20/h, above the cap of $4.00/h"
    assert check_budget([offer(2.1), offer(2.1, capacity=None)], 5.0) is None


def test_price_total_is_a_lower_bound_with_unknown_prices() -> None:
    assert price_total([1.0, None, 2.5]) == (3.5, False)
    assert price_total([1.0, 2.5]) == (3.5, True)


@pytest.mark.parametrize(("text", "seconds"), [("1s", 1), ("90s", 90), ("30m", 1800), ("8h", 28800),
                                               ("2d", 172800), ("1h30m", 5400), (" 8H ", 28800), ("365d", 31536000)])
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0s", "8", "h", "1.5h", "-1h", "8x", "366d", "8 h", "1h-30m", "m30"])
def test_bad_durations_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match="^'.*' (is not a duration: use a whole number|must be from 1s to 365d)"):
        parse_duration(text)


def test_expired_only_with_a_ttl_that_has_passed() -> None:
    record = FleetRecord(name="t", gpu="H100", gpu_count=1, count=1, min_count=1, strategy="spread")
    assert not expired(record, now=1e12)
    timed = FleetRecord(name="t", gpu="H100", gpu_count=1, count=1, min_count=1, strategy="spread",
                        expires_at=1000.0)
    assert expired(timed, now=1000.0) and not expired(timed, now=999.0)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_expiry_and_cap_are_recorded_and_read_back(request: pytest.FixtureRequest, tmp_path: Path,
                                                   backend: str) -> None:
    url = request.getfixturevalue("postgres_url") if backend == "postgres" else None
    store = store_at(url, tmp_path)
    store.create_fleet(FleetRecord(name="a", gpu="H100", gpu_count=1, count=1, min_count=1,
                                   strategy="spread", expires_at=1234.5, max_price=20.0))
    store.create_fleet(FleetRecord(name="b", gpu="H100", gpu_count=1, count=1, min_count=1,
                                   strategy="spread"))
    again = store_at(url, tmp_path)
    assert (again.get_fleet("a").expires_at, again.get_fleet("a").max_price) == (1234.5, 20.0)
    assert (again.get_fleet("b").expires_at, again.get_fleet("b").max_price) == (None, None)
    assert again.update_fleet("a", state=FleetState.ACTIVE).expires_at == 1234.5


def test_failover_never_goes_above_the_cap(mock_clouds_factory, connect, tmp_path: Path) -> None:
    clouds = mock_clouds_factory(configure=no_nebius_h100)
    store, providers = SqliteFleetStore(tmp_path / "vm.db"), {name: connect(clouds, name) for name in BUILT_IN}
    spec = FleetSpec(name="cap", gpu="H100", count=1, min_count=1, providers=("nebius", "lambda"))
    creator = FleetCreator(store, providers, cheapest, timeout=60)
    plan, offers = creator.plan(spec)
    elsewhere = min(o.price_per_hour for o in offers.offers
                    if o.provider == "lambda" and o.available and not o.spot and not o.reservation_id)
    assert [o.provider for o in plan] == ["nebius"] and plan[0].price_per_hour < elsewhere
    capped = FleetSpec(name="cap", gpu="H100", count=1, min_count=1, providers=("nebius", "lambda"),
                       max_price=plan[0].price_per_hour)
    report = FleetCreator(store, providers, cheapest, timeout=60).create(capped)
    assert report.fleet.state is FleetState.FAILED and report.fleet.max_price == plan[0].price_per_hour
    assert cloud_vms(clouds, "cap") == []
    assert any(isinstance(e, BudgetError) for e in report.errors)
    assert any("failover" in n and "above the cap" in n for n in report.notes)
    # the note keeps the cap as a setting: the CLI prints it as the option that set it
    assert any(f"above the cap --max-price {plan[0].price_per_hour:.2f}" in words(n) for n in report.notes)
    assert {m.provider for m in store.members("cap")} == {"nebius"}  # nothing was tried above the cap
