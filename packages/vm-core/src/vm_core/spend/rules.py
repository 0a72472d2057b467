"""How each cloud turns a VM's life into billed time: the rules `vm cost` estimates by (docs/billing.md has
each rule's sources and what is inferred).

A rule is applied to a VM's intervals (state, start, end, price per hour in force) like this:

* only the time spent in `billed_states` bills (states are `vm_core.model.InstanceState` values);
* consecutive billed intervals form one *run* (from entering a billed state to leaving them all); a run's
  seconds are rounded up to a whole number of `granularity_seconds`, and to at least `minimum_seconds`;
* each interval costs its seconds times its price per hour / 3600; the seconds a run is rounded up by cost the
  price of the run's last interval.

The built-in clouds' rules are their plugins' facts (vm_core.providers.billing_rules: CRUSOE, LAMBDA, NEBIUS; a
plugin declares `billing`); DEFAULT is the rule of a plugin that declares none. The mock clouds bill by the same
rules (mock_clouds/core/billing.py; a mock-clouds test compares the two). Pure data: standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BillingRule:
    """One cloud's billing of a VM's compute.

    `granularity_seconds`: the billing unit (1 = per second, 60 = per started minute); `minimum_seconds`: the
    least a run is billed (0 = no minimum); `billed_states`: the states whose time bills; `stopped_disks_bill`:
    whether a stopped VM's disks keep billing (vm does not estimate disks: said, not counted); `source`: where
    the rule comes from; `note`: what is inferred rather than published."""

    granularity_seconds: int
    minimum_seconds: int
    billed_states: frozenset[str]
    stopped_disks_bill: bool
    source: str
    note: str


DEFAULT = BillingRule(
    granularity_seconds=1,
    minimum_seconds=0,
    billed_states=frozenset({"running"}),
    stopped_disks_bill=True,
    source="vm's assumption for a cloud without a built-in rule",
    note="Per second, running only: the most common rule among GPU clouds, and the least surprising estimate.",
)
"""The rule of a provider vm has no built-in rule for (e.g. a third-party plugin's cloud)."""
