"""`vm cost`: what the VMs vm created cost, from the store's spend ledger alone. No provider is connected and no
cloud is called: the billing rules are the provider plugins' `billing` facts, read without connecting. Also the
accrued cost and running rate `vm get` and `vm fleet status` add to their reports."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from ..errors import UsageError, VmError
from ..plugins import LoadedPlugin

if TYPE_CHECKING:
    from ..fleet.store import FleetStore
    from ..session import Session
    from ..spend.rules import BillingRule
    from .client import Client
    from .fleet_reports import FleetStatus
    from .reports import CostReport, InstanceReport
    from .requests import CostRequest

T = TypeVar("T")


def cost_report(client: Client, request: CostRequest) -> CostReport:
    """The report of `request` at the time of the call. Raises UsageError for a grouping vm does not know or a
    period that ends before it begins (nothing is read then); ConfigError for an unusable store."""
    from ..fleet.location import existing_store
    from ..spend.cost import costs_in
    from ..spend.report import GROUPINGS, group_costs, iso, month_start
    from .reports import CostReport

    now = client.session.clock()
    if request.by not in GROUPINGS:
        raise UsageError(f"cannot group costs by {request.by!r}: by one of {', '.join(GROUPINGS)}")
    since = month_start(now) if request.since is None else request.since
    until = now if request.until is None else min(request.until, now)
    if since >= until:
        raise UsageError(f"the period from {iso(since)} to {iso(until)} is empty: since must be before until"
                         " (and before now)")
    store = existing_store(client.session)
    rules = billing_rules(client.session)
    costs = [] if store is None else costs_in(store, since=since, until=until, now=now, rules=rules)
    rows, total = group_costs(costs, request.by)
    return CostReport(since=since, until=until, now=now, by=request.by, since_default=request.since is None,
                      rows=rows, total=total)


def billing_rules(session: Session) -> dict[str, BillingRule]:
    """Each installed provider plugin's billing rule, disabled ones included (a VM recorded before its provider
    was disabled is still costed by its cloud's rule). Loads the plugins, never connects them."""
    from ..spend.cost import rules_of

    loaded = session.plugins.registry.load_all()
    return rules_of({name: plugin for name, plugin in loaded.items() if isinstance(plugin, LoadedPlugin)})


def with_vm_cost(client: Client, report: InstanceReport) -> InstanceReport:
    """`report` (vm get) with the VM's accrued cost and running rate when the ledger knows it (else as it was).
    Reads the store only; a store that cannot be read is warned about, never fails the verb."""
    from dataclasses import replace

    from ..spend.cost import vm_cost
    from ..spend.observe import account_of

    instance = report.instance
    try:
        account = account_of(client.session.provider(instance.provider))
        now, rules = client.session.clock(), billing_rules(client.session)
        cost = _read_store(client, lambda store: vm_cost(store, (instance.provider, account, instance.id),
                                                          now=now, rules=rules))
    except VmError as exc:
        client.warn(f"the accrued cost of {instance.id} is not shown: {exc.message}")
        return report
    if cost is None:
        return report
    return replace(report, accrued_usd=cost.accrued_usd, rate_per_hour=cost.rate_per_hour)


def with_fleet_spend(client: Client, report: FleetStatus) -> FleetStatus:
    """`report` (vm fleet status) with what the fleet's VMs have cost and bill per hour now, when the ledger
    knows some of them (else as it was). As `with_vm_cost` for a store that cannot be read."""
    from dataclasses import replace

    from ..spend.cost import fleet_spend

    name = report.view.fleet.name
    try:
        spend = _read_store(client, lambda store: fleet_spend(store, name, now=client.session.clock(),
                                                              rules=billing_rules(client.session)))
    except VmError as exc:
        client.warn(f"the accrued cost of fleet {name} is not shown: {exc.message}")
        return report
    if spend is None or not spend.vms:
        return report
    return replace(report, accrued_usd=spend.accrued_usd, rate_per_hour=spend.rate_per_hour)


def _read_store(client: Client, read: Callable[[FleetStore], T]) -> T | None:
    """`read` of the session's store; None when there is no store yet."""
    from ..fleet.location import existing_store

    store = existing_store(client.session)
    return None if store is None else read(store)
