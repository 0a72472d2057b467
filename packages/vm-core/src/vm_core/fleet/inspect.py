"""`vm fleet status`: a fleet's members refreshed from the clouds, and the state that follows from them.

The state shown is derived from what was just seen: a settled fleet (active, degraded, failed) is active when
every requested VM runs, degraded when some do, failed when none does. Members whose VM is gone outside `vm`
are recorded `missing`. `vm fleet list`, which reads only the store, derives its state the same way
(`derived_state`) from the member records, so the two agree after a status.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from ..errors import VmError
from ..model import Instance, InstanceState
from ..provider import Provider
from . import members as mem
from .destroy import PARALLEL, identity_of, recorded_fleet, removed_meanwhile
from .lease import live_lease
from .naming import FleetIdentity
from .store import FleetRecord, FleetState, FleetStore, MemberRecord, MemberState

SETTLED = frozenset({FleetState.ACTIVE, FleetState.DEGRADED, FleetState.FAILED})
SHOWN = frozenset(m for m in MemberState if m.may_run)  # members that are, or may be, VMs (`MemberState.may_run`)
# The members a fleet's views list (`vm fleet status/list/create`): SHOWN and those gone outside vm (`missing`);
# failed attempts and destroyed VMs are history, not shown.
VISIBLE = SHOWN | {MemberState.MISSING}


@dataclass
class MemberView:
    member: MemberRecord
    instance: Instance | None  # None: gone, or, when not `checked`, unknown
    checked: bool = True  # False: its provider could not be asked (see the view's problems)

    @property
    def running(self) -> bool:
        if not self.checked:
            return self.member.state is MemberState.RUNNING
        return self.instance is not None and self.instance.state is InstanceState.RUNNING


@dataclass
class FleetView:
    fleet: FleetRecord  # with the derived state
    members: list[MemberView]
    problems: list[str] = field(default_factory=list)

    @property
    def price_per_hour(self) -> float:
        return round(sum(v.instance.price_per_hour or 0.0 for v in self.members if v.instance), 4)


def settled_state(count: int, running: int) -> FleetState:
    """Active when all `count` VMs run, degraded when some do, failed when none does."""
    if running >= count:
        return FleetState.ACTIVE
    return FleetState.DEGRADED if running > 0 else FleetState.FAILED


def derived_state(record: FleetRecord, running: int) -> FleetState:
    """The state a settled fleet is in with `running` of its VMs running; other states stand as recorded."""
    return settled_state(record.count, running) if record.state in SETTLED else record.state


def running_message(record: FleetRecord, running: int) -> str:
    below = f" (below the minimum of {record.min_count})" if 0 < running < record.min_count else ""
    return f"{running} of {record.count} running{below}"


def with_derived_state(record: FleetRecord, running: int) -> FleetRecord:
    if record.state not in SETTLED:
        return record
    return replace(record, state=derived_state(record, running), message=running_message(record, running))


def recorded_running(members: Sequence[MemberRecord]) -> int:
    return sum(1 for m in members if m.state is MemberState.RUNNING)


ABANDONED = "the creating process stopped before it finished"


def mark_abandoned(store: FleetStore, name: str) -> FleetRecord:
    """The fleet's record, marked interrupted when it still says `creating`. Only for a caller that knows no
    process is creating it: nobody holds a live lease on it, or the caller holds the lease itself (a create,
    scale or repair killed midway leaves `creating` behind, and its lease lapsed or its holder died)."""
    current = recorded_fleet(store, name)  # read again: it may have finished, then died
    if current.state is FleetState.CREATING:
        return store.update_fleet(name, state=FleetState.INTERRUPTED, message=ABANDONED)
    return current


class FleetInspector:
    def __init__(self, store: FleetStore, providers: Mapping[str, Provider]) -> None:
        self.store, self.providers = store, providers

    def view(self, name: str) -> FleetView:
        """The fleet with every live member refreshed from its cloud (one listing per provider). A creating
        fleet whose creator died (its lease lapsed, or the holder is provably gone: lease.py) is marked
        interrupted. Raises NotFound (also when another process forgets it meanwhile)."""
        with removed_meanwhile(name):
            record = self._mark_interrupted(recorded_fleet(self.store, name))
            live = [m for m in self.store.members(name) if m.state.may_run]
            listed = self._listings({m.provider for m in live})
            views = self._refreshed(identity_of(record), live, listed)
            members = [v for v, _ in views]
            fleet = with_derived_state(recorded_fleet(self.store, name), sum(1 for v in members if v.running))
            return FleetView(fleet, members, [p for _, p in views if p])

    def _mark_interrupted(self, record: FleetRecord) -> FleetRecord:
        if record.state is FleetState.CREATING and live_lease(self.store, record.name) is None:
            return mark_abandoned(self.store, record.name)
        return record


    def _listings(self, names: set[str]) -> dict[str, dict[str, Instance]]:
        """One listing per provider (concurrently), by instance id: a fleet of 1,000 costs a few calls, not
        1,000 (Lambda allows one call per second). A provider that cannot be listed gets no entry."""
        providers = {n: self.providers[n] for n in names if n in self.providers}

        def listing(provider: Provider) -> dict[str, Instance] | None:
            try:
                return {i.id: i for i in provider.list_instances()}
            except VmError:
                return None

        with ThreadPoolExecutor(max_workers=max(len(providers), 1)) as pool:
            found = dict(zip(providers, pool.map(listing, providers.values()), strict=True))
        return {name: listing for name, listing in found.items() if listing is not None}

    def _refreshed(self, identity: FleetIdentity, live: Sequence[MemberRecord],
                   listed: Mapping[str, Mapping[str, Instance]]) -> list[tuple[MemberView, str]]:
        """`_refresh` of every member, in order: members found in their provider's listing at once, the others
        (asked for one by one) concurrently."""
        views: list[tuple[MemberView, str] | None] = [
            (MemberView(m, listed[m.provider][m.instance_id]), "")
            if m.provider in listed and m.instance_id in listed[m.provider] else None for m in live]
        unlisted = [i for i, view in enumerate(views) if view is None]
        if unlisted:
            with ThreadPoolExecutor(max_workers=min(len(unlisted), PARALLEL)) as pool:
                refreshed = pool.map(lambda i: self._refresh(identity, live[i], listed.get(live[i].provider)),
                                     unlisted)
                for i, view in zip(unlisted, refreshed, strict=True):
                    views[i] = view
        return [view for view in views if view is not None]

    def _refresh(self, identity: FleetIdentity, member: MemberRecord,
                 listed: Mapping[str, Instance] | None) -> tuple[MemberView, str]:
        """The member's VM from the provider's listing, else asked for on its own (by id, or by a name that
        carries the fleet's id). A recorded VM that is gone becomes `missing`."""
        provider = self.providers.get(member.provider)
        if provider is None:
            return MemberView(member, None, checked=False), (f"{member.name}: provider {member.provider} is not "
                                                              "configured")
        if listed is not None and member.instance_id in listed:
            return MemberView(member, listed[member.instance_id]), ""
        try:
            instance = mem.locate(provider, member, identity)
        except VmError as exc:
            return MemberView(member, None, checked=False), f"{member.name}: {exc.message}"
        if instance is None and member.instance_id:
            gone = MemberState.DESTROYED if member.state is MemberState.DESTROYING else MemberState.MISSING
            member = mem.record(self.store, member, state=gone, error="gone from the cloud")
        return MemberView(member, instance), ""
