"""The pure arithmetic of accrued cost (what spend/cost.py exports, and spend/cost_sql.py uses): each VM's billed
time and USD from its intervals by its cloud's BillingRule; the rules are in spend/cost.py's docstring."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .ledger import Interval, LedgerVm
from .rules import DEFAULT, BillingRule

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
