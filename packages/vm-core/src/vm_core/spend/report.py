"""VM costs (spend/cost.py) grouped as `vm cost --by` groups them, and the period a report covers by default.

A row sums its VMs: `vms` (how many billed time in the period), `gpu_hours` (billed hours times each VM's GPU
count), `billed_hours`, `accrued_usd`, `rate_per_hour` (what they bill per hour now) and `priced` (False when
some billed time had no known price, counted at 0 USD).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .cost import VmCost
from .ledger import LedgerVm

ESTIMATE = ("estimates by list price from what vm saw of each VM, by each cloud's billing rule (docs/billing.md);"
            " disks, storage and network are not counted")

_KEYS: dict[str, Callable[[LedgerVm], str]] = {
    "fleet": lambda vm: vm.fleet,
    "user": lambda vm: vm.created_by,
    "provider": lambda vm: vm.provider,
    "profile": lambda vm: vm.profile,
    "vm": lambda vm: f"{vm.provider}/{vm.instance_id}",
}
GROUPINGS = tuple(_KEYS)
"""What `--by` takes: fleet ('' for single VMs), user (user@host that created it), provider, profile, vm
(provider/instance id)."""


@dataclass(frozen=True, slots=True)
class CostRow:
    """One group's sums (see the module's docstring); `group` is '' for single VMs when grouped by fleet."""

    group: str
    vms: int
    gpu_hours: float
    billed_hours: float
    accrued_usd: float
    rate_per_hour: float
    priced: bool

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "vms": self.vms, "gpu_hours": round(self.gpu_hours, 6),
                "billed_hours": round(self.billed_hours, 6), "accrued_usd": round(self.accrued_usd, 6),
                "rate_per_hour": round(self.rate_per_hour, 6), "priced": self.priced}


def group_costs(costs: Iterable[VmCost], by: str) -> tuple[list[CostRow], CostRow]:
    """The rows of `costs` grouped `by` one of GROUPINGS (most accrued first, then by group), and their total
    (group ''). Raises KeyError for another grouping (the API checks it first)."""
    key = _KEYS[by]
    groups: dict[str, list[VmCost]] = {}
    every = list(costs)
    for cost in every:
        groups.setdefault(key(cost.vm), []).append(cost)
    rows = [_row(name, members) for name, members in groups.items()]
    rows.sort(key=lambda row: (-row.accrued_usd, row.group))
    return rows, _row("", every)


def _row(group: str, costs: list[VmCost]) -> CostRow:
    if len(costs) == 1:  # --by vm: a row per VM, 10,000 of them on a large ledger
        [c] = costs
        return CostRow(group, 1, c.billed_seconds * c.vm.gpu_count / 3600, c.billed_seconds / 3600, c.accrued_usd,
                       c.rate_per_hour, c.priced)
    billed = sum((c.billed_seconds for c in costs), 0.0)
    gpu = sum((c.billed_seconds * c.vm.gpu_count for c in costs), 0.0)
    return CostRow(group, len(costs), gpu / 3600, billed / 3600, sum((c.accrued_usd for c in costs), 0.0),
                   sum((c.rate_per_hour for c in costs), 0.0), all(c.priced for c in costs))


def month_start(now: float) -> float:
    """Midnight UTC of the first day of the month `now` is in: where a report begins by default."""
    day = dt.datetime.fromtimestamp(now, dt.UTC)
    return day.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp()


def iso(at: float) -> str:
    """An epoch time as ISO 8601 in UTC, to the second ("2026-12-01T00:00:00Z")."""
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
