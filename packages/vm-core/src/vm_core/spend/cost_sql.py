"""spend/cost.py's arithmetic read from a SQL fleet store (LedgerStore) in four queries, whatever the number of
VMs: the VMs; for the clouds whose rule bills per second with no minimum, each VM's sums over its billed intervals
computed by the database (one row per VM), and the rate of the VMs whose open interval began after the period;
for the clouds whose rule rounds runs, their billed intervals, costed in Python (cost.costs_of). The SQL is the
shared dialect of both backends (CASE, not LEAST/GREATEST; `?` placeholders). tests/test_spend_cost.py checks
that this gives what the pure `vm_costs` gives, on ledgers the store itself wrote.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .arithmetic import Key, Span, VmCost, costs_of, rule_for
from .ledger import VM_COLUMNS, LedgerStore, LedgerVm, vm_from_row
from .rules import BillingRule

_NEVER = -1.0e18  # the start of a period without one (no ledger time is earlier)
_VM_SQL = f"SELECT {', '.join(VM_COLUMNS)} FROM ledger_vms v"
_SPAN_SQL = ("SELECT i.provider, i.account, i.instance_id, i.started_at, i.ended_at, i.state, i.price_per_hour"
             " FROM ledger_intervals i JOIN ledger_vms v"
             " ON v.provider = i.provider AND v.account = i.account AND v.instance_id = i.instance_id")
_SPAN_SQL_ALL = ("SELECT i.provider, i.account, i.instance_id, i.started_at, i.ended_at, i.state, i.price_per_hour"
                 " FROM ledger_intervals i")
_SPAN_ORDER = " ORDER BY i.provider, i.account, i.instance_id, i.started_at"
# The billed intervals of the per-second clouds' VMs that overlap [low, high] summed by VM: their seconds inside
# it, those seconds times their price, whether one had no price, the price of the open one (the rate billed
# now). `high` is never later than now, so an interval's end inside the period is min(ended_at, high) (an open
# one: high). Only billed intervals of the period are read, each expression evaluated about once per row: one
# flat aggregate. The times are float literals (written by `_literal`, so nothing but a number enters the SQL).
_PER_VM_SQL = """
SELECT provider, account, instance_id, SUM({span}), SUM({span} * COALESCE(price_per_hour, 0)),
       MAX(CASE WHEN price_per_hour IS NULL AND {span} > 0 THEN 1 ELSE 0 END),
       MAX(CASE WHEN ended_at IS NULL THEN COALESCE(price_per_hour, 0) ELSE 0 END)
FROM ledger_intervals i
WHERE i.provider IN ({providers}) AND ({billed})
  AND i.started_at < {high} AND (i.ended_at IS NULL OR i.ended_at > {low})
GROUP BY provider, account, instance_id
"""
_SPAN = ("((CASE WHEN ended_at IS NULL OR ended_at > {high} THEN {high} ELSE ended_at END)"
         " - (CASE WHEN started_at > {low} THEN started_at ELSE {low} END))")
# The open billed intervals that began at or after `high` (none unless the period ended before now): the rate
# billed now of the VMs whose open interval the sums did not read (found through the index on started_at).
_OPEN_SQL = ("SELECT provider, account, instance_id, price_per_hour FROM ledger_intervals i"
             " WHERE i.started_at >= {high} AND i.ended_at IS NULL AND i.provider IN ({providers}) AND ({billed})")


def _literal(value: float) -> str:
    """A finite float as a SQL numeric literal."""
    return repr(float(value))


def sql_costs(store: LedgerStore, *, since: float | None, until: float | None, now: float,
              rules: Mapping[str, BillingRule], fleet: str | None = None,
              key: Key | None = None) -> list[VmCost]:
    """cost.costs_in for a SQL store (of one VM only, with `key`), in the order the VMs were read."""
    where, params = _vm_filter(since, until, fleet, key)
    vms = [vm_from_row(row) for row in store._read(_VM_SQL + where, params)]  # the ledger's own reader
    providers = sorted({vm.provider for vm in vms})
    rounding = [p for p in providers if _rounds(rule_for(p, rules))]
    summed = [p for p in providers if p not in rounding]
    found: dict[Key, VmCost] = {}
    keys = [vm.key for vm in vms]
    by_key = dict(zip(keys, vms, strict=True))
    if summed:
        found.update(_summed(store, by_key, summed, rules, since, until, now))
    if rounding:
        spans = _spans(store, rounding, rules, where if fleet is not None or key is not None else "", params)
        chosen = [vm for vm in vms if vm.provider in rounding]
        found.update((c.vm.key, c) for c in costs_of(chosen, spans, since=since, until=until, now=now, rules=rules))
    return [found[k] for k in keys if k in found]


def _spans(store: LedgerStore, providers: Sequence[str], rules: Mapping[str, BillingRule], where: str,
           params: tuple[Any, ...]) -> dict[Key, list[Span]]:
    """Every billed interval of the VMs of `providers` (those `where` selects, if given: without it, reading them
    all and leaving the VMs not asked for unused is cheaper than the join), each VM's in start order. The store
    keeps a VM's intervals end to end (no interval of no time between two), so two billed intervals are one run
    exactly when one ends where the next begins (cost._cost)."""
    billed, billed_params = _billed(providers, rules)
    if where:
        sql = f"{_SPAN_SQL}{where} AND ({billed}){_SPAN_ORDER}"
    else:
        sql, params = f"{_SPAN_SQL_ALL} WHERE ({billed}){_SPAN_ORDER}", ()
    spans: dict[Key, list[Span]] = {}
    for provider, account, instance_id, started, ended, state, price in store._read(sql, (*params, *billed_params)):
        spans.setdefault((provider, account, instance_id), []).append((started, ended, state, price))
    return spans


def _billed(providers: Sequence[str], rules: Mapping[str, BillingRule]) -> tuple[str, list[str]]:
    """The condition (over ledger_intervals `i`) of an interval in a billed state of its cloud, one of
    `providers`, and its parameters."""
    clauses, params = [], []
    for provider in providers:
        states = sorted(rule_for(provider, rules).billed_states) or [""]
        clauses.append(f"(i.provider = ? AND i.state IN ({', '.join('?' * len(states))}))")
        params += [provider, *states]
    return " OR ".join(clauses), params


def _rounds(rule: BillingRule) -> bool:
    return rule.granularity_seconds > 1 or rule.minimum_seconds > 0


def _summed(store: LedgerStore, vms: Mapping[Key, LedgerVm], providers: Sequence[str],
            rules: Mapping[str, BillingRule], since: float | None, until: float | None,
            now: float) -> dict[Key, VmCost]:
    """The cost of each VM of `providers` (per-second clouds) that billed time in the period, summed by the
    database."""
    billed, params = _billed(providers, rules)
    low = _NEVER if since is None else since
    high = now if until is None else min(until, now)
    times = {"low": _literal(low), "high": _literal(high)}
    marks = ", ".join("?" * len(providers))
    sql = _PER_VM_SQL.format(span=_SPAN.format(**times), providers=marks, billed=billed, **times)
    rows = store._read(sql, (*providers, *params))
    later = _OPEN_SQL.format(providers=marks, billed=billed, **times)
    rates = {(p, a, i): float(price or 0.0) for p, a, i, price in store._read(later, (*providers, *params))}
    found = {}
    for provider, account, instance_id, seconds, usd_seconds, unpriced, rate in rows:
        vm = vms.get((provider, account, instance_id))
        if vm is None or not seconds or seconds <= 0:
            continue
        now_rate = rates.get(vm.key, float(rate)) if vm.closed_at is None else 0.0
        found[vm.key] = VmCost(vm, float(seconds), float(usd_seconds) / 3600, now_rate, not unpriced)
    return found


def _vm_filter(since: float | None, until: float | None, fleet: str | None,
               key: Key | None) -> tuple[str, tuple[Any, ...]]:
    """The WHERE clause over ledger_vms `v` of the VMs that may have time in the period: not gone before it, not
    created after it (and of `fleet`, or the VM `key`)."""
    clauses: list[str] = []
    params: list[Any] = []
    if since is not None:
        clauses.append("(v.closed_at IS NULL OR v.closed_at >= ?)")
        params.append(since)
    if until is not None:
        clauses.append("v.created_at <= ?")
        params.append(until)
    if fleet is not None:
        clauses.append("v.fleet = ?")
        params.append(fleet)
    if key is not None:
        clauses.append("v.provider = ? AND v.account = ? AND v.instance_id = ?")
        params += key
    return (f" WHERE {' AND '.join(clauses)}" if clauses else ""), tuple(params)

