"""What each mock cloud would bill (mock extension): every VM's billing log and the cloud's billing rule.

The world notes a VM's state, pricing and price per hour whenever one of them changes (`note`, called by
`World`), at the world time of the change, in `WorldState.billing` (persisted, and kept 31 days of wall time
after the VM is deleted, long after the VM itself is purged). `report` turns the logs into what each cloud would
bill, by that cloud's rule (`RULES`, the same numbers as vm's `vm_core.providers.billing_rules`; docs/billing.md
has their sources):

* only time in a rule's billed states bills; consecutive billed intervals form a run, whose seconds are rounded
  up to the rule's granularity (and minimum); each interval costs seconds x price / 3600, and the rounding the
  price of the run's last interval;
* pricing: "reservation" while the VM holds GPUs of a reservation (priced GPUs x the reservation's price per
  GPU-hour), "spot" for a Nebius preemptible VM (the calculator's spot price), else "on-demand" (list price);
* reservations (Crusoe reservations, Lambda reserved capacity, Nebius capacity blocks) bill their whole capacity
  whether used or not, from the later of their start and the world's first start until their end: separate
  lines, prorated per second (the real contracts bill per their terms). The VM lines' reservation share is what
  that capacity was used for, not billed again (`billed_usd` counts it once, in the reservation lines).

None of the three real clouds serves a per-VM usage API of this shape (Nebius exports FOCUS CSV archives through
`billing.v1alpha1.OneTimeExportService`; Crusoe's usage export is per organization, daily): this is the mocks'
own ground truth, served by the admin API (`GET /billing`) and `mock-clouds billing`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from .models import VM, BillingEntry, BillingRecord, Provider, Reservation, Shape, VMState, WorldState

if TYPE_CHECKING:
    from .world import World

SPOT_SHARE = Decimal("0.55")  # spot price / list price where the scenario gives none (nebius/billing.py says why)
ON_DEMAND, SPOT, RESERVATION = "on-demand", "spot", "reservation"
_EPSILON = 1e-6  # seconds: float noise that must not round a run up by a whole unit


@dataclass(frozen=True)
class Rule:
    """A cloud's billing of VM compute; equal to vm_core.providers.billing_rules (states there are vm's: deleting is
    "terminating")."""

    granularity_seconds: int
    minimum_seconds: int
    billed_states: frozenset[VMState]
    stopped_disks_bill: bool


RULES: dict[Provider, Rule] = {
    Provider.CRUSOE: Rule(1, 0, frozenset({VMState.RUNNING}), True),
    Provider.LAMBDA: Rule(60, 60, frozenset({VMState.RUNNING, VMState.REBOOTING}), False),
    Provider.NEBIUS: Rule(1, 0, frozenset({VMState.RUNNING, VMState.REBOOTING, VMState.STOPPING}), True),
}


# ------------------------------------------------------------------------------------------------ prices
def list_price(shape: Shape) -> Decimal:
    """USD per hour on demand: the scenario's list price."""
    return Decimal(shape.price_cents_per_hour) / 100


def spot_price(world: World, provider: Provider, shape: Shape) -> Decimal:
    """USD per hour for a spot VM: `[<provider>.extra] spot_prices` where given, else SPOT_SHARE of list."""
    given = world.config(provider).extra.get("spot_prices", {})
    if isinstance(given, dict) and shape.key in given:
        return Decimal(str(given[shape.key]))
    return (list_price(shape) * SPOT_SHARE).quantize(Decimal("0.0001"))


def _pricing(world: World, vm: VM) -> tuple[str, Decimal, str, int]:
    """(pricing, USD per hour, reservation id, GPUs held of it) of `vm` now."""
    shape = world.shape(vm.provider, vm.shape)
    if shape is None:
        return ON_DEMAND, Decimal(0), "", 0
    res = world.reservation(vm.provider, vm.reservation_id) if vm.holds_capacity and vm.reservation_id else None
    if res is not None:
        return RESERVATION, Decimal(res.price_cents_per_gpu_hour) * shape.gpus / 100, res.id, shape.gpus
    if vm.spot:
        return SPOT, spot_price(world, vm.provider, shape), "", 0
    return ON_DEMAND, list_price(shape), "", 0


# ------------------------------------------------------------------------------------------------ the log
def note(world: World, vm: VM, at: float) -> None:
    """Log `vm`'s state and pricing from `at` on, when either differs from its last entry."""
    key = f"{vm.provider}:{vm.id}"
    record = world.state.billing.get(key)
    if record is None:
        record = BillingRecord(provider=vm.provider, id=vm.id, name=vm.name, scope=vm.scope, region=vm.region,
                               shape=vm.shape)
        world.state.billing[key] = record
    record.name, record.shape = vm.name, vm.shape
    pricing, price, reservation_id, gpus = _pricing(world, vm)
    entry = BillingEntry(at=at, state=vm.state, pricing=pricing, price_per_hour=str(price),
                         reservation_id=reservation_id, gpus=gpus)
    if record.entries:
        last = record.entries[-1]
        entry.at = max(at, last.at)
        if (last.state, last.pricing, last.price_per_hour, last.reservation_id) == \
                (entry.state, entry.pricing, entry.price_per_hour, entry.reservation_id):
            return
    record.entries.append(entry)


def purge(state: WorldState, cutoff: float) -> bool:
    """Forget the billing logs of VMs deleted before `cutoff` (world seconds); True when any were."""
    gone = [key for key, record in state.billing.items()
            if record.entries and record.entries[-1].state == VMState.DELETED and record.entries[-1].at < cutoff]
    for key in gone:
        del state.billing[key]
    return bool(gone)


# ------------------------------------------------------------------------------------------------ reports
@dataclass(frozen=True)
class Span:
    """One clipped interval of a billing log."""

    entry: BillingEntry
    start: float
    end: float
    open: bool  # the VM is still in it

    @property
    def seconds(self) -> float:
        return max(0.0, self.end - self.start)


def spans(record: BillingRecord, since: float, until: float) -> list[Span]:
    """The record's intervals clipped to [since, until]; a deleted VM's last entry ends its life."""
    found = []
    entries = record.entries
    for i, entry in enumerate(entries):
        if entry.state == VMState.DELETED:
            break
        end, is_open = (entries[i + 1].at, False) if i + 1 < len(entries) else (until, True)
        start, stop = max(entry.at, since), min(end, until)
        if stop > start or (is_open and entry.at <= until):
            found.append(Span(entry, start, max(start, stop), is_open))
    return found


def vm_line(record: BillingRecord, since: float, until: float) -> dict[str, object]:
    """One VM's bill over [since, until] by its cloud's rule."""
    rule = RULES[record.provider]
    clipped = spans(record, since, until)
    billed_seconds, cost, by_pricing = 0, Decimal(0), {ON_DEMAND: Decimal(0), SPOT: Decimal(0),
                                                       RESERVATION: Decimal(0)}
    for run in _runs(clipped, rule):
        seconds = sum(s.seconds for s in run)
        rounded = _rounded(seconds, rule)
        billed_seconds += rounded
        for span in run:
            by_pricing[span.entry.pricing] += Decimal(str(span.seconds)) * Decimal(span.entry.price_per_hour)
        last = run[-1].entry
        by_pricing[last.pricing] += Decimal(str(max(0.0, rounded - seconds))) * Decimal(last.price_per_hour)
    by_pricing = {k: v / 3600 for k, v in by_pricing.items()}
    cost = sum(by_pricing.values(), Decimal(0))
    latest = next((s.entry for s in reversed(clipped) if s.entry.state in rule.billed_states),
                  record.entries[-1] if record.entries else None)
    return {
        "provider": record.provider.value, "id": record.id, "name": record.name, "scope": record.scope,
        "region": record.region, "shape": record.shape,
        "pricing": latest.pricing if latest else ON_DEMAND,
        "reservation_id": latest.reservation_id if latest else "",
        "billed_seconds": billed_seconds, "cost_usd": _usd(cost),
        "cost_by_pricing_usd": {k: _usd(v) for k, v in by_pricing.items()},
        "intervals": [
            {"state": s.entry.state.value, "started_at": s.start, "ended_at": None if s.open else s.end,
             "pricing": s.entry.pricing, "reservation_id": s.entry.reservation_id,
             "price_per_hour": float(s.entry.price_per_hour), "billed": s.entry.state in rule.billed_states}
            for s in clipped
        ],
    }


def _runs(clipped: list[Span], rule: Rule) -> list[list[Span]]:
    """Maximal sequences of consecutive billed spans."""
    runs: list[list[Span]] = []
    current: list[Span] = []
    for span in clipped:
        if span.entry.state in rule.billed_states:
            current.append(span)
        elif current:
            runs.append(current)
            current = []
    return runs + ([current] if current else [])


def _rounded(seconds: float, rule: Rule) -> int:
    """A run's billed seconds: rounded up to the granularity, at least the minimum (0 for an empty run)."""
    if seconds <= 0:
        return 0
    units = math.ceil(max(0.0, seconds - _EPSILON) / rule.granularity_seconds) or 1
    return max(rule.minimum_seconds, units * rule.granularity_seconds)


def reservation_line(world: World, provider: Provider, res: Reservation, since: float,
                     until: float) -> dict[str, object]:
    """A reservation's bill over [since, until]: its whole capacity, used or not, and how much VMs used."""
    start = max(since, res.start or world.state.billing_since)
    end = min(until, res.end or until)
    seconds = max(0.0, end - start)
    used_gpu_seconds = 0.0
    vm_ids = []
    for record in world.state.billing.values():
        if record.provider != provider:
            continue
        held = sum(s.seconds * s.entry.gpus for s in spans(record, start, max(start, end))
                   if s.entry.reservation_id == res.id)
        if held > 0:
            used_gpu_seconds += held
            vm_ids.append(record.id)
    reserved_gpu_seconds = seconds * res.quantity
    price = Decimal(res.price_cents_per_gpu_hour) / 100
    idle = max(0.0, reserved_gpu_seconds - used_gpu_seconds)
    return {
        "provider": provider.value, "id": res.id, "name": res.name, "family": res.family,
        "quantity_gpus": res.quantity, "price_per_gpu_hour": float(price),
        "started_at": start, "ended_at": max(start, end),
        "reserved_gpu_hours": round(reserved_gpu_seconds / 3600, 6),
        "used_gpu_hours": round(used_gpu_seconds / 3600, 6), "idle_gpu_hours": round(idle / 3600, 6),
        "cost_usd": _usd(Decimal(str(reserved_gpu_seconds)) * price / 3600),
        "idle_cost_usd": _usd(Decimal(str(idle)) * price / 3600),
        "vm_ids": vm_ids,
    }


def report(world: World, provider: Provider | None = None, since: float | None = None,
           until: float | None = None) -> dict[str, object]:
    """GET /billing: every VM's bill and every reservation's, with totals, over [since, until] (world epoch
    seconds; default: from the beginning until now). Raises ValueError when until < since."""
    now = world.now()
    lo, hi = since if since is not None else 0.0, min(until, now) if until is not None else now
    if hi < lo:
        raise ValueError("until must not be before since")
    providers = [p for p in Provider if p in world.state.providers and (provider is None or p == provider)]
    records = sorted((r for r in world.state.billing.values() if r.provider in providers),
                     key=lambda r: (r.entries[0].at if r.entries else 0.0, r.id))
    vms = [line for line in (vm_line(r, lo, hi) for r in records) if line["intervals"]]
    reservations = [reservation_line(world, p, res, lo, hi) for p in providers
                    for res in world.config(p).reservations]
    return {
        "now": now, "since": lo, "until": hi,
        "rules": {p.value: _rule(RULES[p]) for p in providers},
        "vms": vms, "reservations": reservations,
        "totals": _totals(vms, reservations),
        "by_provider": {p.value: _totals([v for v in vms if v["provider"] == p.value],
                                         [r for r in reservations if r["provider"] == p.value])
                        for p in providers},
    }


def _totals(vms: list[dict[str, object]], reservations: list[dict[str, object]]) -> dict[str, object]:
    def total(rows: list[dict[str, object]], pick: str) -> float:
        return round(sum((_number(_at(r, pick)) for r in rows), 0.0), 6)

    on_demand, spot = total(vms, "cost_by_pricing_usd.on-demand"), total(vms, "cost_by_pricing_usd.spot")
    reserved = total(reservations, "cost_usd")
    return {
        "vms": len(vms), "billed_seconds": int(total(vms, "billed_seconds")), "cost_usd": total(vms, "cost_usd"),
        "on_demand_usd": on_demand, "spot_usd": spot,
        "reservation_usage_usd": total(vms, "cost_by_pricing_usd.reservation"),
        "reservations_usd": reserved, "reservations_idle_usd": total(reservations, "idle_cost_usd"),
        "billed_usd": round(on_demand + spot + reserved, 6),
    }


def _at(row: dict[str, object], path: str) -> object:
    value: object = row
    for part in path.split("."):
        assert isinstance(value, dict)
        value = value[part]
    return value


def _number(value: object) -> float:
    assert isinstance(value, int | float)
    return float(value)


def _rule(rule: Rule) -> dict[str, object]:
    return {"granularity_seconds": rule.granularity_seconds, "minimum_seconds": rule.minimum_seconds,
            "billed_states": sorted(s.value for s in rule.billed_states),
            "stopped_disks_bill": rule.stopped_disks_bill}


def _usd(value: Decimal) -> float:
    return float(round(value, 6))
