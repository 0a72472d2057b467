"""The arithmetic of accrued cost (vm_core.spend.cost): billed states only, runs rounded up to the rule's
granularity and minimum, intervals clipped to the window, open intervals ending at `now`; and reading it back
from a store in two queries."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from vm_core.fleet.store import SqliteFleetStore
from vm_core.providers.billing_rules import CRUSOE, LAMBDA, NEBIUS, RULES
from vm_core.spend.cost import VmCost, billed_length, costs_in, fleet_spend, rules_of, vm_cost, vm_costs
from vm_core.spend.ledger import Interval, LedgerVm, Observation, Pricing
from vm_core.spend.rules import DEFAULT, BillingRule

PER_MINUTE = BillingRule(60, 60, frozenset({"running"}), False, "test", "per started minute, one at least")
PER_HOUR = BillingRule(3600, 0, frozenset({"running"}), False, "test", "per started hour")
T0 = 1_000_000.0


def _vm(provider: str = "crusoe", instance_id: str = "i-1", closed_at: float | None = None, **kw: object) -> LedgerVm:
    vm = LedgerVm(provider, "acct", instance_id, "solo", "a100.1x", "r1", "A100", 1, Pricing.ON_DEMAND, "", "", "",
                  "default", "ana@box", T0, closed_at)
    return replace(vm, **kw)  # type: ignore[arg-type]


def _iv(start: float, end: float | None, state: str = "running", price: float | None = 3.6,
        vm: LedgerVm | None = None) -> Interval:
    vm = vm or _vm()
    return Interval(vm.provider, vm.account, vm.instance_id, T0 + start, None if end is None else T0 + end, state,
                    Pricing.ON_DEMAND, price, "test")


def _one(intervals: list[Interval], *, rule: BillingRule = CRUSOE, since: float | None = None,
         until: float | None = None, now: float = 10_000.0, vm: LedgerVm | None = None) -> VmCost:
    vm = vm or _vm()
    [cost] = vm_costs([vm], intervals, since=None if since is None else T0 + since,
                      until=None if until is None else T0 + until, now=T0 + now, rules={vm.provider: rule})
    return cost


# ------------------------------------------------------------------------------------------- rounding
@pytest.mark.parametrize(("seconds", "rule", "billed"), [
    (0.0, PER_MINUTE, 0.0), (-5.0, PER_MINUTE, 0.0), (0.5, PER_MINUTE, 60.0), (59.9, PER_MINUTE, 60.0),
    (60.0, PER_MINUTE, 60.0), (60.0000001, PER_MINUTE, 60.0), (60.5, PER_MINUTE, 120.0), (3599.0, PER_HOUR, 3600.0),
    (3601.0, PER_HOUR, 7200.0), (12.25, CRUSOE, 12.25), (0.001, NEBIUS, 0.001), (30.0, LAMBDA, 60.0),
    (61.0, LAMBDA, 120.0),
    (10.0, BillingRule(1, 600, frozenset({"running"}), False, "t", "ten minutes at least"), 600.0),
])
def test_a_run_is_rounded_up_to_the_granularity_and_at_least_the_minimum(seconds: float, rule: BillingRule,
                                                                        billed: float) -> None:
    assert billed_length(seconds, rule) == pytest.approx(billed)


# ------------------------------------------------------------------------------------------- states
def test_only_billed_states_bill_and_each_interval_at_its_own_price() -> None:
    cost = _one([_iv(0, 100, "creating"), _iv(100, 1000, price=3.6), _iv(1000, 2000, "stopped"),
                 _iv(2000, 2500, price=7.2), _iv(2500, 2600, "terminating")])
    assert cost.billed_seconds == pytest.approx(1400.0)
    assert cost.accrued_usd == pytest.approx(900 * 0.001 + 500 * 0.002)
    assert cost.rate_per_hour == 0.0 and cost.priced


def test_each_cloud_bills_its_own_states() -> None:
    spans = [_iv(0, 100, "starting"), _iv(100, 200), _iv(200, 300, "rebooting"), _iv(300, 400),
             _iv(400, 500, "stopping"), _iv(500, 600, "stopped")]
    assert _one(spans, rule=CRUSOE).billed_seconds == pytest.approx(200.0)  # running only
    assert _one(spans, rule=LAMBDA).billed_seconds == pytest.approx(300.0)  # running and rebooting: one run
    assert _one(spans, rule=NEBIUS).billed_seconds == pytest.approx(400.0)  # and stopping, to a complete stop


def test_consecutive_billed_intervals_are_one_run_rounded_once_at_the_last_price() -> None:
    # Lambda: 30 s at 3.6 then 45 s at 7.2 is one run of 75 s, billed 120 s: the 45 s rounding at 7.2 $/h.
    cost = _one([_iv(0, 30, price=3.6), _iv(30, 75, "rebooting", price=7.2)], rule=LAMBDA)
    assert cost.billed_seconds == pytest.approx(120.0)
    assert cost.accrued_usd == pytest.approx((30 * 3.6 + 45 * 7.2 + 45 * 7.2) / 3600)


def test_a_stop_between_two_runs_rounds_each_and_a_gap_ends_a_run() -> None:
    stopped = _one([_iv(0, 30), _iv(30, 100, "stopped"), _iv(100, 130)], rule=PER_MINUTE)
    assert stopped.billed_seconds == pytest.approx(120.0)
    gap = _one([_iv(0, 30), _iv(100, 130)], rule=PER_MINUTE)  # no interval between: two runs
    assert gap.billed_seconds == pytest.approx(120.0)
    joined = _one([_iv(0, 30), _iv(30, 60, price=7.2)], rule=PER_MINUTE)
    assert joined.billed_seconds == pytest.approx(60.0)


def _costs(intervals: list[Interval], *, rule: BillingRule = CRUSOE, since: float | None = None,
           until: float | None = None, now: float = 10_000.0) -> list[VmCost]:
    vm = _vm()
    return vm_costs([vm], intervals, since=None if since is None else T0 + since,
                    until=None if until is None else T0 + until, now=T0 + now, rules={vm.provider: rule})


def test_a_run_of_no_time_bills_nothing_even_with_a_minimum() -> None:
    assert _costs([_iv(0, 0), _iv(0, 50, "stopped")], rule=PER_MINUTE) == []  # nothing billed: not listed


# ------------------------------------------------------------------------------------------- now and open
def test_an_open_interval_ends_now_and_sets_the_running_rate() -> None:
    cost = _one([_iv(0, 100, "creating"), _iv(100, None, price=7.2)], now=1000.0)
    assert cost.billed_seconds == pytest.approx(900.0)
    assert cost.accrued_usd == pytest.approx(900 * 0.002)
    assert cost.rate_per_hour == 7.2


def test_an_open_run_is_rounded_as_if_it_ended_now() -> None:
    cost = _one([_iv(0, None)], rule=LAMBDA, now=90.0)
    assert cost.billed_seconds == pytest.approx(120.0) and cost.rate_per_hour == 3.6


def test_an_open_interval_in_an_unbilled_state_bills_no_rate() -> None:
    cost = _one([_iv(0, 100), _iv(100, None, "stopped")], now=1000.0)
    assert (cost.rate_per_hour, cost.billed_seconds) == (0.0, pytest.approx(100.0))


def test_nothing_after_now_counts_and_a_closed_vm_has_no_rate() -> None:
    future = _one([_iv(0, 5000)], now=1000.0)  # an interval ending after now (another machine's clock)
    assert future.billed_seconds == pytest.approx(1000.0)
    closed = _one([_iv(0, None)], vm=_vm(closed_at=T0 + 50), now=100.0)
    assert closed.rate_per_hour == 0.0


def test_an_interval_without_a_price_counts_its_time_at_zero_and_is_not_priced() -> None:
    cost = _one([_iv(0, 100, price=None), _iv(100, 200, price=3.6)])
    assert cost.billed_seconds == pytest.approx(200.0)
    assert cost.accrued_usd == pytest.approx(0.1) and not cost.priced
    unpriced_stop = _one([_iv(0, 100), _iv(100, 200, "stopped", price=None)])
    assert unpriced_stop.priced  # its unpriced time did not bill


def test_an_unpriced_open_run_bills_no_rate() -> None:
    assert _one([_iv(0, None, price=None)], now=100.0).rate_per_hour == 0.0


# ------------------------------------------------------------------------------------------- windows
def test_intervals_are_clipped_to_the_window() -> None:
    cost = _one([_iv(0, 1000), _iv(1000, 2000, "stopped"), _iv(2000, 3000, price=7.2)], since=500, until=2500)
    assert cost.billed_seconds == pytest.approx(1000.0)
    assert cost.accrued_usd == pytest.approx(500 * 0.001 + 500 * 0.002)


def test_a_runs_rounding_counts_in_the_window_where_it_ends_so_windows_add_up() -> None:
    spans = [_iv(0, 90), _iv(90, 200, "stopped"), _iv(200, 230)]  # two runs: 90 s -> 120, 30 s -> 60
    whole = _one(spans, rule=PER_MINUTE)
    first = _one(spans, rule=PER_MINUTE, until=100)
    second = _one(spans, rule=PER_MINUTE, since=100)
    assert whole.billed_seconds == pytest.approx(180.0)
    assert first.billed_seconds == pytest.approx(120.0) and second.billed_seconds == pytest.approx(60.0)
    split = _one(spans, rule=PER_MINUTE, until=60), _one(spans, rule=PER_MINUTE, since=60)
    assert split[0].billed_seconds == pytest.approx(60.0)  # the run had not ended by 60 s: no rounding yet
    assert sum(c.billed_seconds for c in split) == pytest.approx(180.0)
    assert sum(c.accrued_usd for c in split) == pytest.approx(whole.accrued_usd)


def test_a_run_that_began_before_the_window_is_rounded_from_its_start() -> None:
    spans = [_iv(0, 50), _iv(50, 70, price=7.2)]  # one run of 70 s -> 120 s; since 60: 10 s + the 50 s rounding
    cost = _one(spans, rule=PER_MINUTE, since=60)
    assert cost.billed_seconds == pytest.approx(60.0)
    assert cost.accrued_usd == pytest.approx(60 * 0.002)


def test_a_run_ending_exactly_at_the_windows_start_belongs_to_the_window_before() -> None:
    spans = [_iv(0, 30), _iv(30, 200, "stopped")]
    assert _one(spans, rule=PER_MINUTE, until=30).billed_seconds == pytest.approx(60.0)
    assert _costs(spans, rule=PER_MINUTE, since=30) == []


def test_a_vm_that_billed_nothing_in_the_window_is_left_out() -> None:
    vm = _vm()
    before = vm_costs([vm], [_iv(0, 100)], since=T0 + 200, until=None, now=T0 + 1000, rules={})
    after = vm_costs([vm], [_iv(500, 600)], since=None, until=T0 + 400, now=T0 + 1000, rules={})
    assert before == [] and after == []
    stopped_inside = vm_costs([vm], [_iv(0, None, "stopped")], since=T0 + 200, until=None, now=T0 + 1000, rules={})
    assert stopped_inside == []  # there all the period, but stopped: it cost nothing


def test_until_is_never_later_than_now() -> None:
    assert _one([_iv(0, None)], until=5000, now=1000).billed_seconds == pytest.approx(1000.0)


# ------------------------------------------------------------------------------------------- many VMs
def test_each_vm_by_its_own_clouds_rule_in_the_order_given_other_vms_intervals_ignored() -> None:
    lam, neb, other = _vm("lambda", "l-1"), _vm("nebius", "n-1"), _vm("thirdparty", "t-1")
    stranger = _vm("crusoe", "not-listed")
    intervals = [_iv(0, 30, vm=neb), _iv(0, 30, vm=lam), _iv(0, 30, vm=other), _iv(0, 30, vm=stranger)]
    costs = vm_costs([lam, neb, other], reversed(intervals), since=None, until=None, now=T0 + 100,
                     rules={"nebius": NEBIUS})
    assert [c.vm.instance_id for c in costs] == ["l-1", "n-1", "t-1"]
    # a provider without a rule in `rules` (a plugin no longer installed, a third-party cloud): DEFAULT
    assert [c.billed_seconds for c in costs] == [pytest.approx(30.0), pytest.approx(30.0), pytest.approx(30.0)]
    with_lambda = vm_costs([lam], intervals, since=None, until=None, now=T0 + 100, rules={"lambda": LAMBDA})
    assert [c.billed_seconds for c in with_lambda] == [pytest.approx(60.0)]


def test_rules_of_takes_each_plugins_billing_fact() -> None:
    from vm_core.plugins import provider_plugins

    plugins = provider_plugins({}).load_all()
    rules = rules_of({name: plugins[name] for name in ("crusoe", "lambda", "nebius")})
    assert rules == RULES
    assert rules_of({}) == {} and DEFAULT.billed_states == frozenset({"running"})


# ------------------------------------------------------------------------------------------- from a store
def _store(tmp_path: Path) -> SqliteFleetStore:
    return SqliteFleetStore(tmp_path / "vm.db")


def test_costs_in_a_store_match_the_pure_arithmetic(tmp_path: Path) -> None:
    store = _store(tmp_path)
    a = _vm("lambda", "l-1", fleet="train")
    b = _vm("crusoe", "c-1", created_by="bo@box")
    store.record_vm(a, "running", price_per_hour=3.6, source="create")
    store.record_vm(b, "running", price_per_hour=7.2, source="create")
    store.observe([Observation("lambda", "acct", "l-1", "terminated", T0 + 90, "destroy"),
                   Observation("crusoe", "acct", "c-1", "stopped", T0 + 500, "stop")])
    now = T0 + 1000
    expected = vm_costs(store.ledger_vms(), store.ledger_intervals(), since=None, until=None, now=now, rules=RULES)
    assert sorted(costs_in(store, since=None, until=None, now=now, rules=RULES), key=str) == sorted(expected, key=str)
    assert {c.vm.instance_id: c.billed_seconds for c in expected} == {"l-1": 120.0, "c-1": 500.0}
    assert fleet_spend(store, "train", now=now, rules=RULES).accrued_usd == pytest.approx(120 * 0.001)
    assert fleet_spend(store, "none", now=now, rules=RULES).vms == 0
    one = vm_cost(store, ("crusoe", "acct", "c-1"), now=now, rules=RULES)
    assert one is not None and one.accrued_usd == pytest.approx(1.0)
    assert vm_cost(store, ("crusoe", "acct", "nope"), now=now, rules=RULES) is None


def test_costs_in_a_window_leave_out_vms_gone_before_it_and_round_runs_from_their_start(tmp_path: Path) -> None:
    store = _store(tmp_path)
    gone, long = _vm("lambda", "l-old"), _vm("lambda", "l-long")
    store.record_vm(gone, "running", price_per_hour=3.6, source="create")
    store.record_vm(long, "running", price_per_hour=3.6, source="create")
    store.observe([Observation("lambda", "acct", "l-old", "terminated", T0 + 30, "destroy"),
                   Observation("lambda", "acct", "l-long", "running", T0 + 50, "list", 7.2),
                   Observation("lambda", "acct", "l-long", "terminated", T0 + 70, "destroy")])
    [cost] = costs_in(store, since=T0 + 60, until=None, now=T0 + 1000, rules=RULES)
    assert cost.vm.instance_id == "l-long" and cost.billed_seconds == pytest.approx(60.0)
    running = fleet_spend(store, "", now=T0 + 1000, rules=RULES)
    assert running.vms == 2 and running.rate_per_hour == 0.0


# ------------------------------------------------------------------------------------------- SQL = pure
STATES = ("creating", "running", "stopping", "stopped", "starting", "rebooting")


def _random_ledger(store: SqliteFleetStore, seed: int, vms: int = 40) -> None:
    import random

    rng = random.Random(seed)
    for n in range(vms):
        provider = rng.choice(("crusoe", "lambda", "nebius", "thirdparty"))
        vm = _vm(provider, f"v-{n}", fleet=rng.choice(("", "a", "b")))
        vm = replace(vm, created_at=T0 + rng.choice((0.0, 10.0, rng.uniform(0, 5000))))
        store.record_vm(vm, rng.choice(STATES), price_per_hour=rng.choice((None, 2.5, 3.6)), source="create")
        at = vm.created_at
        for _ in range(rng.randrange(0, 8)):
            at += rng.choice((0.0, 1.0, 30.0, 59.5, 60.0, rng.uniform(0, 4000)))
            state = rng.choice((*STATES, "terminated")) if rng.random() < 0.9 else "missing"
            store.observe([Observation(provider, "acct", vm.instance_id, state, at, "list",
                                       rng.choice((None, 2.5, 7.2)))])


@pytest.mark.parametrize("seed", range(12))
def test_the_store_reading_gives_what_the_pure_arithmetic_gives(tmp_path: Path, seed: int) -> None:
    store = _store(tmp_path)
    _random_ledger(store, seed)
    rules = {"crusoe": CRUSOE, "lambda": LAMBDA, "nebius": NEBIUS}
    vms, intervals = store.ledger_vms(), store.ledger_intervals()
    for since, until, now in [(None, None, T0 + 20_000), (T0 + 1000, None, T0 + 20_000),
                              (T0 + 500, T0 + 3000, T0 + 20_000), (None, T0 + 2000, T0 + 1500),
                              (T0 + 60, T0 + 120, T0 + 30_000)]:
        pure = {c.vm.key: c for c in vm_costs(vms, intervals, since=since, until=until, now=now, rules=rules)}
        read = {c.vm.key: c for c in costs_in(store, since=since, until=until, now=now, rules=rules)}
        assert set(read) == set(pure), (since, until)
        for key, cost in pure.items():
            got = read[key]
            assert got.billed_seconds == pytest.approx(cost.billed_seconds, abs=1e-6), key
            assert got.accrued_usd == pytest.approx(cost.accrued_usd, abs=1e-9), key
            assert (got.rate_per_hour, got.priced) == (cost.rate_per_hour, cost.priced), key
