"""Finding a fleet's VMs that the store does not know, and the look-alikes that are not the fleet's.

A process killed between a create call and the store write leaves a VM whose id was never recorded. Such a VM
is found by listing the providers the fleet tried and keeping only VMs that provably carry the fleet's id
(naming.FleetIdentity.claim). Anything else whose name merely resembles the fleet's is reported, never touched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..errors import VmError
from ..model import Instance
from ..provider import Provider
from .naming import Claim, FleetIdentity
from .report import Action, Verb
from .retrying import retried
from .store import FleetStore, MemberRecord, MemberState

STRAY_ATTEMPT = 1000  # strays get attempt numbers from here on, so they never collide with placement attempts


@dataclass
class Scan:
    """What listing the fleet's providers found."""

    listed: dict[str, dict[str, Instance]] = field(default_factory=dict)  # provider -> id -> VM (listed ones)
    strays: list[tuple[str, Instance, Claim]] = field(default_factory=list)  # ours, not recorded by id
    lookalikes: list[Action] = field(default_factory=list)  # not ours: left alone
    problems: list[str] = field(default_factory=list)  # providers that could not be listed


def scan(identity: FleetIdentity, recorded: Sequence[MemberRecord], providers: Mapping[str, Provider]) -> Scan:
    """List every provider the fleet tried (concurrently, one listing each, sent again while it fails
    transiently: retrying.py). Never raises for a provider that cannot be listed: its problem is reported and its
    strays stay unknown."""
    result = Scan()
    known_ids = {m.instance_id for m in recorded if m.instance_id}
    names = sorted({m.provider for m in recorded})
    usable = {n: providers[n] for n in names if n in providers}
    result.problems += [f"provider {n} is not configured: VMs of fleet {identity.fleet} there were not checked"
                        for n in names if n not in providers]
    with ThreadPoolExecutor(max_workers=max(len(usable), 1)) as pool:
        listings = dict(zip(usable, pool.map(_listing, usable.values()), strict=True))
    for provider, listed in listings.items():
        if isinstance(listed, str):
            result.problems.append(f"{provider}: cannot list instances: {listed}")
            continue
        result.listed[provider] = {i.id: i for i in listed}
        for instance in listed:
            if instance.id not in known_ids:
                _sort(identity, provider, instance, result)
    return result


def _listing(provider: Provider) -> list[Instance] | str:
    try:
        return retried(lambda: list(provider.list_instances()))
    except VmError as exc:
        return exc.message


def _sort(identity: FleetIdentity, provider: str, instance: Instance, result: Scan) -> None:
    claim = identity.claim(instance)
    if claim is not None:
        result.strays.append((provider, instance, claim))
    elif identity.resembles(instance):
        why = ("the fleet was recorded before fleet ids: names prove nothing" if not identity.fleet_id
               else f"does not carry fleet id {identity.fleet_id}")
        result.lookalikes.append(Action(Verb.LEFT_ALONE, provider, instance.name, instance.id, f"not ours ({why})"))


def record_stray(store: FleetStore, identity: FleetIdentity, provider: str, instance: Instance,
                 claim: Claim) -> tuple[MemberRecord, Action]:
    """Record a stray. It fills in the member of its name when that member has no instance id yet (the intent
    whose create landed); a member whose recorded id differs is never overwritten: the stray gets a row of its
    own and both are reported."""
    members = store.members(identity.fleet)
    same_name = [m for m in members if m.provider == provider and m.name == instance.name]
    open_intent = next((m for m in same_name if not m.instance_id), None)
    if open_intent is not None:
        member = store.update_member(open_intent.fleet, open_intent.slot, open_intent.attempt,
                                     state=MemberState.CREATING, instance_id=instance.id,
                                     error="found in the cloud")
        return member, Action(Verb.ADOPTED, provider, instance.name, instance.id, "its create had no answer")
    slot = claim.slot if claim.slot is not None else -1
    taken = {m.attempt for m in members if m.slot == slot}
    attempt = STRAY_ATTEMPT + (claim.attempt or 0)
    while attempt in taken:
        attempt += 1
    member = MemberRecord(fleet=identity.fleet, slot=slot, attempt=attempt, provider=provider, name=instance.name,
                          region=instance.region, shape=instance.shape, reservation_id=instance.reservation_id,
                          state=MemberState.CREATING, instance_id=instance.id, price_per_hour=instance.price_per_hour,
                          error="stray: found in the cloud", spot=instance.spot)
    store.add_member(member)
    detail = "never recorded" if not same_name else f"a second VM named like member {instance.name}"
    return member, Action(Verb.ADOPTED, provider, instance.name, instance.id, detail)
