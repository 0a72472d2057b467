"""What a fleet member's record change means for the spend ledger (written in the same store transaction)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .ledger import LedgerVm, Observation, Pricing, observe_in, record_vm_in

# A member state (fleet.store.MemberState value) -> the VM state the ledger records; states absent here (intent,
# failed, unknown) have no VM vm knows the id of.
_LEDGER_STATE = {"creating": "creating", "running": "running", "destroying": "terminating",
                 "destroyed": "terminated", "missing": "missing", "released": "released"}


@dataclass(frozen=True, slots=True)
class FleetFacts:
    """What the ledger keeps of a member's fleet."""

    name: str
    fleet_id: str
    profile: str
    created_by: str
    gpu: str
    gpu_count: int
    accounts: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class MemberFacts:
    """What the ledger keeps of one member record (fleet.store.MemberRecord)."""

    provider: str
    instance_id: str
    name: str
    shape: str
    region: str
    reservation_id: str
    spot: bool
    state: str
    price_per_hour: float | None
    at: float


def record_members_in(db: Any, fleet: FleetFacts, members: list[MemberFacts]) -> None:
    """Inside the store's transaction `db`: record each member that has an instance id (a VM vm created), and
    its state since `at`. A member vm does not know the VM of (intent, failed, unknown) is passed over."""
    for member in members:
        state = _LEDGER_STATE.get(member.state)
        if state is None or not member.instance_id:
            continue
        account = fleet.accounts.get(member.provider, "")
        pricing = Pricing.of(member.reservation_id, member.spot)
        if state in ("creating", "running"):
            vm = LedgerVm(member.provider, account, member.instance_id, member.name, member.shape, member.region,
                          fleet.gpu, fleet.gpu_count, pricing, member.reservation_id, fleet.name, fleet.fleet_id,
                          fleet.profile, fleet.created_by, member.at)
            record_vm_in(db, vm, state, price_per_hour=member.price_per_hour, source="fleet")
        observe_in(db, Observation(member.provider, account, member.instance_id, state, member.at, "fleet",
                                   member.price_per_hour, pricing))
