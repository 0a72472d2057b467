"""spend/cost.py's arithmetic read from a SQL fleet store (LedgerStore) in three queries, whatever the number of
VMs: the VMs; for the clouds whose rule bills per second with no minimum, each VM's sums computed by the
database (one row per VM); for the clouds whose rule rounds runs, their intervals, costed in Python (cost.costs_of).
The SQL is the shared dialect of both backends (CASE, not LEAST/GREATEST; `?` placeholders).
tests/test_spend_cost*.py check that both give what the pure `vm_costs` gives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .cost import Key, Span, VmCost, costs_of, rule_for
from .ledger import LedgerStore, LedgerVm, Pricing
from .rules import BillingRule

_PRICING = {p.value: p for p in Pricing}
_NEVER = -1.0e18  # the start of a period without one (no ledger time is earlier)
_VM_SQL = ("SELECT provider, account, instance_id, name, shape, region, gpu, gpu_count, pricing, reservation_id,"
           " fleet, fleet_id, profile, created_by, created_at, closed_at FROM ledger_vms v")
_SPAN_SQL = ("SELECT i.provider, i.account, i.instance_id, i.started_at, i.ended_at, i.state, i.price_per_hour"
             " FROM ledger_intervals i JOIN ledger_vms v"
             " ON v.provider = i.provider AND v.account = i.account AND v.instance_id = i.instance_id")
_SPAN_SQL_ALL = ("SELECT i.provider, i.account, i.instance_id, i.started_at, i.ended_at, i.state, i.price_per_hour"
                 " FROM ledger_intervals i")
_SPAN_ORDER = " ORDER BY i.provider, i.account, i.instance_id, i.started_at"
# Per interval: st (start), en (end: `now` for an open one, never after now nor before st), b (1: a billed state
# of its cloud), open_ and price; then its span inside [low, high] and whether it is inside. The open interval is
# read whatever the period: it gives the rate billed now. The three times are float literals (written by
# `_literal`, so nothing but a number enters the SQL), which keeps the statement one flat aggregate.
_PER_VM_SQL = """
SELECT provider, account, instance_id,
       SUM(CASE WHEN b = 1 AND {span} > 0 THEN {span} ELSE 0 END),
       SUM(CASE WHEN b = 1 AND {span} > 0 THEN {span} * COALESCE(price, 0) ELSE 0 END),
       MAX(CASE WHEN b = 1 AND {span} > 0 AND price IS NULL THEN 1 ELSE 0 END),
       MAX(CASE WHEN b = 1 AND open_ = 1 THEN COALESCE(price, 0) ELSE 0 END),
       MAX(CASE WHEN (st < {high} AND en > {low}) OR (st = en AND st >= {low} AND st <= {high}) THEN 1 ELSE 0 END)
FROM (SELECT i.provider, i.account, i.instance_id, i.started_at AS st, i.price_per_hour AS price,
             CASE WHEN i.ended_at IS NULL THEN 1 ELSE 0 END AS open_,
             CASE WHEN i.ended_at IS NULL OR i.ended_at > {now}
                  THEN (CASE WHEN i.started_at > {now} THEN i.started_at ELSE {now} END)
                  ELSE (CASE WHEN i.ended_at < i.started_at THEN i.started_at ELSE i.ended_at END) END AS en,
             CASE WHEN {billed} THEN 1 ELSE 0 END AS b
      FROM ledger_intervals i
      WHERE {providers} AND (i.ended_at IS NULL OR (i.started_at <= {high} AND i.ended_at >= {low}))) AS t
GROUP BY provider, account, instance_id
"""
_SPAN = "((CASE WHEN en < {high} THEN en ELSE {high} END) - (CASE WHEN st > {low} THEN st ELSE {low} END))"


def _literal(value: float) -> str:
    """A finite float as a SQL numeric literal."""
    return repr(float(value))


def sql_costs(store: LedgerStore, *, since: float | None, until: float | None, now: float,
              rules: Mapping[str, BillingRule], fleet: str | None = None,
              key: Key | None = None) -> list[VmCost]:
    """cost.costs_in for a SQL store (of one VM only, with `key`), in the order the VMs were read."""
    where, params = _vm_filter(since, until, fleet, key)
    vms = [_vm_of(row) for row in store._read(_VM_SQL + where, params)]  # the ledger's own reader
    providers = sorted({vm.provider for vm in vms})
    rounding = [p for p in providers if _rounds(rule_for(p, rules))]
    summed = [p for p in providers if p not in rounding]
    found: dict[Key, VmCost] = {}
    keys = [vm.key for vm in vms]
    by_key = dict(zip(keys, vms, strict=True))
    if summed:
        found.update(_summed(store, by_key, summed, rules, since, until, now))
    if rounding:
        spans = _spans(store, rounding, where if fleet is not None or key is not None else "", params)
        chosen = [vm for vm in vms if vm.provider in rounding]
        found.update((c.vm.key, c) for c in costs_of(chosen, spans, since=since, until=until, now=now, rules=rules))
    return [found[k] for k in keys if k in found]


def _spans(store: LedgerStore, providers: Sequence[str], where: str,
           params: tuple[Any, ...]) -> dict[Key, list[Span]]:
    """Every interval of the VMs of `providers` (those `where` selects, if given: without it, reading them all
    and leaving the VMs not asked for unused is cheaper than the join), each VM's in start order."""
    marks = ", ".join("?" * len(providers))
    if where:
        sql = f"{_SPAN_SQL}{where} AND i.provider IN ({marks}){_SPAN_ORDER}"
    else:
        sql, params = f"{_SPAN_SQL_ALL} WHERE i.provider IN ({marks}){_SPAN_ORDER}", ()
    spans: dict[Key, list[Span]] = {}
    for provider, account, instance_id, started, ended, state, price in store._read(sql, (*params, *providers)):
        spans.setdefault((provider, account, instance_id), []).append((started, ended, state, price))
    return spans


def _rounds(rule: BillingRule) -> bool:
    return rule.granularity_seconds > 1 or rule.minimum_seconds > 0


def _summed(store: LedgerStore, vms: Mapping[Key, LedgerVm], providers: Sequence[str],
            rules: Mapping[str, BillingRule], since: float | None, until: float | None,
            now: float) -> dict[Key, VmCost]:
    """The cost of each VM of `providers` (per-second clouds) with time in the period, summed by the database."""
    billed, params = [], []
    for provider in providers:
        states = sorted(rule_for(provider, rules).billed_states) or [""]
        billed.append(f"(i.provider = ? AND i.state IN ({', '.join('?' * len(states))}))")
        params += [provider, *states]
    low = _NEVER if since is None else since
    high = now if until is None else min(until, now)
    times = {"now": _literal(now), "low": _literal(low), "high": _literal(high)}
    sql = _PER_VM_SQL.format(span=_SPAN.format(**times), billed=" OR ".join(billed),
                             providers=f"i.provider IN ({', '.join('?' * len(providers))})", **times)
    found = {}
    for provider, account, instance_id, seconds, usd_seconds, unpriced, rate, inside in store._read(
            sql, (*params, *providers)):
        vm = vms.get((provider, account, instance_id))
        if vm is None or not (inside or seconds):
            continue
        found[vm.key] = VmCost(vm, float(seconds), float(usd_seconds) / 3600, float(rate) if vm.closed_at is None
                               else 0.0, not unpriced)
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


def _vm_of(row: Sequence[Any]) -> LedgerVm:
    (provider, account, instance_id, name, shape, region, gpu, gpu_count, pricing, reservation_id, fleet, fleet_id,
     profile, created_by, created_at, closed_at) = row
    return LedgerVm(provider, account, instance_id, name, shape, region, gpu, gpu_count, _PRICING[pricing],
                    reservation_id, fleet, fleet_id, profile, created_by, created_at, closed_at)
