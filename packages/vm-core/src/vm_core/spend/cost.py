"""What the VMs of the spend ledger have cost: each VM's billed time and accrued USD by its cloud's BillingRule
(spend/rules.py), and what it bills per hour now. Estimates by list price (docs/billing.md): the ledger's
intervals are what vm saw, at the price vm knew.

The arithmetic (`vm_costs`, pure):

* only the time in the rule's `billed_states` bills; an open interval ends at `now`, and nothing is counted
  after `now`;
* consecutive billed intervals of a VM (each beginning where the previous one ends) form one *run*; a run's
  seconds are rounded up to a whole number of `granularity_seconds`, and to at least `minimum_seconds` (a run
  of no time at all bills nothing);
* each interval costs its seconds inside [since, until] times its price / 3600; a run's rounding (the seconds
  it is rounded up by) costs the price of its last interval and counts in the window where the run ends
  (since < end <= until), so splitting a period into windows never counts it twice;
* an interval without a price (None) counts its time at 0 USD and makes the VM not `priced`.

Reading (`costs_in`, `fleet_spend`, `vm_cost`) makes no query per VM (spend/cost_sql.py), so a store of 10,000
VMs and 100,000 intervals answers in a fraction of a second (bench/cost.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .ledger import Interval, LedgerStore, LedgerVm
from .rules import DEFAULT, BillingRule

if TYPE_CHECKING:
    from ..plugins import LoadedPlugin
    from .ledger import Ledger

Key = tuple[str, str, str]  # provider, account, instance id (LedgerVm.key)
Span = tuple[float, "float | None", str, "float | None"]  # started_at, ended_at, state, price_per_hour
_ROUNDING_SLACK = 1e-6  # seconds: a run of 60.0000001 s measured in floats is one minute, not two


@dataclass(frozen=True, slots=True)
class VmCost:
    """One VM's cost over a period: `billed_seconds` (its billed time inside the period, rounding included),
    `accrued_usd`, `rate_per_hour` (what it bills per hour now: its price when its open interval is in a billed
    state, else 0), `priced` (False when a billed interval had no price, counted at 0)."""

    vm: LedgerVm
    billed_seconds: float
    accrued_usd: float
    rate_per_hour: float
    priced: bool


@dataclass(frozen=True, slots=True)
class Spend:
    """What a fleet has cost so far (`accrued_usd`), what it bills per hour now, and over how many VMs."""

    accrued_usd: float
    rate_per_hour: float
    vms: int


def rules_of(plugins: Mapping[str, LoadedPlugin]) -> dict[str, BillingRule]:
    """Each provider plugin's `billing` fact by name (DEFAULT for a plugin that declares none)."""
    return {name: plugin.billing for name, plugin in plugins.items()}


def rule_for(provider: str, rules: Mapping[str, BillingRule]) -> BillingRule:
    """The rule of `provider` in `rules`; DEFAULT for a provider without one (e.g. a plugin no longer installed)."""
    return rules.get(provider, DEFAULT)


def vm_costs(vms: Iterable[LedgerVm], intervals: Iterable[Interval], *, since: float | None, until: float | None,
             now: float, rules: Mapping[str, BillingRule]) -> list[VmCost]:
    """The cost of each VM of `vms` that billed time inside [since, until] (None: unbounded; `until` is never
    later than `now`), in the order of `vms`. Pure: see the module's docstring for the arithmetic. `intervals` may hold
    other VMs' intervals (ignored) and come in any order; a run that began before `since` is rounded from its
    start only when its earlier intervals are among them (pass every interval of the VMs, not only the window's)."""
    spans: dict[Key, list[Span]] = {}
    for i in intervals:
        spans.setdefault(i.key, []).append((i.started_at, i.ended_at, i.state, i.price_per_hour))
    for found in spans.values():
        found.sort(key=lambda span: span[0])
    return costs_of(vms, spans, since=since, until=until, now=now, rules=rules)


def costs_of(vms: Iterable[LedgerVm], spans: Mapping[Key, Sequence[Span]], *, since: float | None,
             until: float | None, now: float, rules: Mapping[str, BillingRule]) -> list[VmCost]:
    """`vm_costs` over each VM's spans already in start order (what `costs_in` reads)."""
    low = -math.inf if since is None else since
    high = now if until is None else min(until, now)
    found = []
    for vm in vms:
        own = spans.get(vm.key)
        if own:
            cost = _cost(vm, own, rule_for(vm.provider, rules), low, high, now)
            if cost is not None:
                found.append(cost)
    return found


def _cost(vm: LedgerVm, spans: Sequence[Span], rule: BillingRule, low: float, high: float,
          now: float) -> VmCost | None:
    """The VM's cost inside [low, high], or None when it billed nothing there. `spans` may hold its billed
    intervals only (a gap between two ends a run, as an unbilled interval does)."""
    billed = usd = 0.0
    priced = True
    run: list[Any] = []  # the open run: [start, end, price of its last interval]
    for start, ended, state, price in spans:
        end = max(start, now if ended is None else min(ended, now))
        if state not in rule.billed_states:
            if run:
                billed, usd, priced = _round(run, rule, low, high, billed, usd, priced)
                run = []
            continue
        if run and run[1] != start:  # a gap between two billed intervals ends the run
            billed, usd, priced = _round(run, rule, low, high, billed, usd, priced)
            run = []
        run = [run[0] if run else start, end, price]
        seconds = max(0.0, min(end, high) - max(start, low))
        billed += seconds
        usd += seconds * (price or 0.0) / 3600
        priced = priced and (price is not None or seconds == 0)
    if run:
        billed, usd, priced = _round(run, rule, low, high, billed, usd, priced)
    if billed <= 0:
        return None
    last_start, last_end, state, price = spans[-1]
    running = last_end is None and vm.closed_at is None and state in rule.billed_states
    return VmCost(vm, billed, usd, (price or 0.0) if running else 0.0, priced)


def _round(run: list[Any], rule: BillingRule, low: float, high: float, billed: float, usd: float,
           priced: bool) -> tuple[float, float, bool]:
    """`billed`, `usd` and `priced` with the rounding of a run ended (counted when it ends inside (low, high])."""
    start, end, price = run
    if not low < end <= high:
        return billed, usd, priced
    extra = billed_length(end - start, rule) - (end - start)
    if extra <= 0:
        return billed, usd, priced
    return billed + extra, usd + extra * (price or 0.0) / 3600, priced and price is not None


def billed_length(seconds: float, rule: BillingRule) -> float:
    """The seconds a run of `seconds` bills: rounded up to the rule's granularity, at least its minimum; 0 for no
    time at all."""
    if seconds <= 0:
        return 0.0
    step = rule.granularity_seconds
    rounded = math.ceil(seconds / step - _ROUNDING_SLACK / step) * step if step > 1 else seconds
    return float(max(rounded, seconds, rule.minimum_seconds))


# ------------------------------------------------------------------------------------------------- reading
def costs_in(store: Ledger, *, since: float | None, until: float | None, now: float,
             rules: Mapping[str, BillingRule], fleet: str | None = None) -> list[VmCost]:
    """The cost of every ledger VM (of `fleet` only, if given) that billed time inside [since, until]. From a SQL
    store four queries whatever the number of VMs (spend/cost_sql.py; a run that began before `since` is rounded from
    its start); from another Ledger its `ledger_vms` and `ledger_intervals`. Calls no cloud."""
    if isinstance(store, LedgerStore):
        from .cost_sql import sql_costs

        return sql_costs(store, since=since, until=until, now=now, rules=rules, fleet=fleet)
    vms = [vm for vm in store.ledger_vms() if fleet is None or vm.fleet == fleet]
    return vm_costs(vms, store.ledger_intervals(), since=since, until=until, now=now, rules=rules)


def fleet_spend(store: Ledger, fleet: str, *, now: float, rules: Mapping[str, BillingRule]) -> Spend:
    """What the ledger VMs of `fleet` (by name) have cost since they were created and bill per hour now."""
    costs = costs_in(store, since=None, until=None, now=now, rules=rules, fleet=fleet)
    return Spend(sum(c.accrued_usd for c in costs), sum(c.rate_per_hour for c in costs), len(costs))


def vm_cost(store: Ledger, key: Key, *, now: float, rules: Mapping[str, BillingRule]) -> VmCost | None:
    """The cost of one ledger VM since it was created (None: the ledger does not know it)."""
    if isinstance(store, LedgerStore):
        from .cost_sql import sql_costs

        found = sql_costs(store, since=None, until=None, now=now, rules=rules, key=key)
    else:
        found = [c for c in costs_in(store, since=None, until=None, now=now, rules=rules) if c.vm.key == key]
    if found:
        return found[0]
    known = [vm for vm in store.ledger_vms() if vm.key == key]
    return VmCost(known[0], 0.0, 0.0, 0.0, True) if known else None
