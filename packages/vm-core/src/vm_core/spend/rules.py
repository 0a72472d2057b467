"""How each cloud turns a VM's life into billed time: the rules `vm cost` estimates by (docs/billing.md has
each rule's sources and what is inferred).

A rule is applied to a VM's intervals (state, start, end, price per hour in force) like this:

* only the time spent in `billed_states` bills (states are `vm_core.model.InstanceState` values);
* consecutive billed intervals form one *run* (from entering a billed state to leaving them all); a run's
  seconds are rounded up to a whole number of `granularity_seconds`, and to at least `minimum_seconds`;
* each interval costs its seconds times its price per hour / 3600; the seconds a run is rounded up by cost the
  price of the run's last interval.

The mock clouds bill by the same rules (mock_clouds/core/billing.py; a mock-clouds test compares the two).
Pure data: no imports beyond the standard library.
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


CRUSOE = BillingRule(
    granularity_seconds=1,
    minimum_seconds=0,
    billed_states=frozenset({"running"}),
    stopped_disks_bill=True,
    source="support.crusoecloud.com/hc/en-us/articles/48176498638235 (only RUNNING bills);"
           " docs.crusoecloud.com/usage-billing/viewing-usage (instance hours; disks in GiB hours)",
    note="Crusoe publishes no rounding: usage is reported in fractional instance hours, so per second is"
         " assumed. Starting, stopping, error and initializing do not bill.",
)

LAMBDA = BillingRule(
    granularity_seconds=60,
    minimum_seconds=60,
    billed_states=frozenset({"running", "rebooting"}),
    stopped_disks_bill=False,
    source="docs.lambda.ai/public-cloud/billing (hourly prices billed in one-minute increments, from passing"
           " health checks until terminate)",
    note="A started minute is assumed to bill whole. A restart does not end billing (the instance is not"
         " terminated). Lambda instances cannot be stopped, so no stopped disks; filesystems bill while they exist.",
)

NEBIUS = BillingRule(
    granularity_seconds=1,
    minimum_seconds=0,
    billed_states=frozenset({"running", "rebooting", "stopping"}),
    stopped_disks_bill=True,
    source="docs.nebius.com/legal/specific-terms/compute 2.3-2.4 (from start to a complete stop; disks bill"
           " whether or not the VM runs); docs.nebius.com/object-storage/resources/pricing (GPUs on running VMs:"
           " billing unit 1 second)",
    note="'To a complete stop' is read as: stopping bills, starting does not. Spot (preemptible) VMs bill at the"
         " spot price by the same rule.",
)

DEFAULT = BillingRule(
    granularity_seconds=1,
    minimum_seconds=0,
    billed_states=frozenset({"running"}),
    stopped_disks_bill=True,
    source="vm's assumption for a cloud without a built-in rule",
    note="Per second, running only: the most common rule among GPU clouds, and the least surprising estimate.",
)
"""The rule of a provider vm has no built-in rule for (e.g. a third-party plugin's cloud)."""

RULES: dict[str, BillingRule] = {"crusoe": CRUSOE, "lambda": LAMBDA, "nebius": NEBIUS}
"""The built-in rules by provider name; `RULES.get(name, DEFAULT)`."""
