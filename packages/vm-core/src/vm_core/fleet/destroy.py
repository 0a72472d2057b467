"""Destroying, inspecting and reconciling fleets against what the clouds really hold.

Destroy finds every VM the fleet may have: each recorded member that may exist, plus *strays* — VMs whose
name carries the fleet (see naming.py) on a provider the fleet tried, even if the store never learnt their
id (the process was killed between the create call and the store write). Members are destroyed concurrently;
a member is marked destroyed only after its provider confirmed it; failures are reported and a re-run retries.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..errors import NotFound, VmError
from ..model import Instance
from ..provider import Provider
from . import members as mem
from .lease import lease, live_lease
from .naming import member_pattern
from .store import MAY_EXIST, FleetMissing, FleetRecord, FleetState, FleetStore, MemberRecord, MemberState

PARALLEL = 16


@dataclass
class DestroyReport:
    fleet: str
    destroyed: int
    released: list[str] = field(default_factory=list)  # still running: the cloud refuses to delete them
    failures: list[str] = field(default_factory=list)
    forgotten: bool = False  # the fleet record was removed (nothing of it is left in any cloud)


@dataclass
class MemberView:
    member: MemberRecord
    instance: Instance | None  # None: gone, or, when not `checked`, unknown
    checked: bool = True  # False: its provider could not be asked (see the view's problems)


@dataclass
class FleetView:
    fleet: FleetRecord
    members: list[MemberView]
    problems: list[str] = field(default_factory=list)

    @property
    def price_per_hour(self) -> float:
        return round(sum(v.instance.price_per_hour or 0.0 for v in self.members if v.instance), 4)


class FleetDestroyer:
    def __init__(self, store: FleetStore, providers: Mapping[str, Provider], *,
                 progress: mem.Progress = lambda _: None, timeout: float = 1800.0) -> None:
        self.store, self.providers, self.progress, self.timeout = store, providers, progress, timeout

    def fleet(self, name: str) -> FleetRecord:
        return recorded_fleet(self.store, name)

    def destroy(self, name: str) -> DestroyReport:
        """Destroy every VM of the fleet; forget the fleet when nothing of it is left. Safe to re-run.
        Raises NotFound (also when another process forgets the fleet meanwhile), UsageError while another
        process holds the fleet's lease (a create, destroy or reconcile still running)."""
        with _removed_meanwhile(name), lease(self.store, name, "fleet destroy"):
            return self._destroy(name)

    def _destroy(self, name: str) -> DestroyReport:
        self.fleet(name)
        self.store.update_fleet(name, state=FleetState.DESTROYING)
        outcomes, problems = self._destroy_all(name)
        failures = problems + [o.message for o in outcomes if not o.ok]
        released = [o.message for o in outcomes if o.released]
        destroyed = sum(1 for o in outcomes if o.ok and not o.released)
        report = DestroyReport(name, destroyed, released, failures)
        if failures:
            self.store.update_fleet(name, message=f"{len(failures)} of {len(outcomes)} failed to destroy")
        elif released:
            self.store.update_fleet(name, state=FleetState.DESTROYED,
                                    message=f"{len(released)} member(s) released but still running")
        else:
            self.store.delete_fleet(name)
            report.forgotten = True
        return report

    def destroy_members(self, name: str) -> list[mem.Outcome]:
        """Destroy every member that may exist (rollback); problems finding strays become failed outcomes."""
        outcomes, problems = self._destroy_all(name)
        return outcomes + [mem.Outcome(MemberRecord(fleet=name, slot=-1, attempt=0, provider="", name=name),
                                       False, p) for p in problems]

    def _destroy_all(self, name: str) -> tuple[list[mem.Outcome], list[str]]:
        strays, problems = self._adopt_strays(name)
        targets = strays + [m for m in self.store.members(name) if m.state in MAY_EXIST]
        targets = list({(m.slot, m.attempt): m for m in targets}.values())
        if not targets:
            return [], problems
        self.progress(f"destroying {len(targets)} VM(s) of fleet {name}")
        with ThreadPoolExecutor(max_workers=min(len(targets), PARALLEL)) as pool:
            return list(pool.map(self._destroy_one, targets)), problems

    def _destroy_one(self, member: MemberRecord) -> mem.Outcome:
        outcome = mem.destroy(self.store, self.providers.get(member.provider), member, self.timeout)
        self.progress(f"{member.provider}: {member.name} " + ("destroyed" if outcome.ok else "NOT destroyed"))
        return outcome

    def _adopt_strays(self, name: str) -> tuple[list[MemberRecord], list[str]]:
        """Record VMs that carry the fleet's name but whose id the store does not know.

        Only providers the fleet tried are searched. A provider that cannot be listed is reported: its strays
        (if any) stay unknown, so the caller must not claim the fleet is gone."""
        recorded = self.store.members(name)
        known_ids = {m.instance_id for m in recorded if m.instance_id}
        by_name = {(m.provider, m.name): m for m in recorded}
        pattern = member_pattern(name)
        adopted, problems = [], []
        for provider_name in sorted({m.provider for m in recorded}):
            provider = self.providers.get(provider_name)
            if provider is None:
                problems.append(f"provider {provider_name} is not configured: its VMs of {name} were not checked")
                continue
            try:
                listed = list(provider.list_instances())
            except VmError as exc:
                problems.append(f"{provider_name}: cannot list instances to find strays: {exc.message}")
                continue
            for instance in listed:
                match = pattern.match(instance.name)
                if match is None or instance.id in known_ids:
                    continue
                adopted.append(self._adopt(name, provider_name, instance, match, by_name))
        return adopted, problems

    def _adopt(self, fleet: str, provider: str, instance: Instance, match, by_name) -> MemberRecord:
        existing = by_name.get((provider, instance.name))
        if existing is not None:
            return mem.record(self.store, existing, state=MemberState.CREATING, instance_id=instance.id)
        slot, attempt = int(match["slot"]), int(match["attempt"] or 1)
        stray = MemberRecord(fleet=fleet, slot=slot, attempt=attempt + 1000, provider=provider,
                             name=instance.name, region=instance.region, shape=instance.shape,
                             state=MemberState.CREATING, instance_id=instance.id, error="stray: found in the cloud")
        self.store.add_member(stray)
        return stray

    # ------------------------------------------------------------------------------------------ status
    def view(self, name: str) -> FleetView:
        """The fleet with every live member refreshed from its cloud (concurrently). A creating fleet whose
        creator died (its lease lapsed, or the creator is provably gone: lease.py) is marked interrupted.
        Raises NotFound (also when another process forgets it meanwhile)."""
        with _removed_meanwhile(name):
            return self._view(name)

    def _view(self, name: str) -> FleetView:
        record = self.fleet(name)
        dead = record.state is FleetState.CREATING and live_lease(self.store, name) is None
        if dead and self.fleet(name).state is FleetState.CREATING:  # read again: it may have finished meanwhile
            self.store.update_fleet(name, state=FleetState.INTERRUPTED,
                                    message="the creating process stopped before it finished")
        live = [m for m in self.store.members(name) if m.state in MAY_EXIST or m.state is MemberState.RELEASED]
        listed = self._listings({m.provider for m in live})
        with ThreadPoolExecutor(max_workers=max(min(len(live), PARALLEL), 1)) as pool:
            views = list(pool.map(lambda m: self._refresh(m, listed.get(m.provider, {})), live))
        problems = [p for _, p in views if p]
        return FleetView(self.fleet(name), [v for v, _ in views], problems)

    def _listings(self, names: set[str]) -> dict[str, dict[str, Instance]]:
        """One listing per provider (concurrently), by instance id: a fleet of 1,000 costs a few calls, not
        1,000 (Lambda allows one call per second). A provider that cannot be listed gets no entry."""
        providers = {n: self.providers[n] for n in names if n in self.providers}

        def listing(provider: Provider) -> dict[str, Instance]:
            try:
                return {i.id: i for i in provider.list_instances()}
            except VmError:
                return {}

        with ThreadPoolExecutor(max_workers=max(len(providers), 1)) as pool:
            return dict(zip(providers, pool.map(listing, providers.values()), strict=True))

    def _refresh(self, member: MemberRecord, listed: Mapping[str, Instance]) -> tuple[MemberView, str]:
        """The member's VM from the provider's listing, else (missing from it) asked for one by one."""
        provider = self.providers.get(member.provider)
        if provider is None:
            return MemberView(member, None, checked=False), (f"{member.name}: provider {member.provider} is not "
                                                              "configured")
        if member.instance_id in listed:
            return MemberView(member, listed[member.instance_id]), ""
        try:
            instance = mem.locate(provider, member)
        except VmError as exc:
            return MemberView(member, None, checked=False), f"{member.name}: {exc.message}"
        if instance is None and member.instance_id:
            gone = MemberState.DESTROYED if member.state is MemberState.DESTROYING else MemberState.MISSING
            member = mem.record(self.store, member, state=gone, error="gone from the cloud")
        return MemberView(member, instance), ""

    # ------------------------------------------------------------------------------------------ reconcile
    def reconcile(self, name: str) -> FleetView:
        """Make the store match the clouds: adopt strays the fleet needs, destroy the rest, mark missing
        members, settle unresolved attempts, and recompute the fleet's state. Raises like `destroy`."""
        with _removed_meanwhile(name), lease(self.store, name, "fleet reconcile"):
            return self._reconcile(name)

    def _reconcile(self, name: str) -> FleetView:
        record = self.fleet(name)
        _, problems = self._adopt_strays(name)
        view = self._view(name)
        running = self._settle(record, view)
        self.store.update_fleet(name, state=_state_for(record, running), message=_running_message(record, running))
        result = self._view(name)
        result.problems = list(dict.fromkeys(problems + view.problems + result.problems))
        return result

    def _settle(self, record: FleetRecord, view: FleetView) -> int:
        """Keep one VM per slot (the running one), destroy extra VMs, and count what runs. A member that could
        not be checked keeps its record and, if it was running, still counts; nothing else of its slot is
        destroyed then (a re-run decides, the view's problems say so)."""
        unchecked = {v.member.slot for v in view.members if not v.checked}
        kept: set[int] = set()
        for v in sorted(view.members, key=lambda v: (v.member.slot, v.member.state is not MemberState.RUNNING)):
            if not v.checked:
                if v.member.state is MemberState.RUNNING:
                    kept.add(v.member.slot)
                continue
            if v.instance is None:
                if v.member.state in (MemberState.INTENT, MemberState.UNKNOWN):
                    mem.record(self.store, v.member, state=MemberState.FAILED, error="never created")
                continue
            wanted = record.state not in (FleetState.FAILED, FleetState.DESTROYING)
            if wanted and v.member.slot not in kept and v.member.slot < record.requested_count:
                kept.add(v.member.slot)
                mem.record(self.store, v.member, state=MemberState.RUNNING, instance_id=v.instance.id)
            elif v.member.slot not in unchecked:
                mem.destroy(self.store, self.providers.get(v.member.provider), v.member, self.timeout)
        return len(kept)


def _state_for(record: FleetRecord, running: int) -> FleetState:
    """ACTIVE when every requested VM runs, FAILED only when none does (FAILED promises nothing is left),
    DEGRADED in between, also below min_count: reconcile keeps the VMs it finds, it never rolls back."""
    if record.state in (FleetState.DESTROYING, FleetState.DESTROYED):
        return record.state
    if running >= record.requested_count:
        return FleetState.ACTIVE
    return FleetState.DEGRADED if running > 0 else FleetState.FAILED


def _running_message(record: FleetRecord, running: int) -> str:
    below = f" (below the minimum of {record.min_count})" if 0 < running < record.min_count else ""
    return f"{running} of {record.requested_count} running{below}"


@contextmanager
def _removed_meanwhile(name: str) -> Iterator[None]:
    """Another vm process may forget the fleet while this one works on it: that is NotFound, not a crash."""
    try:
        yield
    except FleetMissing:
        raise NotFound(f"fleet {name!r} was removed by another vm process meanwhile") from None


def recorded_fleet(store: FleetStore, name: str) -> FleetRecord:
    """The fleet's record; NotFound naming the fleets that do exist."""
    record = store.get_fleet(name)
    if record is None:
        known = ", ".join(f.name for f in store.list_fleets()) or "none"
        raise NotFound(f"no fleet named {name!r} (fleets: {known})")
    return record
