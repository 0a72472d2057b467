"""Every VM of the accounts, accounted for (`vm audit`): each is a fleet member vm recorded, a VM vm created
(the spend ledger says who), a VM that carries a recorded fleet's id without being its member (`vm fleet
reconcile` adopts it: fleet.strays), or not vm's. Pure: the caller reads the clouds and the store.

Ownership by fleet id is proven as fleet.naming.FleetIdentity.claim proves it (the id in the name, or in the
`vm-fleet-id` label where the cloud has labels); a name that merely resembles a fleet's proves nothing.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..fleet.naming import FleetIdentity
from ..model import Instance
from .ledger import LedgerVm


class Owner(enum.StrEnum):
    """Whose a VM is, as `vm audit` classifies it."""

    FLEET = "fleet"  # a member of a recorded fleet
    CREATED = "created"  # vm created it (`vm create`, or a fleet that released it): in the spend ledger
    ADOPTABLE = "adoptable"  # carries a recorded fleet's id, but no member record has it
    OTHER = "other"  # not vm's: made in the console, by another tool, or by a vm of another store


@dataclass(frozen=True, slots=True)
class StoreFacts:
    """What the store says: the fleet of each recorded member's VM by (provider, instance id), the identity of
    each recorded fleet, and the ledger's VMs by (provider, instance id)."""

    members: Mapping[tuple[str, str], str]
    fleets: Sequence[FleetIdentity]
    ledger: Mapping[tuple[str, str], LedgerVm]


@dataclass(frozen=True, slots=True)
class AuditedVm:
    """One VM and whose it is: `fleet` is its fleet (a member's, the fleet whose id it carries, or the fleet that
    created it), `created_by` user@host from the ledger ("" where vm does not know)."""

    instance: Instance
    owner: Owner
    fleet: str = ""
    created_by: str = ""

    @property
    def rate_per_hour(self) -> float | None:
        """What it bills per hour now: None when it is not running (not billed) or its price is unknown."""
        return self.instance.running_price


@dataclass(frozen=True, slots=True)
class Total:
    """The VMs of one class: how many, how many of them bill now, and their rate ($/h) where known; `unpriced`
    counts running VMs whose price vm does not know (left out of `rate_per_hour`)."""

    owner: Owner
    vms: int
    running: int
    rate_per_hour: float
    unpriced: int


def classify(instance: Instance, facts: StoreFacts) -> AuditedVm:
    """Whose `instance` is: a recorded member first, then a claim by a recorded fleet's id, then the ledger."""
    key = (instance.provider, instance.id)
    entry = facts.ledger.get(key)
    created_by = entry.created_by if entry else ""
    if key in facts.members:
        return AuditedVm(instance, Owner.FLEET, facts.members[key], created_by)
    claimant = next((f for f in facts.fleets if f.claim(instance) is not None), None)
    if claimant is not None:
        return AuditedVm(instance, Owner.ADOPTABLE, claimant.fleet, created_by)
    if entry is not None:
        return AuditedVm(instance, Owner.CREATED, entry.fleet, created_by)
    return AuditedVm(instance, Owner.OTHER)


def audit(instances: Iterable[Instance], facts: StoreFacts) -> list[AuditedVm]:
    """Every live VM of `instances` classified, by class, provider and name."""
    found = [classify(i, facts) for i in instances if not i.state.gone]
    order = list(Owner)
    return sorted(found, key=lambda v: (order.index(v.owner), v.instance.provider, v.instance.name, v.instance.id))


def totals(vms: Sequence[AuditedVm]) -> list[Total]:
    """One Total per class, every class (zero VMs included), in class order."""
    result = []
    for owner in Owner:
        mine = [v for v in vms if v.owner is owner]
        billing = [v for v in mine if not v.instance.state.not_billed]
        result.append(Total(owner, len(mine), len(billing), sum((v.rate_per_hour or 0.0 for v in billing), 0.0),
                            sum(v.rate_per_hour is None for v in billing)))
    return result
