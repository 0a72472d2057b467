"""The billing rules of the built-in clouds (each plugin's `billing` fact; spend/rules.py says how a rule is
applied, docs/billing.md gives each rule's sources and what is inferred). Pure data."""

from __future__ import annotations

from ..spend.rules import BillingRule

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


RULES: dict[str, BillingRule] = {"crusoe": CRUSOE, "lambda": LAMBDA, "nebius": NEBIUS}
"""The built-in rules by provider name (what the mock clouds' rules are compared with)."""
