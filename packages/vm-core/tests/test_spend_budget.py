"""Spend budgets (fleet/spend_budget.py): the plan-time refusal, a fleet's standing from the ledger (its own VMs
only), a user's month on both store backends (two users in one store), what reaching a budget does, and the
profile setting `monthly_budget`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from vm_core.config import load_config
from vm_core.errors import BudgetError, ConfigError, UsageError
from vm_core.fleet.location import store_at
from vm_core.fleet.spend_budget import (
    check_plan,
    check_value,
    enforcement,
    fleet_standing,
    fleet_warning,
    monthly_refusal,
    on_budget_of,
    user_standing,
)
from vm_core.fleet.store import FleetRecord, FleetStore, MemberRecord, MemberState, OnBudget
from vm_core.model import Offer
from vm_core.providers.billing_rules import CRUSOE, LAMBDA, NEBIUS
from vm_core.spend.ledger import LedgerVm, Observation, Pricing

RULES = {"crusoe": CRUSOE, "lambda": LAMBDA, "nebius": NEBIUS}
NOW = datetime(2026, 12, 15, 12, tzinfo=UTC).timestamp()
HOUR = 3600.0


def offer(price: float | None) -> Offer:
    return Offer(provider="nebius", gpu="H100", gpu_count=8, region="eu-north1", shape="gpu-h100-sxm/8gpu",
                 price_per_hour=price, capacity=4)


def spent(store: FleetStore, instance_id: str, *, price: float, start: float, end: float, user: str = "ana@box",
          fleet: str = "", fleet_id: str = "", provider: str = "crusoe") -> None:
    """A VM that ran from `start` to `end` at `price` $/h, in the ledger (times explicit, in the past)."""
    store.record_vm(LedgerVm(provider, "acct", instance_id, instance_id, "h100.8x", "us-east1", "H100", 8,
                             Pricing.ON_DEMAND, "", fleet, fleet_id, "default", user, start),
                    "running", price_per_hour=price, source="create")
    store.observe([Observation(provider, "acct", instance_id, "terminated", end, "destroy")])


# ------------------------------------------------------------------------------------------ plan time
def test_a_plan_whose_rate_over_its_ttl_is_above_the_budget_is_refused() -> None:
    plan = [offer(20.0), offer(20.0)]  # $40/h
    refused = check_plan(plan, 300.0, 8 * HOUR)  # $320 over 8 h
    assert isinstance(refused, BudgetError) and refused.exit_code == 6
    assert "$40.00/h, so $320.00 over its ttl of 8 h" in refused.message and "$300.00" in refused.message
    assert check_plan(plan, 320.0, 8 * HOUR) is None  # exactly the budget fits
    assert check_plan(plan, 10.0, None) is None  # no ttl: enforced as it accrues
    assert check_plan(plan, None, 8 * HOUR) is None


def test_a_plan_with_an_unknown_price_cannot_be_checked_against_a_budget() -> None:
    refused = check_plan([offer(2.0), offer(None)], 1000.0, HOUR)
    assert refused is not None and "1 VM(s) of the plan have no known price" in refused.message


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), True, "500"])
def test_a_budget_must_be_a_positive_amount(value: object) -> None:
    with pytest.raises(UsageError, match="positive amount of USD"):
        check_value(value)  # type: ignore[arg-type]
    check_value(500)
    with pytest.raises(UsageError, match="stop or destroy"):
        on_budget_of("pause")


# ------------------------------------------------------------------------------------------ standings
def test_a_fleets_standing_counts_its_own_vms_only(tmp_path: Path) -> None:
    store = store_at(None, tmp_path)
    record = FleetRecord("b1", "H100", 8, 1, 1, "spread", fleet_id="id-new", budget=100.0)
    spent(store, "old-vm", price=50.0, start=NOW - 10 * HOUR, end=NOW - 8 * HOUR, fleet="b1", fleet_id="id-old")
    spent(store, "vm-1", price=40.0, start=NOW - 2 * HOUR, end=NOW - HOUR, fleet="b1", fleet_id="id-new")
    spent(store, "vm-2", price=45.0, start=NOW - 2 * HOUR, end=NOW - HOUR, fleet="other", fleet_id="id-x")
    standing = fleet_standing(store, record, now=NOW, rules=RULES)
    assert standing is not None and standing.spent == pytest.approx(40.0)  # not the earlier fleet's $100
    assert not standing.warns and not standing.reached
    spent(store, "vm-3", price=45.0, start=NOW - HOUR, end=NOW - 0.5 * HOUR, fleet="b1", fleet_id="id-new")
    warned = fleet_standing(store, record, now=NOW, rules=RULES)
    assert warned is not None and warned.spent == pytest.approx(62.5) and not warned.warns
    spent(store, "vm-4", price=40.0, start=NOW - 0.5 * HOUR, end=NOW, fleet="b1", fleet_id="id-new")
    warned = fleet_standing(store, record, now=NOW, rules=RULES)
    assert warned is not None and warned.warns and not warned.reached  # $82.50: 82 %
    assert "fleet b1 has spent $82.50 of $100.00 (82%) of its budget; at 100 % the next " in fleet_warning(
        record, warned)
    assert fleet_standing(store, FleetRecord("nob", "H100", 8, 1, 1, "spread"), now=NOW, rules=RULES) is None


@pytest.fixture(params=["sqlite", "postgres"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], FleetStore]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    return lambda: store_at(url, tmp_path)


def test_two_users_months_in_one_store(opened: Callable[[], FleetStore]) -> None:
    store = opened()
    month = datetime(2026, 12, 1, tzinfo=UTC).timestamp()
    spent(store, "ana-last-month", price=100.0, start=month - 5 * HOUR, end=month - HOUR, user="ana@box")
    spent(store, "ana-across", price=10.0, start=month - HOUR, end=month + 2 * HOUR, user="ana@box")  # $20 this month
    spent(store, "ana-now", price=30.0, start=NOW - 10 * HOUR, end=NOW, user="ana@box", provider="nebius")
    spent(store, "bo-now", price=500.0, start=NOW - 2 * HOUR, end=NOW, user="bo@laptop")
    again = opened()  # another process's handle on the same store
    ana = user_standing(again, "ana@box", 400.0, now=NOW, rules=RULES)
    assert ana.spent == pytest.approx(320.0) and ana.warns and not ana.reached
    bo = user_standing(again, "bo@laptop", 400.0, now=NOW, rules=RULES)
    assert bo.spent == pytest.approx(1000.0) and bo.reached
    refusal = monthly_refusal("bo@laptop", "team", bo, NOW)
    assert refusal.exit_code == 6 and "bo@laptop has spent $1000.00 of $400.00" in refusal.message
    assert "December 2026" in refusal.message and refusal.hint is not None
    assert "[profiles.team]" in refusal.hint.text
    assert user_standing(again, "cy@desk", 400.0, now=NOW, rules=RULES).spent == 0


# ---------------------------------------------------------------------------------------- enforcement
def test_reaching_the_budget_stops_unless_a_member_cannot_stop() -> None:
    record = FleetRecord("b1", "H100", 8, 2, 2, "spread", budget=10.0)
    crusoe = MemberRecord("b1", 0, 0, "crusoe", "b1-0", state=MemberState.RUNNING)
    lam = MemberRecord("b1", 1, 0, "lambda", "b1-1", state=MemberState.RUNNING)
    gone = MemberRecord("b1", 1, 0, "lambda", "b1-1", state=MemberState.DESTROYED)

    def can_stop(provider: str) -> bool:
        return provider != "lambda"

    assert enforcement(record, [crusoe, gone], can_stop).action is OnBudget.STOP
    mixed = enforcement(record, [crusoe, lam], can_stop)
    assert mixed.action is OnBudget.DESTROY and mixed.why == "lambda cannot stop VMs, so it is destroyed"
    destroy = FleetRecord("b2", "H100", 8, 1, 1, "spread", budget=10.0, on_budget=OnBudget.DESTROY)
    assert enforcement(destroy, [crusoe], can_stop).action is OnBudget.DESTROY
    released = MemberRecord("b1", 1, 0, "lambda", "b1-1", state=MemberState.RELEASED)
    assert enforcement(record, [crusoe, released], can_stop).action is OnBudget.DESTROY  # destroyed again: said


# ------------------------------------------------------------------------------------------- settings
def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_monthly_budget_is_a_profile_setting(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, "[profiles.team]\nmonthly_budget = 500\n[profiles.team.lambda]\n"
                                           "api_key = 'k'\n"))
    team = config.profile("team")
    assert team.monthly_budget == 500.0 and set(team.providers) == {"lambda"}
    assert config.profile("local").monthly_budget is None


@pytest.mark.parametrize("value", ["0", "-5", "'500'", "true", "inf", "nan"])
def test_a_monthly_budget_that_is_not_a_positive_amount_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match=r"\[profiles.team\] monthly_budget must be a positive amount of USD"):
        load_config(_config(tmp_path, f"[profiles.team]\nmonthly_budget = {value}\n"))


# ---------------------------------------------------------------------------------------- Python API
@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A VM_HOME whose default profile has the example provider (a cloud in a file, no stop) only."""
    monkeypatch.setenv("VM_HOME", str(tmp_path))
    monkeypatch.setenv("VM_NO_AUTOSTART", "1")
    for name in ("VM_PROFILE", "VM_EXAMPLE_PATH", "VM_EXAMPLE_TOKEN", "VM_STORE_URL"):
        monkeypatch.delenv(name, raising=False)
    _config(tmp_path, f'default_profile = "p"\n[profiles.p.example]\npath = "{tmp_path / "cloud.json"}"\n'
                      'token = "tok-budget-example-1"\nseconds = 0.05\ncapacity = 3\n')
    return tmp_path


def test_enforce_budget_stops_or_destroys_a_fleet_over_a_client(home: Path) -> None:
    import time

    from vm_core import api
    from vm_core.api.budgets import enforce_budget
    from vm_core.fleet.reap import Result

    def client() -> api.Client:
        return api.connect(warn=lambda _: None, progress=lambda _: None)

    made = client().fleet_create(api.FleetCreateRequest(gpu="H100", count=1, name="ex", budget=10.0))
    asked = client().fleet_create(api.FleetCreateRequest(gpu="H100", count=1, name="ex2", budget=10.0,
                                                         on_budget="destroy"))
    record, other = made.report.fleet, asked.report.fleet
    assert (record.budget, record.on_budget, other.on_budget) == (10.0, OnBudget.STOP, OnBudget.DESTROY)
    store = store_at(None, home)
    assert enforce_budget(client(), record) is None  # a minute of one VM is far from $10
    now = time.time()
    for fleet in (record, other):
        spent(store, f"{fleet.name}-past", price=12.0, start=now - 2 * HOUR, end=now - HOUR, fleet=fleet.name,
              fleet_id=fleet.fleet_id, provider="example")
    dry = enforce_budget(client(), record, dry_run=True)
    assert dry is not None and dry.outcome.result is Result.WOULD_STOP and dry.events("me@here") == []
    done = enforce_budget(client(), record)
    assert done is not None and (done.outcome.result, done.outcome.vms) == (Result.STOPPED, 1)
    assert done.outcome.reason.startswith("reached its budget: $12.00 of $10.00 (120%)")
    assert [(e.kind.value, e.details["result"]) for e in done.events("me@here")] == [("budget_reached", "stopped")]
    stopped = store.get_fleet("ex")
    assert stopped is not None and stopped.state.value == "stopped"
    assert enforce_budget(client(), stopped) is None  # enforced once
    gone = enforce_budget(client(), other)
    assert gone is not None and (gone.outcome.result, gone.outcome.vms) == (Result.DESTROYED, 1)
    assert [e.kind.value for e in gone.events("me@here")] == ["budget_reached", "destroyed"]
    assert store.get_fleet("ex2") is None
