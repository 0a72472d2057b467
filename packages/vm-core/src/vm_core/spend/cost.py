"""What the VMs of the spend ledger have cost: each VM's billed time and accrued USD by its cloud's BillingRule
(spend/rules.py), and what it bills per hour now. Estimates by list price (docs/billing.md): the ledger's
intervals are what vm saw, at the price vm knew.

The arithmetic (`vm_costs`, pure; in spend/arithmetic.py, exported here):

* only the time in the rule's `billed_states` bills; an open interval ends at `now`, and nothing is counted
  after `now`;
* consecutive billed intervals of a VM (each beginning where the previous one ends) form one *run*; a run's
  seconds are rounded up to a whole number of `granularity_seconds`, and to at least `minimum_seconds` (a run
  of no time at all bills nothing);
* each interval costs its seconds inside [since, until] times its price / 3600; a run's rounding (the seconds
  it is rounded up by) costs the price of its last interval and counts in the window where the run ends
  (since < end <= until), so splitting a period into windows never counts it twice;
* an interval without a price (None) counts its time at 0 USD and makes the VM not `priced`;
* a VM that billed nothing in the period is left out.

Reading (`costs_in`, `fleet_spend`, `vm_cost`) makes no query per VM (spend/cost_sql.py): bench/cost.py times it
on a store of 10,000 VMs and 100,000 intervals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .arithmetic import Key, Span, VmCost, billed_length, costs_of, rule_for, vm_costs
from .ledger import LedgerStore
from .rules import BillingRule

if TYPE_CHECKING:
    from ..plugins import LoadedPlugin
    from .ledger import Ledger

__all__ = ["Key", "Span", "Spend", "VmCost", "billed_length", "costs_in", "costs_of", "fleet_spend", "rule_for",
           "rules_of", "vm_cost", "vm_costs"]


@dataclass(frozen=True, slots=True)
class Spend:
    """What a fleet has cost so far (`accrued_usd`), what it bills per hour now, and over how many VMs."""

    accrued_usd: float
    rate_per_hour: float
    vms: int

def rules_of(plugins: Mapping[str, LoadedPlugin]) -> dict[str, BillingRule]:
    """Each provider plugin's `billing` fact by name (DEFAULT for a plugin that declares none)."""
    return {name: plugin.billing for name, plugin in plugins.items()}

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
