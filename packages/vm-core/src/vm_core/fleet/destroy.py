"""Destroying a fleet: every VM it may have, and nothing else.

The targets are each recorded member that may exist, plus *strays*: VMs that carry the fleet's id (naming.py)
on a provider the fleet tried but whose id the store never learnt (the process was killed between the create
call and the store write). VMs that only look like the fleet's are reported and left alone. Each provider's
members are destroyed by its own thread (deletion.py: batched delete calls where the API takes a list, one read
per poll interval to confirm them all); a member is marked destroyed only after its provider confirmed it;
failures are reported and a re-run retries. The record is forgotten only when nothing of the fleet may still run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..calls import DEFAULT_TIMEOUT
from ..errors import NotFound, VmError
from ..provider import Provider
from . import members as mem
from .deletion import ProviderDeletion
from .lease import lease
from .naming import FleetIdentity
from .report import Action, Verb
from .store import FleetMissing, FleetRecord, FleetState, FleetStore, MemberRecord, MemberState
from .strays import Scan, record_stray, scan

PARALLEL = 16
# Destroy looks again at released members: the VM may have been deleted by hand since.
TARGETS = frozenset(m for m in MemberState if m.may_run)


@dataclass
class DestroyReport:
    fleet: str
    actions: list[Action] = field(default_factory=list)  # one per VM touched or left alone
    problems: list[str] = field(default_factory=list)  # providers that could not be checked
    forgotten: bool = False  # the fleet record was removed (nothing of it may still run)
    skipped: str = ""  # why nothing was done: the fleet no longer was the one the caller meant (see `destroy`)

    def _of(self, verb: Verb) -> list[Action]:
        return [a for a in self.actions if a.verb is verb]

    @property
    def destroyed(self) -> int:
        return len(self._of(Verb.DESTROYED))

    @property
    def released(self) -> list[Action]:
        """Still running and billing: the cloud refuses to delete them through its API."""
        return self._of(Verb.RELEASED)

    @property
    def failures(self) -> list[str]:
        return self.problems + [a.line() for a in self._of(Verb.FAILED)]


class FleetDestroyer:
    def __init__(self, store: FleetStore, providers: Mapping[str, Provider], *,
                 progress: mem.Progress = lambda _: None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.store, self.providers, self.progress, self.timeout = store, providers, progress, timeout

    def destroy(self, name: str, *, guard: Callable[[FleetRecord], str] | None = None) -> DestroyReport:
        """Destroy every VM of the fleet; forget the fleet when nothing of it may still run. Safe to re-run.
        Raises NotFound (also when another process forgets the fleet meanwhile), LeaseRefused (a UsageError)
        while another process holds the fleet's lease (a create, destroy or reconcile still running).
        `guard`, called on the record once the lease is held, may return why the fleet must be left alone
        (e.g. it is no longer expired): nothing is done and the report's `skipped` says why."""
        with removed_meanwhile(name), lease(self.store, name, "fleet destroy"):
            record = recorded_fleet(self.store, name)
            if guard is not None and (why := guard(record)):
                return DestroyReport(name, skipped=why)
            self.store.update_fleet(name, state=FleetState.DESTROYING)
            report = self.destroy_members(record)
            self._settle_record(record, report)
            return report

    def _settle_record(self, record: FleetRecord, report: DestroyReport) -> None:
        if report.failures:
            self.store.update_fleet(record.name, message=f"{len(report.failures)} VM(s) failed to destroy")
        elif report.released:
            self.store.update_fleet(record.name, message=f"{len(report.released)} VM(s) released: the cloud "
                                                         "refuses to delete them; they still run and bill")
        else:
            self.store.delete_fleet(record.name)
            report.forgotten = True

    def destroy_members(self, record: FleetRecord) -> DestroyReport:
        """Destroy every VM of the fleet (also used to roll back a create); the record stays."""
        identity = identity_of(record)
        found = scan(identity, self.store.members(record.name), self.providers)
        for provider, instance, claim in found.strays:
            record_stray(self.store, identity, provider, instance, claim)
        targets = [m for m in self.store.members(record.name) if m.state.may_run]
        report = DestroyReport(record.name, problems=found.problems)
        if targets:
            self.progress(f"destroying {len(targets)} VM(s) of fleet {record.name}")
            report.actions += self._destroy_all(identity, targets, found)
        for action in found.lookalikes:
            self.progress(action.line())
        report.actions += found.lookalikes
        if not report.failures and not report.released:
            report.problems += self._delete_groups(record, identity)
        return report

    def _delete_groups(self, record: FleetRecord, identity: FleetIdentity) -> list[str]:
        """Delete the placement groups carrying the fleet's identity (`SupportsPlacementGroups`), once none of its
        VMs is left; what could not be deleted, one line per provider. Only a cluster fleet with an id made any:
        for the others no call is made."""
        from ..provider import SupportsPlacementGroups
        from .placement import Placement

        problems: list[str] = []
        if record.placement is not Placement.CLUSTER or not identity.fleet_id:
            return problems
        for name, provider in self.providers.items():
            if not isinstance(provider, SupportsPlacementGroups):
                continue
            try:
                deleted = provider.delete_placement_groups(identity.labels())
            except VmError as exc:
                problems.append(f"{name}: placement groups of fleet {identity.fleet} not deleted: {exc}")
                continue
            for group in deleted:
                self.progress(f"{name}: placement group {group} deleted")
        return problems

    def _destroy_all(self, identity: FleetIdentity, targets: list[MemberRecord], found: Scan) -> list[Action]:
        """One action per target, in the targets' order. Members with an instance id on a configured provider
        go through that provider's ProviderDeletion (one thread each); the others (looked up by name, or on a
        provider that is not configured) one by one through members.destroy, PARALLEL at a time."""
        actions: dict[tuple[int, int], Action] = {}

        def finished(outcome: mem.Outcome) -> None:
            action = outcome.action
            actions[(outcome.member.slot, outcome.member.attempt)] = action
            self.progress(action.line())

        by_provider: dict[str, list[MemberRecord]] = {}
        single: list[MemberRecord] = []
        for member in targets:
            if member.instance_id and member.provider in self.providers:
                by_provider.setdefault(member.provider, []).append(member)
            else:
                single.append(member)
        deletions = {name: ProviderDeletion(self.store, self.providers[name], self.timeout, finished,
                                            listed=found.listed.get(name)) for name in by_provider}
        with ThreadPoolExecutor(max_workers=max(1, len(deletions) + min(len(single), PARALLEL))) as pool:
            runs = [pool.submit(d.run, by_provider[name]) for name, d in deletions.items()]
            runs += [pool.submit(lambda m: finished(mem.destroy(self.store, self.providers.get(m.provider), m,
                                                                identity, self.timeout)), m) for m in single]
            for run in runs:
                run.result()
        return [actions[(m.slot, m.attempt)] for m in targets]


def identity_of(record: FleetRecord) -> FleetIdentity:
    return FleetIdentity(record.name, record.fleet_id)


@contextmanager
def removed_meanwhile(name: str) -> Iterator[None]:
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
